"""The `[sessions]` table of `.lore/config.toml`: context limits (seed 004's numbers).

::

    [sessions]
    soft_limit_tokens = 100000       # crossing it on append compacts the old part
    hard_limit_tokens = 150000       # the context view never holds more (oldest left out)
    protected_recent_tokens = 20000  # the most recent events are never compacted

The soft limit is measured over the live (not yet compacted) events: the
summaries already stand for what they cover, and counting them would trigger
compactions with nothing left to compact. The hard limit is measured over the
whole view, summaries included.

    [sessions.summary]
    provider = "extractive"          # or "openai-compatible", "anthropic" (see lore.sessions.llm)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lore.settings import SESSION_LIMITS


@dataclass(frozen=True)
class SessionLimits:
    soft_limit_tokens: int = SESSION_LIMITS["soft_limit_tokens"]
    hard_limit_tokens: int = SESSION_LIMITS["hard_limit_tokens"]
    protected_recent_tokens: int = SESSION_LIMITS["protected_recent_tokens"]

    @classmethod
    def from_settings(cls, table: dict[str, Any] | None) -> SessionLimits:
        """The `[sessions]` table's limits (its `summary` sub-table is not read
        here). The table was checked when config.toml was read
        (:func:`lore.settings.check`: names, whole numbers, their order)."""
        return cls(**{k: v for k, v in (table or {}).items() if k in SESSION_LIMITS})
