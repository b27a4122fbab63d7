"""Curating memories by hand: bulk actions previewed before they run, and a
memory file's git log.

A bulk action works on a *selection* (the memories a filter matches, or the
trash entries for `restore`). Its preview lists every affected memory with
the change and a digest of the selection; applying needs that digest back,
so a selection that changed in between (a memory added, edited, deleted) is
refused instead of acting on memories the person never saw. Every change
goes through :class:`~lore.memory.repository.Memories`, so the acting
agent's visibility applies to each one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import ArgumentError, Conflict, UsageError, ValidationError, as_lore_error
from lore.memory.model import MEMORY_TYPES
from lore.memory.repository import MOVABLE_TIERS
from lore.records import Record, datarecord, internal

if TYPE_CHECKING:
    from lore.memory.repository import Memories
    from lore.memory.trash import TrashEntry
    from lore.storage import MemoryFilter, MemoryRecord

BULK_ACTIONS = ("delete", "restore", "retag", "set_type", "set_tier", "verify")
STORAGE_TIERS = MOVABLE_TIERS
MAX_BULK = 10_000


@datarecord
class BulkItem(Record):
    """One memory a bulk action touches, and what happens to it."""

    id: str
    path: str
    title: str
    change: str


@datarecord
class BulkResult(Record):
    """A bulk action's preview (``applied`` false) or outcome."""

    action: str
    applied: bool
    total: int
    digest: str
    items: list[BulkItem] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


@datarecord
class BulkParams:
    """A bulk action and what it changes: tags to add/remove, a type, a storage tier."""

    action: str
    add_tags: list[str] = field(default_factory=list)
    remove_tags: list[str] = field(default_factory=list)
    type: str | None = None
    tier: str | None = None

    def check(self) -> None:
        action = self.action
        if action not in BULK_ACTIONS:
            raise UsageError(f"unknown bulk action '{action}'; use one of: {', '.join(BULK_ACTIONS)}")
        if action == "retag" and not (self.add_tags or self.remove_tags):
            raise UsageError("retag needs tags to add or remove")
        if action == "set_type" and self.type not in MEMORY_TYPES:
            raise UsageError(f"set_type needs a type: one of {', '.join(MEMORY_TYPES)}")
        if action == "set_tier" and self.tier not in STORAGE_TIERS:
            raise UsageError(f"set_tier needs a tier: {', '.join(STORAGE_TIERS)}")


@datarecord
class Selected:
    """One memory (or trash entry) of a selection; ``version`` changes whenever it does."""

    id: str
    path: str
    title: str
    type: str
    tags: list[str]
    version: str
    storage: str = "durable"
    visibility: str = "shared"
    entry: TrashEntry | None = internal(default=None)

    @classmethod
    def of(cls, record: MemoryRecord) -> Selected:
        return cls(
            record.id,
            record.path,
            record.title,
            record.type,
            list(record.tags),
            record.content_hash,
            record.storage,
            record.visibility,
        )


def trash_selection(memories: Memories, flt: MemoryFilter) -> list[Selected]:
    """The trash entries this agent may see, as a selection. Only the filter's
    types, tags and ids apply (the trash keeps no index)."""
    from lore.memory import markdown
    from lore.memory.files import read_memory_file

    wanted = set(flt.ids) if flt.ids is not None else None
    rows = []
    for entry in memories.trash_entries():
        if wanted is not None and entry.id not in wanted:
            continue
        try:
            raw = read_memory_file(memories.project.root, memories.project.rel(entry.file))
            memory, _ = markdown.parse(raw, entry.original)
        except (OSError, ValidationError):
            continue
        tags = {t.lower() for t in memory.tags}
        if flt.types and memory.type not in flt.types:
            continue
        if any(t.lower() not in tags for t in flt.tags):
            continue
        rows.append(
            Selected(
                entry.id,
                entry.original,
                memory.title,
                memory.type,
                memory.tags,
                entry.deleted_at,
                entry=entry,
            )
        )
    return rows


