"""Memories as one agent sees them: read, written, removed — privacy checked in one place.

:class:`Memories` is the memory layer's front: every read path (list,
resolve by id or path, show, search filters) and every write path (add,
update, remove, restore) goes through :meth:`Memories.visible` / the
storage filter built by :meth:`Memories.filter`, so another agent's private
or session memory is indistinguishable from a missing one.

The acting agent is fixed when the object is made (CLI ``--agent`` /
``LORE_AGENT``, the MCP server's identity at start), never per call.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lore import secrets
from lore.errors import Conflict, NotFound, UsageError, ValidationError
from lore.locking import file_lock
from lore.memory import markdown, sync, trash
from lore.memory.model import Memory, now_iso, parse_time
from lore.project import Project, agent_key
from lore.records import Record, internal
from lore.storage import MemoryFilter, Store

MOVABLE_TIERS = ("durable", "daily", "session")  # storage tiers a person may move a memory to
# One file of a prepared change: {"path", "before_sha256" (None: a new file), "after" (None: to the trash)}.
FileChange = dict[str, Any]


@dataclass
class AddResult(Record):
    """What a write did: the memory's id and path, whether it was created."""

    id: str
    path: str
    created: bool  # False: an identical memory existed (dedup) or it was updated
    title: str
    type: str
    redacted: dict[str, int] = field(default_factory=dict)
    memory: Memory = internal(default=None)

    def as_memory(self) -> dict[str, Any]:
        """003's Memory shape (what add_memory returns), without the content."""
        m = self.memory
        return {
            "id": self.id,
            "memory_type": self.type,
            "title": self.title,
            "tags": list(m.tags),
            "applies_to": m.applies_to,
            "source_work_item_id": m.task,
            "created_by_agent": m.agent,
            "created_at": m.occurred_at,
            "path": self.path,
            "created": self.created,
            "redacted": dict(self.redacted),
        }


@dataclass
class Page(Record):
    """A slice of a memory file (004's paginated read)."""

    id: str
    path: str
    content: str
    offset: int
    total_chars: int
    next_offset: int | None
    title: str
    type: str
    memory: Memory = internal(default=None)


