"""Commands that write and read single memories: add, list, show, edit, mv, graph, rm, restore, gc."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import click

from lore.errors import LoreError, UsageError, ValidationError
from lore.interfaces.cli.common import filter_options, json_option, refused_as_usage, split_commas, with_lore
from lore.interfaces.cli.decoding import read_stdin, read_text
from lore.interfaces.cli.output import echo, emit_json, is_terminal, relative_time, table, warn, warn_redacted
from lore.memory.model import MEMORY_TYPES


@click.command()
@click.option("--title", "-t", help="One-line subject (default: the body's first line).")
@click.option("--body", "-b", help="The memory text (Markdown). Or --body-file, or stdin.")
@click.option("--body-file", type=click.File("rb"), help="Read the body from a file ('-' = stdin).")
@click.option(
    "--type",
    "kind",
    type=click.Choice(MEMORY_TYPES, case_sensitive=False),
    default="fact",
    show_default=True,
    help="Kind of memory.",
)
@click.option("--tag", "-k", "tags", multiple=True, help="Keyword (repeatable or comma-separated).")
@click.option(
    "--applies-to",
    default="global",
    show_default=True,
    help="Where it applies: global, file:<path> or area:<name>.",
)
@click.option("--task", help="The task id it came from.")
@click.option("--file", "files", multiple=True, help="A file the memory is about (repeatable).")
@click.option("--label", "labels", multiple=True, help="A task label (repeatable).")
@click.option("--confidence", type=click.FloatRange(0, 1), help="How sure you are, 0-1 (default 1).")
@click.option("--occurred-at", help="When it happened (ISO 8601, default now).")
@click.option("--id", "memory_id", help="A UUID v4 to use (default: a new one).")
@click.option(
    "--private", is_flag=True, help="Only visible to the acting --agent (stored in .lore/local/<agent>/)."
)
@click.option("--session", is_flag=True, help="Session-tier memory (.lore/local/session/, not committed).")
@click.option(
    "--global",
    "is_global",
    is_flag=True,
    help="Shared with every project of a team database (PostgreSQL; docs/postgres.md).",
)
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
    is_global,
    as_json,
):
    """Add a memory (body from --body, --body-file or stdin).

    The same content stored already is not written twice: its id is printed instead.

    \b
    Examples:
      lore add --type decision -t "Store times in UTC" --tag time -b "Convert only in the UI."
      lore add --type gotcha -t "Flaky test_sync on CI" --file tests/test_sync.py < notes.md
      lore add --private --agent codex -t "My scratch note" -b "Try the retry path next."
    """
    if body is not None and body_file is not None:
        raise UsageError("give the body once: --body or --body-file, not both")
    if body is None and body_file is not None:
        body = read_text(body_file, f"--body-file {getattr(body_file, 'name', '-')}")
    if body is None and sys.stdin is not None and not sys.stdin.isatty():
        body = read_stdin()
    if not body or not body.strip():
        raise UsageError("no body given; use --body TEXT, --body-file PATH or pipe it on stdin")
    with refused_as_usage():
        result = lore.add(
            body=body,
            title=title,
            type=kind,
            tags=split_commas(tags),
            applies_to=applies_to,
            task=task,
            files=list(files),
            labels=split_commas(labels),
            confidence=confidence,
            occurred_at=occurred_at,
            id=memory_id,
            private=private,
            session=session,
            is_global=is_global,
        )
    warn_redacted(result.redacted)
    if as_json:
        emit_json(result.to_dict())
        return
    if result.note:
        warn(result.note)
    echo(f"{'added' if result.created else 'exists'} {result.id}  {result.path}")


@click.command(name="list")
@filter_options(limit_help="At most N memories (default: all).")
@json_option
@with_lore
def list_(lore, as_json, limit, **filters):
    """List memories, newest first.

    \b
    Examples:
      lore list --type decision --tag auth
      lore list --since "last week" --limit 20
      lore list --tier daily --json
    """
    rows = lore.list(limit=limit, **filters)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        echo("no memories")
        return
    table(
        ["id", "type", "title", "tags", "when"],
        [
            [r["id"][:8], r["type"], r["title"], _some_tags(r["tags"]), relative_time(r["occurred_at"])]
            for r in rows
        ],
    )


def _some_tags(tags: list[str], shown: int = 4) -> str:
    """A memory's first tags, and how many more it has (the table keeps a line per memory)."""
    more = f", +{len(tags) - shown}" if len(tags) > shown else ""
    return ", ".join(tags[:shown]) + more


