"""Memories in the PostgreSQL index: the project's committed ones (every clone
sees them), a clone's local ones (private and session: its database role's
only), other projects' global ones (003's ``is_global``), and the project's
access statistics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lore.storage.base import MemoryFilter, MemoryRecord, MemoryStamp
from lore.storage.postgres import convert, sql
from lore.storage.postgres.core import StoreCore, is_local_memory

_GROUP_COLUMNS = ("type", "sector", "visibility", "storage", "agent")


class MemoryRows(StoreCore):
    """Store methods about memories (see :class:`lore.storage.base.Store`)."""

    def put_memory(self, file_id: int, memory: MemoryRecord) -> None:
        # 003: a global memory is shared from its project's committed rows only.
        global_ = memory.is_global and not is_local_memory(memory.path)
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO memories(file_id, project_id, clone_id, owner_role, is_global, id, title, type, "
                "sector, tags, applies_to, agent, task, project, visibility, storage, occurred_at, "
                "content_hash, confidence, files, summary, body_line, evidence_count, owner, superseded_by, "
                "source) "
                "SELECT f.id, f.project_id, f.clone_id, f.owner_role, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM files f WHERE f.id = %s",
                (
                    global_,
                    memory.id,
                    convert.clean(memory.title),
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
                    convert.clean(memory.summary),
                    memory.body_line,
                    memory.evidence_count,
                    memory.owner,
                    memory.superseded_by,
                    memory.source,
                    file_id,
                ),
            )
            if global_:  # chunks inherit it from the file row
                conn.execute("UPDATE files SET is_global = true WHERE id = %s", (file_id,))
                conn.execute("UPDATE chunks SET is_global = true WHERE file_id = %s", (file_id,))

    def memories(
        self, flt: MemoryFilter | None = None, *, order: str = "recent", limit: int | None = None
    ) -> list[MemoryRecord]:
        path, head, source, params = self._memory_source(flt)
        query = (
            f"SELECT {sql.MEMORY_COLUMNS.format(path=path)} {source} "
            f'ORDER BY {sql.ORDERS[order]}, f.path COLLATE "C"'
        )
        if limit:
            query += f" LIMIT {int(limit)}"
        return [convert.memory_record(row) for row in self._rows(query, (*head, *params))]

    def memory_page(
        self,
        flt: MemoryFilter,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[int, list[MemoryRecord]]:
        order = sql.page_order(sort, descending)
        path, head, source, params = self._memory_source(flt)
        select = f"SELECT {sql.MEMORY_COLUMNS.format(path=path)}"
        if limit is None:
            rows = self._rows(f"{select} {source} ORDER BY {order}", (*head, *params))
            records = [convert.memory_record(row) for row in rows]
            return len(records), records[offset:]
        row = self._one(f"SELECT count(*) {source}", params)
        total = int(row[0]) if row else 0
        if not total or offset >= total:
            return total, []
        # The page is chosen over narrow rows (file ids in sort order); only its
        # rows are read whole, as the SQLite backend does.
        chosen = f"SELECT m.file_id {source} ORDER BY {order} LIMIT %s OFFSET %s"
        rows = self._rows(
            f"{select} FROM memories m JOIN files f ON f.id = m.file_id WHERE m.file_id IN ({chosen}) "
            f"ORDER BY {order}",
            (*head, *params, int(limit), int(offset)),
        )
        return total, [convert.memory_record(row) for row in rows]

    def memory_stamps(
        self, flt: MemoryFilter, *, sort: str = "occurred_at", descending: bool = True
    ) -> list[MemoryStamp]:
        order = sql.page_order(sort, descending)
        path, head, source, params = self._memory_source(flt)
        rows = self._rows(
            f"SELECT m.id, {path}, m.occurred_at, m.confidence, m.source {source} ORDER BY {order}",
            (*head, *params),
        )
        return [MemoryStamp(r[0], r[1], r[2], float(r[3]), r[4]) for r in rows]

    def _memory_source(self, flt: MemoryFilter | None) -> tuple[str, list[Any], str, list[Any]]:
        """The memories `flt` passes in this clone's scope: (path expression, its
        parameters, ``FROM … WHERE …`` over ``memories m`` and ``files f``, its
        parameters). Other projects' global memories show as ``@project/path``."""
        glob = sql.wants_global(flt)
        where, params = self._where("memory", flt)
        source = (
            f"FROM memories m JOIN files f ON f.id = m.file_id "
            f"WHERE {sql.scope('m', glob)}{' AND ' + where if where else ''}"
        )
        if glob:
            return sql.FOREIGN_PATH, [self.project_id], source, [*self._scope, *params]
        return "f.path", [], source, [*self._scope, *params]

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

    def group_counts(self, column: str) -> dict[str, int]:
        if column not in _GROUP_COLUMNS:
            raise ValueError(f"cannot group memories by {column!r}")
        rows = self._rows(
            f"SELECT coalesce({column}, ''), count(*) FROM memories m WHERE {sql.scope('m')} "
            "GROUP BY 1 ORDER BY 2 DESC, 1",
            self._scope,
        )
        return {r[0]: int(r[1]) for r in rows}

    # -- access statistics (the project's, shared by its clones) --------------------------

    def access_stats(self, memory_ids: Sequence[str] | None = None) -> dict[str, tuple[int, str]]:
        sql = "SELECT memory_id, count, last_accessed FROM access WHERE project_id = %s"
        if memory_ids is None:
            rows = self._rows(sql, (self.project_id,))
        else:
            rows = self._rows(sql + " AND memory_id = ANY(%s)", (self.project_id, list(memory_ids)))
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
            cur.execute("DELETE FROM access WHERE project_id = %s", (self.project_id,))
            cur.executemany(
                "INSERT INTO access(project_id, memory_id, count, last_accessed) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (project_id, memory_id) DO UPDATE SET count = excluded.count, "
                "last_accessed = excluded.last_accessed",
                [(self.project_id, mid, count, when) for mid, (count, when) in sorted(stats.items())],
            )
