"""Project and index commands: init, index, stats, doctor."""

from __future__ import annotations

import click

from lore.errors import LoreError
from lore.interfaces.cli.common import json_option, with_lore
from lore.interfaces.cli.output import emit_json, progress_bar, table, warn


@click.command()
@click.argument("path", default=".", type=click.Path(file_okay=False))
@json_option
def init(path, as_json):
    """Create .lore/ in PATH (idempotent; never overwrites your files)."""
    from lore.service import Lore
    lore = Lore.init(path)
    try:
        lore.sync()
    finally:
        lore.close()
    if as_json:
        emit_json({"project": str(lore.project.root), "created": lore.created})
    elif lore.created:
        click.echo(f"initialised {lore.project.root / '.lore'} ({', '.join(lore.created)})")
    else:
        click.echo(f"already initialised: {lore.project.root / '.lore'}")


@click.command()
@click.option("--force", is_flag=True, help="Re-index every file, not only changed ones.")
@click.option("--reembed", is_flag=True, help="Switch vectors to the configured model (re-embed all).")
@click.option("--no-embed", is_flag=True, help="Text index only; embed later.")
@json_option
@with_lore
def index(lore, force, reembed, no_embed, as_json):
    """Bring the index up to date with the files (incremental by content hash), then embed."""
    report = lore.reindex(force=force)
    embedded = 0
    if not no_embed:
        with progress_bar("embedding", enabled=not as_json) as advance:
            embedded = lore.reembed(progress=advance) if reembed else lore.embed(progress=advance)
    if as_json:
        emit_json({"added": report.added, "updated": report.updated, "removed": report.removed,
                   "embedded": embedded, "errors": [{"path": p, "error": e} for p, e in report.errors]})
    else:
        click.echo(f"memories: {len(report.added)} added, {len(report.updated)} updated, "
                   f"{len(report.removed)} removed; {embedded} chunks embedded")
        for path, error in report.errors:
            warn(error if error.startswith(path) else f"{path}: {error}")
    if report.errors:
        raise click.exceptions.Exit(1)


@click.command()
@json_option
@with_lore
def stats(lore, as_json):
    """Counts, index size and search mode."""
    data = lore.stats()
    if as_json:
        emit_json(data)
        return
    rows = [["project", data["project"]], ["memories", str(data["memories"])],
            ["by type", ", ".join(f"{k} {v}" for k, v in data["byType"].items()) or "-"],
            ["broken files", str(data["brokenFiles"])], ["chunks", str(data["chunks"])],
            ["in trash", str(data["trash"])], ["index size", f"{data['indexBytes'] / 1024:.0f} KiB"],
            ["search", data["search"]],
            ["embedding", data["embedding"] or f"none — BM25 only ({data['embeddingProblem'] or 'no model'})"],
            ["vectors", f"{data['vectors']} ({data['pendingEmbeddings'] or 0} chunks pending)"]]
    table(["", ""], rows)


@click.command()
@json_option
@with_lore
def doctor(lore, as_json):
    """Check every memory file and the index; list each problem with a fix."""
    problems = lore.doctor()
    if as_json:
        emit_json([p.to_json() for p in problems])
    elif not problems:
        click.echo("no problems found")
    else:
        for p in problems:
            click.echo(f"{p.level}: {p.where}: {p.message}")
    if any(p.level == "error" for p in problems):
        raise click.exceptions.Exit(1)


COMMANDS = [init, index, stats, doctor]
