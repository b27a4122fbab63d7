"""Counts and reports over the PostgreSQL index: what a clone's index holds
(stats, the web dashboard), 003's index status of every clone (`lore db
status`), the projects of the database (`lore db projects`), and a clone's
view of its files for `lore db export`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from lore.storage.base import ChunkInput, FileDump, IndexCounts, LinkInput, MemoryFilter, SourceCounts
from lore.storage.postgres import connection, convert, sql
from lore.storage.postgres.core import StoreCore
from lore.storage.postgres.identity import without_credentials
from lore.storage.postgres.migrations import SCHEMA_VERSION, schema_version


class Reports(StoreCore):
    """Store methods that count and report (see :class:`lore.storage.base.Store`)."""

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

    def source_counts(self, model: str | None, memories: MemoryFilter | None = None) -> list[SourceCounts]:
        """Per kind, what this clone reads: indexed files (and its own that failed
        to parse), chunks, chunks with a vector of `model`, the last indexing time."""
        found: dict[str, SourceCounts] = {}
        for kind, files, last in self._rows(
            f"SELECT f.kind, count(*), {sql.iso_utc('max(f.indexed_at)')} FROM files f "
            f"WHERE {sql.scope('f')} GROUP BY f.kind",
            self._scope,
        ):
            found[kind] = SourceCounts(kind, int(files), last_indexed_at=last)
        # A failed file has no indexed row of this clone's (SQLite keeps one, with
        # its error): count it as a file too, unless another clone's good copy is indexed.
        for kind, failed, unindexed in self._rows(
            "SELECT cf.kind, count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM files f "
            f"WHERE {sql.scope('f')} AND f.path = cf.path)) FROM clone_files cf "
            "WHERE cf.clone_id = %s AND cf.error IS NOT NULL GROUP BY cf.kind",
            (*self._scope, self.clone_id),
        ):
            entry = found.setdefault(kind, SourceCounts(kind))
            entry.files += int(unindexed)
            entry.failed_files = int(failed)
        for kind, chunks, embedded in self._rows(
            "SELECT c.kind, count(*), count(e.text_hash) FROM chunks c LEFT JOIN embeddings e "
            f"ON e.model = %s AND e.text_hash = c.text_hash WHERE {sql.scope('c')} GROUP BY c.kind",
            (model or "", *self._scope),
        ):
            entry = found.setdefault(kind, SourceCounts(kind))
            entry.chunks, entry.embedded_chunks = int(chunks), int(embedded)
        if memories is not None:
            found["memory"] = self._memory_counts(model, memories)
        return list(found.values())

    def _memory_counts(self, model: str | None, flt: MemoryFilter) -> SourceCounts:
        """The memory source as the filter's viewer sees it (parsed memories only)."""
        glob = sql.wants_global(flt)
        where, params = self._where("memory", flt)
        cond = f"WHERE {sql.scope('m', glob)}{' AND ' + where if where else ''}"
        row = self._one(
            f"SELECT count(*), {sql.iso_utc('max(f.indexed_at)')} FROM memories m "
            f"JOIN files f ON f.id = m.file_id {cond}",
            (*self._scope, *params),
        )
        chunks = self._one(
            "SELECT count(*), count(e.text_hash) FROM chunks c JOIN memories m ON m.file_id = c.file_id "
            "JOIN files f ON f.id = c.file_id LEFT JOIN embeddings e ON e.model = %s "
            f"AND e.text_hash = c.text_hash {cond}",
            (model or "", *self._scope, *params),
        )
        assert row is not None and chunks is not None
        return SourceCounts("memory", int(row[0]), 0, int(chunks[0]), int(chunks[1]), row[1])

    # -- the database (lore db status, lore db projects) ---------------------------------

    def _indexing_now(self, clones: dict[int, tuple[str, str]], wanted: set[int]) -> set[int]:
        """Of the clones in `wanted`, those whose advisory lock a writer holds now."""
        held: set[int] = set()
        for clone_id in sorted(wanted):
            host, repo_path = clones.get(clone_id, ("", ""))
            key = f"lore:clone:{self.project_id}:{host}:{repo_path}"
            with self._pool.connection() as conn, conn.transaction():
                row = conn.execute(
                    "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", (key,)
                ).fetchone()
            if not (row and row[0]):
                held.add(clone_id)
        return held

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
        running = self._indexing_now(
            {c[0]: (c[1], c[2]) for c in clones}, {r[0] for r in status if r[2] == "indexing"}
        )
        sources: dict[int, list[dict[str, Any]]] = {}
        for clone_id, kind, state, when, commit, error, files in status:
            if state == "indexing" and clone_id not in running:
                # Its writer holds the clone's lock until it commits; a free lock means the
                # process stopped (killed, its connection lost) before it could say so.
                state, error = (
                    "failed",
                    "interrupted: the indexing process stopped before finishing; run `lore index`",
                )
            sources.setdefault(clone_id, []).append(
                {
                    "kind": kind,
                    "status": state,
                    "last_indexed_at": _utc(when) if when else None,
                    "last_commit_hash": commit,
                    "error_message": error,
                    "total_files": int(files),
                }
            )
        buffers, searched = self._one(
            "SELECT (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'), "
            "pg_total_relation_size('chunks'::regclass)"
        ) or (0, 0)
        return {
            "backend": "postgres",
            "database": connection.redact(self.url),
            # Lexical search reads chunk rows; when they do not fit the server's
            # buffer cache each comes from the OS (docs/postgres.md, Server settings).
            "server": {"shared_buffers_bytes": int(buffers or 0), "chunks_bytes": int(searched or 0)},
            "schema_version": version,
            "schema_version_expected": SCHEMA_VERSION,
            "user": self.role,
            "project": self._project_row(),
            "clone_id": self.clone_id,
            "clones": [
                {
                    "id": cid,
                    "host": host,
                    "repo_path": path,
                    "db_user": user,
                    "last_seen_at": _utc(seen),
                    "sources": sources.get(cid, []),
                }
                for cid, host, path, user, seen in clones
            ],
        }

    def _project_row(self) -> dict[str, Any]:
        """This project as the database names it (`lore db projects` says the same):
        the name its first clone gave it, not this clone's folder's."""
        row = self._one("SELECT name, remote_url FROM projects WHERE id = %s", (self.project_id,))
        name, remote = (row[0], row[1]) if row else (self.who.name, self.who.remote_url)
        return {
            "id": self.project_id,
            "name": name,
            "remote_url": without_credentials(remote) if remote else None,
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
                "remote_url": without_credentials(r[2]) if r[2] else None,  # a row an older Lore wrote
                "clones": int(r[3]),
                "memories": int(r[4]),
                "global_memories": int(r[5]),
                "current": r[0] == self.project_id,
            }
            for r in rows
        ]

    # -- export (lore db export) -------------------------------------------------------------

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
        errors = dict(
            self._rows(
                "SELECT path, error FROM clone_files WHERE clone_id = %s AND kind = %s AND error IS NOT NULL",
                (self.clone_id, kind),
            )
        )
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
                dump.memory = convert.memory_record(found) if found else None
            elif kind == "commit":
                found = self._one(f"SELECT {sql.COMMIT_COLUMNS} FROM commits m {where}", (file_id,))
                dump.commit = convert.commit_record(found, 0) if found else None
            if kind == "memory":
                dump.links = [
                    LinkInput(*row)
                    for row in self._rows(
                        "SELECT relation, target, target_key, kind, line, origin FROM links "
                        "WHERE file_id = %s ORDER BY ord",
                        (file_id,),
                    )
                ]
            dump.chunks = [
                ChunkInput(*row)
                for row in self._rows(
                    "SELECT text, start_line, end_line, section, symbol, language, title, keywords "
                    "FROM chunks WHERE file_id = %s ORDER BY ord",
                    (file_id,),
                )
            ]
            yield dump


def _utc(when: datetime) -> str:
    """A database time as every time Lore prints: UTC, seconds, a trailing Z."""
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
