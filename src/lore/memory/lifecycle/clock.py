"""The lifecycle's clock: the real time, or a fixed one for tests and replays.

Tiers decay, daily memories age and session memories expire with time, so
every lifecycle decision reads the time from here. ``LORE_NOW`` (an ISO 8601
time) fixes it for a process — how the tests move a project 30 or 90 days
ahead through the real CLI; the Python API can pass a clock instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime

from lore.errors import UsageError

ENV = "LORE_NOW"
Clock = Callable[[], datetime]
# The times LORE_NOW may fix: the lifecycle looks days to centuries back from
# it (and converts it to UTC), which a time near year 1 or 9999 can't survive.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def system_now() -> datetime:
    """Now (UTC, whole seconds), or ``LORE_NOW`` when it is set."""
    fixed = os.environ.get(ENV)
    if fixed:
        parsed = parse(fixed)
        if parsed is None:
            raise UsageError(f"{ENV}={fixed!r} is not an ISO 8601 time; e.g. 2026-03-01T12:00:00Z")
        if not EARLIEST <= parsed < LATEST:
            raise UsageError(
                f"{ENV}={fixed!r} must be a time from 1970 to 9998 in UTC; e.g. 2026-03-01T12:00:00Z"
            )
        return parsed
    return datetime.now(UTC).replace(microsecond=0)


def fixed(when: str | datetime) -> Clock:
    """A clock that always says `when` (for tests)."""
    moment = when if isinstance(when, datetime) else parse(when)
    if moment is None:
        raise UsageError(f"{when!r} is not an ISO 8601 time")
    return lambda: moment


def parse(when: str | None) -> datetime | None:
    """An ISO 8601 time as an aware UTC datetime (naive = UTC); None if unreadable."""
    if not when:
        return None
    try:
        parsed = datetime.fromisoformat(str(when).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso(moment: datetime) -> str:
    """The ``...Z`` form memories use."""
    from lore.memory.model import format_time

    return format_time(moment)


def days(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() / 86400
