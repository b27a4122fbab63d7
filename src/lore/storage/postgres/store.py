"""The PostgreSQL backend: one database for many projects, clones and people.

Every SQL statement of the PostgreSQL index lives in this package. A store is
one clone of one project (see :mod:`.identity`) and sees:

- the project's committed memories, whichever clone synced them, and its own
  local memories, code and history (``scope`` in :mod:`.sql`);
- with ``MemoryFilter.include_global``, the global memories of other projects;
- only the rows row-level security lets its database role read.

Sync is three-way: ``clone_files`` records what this clone last synced from
its disk, so :meth:`file_states` is *this clone's* view, a clone pushes only
what it changed, and deleting a file removes the shared rows only if no
other clone changed them since.

Concurrency: a write transaction takes this clone's advisory lock (like
SQLite's BEGIN IMMEDIATE on one file), and the project's lock before it
touches rows every clone shares; always in that order, so Lore writers
cannot deadlock each other. Vectors are inserted in hash order with ON
CONFLICT DO NOTHING for the same reason. Statements outside a transaction
are retried on serialization failures and deadlocks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lore.errors import StorageError
from lore.storage.base import (
    AnchorRecord,
    AnyFilter,
    ChunkInput,
    ChunkRecord,
    CommitRecord,
    FileDump,
    FileState,
    IndexCounts,
    MemoryFilter,
    MemoryRecord,
    embedding_text,
    filter_is_empty,
    text_hash,
)
from lore.storage.postgres import connection, sql
from lore.storage.postgres.identity import ProjectIdentity
from lore.storage.postgres.migrations import HNSW_DIMENSIONS, SCHEMA_VERSION, schema_version

if TYPE_CHECKING:
    import numpy as np
    import psycopg
    from psycopg_pool import ConnectionPool

DEFAULT_TEXT_SEARCH = "lore_porter"
_GROUP_COLUMNS = ("type", "sector", "visibility", "storage", "agent")
_KIND_ORDER = ("memory", "commit", "code")  # what gets embedded first
_RETRIES = 5
_INDEXING_EVERY = 5.0  # seconds between 'indexing' status writes of one store
# Lexical search: up to this many chunks of a kind, BM25 is exactly FTS5's; beyond,
# terms matching more than COMMON_TERM_ROWS chunks add no candidates of their own.
EXACT_LEXICAL_DOCS = 50_000
COMMON_TERM_ROWS = 20_000


def is_local_memory(path: str) -> bool:
    """A memory file that lives in one clone only (git-ignored: private or session)."""
    return path.startswith(".lore/local/")


class PostgresStore:
    """One clone of one project in a shared PostgreSQL database."""

    def __init__(self, url: str, identity: ProjectIdentity, *, text_search: str = DEFAULT_TEXT_SEARCH):
        self.url = url
        self.who = identity
        self.text_search = text_search
        self.notices: list[str] = []
        self._tx: psycopg.Connection[Any] | None = None
        self._depth = 0
        self._dirty: set[str] = set()
        self._kinds: set[str] = set()
        self._project_locked = False
        self._indexing_marked: dict[str, float] = {}
        self._tsqueries: dict[str, str] = {}
        self._estimates: dict[str, int] = {}
        self._check_schema()
        self.project_id = identity.id
        self.clone_id, self.role = self._register()

    # -- connections and transactions ----------------------------------------------------

    @property
    def _pool(self) -> ConnectionPool:
        """The process's pool for this URL (looked up each time: a closed pool is replaced)."""
        return connection.pool(self.url)

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        if self._tx is not None:
            yield self._tx
            return
        with self._pool.connection() as conn:
            yield conn

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._run(lambda conn: conn.execute(query, params).fetchall())

    def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._run(lambda conn: conn.execute(query, params).fetchone())

    def _exec(self, query: str, params: Sequence[Any] = ()) -> int:
        return self._run(lambda conn: conn.execute(query, params).rowcount)

    def _run(self, work: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """Run `work` on this store's connection; outside a transaction,
        retried on serialization failures and deadlocks."""
        import psycopg

        for attempt in range(_RETRIES):
            try:
                with self._conn() as conn:
                    return work(conn)
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
                if self._tx is not None or attempt == _RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
            except psycopg.OperationalError as err:
                raise StorageError(
                    f"lost the connection to PostgreSQL at {connection.redact(self.url)} "
                    f"({str(err).strip().splitlines()[-1] if str(err).strip() else err.__class__.__name__}); "
                    "try again"
                ) from None
        raise AssertionError("unreachable")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction, holding this clone's advisory lock (the project's
        too, from the first write of a row every clone shares)."""
        if self._tx is not None:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._dirty, self._kinds, self._project_locked = set(), set(), False
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._tx = conn
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._clone_key,))
                yield
                self._stamp(conn)
        except BaseException as err:
            self._tx = None
            if self._kinds and isinstance(err, Exception):
                self._status_failed(err)
            raise
        finally:
            self._tx = None

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection of the current transaction, or a transaction of its own."""
        if self._tx is not None:
            yield self._tx
            return
        with self.transaction():
            assert self._tx is not None
            yield self._tx

    @property
    def _clone_key(self) -> str:
        return f"lore:clone:{self.project_id}:{self.who.host}:{self.who.repo_path}"

    def _lock_project(self, conn: psycopg.Connection[Any]) -> None:
        if not self._project_locked:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"lore:project:{self.project_id}",)
            )
            self._project_locked = True

    def _changed(self, kind: str, shared: bool) -> None:
        """Note a change of `kind` rows, in the project's shared rows or this clone's."""
        self._dirty.add("project" if shared else "clone")
        if kind not in self._kinds:
            self._kinds.add(kind)
            self._status_indexing(kind)

    def _stamp(self, conn: psycopg.Connection[Any]) -> None:
        """At commit: advance the change counters readers compare (vectors_version)
        and record 003's index status for the kinds written."""
        if "project" in self._dirty:
            conn.execute(
                "UPDATE projects SET changed_seq = nextval('change_seq') WHERE id = %s", (self.project_id,)
            )
        if "clone" in self._dirty:
            conn.execute(
                "UPDATE clones SET changed_seq = nextval('change_seq'), last_seen_at = now() WHERE id = %s",
                (self.clone_id,),
            )
        for kind in sorted(self._kinds):
            conn.execute(
                "INSERT INTO index_status(clone_id, kind, status, last_indexed_at, error_message, updated_at) "
                "VALUES (%s, %s, 'completed', now(), NULL, now()) ON CONFLICT (clone_id, kind) DO UPDATE "
                "SET status = 'completed', last_indexed_at = now(), error_message = NULL, updated_at = now()",
                (self.clone_id, kind),
            )

    def _status_indexing(self, kind: str) -> None:
        """Show 'indexing' to other sessions at once (a connection of its own)."""
        now = time.monotonic()
        if now - self._indexing_marked.get(kind, float("-inf")) < _INDEXING_EVERY:
            return
        self._indexing_marked[kind] = now
        self._status_side(kind, "indexing", None)

    def _status_failed(self, err: Exception) -> None:
        for kind in self._kinds:
            self._status_side(kind, "failed", f"{err.__class__.__name__}: {err}"[:500])
        self._indexing_marked.clear()

    def _status_side(self, kind: str, status: str, error: str | None) -> None:
        try:
            with self._pool.connection() as side:
                side.execute(
                    "INSERT INTO index_status(clone_id, kind, status, error_message, updated_at) "
                    "VALUES (%s, %s, %s, %s, now()) ON CONFLICT (clone_id, kind) DO UPDATE "
                    "SET status = excluded.status, error_message = excluded.error_message, updated_at = now()",
                    (self.clone_id, kind, status, error),
                )
        except Exception:
            pass  # status is informative; never fail a write because of it

    # -- opening --------------------------------------------------------------------------

    def _check_schema(self) -> None:
        with self._pool.connection() as conn:
            version = schema_version(conn)
        if version < SCHEMA_VERSION:
            raise StorageError(
                f"the PostgreSQL database {connection.redact(self.url)} has Lore schema version {version}, "
                f"this Lore needs {SCHEMA_VERSION}; run `lore db upgrade`"
            )
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"the PostgreSQL database has Lore schema version {version}, newer than this Lore "
                f"({SCHEMA_VERSION}); upgrade Lore"
            )

    def _register(self) -> tuple[int, str]:
        """This clone's row (and its project's), created on first use."""
        who = self.who
        row = self._one(
            "SELECT c.id, current_user FROM clones c WHERE c.project_id = %s AND c.host = %s "
            "AND c.repo_path = %s",
            (who.id, who.host, who.repo_path),
        )
        if row is None:
            self._exec(
                "INSERT INTO projects(id, name, remote_url) VALUES (%s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (who.id, who.name, who.remote_url),
            )
            self._exec(
                "INSERT INTO clones(project_id, host, repo_path) VALUES (%s, %s, %s) "
                "ON CONFLICT (project_id, host, repo_path) DO NOTHING",
                (who.id, who.host, who.repo_path),
            )
            row = self._one(
                "SELECT c.id, current_user FROM clones c WHERE c.project_id = %s AND c.host = %s "
                "AND c.repo_path = %s",
                (who.id, who.host, who.repo_path),
            )
        assert row is not None
        return int(row[0]), str(row[1])

    def close(self) -> None:
        """Nothing to release: connections go back to the pool after each use."""

    def describe(self) -> str:
        return f"{connection.redact(self.url)} (project {self.who.name}, {self.project_id})"

    def check(self) -> str:
        """'ok', or what is wrong with the database."""
        try:
            with self._pool.connection() as conn:
                version = schema_version(conn)
                conn.execute("SELECT '[1]'::vector")
            if version != SCHEMA_VERSION:
                return f"schema version {version}, expected {SCHEMA_VERSION}"
            return "ok"
        except Exception as err:
            return str(err).strip().splitlines()[0] if str(err).strip() else err.__class__.__name__

    def identity(self) -> str:
        row = self._one("SELECT id FROM instance LIMIT 1")
        return f"pg-{row[0] if row else 'unknown'}-{self.clone_id}"

    def size_bytes(self) -> int:
        """The whole Lore schema (every project of the database)."""
        row = self._one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'lore' AND c.relkind = 'r'"
        )
        return int(row[0]) if row else 0

    # -- index state -------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._one("SELECT value FROM meta WHERE clone_id = %s AND key = %s", (self.clone_id, key))
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO meta(clone_id, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (clone_id, key) DO UPDATE SET value = excluded.value",
                (self.clone_id, key, value),
            )
            kind = {"indexed_commit": "code", "history_head": "commit"}.get(key)
            if kind:
                conn.execute(
                    "INSERT INTO index_status(clone_id, kind, last_commit_hash) VALUES (%s, %s, %s) "
                    "ON CONFLICT (clone_id, kind) DO UPDATE SET last_commit_hash = excluded.last_commit_hash",
                    (self.clone_id, kind, value),
                )

    def meta_items(self) -> dict[str, str]:
        return dict(self._rows("SELECT key, value FROM meta WHERE clone_id = %s", (self.clone_id,)))

    def vectors_version(self) -> int:
        """Changes when this clone's chunks or its project's shared ones do
        (committed by any clone); stamped at commit, so never behind a reader."""
        row = self._one(
            "SELECT p.changed_seq + c.changed_seq FROM projects p JOIN clones c ON c.project_id = p.id "
            "WHERE c.id = %s",
            (self.clone_id,),
        )
        return int(row[0]) if row else 0

    def counts(self) -> IndexCounts:
        own = sql.scope("m")
        row = self._one(
            f"SELECT (SELECT count(*) FROM memories m WHERE {own}), "
            "(SELECT count(*) FROM clone_files WHERE clone_id = %s AND kind = 'memory' AND error IS NOT NULL), "
            f"(SELECT count(*) FROM files m WHERE {own} AND kind = 'code'), "
            "(SELECT count(*) FROM commits x JOIN files f ON f.id = x.file_id WHERE f.clone_id = %s)",
            (*self._scope, self.clone_id, *self._scope, self.clone_id),
        )
        assert row is not None
        chunks = {kind: self._chunk_stats(kind)[0] for kind in ("memory", "code", "commit")}
        return IndexCounts(
            memories=int(row[0]),
            memory_files_with_errors=int(row[1]),
            chunks=sum(chunks.values()),
            memory_chunks=chunks["memory"],
            code_files=int(row[2]),
            code_chunks=chunks["code"],
            commits=int(row[3]),
        )

    def group_counts(self, column: str) -> dict[str, int]:
        if column not in _GROUP_COLUMNS:
            raise ValueError(f"cannot group memories by {column!r}")
        rows = self._rows(
            f"SELECT coalesce({column}, ''), count(*) FROM memories m WHERE {sql.scope('m')} "
            "GROUP BY 1 ORDER BY 2 DESC, 1",
            self._scope,
        )
        return {r[0]: int(r[1]) for r in rows}

    @property
    def _scope(self) -> tuple[str, int]:
        return (self.project_id, self.clone_id)

    # -- files -------------------------------------------------------------------------------

    def file_states(self, kind: str) -> dict[str, FileState]:
        """What *this clone* last synced of each file (the three-way sync's base)."""
        rows = self._rows(
            "SELECT path, id, sha256, mtime_ns, size, error FROM clone_files WHERE clone_id = %s AND kind = %s",
            (self.clone_id, kind),
        )
        return {row[0]: FileState(int(row[1]), row[2], int(row[3]), int(row[4]), row[5]) for row in rows}

    def paths(self, kind: str) -> set[str]:
        rows = self._rows(
            f"SELECT path FROM files f WHERE {sql.scope('f')} AND kind = %s", (*self._scope, kind)
        )
        return {r[0] for r in rows}

    def file_roles(self) -> dict[str, str]:
        rows = self._rows(
            "SELECT path, role FROM files WHERE clone_id = %s AND kind = 'code' AND role IS NOT NULL",
            (self.clone_id,),
        )
        return dict(rows)

    def put_file(
        self,
        path: str,
        kind: str,
        sha256: str,
        mtime_ns: int,
        size: int,
        error: str | None = None,
        role: str | None = None,
    ) -> int:
        """Record this clone's copy of a file and (unless it failed to parse)
        insert or replace its indexed rows, dropping what was indexed for it.

        A committed memory's rows are the project's: a broken copy in one
        clone is that clone's error, not a reason to hide the memory from
        everyone, so an error leaves the shared rows alone.
        """
        shared = kind == "memory" and not is_local_memory(path)
        owner = self.role if kind == "memory" and is_local_memory(path) else ""
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO clone_files(clone_id, path, kind, sha256, mtime_ns, size, error, owner_role) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (clone_id, path) DO UPDATE SET "
                "kind = excluded.kind, sha256 = excluded.sha256, mtime_ns = excluded.mtime_ns, "
                "size = excluded.size, error = excluded.error, owner_role = excluded.owner_role",
                (self.clone_id, path, kind, sha256, mtime_ns, size, _clean(error), owner),
            )
            if shared:
                self._lock_project(conn)
            self._changed(kind, shared)
            clone = None if shared else self.clone_id
            if error is not None:
                if not shared:
                    conn.execute(
                        "DELETE FROM files WHERE project_id = %s AND clone_id = %s AND path = %s",
                        (self.project_id, clone, path),
                    )
                return 0
            row = conn.execute(
                "INSERT INTO files(project_id, clone_id, path, kind, sha256, role, owner_role) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (project_id, clone_id, owner_role, path) DO UPDATE SET kind = excluded.kind, "
                "sha256 = excluded.sha256, role = excluded.role, is_global = false, "
                "written_by = current_user, indexed_at = now() RETURNING id",
                (self.project_id, clone, path, kind, sha256, role, owner),
            ).fetchone()
            assert row is not None
            file_id = int(row[0])
            for table in ("chunks", "memories", "commits"):
                conn.execute(f"DELETE FROM {table} WHERE file_id = %s", (file_id,))
            return file_id

    def touch_file(self, file_id: int, mtime_ns: int, size: int) -> None:
        self._exec(
            "UPDATE clone_files SET mtime_ns = %s, size = %s WHERE id = %s AND clone_id = %s",
            (mtime_ns, size, file_id, self.clone_id),
        )

    def delete_files(self, paths: Iterable[str]) -> int:
        """Forget files this clone no longer has. A committed memory's shared
        rows go only if they still hold what this clone had (no other clone
        changed it since); otherwise the other clone's version stays."""
        wanted = list(paths)
        if not wanted:
            return 0
        with self._writing() as conn:
            gone = conn.execute(
                "DELETE FROM clone_files WHERE clone_id = %s AND path = ANY(%s) RETURNING path, kind, sha256",
                (self.clone_id, wanted),
            ).fetchall()
            for path, kind, sha in gone:
                if kind == "memory" and not is_local_memory(path):
                    self._lock_project(conn)
                    conn.execute(
                        "DELETE FROM files WHERE project_id = %s AND clone_id IS NULL AND owner_role = '' "
                        "AND path = %s AND sha256 = %s",
                        (self.project_id, path, sha),
                    )
                    self._changed(kind, True)
                else:
                    conn.execute(
                        "DELETE FROM files WHERE project_id = %s AND clone_id = %s AND path = %s",
                        (self.project_id, self.clone_id, path),
                    )
                    self._changed(kind, False)
            return len(gone)

    def file_errors(self, kind: str) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT path, error FROM clone_files WHERE clone_id = %s AND kind = %s AND error IS NOT NULL "
            'ORDER BY path COLLATE "C"',
            (self.clone_id, kind),
        )
        return [(r[0], r[1]) for r in rows]

    # -- memories -------------------------------------------------------------------------------

    def put_memory(self, file_id: int, memory: MemoryRecord) -> None:
        # 003: a global memory is shared from its project's committed rows only.
        global_ = memory.is_global and not is_local_memory(memory.path)
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO memories(file_id, project_id, clone_id, owner_role, is_global, id, title, type, "
                "sector, tags, applies_to, agent, task, project, visibility, storage, occurred_at, "
                "content_hash, confidence, files, summary, body_line, evidence_count, owner) "
                "SELECT f.id, f.project_id, f.clone_id, f.owner_role, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM files f WHERE f.id = %s",
                (
                    global_,
                    memory.id,
                    _clean(memory.title),
                    memory.type,
                    memory.sector,
                    json.dumps(memory.tags),
                    memory.applies_to,
                    memory.agent,
                    memory.task,
                    memory.project,
                    memory.visibility,
                    memory.storage,
                    memory.occurred_at,
                    memory.content_hash,
                    memory.confidence,
                    json.dumps(memory.files),
                    _clean(memory.summary),
                    memory.body_line,
                    memory.evidence_count,
                    memory.owner,
                    file_id,
                ),
            )
            if global_:  # chunks inherit it from the file row
                conn.execute("UPDATE files SET is_global = true WHERE id = %s", (file_id,))
                conn.execute("UPDATE chunks SET is_global = true WHERE file_id = %s", (file_id,))

    def memories(
        self, flt: MemoryFilter | None = None, *, order: str = "recent", limit: int | None = None
    ) -> list[MemoryRecord]:
        glob = sql.wants_global(flt)
        where, params = sql.memory_where(flt, self.clone_id)
        columns = sql.MEMORY_COLUMNS.format(path=sql.FOREIGN_PATH if glob else "f.path")
        query = (
            f"SELECT {columns} FROM memories m JOIN files f ON f.id = m.file_id "
            f"WHERE {sql.scope('m', glob)}{' AND ' + where if where else ''} "
            f'ORDER BY {sql.ORDERS[order]}, f.path COLLATE "C"'
        )
        if limit:
            query += f" LIMIT {int(limit)}"
        head = [self.project_id] if glob else []
        return [_memory(row) for row in self._rows(query, (*head, *self._scope, *params))]

    def memory_paths(self, key: str) -> list[str]:
        """Paths of memories whose id is `key`, or starts with it, or whose file stem starts with it."""
        base = f"SELECT f.path FROM memories m JOIN files f ON f.id = m.file_id WHERE {sql.scope('m')}"
        rows = self._rows(f'{base} AND m.id = %s ORDER BY f.path COLLATE "C"', (*self._scope, key))
        if not rows and len(key) >= 4:
            rows = self._rows(
                f'{base} AND (m.id LIKE %s OR f.path LIKE %s) ORDER BY f.path COLLATE "C"',
                (*self._scope, sql.like_prefix(key), "%/" + sql.like_prefix(key)),
            )
        return [r[0] for r in rows]

    def find_duplicate(self, occurred_at: str, content_hash: str) -> str | None:
        row = self._one(
            f"SELECT f.path FROM memories m JOIN files f ON f.id = m.file_id WHERE {sql.scope('m')} "
            "AND m.occurred_at = %s AND m.content_hash = %s LIMIT 1",
            (*self._scope, occurred_at, content_hash),
        )
        return row[0] if row else None

    # -- chunks and search ---------------------------------------------------------------------

    def put_chunks(self, file_id: int, kind: str, chunks: Sequence[ChunkInput]) -> None:
        """Insert a file's chunks in one statement (one BM25-statistics update)."""
        if not chunks:
            return
        columns: dict[str, list[Any]] = {
            name: []
            for name in (
                "ord section symbol language start_line end_line title keywords text text_hash n_tokens "
                "lex_title lex_keywords lex_text"
            ).split()
        }
        for i, c in enumerate(chunks):
            for name, value in (
                ("ord", i),
                ("section", _clean(c.section)),
                ("symbol", _clean(c.symbol)),
                ("language", c.language),
                ("start_line", c.start_line),
                ("end_line", c.end_line),
                ("title", _clean(c.title)),
                ("keywords", _clean(c.keywords)),
                ("text", _clean(c.text)),
                ("text_hash", text_hash(embedding_text(kind, c.title, c.text))),
                ("n_tokens", sql.token_count(c.title, c.keywords, c.text)),
                ("lex_title", sql.lexical_text(c.title)),
                ("lex_keywords", sql.lexical_text(c.keywords)),
                ("lex_text", sql.lexical_text(c.text)),
            ):
                columns[name].append(value)
        types = "int[] text[] text[] text[] int[] int[] text[] text[] text[] text[] int[] text[] text[] text[]".split()
        unnest = ", ".join(f"%s::{t}" for t in types)
        cfg = self.text_search
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO chunks(file_id, project_id, clone_id, kind, owner_role, is_global, ord, section, "
                "symbol, language, start_line, end_line, title, keywords, text, text_hash, n_tokens, tsv) "
                "SELECT f.id, f.project_id, f.clone_id, %s, f.owner_role, f.is_global, u.ord, u.section, "
                "u.symbol, u.language, u.start_line, u.end_line, u.title, u.keywords, u.text, u.text_hash, "
                "u.n_tokens, setweight(to_tsvector(%s::regconfig, u.lex_title), 'A') || "
                "setweight(to_tsvector(%s::regconfig, u.lex_keywords), 'B') || "
                "to_tsvector(%s::regconfig, u.lex_text) "
                f"FROM files f, unnest({unnest}) AS u(ord, section, symbol, language, start_line, end_line, "
                "title, keywords, text, text_hash, n_tokens, lex_title, lex_keywords, lex_text) "
                "WHERE f.id = %s",
                (kind, cfg, cfg, cfg, *columns.values(), file_id),
            )

    def chunks(self, kind: str, ids: Sequence[int], flt: AnyFilter | None = None) -> list[ChunkRecord]:
        """The chunks with these ids that pass `flt` (order not kept)."""
        if not ids:
            return []
        where, params = sql.filter_where(kind, flt, self.clone_id)
        rows = self._rows(
            f"SELECT {self._select(kind)} {_from(kind)} WHERE c.id = ANY(%s){' AND ' + where if where else ''}",
            (*self._select_params(kind), list(ids), *params),
        )
        return [_chunk(kind, row) for row in rows]

    def first_chunk(self, path: str) -> ChunkRecord | None:
        row = self._one(
            f"SELECT {sql.CHUNK_COLUMNS.format(path='f.path')} FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE {sql.scope('f')} AND f.path = %s ORDER BY f.clone_id NULLS FIRST, c.ord LIMIT 1",
            (*self._scope, path),
        )
        return _chunk("code", row) if row else None

    def _select(self, kind: str) -> str:
        path = sql.FOREIGN_PATH if kind == "memory" else "f.path"
        columns = sql.CHUNK_COLUMNS.format(path=path)
        if kind == "memory":
            return f"{columns}, {sql.MEMORY_COLUMNS.format(path=path)}"
        if kind == "commit":
            return f"{columns}, {sql.COMMIT_COLUMNS}"
        return columns

    def _select_params(self, kind: str) -> tuple[str, ...]:
        return (self.project_id, self.project_id) if kind == "memory" else ()

    def lexical_search(
        self, kind: str, terms: Sequence[str], flt: AnyFilter | None, limit: int
    ) -> list[tuple[ChunkRecord, float]]:
        """BM25 (computed as SQLite's FTS5 does) over chunks of `kind` matching
        any of `terms`; (chunk, score), best first."""
        if not terms or limit <= 0:
            return []
        queries = self._term_queries(terms)
        if not queries:
            return []
        glob = sql.wants_global(flt)
        docs, tokens = self._chunk_stats(kind, glob)
        docs = max(docs, 1)
        avgdl = max(tokens / docs, 1.0)
        where, params = sql.filter_where(kind, flt, self.clone_id)
        n = len(queries)
        matching, known_df = self._candidate_terms(kind, queries, docs)
        any_term = " | ".join(f"({queries[i]})" for i in matching)
        counts = ", ".join(
            f"{known_df[i]}::bigint AS d{i}"
            if i in known_df
            else f"count(*) FILTER (WHERE hits.tsv @@ %s::tsquery) AS d{i}"
            for i in range(n)
        )
        query = (
            "WITH hits AS MATERIALIZED (SELECT c.id, c.tsv, c.n_tokens FROM chunks c "
            f"WHERE c.kind = %s AND {sql.scope('c', glob)} AND c.tsv @@ %s::tsquery), "
            f"df AS (SELECT {counts} FROM hits), "
            f"tfs AS (SELECT hits.id, hits.n_tokens, {sql.term_frequencies(kind, n)} FROM hits), "
            f"scored AS (SELECT tfs.id, {sql.bm25(n, docs, avgdl)} AS score FROM tfs, df) "
            f"SELECT {self._select(kind)}, scored.score FROM scored JOIN chunks c ON c.id = scored.id "
            f"{_joins(kind)}{' WHERE ' + where if where else ''} "
            "ORDER BY scored.score DESC, c.id LIMIT %s"
        )
        rows = self._rows(
            query,
            (
                kind,
                *self._scope,
                any_term,
                *(q for i, q in enumerate(queries) if i not in known_df),
                *queries,
                *self._select_params(kind),
                *params,
                limit,
            ),
        )
        return [(_chunk(kind, row), float(row[-1])) for row in rows]

    def _candidate_terms(self, kind: str, queries: list[str], docs: int) -> tuple[list[int], dict[int, int]]:
        """Which terms generate candidates, and the estimated document frequency
        of those that do not.

        Up to ``EXACT_LEXICAL_DOCS`` chunks every term does, and BM25 equals
        FTS5's. Beyond, a term the planner's statistics say matches more than
        ``COMMON_TERM_ROWS`` chunks (a word nearly everything contains) would
        make every search score a large part of the index: it still scores the
        candidates the rarer terms find, with its estimated frequency, but does
        not add candidates of its own (if every term is that common, the
        rarest one alone does)."""
        everything = list(range(len(queries)))
        if docs <= EXACT_LEXICAL_DOCS or len(queries) == 0:
            return everything, {}
        estimates = [self._estimated_rows(kind, q) for q in queries]
        common = {i: min(e, docs) for i, e in enumerate(estimates) if e > COMMON_TERM_ROWS}
        if len(common) == len(queries):
            rarest = min(everything, key=estimates.__getitem__)
            del common[rarest]
        return [i for i in everything if i not in common], common

    def _estimated_rows(self, kind: str, tsquery: str) -> int:
        """The planner's estimate of the chunks matching `tsquery` (from ANALYZE's
        most common lexemes; no scan)."""
        key = f"{kind}\x00{tsquery}"
        if key not in self._estimates:
            from psycopg import sql as pgsql

            # Literals, not parameters: a generic plan would not look at the values.
            statement = pgsql.SQL(
                "EXPLAIN (FORMAT JSON) SELECT 1 FROM chunks c WHERE c.kind = {} AND c.tsv @@ {}::tsquery"
            ).format(pgsql.Literal(kind), pgsql.Literal(tsquery))
            row = self._run(lambda conn: conn.execute(statement).fetchone())
            plan = row[0] if row else [{"Plan": {"Plan Rows": 0}}]
            self._estimates[key] = int(plan[0]["Plan"]["Plan Rows"])
        return self._estimates[key]

    def _term_queries(self, terms: Sequence[str]) -> list[str]:
        """Each term as a tsquery (phrases for terms of several tokens), in order;
        terms with no searchable token are left out."""
        missing = [t for t in dict.fromkeys(terms) if t not in self._tsqueries]
        if missing:
            rows = self._rows(
                "SELECT t, phraseto_tsquery(%s::regconfig, l)::text FROM unnest(%s::text[], %s::text[]) AS u(t, l)",
                (self.text_search, missing, [sql.lexical_text(t) for t in missing]),
            )
            self._tsqueries.update({r[0]: r[1] for r in rows})
        return [self._tsqueries[t] for t in terms if self._tsqueries.get(t)]

    def _chunk_stats(self, kind: str, include_global: bool = False) -> tuple[int, int]:
        """(rows, tokens) of `kind` this clone searches: BM25's N and mean length."""
        row = self._one(
            "SELECT coalesce(sum(docs), 0), coalesce(sum(tokens), 0) FROM chunk_stats "
            "WHERE project_id = %s AND clone_key IN (0, %s) AND kind = %s",
            (*self._scope, kind),
        )
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def vector_search(
        self, kind: str, model: str, query: np.ndarray, flt: AnyFilter | None, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the chunks nearest `query` that pass `flt`, best first.

        The filter is part of the HNSW scan's query: with pgvector's iterative
        scans the index keeps producing candidates until `limit` rows pass it.
        If that still comes back short (a very selective filter), the same
        query runs exactly, so a filtered search is never short while
        matching chunks exist.
        """
        import numpy as np

        if limit <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32)
        dim = int(vector.shape[0])
        found = self._nearest(kind, model, vector, flt, limit, exact=dim not in HNSW_DIMENSIONS)
        if len(found) < limit and dim in HNSW_DIMENSIONS:
            found = self._nearest(kind, model, vector, flt, limit, exact=True)
        return found

    def _nearest(
        self, kind: str, model: str, vector: np.ndarray, flt: AnyFilter | None, limit: int, *, exact: bool
    ) -> list[tuple[int, float]]:
        dim = int(vector.shape[0])
        # The HNSW index is on vector::vector(dim); the bare column is not indexed,
        # so ordering by it is an exact scan over the rows that pass the filter.
        distance = (
            "(e.vector <=> %s::vector)" if exact else f"(e.vector::vector({dim}) <=> %s::vector({dim}))"
        )
        where, params = sql.filter_where(kind, flt, self.clone_id)
        glob = sql.wants_global(flt)
        joins = _joins(kind) if not filter_is_empty(flt) else ""
        query = (
            f"SELECT id, 1 - d FROM (SELECT c.id, {distance} AS d FROM embeddings e "
            f"JOIN chunks c ON c.text_hash = e.text_hash {joins} "
            f"WHERE e.model = %s AND e.dim = {dim} AND c.kind = %s AND {sql.scope('c', glob)}"
            f"{' AND ' + where if where else ''} ORDER BY {distance} LIMIT %s) nn ORDER BY d, id"
        )
        rows = self._rows(query, (vector, model, kind, *self._scope, *params, vector, limit))
        return [(int(r[0]), float(r[1])) for r in rows]

    def vector_count(self, kind: str, model: str) -> int:
        row = self._one(
            f"SELECT count(*) FROM chunks c WHERE c.kind = %s AND {sql.scope('c')} AND EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = c.text_hash)",
            (kind, *self._scope, model),
        )
        return int(row[0]) if row else 0

    # -- vectors --------------------------------------------------------------------------------

    def pending_embeddings(self, model: str, limit: int, kind: str | None = None) -> list[tuple[str, str]]:
        """(text_hash, text to embed) of chunks with no vector for `model` yet,
        memories first, then commits, then code."""
        out: dict[str, str] = {}
        for each in (kind,) if kind else _KIND_ORDER:
            if len(out) >= limit:
                break
            rows = self._rows(
                "SELECT DISTINCT ON (c.text_hash) c.text_hash, c.kind, c.title, c.text FROM chunks c "
                f"WHERE c.kind = %s AND {sql.scope('c')} AND NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.model = %s AND e.text_hash = c.text_hash) ORDER BY c.text_hash LIMIT %s",
                (each, *self._scope, model, limit - len(out)),
            )
            for hash_, chunk_kind, title, text in rows:
                out.setdefault(hash_, embedding_text(chunk_kind, title, text))
        return list(out.items())[:limit]

    def count_pending(self, model: str, kind: str | None = None, cap: int | None = None) -> int:
        """Distinct chunk texts without a vector for `model` (counting stops at `cap`)."""
        if cap is None and self.all_embedded(model):
            return 0
        row = self._one(
            "SELECT count(*) FROM (SELECT DISTINCT c.text_hash FROM chunks c "
            f"WHERE {sql.scope('c')} AND (%s::text IS NULL OR c.kind = %s) AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = c.text_hash)"
            f"{' LIMIT %s' if cap is not None else ''}) t",
            (*self._scope, kind, kind, model, *((cap,) if cap is not None else ())),
        )
        return int(row[0]) if row else 0

    def all_embedded(self, model: str) -> bool:
        """True when nothing changed since every chunk had a vector (no scan needed)."""
        return self.get_meta(f"embedded:{model}") == str(self.vectors_version())

    def mark_all_embedded(self, model: str) -> None:
        # The version is read before the check: a chunk committed after it
        # moves the version on, so it is never covered by this mark.
        version = self.vectors_version()
        if not self.count_pending(model, cap=1):
            self.set_meta(f"embedded:{model}", str(version))

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors, shared by every project (a hash stored already is kept)."""
        import numpy as np

        data = np.asarray(vectors, dtype=np.float32)
        order = sorted(range(len(hashes)), key=lambda i: hashes[i])  # one lock order for everyone
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings(model, text_hash, dim, vector) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (model, text_hash) DO NOTHING",
                [(model, hashes[i], int(data.shape[1]), data[i]) for i in order],
            )

    def drop_embeddings(self, keep_model: str | None) -> int:
        """Forget vectors of other models that no other clone still uses."""
        return self._exec(
            "DELETE FROM embeddings e WHERE e.model IS DISTINCT FROM %s AND NOT EXISTS "
            "(SELECT 1 FROM meta WHERE key = 'embed_model' AND value = e.model AND clone_id <> %s)",
            (keep_model, self.clone_id),
        )

    def count_embeddings(self, model: str) -> int:
        row = self._one(
            "SELECT count(*) FROM embeddings e WHERE e.model = %s AND EXISTS "
            f"(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash AND {sql.scope('c')})",
            (model, *self._scope),
        )
        return int(row[0]) if row else 0

    def dump_embeddings(self, model: str) -> Iterator[tuple[str, np.ndarray]]:
        import numpy as np

        rows = self._rows(
            "SELECT e.text_hash, e.vector FROM embeddings e WHERE e.model = %s AND EXISTS "
            f"(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash AND {sql.scope('c')}) "
            'ORDER BY e.text_hash COLLATE "C"',
            (model, *self._scope),
        )
        for text_hash_, vector in rows:
            values = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
            yield text_hash_, np.asarray(values, dtype=np.float32)

    # -- commits ----------------------------------------------------------------------------------

    def put_commit(self, file_id: int, commit: CommitRecord) -> None:
        self._exec(
            "INSERT INTO commits(file_id, sha, author, email, date, subject, body, files, head_files, "
            "n_files, is_merge, ts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                file_id,
                commit.sha,
                _clean(commit.author),
                _clean(commit.email),
                commit.date,
                _clean(commit.subject),
                _clean(commit.body),
                json.dumps(commit.files),
                json.dumps(commit.head_files),
                commit.n_files or len(commit.files),
                commit.is_merge,
                sql.epoch(commit.date),
            ),
        )

    def prune_commits(self, keep: int) -> int:
        """Drop all but the `keep` newest commits of this clone."""
        with self._writing() as conn:
            gone = conn.execute(
                "DELETE FROM files WHERE id IN (SELECT x.file_id FROM commits x JOIN files f ON "
                "f.id = x.file_id WHERE f.clone_id = %s ORDER BY x.ts DESC OFFSET %s) RETURNING path",
                (self.clone_id, keep),
            ).fetchall()
            if gone:
                conn.execute(
                    "DELETE FROM clone_files WHERE clone_id = %s AND path = ANY(%s)",
                    (self.clone_id, [g[0] for g in gone]),
                )
                self._changed("commit", False)
            return len(gone)

    def remap_commit_paths(self, mapping: dict[str, str | None]) -> int:
        """Point stored commits' HEAD paths at their new names (None: gone)."""
        if not mapping:
            return 0
        changed = 0
        with self._writing() as conn:
            rows = conn.execute(
                "SELECT x.file_id, x.head_files FROM commits x JOIN files f ON f.id = x.file_id "
                "WHERE f.clone_id = %s",
                (self.clone_id,),
            ).fetchall()
            for file_id, paths in rows:
                moved = [mapping.get(p, p) if p is not None else None for p in paths]
                if moved != paths:
                    conn.execute(
                        "UPDATE commits SET head_files = %s WHERE file_id = %s", (json.dumps(moved), file_id)
                    )
                    changed += 1
        return changed

    def commits_touching(self, head_path: str, limit: int = 20) -> list[CommitRecord]:
        rows = self._rows(
            f"SELECT {sql.COMMIT_COLUMNS} FROM commits m JOIN files f ON f.id = m.file_id "
            "WHERE f.clone_id = %s AND m.head_files @> %s::jsonb ORDER BY m.ts DESC LIMIT %s",
            (self.clone_id, json.dumps([head_path]), limit),
        )
        return [_commit(row, 0) for row in rows]

    # -- anchors (this clone's code) --------------------------------------------------------------

    def replace_anchors(self, memory_id: str, anchors: Sequence[AnchorRecord]) -> None:
        with self._writing() as conn:
            conn.execute(
                "DELETE FROM anchors WHERE clone_id = %s AND memory_id = %s", (self.clone_id, memory_id)
            )
            for a in anchors:
                conn.execute(
                    "INSERT INTO anchors(clone_id, memory_id, path, symbol, start_line, end_line, code_hash, "
                    "named_path) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (clone_id, memory_id, path, symbol) DO UPDATE SET "
                    "start_line = excluded.start_line, end_line = excluded.end_line, "
                    "code_hash = excluded.code_hash, named_path = excluded.named_path, "
                    "stale_reason = NULL, stale_commit = NULL",
                    (
                        self.clone_id,
                        a.memory_id,
                        a.path,
                        a.symbol,
                        a.start_line,
                        a.end_line,
                        a.code_hash,
                        a.named_path,
                    ),
                )

    def anchors(
        self, *, memory_id: str | None = None, path: str | None = None, fresh_only: bool = False
    ) -> list[AnchorRecord]:
        clauses: list[str] = ["clone_id = %s"]
        params: list[Any] = [self.clone_id]
        if memory_id is not None:
            clauses.append("memory_id = %s")
            params.append(memory_id)
        if path is not None:
            clauses.append("path = %s")
            params.append(path)
        if fresh_only:
            clauses.append("stale_reason IS NULL")
        rows = self._rows(
            "SELECT memory_id, path, symbol, start_line, end_line, code_hash, named_path, stale_reason "
            f'FROM anchors WHERE {" AND ".join(clauses)} ORDER BY path COLLATE "C", memory_id, symbol',
            params,
        )
        return [AnchorRecord(*row) for row in rows]

    def move_anchors(self, old_path: str, new_path: str) -> None:
        with self._writing() as conn:
            conn.execute(  # as SQLite's UPDATE OR REPLACE: the moved anchor wins
                "DELETE FROM anchors a WHERE a.clone_id = %s AND a.path = %s AND EXISTS (SELECT 1 FROM "
                "anchors b WHERE b.clone_id = a.clone_id AND b.path = %s AND b.memory_id = a.memory_id "
                "AND b.symbol IS NOT DISTINCT FROM a.symbol)",
                (self.clone_id, new_path, old_path),
            )
            conn.execute(
                "UPDATE anchors SET path = %s WHERE clone_id = %s AND path = %s",
                (new_path, self.clone_id, old_path),
            )

    def mark_stale(self, anchor: AnchorRecord, reason: str, commit: str | None) -> None:
        self._exec(
            "UPDATE anchors SET stale_reason = %s, stale_commit = %s WHERE clone_id = %s AND memory_id = %s "
            "AND path = %s AND symbol IS NOT DISTINCT FROM %s",
            (reason, commit, self.clone_id, anchor.memory_id, anchor.path, anchor.symbol),
        )

    def stale_reasons(self, memory_ids: Sequence[str] | None = None) -> dict[str, list[str]]:
        if memory_ids is not None and not memory_ids:
            return {}
        query = "SELECT memory_id, stale_reason FROM anchors WHERE clone_id = %s AND stale_reason IS NOT NULL"
        params: list[Any] = [self.clone_id]
        if memory_ids is not None:
            query += " AND memory_id = ANY(%s)"
            params.append(list(memory_ids))
        out: dict[str, list[str]] = {}
        for memory_id, reason in self._rows(query + ' ORDER BY path COLLATE "C"', params):
            out.setdefault(memory_id, []).append(reason)
        return out

    # -- access statistics (the project's, shared by its clones) ------------------------------------

    def access_stats(self) -> dict[str, tuple[int, str]]:
        rows = self._rows(
            "SELECT memory_id, count, last_accessed FROM access WHERE project_id = %s", (self.project_id,)
        )
        return {r[0]: (int(r[1]), r[2]) for r in rows}

    def record_access(self, memory_ids: Sequence[str], when: str) -> None:
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO access(project_id, memory_id, count, last_accessed) VALUES (%s, %s, 1, %s) "
                "ON CONFLICT (project_id, memory_id) DO UPDATE SET count = access.count + 1, "
                "last_accessed = excluded.last_accessed",
                [(self.project_id, mid, when) for mid in sorted(set(memory_ids))],
            )

    def set_access(self, stats: dict[str, tuple[int, str]]) -> None:
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO access(project_id, memory_id, count, last_accessed) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (project_id, memory_id) DO UPDATE SET count = excluded.count, "
                "last_accessed = excluded.last_accessed",
                [(self.project_id, mid, count, when) for mid, (count, when) in sorted(stats.items())],
            )

    # -- the database (lore db status, lore db projects) ------------------------------------------------

    def status_report(self) -> dict[str, Any]:
        """003's index status of every clone of this project, and the schema version."""
        with self._pool.connection() as conn:
            version = schema_version(conn)
        clones = self._rows(
            "SELECT c.id, c.host, c.repo_path, c.db_user, c.last_seen_at FROM clones c "
            "WHERE c.project_id = %s ORDER BY c.id",
            (self.project_id,),
        )
        status = self._rows(
            "SELECT s.clone_id, s.kind, s.status, s.last_indexed_at, s.last_commit_hash, s.error_message, "
            "(SELECT count(*) FROM clone_files cf WHERE cf.clone_id = s.clone_id AND cf.kind = s.kind) "
            "FROM index_status s JOIN clones c ON c.id = s.clone_id WHERE c.project_id = %s "
            "ORDER BY s.clone_id, s.kind",
            (self.project_id,),
        )
        sources: dict[int, list[dict[str, Any]]] = {}
        for clone_id, kind, state, when, commit, error, files in status:
            sources.setdefault(clone_id, []).append(
                {
                    "kind": kind,
                    "status": state,
                    "last_indexed_at": when.isoformat(timespec="seconds") if when else None,
                    "last_commit_hash": commit,
                    "error_message": error,
                    "total_files": int(files),
                }
            )
        return {
            "backend": "postgres",
            "database": connection.redact(self.url),
            "schema_version": version,
            "schema_version_expected": SCHEMA_VERSION,
            "user": self.role,
            "project": {"id": self.project_id, "name": self.who.name, "remote_url": self.who.remote_url},
            "clone_id": self.clone_id,
            "clones": [
                {
                    "id": cid,
                    "host": host,
                    "repo_path": path,
                    "db_user": user,
                    "last_seen_at": seen.isoformat(timespec="seconds"),
                    "sources": sources.get(cid, []),
                }
                for cid, host, path, user, seen in clones
            ],
        }

    def projects(self) -> list[dict[str, Any]]:
        """Every project of the database: id, name, remote, clones, memories (shared, global)."""
        rows = self._rows(
            "SELECT p.id, p.name, p.remote_url, (SELECT count(*) FROM clones c WHERE c.project_id = p.id), "
            "(SELECT count(*) FROM memories m WHERE m.project_id = p.id AND m.clone_id IS NULL), "
            "(SELECT count(*) FROM memories m WHERE m.project_id = p.id AND m.is_global) "
            'FROM projects p ORDER BY p.name COLLATE "C", p.id'
        )
        return [
            {
                "id": r[0],
                "name": r[1],
                "remote_url": r[2],
                "clones": int(r[3]),
                "memories": int(r[4]),
                "global_memories": int(r[5]),
                "current": r[0] == self.project_id,
            }
            for r in rows
        ]

    # -- export -----------------------------------------------------------------------------------------

    def dump_files(self, kind: str) -> Iterator[FileDump]:
        """This clone's view of `kind`: the rows it searches, with its own stat
        of each file when its copy is the one indexed (else 0, so the next sync
        re-reads the file), and its files that failed to parse."""
        rows = self._rows(
            "SELECT * FROM (SELECT f.id, f.path, f.sha256, coalesce(cf.mtime_ns, 0), coalesce(cf.size, 0), "
            "f.role FROM files f LEFT JOIN clone_files cf ON cf.clone_id = %s AND cf.path = f.path "
            f"AND cf.sha256 = f.sha256 WHERE {sql.scope('f')} AND f.kind = %s "
            "UNION ALL SELECT 0, path, sha256, mtime_ns, size, NULL FROM clone_files cf "
            "WHERE cf.clone_id = %s AND cf.kind = %s AND cf.error IS NOT NULL) t(id, path) "
            'ORDER BY t.path COLLATE "C"',
            (self.clone_id, *self._scope, kind, self.clone_id, kind),
        )
        errors = dict(self.file_errors(kind))
        for file_id, path, sha, mtime_ns, size, role in rows:
            dump = FileDump(path, kind, sha, int(mtime_ns), int(size), None, role)
            if not file_id:
                dump.error = errors.get(path)
                yield dump
                continue
            where = "JOIN files f ON f.id = m.file_id WHERE m.file_id = %s"
            if kind == "memory":
                found = self._one(
                    f"SELECT {sql.MEMORY_COLUMNS.format(path='f.path')} FROM memories m {where}", (file_id,)
                )
                dump.memory = _memory(found) if found else None
            elif kind == "commit":
                found = self._one(f"SELECT {sql.COMMIT_COLUMNS} FROM commits m {where}", (file_id,))
                dump.commit = _commit(found, 0) if found else None
            dump.chunks = [
                ChunkInput(*row)
                for row in self._rows(
                    "SELECT text, start_line, end_line, section, symbol, language, title, keywords "
                    "FROM chunks WHERE file_id = %s ORDER BY ord",
                    (file_id,),
                )
            ]
            yield dump