@click.command()
@click.argument("key")
@click.option("--offset", type=int, default=0, help="First character to show.")
@click.option("--limit", type=int, default=None, help="At most N characters.")
@json_option
@with_lore
def show(lore, key, offset, limit, as_json):
    """Show a memory by id (or id prefix, file name, path), paginated by characters.

    In a terminal, the memories it links to and those linking to it follow the text.

    \b
    Examples:
      lore show 3f2a9c1e
      lore show utc-everywhere --offset 4000 --limit 4000
    """
    page = lore.show(key, offset=offset, limit=limit)
    if as_json:
        emit_json(page.to_dict())
        return
    echo(page.content, nl=not page.content.endswith("\n"))
    if page.redacted:
        warn(
            f"{page.path} holds {page.redacted} in clear (shown redacted): remove it "
            f"(`lore edit {page.id[:8]}`) and rotate the secret"
        )
    if page.next_offset is not None:
        warn(f"{page.total_chars - page.next_offset} more characters: --offset {page.next_offset}")
    elif offset and offset >= page.total_chars:
        warn(f"--offset {offset} is past the end: the file has {page.total_chars} characters")
    if is_terminal() and (page.links or page.backlinks):
        echo("")
        for link in page.links:
            target = f"{link.title}  ({link.id[:8]})" if link.id else f"{link.target}  (no such memory)"
            echo(f"→ {link.relation.replace('_', ' ')}: {target}")
        for link in page.backlinks:
            echo(f"← {link.relation.replace('_', ' ')}: {link.title}  ({link.id[:8] if link.id else '?'})")


@click.command()
@click.argument("key")
@click.option("--append", "append_text", metavar="TEXT", help="Add TEXT at the end of the body.")
@click.option("--prepend", "prepend_text", metavar="TEXT", help="Add TEXT at the start (after a # title).")
@click.option(
    "--replace-section",
    "section",
    metavar="HEADING",
    help="Replace the section under HEADING with --body (added if missing).",
)
@click.option("--body", "section_body", metavar="TEXT", help="The new section text for --replace-section.")
@click.option("--find", "find_text", metavar="TEXT", help="Text to replace (must occur once, or use --all).")
@click.option("--replace", "replace_text", metavar="TEXT", help="What --find's text becomes.")
@click.option("--all", "every", is_flag=True, help="With --find: replace every occurrence.")
@click.option(
    "--set",
    "assignments",
    metavar="FIELD=VALUE",
    multiple=True,
    help="Set a frontmatter field (repeatable): title, type, tags, applies_to, confidence...",
)
@click.option(
    "--relate",
    "relations",
    metavar="RELATION=MEMORY",
    multiple=True,
    help="Add a typed link: supersedes, relates_to, depends_on, contradicts, implements or your own.",
)
@click.option("--expect-sha256", metavar="HASH", help="Refuse if the file changed since you read it.")
@json_option
@with_lore
def edit(
    lore,
    key,
    append_text,
    prepend_text,
    section,
    section_body,
    find_text,
    replace_text,
    every,
    assignments,
    relations,
    expect_sha256,
    as_json,
):
    """Edit a memory: in $EDITOR, or precisely with the options (atomic, re-indexed at once).

    \b
    Examples:
      lore edit 3f2a9c1e                                   # opens $EDITOR
      lore edit 3f2a9c1e --append "- Also applies to the CLI."
      lore edit 3f2a9c1e --replace-section Decisions --body "Use UTC everywhere."
      lore edit 3f2a9c1e --find "30 s" --replace "5 s"
      lore edit 3f2a9c1e --set type=decision --set tags=[time,utc]
      lore edit 3f2a9c1e --relate supersedes=7c1d0e22
    """
    from lore.memory.edits import Edit

    edits = []
    if append_text is not None:
        edits.append(Edit("append", text=append_text))
    if prepend_text is not None:
        edits.append(Edit("prepend", text=prepend_text))
    if section is not None or section_body is not None:
        if section is None or section_body is None:
            raise UsageError("--replace-section HEADING and --body TEXT go together")
        edits.append(Edit("replace_section", heading=section, text=section_body))
    if find_text is not None or replace_text is not None:
        if find_text is None or replace_text is None:
            raise UsageError("--find TEXT and --replace TEXT go together")
        edits.append(Edit("find_replace", find=find_text, text=replace_text, every=every))
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set {assignment}: write FIELD=VALUE, e.g. --set type=decision")
        edits.append(Edit("set", field=name.strip(), value=value))
    for relation in relations:
        name, sep, target = relation.partition("=")
        if not sep or not name.strip() or not target.strip():
            raise UsageError(f"--relate {relation}: write RELATION=MEMORY, e.g. --relate supersedes=7c1d0e22")
        edits.append(Edit("relate", relation=name.strip(), value=target.strip()))
    result = _edited(lore, key, edits, expect_sha256) if edits else _edit_by_hand(lore, key)
    warn_redacted(result.redacted)
    if as_json:
        emit_json(result.to_dict())
        return
    for note in result.notes:
        warn(note)
    echo(f"saved {result.path}")
    _say_links(result)