class Memories:
    """The memories one agent may see, and the writes it may make."""

    def __init__(self, project: Project, store: Store, *, agent: str | None = None, watcher: Any = None):
        self.project = project
        self.store = store
        self.agent = agent
        self.viewer = agent_key(agent) if agent else None
        self._watcher = watcher
        self.last_sync: sync.SyncReport | None = None

    # -- freshness -----------------------------------------------------------------------

    def sync(self, *, force: bool = False) -> sync.SyncReport:
        """Bring the index up to date with the memory files (cheap when nothing changed)."""
        if (
            not force
            and self.last_sync is not None
            and self._watcher is not None
            and not self._watcher.changed()
        ):
            return self.last_sync
        self.last_sync = sync.sync_memories(self.project, self.store, force=force)
        return self.last_sync

    # -- privacy, in one place ----------------------------------------------------------------

    def filter(self, **conditions: Any) -> MemoryFilter:
        """A storage filter limited to what this agent may see."""
        return MemoryFilter(viewer=self.viewer, **conditions)

    def visible(self, rel: str) -> bool:
        """May this agent see the memory file at `rel`? (Unindexed files: by location.)"""
        found = self.store.memories(MemoryFilter(paths=[rel], include_private=True), limit=1)
        if found:
            return found[0].owner is None or found[0].owner == self.viewer
        _visibility, _storage, folder = sync.location_of(rel)
        return folder is None or self.viewer == _key_or_none(folder)

    # -- reading --------------------------------------------------------------------------------

    def resolve(self, key: str) -> str:
        """A visible memory's path from its id, id prefix, file name or path."""
        if not key or not key.strip():
            raise UsageError("give a memory id, file name or path")
        self.sync()
        if key.endswith(".md") or os.sep in key or "/" in key:
            rel = self._path_of(key)
            if rel is not None:
                return rel
        paths = [p for p in self.store.memory_paths(key) if self.visible(p)]
        if not paths:
            broken = [
                p
                for p, _ in self.store.file_errors("memory")
                if (Path(p).stem == key or p == key) and self.visible(p)
            ]
            if broken:
                return broken[0]
            raise NotFound(f"no memory '{key}'; see `lore list` or `lore search`")
        if len(paths) > 1:
            raise UsageError(
                f"'{key}' matches {len(paths)} memories ({', '.join(paths[:3])}…); give more of the id"
            )
        return paths[0]

    def _path_of(self, key: str) -> str | None:
        outside = []
        for base in (Path.cwd(), self.project.root):
            try:
                full = self.project.inside(key, base=base)
            except UsageError as err:  # relative to the cwd it may leave the project
                outside.append(err)
                continue
            if full.is_file():
                rel = self.project.rel(full)
                if not rel.startswith(".lore/") or rel.startswith(".lore/local/trash/"):
                    raise UsageError(f"{key} is not a memory file (not under .lore/)")
                if not self.visible(rel):
                    raise NotFound(f"no memory '{key}'; see `lore list` or `lore search`")
                return rel
        if len(outside) == 2:
            raise outside[0]
        return None

    def load(self, rel: str) -> Memory:
        """Parse the memory file at `rel` (relative to the project root)."""
        from lore.memory.files import read_memory_file

        raw = read_memory_file(self.project.root, rel)
        memory, _ = sync.load_memory(raw, rel, sync.location_of(rel))
        memory.path = rel
        return memory

    def show(self, key: str, *, offset: int = 0, limit: int | None = None) -> Page:
        """A memory's whole file, or a character slice of it (004's memory_read)."""
        if offset < 0 or (limit is not None and limit < 1):
            raise UsageError("offset must be ≥ 0 and limit ≥ 1")
        rel = self.resolve(key)
        from lore.memory.files import read_memory_file

        text = read_memory_file(self.project.root, rel).decode("utf-8", "replace")
        memory = self.load(rel)
        end = len(text) if limit is None else min(len(text), offset + limit)
        return Page(
            memory.id,
            rel,
            text[offset:end],
            offset,
            len(text),
            end if end < len(text) else None,
            memory.title,
            memory.type,
            memory,
        )

    def check(self, rel: str) -> None:
        """Re-read one file after a hand edit; raises ValidationError if it is broken."""
        self.sync()
        for path, error in self.store.file_errors("memory"):
            if path == rel:
                line, message = sync.split_error(path, error)
                raise ValidationError(message, path=rel, line=line)

    def version(self, rel: str) -> str:
        """The SHA-256 of the memory file's bytes: the version a reader saw
        (give it back to :meth:`update` as ``expected_sha256``)."""
        from lore.memory.files import read_memory_file

        return hashlib.sha256(read_memory_file(self.project.root, rel)).hexdigest()

    def broken(self) -> list[tuple[str, str]]:
        """Memory files that failed to parse and this agent may see: (path, error)."""
        return [(path, error) for path, error in self.store.file_errors("memory") if self.visible(path)]

    def id_of(self, rel: str) -> str:
        rows = self.store.memories(self.filter(paths=[rel]), limit=1)
        return rows[0].id if rows else Path(rel).stem

    # -- writing --------------------------------------------------------------------------------

    def add(
        self,
        *,
        body: str,
        title: str | None = None,
        type: str = "fact",
        tags: list[str] | tuple = (),
        applies_to: str = "global",
        task: str | None = None,
        project: str | None = None,
        files: list[str] | tuple = (),
        labels: list[str] | tuple = (),
        confidence: float | None = None,
        occurred_at: str | None = None,
        id: str | None = None,
        private: bool = False,
        session: bool = False,
        tier: str | None = None,
        source: str | None = None,
        extra: dict | None = None,
    ) -> AddResult:
        """Write a new memory file and index it.

        Idempotent: a memory with the same ``occurred_at`` and body hash is
        returned instead of written again. Secrets are redacted from every
        field first. An explicit `id` that exists already is a conflict.

        Args:
            tier: storage tier (durable, daily, session); ``session=True`` is
                ``tier="session"``. Where its files go: :func:`sync.folder_of`.
        """
        agent = self.agent
        if private and not agent:
            raise UsageError("a private memory needs an agent; pass --agent NAME (or set LORE_AGENT)")
        if not (body or "").strip():
            raise ValidationError("the memory's content is empty; give the text to remember", field="body")
        from lore.memory.model import derive_title, new_id

        clean = redact_fields(
            body=body,
            title=(title or "").strip(),
            tags=list(tags),
            files=list(files),
            labels=list(labels),
            applies_to=applies_to,
            task=task,
            source=source,
        )
        derived_title = clean["title"] or derive_title(clean["body"])
        memory = Memory(
            title=derived_title,
            body=clean["body"].strip() + "\n",
            type=type,
            tags=clean["tags"] or derive_keywords(derived_title, clean["body"]),
            applies_to=clean["applies_to"],
            agent=agent,
            task=clean["task"],
            project=project,
            files=clean["files"],
            labels=clean["labels"],
            confidence=1.0 if confidence is None else confidence,
            occurred_at=parse_time(occurred_at) if occurred_at else now_iso(),
            id=id or new_id(),
            source=clean["source"],
            extra=dict(extra or {}),
        )
        memory.validate(strict=True)
        folder = sync.folder_of(
            self.project, tier or ("session" if session else "durable"), agent=agent, private=private
        )
        if id is not None:
            with file_lock(self.project.local_dir / ".write.lock"):
                self.sync()
                if self.store.memories(MemoryFilter(ids=[id], include_private=True), limit=1):
                    raise Conflict(
                        f"a memory with id {id} exists already; omit --id to get a new one, or update that memory"
                    )
        return self.put(memory, folder, redacted=dict(clean["redacted"]))

    def put(self, memory: Memory, folder: Path, *, redacted: dict[str, int] | None = None) -> AddResult:
        """Write a prepared memory as a new file in `folder` and index it (for
        imports, promotions and captures; :meth:`add` builds the memory first).

        The memory must be redacted and validated by the caller. A memory with
        the same ``occurred_at`` and body hash, or the same id, that this agent
        can see is returned instead (``created`` False); nothing is overwritten.
        """
        with file_lock(self.project.local_dir / ".write.lock"):
            self.sync()
            existing = self.store.find_duplicate(memory.occurred_at, memory.content_hash)
            if existing is None:
                same_id = self.store.memories(MemoryFilter(ids=[memory.id], include_private=True), limit=1)
                existing = same_id[0].path if same_id else None
            if existing and self.visible(existing):
                found = self.load(existing)
                return AddResult(
                    found.id, existing, False, found.title, found.type, dict(redacted or {}), found
                )
            text = markdown.render(memory)
            path = markdown.write_new(folder, markdown.file_name(memory), text)
            rel = self.project.rel(path)
            with self.store.transaction():
                memory = sync.index_memory(
                    self.store, self.project, rel, path.read_bytes(), path.stat(), sync.location_of(rel)
                )
        memory.path = rel
        return AddResult(memory.id, rel, True, memory.title, memory.type, dict(redacted or {}), memory)

    def rewrite(self, rel: str, memory: Memory, *, expected_sha256: str | None = None) -> None:
        """Replace the file at `rel` with `memory` as it is (no redaction, no
        ``updated_at``): bookkeeping Lore does on its own files (evidence counts,
        tier moves) and changes a person approved in ``lore review``.

        Raises:
            Conflict: the file's bytes no longer hash to `expected_sha256`.
        """
        memory.validate()
        text = markdown.render(memory)
        with file_lock(self.project.local_dir / ".write.lock"):
            if expected_sha256 is not None and self.version(rel) != expected_sha256:
                raise Conflict(f"{rel} changed on disk since it was read; run the command again")
            markdown.write_atomic(self.project.root / rel, text)
        self.sync()

    def apply_changes(self, changes: Sequence[FileChange], *, what: str) -> None:
        """Write a set of prepared file changes, all checked first: each file must
        still be what it was (``before_sha256``; None: it must not exist yet), and
        visible to this agent. A change with ``after`` None moves the file to the
        trash. For approved proposals (``lore review``); `what` names the change
        in the one-line Conflict.
        """
        root = self.project.root
        with file_lock(self.project.local_dir / ".write.lock"):
            for change in changes:
                path, before = change["path"], change["before_sha256"]
                exists = (root / path).exists()
                if (before is None and exists) or (
                    before is not None and (not exists or self.version(path) != before)
                ):
                    raise Conflict(
                        f"{path} changed since {what} was made; run `lore consolidate` to propose again"
                    )
                if before is not None and not self.visible(path):
                    raise NotFound(f"no memory at {path}")
            for change in changes:
                path, after = change["path"], change["after"]
                if after is None:
                    trash.trash(self.project, path, self.id_of(path))
                elif change["before_sha256"] is None:
                    markdown.write_new((root / path).parent, (root / path).name, after)
                else:
                    markdown.write_atomic(root / path, after)
        self.sync()

    def update(
        self,
        key: str,
        *,
        body: str | None = None,
        title: str | None = None,
        type: str | None = None,
        expected_sha256: str | None = None,
        **fields: Any,
    ) -> AddResult:
        """Rewrite an existing memory in canonical form (unknown fields kept).

        Args:
            fields: other Memory fields to set (tags, applies_to, confidence,
                files, labels, project, priority, risk, task_type); None
                leaves a field as it is.
            expected_sha256: the file's hash when the caller read it; if the
                file changed since, nothing is written (Conflict).
        """
        from lore.memory.model import SECTOR_OF_TYPE, UPDATABLE

        unknown = set(fields) - UPDATABLE
        if unknown:
            raise UsageError(
                f"cannot update {', '.join(sorted(unknown))}; "
                f"updatable fields: {', '.join(sorted(UPDATABLE))}"
            )
        rel = self.resolve(key)
        memory = self.load(rel)
        redacted: Counter[str] = Counter()
        if body is not None:
            memory.body, found = secrets.redact(body.strip() + "\n")
            redacted += found
        if title is not None:
            memory.title, found = secrets.redact(title.strip())
            redacted += found
        if type is not None:
            memory.type, memory.sector = type, SECTOR_OF_TYPE.get(type, memory.sector)
        for name, value in fields.items():
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                value, found = secrets.redact_values([str(v) for v in value])
                redacted += found
            elif isinstance(value, str):
                value, found = secrets.redact(value)
                redacted += found
            setattr(memory, name, value)
        memory.updated_at = now_iso()
        memory.validate()
        text = markdown.render(memory)
        with file_lock(self.project.local_dir / ".write.lock"):
            if expected_sha256 is not None:
                if self.version(rel) != expected_sha256:
                    raise Conflict(
                        f"{rel} changed on disk since it was read; reload it and apply your edit again"
                    )
            markdown.write_atomic(self.project.root / rel, text)
        self.sync()
        saved = self.load(rel)
        return AddResult(saved.id, rel, False, saved.title, saved.type, dict(redacted), saved)

    def remove(self, key: str) -> trash.TrashEntry:
        """Soft delete into `.lore/local/trash/` (see `restore`, `gc`)."""
        rel = self.resolve(key)
        entry = trash.trash(self.project, rel, self.id_of(rel))
        self.sync()
        return entry

    def restore(self, key: str | trash.TrashEntry) -> str:
        """Put a trashed memory back (by id, id prefix or trash file name, or an
        entry of :meth:`trash_entries`); returns its path."""
        entry = key if isinstance(key, trash.TrashEntry) else self.trashed(key)
        rel = trash.restore(self.project, entry)
        self.sync()
        return rel

    def trash_entries(self) -> list[trash.TrashEntry]:
        return [e for e in trash.entries(self.project) if self.visible(e.original)]

    def trashed(self, key: str) -> trash.TrashEntry:
        """The newest trash entry matching `key` that this agent may see."""
        return trash.find(self.project, key, visible=self.visible)

    def purge(self, key: str) -> trash.TrashEntry:
        """Delete one trash entry now, instead of waiting for :meth:`gc`."""
        entry = self.trashed(key)
        trash.purge_entry(entry)
        return entry

    def set_storage(self, key: str, storage: str) -> str:
        """Move a shared memory to another storage tier's folder (durable, daily,
        session; :func:`sync.folder_of` says where each lives); returns its new path.

        Refused for private memories (they stay in their agent's folder) and
        when the move would hide the memory from this agent (a session memory
        belongs to the agent that wrote it)."""
        if storage not in MOVABLE_TIERS:
            raise UsageError(f"unknown storage tier '{storage}'; use {', '.join(MOVABLE_TIERS)}")
        rel = self.resolve(key)
        visibility, current, _folder = sync.location_of(rel)
        if visibility == "private":
            raise UsageError(f"{rel} is private: it stays in its agent's folder")
        if current == storage:
            return rel
        if storage == "session":
            owner = sync.owner_of(self.load(rel), ("shared", "session", None))
            if owner is not None and owner != self.viewer:
                raise UsageError(
                    f"{rel} was written by agent {owner}: as a session memory only that agent would see it"
                )
        folder = sync.folder_of(self.project, storage)
        with file_lock(self.project.local_dir / ".write.lock"):
            moved = markdown.move_new(self.project.root / rel, folder)
        self.sync()
        return self.project.rel(moved)

    def verify(self, key: str) -> dict[str, Any]:
        """A human or agent checked the memory: re-anchor it to the current code."""
        from lore.index import anchors

        rel = self.resolve(key)
        memory = self.load(rel)
        with self.store.transaction():
            count = anchors.record(self.store, self.project.root, memory)
        return {
            "id": memory.id,
            "path": rel,
            "anchors": anchors.anchors_of(self.store, memory.id),
            "anchored": count,
        }

    def gc(self, *, retention_days: float | None = None) -> list[trash.TrashEntry]:
        """Purge trash entries past the retention period (only those this agent may see:
        another agent's private trash waits for that agent's gc)."""
        days = retention_days
        if days is None:
            days = float(self.project.setting("memory", "trash_retention_days", 30))
        return trash.purge(self.project, days, visible=self.visible)


