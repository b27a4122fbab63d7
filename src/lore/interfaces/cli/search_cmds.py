"""Search commands."""

from __future__ import annotations

import click

from lore.interfaces.cli.common import filter_options, json_option, with_lore
from lore.interfaces.cli.output import emit_results


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "bm25", "vector"], case_sensitive=False),
    default=None,
    help="Default: hybrid when an embedding model is available, else bm25.",
)
@filter_options
@json_option
@with_lore
def search(lore, query, mode, as_json, limit, **filters):
    """Search memories by meaning and keywords; best first, scores 0-1.

    \b
    Examples:
      lore search "token refresh timeout"
      lore search utc --type decision --since "last month"
    """
    hits = lore.search(" ".join(query), limit=limit, mode=mode, **filters)
    root = lore.project.root
    emit_results(hits, as_json, lambda h: h.to_dict(), lambda out, hit: _render(out, hit, root))


def _render(out, hit, root) -> None:
    """One hit for a person: title, score, age; the citation as path:line (a link in terminals)."""
    from lore.interfaces.cli.output import citation, relative_time, score_bar

    stale = " [red]⚠ stale[/red]" if hit.stale else ""
    if hit.superseded_by:
        stale += f" [yellow]↳ superseded by {escape(hit.superseded_by[:8])}[/yellow]"
    out.print(f"[bold]{escape(hit.title)}[/bold]{stale}")
    out.print(
        f"  [green]{score_bar(hit.score)}[/green]  [dim]{hit.type} · {relative_time(hit.occurred_at)} · "
        f"{hit.id[:8]}[/dim]"
    )
    out.print(f"  {citation(root, hit.path, hit.start_line)}", soft_wrap=True)  # never folded mid-path
    out.print(f"  {hit.snippet}", markup=False)
    out.print("")


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


COMMANDS = [search]
