"""Code anchors of memories in the PostgreSQL index: a clone's (they point into
its checkout), with staleness when the anchored code changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lore.storage.base import AnchorRecord
from lore.storage.postgres.core import StoreCore


class AnchorRows(StoreCore):
    """Store methods about code anchors (see :class:`lore.storage.base.Store`)."""

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

    def mark_stale(self, anchor: AnchorRecord, reason: str | None, commit: str | None) -> None:
        """Mark `anchor` stale with `reason`, or fresh again with None."""
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
