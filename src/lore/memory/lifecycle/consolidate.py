"""Consolidation (seed 001): near-duplicates merged, contradictions and supersession found, promotions proposed.

One pass over the memories the acting agent sees (durable, daily and
private; not raw session notes, session summaries or archives):

1. daily memories older than 30 days are archived (:mod:`.daily`);
2. each memory is compared with the few memories that share its words
   (a keyword search on its title and text, so the pass stays near-linear):

   - **contradiction** (checked first: two texts that differ by a "not"
     share most of their words): same subject, and the newer says the
     opposite (:func:`~.similarity.contradiction`) → ``contradiction`` proposal;
   - **near-duplicates** (:data:`~.similarity.NEAR_DUPLICATE`): when the
     copy to drop is a local file (daily, private) it is merged at once —
     its evidence counts for the memory kept (the committed one if one is
     committed, else the older) and it goes to the trash. Two committed
     copies make a ``merge`` proposal;
   - **supersession**: the newer memory contains at least 80% of the older
     one's word runs and is at least 20% longer → ``supersede`` proposal;

3. local memories with confidence > 0.9 and evidence ≥ 5 get a
   ``promote`` proposal (to durable, committed);
4. every tier is decided again.

Only local merges change files; everything else waits in ``lore review``.
"""

from __future__ import annotations

import re
from dataclasses import field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from lore.errors import LoreError
from lore.memory import markdown, sync
from lore.memory.lifecycle import evidence, proposals, similarity
from lore.memory.lifecycle.clock import iso, parse
from lore.records import Record, datarecord
from lore.storage import EvidenceRecord, MemoryRecord

if TYPE_CHECKING:
    from lore.memory.lifecycle import Lifecycle
    from lore.memory.model import Memory

SUPERSEDES = 0.8
LONGER = 1.2
CANDIDATES = 8
_SKIP_TIERS = ["session", "session-summary", "archive"]


@datarecord
class ConsolidationReport(Record):
    """What one consolidation pass did and proposed."""

    checked: int = 0
    merged: list[dict[str, Any]] = field(default_factory=list)  # {kept, merged, similarity}
    archived: list[str] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)  # {id, kind, status, title}
    tiers_moved: dict[str, list[str]] = field(default_factory=dict)


def consolidate(lifecycle: Lifecycle, *, recent_days: float | None = None) -> ConsolidationReport:
    """One consolidation pass (all memories, or those of the last `recent_days`)."""
    from lore.memory.lifecycle.daily import archive_old_daily

    report = ConsolidationReport()
    report.archived = archive_old_daily(lifecycle)
    # Vectors (loading the model) only for a full pass: the session-start one must stay cheap.
    pass_ = _Pass(lifecycle, report, vectors=recent_days is None)
    records = pass_.records()
    since = lifecycle.now() - timedelta(days=recent_days) if recent_days is not None else None
    for record in records:
        when = parse(record.occurred_at)
        if since is not None and (when is None or when < since):
            continue
        if record.id in pass_.gone:
            continue
        report.checked += 1
        for other in pass_.candidates(record):
            pass_.compare(record, other)
    for record in records:
        if record.id not in pass_.gone:
            pass_.maybe_promote(record)
    report.tiers_moved = lifecycle.advance().moved
    return report


