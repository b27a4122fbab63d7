"""The Lore service: every capability, once, for all interfaces.

The CLI, MCP server, HTTP API and web UI are thin layers over :class:`Lore`;
so is the Python API (``lore.open(path)``). Each method is a few lines over
the module that owns the concern:

==========================  ===============================================
memories (read, write)      :class:`lore.memory.repository.Memories`
capture, task completion    :mod:`lore.memory.capture`, :mod:`lore.memory.complete`
tiers, consolidation        :class:`lore.memory.lifecycle.Lifecycle`
import                      :mod:`lore.memory.importer`
search, code, history       :class:`lore.search.engine.Searcher`
recall, session start       :func:`lore.search.recall.recall`, :func:`lore.search.start.start_pack`
links between memories      :class:`lore.memory.graph.LinkGraph`
code and history index      :class:`lore.index.freshness.CodeIndex`
embeddings                  :class:`lore.embed.runtime.EmbeddingRuntime`
stats, status, doctor       :mod:`lore.health`
the index database          :mod:`lore.storage` (SQLite or PostgreSQL)
==========================  ===============================================

Methods keep the index fresh before they read, so a hand-edited or deleted
file is never served stale. The acting agent is fixed for the object's life.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lore.errors import (
    ArgumentError,
    LoreError,
    NotFound,
    UsageError,
    ValidationError,
    as_lore_error,
    literal,
)
from lore.filenames import MAX_PATH
from lore.health import Problem
from lore.memory.edits import Edit
from lore.memory.model import Memory, parse_given_time
from lore.memory.repository import AddResult, EditResult, Memories, Page
from lore.memory.sync import SyncReport
from lore.memory.trash import TrashEntry
from lore.project import Project
from lore.search.filters import (
    MAX_FILTER_VALUES,
    MAX_TASK_FILES,
    When,
    changed_within,
    clamp_limit,
    code_filter,
    count_limit,
    memory_filter,
    strings,
    token_budget,
)
from lore.storage import Store

if TYPE_CHECKING:
    from lore.embed.runtime import EmbeddingRuntime
    from lore.index.code_sync import IndexResult
    from lore.index.freshness import CodeIndex
    from lore.index.overview import IndexOverview
    from lore.index.watch import Watcher
    from lore.jobs import IndexJob, JobRunner
    from lore.memory.capture import CaptureResult
    from lore.memory.complete.bundle import CompletionBundle
    from lore.memory.curation import BulkResult, FileCommit
    from lore.memory.graph import Graph
    from lore.memory.importer import ImportReport
    from lore.memory.lifecycle import Lifecycle
    from lore.memory.lifecycle.consolidate import ConsolidationReport
    from lore.memory.lifecycle.daily import SessionStartReport
    from lore.memory.lifecycle.proposals import Proposal
    from lore.search.browse import BrowsePage, Browser, MemoryDetail
    from lore.search.code import CodeHit, CommitHit
    from lore.search.engine import Searcher
    from lore.search.memories import MemoryHit
    from lore.search.recall import RecallPack
    from lore.search.start import StartPack
    from lore.sessions.events import RawEvent
    from lore.sessions.records import (
        AppendResult,
        CompactionResult,
        ImportResult,
        SessionContext,
        SessionEvent,
        SessionInfo,
    )
    from lore.sessions.store import SessionStore
    from lore.storage.transfer import TransferReport

Progress = Callable[[int, int], None] | None
_Part = TypeVar("_Part")
_Class = TypeVar("_Class", bound=type)


# Python's errors of an argument of the wrong type or value, as a library caller
# makes them (`graph(key, depth="two")`, `move(key, None)`): a UsageError naming the call.
_MISUSE = (TypeError, ValueError, OverflowError, AttributeError)
MAX_UPDATE_PATHS = 20_000  # paths one update_index call re-checks; more: a full scan (`lore index`)
# The most recently updated sessions a session start looks at for what they said uncaptured.
QUIET_SESSIONS = 50
# How many more memories a search ranks than it returns, so that one halved as
# stale or superseded gives its place to the next (see `search`).
DOWN_RANKED_POOL = 20
MESSAGE_CHARS = 1000  # an error's message is cut here (a 2 MB value echoed back is no message)
# How long a read's bookkeeping (access counts, the hourly tier pass) waits for
# another process's write lock before leaving it for a later read: not the 30 s
# a write waits, which a recall behind a long `lore index` spent idle.
BOOKKEEPING_WAIT = 0.25


def _raising_lore_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, raising LoreErrors only, each with a one-line message.

    A library error that means a known failure (a busy or damaged index, a
    read-only folder, a full disk, a lost database connection:
    :func:`~lore.errors.as_lore_error`) is raised as that LoreError; an
    argument of the wrong type or value, as a UsageError naming the call; the
    library's error is kept as ``__cause__``. Messages are made one line,
    redacted and cut (:func:`_one_line`). Other errors pass unchanged.
    A switch (a parameter annotated ``bool``) given by keyword must be True or
    False: ``include_code="no"`` was taken as yes."""
    name = fn.__name__
    switches = {
        param: kind == "bool | None"
        for param, kind in getattr(fn, "__annotations__", {}).items()
        if kind in ("bool", "bool | None")
    }

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        for param in switches.keys() & kwargs.keys() if switches and kwargs else ():
            value = kwargs[param]
            if not isinstance(value, bool) and not (value is None and switches[param]):
                raise _one_line(UsageError(f"{name}(): {param} must be True or False, not {value!r}"))
        # One call at a time per Lore: threads sharing one take turns (its one
        # connection and its caches are not for two callers at once).
        serial = getattr(args[0], "_serial", None) if args else None
        try:
            if serial is None:
                return fn(*args, **kwargs)
            with serial:
                return fn(*args, **kwargs)
        except LoreError as err:
            _one_line(err)
            raise
        except Exception as err:
            known = as_lore_error(err)
            if known is None and isinstance(err, _MISUSE):
                known = UsageError(f"{name}(): {err}; check its arguments (help(lore.Lore.{name}))")
            if known is None:
                raise
            raise _one_line(known) from err

    return call


def _one_line(err: LoreError) -> LoreError:
    """`err` with its message on one line, secrets redacted and at most
    :data:`MESSAGE_CHARS` long: a user's value echoed back (a key with a line
    break, a token given as an id, a 2 MB limit) makes it none of these."""
    from lore.memory.values import clip, fold_line
    from lore.secrets import redact

    message = str(err)
    clean = clip(redact(fold_line(message[: 4 * MESSAGE_CHARS]))[0], MESSAGE_CHARS)
    if clean != message:
        err.args = (clean,)
        if isinstance(err, ArgumentError):  # its names as each interface calls them are lost
            err.template, err.names = literal(clean), ()
    return err


