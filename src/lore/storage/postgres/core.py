"""The core every part of the PostgreSQL store builds on: one clone of one
project, its connections, transactions, locks, index status and meta.

A store is one clone of one project (see :mod:`.identity`) and sees:

- the project's committed memories, whichever clone synced them, and its own
  local memories, code and history (``scope`` in :mod:`.sql`);
- with ``MemoryFilter.include_global``, the global memories of other projects;
- only the rows row-level security lets its database role read.

Concurrency: a write transaction takes this clone's advisory lock (like
SQLite's BEGIN IMMEDIATE on one file), and the project's lock before it
touches rows every clone shares; always in that order, so Lore writers
cannot deadlock each other. Statements outside a transaction are retried on
serialization failures and deadlocks.

The Store protocol's methods live in one mixin per concern (files, memories,
search, vectors, commits, anchors, reports), each a subclass of
:class:`StoreCore`; :class:`~lore.storage.postgres.store.PostgresStore`
puts them together.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from lore.errors import StorageError, postgres_failure
from lore.storage.base import AnyFilter
from lore.storage.postgres import connection, convert, sql
from lore.storage.postgres.identity import ProjectIdentity
from lore.storage.postgres.migrations import SCHEMA_VERSION, schema_version

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

DEFAULT_TEXT_SEARCH = "lore_porter"
_RETRIES = 5
_T = TypeVar("_T")
_INDEXING_EVERY = 5.0  # seconds between 'indexing' status writes of one store


_SHARED_LOCAL_TIERS = (".lore/local/session/", ".lore/local/daily/", ".lore/local/archive/")


def _without_nul(params: Sequence[Any]) -> Sequence[Any]:
    """Parameters whose text has NUL characters replaced as stored text's are
    (:func:`.convert.clean`): PostgreSQL text cannot hold them, and a lookup by
    an id, path or tag with one (from MCP or the HTTP API) is a lookup that
    finds nothing, as on SQLite, not an index error."""

    def has_nul(value: Any) -> bool:
        if isinstance(value, list):
            return any(has_nul(v) for v in value)
        return isinstance(value, str) and "\x00" in value

    def clean(value: Any) -> Any:
        if isinstance(value, list):
            return [clean(v) for v in value]
        return convert.clean(value) if isinstance(value, str) else value

    return tuple(clean(p) for p in params) if any(has_nul(p) for p in params) else params


def is_local_memory(path: str) -> bool:
    """A memory file that lives in one clone only (git-ignored: private or session)."""
    return path.startswith(".lore/local/")


def is_shared_local_memory(path: str) -> bool:
    """A local memory in the clone's shared tiers (``.lore/local/{session,daily,archive}/``),
    not in an agent's private folder."""
    return path.startswith(_SHARED_LOCAL_TIERS)