class _Pass:
    """State of one consolidation pass: memories seen, bodies read, pairs compared."""

    def __init__(self, lifecycle: Lifecycle, report: ConsolidationReport, *, vectors: bool):
        self.lc = lifecycle
        self.report = report
        self.vectors = vectors
        self.flt = lifecycle.memories.filter(exclude_storage=_SKIP_TIERS, exclude_tiers=["archive"])
        self.by_id: dict[str, MemoryRecord] = {}
        self.bodies: dict[str, str] = {}
        self.compared: set[frozenset[str]] = set()
        self.gone: set[str] = set()  # merged away in this pass
        self.signatures: dict[str, str | None] = {}

    def records(self) -> list[MemoryRecord]:
        self.lc.memories.sync()
        found = [r for r in self.lc.store.memories(self.flt, order="oldest") if r.superseded_by is None]
        self.by_id = {r.id: r for r in found}
        return found

    def body(self, record: MemoryRecord) -> str:
        if record.id not in self.bodies:
            self.bodies[record.id] = self.lc.body_of(record)
        return self.bodies[record.id]

    def signature(self, record: MemoryRecord) -> str | None:
        """The error an auto-captured gotcha is about (its file's `error_signature`), else None."""
        if record.type != "gotcha":
            return None
        if record.id not in self.signatures:
            memory = self._load(record)
            found = memory.extra.get("error_signature") if memory is not None else None
            self.signatures[record.id] = found if isinstance(found, str) else None
        return self.signatures[record.id]

    def candidates(self, record: MemoryRecord) -> list[MemoryRecord]:
        """The memories most likely to say the same as `record` (sharing its words)."""
        from lore.search.text import terms

        words = terms(f"{record.title} {' '.join(record.tags)} {self.body(record)[:600]}")[:32]
        out: dict[str, MemoryRecord] = {}
        for chunk, _ in self.lc.store.lexical_search("memory", words, self.flt, 60) if words else []:
            other = chunk.memory
            if other is None or other.id == record.id or other.id in self.gone or other.id not in self.by_id:
                continue
            out.setdefault(other.id, self.by_id[other.id])
            if len(out) >= CANDIDATES:
                break
        near = self.lc.near_duplicate(
            record.title,
            self.body(record),
            exclude=[record.id, *self.gone],
            vectors=self.vectors,
            body_of=self.body,
        )
        if near is not None and near[0].id in self.by_id:
            out.setdefault(near[0].id, self.by_id[near[0].id])
        return list(out.values())

    def age(self, record: MemoryRecord) -> tuple[Any, int, str]:
        """What orders two memories oldest first: their time, then (times have whole
        seconds: two written in the same second) when their files were last written."""
        try:
            written = (self.lc.project.root / record.path).stat().st_mtime_ns
        except OSError:
            written = 0
        return (parse(record.occurred_at) or parse("1970-01-01"), written, record.path)

    def compare(self, a: MemoryRecord, b: MemoryRecord) -> None:
        pair = frozenset((a.id, b.id))
        if pair in self.compared or a.id in self.gone or b.id in self.gone:
            return
        self.compared.add(pair)
        if a.owner != b.owner:
            # One agent's private memory and a memory others see (or another agent's):
            # merged, its text would reach them; proposed, its title would; and a
            # shared memory would go to the trash for a copy they cannot see.
            return
        if _series(a.title, b.title):
            # "Step 1" and "Step 2": two items of a series, whose texts differ by their
            # numbers. Read as one fact, each pair was a contradiction (8 steps: 28 proposals).
            return
        older, newer = sorted((a, b), key=self.age)
        old_text, new_text = self.body(older), self.body(newer)
        if not old_text or not new_text:
            return
        signatures = (self.signature(older), self.signature(newer))
        if None not in signatures and signatures[0] != signatures[1]:
            # Two gotchas of two errors: their bodies share a template, not a subject.
            return
        old_runs, new_runs = similarity.shingles(old_text), similarity.shingles(new_text)
        score = similarity.jaccard(old_runs, new_runs)
        # A contradiction first: two texts that differ by a "not" share most of their words.
        if similarity.same_subject(
            older.tags, f"{older.title}\n{old_text}", newer.tags, f"{newer.title}\n{new_text}"
        ):
            conflict = similarity.contradiction(new_text, old_text)
            if conflict is not None:
                self.supersede(
                    older,
                    newer,
                    "contradiction",
                    f"{conflict.reason}: now {conflict.newer!r}, before {conflict.older!r}",
                    conflict.confidence,
                )
                return
        if score >= similarity.NEAR_DUPLICATE:
            self.merge(older, newer, score)
        elif similarity.containment(old_runs, new_runs) >= SUPERSEDES and len(new_text) >= LONGER * len(
            old_text
        ):
            self.supersede(
                older,
                newer,
                "supersede",
                f"it says everything {older.title!r} says, and more",
                similarity.containment(old_runs, new_runs),
            )

    # -- the findings ----------------------------------------------------------------------

    def merge(self, older: MemoryRecord, newer: MemoryRecord, score: float) -> None:
        keep, drop = older, newer
        if sync.is_committed(newer.path) and not sync.is_committed(older.path):
            keep, drop = newer, older
        added = similarity.beyond(self.body(drop), self.body(keep))
        fuller = _appended(self.body(keep), added)  # what only the other says is kept too
        if not sync.is_committed(drop.path) and not (added and sync.is_committed(keep.path)):
            if added:
                self.lc.memories.update(keep.path, body=fuller)
                self.bodies[keep.id] = fuller
            absorb(self.lc, keep, drop)
            self.gone.add(drop.id)
            self.report.merged.append({"kept": keep.id, "merged": drop.id, "similarity": round(score, 3)})
            return
        # A committed memory is a person's: the merge (with what only the other says) is proposed.
        memory = self._load(keep)
        if memory is None:
            return
        if added:
            memory.body = fuller
        memory.tags = _union(memory.tags, drop.tags)
        memory.extra["evidence_count"] = keep.evidence_count + drop.evidence_count
        self._propose(
            "merge",
            f"Merge {drop.title!r} into {keep.title!r}",
            f"near-duplicates ({score:.0%} of their word runs in common)",
            score,
            keep.evidence_count + drop.evidence_count,
            [keep.id, drop.id],
            [proposals.rewrite_change(self.lc, keep, memory), proposals.trash_change(self.lc, drop)],
        )

    def supersede(
        self, older: MemoryRecord, newer: MemoryRecord, kind: str, reason: str, confidence: float
    ) -> None:
        memory = self._load(older)
        if memory is None:
            return
        memory.extra["superseded_by"] = newer.id
        memory.extra["superseded_reason"] = reason[:300]
        memory.extra["evidence_count"] = older.evidence_count
        verb = "Contradicted" if kind == "contradiction" else "Superseded"
        self._propose(
            kind,
            f"{verb}: {older.title!r} by {newer.title!r}",
            reason,
            confidence,
            newer.evidence_count,
            [older.id, newer.id],
            [proposals.rewrite_change(self.lc, older, memory), proposals.kept_change(self.lc, newer)],
        )

    def maybe_promote(self, record: MemoryRecord) -> None:
        if sync.is_committed(record.path) or record.storage not in ("daily", "durable"):
            return
        if record.visibility == "private":
            return  # sharing a private memory is its agent's call, not a heuristic's
        if not (
            record.confidence > proposals.MIN_CONFIDENCE and record.evidence_count >= proposals.MIN_EVIDENCE
        ):
            return
        memory = self._load(record)
        if memory is None:
            return
        memory.extra["evidence_count"] = record.evidence_count
        target = sync.folder_of(self.lc.project, "durable") / markdown.file_name(memory)
        rel = self.lc.project.rel(target)
        self._propose(
            "promote",
            f"Promote to durable: {record.title!r}",
            f"seen {record.evidence_count} times with confidence {record.confidence:.2f}",
            record.confidence,
            record.evidence_count,
            [record.id],
            [proposals.create_change(rel, memory), proposals.trash_change(self.lc, record)],
        )

    def _propose(
        self,
        kind: str,
        title: str,
        reason: str,
        confidence: float,
        count: int,
        ids: list[str],
        changes: list[dict[str, Any]],
    ) -> None:
        made = proposals.propose(
            self.lc,
            kind=kind,
            title=title,
            reason=reason,
            confidence=confidence,
            evidence=count,
            memory_ids=ids,
            changes=changes,
        )
        if made is not None:
            self.report.proposals.append(
                {"id": made.id, "kind": kind, "status": made.status, "title": made.title}
            )

    def _load(self, record: MemoryRecord) -> Memory | None:
        try:
            return self.lc.memories.load(record.path)
        except LoreError:
            return None


