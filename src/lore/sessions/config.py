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

from lore.errors import ValidationError

_WHERE = "check [sessions] in .lore/config.toml"


@dataclass(frozen=True)
class SessionLimits:
    soft_limit_tokens: int = 100_000
    hard_limit_tokens: int = 150_000
    protected_recent_tokens: int = 20_000

    @classmethod
    def from_settings(cls, table: dict[str, Any] | None) -> SessionLimits:
        """Read and check the `[sessions]` table (its `summary` sub-table is not read here).

        Raises:
            ValidationError: unknown key, not a positive whole number, or limits out of order.
        """
        table = {k: v for k, v in (table or {}).items() if k != "summary"}
        names = set(cls.__dataclass_fields__)
        unknown = sorted(set(table) - names)
        if unknown:
            raise ValidationError(
                f"unknown [sessions] setting(s) {', '.join(unknown)}; allowed: "
                f"{', '.join(sorted(names))}, and the [sessions.summary] table — {_WHERE}"
            )
        for name, value in table.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(
                    f"[sessions] {name} must be a positive whole number of tokens — {_WHERE}"
                )
        limits = cls(**table)
        if not limits.protected_recent_tokens < limits.soft_limit_tokens <= limits.hard_limit_tokens:
            raise ValidationError(
                "[sessions] needs protected_recent_tokens < soft_limit_tokens <= hard_limit_tokens "
                f"(got {limits.protected_recent_tokens}, {limits.soft_limit_tokens}, "
                f"{limits.hard_limit_tokens}) — {_WHERE}"
            )
        return limits
