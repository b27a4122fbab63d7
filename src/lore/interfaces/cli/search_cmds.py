"""Search commands."""

from __future__ import annotations

import click

from lore.interfaces.cli.common import filter_options, json_option, with_lore
from lore.interfaces.cli.output import emit_results


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "bm25", "vector"]),
    default=None,
    help="Default: hybrid when an embedding model is available, else bm25.",
)
@filter_options
@json_option
@with_lore
def search(lore, query, mode, as_json, limit, **filters):
    """Search memories (hybrid BM25 + vectors; scores 0-1)."""
    hits = lore.search(" ".join(query), limit=limit, mode=mode, **filters)
    emit_results(hits, as_json, lambda h: h.to_dict(), _render)


def _render(out, hit) -> None:
    stale = " [red]⚠ stale[/red]" if hit.stale else ""
    out.print(
        f"[bold]{hit.title}[/bold]{stale}  [dim]{hit.type} · {hit.score:.2f} {hit.source} · {hit.id[:8]}[/dim]"
    )
    out.print(f"  [cyan]{hit.path}:{hit.start_line}[/cyan]  [dim]{hit.section or ''}[/dim]")
    out.print(f"  {hit.snippet}", markup=False)


COMMANDS = [search]
