"""Project and index commands: init, index, stats, doctor."""

from __future__ import annotations

from collections import Counter

import click

from lore.interfaces.cli.common import identity_options, json_option, with_lore
from lore.interfaces.cli.output import emit_json, progress_bar, warn
from lore.interfaces.units import file_size


@click.command()
@click.argument("path", default=None, required=False, type=click.Path(file_okay=False))
@click.option(
    "--here",
    is_flag=True,
    help="Put .lore/ in this folder even inside a git repository (default: the repository's top folder).",
)
@identity_options
@json_option
@click.pass_context
def init(ctx, path, here, project_path, agent_name, as_json):
    """Create .lore/ (idempotent; never overwrites your files).

    \b
    Without PATH, inside a git repository .lore/ goes to the repository's top
    folder, so every folder of the repository shares one memory; --here puts
    it in the current folder instead.

    \b
    Examples:
      lore init
      lore init --here
      lore init path/to/project
    """
    from pathlib import Path

    from lore.index import gitrepo
    from lore.service import Lore

    target = Path(path or project_path or (ctx.obj or {}).get("project") or ".").resolve()
    reason = None
    top = None if (here or path) else gitrepo.repo_root(target)
    if top is not None and top.resolve() != target:
        reason = (
            f"{top} is the top folder of the git repository you are in; .lore/ goes there so the "
            f"whole repository shares one memory (lore init --here puts it in {target} instead)"
        )
        target = top
    lore = Lore.init(target)
    try:
        lore.sync()
    finally:
        lore.close()
    where = lore.project.root / ".lore"
    if as_json:
        emit_json({"project": str(lore.project.root), "created": lore.created, "reason": reason})
        return
    if reason:
        click.echo(reason)
    if lore.created:
        click.echo(f"initialised {where} ({', '.join(lore.created)})")
        click.echo(
            "next: `lore add --title ... --body ...` to remember something, `lore index` to index "
            "the code and history, `lore install claude-code` (or codex, cursor) to give an agent Lore"
        )
    else:
        click.echo(f"already initialised: {where}")


@click.command()
@click.option("--force", is_flag=True, help="Re-index every file and commit, not only changed ones.")
@click.option(
    "--reembed", is_flag=True, help="Embed everything again with the configured model (drops all vectors)."
)
@click.option("--no-embed", is_flag=True, help="Text index only; embed later.")
@click.option("--no-code", is_flag=True, help="Memories only (skip the repository's files and history).")
@json_option
@with_lore
def index(lore, force, reembed, no_embed, no_code, as_json):
    """Index memories, code and git history (incremental by content hash), then embed.

    Text is searchable by keywords as soon as it is chunked; vectors follow,
    and an interrupted run keeps what it embedded and resumes next time.

    \b
    Examples:
      lore index
      lore index --reembed      # after changing [embedding] in .lore/config.toml
    """
    report = lore.reindex(force=force)
    code = None
    if not no_code:
        with progress_bar("indexing files", enabled=not as_json) as advance:
            code = lore.index_code(force=force, progress=advance)
    embedded = 0
    model = None
    if not no_embed:
        with progress_bar("re-embedding" if reembed else "embedding", enabled=not as_json) as advance:
            embedded = lore.reembed(progress=advance) if reembed else lore.embed(progress=advance)
        model = lore.embedding_status(load=False).get("embedding")
    if as_json:
        emit_json(
            {
                "added": report.added,
                "updated": report.updated,
                "removed": report.removed,
                "embedded": embedded,
                "reembedded": bool(reembed),
                "model": model,
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
                f"{code.commits_added} commits"
                + (f" ({code.commits_updated} rewritten)" if code.commits_updated else "")
                + f", {code.duration_ms / 1000:.1f} s"
            )
        if reembed:
            click.echo(f"embeddings: all {embedded} texts re-embedded with {model}")
        elif not no_embed:
            click.echo(f"embeddings: {embedded} new texts embedded" + (f" ({model})" if model else ""))
        for _, error in report.errors:
            warn(error)
        for error in code.errors if code else []:
            warn(error)
    if report.errors:
        raise click.exceptions.Exit(1)


@click.command()
@json_option
@with_lore
def stats(lore, as_json):
    """A compact overview: memories by type and tier, links, index coverage, last update, stale count.

    \b
    Examples:
      lore stats
      lore stats --json
    """
    data = lore.stats()
    if as_json:
        emit_json(data)
        return
    from lore.interfaces.cli.output import relative_time

    def counts(mapping: dict) -> str:
        return ", ".join(f"{k or '-'} {v}" for k, v in mapping.items() if v) or "-"

    pending = data["pending_embeddings"] or 0
    if not data["embedding"]:
        vectors = f"none, keyword search only ({data['embedding_problem'] or 'no model'})"
    elif pending:
        texts = "text still needs a vector" if pending == 1 else "texts still need vectors"
        vectors = f"{pending} {texts} (`lore index`); model {data['embedding']}"
    else:
        vectors = f"every chunk has one ({data['embedding']})"
    rows = [
        ["memories", f"{data['memories']}  ({counts(data['by_type'])})"],
        ["tiers", f"{counts(data['by_tier'])}  ·  {counts(data['by_storage'])}"],
        ["links", f"{data['links']} ({data['broken_links']} broken)" if data["links"] else "none"],
        ["stale", f"{data['stale']} (see `lore stale`)" if data["stale"] else "none"],
        ["last update", relative_time(data["last_memory_at"])],
        [
            "code index",
            f"{data['code_files']} files, {data['code_chunks']} chunks, {data['commits']} commits",
        ],
        ["vectors", vectors],
        ["index", f"{file_size(data['index_bytes'])}, {data['backend'].split(':')[0]}"],
    ]
    if data["broken_files"]:
        rows.append(["broken files", f"{data['broken_files']} (see `lore doctor`)"])
    if data["trash"]:
        rows.append(["in trash", str(data["trash"])])
    for name, value in rows:
        click.echo(f"{name:<12} {value}")


@click.command()
@json_option
@with_lore
def doctor(lore, as_json):
    """Check every memory file and the index; list each problem with a fix.

    \b
    Examples:
      lore doctor
      lore doctor --json    # exit 1 when there are errors
    """
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


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@json_option
def completion(shell, as_json):
    """Print the shell completion script for bash, zsh or fish.

    \b
    Examples (install it once):
      lore completion bash > ~/.local/share/bash-completion/completions/lore
      lore completion zsh > "${fpath[1]}/_lore"
      lore completion fish > ~/.config/fish/completions/lore.fish

    With --json: {"shell", "script"}.
    """
    from click.shell_completion import get_completion_class

    from lore.interfaces.cli import cli

    shell_class = get_completion_class(shell)
    assert shell_class is not None
    script = shell_class(cli, {}, "lore", "_LORE_COMPLETE").source()
    if as_json:
        emit_json({"shell": shell, "script": script})
        return
    click.echo(script)


COMMANDS = [init, index, stats, doctor, completion]