def _lore_errors(cls: _Class) -> _Class:
    """Every public method and property of `cls` raises LoreError subclasses
    for known failures, as the README promises the Python API does (the
    interfaces map errors themselves; a library caller had ``sqlite3.OperationalError``)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property) and member.fget is not None:
            wrapped = property(_raising_lore_errors(member.fget), member.fset, member.fdel, member.__doc__)
            setattr(cls, name, wrapped)
        elif isinstance(member, classmethod):
            setattr(cls, name, classmethod(_raising_lore_errors(member.__func__)))
        elif inspect.isfunction(member):
            setattr(cls, name, _raising_lore_errors(member))
    return cls


@_lore_errors
class Lore:
    """A project's memories and index, as one agent (or none) sees them.

    Close it when done (``close()``, or ``with lore.open(path) as project:``).
    One call at a time: a Lore holds one database connection and its caches,
    so threads sharing one take turns (each public call holds the Lore's own
    lock); threads that should search side by side each open their own. Errors are :class:`~lore.errors.LoreError`
    subclasses with one-line messages; nothing is printed to stdout (one-line
    notices for the user are in :attr:`notices`).
    """

    def __init__(
        self,
        project: Project,
        *,
        agent: str | None = None,
        watch: bool = False,
        database_url: str | None = None,
        database_role: str | None = None,
    ) -> None:
        """Args:
        agent: the acting agent's identity (sees its private memories).
        watch: for long-running processes (the MCP server, the web server):
            use inotify so the freshness check before each read costs nothing
            unless a memory file changed, and re-check code at most every 2 s.
        database_url: a PostgreSQL URL that wins over the environment and configuration.
        database_role: on PostgreSQL, act as this database role (``SET ROLE``), so
            row-level security applies to it; then only `agent`'s private memories
            are indexed (a team server's Lore for one of its users, `lore serve --users`).
        """
        self._serial = threading.RLock()  # see _raising_lore_errors: one call at a time
        if os.environ.get("LORE_NOW"):  # refused by every command, not only those that read the clock
            from lore.memory.lifecycle.clock import system_now

            system_now()
        self.project = project
        self.database_url = database_url
        self.database_role = database_role
        # Index only the acting agent's private memories (see keep_to_own_private).
        self._own_private_only = database_role is not None
        self.agent = agent or os.environ.get("LORE_AGENT") or None
        self._watcher: Watcher | None = None
        if watch:
            from lore.index.watch import Watcher

            roots = [project.memory_dir, project.local_dir]
            if project.sessions_dir.is_dir():  # session summaries are memories too
                roots.append(project.sessions_dir)
            self._watcher = Watcher(roots)
        self._watching = watch
        self._store: Store | None = None
        self._parts: dict[str, Any] = {}
        self._messages: list[str] = []
        self._seen_sync: SyncReport | None = None
        self._warmed = False  # warm_up loaded the model and vectors
        self._closed = False  # close() was called
        self.created: list[str] = []

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] = ".", *, agent: str | None = None, watch: bool = False
    ) -> Lore:
        """The project containing `path` (searching parents like git); :class:`~lore.errors.ProjectNotFound`
        when there is none. `agent`, `watch`: see :meth:`__init__`."""
        return cls(Project.find(_folder(path)), agent=agent, watch=watch)

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".", *, agent: str | None = None) -> Lore:
        """Create (idempotently) the `.lore/` layout in `path` and open it; :attr:`created`
        lists what was made. A bare repository or a `.git/` folder is a :class:`UsageError`."""
        _refuse_git_folder(Path(_folder(path)).resolve())
        project, created = Project.init(path)
        _keep_out_of_git(project)
        lore = cls(project, agent=agent)
        lore.created = created
        return lore

    # -- the parts ------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The index database (SQLite or PostgreSQL), opened on first use."""
        if self._store is None:
            if self._closed:  # (a connection opened again here would stay open)
                raise UsageError(
                    f"this Lore of {self.project.root} is closed; open the project again (lore.open)"
                )
            from lore.storage import open_store

            self._store = open_store(self.project, database_url=self.database_url, role=self.database_role)
            self._store.on_rebuild = self._refill
        return self._store

    def _refill(self) -> None:
        """The store rebuilt a damaged index: forget what was cached about it, re-read the files."""
        self._parts.clear()
        self.memories.sync(force=True)

    def _part(self, name: str, make: Callable[[], _Part]) -> _Part:
        """The part cached under `name`, made by `make` on first use."""
        if name not in self._parts:
            self._parts[name] = make()
        part: _Part = self._parts[name]
        return part

    @property
    def memories(self) -> Memories:
        """Memory files and their index, as the acting agent may see them (:mod:`lore.memory.repository`)."""
        return self._part(
            "memories",
            lambda: Memories(
                self.project,
                self.store,
                agent=self.agent,
                watcher=self._watcher,
                own_private_only=self._own_private_only,
            ),
        )

    @property
    def lifecycle(self) -> Lifecycle:
        """Tiers, evidence, consolidation and review (:mod:`lore.memory.lifecycle`)."""
        from lore.memory.lifecycle import Lifecycle

        return self._part("lifecycle", lambda: Lifecycle(self.memories, embedding=self.embedding))

    @property
    def embedding(self) -> EmbeddingRuntime:
        """The configured embedding model, loaded on first use (:mod:`lore.embed.runtime`)."""
        from lore.embed.runtime import EmbeddingRuntime

        return self._part(
            "embedding",
            lambda: EmbeddingRuntime(
                self.project.settings.get("embedding", {}), self.project.root, self._notice
            ),
        )

    @property
    def searcher(self) -> Searcher:
        """Hybrid search over memories, code and history (:mod:`lore.search.engine`)."""
        from lore.search.engine import Searcher

        return self._part("searcher", lambda: Searcher(self.store, self.embedding, self.project.settings))

    @property
    def code_index(self) -> CodeIndex:
        """The repository's files and git history in the index (:mod:`lore.index.freshness`)."""
        from lore.index.freshness import CodeIndex

        return self._part("code", lambda: CodeIndex(self.project, self.store, watching=self._watching))

    @property
    def sessions(self) -> SessionStore:
        """Recorded agent sessions: start, append, context, compact, import (:mod:`lore.sessions`)."""
        from lore.sessions import SessionStore

        return self._part("sessions", lambda: SessionStore(self.project, agent=self.agent, own_only=True))

    @property
    def notices(self) -> list[str]:
        """One-line messages for the user (index rebuilt, BM25-only fallback, ...)."""
        sessions = self._parts["sessions"].notices if "sessions" in self._parts else []
        return (self._store.notices if self._store else []) + sessions + self._messages

    def _notice(self, message: str) -> None:
        if message not in self._messages:
            self._messages.append(message)

    def _limit(self, limit: int | None, default: int = 10) -> int:
        """A result limit (`default` when none is given); one above
        :data:`~lore.search.filters.MAX_LIMIT` is lowered to it, with a notice."""
        clamped = clamp_limit(limit, default)
        if limit is not None and clamped < limit:
            self._notice(f"a limit is at most {clamped}; {limit} was lowered to {clamped}")
        return clamped

    @property
    def last_sync(self) -> SyncReport | None:
        """What the last sync of memory files found (added, updated, removed, errors), if any ran."""
        last = self.memories.last_sync if "memories" in self._parts else None
        return self.memories.seen(last) if last is not None else None

    def keep_to_own_private(self) -> None:
        """Index only the acting agent's private memories, not every agent's: a
        team server's own Lore on PostgreSQL, whose users' Lores index theirs
        under their own database roles. (Indexed under the server's login role,
        a user's private memory was a row that user's role could neither see
        nor replace: every request of theirs was refused.) Rows it indexed
        before for other agents leave the index at its next read."""
        self._own_private_only = True
        self._parts.clear()  # made again, knowing it

    def close(self) -> None:
        """Close the index connection and the file watcher (also at the end of a ``with`` block)."""
        self._closed = True
        if self._store is not None:
            if "code" in self._parts:
                self._parts["code"].close()
            self._store.close()
            self._store = None
            self._parts.clear()
        if self._watcher is not None:
            self._watcher.close()

    def __enter__(self) -> Lore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing ----------------------------------------------------------------------------

    def sync(self, *, force: bool = False) -> SyncReport:
        """Bring the index up to date with the memory files (cheap when nothing changed)."""
        return self.memories.sync(force=force)

    def warm_up(self, *, lists: int | None = None) -> int:
        """Ready a long-running process (an MCP server, the web UI) for its
        first queries: memories synced, the embedding model and memory vectors
        loaded, then at most `lists` of the keyword lists of frequent terms
        read (:meth:`Store.warm_search`; None: as many as their budget holds).
        Answers are the same without it; the first queries are slower.
        Returns the lists read (0: none left to read)."""
        if self._closed:  # (a server's reading ahead outlived it)
            return 0
        if lists is None or not self._warmed:
            self.sync()
            try:
                self.search("warm up", limit=1)
            except LoreError:  # no model, nothing indexed: nothing to load
                pass
            self._warmed = True
        return self.store.warm_search(lists) if lists != 0 else 0

    def export_index(self, target: str | os.PathLike[str], *, force: bool = False) -> TransferReport:
        """Write this project's index (memories, code, history, vectors, anchors,
        access) to the file `target`, after bringing it up to date.

        Never into the committed part of ``.lore/`` (a dump holds every agent's
        private memories), and never over an existing file unless `force`.
        """
        from lore.storage.transfer import export_index

        path = Path(target)
        if self.project.is_shared_place(path):
            raise UsageError(
                f"{target} is in .lore/, which is committed, and a dump holds private memories too; "
                "write it outside .lore/ (or under .lore/local/)"
            )
        if os.path.lexists(path) and not force:  # an earlier dump, or any file: never replaced unasked
            raise UsageError(f"{target} exists; give another file, or --force to replace it")
        self.sync()
        return export_index(self.store, path)

    def import_index(self, source: str | os.PathLike[str]) -> TransferReport:
        """Replace this project's index in the current backend with the dump in `source`."""
        from lore.storage.transfer import import_index

        report = import_index(self.store, Path(source))
        root = self.project.root
        broken = {path for path, _ in self.store.file_errors("memory")}  # files, not memories
        from lore.memory.sync import is_committed

        missing = [p for p in self.store.paths("memory") if p not in broken and not (root / p).is_file()]
        # Committed ones another clone of a shared database has (not pulled here yet):
        # this clone must not take them for files it deleted. The rest (local ones,
        # ones no clone has, every one in a clone's own index) go at the next command:
        # the index follows the files.
        kept = self.store.forget_synced([p for p in missing if is_committed(p)])
        report.memories_without_file = len(missing) - len(kept)
        return report

    def reindex(self, *, force: bool = False) -> SyncReport:
        """`lore index` for memories (``force``: check the index file whole, rebuild
        it if damaged, and re-read every file); embedding follows."""
        if force and self.store.repair():
            self._parts.clear()
        report = self.memories.seen(self.memories.sync(force=force, recheck_broken=True))
        # Two files holding one memory's id: an error, as doctor says (every interface indexing reports it).
        duplicates = [(p.where, f"{p.where}: {p.message}") for p in self._duplicate_ids()]
        return SyncReport(report.added, report.updated, report.removed, report.errors + duplicates)

    def index_code(
        self,
        *,
        force: bool = False,
        progress: Progress = None,
        only: list[str] | None = None,
        deleted: list[str] | None = None,
    ) -> IndexResult:
        """Index the repository's files (incremental) and its git history (003's IndexResult)."""
        if only is None:
            _keep_out_of_git(self.project)  # a project made by an older Lore gets the same protection
        return self.code_index.run(force=force, progress=progress, only=only, deleted=deleted)

    def update_index(self, files: list[str], deleted: list[str] | None = None) -> dict[str, int]:
        """003's update_index: re-check these paths (for hooks and tools); past
        :data:`MAX_UPDATE_PATHS` of them, `index_code` (a full scan) is the faster way."""
        return self.code_index.update(
            strings(files, "files", most=MAX_UPDATE_PATHS, longest=MAX_PATH),
            strings(deleted, "deleted", most=MAX_UPDATE_PATHS, longest=MAX_PATH),
        )

    def embed(self, *, progress: Progress = None, limit: int | None = None, kind: str | None = None) -> int:
        """Embed chunks that have no vector yet; returns how many. One process at a
        time per project: `lore index` beside a git hook's update embedded the same
        texts twice (68 texts/s together fell to 49); the second waits, then embeds
        what is left."""
        from lore.atomic import contained
        from lore.locking import file_lock

        def run() -> int:
            return int(self.embedding.embed_pending(self.store, progress=progress, limit=limit, kind=kind))

        lock = self.project.local_dir / "embedding.lock"
        try:
            if not contained(self.project.root, lock.parent):
                return run()
            with file_lock(lock, blocking=False) as held:
                if held:
                    return run()
            self._notice(
                "another process is embedding this project's texts; waiting for it, then embedding what is left"
            )
            with file_lock(lock):
                return run()
        except OSError as err:  # no lock to take here (a read-only folder): embedding needs none
            if getattr(err, "filename", None) != str(lock):
                raise
            return run()

    def reembed(self, *, progress: Progress = None) -> int:
        """Switch the index to the configured model: drop other vectors, embed everything."""
        return int(self.embedding.reembed(self.store, progress=progress))

    def refresh(self, *, embed: bool = True) -> dict[str, Any]:
        """Everything a git hook does: memories, code, history, then vectors."""
        report = self.sync()
        code = self.index_code()
        return {
            "memories": len(report.added) + len(report.updated) + len(report.removed),
            "code": code.to_dict(),
            "embedded": self.embed() if embed else 0,
        }

    # -- writing ------------------------------------------------------------------------------

    def add(self, *, body: str, **fields: Any) -> AddResult:
        """Write a new memory (see :meth:`Memories.add`)."""
        unknown = set(fields) - _ADD_FIELDS
        if unknown:
            raise UsageError(
                f"unknown field {', '.join(sorted(unknown))}; use {', '.join(sorted(_ADD_FIELDS))}"
            )
        _check_text_fields({"body": body})
        _check_text_fields(fields)  # (tags given as one name become a list of it)
        if fields.get("occurred_at") is not None:  # "" too: an error, not "now"
            try:
                fields["occurred_at"] = parse_given_time(fields["occurred_at"])
            except ValidationError as err:  # a bad argument (--occurred-at on the CLI), not a bad file
                raise ArgumentError("{0}: " + literal(err.reason), "occurred_at") from None
        return self.memories.add(body=body, **fields)

    def update(self, key: str, **fields: Any) -> AddResult:
        """Rewrite an existing memory (see :meth:`Memories.update`)."""
        _check_text_fields(fields)
        return self.memories.update(key, **fields)

    def tag(self, key: str, *, add: Sequence[str] = (), remove: Sequence[str] = ()) -> AddResult | None:
        """Add and remove a memory's tags, compared without case (see
        :meth:`Memories.retag`: another process's change meanwhile is kept).
        None when the tags already are so."""
        return self.memories.retag(key, strings(add, "add"), strings(remove, "remove"))

    def edit(self, key: str, edits: Sequence[Edit], *, expected_sha256: str | None = None) -> EditResult:
        """Precise edits (append, prepend, replace_section, find_replace, set,
        relate), atomic and re-indexed at once (see :meth:`Memories.edit`)."""
        if isinstance(edits, Edit) or not all(isinstance(e, Edit) for e in edits):
            raise UsageError("edits must be a list of lore.Edit, e.g. [lore.Edit('append', text='...')]")
        return self.memories.edit(key, edits, expected_sha256=expected_sha256)

    def move(self, key: str, destination: str) -> EditResult:
        """Rename or move a memory; links to it follow (see :meth:`Memories.move`)."""
        return self.memories.move(key, destination)

    def edit_by_hand(self, key: str, open_editor: Callable[[Path], None]) -> EditResult:
        """Let a person edit the file (`open_editor(path)`), then check it, fix its
        content hash, re-index it and follow a changed title in other memories' links."""
        rel = self.resolve(key)
        before = self.memories.record(rel)
        open_editor(self.project.root / rel)
        return self.memories.edited_by_hand(rel, before)

    def remove(self, key: str) -> TrashEntry:
        """Soft delete into `.lore/local/trash/` (see `restore`, `gc`)."""
        return self.memories.remove(key)

    def restore(self, key: str) -> str:
        """Bring a memory back from the trash (by id or trash file name); returns its path."""
        return self.memories.restore(key)

    def trash_entries(self) -> list[TrashEntry]:
        """What is in the trash (this agent may see), oldest first."""
        return self.memories.trash_entries()

    def unrestorable_trash(self) -> builtins.list[str]:
        """Trashed files whose note is missing or damaged: `restore` can't put them back."""
        return self.memories.unrestorable()

    def gc(self, *, retention_days: float | None = None) -> list[TrashEntry]:
        """Purge trash entries older than `retention_days` (default ``[memory] trash_retention_days``)."""
        return self.memories.gc(retention_days=retention_days)

    def prune_vectors(self) -> int:
        """Delete the vectors no chunk uses any more (code of branches left, old
        versions of files), giving the space back; how many."""
        return self.store.prune_vectors()

    def collect_garbage(self, *, retention_days: float | None = None) -> dict[str, Any]:
        """`lore gc` (and the web's purge): the trash past its retention period,
        then the vectors no chunk uses; ``{"purged": [TrashEntry], "vectors_removed": n}``."""
        purged = self.gc(retention_days=retention_days)
        return {"purged": purged, "vectors_removed": self.prune_vectors()}

    # -- reading ---------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        **filters: Any,
    ) -> list[MemoryHit]:
        """Memories matching `query`, best first (filters: see :func:`lore.search.filters.memory_filter`;
        archived memories only with ``include_archived``)."""
        flt = memory_filter(filters, viewer=self.memories.viewer)
        self._fresh()
        wanted = self._limit(limit)
        # Stale and superseded memories fall to half their score: ranked among a
        # wider pool, then cut, or `--limit 1` gave the halved one and not the best.
        hits = self.searcher.memories(query, flt, wanted + DOWN_RANKED_POOL, mode=mode, fusion=fusion)
        return self._flag_superseded(hits)[:wanted]

    def _flag_superseded(self, hits: builtins.list[MemoryHit]) -> builtins.list[MemoryHit]:
        """Superseded memories stay findable (an agent may ask what was decided
        before), flagged with what replaced them, at half their score: first at
        96% beside the memory that replaced it, nothing said the old one was."""
        from lore.search.attention import STALE_FACTOR

        if not hits:
            return hits
        newer = self.memories.graph.superseded_by([h.id for h in hits])  # (its own superseded_by: on the hit)
        flagged = False
        for hit in hits:
            if hit.id in newer:
                hit.superseded_by = newer[hit.id].id
            if hit.superseded_by:
                hit.score, flagged = round(hit.score * STALE_FACTOR, 4), True
        return sorted(hits, key=lambda h: -h.score) if flagged else hits

    def list(self, *, limit: int | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Memories newest first, as dicts (id, path, title, type, tags, tier, evidence_count, ...)."""
        flt = memory_filter(filters, viewer=self.memories.viewer)
        limit = count_limit(limit)
        self._fresh()
        return self.browser.rows(self.store.memories(flt, limit=limit))

    def show(self, key: str, *, offset: int = 0, limit: int | None = None) -> Page:
        """A memory's whole file, or a character slice of it (004's memory_read)."""
        page = self.memories.show(key, offset=offset, limit=limit)
        self._record_access([page.id])
        return page

    def load(self, rel: str) -> Memory:
        """The memory file at project path `rel`, parsed (:class:`~lore.memory.model.Memory`):
        what the file holds, to edit. To show it, :meth:`view`."""
        return self.memories.load(rel)

    def view(self, rel: str) -> Memory:
        """The memory at `rel` as it may be shown: a secret written into the file by hand is redacted."""
        return self.memories.view(rel)

    def resolve(self, key: str) -> str:
        """A visible memory's path from its id, id prefix, file name or path."""
        return self.memories.resolve(key)

    def path_of(self, key: str) -> Path:
        """The absolute path of a visible memory's file (see :meth:`resolve`)."""
        return self.project.root / self.resolve(key)

    def check(self, rel: str) -> None:
        """Re-read one file after a hand edit; raises ValidationError if it is broken."""
        self.memories.check(rel)

    def code_search(
        self,
        query: str,
        *,
        limit: int | None = None,
        languages: Sequence[str] = (),
        extensions: Sequence[str] = (),
        directories: Sequence[str] = (),
        roles: Sequence[str] = (),
        changed_within_days: float | None = None,
        since: When = None,
        until: When = None,
        files_only: bool = False,
        mode: str | None = None,
        fusion: str | None = None,
        fresh: bool = True,
    ) -> builtins.list[CodeHit]:
        """003's search_codebase: code chunks (or files) by hybrid search.

        Args:
            roles: only files of these roles (source, test, docs, changelog, config...).
            changed_within_days: only files changed by commits this recent (git).
            since, until: only files changed by commits in that period (dates
                or phrases: "last week", "2 months ago", "since March").
            fresh: first pick up files changed on disk (cheap stat check).
        """
        days = changed_within(changed_within_days)
        period = code_filter(since=since, until=until)
        folders = [  # an absolute path inside the project is that folder (one outside fails)
            self.project.rel(self.project.inside(d)) if os.path.isabs(d) else d
            for d in strings(directories, "directories", most=MAX_FILTER_VALUES, longest=MAX_PATH)
        ]
        flt = code_filter(languages, extensions, folders, None, roles)  # bad input fails here, first
        for folder in flt.directories:  # a typo would read as "no matches"
            if not any(ch in folder for ch in "*?[") and not (self.project.root / folder).exists():
                self._notice(f"no folder {folder}/ in the project: that folder filter matches nothing")
        if fresh:
            self._refresh_code()
        paths = self.code_index.recent_paths(days) if days is not None else None
        if period.since or period.until:
            if not self.code_index.is_git():  # no commits to date the files by: nothing would match
                raise ArgumentError(
                    "{0} needs a git repository (code is kept by the commits that changed it then)",
                    "since" if period.since else "until",
                )
            changed = self.store.paths_changed(period.since, period.until)
            paths = changed if paths is None else paths & changed
        flt.paths = paths
        return self.searcher.code(
            query, flt, self._limit(limit), files_only=files_only, mode=mode, fusion=fusion
        )

    def history(
        self,
        query: str,
        *,
        limit: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        since: When = None,
        until: When = None,
        fresh: bool = True,
    ) -> builtins.list[CommitHit]:
        """Past commits (work items) matching `query`, with their files."""
        flt = code_filter(since=since, until=until)
        if fresh:
            self.code_index.sync_history()
        hits = self.searcher.history(query, self._limit(limit), flt=flt, mode=mode, fusion=fusion)
        if not hits:
            from lore.index import gitrepo

            if gitrepo.repo_root(self.project.root) is None:
                self._notice(
                    f"{self.project.root} is not in a git repository: there is no past work to search"
                )
        return hits

    def recall(
        self,
        title: str,
        *,
        description: str = "",
        task: str | None = None,
        files: Sequence[str] = (),
        budget: int | None = None,
        level: str | None = "auto",
        bracket: str | None = None,
        limit_per_type: int = 5,
        include_memories: bool = True,
        include_code: bool = True,
        include_related_work: bool = True,
        since: When = None,
        until: When = None,
        include_sessions: bool = False,
        fresh: bool = True,
    ) -> RecallPack:
        """What an agent picking up a task should know, packed into `budget` tokens.

        `since`/`until` (dates or phrases) limit memories and past work to that period;
        `include_sessions` adds the summaries of recorded sessions (off by default).
        Archived memories are never recalled.
        Returns a :class:`~lore.search.recall.RecallPack` (Markdown + 003's ContextResult).
        """
        from lore.search import recall as rc
        from lore.search.pack import resolve_level
        from lore.search.text import says_nothing

        if not isinstance(title, str) or not isinstance(description or "", str):
            raise UsageError("the task's title and description must be text; give the task in words")
        request = rc.RecallRequest(
            title=title,
            description=description or "",
            task=task,
            files=[
                self.project.rel(self.project.inside(f, base=self.project.root))
                for f in strings(files, "files", most=MAX_TASK_FILES, longest=MAX_PATH)
            ],
            budget=token_budget(budget, self.project.setting("recall", "budget", 2000)),
            level=resolve_level(level, bracket),
            period=code_filter(since=since, until=until),
            limit_per_type=self._limit(limit_per_type, 5),
            agent=self.agent,
            include_sessions=include_sessions,
        )
        said = f"{title} {description or ''}"
        if not request.files and not task and says_nothing(said):
            from lore.memory.values import clip

            # "the a of", "x": every memory matches it as well as any other, and a full
            # pack of them at high scores would read as an answer.
            raise UsageError(
                f"the task '{clip(' '.join(title.split()), 60)}' has nothing to recall by (only stop words "
                "or single letters); describe the task in a few words"
            )
        for path in request.files:  # a typo would only leave the task without its files
            if not (self.project.root / path).exists():
                self._notice(f"no file {path} in the project: the task's files name nothing there")
        if fresh and (include_code or include_related_work):
            self._refresh_code()
        if include_memories:
            self._fresh()
        pack = rc.recall(
            self.searcher,
            self.memories,
            request,
            include_memories=include_memories,
            include_code=include_code,
            include_related_work=include_related_work,
        )
        self._record_access(_read_in(pack))
        return pack

    def start(
        self,
        task: str | None = None,
        *,
        title: str | None = None,
        budget: int | None = None,
        fresh: bool = True,
    ) -> StartPack:
        """The session-start pack (hooks' SessionStart, `lore start`): this
        project's memories worth reading now, the branch's task, the areas
        being changed; empty when nothing is relevant (see :mod:`lore.search.start`).

        Args:
            task: a task id; with the branch name it makes the task's title.
            title: the task's title instead.
            budget: tokens (default ``[recall] start_budget``).
            fresh: first pick up code changed on disk (hooks pass False: be quick).
        """
        from lore.search import start as sp

        request = sp.StartRequest(
            budget=token_budget(budget, self.project.setting("recall", "start_budget", sp.DEFAULT_BUDGET)),
            task=task,
            title=title or self.branch_title(task),
            named=bool(title),
        )
        if self.code_index.is_git():
            from lore.index import gitrepo

            work = gitrepo.branch_work(self.project.root)
            # A branch name is text like any other: a token pasted into it is not shown.
            request.branch, request.base, request.ahead = _redacted(work.branch), work.base, work.ahead
            request.changed = work.files
            if work.base is None:  # the default branch: what changed lately
                from lore.search.filters import code_filter

                week = code_filter(since="7 days ago")
                recent = sorted(self.store.paths_changed(week.since, None))
                request.changed = list(dict.fromkeys([*work.files, *recent]))
                request.recent = True
        if fresh and request.title:
            self._refresh_code()
        self._fresh()
        # Shown unasked, not read: counting its own picks as reads kept what the
        # start pack showed warm for ever (001: decay when not accessed).
        return sp.start_pack(self.searcher, self.memories, request)

    def branch_title(self, task: str | None = None) -> str:
        """A task title from the task id and the current git branch
        (`fix-oauth-timeout` → "fix oauth timeout"); "" if there is neither."""
        from lore.index import gitrepo

        root = self.project.root
        branch = _redacted(gitrepo.current_branch(root) if gitrepo.repo_root(root) else None)
        if branch in ("main", "master", "trunk", "develop"):
            branch = None
        words = " ".join((branch or "").replace("/", " ").replace("-", " ").replace("_", " ").split())
        return " ".join(filter(None, [task, words]))

    # -- links ---------------------------------------------------------------------------------

    def graph(self, key: str, *, depth: int = 1) -> Graph:
        """The memories within `depth` links of `key`, both directions (:mod:`lore.memory.graph`)."""
        self.sync()
        return self.memories.graph.walk(key, depth)

    def context(self, key: str, *, depth: int = 1, budget: int | None = None) -> RecallPack:
        """A memory and its neighbourhood (linked both ways, `depth` hops) packed
        into `budget` tokens: the memory whole, its neighbours as summaries."""
        from lore.search.neighbourhood import neighbourhood

        self.sync()
        pack = neighbourhood(
            self.searcher,
            self.memories,
            key,
            depth=depth,
            budget=token_budget(budget, self.project.setting("recall", "budget", 2000)),
        )
        self._record_access(_read_in(pack))
        return pack

    # -- staleness ------------------------------------------------------------------------------

    def stale(self, *, fresh: bool = True) -> builtins.list[dict[str, Any]]:
        """Memories whose anchored code changed, with the reasons (`fresh`: re-check
        the code first, so an edit made since the last index counts)."""
        if fresh:
            self._refresh_code()
        self.sync()
        reasons = self.store.stale_reasons()
        records = self.store.memories(self.memories.filter(), order="path") if reasons else []
        return [
            {"id": r.id, "path": r.path, "title": r.title, "reasons": reasons[r.id]}
            for r in records
            if r.id in reasons
        ]

    def verify(self, key: str) -> dict[str, Any]:
        """A human or agent checked the memory: re-anchor it to the current code."""
        return self.memories.verify(key)

    # -- task lifecycle and capture ----------------------------------------------------------------

    def complete(self, task: str, *, title: str, bundle: CompletionBundle | None = None) -> AddResult:
        """000's write-on-complete: the task's memory with Summary, Approach,
        Decisions, Key Files, Lessons and Cross-Agent Intel, its files taken
        from the task's commits (or the work tree). Idempotent per task."""
        from lore.memory.complete import complete_task

        return complete_task(self.memories, task, title=title, bundle=bundle)

    def capture_transcript(self, path: str | os.PathLike[str]) -> CaptureResult:
        """001's PreCompact capture of a transcript (Claude Code, Codex, 004): its
        multi-line assistant messages as session memories, its digest (decisions,
        resolutions, corrections, validated patterns) in the daily tier, its
        errors counted (a gotcha at the third occurrence). Idempotent."""
        from lore.memory.capture import capture_transcript
        from lore.sessions.importers import read_transcript

        source = Path(path)
        if not source.is_file():
            raise NotFound(f"no transcript at {source}; give the path of a .jsonl transcript")
        transcript = read_transcript(source, whole=True)
        if transcript.format is None and transcript.lines > 0:  # as `lore session import` says
            raise UsageError(
                f"{source} is not a transcript: no Claude Code, Codex or Lore session line in it"
            )
        session_id = transcript.session_id or source.stem
        return capture_transcript(self.lifecycle, source, transcript.events, session_id=session_id)

    def capture_stdout(
        self, text: str, *, source: str = "stdout", tier: str = "durable", private: bool = False
    ) -> CaptureResult:
        """Store the `<chati-memory>` / `<lore-memory>` blocks an agent printed (a
        known fact becomes evidence); count its errors (a gotcha at the third).

        A `source` that is a file path is recorded relative to the project, or
        by its name when it lies outside: memories are committed, and a local
        path (a home folder, a user name) has no place in them. It is redacted
        too: it names the evidence and error counts the index keeps.
        """
        from lore.memory.capture import capture_stdout
        from lore.secrets import redact

        source = redact(self._shared_path(source))[0]
        return capture_stdout(self.lifecycle, text, source=source, tier=tier, private=private)

    def _shared_path(self, source: str) -> str:
        if "/" not in source and os.sep not in source:
            return source
        path = Path(source)
        try:
            return path.resolve().relative_to(self.project.root.resolve()).as_posix()
        except (OSError, ValueError):
            return path.name or source

    # -- sessions (seed 004) and the lifecycle they feed (seed 001) ---------------------------------
    #
    # Sessions are recorded in one place, :class:`lore.sessions.SessionStore`
    # (``.lore/sessions/<id>/``), always through these methods: every
    # compaction they cause (soft limit, import, manual, pre-compact) hands the
    # events it archived to 001's capture (digest, error patterns), and the
    # summary it writes is a session-summary memory, indexed and searchable.

    def start_session(self, session_id: str | None = None, *, user: str | None = None) -> SessionInfo:
        """Start a recorded session, and what 001 does when one starts (see :meth:`session_started`)."""
        self.lifecycle.now()  # a bad LORE_NOW is refused before the session exists
        info = self.sessions.start(session_id, agent=self.agent, user=user)
        self.session_started(info.id)
        return info

    def session_started(
        self, session_id: str | None = None, *, consolidating: bool = True
    ) -> SessionStartReport:
        """The previous sessions' memories digested into the daily tier and cleaned;
        then (`consolidating`; else :meth:`consolidate_recent` later) daily
        memories older than 30 days archived, recent ones consolidated."""
        self._capture_quiet_sessions(session_id)
        report = self.lifecycle.session_started(session_id, consolidating=consolidating)
        return self._started(report)

    def _capture_quiet_sessions(self, current: str | None) -> None:
        """Capture what this agent's other recorded sessions said since their
        last capture, those quiet for a while: an agent's hooks may never end
        a session, and one that never compacted reached neither the daily
        tier nor the error counts (its repeated errors never became gotchas).
        They are not ended (an agent may resume one); a later start captures
        what came after. Idempotent."""
        from lore.memory.lifecycle.clock import parse
        from lore.memory.lifecycle.daily import RUNNING_MINUTES

        now = self.lifecycle.now()
        for info in self.sessions.list(status="active", limit=QUIET_SESSIONS):
            updated = parse(info.updated_at)
            if (
                info.id == current
                or updated is None
                or abs((now - updated).total_seconds()) < RUNNING_MINUTES * 60
            ):
                continue
            try:
                self.capture_session(info.id)
            except LoreError as err:  # one unreadable session: said, the others captured
                self._notice(f"session {info.id} not captured: {err}")

    def capture_session(self, session_id: str) -> None:
        """001's capture of what a recorded session said since its last capture
        (its archived ranges, then its live tail), without ending it: Claude
        Code's SessionEnd hook (a session may be resumed), and a session start
        for the quiet ones. Idempotent."""
        from lore.memory.capture import capture_events

        self._captured(session_id)
        tail = self.sessions.uncaptured_tail(session_id)
        if tail:
            capture_events(self.lifecycle, tail, session_id=session_id)
            self.sessions.mark_captured(session_id, int(tail[-1]["id"]))

    def consolidate_recent(self) -> SessionStartReport:
        """What a session start does after digesting: old daily memories
        archived, recent ones consolidated, tiers decided (a SessionStart hook
        runs it in a process of its own, after the agent has its context)."""
        return self._started(self.lifecycle.consolidate_recent())

    def _started(self, report: SessionStartReport) -> SessionStartReport:
        if report.cleaned or report.archived or report.merged:
            self._notice(
                f"session start: {report.cleaned} session memories digested and cleaned, "
                f"{len(report.archived)} daily memories archived, {report.merged} merged"
            )
        return report

    def record_events(
        self,
        session_id: str,
        events: Sequence[RawEvent],
        *,
        create: bool = False,
        agent: str | None = None,
    ) -> AppendResult:
        """Append events (004's shapes: :func:`lore.sessions.message`, ``tool_call``,
        ``tool_result``) to a session (`create`: start it when missing, written by
        `agent`, default the acting one). Crossing the soft limit compacts."""
        done = self.sessions.append_many(session_id, events, create=create, agent=agent or self.agent)
        self._captured(session_id)
        return done

    def record_transcript(
        self, path: str | os.PathLike[str], *, session_id: str | None = None, agent: str | None = None
    ) -> ImportResult:
        """Bring an agent transcript (Claude Code, Codex, 004) into a session:
        only what is new since the last time (idempotent); long ones compact as they go."""
        done = self.sessions.import_transcript(path, session_id=session_id, agent=agent or self.agent)
        self._captured(done.session_id)
        return done

    def transcript_backlog(self, path: str | os.PathLike[str], session_id: str | None = None) -> int:
        """Bytes of a transcript that :meth:`record_transcript` has not read yet."""
        return self.sessions.backlog(path, session_id)

    def end_session(self, session_id: str) -> SessionInfo:
        """Mark a session ended (appending to it is refused from then on), and
        capture what it said since its last compaction: the recent part a
        compaction keeps live would otherwise never reach the daily tier."""
        info = self.sessions.end(session_id)
        self.capture_session(session_id)
        return info

    def compact_session(
        self, session_id: str, *, force: bool = True, reason: str = "manual"
    ) -> CompactionResult:
        """Summarise and archive a session's old part (`force`: even below the soft limit)."""
        done = self.sessions.compact(session_id, force=force, reason=reason)
        self._captured(session_id)
        return done

    def session_info(self, session_id: str) -> SessionInfo:
        """A session's metadata (counts, tokens, compactions, status)."""
        return self.sessions.get(session_id)

    def session_list(
        self, *, status: str | None = None, limit: int | None = None
    ) -> builtins.list[SessionInfo]:
        """Recorded sessions, most recently updated first."""
        return self.sessions.list(status=status, limit=count_limit(limit))

    def session_events(
        self, session_id: str, *, include_archived: bool = False
    ) -> builtins.list[SessionEvent]:
        """A session's raw events on disk (the archived ones too if asked)."""
        return self.sessions.events(session_id, include_archived=include_archived)

    def session_context(self, session_id: str, *, limit_tokens: int | None = None) -> SessionContext:
        """The live context view: summaries of compacted parts, then recent events."""
        if limit_tokens is not None:
            limit_tokens = token_budget(limit_tokens, 0, field="limit_tokens")
        return self.sessions.context(session_id, limit_tokens=limit_tokens)

    def session_search(
        self, query: str, *, limit: int | None = None, session: str | None = None
    ) -> builtins.list[MemoryHit]:
        """Summaries of recorded sessions matching `query` (this agent's and unowned ones)."""
        from lore.sessions.events import check_session_id

        self._fresh()
        flt = self.memories.filter(storage=["session-summary"])
        if session is not None:
            self.sessions.get(check_session_id(session))  # NotFound: a typo answered "no matches"
            prefix = f"{self.project.rel(self.sessions.path_of(check_session_id(session)))}/summaries/"
            records = self.store.memories(flt)
            flt.ids = [r.id for r in records if r.path.startswith(prefix)]
        return self.searcher.memories(query, flt, self._limit(limit))

    def _captured(self, session_id: str | None) -> None:
        """001's capture of what compactions archived: a session's old events, like
        a PreCompact transcript, become the digest and counted errors (idempotent).
        Every archived range not captured yet is, not only this call's: a process
        killed between archiving and capturing left one for the next call."""
        from lore.memory.capture import capture_events

        if session_id is None:
            return
        for first, last in self.sessions.uncaptured(session_id):
            events = self.sessions.archived_events(session_id, first, last)
            capture_events(self.lifecycle, events, session_id=session_id)
            self.sessions.mark_captured(session_id, last)

    # -- lifecycle -----------------------------------------------------------------------------------

    def consolidate(self, *, recent_days: float | None = None) -> ConsolidationReport:
        """Merge near-duplicates, find contradictions and supersession, propose promotions."""
        self.sync()
        return self.lifecycle.consolidate(recent_days=recent_days)

    def proposals(self, *, include_held: bool = False, include_done: bool = False) -> builtins.list[Proposal]:
        """Changes waiting for approval (`lore review`), with their diffs."""
        self.sync()
        return self.lifecycle.proposals(include_held=include_held, include_done=include_done)

    def apply_proposal(self, proposal_id: str) -> Proposal:
        """Apply a proposal of :meth:`proposals` (`lore review --apply`)."""
        return self.lifecycle.apply(proposal_id)

    def reject_proposal(self, proposal_id: str) -> Proposal:
        """Reject a proposal of :meth:`proposals` (`lore review --reject`)."""
        return self.lifecycle.reject(proposal_id)

    def import_notes(
        self, path: str | os.PathLike[str], *, dry_run: bool = False, tier: str = "durable"
    ) -> ImportReport:
        """`lore import`: notes, instruction files, ADRs and other seeds' layouts
        as memories (idempotent; `dry_run` writes nothing)."""
        from lore.memory.importer import import_path

        if not str(path).strip():  # Path("") is the working folder: not what anyone asked for
            raise UsageError("give the file or folder of notes to import, e.g. docs/adr")
        return import_path(self.lifecycle, Path(path), dry_run=dry_run, tier=tier)

    # -- health -------------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: `lore stats --json`'s shape (docs/cli.md)."""
        from lore import health

        self._fresh()
        return health.stats(self.memories, self.embedding, self.lifecycle.tiers_of)

    def status(self) -> dict[str, Any]:
        """How fresh the index is: `lore status --json`'s shape (docs/cli.md)."""
        from lore import health

        return health.status(self.memories, self.code_index, self.embedding, notice=self._notice)

    def _duplicate_ids(self) -> builtins.list[Problem]:
        """Memories whose id another file has too (what `lore index` reports; doctor too)."""
        from lore import health

        return health.duplicate_ids(self.store.memories(self.memories.filter(), order="path"))

    def doctor(self) -> builtins.list[Problem]:
        """Every problem with the memory files and the index, each with what to do (`lore doctor`)."""
        from lore import health

        problems = health.doctor(self.memories)
        problem = self.embedding_problem()
        if problem is not None:
            problems.append(
                Problem("warning", ".lore/config.toml", f"vector search off, BM25 only: {problem}")
            )
        return problems

    def embedding_problem(self) -> str | None:
        """Why vector search is off when the configuration asks for it (a
        provider that cannot load, a setting it refuses), else None."""
        if self.embedding.provider == "none":
            return None  # asked for: no problem
        status = self.embedding.status(self.store)
        return None if status["search"] == "hybrid" else status["embedding_problem"]

    def doctor_apart(self) -> builtins.list[Problem]:
        """:meth:`doctor` in a Lore of its own (the same project, agent, database
        and role): a server's other requests go on meanwhile (it reads every
        memory file: 6.5 s at 10,000, during which the web UI and /mcp waited)."""
        other = Lore(
            self.project, agent=self.agent, database_url=self.database_url, database_role=self.database_role
        )
        other._own_private_only = self._own_private_only
        with other:
            return other.doctor()

    def embedding_status(self, *, load: bool = True) -> dict[str, Any]:
        """The embedding model, its coverage and pending vectors (`load`: load the model to check it)."""
        return dict(self.embedding.status(self.store, load=load))

    # -- curation and background index runs (the web UI and HTTP API) ---------------------------

    @property
    def browser(self) -> Browser:
        """Pages, details and selections of memories for the web UI (:mod:`lore.search.browse`)."""
        from lore.search.browse import Browser

        return self._part("browser", lambda: Browser(self.memories, self.searcher, self.lifecycle))

    def browse(
        self,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int = 50,
        **filters: Any,
    ) -> BrowsePage:
        """One page of memories with the total, each with staleness, attention and tier
        (filters: :func:`~lore.search.filters.memory_filter`'s, plus visibility and stale)."""
        flt = memory_filter(filters, viewer=self.memories.viewer)
        self._fresh()
        return self.browser.page(flt, sort=sort, descending=descending, offset=offset, limit=limit)

    def memory_detail(self, key: str) -> MemoryDetail:
        """One memory in full: fields, body, file version (sha256), anchors, staleness, attention."""
        self._fresh()
        return self.browser.detail(key)

    def memory_log(self, key: str, *, limit: int = 20) -> builtins.list[FileCommit]:
        """The git log of a memory's file (renames followed); [] when git does not track it."""
        from lore.memory.curation import file_log

        return file_log(self.project.root, self.resolve(key), count_limit(limit) or 20)

    def create(self, **fields: Any) -> AddResult:
        """:meth:`add`, then embed the new memory at once (found by meaning straight away)."""
        result = self.add(**fields)
        self.embedding.embed_fresh(self.store)
        return result

    def update_checked(self, key: str, *, expected_sha256: str | None = None, **changes: Any) -> AddResult:
        """:meth:`update`, refused (:class:`~lore.errors.Conflict`) if the file changed since
        the caller read version `expected_sha256` (see :meth:`memory_detail`); then re-embed it."""
        result = self.update(key, expected_sha256=expected_sha256, **changes)
        self.embedding.embed_fresh(self.store)
        return result

    def purge(self, key: str) -> TrashEntry:
        """Delete one trash entry now (instead of waiting for :meth:`gc`)."""
        return self.memories.purge(key)

    def bulk(
        self,
        action: str,
        *,
        apply: bool = False,
        confirm: str | None = None,
        ids: Sequence[str] | None = None,
        add_tags: Sequence[str] = (),
        remove_tags: Sequence[str] = (),
        new_type: str | None = None,
        new_tier: str | None = None,
        **filters: Any,
    ) -> BulkResult:
        """Preview (default) or apply a bulk action (delete, restore, retag, set_type,
        set_tier, verify) on the memories `filters` select, narrowed to `ids` when
        given (`restore` selects from the trash). Applying needs `confirm` = the
        preview's digest (:mod:`lore.memory.curation`)."""
        from lore.memory import curation
        from lore.secrets import redact_values

        # Tags as they are written (and shown in the preview): a token given is a marker.
        add_tags = strings(add_tags, "add_tags", most=MAX_FILTER_VALUES, longest=MAX_PATH)
        remove_tags = strings(remove_tags, "remove_tags", most=MAX_FILTER_VALUES, longest=MAX_PATH)
        add, remove = redact_values(add_tags)[0], redact_values(remove_tags)[0]
        params = curation.BulkParams(action, add, remove, new_type, new_tier)
        flt = memory_filter(filters, viewer=self.memories.viewer)
        flt.ids = strings(ids, "ids") or None
        if ids is not None and not flt.ids:  # "these memories: none" is not "every memory"
            raise UsageError("ids is empty; give the memories' ids, or leave ids out to act on the selection")
        self._fresh()
        if action == "restore":
            rows = curation.trash_selection(self.memories, flt)
        else:
            if flt.ids:  # an id prefix as everywhere else (it selected nothing); an unknown one is said
                whole = {r.id for r in self.store.memories(self.memories.filter(ids=flt.ids))}
                flt.ids = [
                    k if k in whole else self.memories.id_of(self.memories.resolve(k)) for k in flt.ids
                ]
            rows = [curation.Selected.of(r) for r in self.browser.select(flt)]
        result = curation.run_bulk(self.memories, params, rows, apply=apply, confirm=confirm)
        if result.applied:
            self.embedding.embed_fresh(self.store)
        return result

    def code_file(self, path: str) -> dict[str, str]:
        """An indexed code file's text (for links from a memory's anchors to the code)."""
        return self.code_index.read(path)

    def index_overview(self) -> IndexOverview:
        """The index dashboard: per source counts, failures, last indexed time; embedding
        model, coverage and pending vectors; index size; freshness against git; stale
        memories; the running and recent background jobs."""
        from lore.index import overview

        runner: JobRunner | None = self._parts.get("jobs")
        current = runner.current() if runner else None
        return overview.build(
            self.store,
            self.status(),
            memories=self.memories.filter(),
            broken_memories=self.memories.broken(),
            stale_memories=self.stale(fresh=False),  # a page view never indexes; the page offers that
            job=current.to_dict() if current else None,
            recent_jobs=[j.to_dict() for j in runner.jobs()[:10]] if runner else [],
        )

    @property
    def jobs(self) -> JobRunner:
        """Background index runs (:mod:`lore.jobs`), each with a Lore of its own."""
        from lore.jobs import JobRunner

        project, agent, url, role = self.project, self.agent, self.database_url, self.database_role
        return self._part(
            "jobs",
            lambda: JobRunner(
                lambda: Lore(project, agent=agent, database_url=url, database_role=role), roots=[project.root]
            ),
        )

    def start_index_job(
        self, kind: str = "update", *, files: Sequence[str] = (), deleted_files: Sequence[str] = ()
    ) -> IndexJob:
        """Queue a background index run and return its job at once. `kind`: files
        (003's update_index with `files`/`deleted_files`), update (everything,
        incremental) or rebuild (re-read every file). A path outside the project
        is never read: the job's result lists it as not indexed, as `update_index` does."""
        files = strings(files, "files", most=MAX_UPDATE_PATHS, longest=MAX_PATH)
        deleted_files = strings(deleted_files, "deleted_files", most=MAX_UPDATE_PATHS, longest=MAX_PATH)
        return self.jobs.submit(kind, list(files), list(deleted_files))

    def index_jobs(self) -> builtins.list[IndexJob]:
        """Background index runs still remembered, newest first."""
        return self.jobs.jobs()

    def index_job(self, job_id: str) -> IndexJob:
        """A background index run by id (:class:`NotFound` once forgotten)."""
        runner: JobRunner | None = self._parts.get("jobs")
        job = runner.get(job_id) if runner is not None else None
        if job is None:
            raise NotFound(f"no index job '{job_id}' (finished jobs are kept for a while only)")
        return job

    def stop_index_jobs(self) -> None:
        """Let the running index job finish (bounded wait) and cancel queued ones."""
        if "jobs" in self._parts:
            self._parts["jobs"].close()

    # -- helpers ---------------------------------------------------------------------------------------

    def _record_access(self, memory_ids: builtins.list[str]) -> None:
        """Count a read; kept in the index so reading never dirties committed files.
        Bookkeeping: left out when another process holds the index's write lock
        (the read itself needs no write, and is answered)."""
        with self._bookkeeping():
            self.lifecycle.record_access(memory_ids)

    @contextlib.contextmanager
    def _bookkeeping(self) -> Iterator[None]:
        """A read's own writes: waiting at most BOOKKEEPING_WAIT for another
        process's write lock, and left for a later read when it is held."""
        from lore.errors import unless_busy

        with unless_busy(), self.store.waiting_at_most(BOOKKEEPING_WAIT):
            yield

    def _refresh_code(self) -> None:
        """Changed files into the code index before a read, unless a git hook's
        background update is at it now: the read answers from the index as it
        stands, and says so (it re-indexed the same 450 files beside the hook:
        15 s after a branch switch)."""
        from lore.index import githooks

        if githooks.update_holding(self.project.local_dir):
            self._notice(
                "the index is being updated in the background (a git hook's); these results may "
                "miss the latest changes: `lore status` says when it is done"
            )
            return
        self.code_index.refresh()

    def _fresh(self) -> None:
        """Before reading memories: the index in step with the files, tiers decided
        (at once for files that changed, e.g. a hand edit marking one superseded)."""
        from lore.errors import DiskFull
        from lore.storage import MemoryFilter

        try:
            report = self.sync()
        except Exception as err:
            problem = as_lore_error(err)
            if not isinstance(problem, DiskFull):
                raise
            # A read needs no new space: answer from the index as it stands.
            self._notice(
                f"{str(problem).split(';')[0]}: memory files changed since the last sync are not "
                "in these results; free some space"
            )
            return
        seen, self._seen_sync = self._seen_sync, report
        if report is not seen and (report.added or report.updated):
            changed = MemoryFilter(paths=report.added + report.updated, include_private=True)
            self.lifecycle.advance([r.id for r in self.store.memories(changed)])
        with self._bookkeeping():  # the read goes on
            self.lifecycle.maybe_tick()