def _edited(lore, key, edits, expected_sha256):
    """`lore.edit`; a value given with --set that the format refuses is bad
    usage (exit 2, as `lore add` with the same value), named as it was given."""
    try:
        return lore.edit(key, edits, expected_sha256=expected_sha256)
    except ValidationError as err:
        given = {e.field for e in edits if e.operation == "set"}
        field = {"subject": "title", "keywords": "tags"}.get(err.field or "", err.field)
        if field not in given and err.field not in given:
            raise
        raise UsageError(f"--set {field if field in given else err.field}: {err.reason}") from None


def _edit_by_hand(lore, key):
    """`lore edit ID` in $EDITOR. A file saved broken stays as saved (the
    person's text is never thrown away), and the error says how to get back
    to it: by its path, since its id is no longer indexed."""
    opened = []

    def editor(path) -> None:
        opened.append(path)
        _editor(path)

    try:
        return lore.edit_by_hand(key, editor)
    except ValidationError as err:
        if not opened or not err.path:
            raise
        raise ValidationError(
            f"{err.reason}; your edit is kept, and the memory is left out of search and recall "
            f"until the file is fixed: `lore edit {err.path}`",
            path=err.path,
            field=err.field,
            line=err.line,
        ) from None


def _editor(path) -> None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        status = subprocess.call([*shlex.split(editor), str(path)])
    except OSError as err:  # not there, not executable
        raise LoreError(
            f"cannot run the editor '{editor}' ({err.strerror}); set $VISUAL or $EDITOR to yours, "
            "or edit precisely (`lore edit ID --set FIELD=VALUE`, `--append TEXT`)"
        ) from None
    if status != 0:
        raise LoreError(f"editor '{editor}' exited with {status}; the file is as you left it")


def _say_links(result) -> None:
    if result.links_updated:
        count = len(result.links_updated)
        echo(f"updated links in {count} other memor{'y' if count == 1 else 'ies'}:")
        for path in result.links_updated:
            echo(f"  {path}")


@click.command(name="mv")
@click.argument("key")
@click.argument("destination")
@json_option
@with_lore
def mv(lore, key, destination, as_json):
    """Rename or move a memory file; links to it in other memories follow.

    \b
    DESTINATION is a new file name (same folder), a path under the memory
    folder (auth/ or auth/utc.md), or a project path (.lore/memory/...).

    \b
    Examples:
      lore mv 3f2a9c1e utc-everywhere
      lore mv 3f2a9c1e auth/
    """
    result = lore.move(key, destination)
    warn_redacted(result.redacted)
    if as_json:
        emit_json(result.to_dict())
        return
    for note in result.notes:
        warn(note)
    echo(f"moved {result.moved_from} → {result.path}")
    _say_links(result)


@click.command()
@click.argument("key")
@click.option("--depth", type=click.IntRange(0, 5), default=1, show_default=True, help="Links to follow.")
@json_option
@with_lore
def graph(lore, key, depth, as_json):
    """The memories linked to a memory (both ways), up to --depth links away.

    \b
    Example:
      lore graph 3f2a9c1e --depth 2
    """
    result = lore.graph(key, depth=depth)
    if as_json:
        emit_json(result.to_dict())
        return
    nodes = {node.id: node for node in result.nodes}
    root = nodes[result.root]
    echo(f"{root.title}  ({root.id[:8]})  {root.path}")
    for node in result.nodes[1:]:
        how = []  # the links to the nodes it was reached from: → written there, ← written here
        for e in result.edges:
            other = e.target if e.source == node.id else e.source if e.target == node.id else None
            if other in nodes and nodes[other].depth < node.depth:
                how.append(f"{'→' if e.source == other else '←'} {e.relation.replace('_', ' ')}")
        indent = "  " * node.depth
        echo(f"{indent}{', '.join(dict.fromkeys(how))}: {node.title}  ({node.id[:8]})  {node.path}")
    for link in result.broken:
        echo(f"  → {link.relation.replace('_', ' ')}: {link.target}  (no such memory)")
    if len(result.nodes) == 1 and not result.broken:
        echo("no links")


