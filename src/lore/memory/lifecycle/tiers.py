"""Attention tiers that move on evidence and decay (seed 001), decided from the kept state.

001's transitions, exactly:

- COLD → WARM when ``access_count >= 3`` or ``evidence_count >= 2``;
- WARM → HOT when ``confidence > 0.7`` and ``evidence_count >= 5``;
- HOT → WARM / COLD by natural decay when not accessed: the tier score falls
  out of the tier's band (HOT > 0.7, WARM 0.3–0.7, COLD < 0.3);
- any tier → ARCHIVE when the score has stayed below 0.1 for 90 days, as
  observed: the kept state remembers the first decision that saw it below
  0.1 (so an old memory indexed today gets its 90 days from today).
  An archived memory stays archived (searchable with ``--include-archived``,
  out of recall) until it is read or gains evidence again, which brings it
  back as COLD; a superseded memory is archived for good.

A new memory starts COLD: being written is not evidence. One read is one
access, so reading can never move a memory from COLD straight to HOT (the
old read-time tiers did).

The tier score is 001's attention without a query: ``decay × access ×
confidence`` (× 0.5 when its anchored code changed), where ``decay`` halves
every ``half_life_days`` since the memory was last reinforced (written, read
or given evidence). Unlike the ranking score (:mod:`lore.search.attention`)
it has no floor, so an untouched memory does fade: with the default 90-day
half-life a fully confident one leaves HOT after ~46 days, WARM after ~156,
and drops below 0.1 after ~300 days (archived 90 days after that is seen).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from lore.memory.lifecycle.clock import iso, parse
from lore.search.attention import STALE_FACTOR, access_modifier
from lore.storage import TierState

HOT, WARM, COLD, ARCHIVE = "hot", "warm", "cold", "archive"
TIERS = (HOT, WARM, COLD, ARCHIVE)

COLD_TO_WARM_ACCESS = 3
COLD_TO_WARM_EVIDENCE = 2
WARM_TO_HOT_CONFIDENCE = 0.7  # strictly above
WARM_TO_HOT_EVIDENCE = 5
HOT_BAND = 0.7  # HOT: score > 0.7
WARM_BAND = 0.3  # WARM: 0.3 <= score <= 0.7
ARCHIVE_SCORE = 0.1
ARCHIVE_DAYS = 90


@dataclass(frozen=True)
class Signals:
    """What a tier decision reads about one memory."""

    access_count: int
    evidence_count: int
    confidence: float
    reinforced_at: str  # the latest of: written, last read, last evidence
    stale: bool = False
    superseded: bool = False


def score(signals: Signals, now: datetime, half_life_days: float) -> float:
    """The query-free tier score at `now` (0-1)."""
    since = parse(signals.reinforced_at) or now
    age = max(0.0, (now - since).total_seconds() / 86400)
    decay = math.exp(-math.log(2) * age / max(half_life_days, 1e-6))
    return min(1.0, decay * _base(signals))


def decide(
    state: TierState | None, signals: Signals, now: datetime, half_life_days: float, memory_id: str
) -> TierState:
    """The memory's tier at `now`, moving from `state` by 001's transitions."""
    stamp = iso(now)
    tier = state.tier if state else COLD
    if signals.superseded:
        return TierState(memory_id, ARCHIVE, state.since if state and tier == ARCHIVE else stamp, None, stamp)
    if state is not None and (parse(state.checked_at) or now) > now:
        # Decided by a clock ahead of this one (a wrong system clock, LORE_NOW):
        # kept, it would hold a memory in the archive until that date comes round
        # (no read is later than it), so the tier is decided again from COLD.
        state, tier = None, COLD
    if tier == ARCHIVE:
        archived_at = parse(state.since) if state else None
        reinforced = parse(signals.reinforced_at)
        if archived_at is not None and reinforced is not None and reinforced <= archived_at:
            return TierState(
                memory_id, ARCHIVE, state.since if state else stamp, state.low_since if state else None, stamp
            )
        tier = COLD  # read or confirmed again since it was archived
    value = score(signals, now, half_life_days)
    new = tier
    if new == COLD and (
        signals.access_count >= COLD_TO_WARM_ACCESS or signals.evidence_count >= COLD_TO_WARM_EVIDENCE
    ):
        new = WARM
    if (
        new == WARM
        and signals.confidence > WARM_TO_HOT_CONFIDENCE
        and signals.evidence_count >= WARM_TO_HOT_EVIDENCE
    ):
        new = HOT
    if new == HOT and value <= HOT_BAND:
        new = WARM if value >= WARM_BAND else COLD
    elif new == WARM and value < WARM_BAND:
        new = COLD
    low = None
    if value < ARCHIVE_SCORE:
        # Since when the score has been seen below the line: the first decision that saw it.
        low = state.low_since if state and state.low_since else stamp
        seen_low = parse(low)
        if seen_low is not None and (now - seen_low).total_seconds() >= ARCHIVE_DAYS * 86400:
            new = ARCHIVE
    kept = state is not None and new == state.tier
    return TierState(memory_id, new, state.since if kept and state else stamp, low, stamp)


def _base(signals: Signals) -> float:
    return (
        access_modifier(signals.access_count)
        * max(0.0, min(1.0, signals.confidence))
        * (STALE_FACTOR if signals.stale else 1.0)
    )