def redact_fields(**fields: Any) -> dict[str, Any]:
    """Every persisted field with secrets redacted; ``redacted`` counts what was."""
    found: Counter[str] = Counter()
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, list):
            out[name], more = secrets.redact_values([str(v) for v in value])
        elif isinstance(value, str):
            out[name], more = secrets.redact(value)
        else:
            out[name], more = value, Counter()
        found += more
    out["redacted"] = found
    return out


def derive_keywords(title: str, body: str, limit: int = 5) -> list[str]:
    """Keywords for a memory given none: the title's terms, then the body's most
    frequent; always valid keywords (1-50 characters, no numbers or shas)."""
    import re

    from lore.search.text import STOPWORDS, terms

    noise = re.compile(r"^(\d+|[0-9a-f]{7,40})$")  # numbers and commit shas say nothing
    words = [w for w in terms(title) if not noise.match(w) and len(w) <= 50]
    if len(words) < limit:
        body_words = [
            w
            for w in re.findall(r"[a-z][a-z0-9_]+", body.lower())
            if w not in STOPWORDS and len(w) > 3 and len(w) <= 50 and not noise.match(w)
        ]
        words += [w for w, _ in Counter(body_words).most_common(limit * 2) if w not in words]
    return words[:limit] or ["note"]


def _key_or_none(name: str) -> str | None:
    try:
        return agent_key(name)
    except ValidationError:
        return name
