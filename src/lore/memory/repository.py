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

import contextlib
import copy
import dataclasses
import hashlib
import os
import re
import threading
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from lore import secrets
from lore.errors import (
    ArgumentError,
    Conflict,
    LoreError,
    NotFound,
    PermissionDenied,
    StorageError,
    UsageError,
    ValidationError,
    as_lore_error,
    unchanged,
)
from lore.filenames import MAX_PATH, display_path
from lore.locking import file_lock
from lore.memory import markdown, sync, trash
from lore.memory.edits import BODY_OPERATIONS, Edit, MemoryText
from lore.memory.files import location_of
from lore.memory.graph import LinkedMemory, LinkGraph
from lore.memory.links import Rename, name_key, rewrite_body, rewrite_relations, stem_of
from lore.memory.model import Memory, derive_keywords, now_iso, parse_time
from lore.memory.sync import SyncReport
from lore.memory.values import check_line, clip, quoted
from lore.project import Project, agent_key
from lore.records import Record, datarecord, internal
from lore.storage import LinkRecord, MemoryFilter, MemoryRecord, Store

_SHOWN_BODIES = 2048  # memory bodies kept by shown_body, per repository

MOVABLE_TIERS = ("durable", "daily", "session")  # storage tiers a person may move a memory to
# One file of a prepared change: {"path", "before_sha256" (None: a new file), "after" (None: to the trash)}.
FileChange = dict[str, Any]


@datarecord
class AddResult(Record):
    """What a write did: the memory's id and path, whether it was created."""

    id: str
    path: str
    created: bool  # False: an identical memory existed (dedup) or it was updated
    title: str
    type: str
    redacted: dict[str, int] = field(default_factory=dict)
    note: str | None = None  # what the user should know: an existing memory returned, a name taken
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
            "note": self.note,
        }


@datarecord
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
    links: list[LinkedMemory] = field(default_factory=list)
    backlinks: list[LinkedMemory] = field(default_factory=list)
    # Kinds of secret the file holds in clear, shown redacted ('1 password').
    redacted: str = ""
    memory: Memory = internal(default=None)


@datarecord
class EditResult(Record):
    """What an edit or a move did to one memory, and to the memories linking to it."""

    id: str
    path: str
    title: str
    type: str
    operations: list[str]
    notes: list[str] = field(default_factory=list)
    moved_from: str | None = None
    links_updated: list[str] = field(default_factory=list)  # other memories whose links were rewritten
    redacted: dict[str, int] = field(default_factory=dict)


MAX_RETENTION_DAYS = 100_000
"""Longest trash retention (about 270 years): more would overflow date arithmetic."""


