"""The SQLite backend: `.lore/index.db` (WAL, FTS5), one file per clone.

Every SQL statement of the SQLite index lives in this package. The index is
derived data: an index that can't be read, was written by a newer Lore, or
turns out damaged is rebuilt from the files (with one notice).
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import PAST_LIMITS
from lore.storage.base import (
    KINDS,
    AnchorRecord,
    AnyFilter,
    ChunkFilter,
    ChunkInput,
    ChunkRecord,
    CommitRecord,
    ErrorOccurrence,
    ErrorPattern,
    EvidenceRecord,
    FileDump,
    FileState,
    IndexCounts,
    LinkInput,
    LinkRecord,
    MemoryFilter,
    MemoryRecord,
    MemoryStamp,
    ProposalRecord,
    SourceCounts,
    TierState,
    batched,
    directory_globs,
    embedding_text,
    filter_is_empty,
    text_hash,
)
from lore.storage.sqlite.lexical import frequent_terms, frequent_threshold
from lore.storage.sqlite.lexical import plan as lexical_plan
from lore.storage.sqlite.migrations import FTS_KINDS, MIGRATIONS, SCHEMA_VERSION
from lore.storage.sqlite.recordcache import RecordCache
from lore.storage.sqlite.termlists import spelled

if TYPE_CHECKING:
    import numpy as np

    from lore.storage.sqlite.termlists import TermRanking
    from lore.storage.sqlite.vectors import VectorSet

FTS_TABLES = {kind: table for table, kind in FTS_KINDS.items()}
# BM25 column weights (title, keywords, text) per kind.
_WEIGHTS = {"memory": (4.0, 2.0, 1.0), "code": (4.0, 1.0, 1.0), "commit": (4.0, 1.0, 1.0)}


# A filtered vector search checks its nearest chunks against the filter in
# about the time reading this many rows' filter outcome takes (see _allowed_rows).
_ROWS_PER_CHECK = 500
# Filters whose masks (or counts) a store keeps at most.
_MASKS = 32


def _weights_sql(kind: str) -> str:
    return ", ".join(str(w) for w in _WEIGHTS[kind])


_PROPOSAL_COLUMNS = (
    "id, kind, status, title, reason, confidence, evidence, memory_ids, changes, created_at, updated_at"
)
_MEMORY_COLUMNS = (
    "m.id, m.title, m.type, m.sector, m.tags, m.applies_to, m.agent, m.task, m.project, m.visibility, "
    "m.storage, m.occurred_at, m.content_hash, m.confidence, m.files, m.summary, m.body_line, "
    # The file's own count plus evidence not written into the file yet.
    "m.evidence_count + (SELECT count(*) FROM evidence e WHERE e.memory_id = m.id AND e.folded = 0), "
    "m.owner, m.superseded_by, f.path, m.is_global, m.source"
)
_COMMIT_COLUMNS = (
    "m.sha, m.author, m.email, m.date, m.subject, m.body, m.files, m.head_files, m.n_files, m.is_merge"
)
_CHUNK_COLUMNS = (
    "c.id, c.kind, f.path, c.section, c.symbol, c.language, c.start_line, c.end_line, c.title, "
    "c.keywords, c.text, f.role"
)
_ORDERS = {"recent": "m.occurred_at DESC", "path": "f.path", "oldest": "m.occurred_at"}
# Store.memory_page's sort keys (storage.base.MEMORY_SORTS) as SQL.
_PAGE_SORTS = {
    "occurred_at": "m.occurred_at",
    "title": "m.title COLLATE NOCASE",
    "type": "m.type",
    "agent": "coalesce(m.agent, '')",
    "path": "f.path",
    "confidence": "m.confidence",
}
_STALE = "m.id IN (SELECT memory_id FROM anchors WHERE stale_reason IS NOT NULL)"
_GROUP_COLUMNS = ("type", "sector", "visibility", "storage", "agent")
_MMAP_BYTES = 1 << 30
_MAX_IN = 900  # SQLite's host-parameter limit is 999 on old builds


def _healing(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a store method; if the index turns out damaged, rebuild it (once)
    and run the method again on the fresh index (see :meth:`SQLiteStore._heal`)."""

    @functools.wraps(method)
    def run(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as err:
            if not is_damage(err):
                raise
            self._heal(err)
            return method(self, *args, **kwargs)

    return run


class SQLiteStore:
    """One connection to `.lore/index.db`. Not shared across threads.

    Self-healing: an index that can't be read, was written by a newer Lore,
    or turns out damaged (on open, or at the first query that fails because
    of it) is rebuilt from the files once per process, with one notice.
    ``on_rebuild`` (set by the service) refills it from the Markdown files
    before the failed read is run again.
    """

    def __init__(self, path: Path):
        self.path = path
        self.notices: list[str] = []
        self.on_rebuild: Callable[[], None] | None = None
        self._in_transaction = 0
        self._healed = False
        self._noted_dimensions = False
        # Kinds whose vectors this store changed since it last read their matrix:
        # read again at once (another process's changes may wait STALE_SECONDS).
        self._wrote_vectors: set[str] = set()
        self._records = RecordCache()
        self.db = self._open()

    def describe(self) -> str:
        return f"sqlite:{self.path}"

    # -- opening, migrating, recovering ---------------------------------------------

    def _open(self) -> sqlite3.Connection:
        for suffix in ("", "-wal", "-shm"):
            if os.path.isdir(f"{self.path}{suffix}"):  # not damage to repair: something of the user's
                from lore.errors import StorageError

                raise StorageError(
                    f"{self.path}{suffix} is a folder, not Lore's index; move it out of the way "
                    "(the index is rebuilt from the files)"
                )
        db = None
        try:
            db = _connect_beside_orphans(self.path)
            version = _schema_version(db)
            if version > SCHEMA_VERSION:
                db.close()
                return self._rebuild("was written by a newer Lore")
            if version < SCHEMA_VERSION and _migrate(db) and version:
                _reclaim(db)
            _probe(db)
            return db
        except sqlite3.DatabaseError as err:
            if not is_damage(err):
                raise
            if db is not None:
                db.close()
            return self._rebuild(f"could not be read ({err})")

    def _rebuild(self, why: str) -> sqlite3.Connection:
        """A fresh, empty index in place of a damaged one (the files refill it)."""
        if not os.access(self.path.parent, os.W_OK):
            from lore.errors import PermissionDenied

            raise PermissionDenied(
                f"index {self.path} {why}, and its folder is read-only so it can't be "
                "rebuilt; make .lore/ writable, then run `lore index`"
            )
        self.notices.append(f"index {self.path.name} {why}; rebuilding it from the files")
        self._records.clear()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass
        db = _connect(self.path)
        _migrate(db)
        return db

    def _heal(self, err: sqlite3.DatabaseError) -> None:
        """The index is damaged: rebuild it once and refill it from the files.

        Inside a transaction the write in flight can't be replayed, so the
        index is rebuilt and the caller gets a one-line IndexCorrupt.
        """
        from lore.errors import IndexCorrupt

        if self._healed:
            raise IndexCorrupt(f"index {self.path} is damaged again ({err}); delete it and run `lore index`")
        self._healed = True
        try:
            self.db.close()
        except sqlite3.Error:
            pass
        self.db = self._rebuild(f"was damaged ({err})")
        if self._in_transaction:
            raise IndexCorrupt(
                f"index {self.path.name} was damaged ({err}) and has been rebuilt from the "
                "files; run the command again"
            )
        if self.on_rebuild is not None:
            self.on_rebuild()

    def close(self) -> None:
        self._records.release()
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction; taken IMMEDIATE so concurrent writers queue
        on busy_timeout instead of failing half way."""
        self.db.execute("BEGIN IMMEDIATE")
        self._in_transaction += 1
        try:
            yield
        except BaseException as err:
            self._in_transaction -= 1
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(err, sqlite3.DatabaseError) and is_damage(err) and not self._healed:
                self._heal(err)
            raise
        self._in_transaction -= 1
        self.db.execute("COMMIT")

    @contextmanager
    def waiting_at_most(self, seconds: float) -> Iterator[None]:
        """Statements in the block wait at most `seconds` for another process's
        write lock, then fail as busy ("database is locked"), instead of after 30 s."""
        before = int(self.db.execute("PRAGMA busy_timeout").fetchone()[0])
        self.db.execute(f"PRAGMA busy_timeout = {min(before, max(0, round(seconds * 1000)))}")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {before}")

    def check(self) -> str:
        """'ok', or what is wrong with the database and its full-text indexes.

        Raises the database's error when the index cannot be checked now (another
        process writing it, a read-only file): that is no damage, and rebuilding
        the file under its writer would lose the writer's work."""
        try:
            result = self.db.execute("PRAGMA quick_check").fetchone()[0]
            for table in FTS_TABLES.values():
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            return str(result)
        except sqlite3.DatabaseError as err:
            if not is_damage(err):
                raise
            return str(err)

    def repair(self) -> bool:
        """Check the whole file (slow: reads every page) and rebuild it if it is
        damaged; True if it was. `lore index --force` runs this."""
        problem = self.check()
        if problem == "ok":
            return False
        self.db.close()
        self.db = self._rebuild(f"failed its check ({problem})")
        return True

    def identity(self) -> str:
        """A random id of this index file: a rebuilt index starts its version
        counters again, and caches must not mistake it for the old one."""
        found = self.get_meta("index_id")
        if found is None:
            with self.transaction():
                self.db.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', ?)", (uuid.uuid4().hex,)
                )
            found = self.get_meta("index_id")
        assert found is not None
        return found

    def size_bytes(self) -> int:
        return sum(
            os.path.getsize(f"{self.path}{s}")
            for s in ("", "-wal", "-shm")
            if os.path.exists(f"{self.path}{s}")
        )

    def reclaim_space(self) -> None:
        """Give free pages back to the disk when they are a quarter of the file
        or more: after files were removed (a 60 MB file indexed, then deleted,
        left the index at its size for ever). Best effort, outside a write."""
        if not self._in_transaction:
            _reclaim(self.db)

    # -- index state ---------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def vectors_version(self) -> int:
        """Changes only when chunks or vectors do (not on access stats or meta),
        so cached matrices survive reads."""
        return int(self.get_meta("vectors_version", "0") or 0)

    def _vectors_changed(self) -> None:
        self._wrote_vectors.update(KINDS)
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES ('vectors_version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = value + 1"
        )

    def counts(self) -> IndexCounts:
        def one(sql: str) -> int:
            return int(self.db.execute(sql).fetchone()[0])

        return IndexCounts(
            memories=one("SELECT count(*) FROM memories"),
            memory_files_with_errors=one(
                "SELECT count(*) FROM files WHERE kind='memory' AND error IS NOT NULL"
            ),
            chunks=one("SELECT count(*) FROM chunks"),
            memory_chunks=one("SELECT count(*) FROM chunks WHERE kind='memory'"),
            code_files=one("SELECT count(*) FROM files WHERE kind='code'"),
            code_chunks=one("SELECT count(*) FROM chunks WHERE kind='code'"),
            commits=one("SELECT count(*) FROM commits"),
        )

    def source_counts(self, model: str | None, memories: MemoryFilter | None = None) -> list[SourceCounts]:
        found: dict[str, SourceCounts] = {}
        for kind, files, failed, last in self.db.execute(
            "SELECT kind, count(*), sum(error IS NOT NULL), max(indexed_at) FROM files GROUP BY kind"
        ):
            found[kind] = SourceCounts(kind, files, failed or 0, last_indexed_at=last)
        for kind, chunks, embedded in self.db.execute(
            "SELECT c.kind, count(*), sum(e.text_hash IS NOT NULL) FROM chunks c "
            "LEFT JOIN embeddings e ON e.model = ? AND e.text_hash = c.text_hash GROUP BY c.kind",
            (model or "",),
        ):
            entry = found.setdefault(kind, SourceCounts(kind))
            entry.chunks, entry.embedded_chunks = chunks, embedded or 0
        if memories is not None:
            found["memory"] = self._memory_source(model, memories)
        return list(found.values())

    def _memory_source(self, model: str | None, flt: MemoryFilter) -> SourceCounts:
        """The memory source as the filter's viewer sees it (parsed memories only)."""
        where, params = _memory_where(flt)
        cond = f"WHERE {where}" if where else ""
        files, last = self.db.execute(
            f"SELECT count(*), max(f.indexed_at) FROM memories m JOIN files f ON f.id = m.file_id {cond}",
            params,
        ).fetchone()
        chunks, embedded = self.db.execute(
            "SELECT count(*), sum(e.text_hash IS NOT NULL) FROM chunks c "
            "JOIN memories m ON m.file_id = c.file_id JOIN files f ON f.id = c.file_id "
            f"LEFT JOIN embeddings e ON e.model = ? AND e.text_hash = c.text_hash {cond}",
            (model or "", *params),
        ).fetchone()
        return SourceCounts("memory", files, 0, chunks, embedded or 0, last)

    def group_counts(self, column: str) -> dict[str, int]:
        if column not in _GROUP_COLUMNS:
            raise ValueError(f"cannot group memories by {column!r}")
        rows = self.db.execute(
            f"SELECT coalesce({column}, ''), count(*) FROM memories GROUP BY 1 ORDER BY 2 DESC"
        )
        return dict(rows.fetchall())

    # -- files -------------------------------------------------------------------------

    def file_states(self, kind: str) -> dict[str, FileState]:
        rows = self.db.execute(
            "SELECT path, id, sha256, mtime_ns, size, error FROM files WHERE kind = ?", (kind,)
        )
        return {row[0]: FileState(*row[1:]) for row in rows}

    def paths(self, kind: str) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT path FROM files WHERE kind = ?", (kind,))}

    def code_files(self, paths: Sequence[str], flt: ChunkFilter | None = None) -> dict[str, str | None]:
        """{path: role} of the code files among `paths` that are indexed and pass
        `flt`. A file with nothing to chunk (an empty file) counts too, unless a
        language is asked for (the one condition on its chunks)."""
        where, params = _chunk_where("code", flt) if flt is not None and not flt.is_empty() else ("", [])
        chunks = "JOIN chunks c ON c.file_id = f.id " if flt is not None and flt.languages else ""
        out: dict[str, str | None] = {}
        for part in batched(list(paths), _MAX_IN):
            sql = (
                f"SELECT DISTINCT f.path, f.role FROM files f {chunks}"
                f"WHERE f.kind = 'code' AND f.path IN (SELECT value FROM json_each(?))"
                f"{' AND ' + where if where else ''}"
            )
            out.update(self.db.execute(sql, (json.dumps(list(part)), *params)).fetchall())
        return out

    def set_roles(self, roles: dict[str, str | None]) -> None:
        """Give indexed code files new roles (after the role rules changed)."""
        self.db.executemany(
            "UPDATE files SET role = ? WHERE kind = 'code' AND path = ?", [(r, p) for p, r in roles.items()]
        )

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
        """Insert or replace a file row, dropping whatever was indexed for it."""
        if self.db.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount:
            self._vectors_changed()
        cur = self.db.execute(
            "INSERT INTO files(path, kind, sha256, mtime_ns, size, error, indexed_at, role) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (path, kind, sha256, mtime_ns, size, error, _now(), role),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def touch_file(self, file_id: int, mtime_ns: int, size: int) -> None:
        self.db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?", (mtime_ns, size, file_id))

    def delete_files(self, paths: Iterable[str]) -> int:
        count = 0
        for path in paths:
            count += self.db.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount
        if count:
            self._vectors_changed()
        return count

    def prune_vectors(self) -> int:
        with self.transaction():
            gone = self.db.execute(
                "DELETE FROM embeddings WHERE NOT EXISTS "
                "(SELECT 1 FROM chunks WHERE chunks.text_hash = embeddings.text_hash)"
            ).rowcount
            if gone:
                self._vectors_changed()
            # Text removed from the index (a commit rewritten out of history, a file
            # deleted) lingers in the keyword index's old segments until they merge:
            # merged now, and the file rebuilt below, so it is gone from the file too.
            for table in FTS_TABLES.values():
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        try:  # the file gives the space back, and holds no removed text (outside a transaction)
            self.db.execute("VACUUM")
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the old pages out of the write-ahead log too
        except sqlite3.OperationalError:  # another process writing meanwhile: SQLite reuses the pages
            pass
        return int(gone)

    def forget_synced(self, paths: Iterable[str]) -> list[str]:
        return []  # one clone's own index: its rows are its files'

    def file_errors(self, kind: str) -> list[tuple[str, str]]:
        rows = self.db.execute(
            "SELECT path, error FROM files WHERE kind = ? AND error IS NOT NULL ORDER BY path", (kind,)
        )
        return [(r[0], r[1]) for r in rows]

    # -- memories -------------------------------------------------------------------------

    def put_memory(self, file_id: int, memory: MemoryRecord) -> None:
        self.db.execute(
            "INSERT INTO memories(file_id, id, title, type, sector, tags, applies_to, agent, task, project, "
            "visibility, storage, occurred_at, content_hash, confidence, files, summary, body_line, "
            "evidence_count, owner, superseded_by, is_global, source) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                file_id,
                memory.id,
                memory.title,
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
                memory.summary,
                memory.body_line,
                memory.evidence_count,
                memory.owner,
                memory.superseded_by,
                int(memory.is_global),
                memory.source,
            ),
        )

    def memories(
        self, flt: MemoryFilter | None = None, *, order: str = "recent", limit: int | None = None
    ) -> list[MemoryRecord]:
        where, params = _memory_where(flt)
        sql = (
            f"SELECT {_MEMORY_COLUMNS} FROM memories m JOIN files f ON f.id = m.file_id "
            f"{'WHERE ' + where if where else ''} ORDER BY {_ORDERS[order]}"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [_memory(row) for row in self.db.execute(sql, params)]

    def memory_page(
        self,
        flt: MemoryFilter,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[int, list[MemoryRecord]]:
        where, params = _memory_where(flt)
        cond = f"WHERE {where}" if where else ""
        order = _page_order(sort, descending)
        select = f"SELECT {_MEMORY_COLUMNS} FROM memories m JOIN files f ON f.id = m.file_id"
        if limit is None:
            records = [_memory(row) for row in self.db.execute(f"{select} {cond} ORDER BY {order}", params)]
            return len(records), records[offset:]
        # Files are joined only when the sort or the filter needs them, so the
        # count and the page's choice can walk an index of `memories` alone.
        join = " JOIN files f ON f.id = m.file_id" if sort == "path" or flt.paths is not None else ""
        total = int(self.db.execute(f"SELECT count(*) FROM memories m{join} {cond}", params).fetchone()[0])
        if not total or offset >= total:
            return total, []
        # The page is chosen over narrow rows first (ids in sort order, through
        # the column's index where there is one); only its rows are read whole,
        # so a deep offset costs an index walk, not a sort of every memory.
        chosen = f"SELECT m.file_id FROM memories m{join} {cond} ORDER BY {order} LIMIT ? OFFSET ?"
        rows = self.db.execute(
            f"{select} WHERE m.file_id IN ({chosen}) ORDER BY {order}", (*params, int(limit), int(offset))
        )
        return total, [_memory(row) for row in rows]

    def memory_stamps(
        self, flt: MemoryFilter, *, sort: str = "occurred_at", descending: bool = True
    ) -> list[MemoryStamp]:
        where, params = _memory_where(flt)
        rows = self.db.execute(
            "SELECT m.id, f.path, m.occurred_at, m.confidence, m.source FROM memories m "
            "JOIN files f ON f.id = m.file_id "
            f"{'WHERE ' + where if where else ''} ORDER BY {_page_order(sort, descending)}",
            params,
        )
        return [MemoryStamp(*row) for row in rows]

    def memory_paths(self, key: str) -> list[str]:
        """Paths of memories whose id is `key`, or starts with it, or whose file stem starts with it."""
        rows = self.db.execute(
            "SELECT f.path FROM memories m JOIN files f ON f.id = m.file_id WHERE m.id = ? ORDER BY f.path",
            (key,),
        ).fetchall()
        if not rows and len(key) >= 4:
            rows = self.db.execute(
                "SELECT f.path FROM memories m JOIN files f ON f.id = m.file_id "
                "WHERE m.id LIKE ? ESCAPE '\\' OR f.path LIKE ? ESCAPE '\\' ORDER BY f.path",
                (_like_prefix(key), "%/" + _like_prefix(key)),
            ).fetchall()
        return [r[0] for r in rows]

    def find_duplicate(self, occurred_at: str, content_hash: str) -> str | None:
        row = self.db.execute(
            "SELECT f.path FROM memories m JOIN files f ON f.id = m.file_id "
            "WHERE m.occurred_at = ? AND m.content_hash = ? LIMIT 1",
            (occurred_at, content_hash),
        ).fetchone()
        return row[0] if row else None

    # -- links between memories -------------------------------------------------------------

    def put_links(self, file_id: int, links: Sequence[LinkInput]) -> None:
        self.db.executemany(
            "INSERT INTO links(file_id, ord, relation, target, target_key, kind, line, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (file_id, i, link.relation, link.target, link.target_key, link.kind, link.line, link.origin)
                for i, link in enumerate(links)
            ],
        )

    def links(
        self,
        flt: MemoryFilter | None = None,
        *,
        target_keys: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
    ) -> list[LinkRecord]:
        where, params = _memory_where(flt)
        clauses = [where] if where else []
        if target_keys is not None:
            clauses.append("l.target_key IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(target_keys)))
        if relations is not None:
            clauses.append("l.relation IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(relations)))
        # "+f.path": sort the links found rather than walk every file (code
        # files too) in path order looking for links: 30 ms -> 0.01 ms at 54k files.
        rows = self.db.execute(
            "SELECT m.id, f.path, m.title, l.relation, l.target, l.target_key, l.kind, l.line, l.origin "
            "FROM links l JOIN files f ON f.id = l.file_id JOIN memories m ON m.file_id = l.file_id "
            f"{'WHERE ' + ' AND '.join(clauses) if clauses else ''} ORDER BY +f.path, l.ord",
            params,
        )
        return [LinkRecord(*row) for row in rows]

    # -- chunks and search -------------------------------------------------------------------

    def put_chunks(self, file_id: int, kind: str, chunks: Sequence[ChunkInput]) -> None:
        self._vectors_changed()
        self.db.executemany(
            "INSERT INTO chunks(file_id, kind, ord, section, symbol, language, start_line, end_line, "
            "title, keywords, text, text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    file_id,
                    kind,
                    i,
                    c.section,
                    c.symbol,
                    c.language,
                    c.start_line,
                    c.end_line,
                    c.title,
                    c.keywords,
                    c.text,
                    text_hash(embedding_text(kind, c.title, c.text)),
                )
                for i, c in enumerate(chunks)
            ],
        )

    def chunks(self, kind: str, ids: Sequence[int], flt: AnyFilter | None = None) -> list[ChunkRecord]:
        """The chunks with these ids that pass `flt` (order not kept).

        Records read before, while the index has not changed, come from the
        process's :class:`~lore.storage.sqlite.recordcache.RecordCache`."""
        self._records.valid_for(self._content_token())
        # Held by what the filter asks of the rows, not how it is spelled: an
        # empty filter (a search's ChunkFilter()) shares the unfiltered records.
        where, params = _filter_where(kind, flt)
        scope = (kind, where, *params)
        out, missing = self._records.split(scope, list(dict.fromkeys(ids)))
        if not missing:
            return out
        read: list[ChunkRecord] = []
        for part in batched(missing, _MAX_IN):
            marks = ",".join("?" * len(part))
            sql = (
                f"SELECT {_select(kind)} {_from(kind)} WHERE c.id IN ({marks})"
                f"{' AND ' + where if where else ''}"
            )
            read += [_chunk(kind, row) for row in self.db.execute(sql, (*part, *params))]
        self._records.keep(scope, missing, read)
        return out + read

    def _content_token(self) -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'content_token'").fetchone()
        return row[0] if row else ""

    def _terms_token(self, table: str) -> str:
        """What changes with every write to `table`'s rows (migration 12)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (f"terms_token:{table}",)).fetchone()
        return row[0] if row else self._content_token()

    def first_chunk(self, path: str) -> ChunkRecord | None:
        row = self.db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
            "ORDER BY c.ord LIMIT 1",
            (path,),
        ).fetchone()
        return _chunk("code", row) if row else None

    def lexical_search(
        self,
        kind: str,
        terms: Sequence[str],
        flt: AnyFilter | None,
        limit: int,
        also: Sequence[int] = (),
    ) -> list[tuple[ChunkRecord, float]]:
        """BM25 over chunks of `kind` matching `terms`; (chunk, score), best first.

        Terms found in a large share of the chunks bring in candidates on
        their own only when the rarer terms (and the chunks holding every
        term) do not fill the limit (see :mod:`lore.storage.sqlite.lexical`).
        The chunks of `also` that the candidates' expressions match but that
        are not among the best `limit` follow those, best first, scored in
        the same pass of FTS5 (a pass of their own would cost as much again).
        """
        if not terms or limit <= 0:
            return []
        self._records.valid_for(self._content_token())
        table = FTS_TABLES[kind]
        self._records.terms.valid_for(table, self._terms_token(table))
        frequent = frequent_terms(self.db, table, terms, self._records.memo)
        ranking = self._records.terms.rank(self.db, table, _weights_sql(kind), terms, frequent)
        if (
            ranking is not None
            and (found := self._from_term_lists(kind, ranking, flt, limit, also)) is not None
        ):
            self._records.terms.answered += 1
            return found
        plan = lexical_plan(self.db, table, terms, self._records.memo)
        wanted = json.dumps(list(dict.fromkeys(also))) if also else None
        best: dict[int, tuple[ChunkRecord, float]] = {}
        extra: dict[int, float] = {}
        for match in plan.first:
            self._merge_ranked(best, extra, kind, match, flt, limit, wanted)
        if len(best) < limit and plan.fallback:
            self._merge_ranked(best, extra, kind, plan.fallback, flt, limit, None)
        return self._then_also(kind, sorted(best.values(), key=lambda hit: -hit[1])[:limit], extra, flt)

    def warm_search(self, most: int | None = None) -> int:
        """Read the keyword lists of each kind's frequent terms, the longest
        first (see :meth:`~lore.storage.sqlite.termlists.TermLists.warm`), at
        most `most` of them: the lists a process reads only once FTS5 has
        scored their rows a few times. Then the first searches rank as later
        ones do. Returns how many were read (0: all are held, or as many as
        their budget allows). Rarer terms' lists are read as queries meet them:
        reading them ahead as well (every term in over 200 rows) doubled the
        time warming takes and gained nothing measurable."""
        self._records.valid_for(self._content_token())
        memo = self._records.memo
        if "warm terms" not in memo:  # (table, weights, term, rows) of every kind, the longest first
            terms = []
            for kind, table in FTS_TABLES.items():
                rows, threshold = frequent_threshold(self.db, table, memo)
                if rows <= threshold:
                    continue
                self.db.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_terms USING fts5vocab(main, {table}, 'row')"
                )
                found = self.db.execute(
                    f"SELECT term, doc FROM temp.{table}_terms WHERE doc > ?", (threshold,)
                )
                # fts5vocab gives FTS5's terms, stems: each is read by a word that stems to it
                terms += [(table, _weights_sql(kind), word, doc) for word, doc in spelled(dict(found))]
            memo["warm terms"] = sorted(terms, key=lambda t: -t[3])
        for table in {t[0] for t in memo["warm terms"]}:
            self._records.terms.valid_for(table, self._terms_token(table))
        return self._records.terms.warm(self.db, memo["warm terms"], (1 << 30) if most is None else most)

    def _then_also(
        self,
        kind: str,
        top: list[tuple[ChunkRecord, float]],
        also: dict[int, float],
        flt: AnyFilter | None,
    ) -> list[tuple[ChunkRecord, float]]:
        """`top`, then the chunks of `also` ({id: score}) not in it that pass `flt`, best first."""
        shown = {chunk.chunk_id for chunk, _ in top}
        rest = {i: score for i, score in also.items() if i not in shown}
        chunks = {c.chunk_id: c for c in self.chunks(kind, list(rest), flt)} if rest else {}
        return top + sorted(((chunks[i], s) for i, s in rest.items() if i in chunks), key=lambda hit: -hit[1])

    def _from_term_lists(
        self, kind: str, ranking: TermRanking, flt: AnyFilter | None, limit: int, also: Sequence[int]
    ) -> list[tuple[ChunkRecord, float]] | None:
        """What :meth:`lexical_search` returns, from the process's term lists;
        None when a selective filter leaves the candidates short (FTS5's
        filtered join finds the rest faster than reading them all)."""
        top = self._best_passing(kind, *ranking.first(), flt, limit)
        if top is not None and len(top) < limit and ranking.split:
            top = self._best_passing(kind, *ranking.every(), flt, limit)
        if top is None:
            return None
        return self._then_also(kind, top, ranking.scores_of(also) if also else {}, flt)

    def _best_passing(
        self, kind: str, ids: np.ndarray, scores: np.ndarray, flt: AnyFilter | None, limit: int
    ) -> list[tuple[ChunkRecord, float]] | None:
        """The best `limit` of `ids` (best first) that pass `flt`: read `limit`,
        then 8 × `limit` more; None when the candidates go on beyond that."""
        out: list[tuple[ChunkRecord, float]] = []
        start = 0
        for size in (limit, 8 * limit):
            part, part_scores = ids[start : start + size].tolist(), scores[start : start + size].tolist()
            found = {c.chunk_id: c for c in self.chunks(kind, part, flt)}
            out += [(found[i], s) for i, s in zip(part, part_scores, strict=True) if i in found]
            start += size
            if len(out) >= limit or start >= len(ids):
                return out[:limit]
        return None

    def _merge_ranked(
        self,
        best: dict[int, tuple[ChunkRecord, float]],
        extra: dict[int, float],
        kind: str,
        match: str,
        flt: AnyFilter | None,
        limit: int,
        wanted: str | None,
    ) -> None:
        """Add :meth:`_ranked` results to `best` (and the scores of the
        `wanted` chunks to `extra`), keeping each chunk's highest score."""
        hits, scores = self._ranked(kind, match, flt, limit, wanted)
        for chunk, score in hits:
            if chunk.chunk_id not in best or score > best[chunk.chunk_id][1]:
                best[chunk.chunk_id] = (chunk, score)
        for chunk_id, score in scores.items():
            extra[chunk_id] = max(score, extra.get(chunk_id, score))

    def _ranked(
        self, kind: str, match: str, flt: AnyFilter | None, limit: int, wanted: str | None = None
    ) -> tuple[list[tuple[ChunkRecord, float]], dict[int, float]]:
        """The `limit` best chunks for the FTS5 expression `match` that pass
        `flt`, and {chunk id: score} of the `wanted` ones (a JSON list) it matches.

        FTS5 ranks its own rows (no join per matching row); the winners' chunks
        are read with the filter, widening once when the filter rejects some,
        and a very selective filter goes straight to a filtered join.
        """
        table, weights = FTS_TABLES[kind], _weights_sql(kind)
        scored = f"SELECT rowid AS id, -bm25({table}, {weights}) AS score FROM {table} WHERE {table} MATCH ?"
        if wanted is None:
            ranked_sql = f"{scored} ORDER BY bm25({table}, {weights}) LIMIT ?"
        else:  # one pass: FTS5 works out each term's document frequency once per statement
            ranked_sql = (
                f"WITH s AS MATERIALIZED ({scored}) "
                "SELECT * FROM (SELECT id, score, 0 FROM s ORDER BY score DESC LIMIT ?) "
                "UNION ALL SELECT id, score, 1 FROM s WHERE id IN (SELECT value FROM json_each(?))"
            )
        want = limit
        scores: dict[int, float] = {}
        for _ in range(2):
            params = (match, want) if wanted is None else (match, want, wanted)
            ranked, scores = [], {}
            for row in self.db.execute(ranked_sql, params):
                if len(row) > 2 and row[2]:
                    scores[int(row[0])] = float(row[1])
                else:
                    ranked.append((int(row[0]), float(row[1])))
            found = {c.chunk_id: c for c in self.chunks(kind, [i for i, _ in ranked], flt)}
            hits = [(found[i], score) for i, score in ranked if i in found]
            if len(hits) >= limit or len(ranked) < want:
                return hits[:limit], scores
            if len(hits) * 8 < len(ranked):
                break
            want *= 8
        where, filters = _filter_where(kind, flt)
        sql = (
            f"SELECT {_select(kind)}, -bm25({table}, {weights}) AS score FROM {table} "
            f"JOIN chunks c ON c.id = {table}.rowid {_joins(kind)} "
            f"WHERE {table} MATCH ? {'AND ' + where if where else ''} "
            f"ORDER BY bm25({table}, {weights}) LIMIT ?"
        )
        rows = self.db.execute(sql, (match, *filters, limit)).fetchall()
        return [(_chunk(kind, row), float(row[-1])) for row in rows], scores

    def vector_search(
        self, kind: str, model: str, query: np.ndarray, flt: AnyFilter | None, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the chunks nearest `query` that pass `flt`, best first.

        Filters are applied inside candidate generation: the nearest chunks
        are checked against the filter in widening rounds, and a selective
        filter falls back to an exact mask of the allowed chunks, so a
        filtered search never comes back short while matching chunks exist.
        """
        vectors = self._vector_set(kind, model, len(query))
        if not len(vectors) or limit <= 0:
            return []
        sims = vectors.similarities(query, limit)  # once: widening only re-ranks
        if flt is None or filter_is_empty(flt):
            return vectors.best(sims, limit)
        rows = self._allowed_rows(kind, model, vectors, flt)
        if rows is not None:
            hits = vectors.best(sims, limit, rows)
            if len(hits) >= limit or len(hits) >= int(rows.sum()):
                return hits
            return vectors.best_exact(query, limit, rows)  # the prefilter's rows fell short
        want = limit * 3 // 2 + 16  # most chunks pass the usual filters (privacy, tiers)
        for _ in range(2):
            top = vectors.best(sims, want)
            allowed = self._passing(kind, [i for i, _ in top], flt)
            hits = [(i, s) for i, s in top if i in allowed]
            if len(hits) >= limit or want >= len(vectors):
                return hits[:limit]
            want *= 8
        return vectors.best_exact(query, limit, vectors.mask(self._all_passing(kind, flt)))

    def vectors_ahead(self, kind: str, model: str) -> Callable[[np.ndarray], None] | None:
        """What works out `kind`'s vector pass for a query ahead, on another
        thread: it touches no connection, only a matrix this process holds
        already (reading one is the searching thread's to do)."""
        from lore.storage.sqlite.vectors import held_vector_set

        path, version, stale_ok = self.path, self.vectors_version(), kind not in self._wrote_vectors

        def ahead(query: np.ndarray) -> None:
            vectors = held_vector_set(path, kind, model, version, len(query), stale_ok=stale_ok)
            if vectors is not None:
                vectors.ahead(query)

        return ahead

    def vector_count(self, kind: str, model: str) -> int:
        return int(
            self.db.execute(
                "SELECT count(*) FROM chunks c WHERE c.kind = ? AND EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = c.text_hash)",
                (kind, model),
            ).fetchone()[0]
        )

    def vector_scores(
        self, kind: str, model: str, query: np.ndarray, chunk_ids: Sequence[int]
    ) -> dict[int, float]:
        """{chunk id: cosine with `query`} of the given chunks that have a vector."""
        if not chunk_ids:
            return {}
        return self._vector_set(kind, model, len(query)).cosines(query, chunk_ids)

    def _vector_set(self, kind: str, model: str, dim: int) -> VectorSet:
        from lore.storage.sqlite.vectors import vector_set

        found = vector_set(
            self.path,
            self.identity(),
            kind,
            model,
            self.vectors_version(),
            lambda: self._vector_rows(kind, model),
            dim,
            stale_ok=kind not in self._wrote_vectors,
        )
        self._wrote_vectors.discard(kind)
        if (found.skipped or found.damaged) and not self._noted_dimensions:
            self._noted_dimensions = True
            what = []
            if found.skipped:
                what.append(
                    f"{found.skipped} vectors of {model} have another dimension than the query's ({dim})"
                )
            if found.damaged:
                what.append(f"{found.damaged} vectors of {model} hold values that are not numbers (damage)")
            self.notices.append(
                f"{' and '.join(what)}, so vector search leaves them out; run `lore index --reembed`"
            )
        return found

    def _vector_rows(self, kind: str, model: str) -> list[tuple[int, bytes]]:
        return self.db.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.model = ? AND e.text_hash = c.text_hash "
            "WHERE c.kind = ?",
            (model, kind),
        ).fetchall()

    def _allowed_rows(self, kind: str, model: str, vectors: VectorSet, flt: AnyFilter) -> np.ndarray | None:
        """The rows of `vectors` that pass `flt`, as a mask, once this process
        has searched with the same filter often enough since the index last
        changed (recall's filter, a server's visibility); None before (the
        nearest chunks are checked instead, ~1-2 ms a search).

        Reading the mask costs ~3 µs a row (45 ms for 15k memories), again after
        every change to the index; it is read once the searches checked so far
        would have paid for it (one per :data:`_ROWS_PER_CHECK` rows): then at
        most twice what the best choice in hindsight would have cost.
        """
        self._records.valid_for(self._content_token())
        masks = self._records.memo.setdefault("allowed rows", OrderedDict())
        key = (kind, model, repr(flt))
        known = masks.pop(key, 0)
        while len(masks) >= _MASKS:  # the least recently used filters go
            masks.popitem(last=False)
        if isinstance(known, int):
            if known + 1 < max(2, len(vectors) // _ROWS_PER_CHECK):
                masks[key] = known + 1
                return None
            known = (None, None)
        made_for, mask = known
        if made_for != (vectors.version, len(vectors)):  # not the VectorSet itself: it would stay in memory
            mask = vectors.mask(self._all_passing(kind, flt))
        masks[key] = ((vectors.version, len(vectors)), mask)
        rows: np.ndarray = mask
        return rows

    def _passing(self, kind: str, ids: list[int], flt: AnyFilter | None) -> set[int]:
        where, params = _filter_where(kind, flt)
        found: set[int] = set()
        for part in batched(ids, _MAX_IN):
            marks = ",".join("?" * len(part))
            sql = f"SELECT c.id {_from(kind)} WHERE c.id IN ({marks}){' AND ' + where if where else ''}"
            found.update(r[0] for r in self.db.execute(sql, (*part, *params)))
        return found

    def _all_passing(self, kind: str, flt: AnyFilter | None) -> set[int]:
        where, params = _filter_where(kind, flt)
        sql = f"SELECT c.id {_from(kind)} WHERE c.kind = ?{' AND ' + where if where else ''}"
        return {r[0] for r in self.db.execute(sql, (kind, *params))}

    # -- vectors ---------------------------------------------------------------------------

    def pending_embeddings(self, model: str, limit: int, kind: str | None = None) -> list[tuple[str, str]]:
        """(text_hash, text to embed) of chunks with no vector for `model` yet,
        memories first (they are few and matter most), then commits, then code."""
        rows = self.db.execute(
            "SELECT c.text_hash, c.kind, c.title, c.text FROM chunks c "
            "WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = c.text_hash) "
            "AND (? IS NULL OR c.kind = ?) GROUP BY c.text_hash "
            "ORDER BY c.kind = 'memory' DESC, c.kind = 'commit' DESC LIMIT ?",
            (model, kind, kind, limit),
        ).fetchall()
        return [(r[0], embedding_text(r[1], r[2], r[3])) for r in rows]

    def count_pending(self, model: str, kind: str | None = None, cap: int | None = None) -> int:
        """Distinct chunk texts without a vector for `model` (counting stops at `cap`)."""
        if cap is None and self.all_embedded(model):
            return 0
        return int(
            self.db.execute(
                "SELECT count(*) FROM (SELECT DISTINCT c.text_hash FROM chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = c.text_hash) "
                "AND (? IS NULL OR c.kind = ?) LIMIT ?)",
                (model, kind, kind, -1 if cap is None else cap),
            ).fetchone()[0]
        )

    def all_embedded(self, model: str) -> bool:
        """True when nothing changed since every chunk had a vector (no scan needed)."""
        return self.get_meta(f"embedded:{model}") == str(self.vectors_version())

    def mark_all_embedded(self, model: str) -> None:
        self.set_meta(f"embedded:{model}", str(self.vectors_version()))

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        import numpy as np

        self._vectors_changed()
        data = np.asarray(vectors, dtype=np.float32)
        self.db.executemany(
            "INSERT OR REPLACE INTO embeddings(model, text_hash, vector) VALUES (?, ?, ?)",
            [(model, h, data[i].tobytes()) for i, h in enumerate(hashes)],
        )

    def drop_embeddings(self, keep_model: str | None) -> int:
        """Forget vectors of every other model (after a model change)."""
        self._vectors_changed()
        return self.db.execute("DELETE FROM embeddings WHERE model IS NOT ?", (keep_model,)).rowcount

    def count_embeddings(self, model: str) -> int:
        return int(self.db.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0])

    def embedding_dim(self, model: str) -> int | None:
        row = self.db.execute(
            "SELECT length(e.vector) FROM embeddings e WHERE e.model = ? AND EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash) LIMIT 1",
            (model,),
        ).fetchone()
        return int(row[0]) // 4 if row and row[0] is not None else None  # float32 bytes

    # -- commits ----------------------------------------------------------------------------

    def put_commit(self, file_id: int, commit: CommitRecord) -> None:
        self.db.execute(
            "INSERT INTO commits(file_id, sha, author, email, date, subject, body, files, head_files, "
            "n_files, is_merge, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                file_id,
                commit.sha,
                commit.author,
                commit.email,
                commit.date,
                commit.subject,
                commit.body,
                json.dumps(commit.files),
                json.dumps(commit.head_files),
                commit.n_files or len(commit.files),
                int(commit.is_merge),
                _epoch(commit.committed or commit.date),
            ),
        )

    def commits(self) -> list[CommitRecord]:
        """Every stored commit, newest first."""
        rows = self.db.execute(f"SELECT {_COMMIT_COLUMNS} FROM commits m ORDER BY m.ts DESC")
        return [_commit(row, 0) for row in rows]

    def prune_commits(self, keep: int) -> int:
        """Drop all but the `keep` newest commits."""
        pruned = self.db.execute(
            "DELETE FROM files WHERE id IN (SELECT file_id FROM commits ORDER BY ts DESC LIMIT -1 OFFSET ?)",
            (keep,),
        ).rowcount
        if pruned:
            self._vectors_changed()
        return pruned

    def redate_commits(self, times: dict[str, int]) -> int:
        """Date stored commits by these times ({sha: epoch seconds}); how many changed."""
        done = self.db.executemany(
            "UPDATE commits SET ts = ? WHERE sha = ? AND ts != ?", ((t, sha, t) for sha, t in times.items())
        )
        return max(done.rowcount, 0)

    def remap_commit_paths(self, mapping: dict[str, str | None]) -> int:
        """Point stored commits' HEAD paths at their new names (None: gone)."""
        if not mapping:
            return 0
        changed = 0
        rows = self.db.execute("SELECT file_id, head_files FROM commits").fetchall()
        for file_id, raw in rows:
            paths = json.loads(raw)
            moved = [mapping.get(p, p) if p is not None else None for p in paths]
            if moved != paths:
                self.db.execute(
                    "UPDATE commits SET head_files = ? WHERE file_id = ?", (json.dumps(moved), file_id)
                )
                changed += 1
        return changed

    def commits_touching(self, head_path: str, limit: int = 20) -> list[CommitRecord]:
        rows = self.db.execute(
            f"SELECT {_COMMIT_COLUMNS} FROM commits m WHERE EXISTS "
            "(SELECT 1 FROM json_each(m.head_files) WHERE value = ?) ORDER BY m.ts DESC LIMIT ?",
            (head_path, limit),
        )
        return [_commit(row, 0) for row in rows]

    def paths_changed(self, since: str | None, until: str | None) -> set[str]:
        """Files (as named at HEAD) changed by commits in [since, until)."""
        rows = self.db.execute(
            "SELECT DISTINCT j.value FROM commits m, json_each(m.head_files) j "
            "WHERE j.value IS NOT NULL AND m.ts >= ? AND m.ts < ?",
            (_epoch(since) if since else 0, _epoch(until) if until else 2**62),
        )
        return {r[0] for r in rows}

    # -- anchors -----------------------------------------------------------------------------

    def replace_anchors(self, memory_id: str, anchors: Sequence[AnchorRecord]) -> None:
        self.db.execute("DELETE FROM anchors WHERE memory_id = ?", (memory_id,))
        self.db.executemany(
            "INSERT OR REPLACE INTO anchors(memory_id, path, symbol, start_line, end_line, code_hash, "
            "named_path) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (a.memory_id, a.path, a.symbol, a.start_line, a.end_line, a.code_hash, a.named_path)
                for a in anchors
            ],
        )

    def anchors(
        self, *, memory_id: str | None = None, path: str | None = None, fresh_only: bool = False
    ) -> list[AnchorRecord]:
        clauses, params = [], []
        if memory_id is not None:
            clauses.append("memory_id = ?")
            params.append(memory_id)
        if path is not None:
            clauses.append("path = ?")
            params.append(path)
        if fresh_only:
            clauses.append("stale_reason IS NULL")
        rows = self.db.execute(
            "SELECT memory_id, path, symbol, start_line, end_line, code_hash, named_path, stale_reason "
            f"FROM anchors {'WHERE ' + ' AND '.join(clauses) if clauses else ''} ORDER BY path",
            params,
        )
        return [AnchorRecord(*row) for row in rows]

    def move_anchors(self, old_path: str, new_path: str) -> None:
        self.db.execute("UPDATE OR REPLACE anchors SET path = ? WHERE path = ?", (new_path, old_path))

    def mark_stale(self, anchor: AnchorRecord, reason: str | None, commit: str | None) -> None:
        """Mark `anchor` stale with `reason`, or fresh again with None."""
        self.db.execute(
            "UPDATE anchors SET stale_reason = ?, stale_commit = ? WHERE memory_id = ? AND path = ? "
            "AND symbol IS ?",
            (reason, commit, anchor.memory_id, anchor.path, anchor.symbol),
        )

    def stale_reasons(self, memory_ids: Sequence[str] | None = None) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        sql = "SELECT memory_id, stale_reason FROM anchors WHERE stale_reason IS NOT NULL"
        if memory_ids is None:
            parts: Iterable[Sequence[str]] = [()]
        elif not memory_ids:
            return out
        else:
            parts = batched(list(memory_ids), _MAX_IN)
        for part in parts:
            query = sql + (f" AND memory_id IN ({','.join('?' * len(part))})" if part else "")
            for memory_id, reason in self.db.execute(query, tuple(part)):
                out.setdefault(memory_id, []).append(reason)
        return out

    # -- access statistics ----------------------------------------------------------------------

    def access_stats(self, memory_ids: Sequence[str] | None = None) -> dict[str, tuple[int, str]]:
        sql = "SELECT memory_id, count, last_accessed FROM access"
        if memory_ids is None:
            return {r[0]: (r[1], r[2]) for r in self.db.execute(sql)}
        out = {}
        for part in batched(list(dict.fromkeys(memory_ids)), _MAX_IN):
            rows = self.db.execute(f"{sql} WHERE memory_id IN ({','.join('?' * len(part))})", part)
            out.update({r[0]: (r[1], r[2]) for r in rows})
        return out

    def record_access(self, memory_ids: Sequence[str], when: str) -> None:
        self.db.executemany(
            "INSERT INTO access(memory_id, count, last_accessed) VALUES (?, 1, ?) "
            "ON CONFLICT(memory_id) DO UPDATE SET count = count + 1, last_accessed = excluded.last_accessed",
            [(mid, when) for mid in memory_ids],
        )

    def set_access(self, stats: dict[str, tuple[int, str]]) -> None:
        self.db.execute("DELETE FROM access")
        self.db.executemany(
            "INSERT OR REPLACE INTO access(memory_id, count, last_accessed) VALUES (?, ?, ?)",
            [(mid, count, when) for mid, (count, when) in stats.items()],
        )

    # -- export ---------------------------------------------------------------------------------

    def dump_files(self, kind: str) -> Iterator[FileDump]:
        """Every file of `kind` with its memory or commit and its chunks (for `lore db export`)."""
        files = self.db.execute(
            "SELECT id, path, sha256, mtime_ns, size, error, role FROM files WHERE kind = ? ORDER BY path",
            (kind,),
        ).fetchall()
        for file_id, path, sha, mtime_ns, size, error, role in files:
            dump = FileDump(path, kind, sha, mtime_ns, size, error, role)
            where = "JOIN files f ON f.id = m.file_id WHERE m.file_id = ?"
            if kind == "memory":
                row = self.db.execute(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories m {where}", (file_id,)
                ).fetchone()
                dump.memory = _memory(row) if row else None
            elif kind == "commit":
                row = self.db.execute(
                    f"SELECT {_COMMIT_COLUMNS} FROM commits m {where}", (file_id,)
                ).fetchone()
                dump.commit = _commit(row, 0) if row else None
            if kind == "memory":
                dump.links = [
                    LinkInput(*row)
                    for row in self.db.execute(
                        "SELECT relation, target, target_key, kind, line, origin FROM links "
                        "WHERE file_id = ? ORDER BY ord",
                        (file_id,),
                    )
                ]
            dump.chunks = [
                ChunkInput(*row)
                for row in self.db.execute(
                    "SELECT text, start_line, end_line, section, symbol, language, title, keywords "
                    "FROM chunks WHERE file_id = ? ORDER BY ord",
                    (file_id,),
                )
            ]
            yield dump

    def dump_embeddings(self, model: str) -> Iterator[tuple[str, np.ndarray]]:
        """(text hash, vector) of every vector of `model` a chunk of this index uses."""
        import numpy as np

        rows = self.db.execute(
            "SELECT e.text_hash, e.vector FROM embeddings e WHERE e.model = ? AND EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash) ORDER BY e.text_hash",
            (model,),
        )
        for hash_, blob in rows:
            yield hash_, np.frombuffer(blob, dtype=np.float32)

    def meta_items(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta").fetchall())

    # -- lifecycle (seed 001): tiers, evidence, error patterns, proposals --------------

    # -- tiers ---------------------------------------------------------------------------

    def tier_states(self, memory_ids: Sequence[str] | None = None) -> dict[str, TierState]:
        sql = "SELECT memory_id, tier, since, low_since, checked_at FROM tier_state"
        if memory_ids is None:
            return {row[0]: TierState(*row) for row in self.db.execute(sql)}
        out: dict[str, TierState] = {}
        for part in batched(list(memory_ids), _MAX_IN):
            rows = self.db.execute(f"{sql} WHERE memory_id IN ({','.join('?' * len(part))})", tuple(part))
            out.update({row[0]: TierState(*row) for row in rows})
        return out

    def put_tier_states(self, states: Sequence[TierState]) -> None:
        # Decided on reads: a batch of its own (outside a caller's transaction it can
        # heal a damaged index and be run again, like a read).
        self._batch(
            "INSERT OR REPLACE INTO tier_state(memory_id, tier, since, low_since, checked_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [(s.memory_id, s.tier, s.since, s.low_since, s.checked_at) for s in states],
        )

    def _batch(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """`sql` for every row, all or none: inside the caller's transaction if
        there is one, else in a transaction of its own."""
        if self._in_transaction or not rows:
            self.db.executemany(sql, rows)
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany(sql, rows)
        except BaseException:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self.db.execute("COMMIT")

    # -- evidence ------------------------------------------------------------------------

    def add_evidence(self, rows: Sequence[EvidenceRecord]) -> list[str]:
        added = []
        for row in rows:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO evidence(key, memory_id, source, agent, occurred_at, folded) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (row.key, row.memory_id, row.source, row.agent, row.occurred_at, int(row.folded)),
            )
            if cur.rowcount:
                added.append(row.key)
        return added

    def evidence(self, memory_id: str | None = None) -> list[EvidenceRecord]:
        sql = "SELECT key, memory_id, source, agent, occurred_at, folded FROM evidence"
        rows = (
            self.db.execute(f"{sql} WHERE memory_id = ? ORDER BY occurred_at, key", (memory_id,))
            if memory_id is not None
            else self.db.execute(f"{sql} ORDER BY occurred_at, key")
        )
        return [EvidenceRecord(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def known_evidence(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        rows = self.db.execute(
            "SELECT key, memory_id FROM evidence WHERE key IN (SELECT value FROM json_each(?))",
            (json.dumps(list(keys)),),
        )
        return {str(key): str(memory_id) for key, memory_id in rows}

    def fold_evidence(self, memory_id: str, keys: Sequence[str] | None = None) -> int:
        if keys is None:
            return self.db.execute(
                "UPDATE evidence SET folded = 1 WHERE memory_id = ? AND folded = 0", (memory_id,)
            ).rowcount
        count = 0
        for part in batched(list(keys), _MAX_IN):
            count += self.db.execute(
                f"UPDATE evidence SET folded = 1 WHERE memory_id = ? AND key IN ({','.join('?' * len(part))})",
                (memory_id, *part),
            ).rowcount
        return count

    def move_evidence(self, from_id: str, to_id: str) -> int:
        return self.db.execute(
            "UPDATE evidence SET memory_id = ?, folded = 0 WHERE memory_id = ?", (to_id, from_id)
        ).rowcount

    def last_evidence(self, memory_ids: Sequence[str] | None = None) -> dict[str, str]:
        sql = "SELECT memory_id, max(occurred_at) FROM evidence"
        if memory_ids is None:
            return {r[0]: r[1] for r in self.db.execute(f"{sql} GROUP BY memory_id")}
        out: dict[str, str] = {}
        for part in batched(list(dict.fromkeys(memory_ids)), _MAX_IN):
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"{sql} WHERE memory_id IN ({marks}) GROUP BY memory_id", part)
            out.update({r[0]: r[1] for r in rows})
        return out

    # -- error patterns --------------------------------------------------------------------

    def add_error_occurrences(self, rows: Sequence[ErrorOccurrence]) -> list[tuple[str, str]]:
        new = []
        for row in rows:
            if self.db.execute(
                "INSERT OR IGNORE INTO error_occurrences(signature, key, source, agent, occurred_at, example) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (row.signature, row.key, row.source, row.agent, row.occurred_at, row.example),
            ).rowcount:
                new.append((row.signature, row.key))
        return new

    def error_patterns(self, signatures: Sequence[str] | None = None) -> list[ErrorPattern]:
        where = ""
        params: tuple[str, ...] = ()
        if signatures is not None:
            if not signatures:
                return []
            where = "WHERE o.signature IN (SELECT value FROM json_each(?))"
            params = (json.dumps(list(signatures)),)
        rows = self.db.execute(
            "SELECT o.signature, count(*), min(o.occurred_at), max(o.occurred_at), "
            "(SELECT example FROM error_occurrences x WHERE x.signature = o.signature "
            " ORDER BY x.occurred_at, x.rowid LIMIT 1), "
            "p.memory_id, json_group_array(DISTINCT coalesce(o.agent, '')) "
            f"FROM error_occurrences o LEFT JOIN error_patterns p ON p.signature = o.signature {where} "
            "GROUP BY o.signature ORDER BY count(*) DESC, min(o.occurred_at)",
            params,
        )
        return [
            ErrorPattern(r[0], r[1], r[2], r[3], r[4], r[5], sorted(a for a in json.loads(r[6]) if a))
            for r in rows
        ]

    def rewrite_error_text(self, rewrite: Callable[[str], str]) -> int:
        changed = 0
        rows = self.db.execute("SELECT rowid, signature, example FROM error_occurrences").fetchall()
        for rowid, signature, example in rows:
            new_signature, new_example = rewrite(signature), rewrite(example)
            if (new_signature, new_example) == (signature, example):
                continue
            changed += 1
            self.db.execute(
                "UPDATE OR IGNORE error_occurrences SET signature = ?, example = ? WHERE rowid = ?",
                (new_signature, new_example, rowid),
            )
            self.db.execute(
                "DELETE FROM error_occurrences WHERE rowid = ? AND signature = ?", (rowid, signature)
            )
        for (signature,) in self.db.execute("SELECT signature FROM error_patterns").fetchall():
            new_signature = rewrite(signature)
            if new_signature != signature:
                changed += 1
                self.db.execute(
                    "UPDATE OR IGNORE error_patterns SET signature = ? WHERE signature = ?",
                    (new_signature, signature),
                )
                self.db.execute("DELETE FROM error_patterns WHERE signature = ?", (signature,))
        return changed

    def set_error_memory(self, signature: str, memory_id: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO error_patterns(signature, memory_id) VALUES (?, ?)",
            (signature, memory_id),
        )

    # -- proposals ---------------------------------------------------------------------------

    def put_proposal(self, proposal: ProposalRecord) -> None:
        p = proposal
        self.db.execute(
            f"INSERT OR REPLACE INTO proposals({_PROPOSAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                p.id,
                p.kind,
                p.status,
                p.title,
                p.reason,
                p.confidence,
                p.evidence,
                json.dumps(p.memory_ids),
                json.dumps(p.changes, ensure_ascii=False),
                p.created_at,
                p.updated_at,
            ),
        )

    def proposals(self, statuses: Sequence[str] | None = None) -> list[ProposalRecord]:
        if statuses is None:
            rows = self.db.execute(f"SELECT {_PROPOSAL_COLUMNS} FROM proposals ORDER BY created_at, id")
        else:
            rows = self.db.execute(
                f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE status IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, id",
                (json.dumps(list(statuses)),),
            )
        return [_proposal(row) for row in rows]

    def proposal(self, proposal_id: str) -> ProposalRecord | None:
        row = self.db.execute(
            f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE id = ?", (proposal_id,)
        ).fetchone()
        if row is None and len(proposal_id) >= 4:
            rows = self.db.execute(
                f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE substr(id, 1, ?) = ?",
                (len(proposal_id), proposal_id),
            ).fetchall()
            row = rows[0] if len(rows) == 1 else None
        return _proposal(row) if row else None


# Every read and write heals a damaged index (not: close, transaction, check, describe).
for _name in (
    "identity",
    "size_bytes",
    "get_meta",
    "set_meta",
    "vectors_version",
    "counts",
    "group_counts",
    "file_states",
    "paths",
    "code_files",
    "set_roles",
    "put_file",
    "touch_file",
    "delete_files",
    "file_errors",
    "put_memory",
    "memories",
    "memory_paths",
    "find_duplicate",
    "put_links",
    "links",
    "put_chunks",
    "chunks",
    "first_chunk",
    "lexical_search",
    "vector_search",
    "vector_count",
    "vector_scores",
    "pending_embeddings",
    "count_pending",
    "all_embedded",
    "mark_all_embedded",
    "put_embeddings",
    "drop_embeddings",
    "count_embeddings",
    "embedding_dim",
    "put_commit",
    "commits",
    "prune_commits",
    "remap_commit_paths",
    "commits_touching",
    "memory_page",
    "memory_stamps",
    "source_counts",
    "paths_changed",
    "replace_anchors",
    "anchors",
    "move_anchors",
    "mark_stale",
    "stale_reasons",
    "access_stats",
    "record_access",
    "set_access",
    "meta_items",
    "tier_states",
    "put_tier_states",
    "add_evidence",
    "evidence",
    "fold_evidence",
    "move_evidence",
    "last_evidence",
    "add_error_occurrences",
    "error_patterns",
    "set_error_memory",
    "put_proposal",
    "proposals",
    "proposal",
):
    setattr(SQLiteStore, _name, _healing(getattr(SQLiteStore, _name)))


# -- SQL building -----------------------------------------------------------------------------


def _select(kind: str) -> str:
    if kind == "memory":
        return f"{_CHUNK_COLUMNS}, {_MEMORY_COLUMNS}"
    if kind == "commit":
        return f"{_CHUNK_COLUMNS}, {_COMMIT_COLUMNS}"
    return _CHUNK_COLUMNS


def _joins(kind: str) -> str:
    join = "JOIN files f ON f.id = c.file_id"
    if kind == "memory":
        return f"{join} JOIN memories m ON m.file_id = c.file_id"
    if kind == "commit":
        return f"{join} JOIN commits m ON m.file_id = c.file_id"
    return join


def _from(kind: str) -> str:
    return f"FROM chunks c {_joins(kind)}"


def _filter_where(kind: str, flt: AnyFilter | None) -> tuple[str, list[Any]]:
    if isinstance(flt, MemoryFilter):
        return _memory_where(flt)
    if isinstance(flt, ChunkFilter):
        return _chunk_where(kind, flt)
    return "", []


def _memory_where(flt: MemoryFilter | None) -> tuple[str, list[Any]]:
    """A WHERE clause over `memories m` and `files f`."""
    if flt is None:
        return "", []
    clauses: list[str] = []
    params: list[Any] = []

    def among(column: str, values: Sequence[Any], negate: bool = False) -> None:
        clauses.append(f"{column} {'NOT ' if negate else ''}IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(values)))

    if flt.types:
        among("m.type", flt.types)
    for tag in flt.tags:
        clauses.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE lower(value) = lower(?))")
        params.append(tag)
    for column, value in (
        ("m.agent", flt.agent),
        ("m.task", flt.task),
        ("m.content_hash", flt.content_hash),
        ("m.title", flt.title),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if flt.scope:
        # "file:src/" matches every file scope below src/; "global" is exact.
        clauses.append("(m.applies_to = ? OR m.applies_to LIKE ? ESCAPE '\\')")
        params += [flt.scope, _like_prefix(flt.scope)]
    if flt.scoped_only:
        clauses.append("m.applies_to < 'global'")  # 'area:…' and 'file:…' sort first: a range scan
    if flt.storage:
        among("m.storage", flt.storage)
    if flt.exclude_storage:
        among("m.storage", flt.exclude_storage, negate=True)
    tier = "coalesce((SELECT t.tier FROM tier_state t WHERE t.memory_id = m.id), 'cold')"
    if flt.tiers and "cold" not in flt.tiers:
        # Memories without a tier row are cold, so the others are found through
        # the tier index (recall's HOT memories at 15k memories: 18 ms -> 0.02 ms).
        clauses.append(
            "m.id IN (SELECT t.memory_id FROM tier_state t WHERE t.tier IN (SELECT value FROM json_each(?)))"
        )
        params.append(json.dumps(list(flt.tiers)))
    elif flt.tiers:
        among(tier, flt.tiers)
    if flt.exclude_tiers:
        among(tier, flt.exclude_tiers, negate=True)
    if flt.since:
        clauses.append("m.occurred_at >= ?")
        params.append(flt.since)
    if flt.until:
        clauses.append("m.occurred_at < ?")
        params.append(flt.until)
    if flt.ids is not None:
        among("m.id", flt.ids)
    if flt.paths is not None:
        among("f.path", flt.paths)
    if flt.sources is not None:
        among("m.source", flt.sources)
    if flt.visibility is not None:
        clauses.append("m.visibility = ?")
        params.append(flt.visibility)
    if flt.stale is not None:
        clauses.append(_STALE if flt.stale else f"NOT {_STALE}")
    if not flt.include_private:
        if flt.viewer:
            clauses.append("(m.owner IS NULL OR m.owner = ?)")
            params.append(flt.viewer)
        else:
            clauses.append("m.owner IS NULL")
    return " AND ".join(clauses), params


def _page_order(sort: str, descending: bool) -> str:
    """ORDER BY for a page of memories: the sort column, then insertion order."""
    if sort not in _PAGE_SORTS:
        raise ValueError(f"cannot sort memories by {sort!r}")
    direction = "DESC" if descending else "ASC"
    return f"{_PAGE_SORTS[sort]} {direction}, m.file_id {direction}"


def _chunk_where(kind: str, flt: ChunkFilter) -> tuple[str, list[Any]]:
    """A WHERE clause over `chunks c`, `files f` (and `commits m` for commits)."""
    clauses: list[str] = []
    params: list[Any] = []
    if flt.languages:
        clauses.append("c.language IN (SELECT value FROM json_each(?))")
        params.append(json.dumps([lang.lower() for lang in flt.languages]))
    if flt.extensions:
        clauses.append("(" + " OR ".join("f.path LIKE ?" for _ in flt.extensions) + ")")
        params += ["%." + ext.lstrip(".").lower() for ext in flt.extensions]
    if flt.directories:
        globs = directory_globs(flt.directories)
        clauses.append("(" + " OR ".join("f.path GLOB ?" for _ in globs) + ")")
        params += globs
    if flt.paths is not None:
        clauses.append("f.path IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(flt.paths)))
    if flt.roles:
        clauses.append("f.role IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(flt.roles))
    if flt.exclude_roles:
        clauses.append("coalesce(f.role, '') NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(flt.exclude_roles))
    if kind == "commit":
        if flt.since:
            clauses.append("m.ts >= ?")
            params.append(_epoch(flt.since))
        if flt.until:
            clauses.append("m.ts < ?")
            params.append(_epoch(flt.until))
    return " AND ".join(clauses), params


# -- rows to records ------------------------------------------------------------------------------


def _chunk(kind: str, row: Sequence[Any]) -> ChunkRecord:
    chunk = ChunkRecord(
        chunk_id=row[0],
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


def _json_list(text: str) -> Any:
    """A JSON list column; the common empty list without the parser (search reads hundreds of rows)."""
    return [] if text == "[]" else json.loads(text)


def _memory(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        title=row[1],
        type=row[2],
        sector=row[3],
        tags=_json_list(row[4]),
        applies_to=row[5],
        agent=row[6],
        task=row[7],
        project=row[8],
        visibility=row[9],
        storage=row[10],
        occurred_at=row[11],
        content_hash=row[12],
        confidence=row[13],
        files=_json_list(row[14]),
        summary=row[15],
        body_line=row[16],
        evidence_count=row[17],
        owner=row[18],
        superseded_by=row[19],
        path=row[20],
        is_global=bool(row[21]) if len(row) > 21 else False,
        source=row[22] if len(row) > 22 else None,
    )


def _proposal(row: Sequence[Any]) -> ProposalRecord:
    return ProposalRecord(
        id=row[0],
        kind=row[1],
        status=row[2],
        title=row[3],
        reason=row[4],
        confidence=row[5],
        evidence=row[6],
        memory_ids=json.loads(row[7]),
        changes=json.loads(row[8]),
        created_at=row[9],
        updated_at=row[10],
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
        files=json.loads(r[6]),
        head_files=json.loads(r[7]),
        n_files=r[8],
        is_merge=bool(r[9]),
    )


# -- connection ---------------------------------------------------------------------------------


# How long a statement waits for another process's write lock.
_BUSY_MS = 30_000
# The most an index holding nothing takes: its header page (a live index has its schema).
_EMPTY_INDEX = 4096


def _connect_beside_orphans(path: Path) -> sqlite3.Connection:
    """:func:`_connect`, its first read done; when it fails with a disk I/O
    error on an empty index (a page at most) that has a write-ahead log or
    shared memory beside it, those are a deleted index's, maybe still held by
    a server running on it (SQLite took them for the new file's: every
    command failed, `lore index --force` too, until that server stopped).
    They are set aside with the empty file, once; the server keeps what it
    holds. A live index's log gives no such error."""
    db = _connect(path)
    try:
        _schema_version(db)
        return db
    except sqlite3.OperationalError as err:
        db.close()
        logs = [f"{path}{suffix}" for suffix in ("-wal", "-shm") if os.path.exists(f"{path}{suffix}")]
        size = _size(path)
        if "disk i/o error" not in str(err).lower() or not logs or size is None or size > _EMPTY_INDEX:
            raise
    for name in (*logs, str(path)):
        with suppress(FileNotFoundError):
            os.unlink(name)
    return _connect(path)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # Owner-only: the index holds memory text and code (issue: readable by everyone was a leak).
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
    _use_wal(db)
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    # Reads straight from the page cache instead of copying pages: random row
    # lookups (a search's candidates) are ~4x cheaper at 100k chunks.
    db.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
    return db


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the index in WAL mode (a no-op when it is already).

    Processes that open a new index together race to switch it, and SQLite
    answers the losers "database is locked" at once, without waiting on
    busy_timeout: so the switch is retried for as long as a statement would wait."""
    deadline = time.monotonic() + _BUSY_MS / 1000
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            busy = "locked" in str(err) or "busy" in str(err)
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


_NOT_DAMAGE = (
    "locked",
    "busy",
    "readonly",
    "read-only",
    "interrupt",
    "unable to open",
    "disk i/o",
    "out of memory",
    "full",
    # A statement past SQLite's limits ("LIKE or GLOB pattern too complex",
    # "Expression tree is too large", "too many SQL variables"): an oversized
    # argument, not a damaged file. Rebuilding would not help, and must never
    # be what a caller's argument can make Lore do to its index.
    *PAST_LIMITS,
    # A statement SQLite or FTS5 cannot parse ("fts5: syntax error near ..."):
    # the statement is wrong, not the file; rebuilding would lose the index for it.
    "syntax error",
)
# ... unless the file's own pages are what SQLite complains of.
_DAMAGE = ("malformed", "not a database")


def is_damage(err: sqlite3.DatabaseError) -> bool:
    """Does this error mean the index file itself is damaged (so rebuilding helps)?

    Locks, read-only files, a full disk, constraint violations and statements
    past SQLite's limits are not damage."""
    if isinstance(err, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.InterfaceError):
        return False
    message = str(err).lower()
    if any(word in message for word in _DAMAGE):
        return True
    return not any(word in message for word in _NOT_DAMAGE)


def _probe(db: sqlite3.Connection) -> None:
    """Touch what every command needs (meta, the tables, the full-text
    indexes), so damage there is found on open rather than mid-command."""
    for table in (
        "files",
        "memories",
        "chunks",
        "commits",
        "embeddings",
        "anchors",
        "access",
        "links",
        "tier_state",
        "evidence",
    ):
        db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
    for table in FTS_TABLES.values():
        db.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH 'lore' LIMIT 1").fetchall()


def _schema_version(db: sqlite3.Connection) -> int:
    has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    if not has_meta:
        # A non-empty database without our meta table is not ours: rebuild.
        if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise sqlite3.DatabaseError("not a Lore index")
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _migrate(db: sqlite3.Connection) -> bool:
    """Apply the migrations this index lacks; False when another process had
    already applied them (the version is read again under the write lock)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = _schema_version(db)
        for number in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[number]:
                db.execute(statement)
            db.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(number + 1),),
            )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return version < SCHEMA_VERSION


def _reclaim(db: sqlite3.Connection) -> None:
    """After a migration that rewrote a table, or files removed, give the freed
    pages back to the disk when they are a quarter of the file or more (best
    effort: if another process holds the index, the free pages are reused instead)."""
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    if free * 4 < db.execute("PRAGMA page_count").fetchone()[0]:
        return
    db.execute("PRAGMA busy_timeout = 1000")  # a writer at work: leave it, the pages get reused
    try:
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # or the WAL keeps the rewritten file's size
    except sqlite3.OperationalError:
        pass
    finally:
        db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _epoch(when: str) -> int:
    """Unix time of an ISO 8601 timestamp (naive = UTC); 0 if unreadable."""
    try:
        parsed = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return int(parsed.timestamp())
    except (OverflowError, OSError, ValueError):
        return 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