class StoreCore:
    """Connections, transactions and locks of one clone; index state (meta, status)."""

    def __init__(
        self,
        url: str,
        identity: ProjectIdentity,
        *,
        text_search: str = DEFAULT_TEXT_SEARCH,
        acting_role: str | None = None,
    ):
        """Args:
        acting_role: the database role this store acts as (``SET ROLE``) instead
            of the URL's user: a team server's store for one of its users
            (`lore serve --users`). Several roles then share one clone, so the
            clone's shared local tiers belong to all of them (see :meth:`_owner_of`).
        """
        self.url = url
        self.acting_role = acting_role
        self.who = identity
        self.text_search = text_search
        self.notices: list[str] = []
        # The Store protocol's hook for a rebuilt index: a shared database is never
        # rebuilt behind its users' backs (see repair), so it is never called.
        self.on_rebuild: Callable[[], None] | None = None
        self._tx: psycopg.Connection[Any] | None = None
        self._depth = 0
        self._lock_wait: str | None = None  # lock_timeout of the transactions begun now (waiting_at_most)
        self._dirty: set[str] = set()
        self._kinds: set[str] = set()
        self._project_locked = False
        self._indexing_marked: dict[str, float] = {}
        self._tsqueries: dict[str, str] = {}
        self._estimates: dict[str, tuple[float, int]] = {}  # key: (when read, planner's row estimate)
        self._check_schema()
        self.project_id = identity.id
        self.clone_id, self.role = self._register()

    @property
    def _pool(self) -> ConnectionPool:
        """The process's pool for this URL and role (looked up each time: a closed pool is replaced)."""
        return connection.pool(self.url, self.acting_role)

    def _owner_of(self, path: str) -> str:
        """The ``owner_role`` of a memory file's rows: this role for a clone's local
        memories, '' (shared) for committed ones. A store acting for one user of a
        team server shares the clone's shared local tiers with the server's other
        users (an agent's private folder stays its role's own)."""
        if not is_local_memory(path):
            return ""
        if self.acting_role is not None and is_shared_local_memory(path):
            return ""
        return self.role

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        if self._tx is not None:
            yield self._tx
            return
        with self._pool.connection() as conn:
            yield conn

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        params = _without_nul(params)
        return self._run(lambda conn: conn.execute(query, params).fetchall())

    def _one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        params = _without_nul(params)
        return self._run(lambda conn: conn.execute(query, params).fetchone())

    def _exec(self, query: str, params: Sequence[Any] = ()) -> int:
        params = _without_nul(params)
        return self._run(lambda conn: conn.execute(query, params).rowcount)

    def _run(self, work: Callable[[psycopg.Connection[Any]], _T]) -> _T:
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
                raise postgres_failure(err) from None
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
                if self._lock_wait is not None:  # this transaction's own (is_local): the pool's stays
                    conn.execute("SELECT set_config('lock_timeout', %s, true)", (self._lock_wait,))
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
    def waiting_at_most(self, seconds: float) -> Iterator[None]:
        """Transactions begun in the block wait at most `seconds` for a lock
        (another writer of this clone, a row another transaction holds), then
        fail as busy (``lock_timeout``, 55P03) instead of after 30 s."""
        before, self._lock_wait = self._lock_wait, f"{max(1, round(seconds * 1000))}ms"
        try:
            yield
        finally:
            self._lock_wait = before

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
        self._check_remote()
        return int(row[0]), str(row[1])

    def _check_remote(self) -> None:
        """The project row's remote, read once a process: kept without a token
        (a row an older Lore wrote kept a CI clone's `https://x-access-token:…@`,
        and the projects table has no row-level security), and said when it
        names a repository of another name than this clone's: a template's
        committed `.lore/config.toml` made an unrelated repository share, and
        overwrite, another team's memories without a word."""
        from lore.storage.postgres.identity import normalise_remote, without_credentials

        found = self._one("SELECT remote_url FROM projects WHERE id = %s", (self.who.id,))
        stored = str(found[0]) if found and found[0] else None
        if stored and without_credentials(stored) != stored:
            stored = without_credentials(stored)
            self._exec("UPDATE projects SET remote_url = %s WHERE id = %s", (stored, self.who.id))
        mine = self.who.remote_url
        ours = normalise_remote(mine) if mine else None
        theirs = normalise_remote(stored) if stored else None
        # (A fork is the same repository under another owner: only the names are compared.)
        if ours and theirs and ours.rsplit("/", 1)[-1].lower() != theirs.rsplit("/", 1)[-1].lower():
            self.notices.append(
                f"this clone's remote is {ours}, but project {self.who.id} (its [project] id in "
                f".lore/config.toml) is the repository {theirs}: its memories are shared with that "
                "one; if this is another project (a copied config), remove the [project] id and run "
                "`lore index`"
            )

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

    def repair(self) -> bool:
        """`lore index --force`: check the schema, then recount the BM25 statistics
        of this clone's scope (the project's shared chunks and its own) from the
        chunks; True if they had drifted (now fixed).

        A shared database is never dropped and rebuilt by one clone: other clones
        and people use it. Damage beyond this is for its administrator.
        """
        problem = self.check()
        if problem != "ok":
            raise StorageError(
                f"the PostgreSQL database {connection.redact(self.url)} is not usable ({problem}); "
                "run `lore db upgrade`, or ask its administrator"
            )
        scope = (self.project_id, [0, self.clone_id])
        with self._writing() as conn:
            self._lock_project(conn)
            actual = (
                "SELECT project_id, coalesce(clone_id, 0) AS clone_key, kind, count(*) AS docs, "
                "sum(n_tokens) AS tokens FROM chunks WHERE project_id = %s "
                "AND coalesce(clone_id, 0) = ANY(%s) GROUP BY 1, 2, 3"
            )
            drifted = conn.execute(
                f"SELECT count(*) FROM ({actual}) a FULL JOIN (SELECT * FROM chunk_stats "
                "WHERE project_id = %s AND clone_key = ANY(%s)) s USING (project_id, clone_key, kind) "
                "WHERE coalesce(a.docs, 0) <> coalesce(s.docs, 0) OR coalesce(a.tokens, 0) <> coalesce(s.tokens, 0)",
                (*scope, *scope),
            ).fetchone()
            if not drifted or not drifted[0]:
                return False
            conn.execute("DELETE FROM chunk_stats WHERE project_id = %s AND clone_key = ANY(%s)", scope)
            conn.execute(
                f"INSERT INTO chunk_stats(project_id, clone_key, kind, docs, tokens) {actual}", scope
            )
        self.notices.append("the BM25 statistics of this project had drifted from its chunks; recounted them")
        return True

    def identity(self) -> str:
        row = self._one("SELECT id FROM instance LIMIT 1")
        return f"pg-{row[0] if row else 'unknown'}-{self.clone_id}"

    def reclaim_space(self) -> None:
        """Nothing to do: PostgreSQL's autovacuum reuses and returns free space."""

    def size_bytes(self) -> int:
        """The whole Lore schema (every project of the database)."""
        row = self._one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'lore' AND c.relkind = 'r'"
        )
        return int(row[0]) if row else 0

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

    @property
    def _scope(self) -> tuple[str, int]:
        return (self.project_id, self.clone_id)

    def _chunk_stats(self, kind: str, include_global: bool = False) -> tuple[int, int]:
        """(rows, tokens) of `kind` this clone searches: BM25's N and mean length;
        with `include_global`, other projects' global chunks count too (they are
        searched, so a term's document frequency never exceeds N)."""
        row = self._one(
            "SELECT coalesce(sum(docs), 0), coalesce(sum(tokens), 0) FROM chunk_stats "
            "WHERE project_id = %s AND clone_key IN (0, %s) AND kind = %s",
            (*self._scope, kind),
        )
        docs, tokens = (int(row[0]), int(row[1])) if row else (0, 0)
        if include_global:
            other = self._one(
                "SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks c WHERE c.kind = %s AND c.is_global "
                "AND c.clone_id IS NULL AND c.project_id <> %s",
                (kind, self.project_id),
            )
            if other:
                docs, tokens = docs + int(other[0]), tokens + int(other[1])
        return docs, tokens

    def _where(self, kind: str, flt: AnyFilter | None) -> tuple[str, list[Any]]:
        """`flt` as a WHERE clause for rows of `kind` this clone reads (:func:`.sql.filter_where`)."""
        return sql.filter_where(kind, flt, self.clone_id)