# A small whole number standing alone (Step 2, Part 10): not a version (3.11), a port or a year.
_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?![\d.])")


def _series(a: str, b: str) -> bool:
    """Whether two titles name two items of one series: the same but for their
    small numbers ("Step 1", "Step 2"; "Python 3.10" and "Python 3.11" are not)."""
    return a != b and _NUMBER.search(a) is not None and _NUMBER.sub("#", a) == _NUMBER.sub("#", b)


def absorb(lifecycle: Lifecycle, keep: MemoryRecord, drop: MemoryRecord) -> None:
    """Merge a local near-duplicate into the memory kept: every observation of
    `drop` becomes evidence for `keep`, then `drop` goes to the trash."""
    memories = lifecycle.memories
    rows = lifecycle.store.evidence(drop.id)
    evidence.move(memories, drop.id, keep.id)
    unrecorded = max(0, drop.evidence_count - len(rows))
    when = drop.occurred_at or iso(lifecycle.now())
    extra = [
        EvidenceRecord(f"merged:{drop.id}:{n}", keep.id, f"memory:{drop.id}", drop.agent, when)
        for n in range(unrecorded)
    ]
    if extra:
        evidence.record(memories, keep, extra)
    elif not sync.is_committed(keep.path):
        evidence.fold(memories, keep.id, keep.path)
    memories.remove(drop.path)


def _appended(body: str, pieces: list[str]) -> str:
    """`body` and then `pieces` (:func:`~.similarity.beyond`'s): a sentence goes on
    at the end of the last paragraph, a code block or another paragraph after it."""
    out = body.rstrip()
    for i, piece in enumerate(pieces):
        prose = not piece.startswith("```") and not out.endswith("```")
        out += (" " if i == 0 and prose else "\n\n") + piece
    return out


def _union(a: list[str], b: list[str]) -> list[str]:
    out = list(a)
    for tag in b:
        if tag.lower() not in {t.lower() for t in out} and len(out) < 20:
            out.append(tag)
    return out
