"""The SQLite backend: `.lore/index.db` (WAL, FTS5), one file per clone.

Every SQL statement of the SQLite index lives in this package. The index is
derived data: an index that can't be read, was written by a newer Lore, or
turns out damaged is rebuilt from the files (with one notice).
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.storage.base import (
    AnchorRecord,
    AnyFilter,
    ChunkFilter,
    ChunkInput,
    ChunkRecord,
    CommitRecord,
    FileState,
    IndexCounts,
    MemoryFilter,
    MemoryRecord,
    batched,
    embedding_text,
    filter_is_empty,
    text_hash,
)
from lore.storage.sqlite.lifecycle import LifecycleTables
from lore.storage.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import numpy as np

FTS_TABLES = {"memory": "chunks_fts", "code": "code_fts", "commit": "commit_fts"}
# BM25 column weights (title, keywords, text) per kind.
_WEIGHTS = {"memory": (4.0, 2.0, 1.0), "code": (4.0, 1.0, 1.0), "commit": (4.0, 1.0, 1.0)}
_MEMORY_COLUMNS = (
    "m.id, m.title, m.type, m.sector, m.tags, m.applies_to, m.agent, m.task, m.project, m.visibility, "
    "m.storage, m.occurred_at, m.content_hash, m.confidence, m.files, m.summary, m.body_line, "
    # The file's own count plus evidence not written into the file yet.
    "m.evidence_count + (SELECT count(*) FROM evidence e WHERE e.memory_id = m.id AND e.folded = 0), "
    "m.owner, m.superseded_by, f.path"
)
_COMMIT_COLUMNS = (
    "m.sha, m.author, m.email, m.date, m.subject, m.body, m.files, m.head_files, m.n_files, m.is_merge"
)
_CHUNK_COLUMNS = (
    "c.id, c.kind, f.path, c.section, c.symbol, c.language, c.start_line, c.end_line, c.title, "
    "c.keywords, c.text, f.role"
)
_ORDERS = {"recent": "m.occurred_at DESC", "path": "f.path", "oldest": "m.occurred_at"}
_GROUP_COLUMNS = ("type", "sector", "visibility", "storage", "agent")
_MAX_IN = 900  # SQLite's host-parameter limit is 999 on old builds


class SQLiteStore(LifecycleTables):
    """One connection to `.lore/index.db`. Not shared across threads."""

    def __init__(self, path: Path):
        self.path = path
        self.notices: list[str] = []
        self.db = self._open()

    def describe(self) -> str:
        return f"sqlite:{self.path}"

    # -- opening, migrating, recovering ---------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            db = _connect(self.path)
            version = _schema_version(db)
            if version > SCHEMA_VERSION:
                db.close()
                return self._rebuild("was written by a newer Lore")
            if version < SCHEMA_VERSION:
                _migrate(db)
            return db
        except sqlite3.DatabaseError as err:
            return self._rebuild(f"could not be read ({err})")

    def _rebuild(self, why: str) -> sqlite3.Connection:
        self.notices.append(f"index {self.path.name} {why}; rebuilding it from the files")
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass
        db = _connect(self.path)
        _migrate(db)
        return db

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction; taken IMMEDIATE so concurrent writers queue
        on busy_timeout instead of failing half way."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def check(self) -> str:
        """'ok', or what is wrong with the database and its full-text indexes."""
        try:
            result = self.db.execute("PRAGMA quick_check").fetchone()[0]
            for table in FTS_TABLES.values():
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            return str(result)
        except sqlite3.DatabaseError as err:
            return str(err)

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
        """{path: role} of the code files among `paths` that are indexed and pass `flt`."""
        where, params = _chunk_where("code", flt) if flt is not None else ("", [])
        out: dict[str, str | None] = {}
        for part in batched(list(paths), _MAX_IN):
            sql = (
                f"SELECT DISTINCT f.path, f.role FROM files f JOIN chunks c ON c.file_id = f.id "
                f"WHERE f.kind = 'code' AND f.path IN (SELECT value FROM json_each(?))"
                f"{' AND ' + where if where else ''}"
            )
            out.update(self.db.execute(sql, (json.dumps(list(part)), *params)).fetchall())
        return out

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
            "evidence_count, owner, superseded_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        """The chunks with these ids that pass `flt` (order not kept)."""
        out: list[ChunkRecord] = []
        where, params = _filter_where(kind, flt)
        for part in batched(list(ids), _MAX_IN):
            marks = ",".join("?" * len(part))
            sql = (
                f"SELECT {_select(kind)} {_from(kind)} WHERE c.id IN ({marks})"
                f"{' AND ' + where if where else ''}"
            )
            out += [_chunk(kind, row) for row in self.db.execute(sql, (*part, *params))]
        return out

    def first_chunk(self, path: str) -> ChunkRecord | None:
        row = self.db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
            "ORDER BY c.ord LIMIT 1",
            (path,),
        ).fetchone()
        return _chunk("code", row) if row else None

    def lexical_search(
        self, kind: str, terms: Sequence[str], flt: AnyFilter | None, limit: int
    ) -> list[tuple[ChunkRecord, float]]:
        """BM25 over chunks of `kind` matching any of `terms`; (chunk, score), best first."""
        if not terms or limit <= 0:
            return []
        table, weights = FTS_TABLES[kind], ", ".join(str(w) for w in _WEIGHTS[kind])
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = _filter_where(kind, flt)
        sql = (
            f"SELECT {_select(kind)}, -bm25({table}, {weights}) AS score FROM {table} "
            f"JOIN chunks c ON c.id = {table}.rowid {_joins(kind)} "
            f"WHERE {table} MATCH ? {'AND ' + where if where else ''} "
            f"ORDER BY bm25({table}, {weights}) LIMIT ?"
        )
        rows = self.db.execute(sql, (match, *params, limit)).fetchall()
        return [(_chunk(kind, row), float(row[-1])) for row in rows]

    def vector_search(
        self, kind: str, model: str, query: np.ndarray, flt: AnyFilter | None, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the chunks nearest `query` that pass `flt`, best first.

        Filters are applied inside candidate generation: the nearest chunks
        are checked against the filter in widening rounds, and a selective
        filter falls back to an exact mask of the allowed chunks, so a
        filtered search never comes back short while matching chunks exist.
        """
        vectors = self._vector_set(kind, model)
        if filter_is_empty(flt):
            return vectors.top_k(query, limit)
        want = max(limit * 4, 32)
        for _ in range(2):
            top = vectors.top_k(query, want)
            allowed = self._passing(kind, [i for i, _ in top], flt)
            hits = [(i, s) for i, s in top if i in allowed]
            if len(hits) >= limit or want >= len(vectors):
                return hits[:limit]
            want *= 8
        return vectors.top_k(query, limit, allowed=vectors.mask(self._all_passing(kind, flt)))

    def vector_count(self, kind: str, model: str) -> int:
        return len(self._vector_set(kind, model))

    def _vector_set(self, kind: str, model: str):  # -> VectorSet
        from lore.storage.sqlite.vectors import vector_set

        return vector_set(
            self.path,
            self.identity(),
            kind,
            model,
            self.vectors_version(),
            lambda: self._vector_rows(kind, model),
        )

    def _vector_rows(self, kind: str, model: str) -> list[tuple[int, bytes]]:
        return self.db.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.model = ? AND e.text_hash = c.text_hash "
            "WHERE c.kind = ?",
            (model, kind),
        ).fetchall()

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
                _epoch(commit.date),
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

    def mark_stale(self, anchor: AnchorRecord, reason: str, commit: str | None) -> None:
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

    def access_stats(self) -> dict[str, tuple[int, str]]:
        return {
            r[0]: (r[1], r[2]) for r in self.db.execute("SELECT memory_id, count, last_accessed FROM access")
        }

    def record_access(self, memory_ids: Sequence[str], when: str) -> None:
        self.db.executemany(
            "INSERT INTO access(memory_id, count, last_accessed) VALUES (?, 1, ?) "
            "ON CONFLICT(memory_id) DO UPDATE SET count = count + 1, last_accessed = excluded.last_accessed",
            [(mid, when) for mid in memory_ids],
        )


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
    if flt.tiers:
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
    if not flt.include_private:
        if flt.viewer:
            clauses.append("(m.owner IS NULL OR m.owner = ?)")
            params.append(flt.viewer)
        else:
            clauses.append("m.owner IS NULL")
    return " AND ".join(clauses), params


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
        globs: list[str] = []
        for d in flt.directories:
            # A glob names directories (src/*/api): match files under them too.
            globs += [d, f"{d}/*"] if any(ch in d for ch in "*?[") else [f"{d}/*"]
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


def _memory(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        title=row[1],
        type=row[2],
        sector=row[3],
        tags=json.loads(row[4]),
        applies_to=row[5],
        agent=row[6],
        task=row[7],
        project=row[8],
        visibility=row[9],
        storage=row[10],
        occurred_at=row[11],
        content_hash=row[12],
        confidence=row[13],
        files=json.loads(row[14]),
        summary=row[15],
        body_line=row[16],
        evidence_count=row[17],
        owner=row[18],
        superseded_by=row[19],
        path=row[20],
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


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # Owner-only: the index holds memory text and code (issue: readable by everyone was a leak).
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA busy_timeout = 30000")
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    return db


def _schema_version(db: sqlite3.Connection) -> int:
    has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    if not has_meta:
        # A non-empty database without our meta table is not ours: rebuild.
        if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise sqlite3.DatabaseError("not a Lore index")
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _migrate(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        version = _schema_version(db)  # re-read under the lock: another process may have migrated
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
