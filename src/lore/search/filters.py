"""Filters over memories, shared by search, list and recall."""

from __future__ import annotations

from dataclasses import dataclass, field

from lore.errors import UsageError, ValidationError
from lore.memory.model import MEMORY_TYPES, parse_time

STORAGE_TIERS = ("durable", "session")
MAX_LIMIT = 50


@dataclass
class MemoryFilter:
    """Which memories a query may return.

    ``viewer`` is the agent asking: private memories (``local/<agent>/``) are
    visible to their own agent only. ``include_private`` (humans curating)
    shows every agent's.
    """

    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    agent: str | None = None
    task: str | None = None
    scope: str | None = None
    tier: str | None = None
    since: str | None = None
    until: str | None = None
    viewer: str | None = None
    include_private: bool = False

    def __post_init__(self):
        for kind in self.types:
            if kind not in MEMORY_TYPES:
                raise UsageError(f"unknown type '{kind}'; use one of: {', '.join(MEMORY_TYPES)}")
        if self.tier and self.tier not in STORAGE_TIERS + ("hot", "warm", "cold"):
            raise UsageError(f"unknown tier '{self.tier}'; use hot, warm, cold, durable or session")
        try:
            if self.since:
                self.since = parse_time(self.since, field_name="since")
            if self.until:
                self.until = parse_time(self.until, field_name="until")
        except ValidationError as err:
            raise UsageError(f"--{err.field}: {err.reason}") from None

    def sql(self) -> tuple[str, tuple]:
        """A WHERE clause over `memories m` (attention tiers are applied after scoring)."""
        clauses, params = [], []
        if self.types:
            clauses.append(f"m.type IN ({','.join('?' * len(self.types))})")
            params += self.types
        for tag in self.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE lower(value) = lower(?))")
            params.append(tag)
        if self.agent:
            clauses.append("m.agent = ?")
            params.append(self.agent)
        if self.task:
            clauses.append("m.task = ?")
            params.append(self.task)
        if self.scope:
            # "file:src/" matches every file scope below src/; "global" is exact.
            clauses.append("(m.applies_to = ? OR m.applies_to LIKE ? ESCAPE '\\')")
            params += [self.scope, self.scope.replace("%", "\\%").replace("_", "\\_") + "%"]
        if self.tier in STORAGE_TIERS:
            clauses.append("m.storage = ?")
            params.append(self.tier)
        if self.since:
            clauses.append("m.occurred_at >= ?")
            params.append(self.since)
        if self.until:
            clauses.append("m.occurred_at <= ?")
            params.append(self.until)
        if not self.include_private:
            if self.viewer:
                clauses.append("(m.visibility = 'shared' OR m.agent = ?)")
                params.append(self.viewer)
            else:
                clauses.append("m.visibility = 'shared'")
        return " AND ".join(clauses), tuple(params)


def clamp_limit(limit: int | None, default: int = 10) -> int:
    if limit is None:
        return default
    if limit < 1:
        raise UsageError("limit must be at least 1")
    return min(int(limit), MAX_LIMIT)
