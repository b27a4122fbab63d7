"""Project and index commands: init, index, stats, doctor."""

from __future__ import annotations

from collections import Counter

import click

from lore.interfaces.cli.common import identity_options, json_option, with_lore
from lore.interfaces.cli.output import emit_json, progress_bar, table, warn


@click.command()
@click.argument("path", default=None, required=False, type=click.Path(file_okay=False))
@identity_options
@json_option
@click.pass_context
def init(ctx, path, project_path, agent_name, as_json):
    """Create .lore/ in PATH (default: --project, else here; idempotent, never overwrites your files)."""
    from lore.service import Lore

    lore = Lore.init(path or project_path or (ctx.obj or {}).get("project") or ".")
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
@click.option("--no-code", is_flag=True, help="Memories only (skip the repository's files and history).")
@json_option
@with_lore
def index(lore, force, reembed, no_embed, no_code, as_json):
    """Index memories, code and git history (incremental by content hash), then embed.

    Text is searchable (BM25) as soon as it is chunked; vectors follow, and an
    interrupted run keeps what it embedded and resumes next time.
    """
    report = lore.reindex(force=force)
    code = None
    if not no_code:
        with progress_bar("chunking", enabled=not as_json) as advance:
            code = lore.index_code(force=force, progress=advance)
    embedded = 0
    if not no_embed:
        with progress_bar("embedding", enabled=not as_json) as advance:
            embedded = lore.reembed(progress=advance) if reembed else lore.embed(progress=advance)
    if as_json:
        emit_json(
            {
                "added": report.added,
                "updated": report.updated,
                "removed": report.removed,
                "embedded": embedded,
                "code": code.to_dict() if code else None,
                "errors": [{"path": p, "error": e} for p, e in report.errors],
            }
        )
    else:
        click.echo(
            f"memories: {len(report.added)} added, {len(report.updated)} updated, "
            f"{len(report.removed)} removed"
        )
        if code:
            reasons = Counter(reason.split(" (")[0] for _, reason in code.skipped)
            click.echo(
                f"code: {code.files_processed} files processed, {code.chunks_created} chunks, "
                f"{code.files_renamed} renamed, {code.files_removed} removed, "
                f"{code.files_skipped} skipped ({', '.join(f'{n} {r}' for r, n in reasons.most_common()) or '-'}), "
                f"{code.commits_added} commits, {code.duration_ms / 1000:.1f} s"
            )
        click.echo(f"embeddings: {embedded} chunks embedded")
        for _, error in report.errors:
            warn(error)
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
    rows = [
        ["project", data["project"]],
        ["memories", str(data["memories"])],
        ["by type", ", ".join(f"{k} {v}" for k, v in data["by_type"].items()) or "-"],
        ["broken files", str(data["broken_files"])],
        ["chunks", str(data["chunks"])],
        ["code", f"{data['code_files']} files, {data['code_chunks']} chunks, {data['commits']} commits"],
        ["in trash", str(data["trash"])],
        ["index size", f"{data['index_bytes'] / 1024:.0f} KiB"],
        ["search", data["search"]],
        ["embedding", data["embedding"] or f"none — BM25 only ({data['embedding_problem'] or 'no model'})"],
        ["vectors", f"{data['vectors']} ({data['pending_embeddings'] or 0} chunks pending)"],
    ]
    table(["", ""], rows)


@click.command()
@json_option
@with_lore
def doctor(lore, as_json):
    """Check every memory file and the index; list each problem with a fix."""
    problems = lore.doctor()
    if as_json:
        emit_json([p.to_dict() for p in problems])
    elif not problems:
        click.echo("no problems found")
    else:
        for p in problems:
            click.echo(f"{p.level}: {p.where}: {p.message}")
    if any(p.level == "error" for p in problems):
        raise click.exceptions.Exit(1)


COMMANDS = [init, index, stats, doctor]