_ADD_FIELDS = frozenset(inspect.signature(Memories.add).parameters) - {"self", "body"}


def _check_text_fields(fields: dict[str, Any]) -> None:
    """A memory's text fields as a library caller gives them: text, or None (left out)."""
    for name in ("body", "title", "type", "applies_to", "task", "project"):  # occurred_at: a datetime too
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"must be text, not {type(value).__name__}", field=name)
    for name in ("tags", "files", "labels"):
        value = fields.get(name)
        if value is not None:  # a list of names, or one name ("urgent", not its letters)
            fields[name] = strings(value, name)


def _folder(path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """A project folder given by a caller of the Python API, checked for its type."""
    if not isinstance(path, str | os.PathLike):
        raise UsageError(f"a project folder is a path (str or os.PathLike), not {type(path).__name__}")
    return path


def _redacted(text: str | None) -> str | None:
    if not text:
        return text
    from lore.secrets import redact

    return redact(text)[0]


__all__ = ["AddResult", "Edit", "EditResult", "Lore", "Page", "Problem"]


def _refuse_git_folder(target: Path) -> None:
    """A bare repository or a `.git/` folder holds no project files: .lore/ there
    would index git's own files, and its hooks would never run."""
    from lore.index import gitrepo

    found = gitrepo.git_folder(target)
    if found is None:
        return
    git_dir, bare = found
    if bare:
        raise UsageError(
            f"{git_dir} is a bare git repository: it has no work tree, no files to index; "
            "run `lore init` in a clone of it"
        )
    where = "is a git folder" if target == git_dir else f"is inside the git folder {git_dir}"
    work_tree = f" ({git_dir.parent})" if git_dir.name == ".git" else ""
    raise UsageError(f"{target} {where}; run `lore init` in the repository's work tree{work_tree}")


def _keep_out_of_git(project: Project) -> None:
    """The private parts of `.lore/` out of git on any branch (:meth:`Project.keep_private`,
    and the repository's own exclude file)."""
    from lore.index.gitrepo import exclude_locally
    from lore.project import EXCLUDED

    project.keep_private()
    exclude_locally(project.root, project.lore_dir, EXCLUDED)


# A memory a pack shows counts as read at this relevance or more: what an agent
# is likely to use. The filler that fills a pack below it counted too, and a read
# lifts attention (its recency starts again): unrelated memories shown once
# outranked the right one the next time, which had never been shown.
READ_RELEVANCE = 0.5


def _read_in(pack: RecallPack) -> builtins.list[str]:
    """The memories of `pack` that count as read (:data:`READ_RELEVANCE`)."""
    return [
        it.key
        for it in pack.items
        if it.kind == "memory" and float(it.data.get("relevance", 1.0) or 0.0) >= READ_RELEVANCE
    ]