# -- SQL building --------------------------------------------------------------------------------------


def _joins(kind: str) -> str:
    join = "JOIN files f ON f.id = c.file_id"
    if kind == "memory":
        return f"{join} JOIN memories m ON m.file_id = c.file_id"
    if kind == "commit":
        return f"{join} JOIN commits m ON m.file_id = c.file_id"
    return join


def _from(kind: str) -> str:
    return f"FROM chunks c {_joins(kind)}"


def _clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL characters."""
    return text.replace("\x00", "\ufffd") if text and "\x00" in text else text


# -- rows to records --------------------------------------------------------------------------------------


def _chunk(kind: str, row: Sequence[Any]) -> ChunkRecord:
    chunk = ChunkRecord(
        chunk_id=int(row[0]),
        kind=row[1],
        path=row[2],
        section=row[3],
        symbol=row[4],
        language=row[5],
        start_line=row[6],
        end_line=row[7],
        title=row[8],
        keywords=row[9],
        text=row[10],
        role=row[11],
    )
    if kind == "memory" and len(row) > 12:
        chunk.memory = _memory(row[12:])
    elif kind == "commit" and len(row) > 12:
        chunk.commit = _commit(row, 12)
    return chunk


def _memory(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        title=row[1],
        type=row[2],
        sector=row[3],
        tags=list(row[4]),
        applies_to=row[5],
        agent=row[6],
        task=row[7],
        project=row[8],
        visibility=row[9],
        storage=row[10],
        occurred_at=row[11],
        content_hash=row[12],
        confidence=float(row[13]),
        files=list(row[14]),
        summary=row[15],
        body_line=row[16],
        evidence_count=row[17],
        owner=row[18],
        path=row[19],
        is_global=bool(row[20]),
    )


def _commit(row: Sequence[Any], at: int) -> CommitRecord:
    r = row[at:]
    return CommitRecord(
        sha=r[0],
        author=r[1],
        email=r[2],
        date=r[3],
        subject=r[4],
        body=r[5],
        files=list(r[6]),
        head_files=list(r[7]),
        n_files=r[8],
        is_merge=bool(r[9]),
    )
