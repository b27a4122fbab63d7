"""Attention scoring (seed 001): which memories deserve an agent's context.

    attention = relevance × recency × access × confidence × staleness

- relevance: the search score (0-1).
- recency: exponential decay with a configurable half-life (``[recall]
  half_life_days``, default 90) since the memory was last accessed or
  written, floored at 0.3 so an old but still valid decision is demoted,
  never buried.
- access: 1 + 0.1·ln(1 + access count), capped at 1.5 (001's logarithmic boost).
- confidence: the memory's own 0-1 confidence.
- staleness: × 0.5 when the code it is anchored to changed since.

Recall and search rank memories by it. Tiers (hot, warm, cold) have a
query-free score of their own, without the recency floor
(:mod:`lore.memory.lifecycle.tiers`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

RECENCY_FLOOR = 0.3
STALE_FACTOR = 0.5


def recency(when: str | None, half_life_days: float, now: datetime | None = None) -> float:
    if not when:
        return RECENCY_FLOOR
    now = now or datetime.now(UTC)
    try:
        then = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return RECENCY_FLOOR
    age_days = max(0.0, (now - then).total_seconds() / 86400)
    decay = math.exp(-math.log(2) * age_days / max(half_life_days, 1e-6))
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * decay


def access_modifier(count: int) -> float:
    return min(1.5, 1.0 + 0.1 * math.log1p(max(0, count)))


def attention(
    relevance: float,
    *,
    occurred_at: str,
    last_accessed: str | None,
    access_count: int,
    confidence: float,
    stale: bool,
    half_life_days: float = 90.0,
    now: datetime | None = None,
) -> float:
    score = (
        relevance
        * recency(last_accessed or occurred_at, half_life_days, now)
        * access_modifier(access_count)
        * confidence
        * (STALE_FACTOR if stale else 1.0)
    )
    return min(1.0, score)
