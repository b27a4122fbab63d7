"""Commands that write and read single memories: add, list, show, edit, rm, restore, gc."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import click

from lore.errors import UsageError
from lore.interfaces.cli.common import filter_options, json_option, with_lore
from lore.interfaces.cli.decoding import read_stdin, read_text
from lore.interfaces.cli.output import emit_json, table, warn
from lore.memory.model import MEMORY_TYPES
from lore.secrets import describe


def _split(values: tuple[str, ...]) -> list[str]:
    """--tag a --tag b,c → [a, b, c]"""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@click.command()
@click.option("--title", "-t", help="One-line subject (default: the body's first line).")
@click.option("--body", "-b", help="The memory text (Markdown). Or --body-file, or stdin.")
@click.option("--body-file", type=click.File("rb"), help="Read the body from a file ('-' = stdin).")
@click.option("--type", "kind", type=click.Choice(MEMORY_TYPES), default="fact", show_default=True)
@click.option("--tag", "-k", "tags", multiple=True, help="Keyword (repeatable or comma-separated).")
@click.option("--applies-to", default="global", show_default=True, help="global, file:<path> or area:<name>.")
@click.option("--task", help="Task id it came from.")
@click.option("--file", "files", multiple=True, help="File the memory is about (repeatable).")
@click.option("--label", "labels", multiple=True, help="Task label (repeatable).")
@click.option("--confidence", type=click.FloatRange(0, 1))
@click.option("--occurred-at", help="When it happened (ISO 8601, default now).")
@click.option("--id", "memory_id", help="UUID v4 (default: generated).")
@click.option(
    "--private", is_flag=True, help="Only visible to the acting --agent (stored in .lore/local/<agent>/)."
)
@click.option("--session", is_flag=True, help="Session-tier memory (.lore/local/session/, not committed).")
@json_option
@with_lore
def add(
    lore,
    title,
    body,
    body_file,
    kind,
    tags,
    applies_to,
    task,
    files,
    labels,
    confidence,
    occurred_at,
    memory_id,
    private,
    session,
    as_json,
):
    """Add a memory (body from --body, --body-file or stdin)."""
    if body is None and body_file is not None:
        body = read_text(body_file, f"--body-file {getattr(body_file, 'name', '-')}")
    if body is None and not sys.stdin.isatty():
        body = read_stdin()
    if not body or not body.strip():
        raise UsageError("no body given; use --body TEXT, --body-file PATH or pipe it on stdin")
    result = lore.add(
        body=body,
        title=title,
        type=kind,
        tags=_split(tags),
        applies_to=applies_to,
        task=task,
        files=list(files),
        labels=_split(labels),
        confidence=confidence,
        occurred_at=occurred_at,
        id=memory_id,
        private=private,
        session=session,
    )
    if result.redacted:
        warn(f"redacted before writing: {describe(Counter(result.redacted))}")
    if as_json:
        emit_json(result.to_dict())
    elif result.created:
        click.echo(f"added {result.id}  {result.path}")
    else:
        click.echo(f"exists {result.id}  {result.path}  (same occurred_at and content)")


@click.command(name="list")
@filter_options
@json_option
@with_lore
def list_(lore, as_json, limit, **filters):
    """List memories, newest first."""
    rows = lore.list(limit=limit, **filters)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no memories")
        return
    table(
        ["id", "type", "title", "tags", "when"],
        [[r["id"][:8], r["type"], r["title"], ", ".join(r["tags"][:4]), r["occurred_at"][:10]] for r in rows],
    )


@click.command()
@click.argument("key")
@click.option("--offset", type=int, default=0, help="First character to show.")
@click.option("--limit", type=int, default=None, help="At most N characters.")
@json_option
@with_lore
def show(lore, key, offset, limit, as_json):
    """Show a memory by id (or id prefix, file name, path), paginated by characters."""
    page = lore.show(key, offset=offset, limit=limit)
    if as_json:
        emit_json(page.to_dict())
        return
    click.echo(page.content, nl=not page.content.endswith("\n"))
    if page.next_offset is not None:
        warn(f"{page.total_chars - page.next_offset} more characters: --offset {page.next_offset}")


@click.command()
@click.argument("key")
@json_option
@with_lore
def edit(lore, key, as_json):
    """Open a memory in $EDITOR, then re-index it (the file is never rewritten by Lore)."""
    path = lore.path_of(key)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    status = subprocess.call(f'{editor} "{path}"', shell=True)
    if status != 0:
        raise UsageError(f"editor '{editor}' exited with {status}; the file is as you left it")
    rel = lore.project.rel(path)
    lore.check(rel)
    if as_json:
        emit_json({"path": rel, "id": lore.load(rel).id})
    else:
        click.echo(f"saved {rel}")


@click.command()
@click.argument("keys", nargs=-1, required=True)
@json_option
@with_lore
def rm(lore, keys, as_json):
    """Move memories to the trash (.lore/local/trash/); `lore restore` brings them back."""
    entries = [lore.remove(key) for key in keys]
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    for entry in entries:
        click.echo(f"trashed {entry.id}  {entry.original}")


@click.command()
@click.argument("key", required=False)
@click.option("--list", "show_list", is_flag=True, help="List what is in the trash.")
@json_option
@with_lore
def restore(lore, key, show_list, as_json):
    """Restore a trashed memory (by id or file name)."""
    if show_list or not key:
        entries = lore.trash_entries()
        if as_json:
            emit_json([e.to_dict() for e in entries])
        elif entries:
            table(["id", "original", "deleted"], [[e.id[:8], e.original, e.deleted_at] for e in entries])
        else:
            click.echo("trash is empty")
        return
    path = lore.restore(key)
    if as_json:
        emit_json({"restored": path})
    else:
        click.echo(f"restored {path}")


@click.command()
@click.option("--days", type=float, default=None, help="Retention in days (default: config, 30).")
@json_option
@with_lore
def gc(lore, days, as_json):
    """Purge trashed memories older than the retention period."""
    purged = lore.gc(retention_days=days)
    if as_json:
        emit_json({"purged": [e.to_dict() for e in purged]})
    else:
        click.echo(f"purged {len(purged)} trashed memor{'y' if len(purged) == 1 else 'ies'}")


COMMANDS = [add, list_, show, edit, rm, restore, gc]
