"""The SQLite side of the memory lifecycle (seed 001): tiers, evidence, error patterns, proposals.

A mixin of :class:`~lore.storage.sqlite.store.SQLiteStore` (it uses the
store's connection, ``self.db``), kept apart so the lifecycle's statements
read as one piece. Tables: ``tier_state``, ``evidence``,
``error_occurrences``, ``error_patterns``, ``proposals`` (migration 7).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from lore.storage.base import (
    ErrorOccurrence,
    ErrorPattern,
    EvidenceRecord,
    ProposalRecord,
    TierState,
    batched,
)

_MAX_IN = 900
_PROPOSAL_COLUMNS = (
    "id, kind, status, title, reason, confidence, evidence, memory_ids, changes, created_at, updated_at"
)


class LifecycleTables:
    """Typed access to the lifecycle tables (see :class:`lore.storage.base.Store`)."""

    db: sqlite3.Connection

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
        self.db.executemany(
            "INSERT OR REPLACE INTO tier_state(memory_id, tier, since, low_since, checked_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [(s.memory_id, s.tier, s.since, s.low_since, s.checked_at) for s in states],
        )

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

    def last_evidence(self) -> dict[str, str]:
        rows = self.db.execute("SELECT memory_id, max(occurred_at) FROM evidence GROUP BY memory_id")
        return {r[0]: r[1] for r in rows}

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


def _proposal(row: Sequence) -> ProposalRecord:
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
