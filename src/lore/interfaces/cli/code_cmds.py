"""Code and history commands: code, history, update-index, status."""

from __future__ import annotations

import os

import click

from lore.index.roles import ROLES
from lore.interfaces.cli.common import from_cwd, json_option, split_commas, with_lore
from lore.interfaces.cli.output import emit_json, emit_results, printable, table


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--lang", "languages", multiple=True, help="Language (python, typescript, go…; repeatable, or a,b)."
)
@click.option("--ext", "extensions", multiple=True, help="File extension (ts, py…; repeatable, or a,b).")
@click.option(
    "--dir",
    "directories",
    multiple=True,
    help="Directory prefix or glob, from the current directory (repeatable).",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    help=f"Only files of this role: {', '.join(ROLES)} (repeatable, or a,b); default: all, source first.",
)
@click.option("--changed-within", "days", type=float, help="Only files changed in the last N days (git).")
@click.option(
    "--since",
    help="Only files changed (committed) from this date on (or a phrase: 'last week', '2 months ago').",
)
@click.option(
    "--until",
    help="Only files changed up to and including this date or period (or a phrase).",
)
@click.option(
    "--files-only", is_flag=True, help="Rank files, best first: code matches, similar past commits, roles."
)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "bm25", "vector"], case_sensitive=False),
    default=None,
    help="Default: hybrid when an embedding model is available, else bm25 (keywords).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most N results (default 10, max 50)."
)
@click.option("--full", is_flag=True, help="Include each chunk's whole text in --json.")
@json_option
@with_lore
def code(
    lore,
    query,
    languages,
    extensions,
    directories,
    roles,
    days,
    since,
    until,
    files_only,
    mode,
    limit,
    full,
    as_json,
):
    """Search the codebase by meaning and keywords (tree-sitter chunks: functions, classes...).

    \b
    Examples:
      lore code "refresh the session token"
      lore code retry --lang python --dir src/net --files-only
    """
    hits = lore.code_search(
        " ".join(query),
        limit=limit,
        languages=split_commas(languages),
        extensions=split_commas(extensions),
        directories=from_cwd(lore.project.root, directories, "--dir"),
        roles=split_commas(roles),
        changed_within_days=days,
        since=since,
        until=until,
        files_only=files_only,
        mode=mode,
    )

    root = lore.project.root

    def render(out, h):
        from rich.markup import escape

        from lore.interfaces.cli.output import citation, score_bar

        if files_only:
            role = f" [dim]{h.role}[/dim]" if h.role and h.role != "source" else ""
            tests = f"  [dim]tests: {escape(', '.join(h.tests[:2]))}[/dim]" if h.tests else ""
            out.print(
                f"[green]{score_bar(h.similarity)}[/green]  {citation(root, h.file_path)}{role}{tests}",
                soft_wrap=True,  # a narrow terminal wraps the line; a path is never folded
            )
            return
        out.print(
            f"[green]{score_bar(h.similarity)}[/green]  {citation(root, h.file_path, h.start_line)}"
            f"  [bold]{escape(h.symbol or f'lines {h.start_line}-{h.end_line}')}[/bold]  [dim]{h.language}[/dim]",
            soft_wrap=True,
        )
        out.print(f"  {h.snippet}", markup=False)

    emit_results(hits, as_json, lambda h: h.to_dict(full=full), render)


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most N results (default 10, max 50)."
)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "bm25", "vector"], case_sensitive=False),
    default=None,
    help="Default: hybrid when an embedding model is available, else bm25 (keywords).",
)
@click.option(
    "--since",
    help="Commits landed from this date on (or a phrase: 'last week', '2 months ago', 'since March').",
)
@click.option("--until", help="Commits landed up to and including this date or period (or a phrase).")
@json_option
@with_lore
def history(lore, query, limit, mode, since, until, as_json):
    """Search past work: the project's commits, with the files they changed (as named today).

    \b
    Example:
      lore history "session timeout" --since "last year"
    """
    hits = lore.history(" ".join(query), limit=limit, mode=mode, since=since, until=until)

    def render(out, h):
        from rich.markup import escape

        from lore.interfaces.cli.output import relative_time, score_bar
        from lore.memory.values import clip
        from lore.search.recall import SUBJECT_CHARS, commit_files

        out.print(
            f"[green]{score_bar(h.relevance)}[/green]  [yellow]{h.sha[:10]}[/yellow] "
            f"[bold]{escape(clip(h.subject, SUBJECT_CHARS))}"
            f"[/bold]  [dim]{escape(h.author)} · {relative_time(h.date)}[/dim]"
        )
        files = commit_files(h, "  ", most=8)
        if files:
            out.print(files, markup=False)

    emit_results(hits, as_json, lambda h: h.to_dict(), render)


