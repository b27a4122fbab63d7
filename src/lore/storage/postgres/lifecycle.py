"""The memory lifecycle in the PostgreSQL index (seed 001): attention tiers kept
between runs, evidence, error occurrences and the patterns they form, and
proposals awaiting review. All of it belongs to the project (memory ids do),
whichever clone wrote it; writes take the project's lock like other shared rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from lore.storage.base import ErrorOccurrence, ErrorPattern, EvidenceRecord, ProposalRecord, TierState
from lore.storage.postgres.core import StoreCore

_PROPOSAL_COLUMNS = (
    "id, kind, status, title, reason, confidence, evidence, memory_ids, changes, created_at, updated_at"
)


class LifecycleRows(StoreCore):
    """Store methods of the lifecycle (see :class:`lore.storage.base.Store`)."""

    # -- tiers ---------------------------------------------------------------------------

    def tier_states(self, memory_ids: Sequence[str] | None = None) -> dict[str, TierState]:
        query = "SELECT memory_id, tier, since, low_since, checked_at FROM tier_state WHERE project_id = %s"
        params: list[Any] = [self.project_id]
        if memory_ids is not None:
            query += " AND memory_id = ANY(%s)"
            params.append(list(memory_ids))
        return {row[0]: TierState(*row) for row in self._rows(query, params)}

    def put_tier_states(self, states: Sequence[TierState]) -> None:
        if not states:
            return
        latest = {s.memory_id: s for s in states}  # one row per memory, the last given wins
        with self._writing() as conn, conn.cursor() as cur:
            self._lock_project(conn)
            cur.executemany(
                "INSERT INTO tier_state(project_id, memory_id, tier, since, low_since, checked_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project_id, memory_id) DO UPDATE SET "
                "tier = excluded.tier, since = excluded.since, low_since = excluded.low_since, "
                "checked_at = excluded.checked_at",
                [
                    (self.project_id, s.memory_id, s.tier, s.since, s.low_since, s.checked_at)
                    for _, s in sorted(latest.items())
                ],
            )

    # -- evidence ------------------------------------------------------------------------

    def add_evidence(self, rows: Sequence[EvidenceRecord]) -> list[str]:
        if not rows:
            return []
        with self._writing() as conn:
            self._lock_project(conn)
            new = {
                r[0]
                for r in conn.execute(
                    "INSERT INTO evidence(project_id, key, memory_id, source, agent, occurred_at, folded) "
                    "SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                    "%s::boolean[]) ON CONFLICT (project_id, key) DO NOTHING RETURNING key",
                    (
                        self.project_id,
                        [r.key for r in rows],
                        [r.memory_id for r in rows],
                        [r.source for r in rows],
                        [r.agent for r in rows],
                        [r.occurred_at for r in rows],
                        [r.folded for r in rows],
                    ),
                ).fetchall()
            }
        return [key for key in dict.fromkeys(r.key for r in rows) if key in new]

    def evidence(self, memory_id: str | None = None) -> list[EvidenceRecord]:
        query = (
            "SELECT key, memory_id, source, agent, occurred_at, folded FROM evidence WHERE project_id = %s"
        )
        params: list[Any] = [self.project_id]
        if memory_id is not None:
            query += " AND memory_id = %s"
            params.append(memory_id)
        rows = self._rows(query + ' ORDER BY occurred_at COLLATE "C", key COLLATE "C"', params)
        return [EvidenceRecord(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def known_evidence(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        rows = self._rows(
            "SELECT key, memory_id FROM evidence WHERE project_id = %s AND key = ANY(%s)",
            [self.project_id, list(keys)],
        )
        return {str(r[0]): str(r[1]) for r in rows}

    def fold_evidence(self, memory_id: str, keys: Sequence[str] | None = None) -> int:
        with self._writing() as conn:
            self._lock_project(conn)
            if keys is None:
                return conn.execute(
                    "UPDATE evidence SET folded = true WHERE project_id = %s AND memory_id = %s AND NOT folded",
                    (self.project_id, memory_id),
                ).rowcount
            return conn.execute(
                "UPDATE evidence SET folded = true WHERE project_id = %s AND memory_id = %s AND key = ANY(%s)",
                (self.project_id, memory_id, list(keys)),
            ).rowcount

    def move_evidence(self, from_id: str, to_id: str) -> int:
        with self._writing() as conn:
            self._lock_project(conn)
            return conn.execute(
                "UPDATE evidence SET memory_id = %s, folded = false WHERE project_id = %s AND memory_id = %s",
                (to_id, self.project_id, from_id),
            ).rowcount

    def last_evidence(self, memory_ids: Sequence[str] | None = None) -> dict[str, str]:
        sql = 'SELECT memory_id, max(occurred_at COLLATE "C") FROM evidence WHERE project_id = %s'
        if memory_ids is None:
            rows = self._rows(f"{sql} GROUP BY 1", (self.project_id,))
        else:
            rows = self._rows(
                f"{sql} AND memory_id = ANY(%s) GROUP BY 1", (self.project_id, list(memory_ids))
            )
        return {r[0]: r[1] for r in rows}

    # -- error patterns --------------------------------------------------------------------

    def add_error_occurrences(self, rows: Sequence[ErrorOccurrence]) -> list[tuple[str, str]]:
        if not rows:
            return []
        with self._writing() as conn:
            self._lock_project(conn)
            new = {
                (r[0], r[1])
                for r in conn.execute(
                    "INSERT INTO error_occurrences(project_id, signature, key, source, agent, occurred_at, "
                    "example) SELECT %s, u.s, u.k, u.src, u.a, u.o, u.e FROM unnest(%s::text[], %s::text[], "
                    "%s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS u(s, k, src, a, o, e, n) "
                    "ORDER BY u.n "
                    "ON CONFLICT (project_id, signature, key) DO NOTHING RETURNING signature, key",
                    (
                        self.project_id,
                        [r.signature for r in rows],
                        [r.key for r in rows],
                        [r.source for r in rows],
                        [r.agent for r in rows],
                        [r.occurred_at for r in rows],
                        [r.example for r in rows],
                    ),
                ).fetchall()
            }
        pairs = dict.fromkeys((r.signature, r.key) for r in rows)
        return [pair for pair in pairs if pair in new]

    def error_patterns(self, signatures: Sequence[str] | None = None) -> list[ErrorPattern]:
        if signatures is not None and not signatures:
            return []
        where = "" if signatures is None else " AND o.signature = ANY(%s)"
        rows = self._rows(
            'SELECT o.signature, count(*), min(o.occurred_at COLLATE "C"), max(o.occurred_at COLLATE "C"), '
            "(SELECT x.example FROM error_occurrences x WHERE x.project_id = o.project_id "
            'AND x.signature = o.signature ORDER BY x.occurred_at COLLATE "C", x.id LIMIT 1), '
            "p.memory_id, array_agg(DISTINCT coalesce(o.agent, '')) "
            "FROM error_occurrences o LEFT JOIN error_patterns p ON p.project_id = o.project_id "
            f"AND p.signature = o.signature WHERE o.project_id = %s{where} "
            "GROUP BY o.project_id, o.signature, p.memory_id "
            'ORDER BY count(*) DESC, min(o.occurred_at COLLATE "C"), o.signature COLLATE "C"',
            (self.project_id, *([list(signatures)] if signatures is not None else [])),
        )
        return [
            ErrorPattern(r[0], int(r[1]), r[2], r[3], r[4], r[5], sorted(a for a in r[6] if a)) for r in rows
        ]

    def rewrite_error_text(self, rewrite: Callable[[str], str]) -> int:
        changed = 0
        with self._writing() as conn:
            self._lock_project(conn)
            rows = conn.execute(
                "SELECT id, signature, example FROM error_occurrences WHERE project_id = %s",
                (self.project_id,),
            ).fetchall()
            for row_id, signature, example in rows:
                new_signature, new_example = rewrite(signature), rewrite(example)
                if (new_signature, new_example) == (signature, example):
                    continue
                changed += 1
                conn.execute(
                    "INSERT INTO error_occurrences(project_id, signature, key, source, agent, occurred_at, example) "
                    "SELECT project_id, %s, key, source, agent, occurred_at, %s FROM error_occurrences "
                    "WHERE id = %s ON CONFLICT (project_id, signature, key) DO NOTHING",
                    (new_signature, new_example, row_id),
                )
                conn.execute("DELETE FROM error_occurrences WHERE id = %s", (row_id,))
            patterns = conn.execute(
                "SELECT signature, memory_id FROM error_patterns WHERE project_id = %s", (self.project_id,)
            ).fetchall()
            for signature, memory_id in patterns:
                new_signature = rewrite(signature)
                if new_signature == signature:
                    continue
                changed += 1
                conn.execute(
                    "INSERT INTO error_patterns(project_id, signature, memory_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT (project_id, signature) DO NOTHING",
                    (self.project_id, new_signature, memory_id),
                )
                conn.execute(
                    "DELETE FROM error_patterns WHERE project_id = %s AND signature = %s",
                    (self.project_id, signature),
                )
        return changed

    def set_error_memory(self, signature: str, memory_id: str) -> None:
        with self._writing() as conn:
            self._lock_project(conn)
            conn.execute(
                "INSERT INTO error_patterns(project_id, signature, memory_id) VALUES (%s, %s, %s) "
                "ON CONFLICT (project_id, signature) DO UPDATE SET memory_id = excluded.memory_id",
                (self.project_id, signature, memory_id),
            )

    # -- proposals ---------------------------------------------------------------------------

    def put_proposal(self, proposal: ProposalRecord) -> None:
        p = proposal
        # A change to a clone's local memory carries its text: as private as the memory.
        owners = {self._owner_of(str(change.get("path", ""))) for change in p.changes}
        with self._writing() as conn:
            self._lock_project(conn)
            conn.execute(
                f"INSERT INTO proposals(project_id, owner_role, {_PROPOSAL_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (project_id, id) DO UPDATE SET owner_role = excluded.owner_role, "
                "kind = excluded.kind, status = excluded.status, title = excluded.title, "
                "reason = excluded.reason, confidence = excluded.confidence, evidence = excluded.evidence, "
                "memory_ids = excluded.memory_ids, changes = excluded.changes, "
                "created_at = excluded.created_at, updated_at = excluded.updated_at",
                (
                    self.project_id,
                    self.role if self.role in owners else "",
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
        query = f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE project_id = %s"
        params: list[Any] = [self.project_id]
        if statuses is not None:
            query += " AND status = ANY(%s)"
            params.append(list(statuses))
        rows = self._rows(query + ' ORDER BY created_at COLLATE "C", id COLLATE "C"', params)
        return [_proposal(row) for row in rows]

    def proposal(self, proposal_id: str) -> ProposalRecord | None:
        base = f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE project_id = %s"
        row = self._one(f"{base} AND id = %s", (self.project_id, proposal_id))
        if row is None and len(proposal_id) >= 4:
            rows = self._rows(
                f"{base} AND left(id, %s) = %s LIMIT 2", (self.project_id, len(proposal_id), proposal_id)
            )
            row = rows[0] if len(rows) == 1 else None
        return _proposal(row) if row else None


def _proposal(row: Sequence[Any]) -> ProposalRecord:
    return ProposalRecord(
        id=row[0],
        kind=row[1],
        status=row[2],
        title=row[3],
        reason=row[4],
        confidence=float(row[5]),
        evidence=int(row[6]),
        memory_ids=list(row[7]),
        changes=list(row[8]),
        created_at=row[9],
        updated_at=row[10],
    )
