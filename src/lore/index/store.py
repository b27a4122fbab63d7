"""The derived index: SQLite (WAL, FTS5), rebuilt from the files whenever needed.

SQL lives in the index package — here, and anchors.py for code anchors — so
another backend (PostgreSQL + pgvector) implements the same methods. The index never holds anything that can't be recomputed
from `.lore/` and the repository, except access statistics (which reading
must not write into committed files).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from lore.index.migrations import MIGRATIONS, SCHEMA_VERSION


class FileState(NamedTuple):
    id: int
    sha256: str
    mtime_ns: int
    size: int
    error: str | None


@dataclass
class ChunkRow:
    """A chunk to insert (section/symbol/language depend on the kind)."""

    text: str
    start_line: int
    end_line: int
    section: str | None = None
    symbol: str | None = None
    language: str | None = None
    title: str = ""
    keywords: str = ""


def embedding_text(kind: str, title: str, text: str) -> str:
    """What gets embedded for a chunk: its title (a memory's title, a code
    unit's qualified symbol) then its text. Never the file path, so a renamed
    file keeps its vectors; commits embed their message as is."""
    return f"{title}\n{text}" if title and kind != "commit" else text


def text_hash(text: str) -> str:
    """Content key of a chunk: equal text shares one embedding wherever it lives."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class SQLiteIndex:
    """One connection to `.lore/index.db`. Not shared across threads."""

    def __init__(self, path: Path):
        self.path = path
        self.notices: list[str] = []
        self.db = self._open()

    # -- opening, migrating, recovering -------------------------------------

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
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; taken IMMEDIATE so concurrent writers queue
        on busy_timeout instead of failing half way."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def vectors_version(self) -> int:
        """Changes only when chunks or vectors do (not on access stats or meta),
        so cached matrices survive reads."""
        return int(self.get_meta("vectors_version", "0"))

    def identity(self) -> str:
        """A random id of this index file: a rebuilt index starts its version
        counters again, and caches must not mistake it for the old one."""
        found = self.get_meta("index_id")
        if found is None:
            import uuid

            with self.write():
                self.db.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', ?)", (uuid.uuid4().hex,)
                )
            found = self.get_meta("index_id")
        return found

    def _vectors_changed(self) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES ('vectors_version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = value + 1"
        )

    # -- meta ----------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- files ---------------------------------------------------------------

    def file_states(self, kind: str) -> dict[str, FileState]:
        cur = self.db.cursor()
        cur.row_factory = None  # plain tuples: this runs before every read
        rows = cur.execute(
            "SELECT path, id, sha256, mtime_ns, size, error FROM files WHERE kind = ?", (kind,)
        )
        return {row[0]: FileState._make(row[1:]) for row in rows}

    def paths(self, kind: str) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT path FROM files WHERE kind = ?", (kind,))}

    def touch_file(self, file_id: int, mtime_ns: int, size: int) -> None:
        self.db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?", (mtime_ns, size, file_id))

    def put_file(
        self, path: str, kind: str, sha256: str, mtime_ns: int, size: int, error: str | None = None
    ) -> int:
        """Insert or replace a file row, dropping whatever was indexed for it."""
        if self.db.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount:
            self._vectors_changed()
        cur = self.db.execute(
            "INSERT INTO files(path, kind, sha256, mtime_ns, size, error, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (path, kind, sha256, mtime_ns, size, error, _now()),
        )
        return cur.lastrowid

    def delete_files(self, paths: Iterable[str]) -> int:
        count = 0
        for path in paths:
            count += self.db.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount
        if count:
            self._vectors_changed()
        return count

    def file_errors(self, kind: str) -> list[tuple[str, str]]:
        return list(
            self.db.execute(
                "SELECT path, error FROM files WHERE kind = ? AND error IS NOT NULL ORDER BY path", (kind,)
            )
        )

    # -- memories ------------------------------------------------------------

    def put_memory(self, file_id: int, memory, body_line: int) -> None:
        self.db.execute(
            "INSERT INTO memories(file_id, id, title, type, sector, tags, applies_to, agent, task, "
            "project, visibility, storage, occurred_at, content_hash, confidence, files, summary, "
            "body_line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                body_line,
            ),
        )

    def put_chunks(self, file_id: int, kind: str, chunks: list[ChunkRow]) -> None:
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

    def find_duplicate(self, occurred_at: str, content_hash: str) -> str | None:
        row = self.db.execute(
            "SELECT f.path FROM memories m JOIN files f ON f.id = m.file_id "
            "WHERE m.occurred_at = ? AND m.content_hash = ? LIMIT 1",
            (occurred_at, content_hash),
        ).fetchone()
        return row[0] if row else None

    def memory_paths(self, key: str) -> list[str]:
        """Paths of memories whose id is `key`, or starts with it, or whose file stem is it."""
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

    def list_memories(
        self, where: str = "", params: tuple = (), order: str = "m.occurred_at DESC", limit: int | None = None
    ) -> list[sqlite3.Row]:
        sql = (
            f"SELECT m.*, f.path FROM memories m JOIN files f ON f.id = m.file_id "
            f"{'WHERE ' + where if where else ''} ORDER BY {order}"
        )
        if limit:
            sql += f" LIMIT {int(limit)}"
        return self.db.execute(sql, params).fetchall()

    def search_memory_chunks(self, match: str, where: str, params: tuple, limit: int) -> list[sqlite3.Row]:
        """BM25 over memory chunks; rows carry `bm25` (higher is better)."""
        sql = (
            "SELECT c.id AS chunk_id, c.section, c.start_line, c.end_line, c.text, "
            "-bm25(chunks_fts, 4.0, 2.0, 1.0) AS bm25, m.*, f.path "
            "FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            "JOIN memories m ON m.file_id = c.file_id JOIN files f ON f.id = c.file_id "
            f"WHERE chunks_fts MATCH ? {'AND ' + where if where else ''} "
            "ORDER BY bm25(chunks_fts, 4.0, 2.0, 1.0) LIMIT ?"
        )
        return self.db.execute(sql, (match, *params, limit)).fetchall()

    def first_chunk(self, path: str) -> dict | None:
        row = self.db.execute(
            "SELECT c.id AS chunk_id, c.section, c.start_line, c.end_line, c.text "
            "FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? "
            "ORDER BY c.ord LIMIT 1",
            (path,),
        ).fetchone()
        return dict(row) if row else None

    # -- access statistics (index only: reading must not dirty committed files) --

    def access_stats(self) -> dict[str, tuple[int, str]]:
        return {
            r[0]: (r[1], r[2]) for r in self.db.execute("SELECT memory_id, count, last_accessed FROM access")
        }

    def record_access(self, memory_ids: list[str], when: str) -> None:
        self.db.executemany(
            "INSERT INTO access(memory_id, count, last_accessed) VALUES (?, 1, ?) "
            "ON CONFLICT(memory_id) DO UPDATE SET count = count + 1, last_accessed = excluded.last_accessed",
            [(mid, when) for mid in memory_ids],
        )

    # -- embeddings -----------------------------------------------------------

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
        return self.db.execute(
            "SELECT count(*) FROM (SELECT DISTINCT c.text_hash FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = c.text_hash) "
            "AND (? IS NULL OR c.kind = ?) LIMIT ?)",
            (model, kind, kind, -1 if cap is None else cap),
        ).fetchone()[0]

    def all_embedded(self, model: str) -> bool:
        """True when nothing changed since every chunk had a vector (no scan needed)."""
        return self.get_meta(f"embedded:{model}") == str(self.vectors_version())

    def mark_all_embedded(self, model: str) -> None:
        self.set_meta(f"embedded:{model}", str(self.vectors_version()))

    def count_embeddings(self, model: str) -> int:
        return self.db.execute("SELECT count(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]

    def put_embeddings(self, model: str, items: list[tuple[str, bytes]]) -> None:
        self._vectors_changed()
        self.db.executemany(
            "INSERT OR REPLACE INTO embeddings(model, text_hash, vector) VALUES (?, ?, ?)",
            [(model, h, v) for h, v in items],
        )

    def drop_embeddings(self, keep_model: str | None) -> int:
        """Forget vectors of every other model (after a model change)."""
        self._vectors_changed()
        return self.db.execute("DELETE FROM embeddings WHERE model IS NOT ?", (keep_model,)).rowcount

    def vector_rows(self, kind: str, model: str) -> list[tuple[int, bytes]]:
        """(chunk id, vector bytes) of every embedded chunk of `kind`."""
        cur = self.db.cursor()
        cur.row_factory = None
        return cur.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
            "ON e.model = ? AND e.text_hash = c.text_hash WHERE c.kind = ?",
            (model, kind),
        ).fetchall()

    def memory_chunk_rows(self, chunk_ids: list[int], where: str, params: tuple) -> list[sqlite3.Row]:
        """Memory chunks by id, with their memory's fields, passing `where`."""
        marks = ",".join("?" * len(chunk_ids))
        sql = (
            "SELECT c.id AS chunk_id, c.section, c.start_line, c.end_line, c.text, m.*, f.path "
            "FROM chunks c JOIN memories m ON m.file_id = c.file_id JOIN files f ON f.id = c.file_id "
            f"WHERE c.id IN ({marks}) {'AND ' + where if where else ''}"
        )
        return self.db.execute(sql, (*chunk_ids, *params)).fetchall()

    # -- commits -------------------------------------------------------------

    def put_commit(self, file_id: int, commit) -> None:
        self.db.execute(
            "INSERT INTO commits(file_id, sha, author, email, date, subject, body, files) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                file_id,
                commit.sha,
                commit.author,
                commit.email,
                commit.date,
                commit.subject,
                commit.body,
                json.dumps(list(commit.files)),
            ),
        )

    def prune_commits(self, keep: int) -> int:
        """Drop all but the `keep` newest commits."""
        pruned = self.db.execute(
            "DELETE FROM files WHERE id IN (SELECT file_id FROM commits "
            "ORDER BY date DESC LIMIT -1 OFFSET ?)",
            (keep,),
        ).rowcount
        if pruned:
            self._vectors_changed()
        return pruned

    # -- search over code and commits ------------------------------------------

    def search_chunks(
        self, kind: str, match: str, limit: int, where: str = "", params: tuple = ()
    ) -> list[sqlite3.Row]:
        """BM25 over code or commit chunks; rows carry `bm25` (higher is better)."""
        table = {"code": "code_fts", "commit": "commit_fts"}[kind]
        extra = "commits m ON m.file_id = c.file_id" if kind == "commit" else ""
        sql = (
            f"SELECT c.*, c.id AS chunk_id, -bm25({table}, 4.0, 1.0, 1.0) AS bm25, f.path "
            f"{', m.sha, m.author, m.date, m.subject, m.files' if extra else ''} "
            f"FROM {table} JOIN chunks c ON c.id = {table}.rowid JOIN files f ON f.id = c.file_id "
            f"{'JOIN ' + extra if extra else ''} "
            f"WHERE {table} MATCH ? {'AND ' + where if where else ''} "
            f"ORDER BY bm25({table}, 4.0, 1.0, 1.0) LIMIT ?"
        )
        return self.db.execute(sql, (match, *params, limit)).fetchall()

    def chunk_rows(
        self, kind: str, chunk_ids: list[int], where: str = "", params: tuple = ()
    ) -> list[sqlite3.Row]:
        marks = ",".join("?" * len(chunk_ids))
        extra = "JOIN commits m ON m.file_id = c.file_id" if kind == "commit" else ""
        sql = (
            f"SELECT c.*, c.id AS chunk_id, f.path "
            f"{', m.sha, m.author, m.date, m.subject, m.files' if extra else ''} "
            f"FROM chunks c JOIN files f ON f.id = c.file_id {extra} "
            f"WHERE c.id IN ({marks}) {'AND ' + where if where else ''}"
        )
        return self.db.execute(sql, (*chunk_ids, *params)).fetchall()

    def check(self) -> str:
        """'ok', or what is wrong with the database and its full-text indexes."""
        try:
            result = self.db.execute("PRAGMA quick_check").fetchone()[0]
            for table in ("chunks_fts", "code_fts", "commit_fts"):
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            return result
        except sqlite3.DatabaseError as err:
            return str(err)

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "memories": one("SELECT count(*) FROM memories"),
            "memory_files_with_errors": one(
                "SELECT count(*) FROM files WHERE kind='memory' AND error IS NOT NULL"
            ),
            "chunks": one("SELECT count(*) FROM chunks"),
            "memory_chunks": one("SELECT count(*) FROM chunks WHERE kind='memory'"),
            "code_files": one("SELECT count(*) FROM files WHERE kind='code'"),
            "code_chunks": one("SELECT count(*) FROM chunks WHERE kind='code'"),
            "commits": one("SELECT count(*) FROM commits"),
        }

    def group_counts(self, column: str) -> dict[str, int]:
        assert column in ("type", "sector", "visibility", "storage", "agent")
        rows = self.db.execute(
            f"SELECT coalesce({column}, ''), count(*) FROM memories GROUP BY 1 ORDER BY 2 DESC"
        )
        return dict(rows.fetchall())


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