@click.command(name="update-index")
@click.option(
    "--files", "files", multiple=True, help="Changed file (repeatable, or several space-separated)."
)
@click.option("--deleted", "deleted", multiple=True, help="Deleted file (repeatable).")
@json_option
@with_lore
def update_index(lore, files, deleted, as_json):
    """Re-index just these files (for editor hooks and tools).

    \b
    Example:
      lore update-index --files "src/a.py src/b.py" --deleted src/old.py
    """
    if not files and not deleted:
        raise click.UsageError("name the files to re-check: --files PATH (changed) or --deleted PATH")
    base = _base(lore.project.root)
    result = lore.update_index(_paths(files, base, exist=True), _paths(deleted, base, exist=False))
    if as_json:
        emit_json(result)
        return
    click.echo(f"updated {result['updated']}, deleted {result['deleted']}")
    for skip in result["skipped"]:
        click.echo(printable(f"not indexed: {skip['path']} ({skip['reason']})"), err=True)


def _base(root) -> str:
    """Where relative paths start: the current folder when it is one of the
    project's (an editor hook run there names files as its shell sees them),
    else the project's root."""
    from lore.atomic import contained

    here = os.getcwd()
    return here if contained(root, here) else os.fspath(root)


def _paths(values: tuple[str, ...], base: str, *, exist: bool) -> list[str]:
    """Each value as a path from `base`, or its words when it holds spaces:
    `--files "a.py b.py"` names two files, but a file's name may hold a space,
    so a value naming a file (`exist`) is kept whole. A deleted file is gone:
    both readings are passed, and the one that names nothing indexed does nothing."""
    found: dict[str, None] = {}
    for value in values:
        whole = os.path.normpath(os.path.join(base, value))  # an absolute value stays itself
        words = [os.path.normpath(os.path.join(base, word)) for word in value.split()]
        if len(words) < 2 or (exist and os.path.lexists(whole)):
            found[whole] = None
        else:
            found.update(dict.fromkeys(words if exist else [whole, *words]))
    return list(found)


@click.command()
@json_option
@with_lore
def status(lore, as_json):
    """How fresh the index is: indexed commit vs HEAD, changed files, pending embeddings.

    \b
    Examples:
      lore status
      lore status --json
    """
    data = lore.status()
    if as_json:
        emit_json(data)
        return
    short = lambda sha: sha[:10] if sha else "-"  # noqa: E731
    changes = len(data["changed_files"]) + len(data["new_files"]) + len(data["deleted_files"])
    rows = [
        [
            "index",
            (
                "up to date"
                if not data["pending_embeddings"] or not data["embedding"]
                else "up to date, but vectors pending (`lore index` makes them)"
            )
            if data["up_to_date"]
            else "being updated in the background (a git hook's update)"
            if data.get("updating")
            else "stale — run `lore index`",
        ],
        [
            "HEAD / indexed commit",
            f"{short(data['head'])} / {short(data['indexed_commit'])}" if data["git"] else "not a git repo",
        ],
        [
            "work tree changes since index",
            f"{len(data['changed_files'])} changed, {len(data['new_files'])} new, "
            f"{len(data['deleted_files'])} deleted"
            if changes
            else "none",
        ],
        ["code", f"{data['code_files']} files, {data['code_chunks']} chunks, {data['commits']} commits"],
        ["memories", str(data["memories"])],
        [
            "embedding model",
            data["embedding"] or f"none — BM25 only ({data['embedding_problem'] or 'no model'})",
        ],
        ["pending embeddings", str(data["pending_embeddings"] or 0)],
    ]
    table(["", ""], rows)


COMMANDS = [code, history, update_index, status]
