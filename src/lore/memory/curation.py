"""Curating memories by hand: edits that never overwrite a change made on disk
since the editor was opened, bulk actions previewed before they run, storage
tier moves, and a memory file's git log.

A bulk action works on a *selection* (the memories a filter matches, or the
trash entries for `restore`). Its preview lists every affected memory with
the change and a digest of the selection; applying needs that digest back,
so a selection that changed in between (a memory added, edited, deleted) is
refused instead of acting on memories the person never saw.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lore.errors import Conflict, UsageError
from lore.memory.model import MEMORY_TYPES
from lore.records import Record

BULK_ACTIONS = ("delete", "restore", "retag", "set_type", "set_tier", "verify")
STORAGE_TIERS = ("durable", "session")
MAX_BULK = 10_000


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes: the version an editor was opened on."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ensure_unchanged(path: Path, rel: str, expected_sha256: str) -> None:
    """Raise :class:`Conflict` if the file's bytes are no longer the version the caller read."""
    if file_sha256(path) != expected_sha256:
        raise Conflict(
            f"{rel} was changed on disk since you opened it; reload to see the new version "
            "(your text is kept), or save again to overwrite it"
        )


@dataclass
class BulkItem(Record):
    """One memory a bulk action touches, and what happens to it."""

    id: str
    path: str
    title: str
    change: str


@dataclass
class BulkResult(Record):
    """A bulk action's preview (``applied`` false) or outcome."""

    action: str
    applied: bool
    total: int
    digest: str
    items: list[BulkItem] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)


@dataclass
class BulkParams:
    """What a bulk action changes: tags to add/remove, a type, a storage tier."""

    add_tags: list[str] = field(default_factory=list)
    remove_tags: list[str] = field(default_factory=list)
    type: str | None = None
    tier: str | None = None

    def check(self, action: str) -> None:
        if action not in BULK_ACTIONS:
            raise UsageError(f"unknown bulk action '{action}'; use one of: {', '.join(BULK_ACTIONS)}")
        if action == "retag" and not (self.add_tags or self.remove_tags):
            raise UsageError("retag needs tags to add or remove")
        if action == "set_type" and self.type not in MEMORY_TYPES:
            raise UsageError(f"set_type needs a type: one of {', '.join(MEMORY_TYPES)}")
        if action == "set_tier" and self.tier not in STORAGE_TIERS:
            raise UsageError("set_tier needs a tier: durable or session")


def describe(action: str, row: dict, params: BulkParams) -> str | None:
    """What `action` does to the memory `row` (a :func:`~lore.search.browse.memory_row`),
    or None when it would change nothing."""
    if action == "delete":
        return "move to trash"
    if action == "restore":
        return f"restore to {row['path']}"
    if action == "verify":
        return "re-anchor to the current code"
    if action == "set_type":
        return None if row["type"] == params.type else f"type {row['type']} → {params.type}"
    if action == "set_tier":
        if row.get("visibility") == "private":
            return None
        return None if row["storage"] == params.tier else f"tier {row['storage']} → {params.tier}"
    tags = retagged(row["tags"], params)
    if tags == row["tags"]:
        return None
    added = [t for t in tags if t not in row["tags"]]
    removed = [t for t in row["tags"] if t not in tags]
    return ", ".join([*(f"+{t}" for t in added), *(f"−{t}" for t in removed)])


def retagged(tags: list[str], params: BulkParams) -> list[str]:
    drop = {t.lower() for t in params.remove_tags}
    out = [t for t in tags if t.lower() not in drop]
    have = {t.lower() for t in out}
    for tag in params.add_tags:
        if tag.lower() not in have:
            out.append(tag)
            have.add(tag.lower())
    return out


def digest(action: str, params: BulkParams, rows: list[dict]) -> str:
    """A short fingerprint of the action and exactly which memories (and versions) it covers."""
    data = json.dumps(
        [action, params.__dict__, sorted((r["path"], r.get("version", "")) for r in rows)], sort_keys=True
    )
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def run_bulk(
    action: str,
    rows: list[dict],
    params: BulkParams,
    *,
    apply: bool,
    confirm: str | None,
    act: Callable[[dict], None],
) -> BulkResult:
    """Preview or apply `action` over `rows`; `act(row)` performs it on one memory.

    Applying needs ``confirm`` equal to the preview's digest.
    """
    params.check(action)
    if len(rows) > MAX_BULK:
        raise UsageError(f"{len(rows)} memories selected; narrow the filter to at most {MAX_BULK}")
    described = [(row, describe(action, row, params)) for row in rows]
    planned = [(row, change) for row, change in described if change is not None]
    fingerprint = digest(action, params, [row for row, _ in planned])
    items = [BulkItem(row["id"], row["path"], row["title"], change) for row, change in planned]
    result = BulkResult(action, False, len(items), fingerprint, items)
    if not apply:
        return result
    if confirm != fingerprint:
        raise Conflict(
            "the selection changed since the preview (memories were added, edited or removed); "
            "preview again and confirm what you see"
        )
    for row, _ in planned:
        try:
            act(row)
        except Exception as err:  # one failure must not stop the rest; each is reported
            from lore.errors import as_lore_error

            known = as_lore_error(err)
            if known is None:
                raise
            result.errors.append({"path": row["path"], "error": str(known)})
    result.applied = True
    return result


def move_storage(root: Path, rel: str, target_dir: Path) -> str:
    """Move a memory file into `target_dir` (same name, ``-2``… on a clash; never overwrites).

    Hard link then unlink: the file exists under one name or both, never none.
    """
    source = root / rel
    target_dir.mkdir(parents=True, exist_ok=True)
    stem, n = source.stem, 1
    target = target_dir / source.name
    while True:
        try:
            os.link(source, target)
            break
        except FileExistsError:
            n += 1
            target = target_dir / f"{stem}-{n}.md"
    os.unlink(source)
    return target.relative_to(root).as_posix()


@dataclass
class FileCommit(Record):
    """One commit in a memory file's history."""

    sha: str
    date: str
    author: str
    subject: str


def file_log(root: Path, rel: str, limit: int = 20) -> list[FileCommit]:
    """The commits that changed `rel` (following renames), newest first; [] outside git
    or for files git ignores (private and session memories)."""
    from lore.index import gitrepo

    if gitrepo.repo_root(root) is None:
        return []
    result = gitrepo._git(
        root, "log", f"-n{int(limit)}", "--follow", "--format=%H%x00%aI%x00%an%x00%s", "--", rel, check=False
    )
    if result.returncode != 0:
        return []
    out = []
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\x00")
        if len(parts) == 4:
            out.append(FileCommit(*parts))
    return out


@dataclass
class MemoryDetail(Record):
    """Everything the memory page shows: the parsed memory, its file's version
    (``sha256``, for conflict-checked saves), code anchors, staleness,
    attention and access statistics."""

    id: str
    path: str
    title: str
    type: str
    sector: str
    tags: list[str]
    applies_to: str
    occurred_at: str
    updated_at: str | None
    agent: str | None
    task: str | None
    visibility: str
    storage: str
    confidence: float
    files: list[str]
    frontmatter: dict
    body: str
    sha256: str
    anchors: list[dict]
    stale: list[str] | None
    attention: float
    tier: str
    access_count: int
    last_accessed: str | None
    evidence: dict