def describe(row: Selected, params: BulkParams) -> str | None:
    """What the action does to `row`, or None when it would change nothing."""
    action = params.action
    if action == "delete":
        return "move to trash"
    if action == "restore":
        return f"restore to {row.path}"
    if action == "verify":
        return "re-anchor to the current code"
    if action == "set_type":
        return None if row.type == params.type else f"type {row.type} → {params.type}"
    if action == "set_tier":
        if row.visibility == "private" or row.storage == params.tier:
            return None
        return f"tier {row.storage} → {params.tier}"
    tags = retagged(row.tags, params)
    if tags == row.tags:
        return None
    added = [t for t in tags if t not in row.tags]
    removed = [t for t in row.tags if t not in tags]
    return ", ".join([*(f"+{t}" for t in added), *(f"−{t}" for t in removed)])


def retagged(tags: list[str], params: BulkParams) -> list[str]:
    """`tags` without the removed ones (any case), then the added ones not there yet."""
    drop = {t.lower() for t in params.remove_tags}
    out = [t for t in tags if t.lower() not in drop]
    have = {t.lower() for t in out}
    for tag in params.add_tags:
        if tag.lower() not in have:
            out.append(tag)
            have.add(tag.lower())
    return out


def digest(params: BulkParams, rows: list[Selected]) -> str:
    """A short fingerprint of the action and exactly which memories (and versions) it covers."""
    data = json.dumps(
        [
            params.action,
            [params.add_tags, params.remove_tags, params.type, params.tier],
            sorted((r.path, r.version) for r in rows),
        ],
        sort_keys=True,
    )
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def run_bulk(
    memories: Memories, params: BulkParams, rows: list[Selected], *, apply: bool, confirm: str | None
) -> BulkResult:
    """Preview or apply the action over `rows` through `memories`.

    Applying needs ``confirm`` equal to the preview's digest. One memory that
    fails does not stop the others; each failure is reported.
    """
    params.check()
    if len(rows) > MAX_BULK:
        raise UsageError(f"{len(rows)} memories selected; narrow the filter to at most {MAX_BULK}")
    planned = [(row, change) for row in rows if (change := describe(row, params)) is not None]
    fingerprint = digest(params, [row for row, _ in planned])
    items = [BulkItem(row.id, row.path, row.title, change) for row, change in planned]
    result = BulkResult(params.action, False, len(items), fingerprint, items)
    if not apply:
        return result
    if not confirm:
        raise ArgumentError("applying needs {0}: the digest its preview gave; preview first", "confirm")
    if confirm != fingerprint:
        raise Conflict(
            "the selection changed since the preview (memories were added, edited or removed); "
            "preview again and confirm what you see"
        )
    act = _action(memories, params)
    for row, _ in planned:
        try:
            act(row)
        except Exception as err:
            known = as_lore_error(err)
            if known is None:
                raise
            result.errors.append({"path": row.path, "error": str(known)})
    result.applied = True
    return result


def _action(memories: Memories, params: BulkParams) -> Callable[[Selected], Any]:
    """What applying the action does to one selected memory."""
    actions: dict[str, Callable[[Selected], Any]] = {
        "delete": lambda row: memories.remove(row.path),
        "restore": lambda row: memories.restore(row.entry or row.id),
        "retag": lambda row: memories.update(row.path, tags=retagged(row.tags, params)),
        "set_type": lambda row: memories.update(row.path, type=params.type),
        "set_tier": lambda row: memories.set_storage(row.path, str(params.tier)),
        "verify": lambda row: memories.verify(row.path),
    }
    return actions[params.action]


@datarecord
class FileCommit(Record):
    """One commit in a memory file's history."""

    sha: str
    date: str
    author: str
    subject: str


def file_log(root: Path, rel: str, limit: int = 20) -> list[FileCommit]:
    """The commits that changed `rel` (following renames), newest first; [] outside git
    or for files git ignores (private and session memories). Subjects are redacted,
    as the history index keeps them."""
    from lore.index import gitrepo
    from lore.secrets import redact

    if gitrepo.repo_root(root) is None:
        return []
    result = gitrepo.run_git(
        root,
        "log",
        f"-n{int(limit)}",
        "--follow",
        gitrepo.DATE_FORMAT,
        "--format=%H%x00%ad%x00%an%x00%s",
        "--",
        rel,
        check=False,
    )
    if result.returncode != 0:
        return []
    out = []
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\x00")
        if len(parts) == 4:
            sha, date, author, subject = parts
            out.append(FileCommit(sha, date, author, redact(subject)[0]))
    return out