@click.command()
@click.argument("keys", nargs=-1, required=True)
@json_option
@with_lore
def rm(lore, keys, as_json):
    """Move memories to the trash (.lore/local/trash/); `lore restore` brings them back.

    KEYS: ids, id prefixes, file names or paths of memories. Every one is found
    before any memory moves.

    \b
    Examples:
      lore rm 3f2a9c1e
      lore rm 3f2a9c1e 7c1d0e22 old-note.md
    """
    # Every key is found before any memory moves: one that names nothing leaves all in place.
    # Each is then removed by the key given (a memory moved meanwhile, `lore mv` or a
    # promotion, is still found by its id), once for keys that name the same memory.
    found: dict[str, str] = {}
    for key in keys:
        found.setdefault(lore.resolve(key), key)
    entries = [lore.remove(key) for key in found.values()]
    if as_json:
        emit_json([e.to_dict() for e in entries])
        return
    for entry in entries:
        echo(f"trashed {entry.id}  {entry.original}")


@click.command()
@click.argument("keys", nargs=-1, required=True)
@click.option(
    "--add", "add_tags", multiple=True, metavar="TAG", help="A tag to add (repeatable or comma-separated)."
)
@click.option(
    "--remove",
    "remove_tags",
    multiple=True,
    metavar="TAG",
    help="A tag to remove (repeatable or comma-separated).",
)
@json_option
@with_lore
def tag(lore, keys, add_tags, remove_tags, as_json):
    """Add or remove memories' tags (keywords); without --add or --remove, show them.

    KEYS: ids, id prefixes, file names or paths of memories.

    \b
    Examples:
      lore tag 3f2a9c1e --add billing,rounding
      lore tag 3f2a9c1e 7c1d0e22 --remove wip
    """
    add, remove = split_commas(add_tags), split_commas(remove_tags)
    # Every key is found before any memory changes: one that names nothing changes none.
    paths = list(dict.fromkeys(lore.resolve(key) for key in keys))
    rows = []
    for path in paths:
        if add or remove:
            changed = lore.tag(path, add=add, remove=remove)
            if changed is not None:
                warn_redacted(changed.redacted)
        shown = lore.view(path)  # a secret written into a tag by hand: shown redacted
        rows.append({"id": shown.id, "path": path, "tags": list(shown.tags)})
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        echo(f"{row['id'][:8]}  {', '.join(row['tags']) or '(no tags)'}  {row['path']}")


@click.command()
@click.argument("key", required=False)
@click.option("--list", "show_list", is_flag=True, help="List what is in the trash.")
@json_option
@with_lore
def restore(lore, key, show_list, as_json):
    """Restore a trashed memory (by id or file name).

    \b
    Examples:
      lore restore --list
      lore restore 3f2a9c1e
    """
    if show_list or key is None:  # "" names nothing: an error, as `lore rm ''` is
        entries = lore.trash_entries()
        lost = len(lore.unrestorable_trash())
        if lost:
            warn(
                f"{lost} trashed file{'s have' if lost > 1 else ' has'} a missing or damaged note and "
                "can't be restored by `lore restore`; `lore doctor` lists them"
            )
        if as_json:
            emit_json([e.to_dict() for e in entries])
        elif entries:
            table(
                ["id", "original", "deleted"],
                [[e.id[:8], e.original, relative_time(e.deleted_at)] for e in entries],
            )
        else:
            echo("trash is empty")
        return
    path = lore.restore(key)
    if as_json:
        emit_json({"restored": path})
    else:
        echo(f"restored {path}")


@click.command()
@click.option("--days", type=float, default=None, help="Retention in days (default: config, 30).")
@json_option
@with_lore
def gc(lore, days, as_json):
    """Purge trashed memories older than the retention period, and vectors no chunk uses.

    \b
    Examples:
      lore gc
      lore gc --days 7
    """
    done = lore.collect_garbage(retention_days=days)
    purged, vectors = done["purged"], done["vectors_removed"]
    if as_json:
        emit_json({"purged": [e.to_dict() for e in purged], "vectors_removed": vectors})
    else:
        echo(
            f"purged {len(purged)} trashed memor{'y' if len(purged) == 1 else 'ies'}"
            + (
                f"; removed {vectors} vector{'' if vectors == 1 else 's'} no chunk uses any more"
                if vectors
                else ""
            )
        )


COMMANDS = [add, list_, show, edit, mv, graph, tag, rm, restore, gc]
