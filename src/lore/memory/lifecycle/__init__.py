"""The memory lifecycle (seed 001): tiers that move, evidence, consolidation and review.

:class:`Lifecycle` is the front of this package, one per :class:`~lore.memory.repository.Memories`
(so it acts as the same agent and sees what that agent may see):

- :meth:`Lifecycle.advance` / :meth:`Lifecycle.maybe_tick` — attention tiers
  moved by 001's transitions (:mod:`.tiers`), kept in the index;
- :meth:`Lifecycle.remember` — write-time near-duplicate detection: a fact
  seen again becomes evidence for the memory that has it (:mod:`.evidence`);
- :meth:`Lifecycle.session_started` — session memories digested into the
  daily tier and cleaned, old daily memories archived (:mod:`.daily`);
- :meth:`Lifecycle.consolidate` — merges, contradictions, supersession and
  promotions (:mod:`.consolidate`), as proposals a person reviews
  (:mod:`.proposals`) whenever a committed file would change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field
from datetime import datetime
from types import EllipsisType
from typing import TYPE_CHECKING, Any

from lore.memory.lifecycle import evidence, similarity, tiers
from lore.memory.lifecycle.clock import Clock, iso, parse, system_now
from lore.records import Record, datarecord
from lore.storage import EvidenceRecord, MemoryFilter, MemoryRecord

if TYPE_CHECKING:
    from lore.memory.lifecycle.consolidate import ConsolidationReport
    from lore.memory.lifecycle.daily import SessionStartReport
    from lore.memory.lifecycle.proposals import Proposal
    from lore.memory.repository import Memories

TICK_SECONDS = 3600  # tiers are re-decided at most this often before reads
_TICKED = "lifecycle_ticked_at"
# Where near-duplicates are looked for: lasting knowledge, not raw session
# notes, compacted session summaries or archives.
_FACT_TIERS = ["session", "session-summary", "archive"]


@datarecord
class Remembered(Record):
    """What :meth:`Lifecycle.remember` did: a new memory, or evidence for one that had the fact."""

    id: str
    path: str
    title: str
    type: str
    created: bool  # a new memory was written
    evidence_added: bool  # an existing memory got one more piece of evidence
    similarity: float | None = None  # to the memory that had the fact already


@datarecord
class TierReport(Record):
    """Tier moves of one decision pass: {memory id: [from, to]}."""

    checked: int
    moved: dict[str, list[str]] = field(default_factory=dict)


class Lifecycle:
    """Tiers, evidence, consolidation and review for one agent's view of a project.

    Args:
        memories: the repository (fixes the agent and its privacy).
        clock: the time lifecycle decisions read (default: now, or ``LORE_NOW``).
        embedding: an :class:`~lore.embed.runtime.EmbeddingRuntime` for vector
            near-duplicates in consolidation (None: word shingles only).
    """

    def __init__(self, memories: Memories, *, clock: Clock | None = None, embedding: Any = None):
        self.memories = memories
        self.store = memories.store
        self.project = memories.project
        self.clock = clock or system_now
        self.embedding = embedding
        evidence.replay(memories)  # a new or rebuilt index gets its evidence back first

    def now(self) -> datetime:
        return self.clock()

    @property
    def half_life(self) -> float:
        return float(self.project.setting("recall", "half_life_days", 90))

    # -- tiers ------------------------------------------------------------------------------

    def advance(self, memory_ids: Sequence[str] | None = None) -> TierReport:
        """Decide the tiers of these memories (all when None) at the clock's time
        and keep the ones that changed."""
        store = self.store
        ids = list(memory_ids) if memory_ids is not None else None
        if ids == []:
            return TierReport(0)
        now = self.now()
        records = store.memories(MemoryFilter(ids=ids, include_private=True))
        states = store.tier_states(ids)
        # Only these memories' rows: a recall records access for the few it shows,
        # and reading every memory's ever read made each recall slower as a project aged.
        access = store.access_stats(ids)
        last_evidence = store.last_evidence(ids)
        stale = store.stale_reasons(ids)
        changed = []
        report = TierReport(len(records))
        for record in records:
            count, last_read = access.get(record.id, (0, None))
            signals = tiers.Signals(
                access_count=count,
                evidence_count=record.evidence_count,
                confidence=record.confidence,
                reinforced_at=_latest(record.occurred_at, last_read, last_evidence.get(record.id)),
                stale=record.id in stale,
                superseded=record.superseded_by is not None,
            )
            old = states.get(record.id)
            new = tiers.decide(old, signals, now, self.half_life, record.id)
            if old is None or (old.tier, old.low_since) != (new.tier, new.low_since):
                changed.append(new)
            if old is not None and old.tier != new.tier:
                report.moved[record.id] = [old.tier, new.tier]
            elif old is None and new.tier != tiers.COLD:
                report.moved[record.id] = [tiers.COLD, new.tier]
        store.put_tier_states(changed)  # a batch of its own: a read path may heal a damaged index
        if ids is None:
            store.set_meta(_TICKED, iso(now))
        return report

    def maybe_tick(self) -> TierReport | None:
        """Before a read that depends on tiers: load the evidence ledger into a new
        index, and re-decide every tier if the last pass is older than an hour."""
        last = parse(self.store.get_meta(_TICKED))
        now = self.now()
        if last is not None and 0 <= (now - last).total_seconds() < TICK_SECONDS:
            return None
        return self.advance()

    def record_access(self, memory_ids: Sequence[str]) -> None:
        """Count a read (kept in the index, never in committed files) and let the tiers follow."""
        if not memory_ids:
            return
        with self.store.transaction():
            self.store.record_access(list(memory_ids), iso(self.now()))
        self.advance(memory_ids)

    def tiers_of(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """{memory id: its kept tier} (``cold`` for a memory never decided)."""
        states = self.store.tier_states(list(memory_ids))
        return {mid: states[mid].tier if mid in states else tiers.COLD for mid in memory_ids}

    # -- evidence ---------------------------------------------------------------------------

    def remember(
        self,
        *,
        body: str,
        title: str | None,
        type: str,
        key: str,
        source: str,
        occurred_at: str | None = None,
        tags: Sequence[str] = (),
        tier: str = "daily",
        private: bool = False,
        confidence: float | None = None,
        applies_to: str = "global",
        extra: dict[str, Any] | None = None,
    ) -> Remembered:
        """Keep a captured fact: evidence for a memory that says the same
        (exact or near-duplicate, among the memories this agent sees), else a
        new memory in `tier`. `key` names what produced it, so the same
        capture run again adds nothing."""
        from lore import secrets

        clean_body = secrets.redact(body)[0]
        when = occurred_at or iso(self.now())
        agent = self.memories.agent
        earlier = self.store.known_evidence([key]).get(key)
        if earlier is not None:
            # This very observation was kept before (a whole transcript is handed
            # over again at every compaction): nothing new, and a memory removed
            # or archived since stays so.
            return Remembered(earlier, "", title or "", type, False, False, None)
        # Only a memory of the same owner: a private fact is no evidence for one others see
        # (nor a shared one for another's private copy, which they would never see).
        owner = self.memories.viewer if private else None
        found = self.near_duplicate(title or "", clean_body, owner=owner)
        if found is not None and similarity.says_more(clean_body, self.body_of(found[0])):
            found = None  # not the same fact seen again: it says more, and that is kept
        if found is not None:
            record, score = found
            added = evidence.record(
                self.memories, record, [EvidenceRecord(key, record.id, source, agent, when)]
            )
            if added:
                self.advance([record.id])
            return Remembered(record.id, record.path, record.title, record.type, False, bool(added), score)
        result = self.memories.add(
            body=body,
            title=title,
            type=type,
            tags=list(tags),
            applies_to=applies_to,
            confidence=confidence,
            occurred_at=when,
            source=source,
            tier=tier,
            private=private,
            extra=dict(extra or {}),
        )
        if result.created:
            self.seen([(key, result.id, source, when)])
        return Remembered(result.id, result.path, result.title, result.type, result.created, False, None)

    def seen(self, observations: Sequence[tuple[str, str, str, str]]) -> None:
        """Keep each (key, memory id, source, when) as an observation made and
        kept (a memory's first): the same capture, run again, is known by its
        key (:meth:`Store.known_evidence`), and a memory removed since stays
        removed. No evidence: counted already (folded)."""
        if not observations:
            return
        agent = self.memories.agent
        rows = [
            EvidenceRecord(key, mid, source, agent, when, folded=True)
            for key, mid, source, when in observations
        ]
        with self.store.transaction():
            new = self.store.add_evidence(rows)
        lines = [evidence.ledger_row(row, row.memory_id) for row in rows]
        evidence.append_ledger(self.memories, [*lines, {"folded": new}])

    def near_duplicate(
        self,
        title: str,
        body: str,
        *,
        exclude: Sequence[str] = (),
        vectors: bool = False,
        body_of: Callable[[MemoryRecord], str] | None = None,
        owner: str | None | EllipsisType = ...,
    ) -> tuple[MemoryRecord, float] | None:
        """The visible memory that says the same as `title` + `body` (word
        shingles, or with `vectors` a cosine ≥ 0.92), with its similarity.
        `body_of`: how to read a memory's body (a consolidation's, which keeps
        what it read; else :meth:`body_of`). `owner`: only memories of that
        owner (None: those every agent sees); any by default."""
        left_out = set(exclude)

        def wanted(memory: MemoryRecord | None) -> bool:
            return (
                memory is not None and memory.id not in left_out and (owner is ... or memory.owner == owner)
            )

        body_of = body_of or self.body_of
        from lore.search.text import terms

        flt = self.memories.filter(exclude_storage=_FACT_TIERS, exclude_tiers=[tiers.ARCHIVE])
        words = terms(f"{title}\n{body}")[:32]
        if not words:
            return None
        mine = similarity.shingles(body)
        seen: dict[str, MemoryRecord] = {}
        for chunk, _score in self.store.lexical_search("memory", words, flt, 40):
            memory = chunk.memory
            if memory is not None and wanted(memory) and memory.id not in seen:
                seen[memory.id] = memory
            if len(seen) >= 10:
                break
        best: tuple[MemoryRecord, float] | None = None
        for record in seen.values():
            theirs = body_of(record)
            score = similarity.jaccard(mine, similarity.shingles(theirs))
            if score < similarity.NEAR_DUPLICATE or (best is not None and score <= best[1]):
                continue
            if similarity.contradiction(body, theirs) is None:  # "don't use X" is no evidence for "use X"
                best = (record, round(score, 3))
        if best is None and vectors:
            best = self._vector_duplicate(title, body, flt, wanted)
        return best

    def _vector_duplicate(
        self, title: str, body: str, flt: MemoryFilter, wanted: Callable[[MemoryRecord | None], bool]
    ) -> tuple[MemoryRecord, float] | None:
        if self.embedding is None:
            return None
        vector, model = self.embedding.query_vector(self.store, f"{title}\n{body}", "memory")
        if vector is None or model is None:
            return None
        hits = self.store.vector_search("memory", model, vector, flt, 5)
        chunks = {c.chunk_id: c for c in self.store.chunks("memory", [i for i, _ in hits], flt)}
        for chunk_id, cosine in hits:
            chunk = chunks.get(chunk_id)
            if chunk is None or chunk.memory is None or not wanted(chunk.memory):
                continue
            if (
                cosine >= similarity.VECTOR_NEAR_DUPLICATE
                and similarity.contradiction(body, self.body_of(chunk.memory)) is None
            ):
                return chunk.memory, round(float(cosine), 3)
        return None

    def body_of(self, record: MemoryRecord) -> str:
        """A memory's body as its file has it now ("" if the file can't be read)."""
        from lore.errors import LoreError

        try:
            return self.memories.load(record.path).body
        except LoreError:
            return ""

    # -- the rest of the lifecycle ------------------------------------------------------------

    def session_started(
        self, session_id: str | None = None, *, consolidating: bool = True
    ) -> SessionStartReport:
        """What runs when a session starts: the previous sessions' memories are
        digested into the daily tier and cleaned; then (`consolidating`) daily
        memories older than 30 days archived, recent local memories
        consolidated, tiers decided (:meth:`consolidate_recent`)."""
        from lore.memory.lifecycle.daily import session_started

        return session_started(self, session_id, consolidating=consolidating)

    def consolidate_recent(self) -> SessionStartReport:
        """The second half of :meth:`session_started` on its own."""
        from lore.memory.lifecycle.daily import SessionStartReport, consolidate_recent

        report = SessionStartReport(None)
        consolidate_recent(self, report)
        return report

    def consolidate(self, *, recent_days: float | None = None) -> ConsolidationReport:
        """`lore consolidate`: see :mod:`lore.memory.lifecycle.consolidate`."""
        from lore.memory.lifecycle.consolidate import consolidate

        return consolidate(self, recent_days=recent_days)

    def proposals(self, *, include_held: bool = False, include_done: bool = False) -> list[Proposal]:
        from lore.memory.lifecycle import proposals

        return proposals.listed(self, include_held=include_held, include_done=include_done)

    def apply(self, proposal_id: str) -> Proposal:
        from lore.memory.lifecycle import proposals

        return proposals.apply(self, proposal_id)

    def reject(self, proposal_id: str) -> Proposal:
        from lore.memory.lifecycle import proposals

        return proposals.reject(self, proposal_id)


def _latest(*times: str | None) -> str:
    """The latest of some ISO times (as given)."""
    known = [(parse(t), t) for t in times if t]
    dated = [(moment, text) for moment, text in known if moment is not None]
    return max(dated)[1] if dated else ""


__all__ = ["Lifecycle", "Remembered", "TierReport"]
