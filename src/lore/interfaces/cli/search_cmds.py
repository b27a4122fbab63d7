"""Search commands."""

from __future__ import annotations

import click

from lore.interfaces.cli.common import filter_options, json_option, with_lore
from lore.interfaces.cli.output import console, emit_json


@click.command()
@click.argument("query", nargs=-1, required=True)
@filter_options
@json_option
@with_lore
def search(lore, query, as_json, limit, **filters):
    """Search memories (BM25; scores 0-1)."""
    hits = lore.search(" ".join(query), limit=limit, **filters)
    if as_json:
        emit_json([h.to_json() for h in hits])
        return
    if not hits:
        click.echo("no matches")
        return
    out = console()
    for hit in hits:
        out.print(f"[bold]{hit.title}[/bold]  [dim]{hit.type} · {hit.score:.2f} · {hit.id[:8]}[/dim]")
        out.print(f"  [cyan]{hit.path}:{hit.start_line}[/cyan]  [dim]{hit.section or ''}[/dim]")
        out.print(f"  {hit.snippet}", markup=False)


COMMANDS = [search]