class Memories:
    """The memories one agent may see, and the writes it may make."""

    def __init__(
        self,
        project: Project,
        store: Store,
        *,
        agent: str | None = None,
        watcher: Any = None,
        own_private_only: bool = False,
    ):
        """Args:
        own_private_only: index only this agent's private folder, not other
            agents' (a team server's store acting as one user's database role,
            where another role's private rows are not this store's to write).
        """
        self.project = project
        self.store = store
        self.agent = agent
        self.viewer = agent_key(agent) if agent else None
        self._watcher = watcher
        self._private_agents: tuple[str, ...] | None = None
        if own_private_only:
            self._private_agents = (self.viewer,) if self.viewer else ()
        self.last_sync: sync.SyncReport | None = None
        self._in_batch = False
        self.graph = LinkGraph(self)
        self._bodies: dict[tuple[object, ...], str] = {}  # shown bodies by file state (see shown_body)
        self._writer: int | None = None  # the thread holding the write lock (it may take it again)

    # -- freshness -----------------------------------------------------------------------

    def sync(self, *, force: bool = False, recheck_broken: bool = False) -> sync.SyncReport:
        """Bring the index up to date with the memory files (cheap when nothing
        changed; `recheck_broken`: see :func:`sync.sync_memories`)."""
        if (
            not force
            and not recheck_broken
            and self.last_sync is not None
            and (self._in_batch or (self._watcher is not None and not self._watcher.changed()))
        ):
            return self.last_sync
        self.last_sync = sync.sync_memories(
            self.project,
            self.store,
            force=force,
            recheck_broken=recheck_broken,
            private_agents=self._private_agents,
        )
        return self.last_sync

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes in a row by this process (an import): the files are read
        once, at the start; each write indexes what it writes itself, so the
        folder is not walked again for every memory (quadratic for thousands)."""
        self.sync()
        self._in_batch = True
        try:
            yield
        finally:
            self._in_batch = False

    def _reindex_written(self) -> str | None:
        """:meth:`_reindex` after a memory file was written: the file is the
        memory, so an index that cannot take it now (a full disk, a busy
        index) is said as a note, not an error: an error made the caller try
        again, and an edit tried again (`--append`) was made twice."""
        try:
            self._reindex()
        except Exception as err:
            problem = as_lore_error(err)
            if not isinstance(problem, StorageError):
                raise
            cause = str(problem).split(";")[0]
            return f"saved, but not searchable yet ({cause}); the next command indexes it"
        return None

    def _reindex(self) -> None:
        """Index what was just written, now (whatever a file watcher says)."""
        self.last_sync = sync.sync_memories(self.project, self.store, private_agents=self._private_agents)

    # -- privacy, in one place ----------------------------------------------------------------

    def filter(self, **conditions: Any) -> MemoryFilter:
        """A storage filter limited to what this agent may see."""
        return MemoryFilter(viewer=self.viewer, **conditions)

    def visible(self, rel: str) -> bool:
        """May this agent see the memory file at `rel`? (Unindexed files: by location.)"""
        return rel in self.visible_paths([rel])

    def visible_paths(self, paths: Collection[str]) -> set[str]:
        """The memory files of `paths` this agent may see (one read of the index;
        unindexed files, broken ones, by location)."""
        if not paths:
            return set()
        listed = list(paths)
        owners = {
            record.path: record.owner
            for start in range(0, len(listed), 500)  # (a first sync names every file)
            for record in self.store.memories(
                MemoryFilter(paths=listed[start : start + 500], include_private=True), limit=500
            )
        }
        seen = set()
        for rel in paths:
            if rel in owners:
                owner = owners[rel]
            else:
                folder = location_of(rel)[2]
                owner = None if folder is None else _key_or_none(folder)
            if owner is None or owner == self.viewer:
                seen.add(rel)
        return seen

    def seen(self, report: SyncReport) -> SyncReport:
        """`report` as this agent may see it: another agent's private files are
        not named (a file's name says what it is about). What is shown (`lore
        index`, doctor, the warnings after a command, a web job, status) is
        this; the lifecycle reads the whole report (another agent's edit
        picked up here still moves its tiers)."""
        named = {*report.added, *report.updated, *report.removed, *(p for p, _ in report.errors)}
        seen = self.visible_paths(named)
        if len(seen) == len(named):
            return report  # nothing to leave out: the report itself (it is compared by identity)
        return SyncReport(
            [p for p in report.added if p in seen],
            [p for p in report.updated if p in seen],
            [p for p in report.removed if p in seen],
            [e for e in report.errors if e[0] in seen],
        )

    def project_path(self, path: str) -> str:
        """An absolute path inside the project as a relative one (``--file
        $PWD/src/app.py``); anything else as given, for validation to judge."""
        if not os.path.isabs(path):
            return path
        for root in {self.project.root, self.project.root.resolve()}:
            if Path(path).is_relative_to(root):
                return Path(path).relative_to(root).as_posix() or "."
        return path

    @contextlib.contextmanager
    def writing(self) -> Iterator[bool]:
        """The lock every memory write takes, once Lore's folders are known to
        be inside the project: a `.lore/memory` that links elsewhere (a
        cloned repository may carry such a link) must not make `add` write
        files there, and reads skip what lies outside anyway.

        The thread holding it may take it again: a decision and the writes it
        leads to are made under one hold (a gotcha created by one capture of
        several at once: :func:`lore.memory.capture.count_errors`)."""
        if self._writer == threading.get_ident():
            yield True
            return
        outside = self.project.outside_folders()
        if outside:
            rel, real = outside[0]
            raise PermissionDenied(
                f"{rel} links to {real}, outside the project; Lore writes memories only inside "
                f"the project: make {rel} a folder"
            )
        with file_lock(self.project.local_dir / ".write.lock") as held:
            self._writer = threading.get_ident()
            try:
                yield held
            finally:
                self._writer = None

    def _other(self, memory: Memory, target: str, relation: str) -> str:
        """The memory a relation (or superseded_by) names, as its full id when
        the target is an id, id prefix, file name or path of a visible memory
        (a prefix written as given would name nothing later); a title stays
        as written (links resolve titles). A memory never relates to itself."""
        try:
            found = self.record(self.resolve(target.strip()))
        except (NotFound, UsageError):
            return target
        if found is not None and found.id == memory.id:
            raise UsageError(f"{relation.strip()}: a memory cannot name itself; name another memory")
        return found.id if found is not None else target

    @staticmethod
    def _check_relations(memory: Memory, before: Memory | None = None) -> None:
        """Refuse a write that brings in a relation name that is a near miss of a
        known one (``supercedes``: the supersession meant would silently not
        happen); names `before` (the memory as it was) had already stay, for
        `lore doctor` to report."""
        from lore.memory.links import relation_typos, typo_message

        source = memory.path or ".lore/memory/new.md"
        had = set()
        if before is not None:
            had = {r for r, _ in relation_typos(before.body, before.extra.get("relations"), source)}
        for relation, known in relation_typos(memory.body, memory.extra.get("relations"), source):
            if relation not in had:
                raise UsageError(typo_message(relation, known))

    # -- reading --------------------------------------------------------------------------------

    def resolve(self, key: str) -> str:
        """A visible memory's path from its id, id prefix, file name or path."""
        if not isinstance(key, str) or not key.strip():
            raise UsageError("give a memory id, file name or path")
        if len(key) > MAX_PATH:  # no id, name or path is this long; the index's LIKE refuses 50 kB
            raise UsageError(f"a memory key of {len(key):,} characters; give its id, file name or path")
        if key.startswith("@") and "/" in key:  # how search names another project's global memory
            raise NotFound(
                f"{clip(key, 120)} is a memory of project '{key[1:].split('/', 1)[0]}', shared with every "
                "project of the database: its file is in that project's repository (`lore search` shows its text)"
            )
        self.sync()
        elsewhere: UsageError | None = None
        if key.endswith(".md") or os.sep in key or "/" in key:
            try:
                rel = self._path_of(key)
            except UsageError as err:
                if os.sep in key or "/" in key:
                    raise
                # A bare name the project has outside .lore/ too (README.md, AGENTS.md): a memory's file name first.
                elsewhere, rel = err, None
            if rel is not None:
                return rel
        paths = [p for p in self.store.memory_paths(key) if self.visible(p)]
        if not paths:
            broken = [
                p
                for p, _ in self.store.file_errors("memory")
                if self.visible(p)
                and (Path(p).stem == key or Path(p).name == key or p == key or self._declares_id(p, key))
            ]
            if broken:
                return broken[0]
            if elsewhere is not None:
                raise elsewhere
            raise NotFound(f"no memory '{clip(key, 120)}'; see `lore list` or `lore search`")
        if len(paths) > 1:
            records = {r.path: r for r in self.store.memories(self.filter(paths=paths))}
            ids = {r.id for r in records.values()}
            if len(ids) == 1:  # one id in several files: more of the id can't tell them apart
                raise Conflict(
                    f"{len(paths)} files have the id {ids.pop()} ({', '.join(paths[:3])}); "
                    "keep one: name it by its path, and `lore rm` the other by its path"
                )
            shown = [f"{records[p].id[:12]} {p}" if p in records else p for p in paths[:3]]
            more = "…" if len(paths) > 3 else ""
            raise UsageError(
                f"'{key}' matches {len(paths)} memories ({', '.join(shown)}{more}); give more of the id"
            )
        return paths[0]

    def _declares_id(self, rel: str, key: str) -> bool:
        """Whether the broken file `rel` says `id: KEY...` (an id or a prefix of
        8 or more characters): a file saved broken in an editor is still found
        by the id it was known by, so `lore edit ID` and `lore show ID` reach it."""
        from lore.memory.files import read_memory_file

        if len(key) < 8:
            return False
        try:
            head = read_memory_file(self.project.root, rel)[: markdown.MAX_FRONTMATTER_CHARS]
        except (NotFound, ValidationError, OSError):
            return False
        for line in head.decode("utf-8", "replace").splitlines()[1:]:
            if line.strip() == "---":
                break
            name, sep, value = line.partition(":")
            if sep and name.strip() == "id":
                return value.strip().strip("'\"").startswith(key)
        return False

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
                    raise UsageError(f"{quoted(key)} is not a memory file (not under .lore/)")
                if not self.visible(rel):
                    raise NotFound(f"no memory '{clip(key, 120)}'; see `lore list` or `lore search`")
                if not self._indexed_memory_file(rel):  # .lore/config.toml, index.db, a session's files
                    raise UsageError(
                        f"{quoted(key)} is not a memory file (one of Lore's own files); "
                        "give a memory's id, file name or path (`lore list`)"
                    )
                return rel
        if len(outside) == 2:
            raise outside[0]
        return None

    def _indexed_memory_file(self, rel: str) -> bool:
        """Whether `rel` is a memory file the index knows (read, or refused as broken)."""
        if not rel.endswith(".md"):
            return False
        return self.record(rel) is not None or rel in {p for p, _ in self.store.file_errors("memory")}

    def load(self, rel: str) -> Memory:
        """Parse the memory file at `rel` (relative to the project root)."""
        from lore.memory.files import read_memory_file

        raw = read_memory_file(self.project.root, rel)
        memory, _ = sync.load_memory(raw, rel, location_of(rel))
        memory.path = rel
        return memory

    def view(self, rel: str) -> Memory:
        """The memory at `rel` as it may be shown: a secret written into the file
        by hand (an editor, a merge) is redacted, as the index keeps it. Edits
        work on :meth:`load`'s whole text; everything that shows a memory to a
        person or an agent reads this (or :meth:`shown_body`, for the body alone)."""
        memory = self.load(rel)
        sync.redacted(memory)
        return memory

    def shown_body(self, rel: str) -> str:
        """The body :meth:`view` shows (secrets redacted), kept while the file is
        unchanged (same inode, size, modification and change times); ""
        with a notice for a file that can no longer be read.

        Recall shows the same memories again and again (the hot ones on every
        call of a long-running server), and reading, parsing and redacting
        them was a fifth of a warm recall. A file that changed, was replaced
        or can't be stat'ed is read again the safe way (:meth:`load`)."""
        try:
            st = os.stat(os.path.join(self.project.root, rel))
            key: tuple[object, ...] | None = (
                rel,
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
            )
        except (OSError, ValueError):
            key = None
        if key is not None and (body := self._bodies.get(key)) is not None:
            return body
        try:
            body = secrets.redact(self.load(rel).body)[0]
        except (NotFound, ValidationError) as err:
            # Unreadable since it was indexed (a chmod keeps its time): the rest of a pack stands.
            note = f"skipped the body of {rel}: {err.reason if isinstance(err, ValidationError) else 'gone'}"
            if note not in self.store.notices:
                self.store.notices.append(note)
            return ""
        if key is not None:
            if len(self._bodies) >= _SHOWN_BODIES:
                self._bodies.pop(next(iter(self._bodies)))  # the oldest
            self._bodies[key] = body
        return body

    def show(self, key: str, *, offset: int = 0, limit: int | None = None) -> Page:
        """A memory's whole file (secrets redacted, as :meth:`view`), or a
        character slice of it (004's memory_read)."""
        if not _whole(offset) or offset < 0 or (limit is not None and (not _whole(limit) or limit < 1)):
            raise UsageError("offset must be ≥ 0 and limit ≥ 1 (whole numbers of characters)")
        rel = self.resolve(key)
        from lore.memory.files import read_memory_file
        from lore.secrets import describe, redact

        try:
            raw = read_memory_file(self.project.root, rel)
        except NotFound:
            if self.record(rel) is None:
                raise
            # Indexed, from a shared database: another clone of the project wrote it.
            raise NotFound(
                f"{rel}: its file is not in this clone (another clone of the project wrote it "
                "to the shared index); pull that clone's commits (`git pull`) to read it here"
            ) from None
        text, kinds = redact(raw.decode("utf-8", "replace"))
        memory = self.view(rel)
        end = len(text) if limit is None else min(len(text), offset + limit)
        record = self.record(rel)
        return Page(
            memory.id,
            rel,
            text[offset:end],
            offset,
            len(text),
            end if end < len(text) else None,
            memory.title,
            memory.type,
            self.graph.links_of(record) if record else [],
            self.graph.backlinks_of(record) if record else [],
            describe(kinds),
            memory,
        )

    def record(self, rel: str) -> MemoryRecord | None:
        """The indexed fields of the visible memory at `rel` (None: not indexed, e.g. broken)."""
        found = self.store.memories(self.filter(paths=[rel]), limit=1)
        return found[0] if found else None

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
        tags: list[str] | tuple[str, ...] = (),
        applies_to: str = "global",
        task: str | None = None,
        project: str | None = None,
        files: list[str] | tuple[str, ...] = (),
        labels: list[str] | tuple[str, ...] = (),
        confidence: float | None = None,
        occurred_at: str | None = None,
        id: str | None = None,
        private: bool = False,
        session: bool = False,
        tier: str | None = None,
        source: str | None = None,
        priority: int | None = None,
        risk: str | None = None,
        task_type: str | None = None,
        extra: dict[str, Any] | None = None,
        is_global: bool = False,
    ) -> AddResult:
        """Write a new memory file and index it.

        Idempotent: a visible memory with the same content (body hash) and
        task is returned instead of written again, with a note saying so (with an
        explicit `occurred_at`, only one of that same time: the same text
        at another time is another occurrence, e.g. a replayed event). A file
        name already taken by another memory gets ``-2``, ``-3``… and a note. Secrets are redacted from every
        field first. An explicit `id` that exists already is a conflict.
        The file is written through :func:`markdown.render_checked`: what is
        stored reads back exactly as given (after the documented
        normalisation), or nothing is written.

        ``is_global`` (003) shares a committed memory with every project of a
        team database (frontmatter ``is_global: true``; see docs/postgres.md).

        Args:
            tier: storage tier (durable, daily, session); ``session=True`` is
                ``tier="session"``. Where its files go: :func:`sync.folder_of`.
        """
        agent = self.agent
        if private and not agent:
            raise UsageError("a private memory needs an agent; pass --agent NAME (or set LORE_AGENT)")
        if is_global and (private or session or (tier or "durable") != "durable"):
            raise UsageError("only a committed memory can be global; drop --private/--session or --global")
        if not (body or "").strip():
            raise ValidationError("the memory's content is empty; give the text to remember", field="body")
        from lore.memory.model import derive_title, new_id, normalized

        clean = redact_fields(
            body=body,
            title=(title or "").strip(),
            tags=list(tags),
            files=list(files),
            labels=list(labels),
            applies_to=applies_to,
            task=task,
            source=source,
            risk=risk,
            task_type=task_type,
        )
        extra, found = secrets.redact_nested(extra or {})  # a capture's session id, an error's signature
        clean["redacted"] += found
        derived_title = clean["title"] or derive_title(clean["body"])
        clean["files"] = list(dict.fromkeys(self.project_path(f) for f in clean["files"]))
        if clean["applies_to"] and clean["applies_to"].startswith("file:"):
            clean["applies_to"] = "file:" + self.project_path(clean["applies_to"][5:])
        memory = Memory(
            title=derived_title,
            body=clean["body"],
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
            priority=priority,
            risk=clean["risk"],
            task_type=clean["task_type"],
            extra={**extra, **({"is_global": True} if is_global else {})},
        )
        memory = normalized(memory)  # the form it is stored in: the duplicate check compares that
        memory.validate(strict=True)
        self._check_relations(memory)
        folder = sync.folder_of(
            self.project, tier or ("session" if session else "durable"), agent=agent, private=private
        )
        if id is not None:
            with self.writing():
                self.sync()
                taken = self.store.memories(MemoryFilter(ids=[id], include_private=True), limit=1)
                if taken and taken[0].owner not in (None, self.viewer):
                    # Another agent's private memory: say nothing of it (not even that it
                    # is a memory), and never write a second file with its id.
                    raise Conflict(f"the id {id} can't be used; omit it to get a new one")
                if taken:
                    raise Conflict(
                        f"a memory with id {id} exists already; omit --id to get a new one, or update that memory"
                    )
        result = self.put(memory, folder, redacted=dict(clean["redacted"]), same_time_only=bool(occurred_at))
        named = [*memory.files, *([memory.applies_to[5:]] if memory.applies_to.startswith("file:") else [])]
        missing = [path for path in dict.fromkeys(named) if not (self.project.root / path).exists()]
        if result.created and missing:  # a typo in --file anchors nothing, and `lore stale` never says so
            said = (
                f"nothing at {', '.join(missing)} in the project: check the path "
                f"(`lore edit {memory.id[:8]} --set files=[...]` or `--set applies_to=file:...` corrects it)"
            )
            result.note = f"{result.note}; {said}" if result.note else said
        return result

    def put(
        self,
        memory: Memory,
        folder: Path,
        *,
        redacted: dict[str, int] | None = None,
        same_time_only: bool = True,
    ) -> AddResult:
        """Write a prepared memory as a new file in `folder` and index it (for
        imports, promotions and captures; :meth:`add` builds the memory first).

        The memory must be redacted and validated by the caller. A memory this
        agent can see with the same body hash and task (and, `same_time_only`,
        the same ``occurred_at``), or with the same id, is returned instead
        (``created`` False, with a note); nothing is overwritten.
        """
        with self.writing():
            self.sync()
            same = self.store.memories(self.filter(content_hash=memory.content_hash))
            if same_time_only:  # an explicit time is a distinct occurrence unless it is the same one
                same = [r for r in same if r.occurred_at == memory.occurred_at]
            # Another task's memory is not this one, whatever its text (`complete T-80` after T-77).
            same = [r for r in same if (r.task or None) == (memory.task or None)]
            # A private memory is not one others see, whatever its text: neither
            # stands for the other (a shared fact was never written for an agent's
            # private copy of it, which the others cannot see).
            private = location_of(self.project.rel(folder / "x.md"))[0] == "private"
            same = [r for r in same if (r.visibility == "private") == private]
            by_id = not same
            if by_id:  # the same id (an import, a promotion) that this agent can see
                same = self.store.memories(self.filter(ids=[memory.id]), limit=1)
            if same:
                found = self.load(same[0].path)
                said = (
                    f"memory {found.id[:8]} is already stored ({same[0].path}); nothing written"
                    if by_id
                    else f"the same content is already stored as {found.id[:8]} ({same[0].path}); nothing written"
                )
                return AddResult(
                    found.id,
                    same[0].path,
                    False,
                    found.title,
                    found.type,
                    dict(redacted or {}),
                    said,
                    found,
                )
            # add() validated strictly; imports and promotions may keep their source's ids
            text = markdown.render_checked(memory)
            wanted = markdown.file_name(memory)
            self.project.check_folder(folder)  # a symbolic link out: no reader would see it again
            path = markdown.write_new(folder, wanted, text)
            rel = self.project.rel(path)
            note: str | None = None
            try:
                with self.store.transaction():
                    memory = sync.index_memory(
                        self.store, self.project, rel, path.read_bytes(), path.stat(), location_of(rel)
                    )
            except Exception as err:
                # The file is the memory, and it is written: an index that is busy or
                # full now picks it up at its next sync. Saying "try again" would
                # only make a second attempt find the first ("already stored").
                problem = as_lore_error(err)
                if not isinstance(problem, StorageError):
                    raise
                cause = str(problem).split(";")[0]  # its advice ("try again") would mislead here
                note = f"saved, but not searchable yet ({cause}); the next command indexes it"
        memory.path = rel
        if path.name != wanted:
            note = f"another memory is named {wanted}; this one was written as {path.name}" + (
                f"; {note}" if note else ""
            )
        return AddResult(memory.id, rel, True, memory.title, memory.type, dict(redacted or {}), note, memory)

    def rewrite(self, rel: str, memory: Memory, *, expected_sha256: str | None = None) -> None:
        """Replace the file at `rel` with `memory` as it is (no redaction, no
        ``updated_at``): bookkeeping Lore does on its own files (evidence counts,
        tier moves) and changes a person approved in ``lore review``.

        Raises:
            Conflict: the file's bytes no longer hash to `expected_sha256`.
        """
        memory.validate()
        text = markdown.render_checked(memory)
        with self.writing():
            if expected_sha256 is not None and self.version(rel) != expected_sha256:
                raise Conflict(f"{rel} changed on disk since it was read; run the command again")
            markdown.write_atomic(self.project.root / rel, text)
        self.sync()

    def apply_changes(self, changes: Sequence[FileChange], *, what: str) -> None:
        """Write a set of prepared file changes, all checked first: each file must
        still be what it was (``before_sha256``; None: a new file, written under
        a free name near `path`), and visible to this agent. A change with
        ``after`` None moves the file to the trash; one with ``keep`` is only
        checked. For approved proposals (``lore review``); `what` names the
        change in the one-line Conflict.
        """
        root = self.project.root
        with self.writing():
            for change in changes:
                path, before = change["path"], change["before_sha256"]
                # A file to create takes a free name if its own was taken meanwhile (a
                # promotion whose name another memory took was refused, then proposed again).
                if before is not None and (not (root / path).exists() or self.version(path) != before):
                    raise Conflict(
                        f"{path} changed since {what} was made; run `lore consolidate` to propose again"
                    )
                if before is not None and not self.visible(path):
                    raise NotFound(f"no memory at {path}")
            for change in changes:
                path, after = change["path"], change["after"]
                if change.get("keep"):  # checked above, not changed
                    continue
                if after is None:
                    trash.trash(self.project, path, self.id_of(path))
                elif change["before_sha256"] is None:
                    self.project.check_folder((root / path).parent)
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
        extra: dict[str, Any] | None = None,
        **fields: Any,
    ) -> AddResult:
        """Rewrite an existing memory in canonical form (unknown fields kept).

        Args:
            fields: other Memory fields to set (tags, applies_to, confidence,
                files, labels, project, priority, risk, task_type); None
                leaves a field as it is.
            extra: fields of Lore's own outside the memory schema to set
                (``lore complete``'s record of the body it wrote).
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
        redacted: Counter[str] = Counter()
        # Read, change and write under the lock every memory write takes: a
        # change another process made meanwhile (`lore tag` beside `lore edit
        # --append`, a `lore rm`) is built on, or refused, never overwritten.
        with self.writing():
            memory = self._parse(self._read_checked(rel, expected_sha256), rel)
            before = self.record(rel)
            was = copy.copy(memory)
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
                if isinstance(value, (list, tuple)):  # each once, in the order given
                    value, found = secrets.redact_values(list(dict.fromkeys(str(v) for v in value)))
                    redacted += found
                elif isinstance(value, str):
                    value, found = secrets.redact(value)
                    redacted += found
                setattr(memory, name, value)
            if extra:
                memory.extra.update(extra)
            if fields.get("files") is not None or fields.get("applies_to") is not None:
                memory.check_project_paths()  # the project's own paths, as `add` and `edit --set` ask
            self._check_relations(memory, was)
            memory.updated_at = now_iso()
            text = markdown.render_checked(memory)
            incoming = self.graph.linking_to(before) if before and title is not None else []
            markdown.write_atomic(self.project.root / rel, text)
            note = self._reindex_written()
            if note is None:
                self._follow(before, self.record(rel), incoming)
        saved = self.load(rel)
        return AddResult(saved.id, rel, False, saved.title, saved.type, dict(redacted), note, saved)

    def retag(self, key: str, add: Sequence[str] = (), remove: Sequence[str] = ()) -> AddResult | None:
        """Add `add` and take out `remove` (compared without case) from a memory's
        tags, on the tags the file holds when it is written: two processes
        tagging one memory at once keep both changes (a change written between
        this one's read and write makes it read again). None: nothing to change."""
        rel = self.resolve(key)
        gone = {t.lower() for t in remove}
        for _ in range(20):
            raw = self._read_checked(rel, None)
            tags = list(self._parse(raw, rel).tags)
            wanted = [t for t in tags if t.lower() not in gone]
            wanted += [t for t in add if t.lower() not in {w.lower() for w in wanted}]
            if wanted == tags:
                return None
            try:
                return self.update(rel, tags=wanted, expected_sha256=hashlib.sha256(raw.encode()).hexdigest())
            except Conflict:
                continue  # changed meanwhile: build on what it is now
        raise Conflict(f"{rel} kept changing while its tags were written; try again")

    def edit(self, key: str, edits: Sequence[Edit], *, expected_sha256: str | None = None) -> EditResult:
        """Apply precise edits to one memory, atomically, and re-index it at once.

        Body operations change only the part of the text they name (the
        frontmatter keeps its text; ``content_hash`` and ``updated_at`` follow);
        ``set`` and ``relate`` rewrite the frontmatter in canonical form. New
        text is redacted like any write. A changed title is followed by the
        links to this memory in other files. `expected_sha256`: as in :meth:`update`.
        """
        from lore.memory.edits import add_relation, apply_to_body, set_field

        if not edits:
            raise UsageError("nothing to do; give an edit (--append, --set, ... see `lore edit --help`)")
        for one in edits:
            one.check()
        rel = self.resolve(key)
        redacted: Counter[str] = Counter()
        notes: list[str] = []
        related: list[str] = []

        def clean(text: str | None) -> str | None:
            nonlocal redacted
            if text is None:
                return None
            out, found = secrets.redact(text)
            redacted += found
            return out

        with self.writing():
            raw = self._read_checked(rel, expected_sha256)
            before = self.record(rel)
            parts = MemoryText.of(raw)
            body = parts.body
            for one in edits:
                if one.operation in BODY_OPERATIONS:  # a new section's heading is written too
                    one = Edit(**{**one.__dict__, "text": clean(one.text), "heading": clean(one.heading)})
                    body, note = apply_to_body(body, one)
                    notes += [note] if note else []
            # What was typed may complete a secret only the whole says is one
            # ("password: TODO" replaced by the value; a password written by hand
            # replaced by another): a secret the body did not hold has it redacted.
            if body != parts.body and secrets.secrets_in(body) - secrets.secrets_in(parts.body):
                body = clean(body) or ""
            stamp = now_iso()
            text = parts.render(body, now=stamp)
            memory = self._parse(text, rel)
            framed = [one for one in edits if one.operation not in BODY_OPERATIONS]
            for one in framed:
                if one.operation == "set":  # redacted once parsed: YAML must not read the marker
                    key = (clean(one.field) or "").strip()
                    set_field(memory, key, one.value, clean=lambda t: clean(t) or "")
                    if key in memory.extra:  # a field of one's own is read with its name
                        keyed, found = secrets.redact_nested({key: memory.extra[key]})
                        memory.extra[key] = keyed[key]
                        redacted += found
                    if key == "superseded_by" and memory.extra.get("superseded_by"):
                        memory.extra["superseded_by"] = self._other(
                            memory, str(memory.extra["superseded_by"]), key
                        )
                else:
                    relation = clean(one.relation) or ""
                    target = self._other(memory, clean(one.value) or "", relation)
                    note = add_relation(memory, relation, target)
                    notes += [note] if note else []
                    related.append(target)
            self._check_relations(memory, self._parse(raw, rel))
            if framed:
                memory.updated_at = stamp
                text = markdown.render_checked(memory)
            retitled = before is not None and name_key(before.title) != name_key(memory.title)
            incoming = self.graph.linking_to(before) if before and retitled else []
            markdown.write_atomic(self.project.root / rel, text)
            unindexed = self._reindex_written()
            after = self.record(rel)
            updated = self._follow(before, after, incoming) if unindexed is None else []
            notes += [unindexed] if unindexed else []
        if related and after is not None:  # kept (the memory may come later), but said
            dangling = {link.target for link in self.graph.links_of(after) if link.id is None}
            notes += [
                f"'{target}' names no memory you can see; the link stays broken (`lore doctor`) "
                "until a memory has that id, title or file name"
                for target in dict.fromkeys(related)
                if target in dangling
            ]
        return EditResult(
            memory.id,
            rel,
            memory.title,
            memory.type,
            [one.operation for one in edits],
            notes,
            None,
            updated,
            dict(redacted),
        )

    def move(self, key: str, destination: str) -> EditResult:
        """Rename or move a memory file (never over another file), keeping its
        links working: its own relative links, and every link to it in other
        memories (by path or file name; links by id or title need no change).

        `destination`: a file name (same folder), a path under the memory's
        folder (``auth/`` or ``auth/utc.md``), or a project path (``.lore/...``).
        """
        rel = self.resolve(key)
        destination, redacted = _redacted_name(destination)
        target = self._destination(rel, destination)
        if target == rel:
            raise UsageError(f"{rel} is already there; give a new name or folder")
        full = self.project.root / target
        with self.writing():
            if full.exists():
                raise Conflict(f"{target} exists already; choose another name")
            raw = self._read_checked(rel, None)
            before = self.record(rel)
            incoming = self.graph.linking_to(before) if before else []
            # The links to it first, the file last: a move stopped part-way (a
            # kill) is finished by running it again, which finds the links not
            # yet rewritten still naming the file where it still is.
            planned = dataclasses.replace(before, path=target) if before else None
            updated = self._follow(before, planned, incoming)
            names = {}
            if stem_of(rel) != stem_of(target):
                names[name_key(stem_of(rel))] = stem_of(target)
            rename = Rename(rel, target, names)
            try:
                text = self._relinked(raw, rel, rename, new_source=target)
                written = markdown.write_new(full.parent, full.name, text)
            except BaseException:  # not moved (a folder in the way, a full disk): the links go back
                self._unfollow(before, planned)
                raise
            try:
                (self.project.root / rel).unlink()
            except OSError as err:  # the old file stays: the new one must go, or one id has two files
                written.unlink(missing_ok=True)
                self._unfollow(before, planned)
                raise unchanged(err, f"{rel} can't be moved") from None
            _prune_empty(self.project.root / rel, self.project.memory_dir)
            target = self.project.rel(written)
            self._reindex()
            if planned is not None and target != planned.path:  # its name was taken meanwhile
                updated += self._follow(planned, self.record(target), self._links_naming(planned))
        memory = self.load(target)
        notes = [] if written == full else [f"{full.name} was taken; wrote {written.name}"]
        notes += _where_it_lives_now(rel, target)
        return EditResult(
            memory.id, target, memory.title, memory.type, ["move"], notes, rel, updated, dict(redacted)
        )

    def edited_by_hand(self, rel: str, before: MemoryRecord | None) -> EditResult:
        """After an edit in $EDITOR: check the file, make a declared
        ``content_hash`` match the new body (the rest of the file is left as
        written, unless it holds a secret: then it is redacted like any write
        and rewritten in the canonical form), re-index, and follow a changed
        title in other memories' links."""
        from lore.memory.edits import refresh_hash, with_id
        from lore.memory.files import read_memory_file
        from lore.memory.links import relation_typos, typo_advice

        incoming = self.graph.linking_to(before) if before else []
        redacted: Counter[str] = Counter()
        notes: list[str] = []
        with self.writing():
            raw = read_memory_file(self.project.root, rel).decode("utf-8", "replace")
            fixed = refresh_hash(raw)
            if fixed is not None:
                markdown.write_atomic(self.project.root / rel, fixed)
            with contextlib.suppress(ValidationError, UsageError):  # a broken file: check() says why
                typed = self.load(rel)
                # Two files of one id are both unreachable by it: the id Lore manages stays.
                old_id = before.id if before is not None else typed.id
                taken = self._id_elsewhere(typed.id, rel) if typed.id != old_id else None
                kept = with_id(fixed or raw, old_id) if taken else None
                if kept is not None:
                    markdown.write_atomic(self.project.root / rel, kept)
                    notes.append(f"id {typed.id} is {taken}'s; this memory keeps its id {old_id}")
                    typed = self.load(rel)
                redacted = sync.redacted(typed)
                if redacted:
                    markdown.write_atomic(self.project.root / rel, markdown.render_checked(typed))
            self._reindex()
            self.check(rel)
            after = self.record(rel)
            updated = self._follow(before, after, incoming)
        memory = self.load(rel)  # a typo written by hand is the person's to fix: said, not refused
        typos = relation_typos(memory.body, memory.extra.get("relations"), rel)
        notes += [f"relation '{r}' looks like a typo: {typo_advice(r, known)}" for r, known in typos]
        return EditResult(
            memory.id, rel, memory.title, memory.type, ["edit"], notes, None, updated, dict(redacted)
        )

    def _id_elsewhere(self, memory_id: str, rel: str) -> str | None:
        """The path of another memory file that has the id `memory_id`, if one does."""
        flt = MemoryFilter(ids=[memory_id], include_private=True)
        return next((r.path for r in self.store.memories(flt) if r.path != rel), None)

    def _read_checked(self, rel: str, expected_sha256: str | None) -> str:
        import hashlib

        from lore.memory.files import read_memory_file

        if expected_sha256 is not None:
            if not re.fullmatch(r"[0-9a-fA-F]{64}", expected_sha256):
                # ("" from a client meaning none was a 409 "changed on disk": it never matches)
                raise ArgumentError(
                    "{0} must be a file's SHA-256, 64 hex characters (what reading it gave); "
                    "leave it out to write whatever the file holds",
                    "expected_sha256",
                )
            expected_sha256 = expected_sha256.lower()
        raw = read_memory_file(self.project.root, rel)
        if expected_sha256 is not None and hashlib.sha256(raw).hexdigest() != expected_sha256:
            raise Conflict(f"{rel} changed on disk since it was read; reload it and apply your edit again")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError("not valid UTF-8; fix the file first", path=rel) from None

    def _parse(self, text: str, rel: str) -> Memory:
        memory, _ = sync.load_memory(text.encode("utf-8"), rel, location_of(rel))
        memory.path = rel
        return memory

    def _destination(self, rel: str, destination: str) -> str:
        """Where `lore mv` puts the memory at `rel` (checked: a memory folder this agent may write)."""
        import posixpath

        dest = destination.strip()
        _check_destination(destination)
        shown = display_path(destination)
        if dest.startswith(".lore/"):
            target = posixpath.normpath(dest)
        elif "/" not in dest:
            target = posixpath.join(posixpath.dirname(rel), dest)
        else:
            parts = rel.split("/")
            root = "/".join(parts[:3] if parts[1] == "local" else parts[:2])
            target = posixpath.normpath(posixpath.join(root, dest))
        if dest.endswith("/") or (self.project.root / target).is_dir():
            target = posixpath.join(target, posixpath.basename(rel))  # into the folder, as mv does
        if not target.endswith(".md"):
            target += ".md"
        try:
            full = self.project.inside(target, base=self.project.root)
        except UsageError:
            raise UsageError(
                f"'{shown}' leads outside the project; give a file name, a folder under the memory "
                "folder (auth/) or a path under .lore/memory/"
            ) from None
        target = self.project.rel(full)
        parts = target.split("/")
        in_memory = parts[:2] == [".lore", "memory"] and len(parts) > 2
        in_local = parts[:2] == [".lore", "local"] and len(parts) > 3 and parts[2] not in ("trash", "cache")
        if not (in_memory or in_local) or any(p.startswith(".") for p in parts[2:]):
            raise UsageError(
                f"'{shown}' is not a memory location (it would be {target}); "
                "use .lore/memory/... or your private folder"
            )
        if not self.visible(target):
            raise NotFound(f"{posixpath.dirname(target)}/ is not a folder you can write to")
        return target

    def _relinked(self, raw: str, source: str, rename: Rename, *, new_source: str | None = None) -> str:
        """The text of `source` with its links following `rename` (frontmatter
        relations too: those are written back in canonical form)."""
        parts = MemoryText.of(raw)
        body = rewrite_body(parts.body, source, rename, new_source=new_source)
        relations = None
        if "relations" in parts.head:
            memory = self._parse(raw, source)
            relations = memory.extra.get("relations")
            fixed = rewrite_relations(relations, source, rename, new_source=new_source)
            if fixed != relations:
                memory.extra["relations"] = fixed
                memory.body = body
                return markdown.render_checked(memory)
        return raw if body == parts.body else parts.render(body)

    def _unfollow(self, before: MemoryRecord | None, planned: MemoryRecord | None) -> None:
        """Put back the links a move that did not happen had rewritten to `planned`."""
        if before is not None and planned is not None:
            self._follow(planned, before, self._links_naming(planned))

    def _links_naming(self, record: MemoryRecord) -> list[LinkRecord]:
        """The links in any memory file written to name `record` (its path,
        file name, id or title), whether a memory is there now or not."""
        from lore.memory.links import keys_of

        flt = MemoryFilter(include_private=True)
        return [
            link for link in self.store.links(flt, target_keys=keys_of(record)) if link.source_id != record.id
        ]

    def _follow(
        self, before: MemoryRecord | None, after: MemoryRecord | None, incoming: list[LinkRecord]
    ) -> list[str]:
        """Rewrite the links in `incoming` (written before the change) to name
        `after`; returns the paths rewritten that this agent may see."""
        if before is None or after is None or not incoming:
            return []
        names = {}
        if name_key(before.title) != name_key(after.title):
            names[name_key(before.title)] = after.title
        if stem_of(before.path) != stem_of(after.path):
            names[name_key(stem_of(before.path))] = stem_of(after.path)
        rename = Rename(before.path, after.path, names)
        if rename.empty:
            return []
        changed = []
        for source in sorted({link.source_path for link in incoming}):
            if source == before.path:
                continue
            try:
                raw = self._read_checked(source, None)
                text = self._relinked(raw, source, rename)
            except (ValidationError, UsageError):
                continue  # a broken file is reported by doctor, never rewritten
            if text != raw:
                markdown.write_atomic(self.project.root / source, text)
                changed.append(source)
        if changed:
            self._reindex()
        return [path for path in changed if self.visible(path)]

    def remove(self, key: str) -> trash.TrashEntry:
        """Soft delete into `.lore/local/trash/` (see `restore`, `gc`)."""
        rel = self.resolve(key)
        memory_id = self.id_of(rel)
        with self.writing():  # not under a write of the same memory that would bring it back
            if not os.path.lexists(self.project.root / rel):
                # Moved meanwhile (a promotion, `lore mv`): the same memory, where it is now.
                self.sync()
                moved = self.store.memories(self.filter(ids=[memory_id]), limit=1)
                if not moved:
                    raise NotFound(f"{rel}: no such memory file (removed meanwhile); run `lore list`")
                rel = moved[0].path
            entry = trash.trash(self.project, rel, memory_id)
        self.sync()
        return entry

    def restore(self, key: str | trash.TrashEntry) -> str:
        """Put a trashed memory back (by id, id prefix or trash file name, or an
        entry of :meth:`trash_entries`); returns its path."""
        entry = key if isinstance(key, trash.TrashEntry) else self.trashed(key)
        with self.writing():
            self._refuse_twin(entry)
            rel = trash.restore(self.project, entry)
        self.sync()
        parts = rel.split("/")
        if location_of(rel)[1] == "session" and "session" in parts[2:-1]:
            # A session memory comes back to be kept: in the session tier the next
            # session start would digest and clean it again. The daily tier keeps it
            # (beside the digest of it, which often has its name).
            at = parts.index("session", 2)
            folder = "/".join([*parts[:at], "daily", *parts[at + 1 : -1]])
            stem, _, ext = parts[-1].rpartition(".")
            for n in range(1, 10):
                daily = f"{folder}/{stem}{f'-{n}' if n > 1 else ''}.{ext}"
                if not (self.project.root / daily).exists():
                    try:
                        return self.move(rel, daily).path
                    except LoreError:
                        break
        return rel

    def _refuse_twin(self, entry: trash.TrashEntry) -> None:
        """Refuse to restore a memory whose id a live memory has (an older copy
        of one removed, restored, removed again): two files would share one id."""
        self.sync()
        if not entry.id:
            return
        live = self.store.memories(MemoryFilter(ids=[entry.id], include_private=True), limit=1)
        if live:
            where = f" ({live[0].path})" if self.visible(live[0].path) else ""
            raise Conflict(
                f"a memory with id {entry.id} exists already{where}; to restore this copy, "
                f"`lore rm {entry.id[:8]}` that one first, or leave this copy in the trash"
            )

    def trash_entries(self) -> list[trash.TrashEntry]:
        return [e for e in trash.entries(self.project) if self.visible(e.original)]

    def unrestorable(self) -> list[str]:
        """Trashed files whose note is missing or damaged (whose they were is unknown: only counted)."""
        return trash.unrestorable(self.project)

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
        visibility, current, _folder = location_of(rel)
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
        self.project.check_folder(folder)
        with self.writing():
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
        """Purge trash entries past the retention period: those this agent may
        see, or (a person's gc, no agent acting) every agent's too, listed
        without them (an agent that never runs gc kept its trash forever)."""
        days = retention_days
        if days is None:
            days = self.project.setting("memory", "trash_retention_days", 30)
        if (
            isinstance(days, bool)
            or not isinstance(days, (int, float))
            or not 0 <= days <= MAX_RETENTION_DAYS  # also refuses NaN
        ):
            raise UsageError(
                f"trash retention must be a number of days from 0 to {MAX_RETENTION_DAYS} "
                f"(got {str(days)[:40]}); give --days N or fix [memory] trash_retention_days"
            )
        if self.viewer is not None:  # another agent's private trash waits for that agent's gc
            return trash.purge(self.project, float(days), visible=self.visible)
        shown = {entry.file for entry in trash.entries(self.project) if self.visible(entry.original)}
        return [entry for entry in trash.purge(self.project, float(days)) if entry.file in shown]


def _prune_empty(moved: Path, memory_dir: Path) -> None:
    """Remove the folders of `.lore/memory/` a move left empty (`lore mv ID
    a/b/c/` then elsewhere); the memory folder itself stays."""
    folder = moved.parent
    while memory_dir in folder.parents:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        folder = folder.parent


def _where_it_lives_now(old: str, new: str) -> list[str]:
    """What a move changed of who sees a memory and whether git keeps it."""
    (was_seen, was_tier, _), (seen, tier, agent) = location_of(old), location_of(new)
    notes = []
    if seen != was_seen:
        notes.append(f"now private to {agent}" if seen == "private" else "now shared with every agent")
    if sync.is_committed(old) != sync.is_committed(new):
        notes.append(
            "git now tracks it (commit it)" if sync.is_committed(new) else "it leaves git (.lore/local/)"
        )
    elif tier != was_tier:
        notes.append(f"now in the {tier} tier")
    return notes


def _redacted_name(destination: str) -> tuple[str, Counter[str]]:
    """A `lore mv` destination with its secrets redacted (a file name is committed
    and indexed like the text): each becomes ``redacted-<kind>``, as in the names
    Lore gives new memories."""
    import re

    # The whole name (a token holding dots or slashes), then each part without
    # its extension: the scanner takes "password=hunter2.md" for a file name
    # and lets it through, but not "password=hunter2".
    clean, found = secrets.redact(destination)
    parts = []
    for part in clean.split("/"):
        stem, dot, suffix = part.rpartition(".")
        if not stem:
            stem, dot, suffix = part, "", ""
        stem, kinds = secrets.redact(stem)
        found.update(kinds)
        parts.append(stem + dot + suffix)
    clean = "/".join(parts)
    if found:
        clean = re.sub(r"\[REDACTED:([a-z0-9\-]+)\]", r"redacted-\1", clean)
    return clean, found


# Characters no file name may hold on Windows; "/" separates folders.
_NOT_IN_WINDOWS_NAMES = frozenset('\\:*?"<>|')
# Names Windows keeps for devices, with any extension (NUL.md, com1.txt).
_RESERVED_ON_WINDOWS = frozenset(
    ["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))]
)


def _check_destination(destination: str) -> None:
    """Refuse a `lore mv` destination that can't name a memory file: empty, a
    file name of ``.`` or ``..``, control characters (a file so named is
    skipped by every reader: the memory would vanish from list, show and
    search), or characters a Windows checkout of the project can't name."""
    dest = destination.strip()
    if not dest:
        raise UsageError("give the new file name or folder")
    try:
        check_line(destination, "destination")
    except ValidationError as err:
        raise UsageError(f"destination '{display_path(destination)}' {err.reason}") from None
    unportable = sorted(set(dest) & _NOT_IN_WINDOWS_NAMES)
    if unportable:
        raise UsageError(
            f"'{display_path(dest)}' holds {' '.join(unportable)}, which a Windows checkout can't put in a "
            "file name (memory files are shared through git); use letters, digits, '-', '_' or '.'"
        )
    for part in dest.strip("/").split("/"):
        if part not in (".", "..") and (
            part.endswith((".", " ")) or part.split(".", 1)[0].upper() in _RESERVED_ON_WINDOWS
        ):
            raise UsageError(
                f"'{display_path(dest)}': a Windows checkout can't name a file or folder '{part}' "
                "(a reserved device name, or a dot or space at the end; memory files are shared "
                "through git); choose another name"
            )
    name = dest.rsplit("/", 1)[-1]
    if name in (".", "..") or (not name and dest.strip("/") in ("", ".", "..")):
        raise UsageError(
            f"'{dest}' is not a file name; give a new name (utc-everywhere) "
            "or a folder under the memory folder (auth/)"
        )


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


def _key_or_none(name: str) -> str | None:
    try:
        return agent_key(name)
    except ValidationError:
        return name


def _whole(value: object) -> bool:
    """A whole number (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)
