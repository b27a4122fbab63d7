"""Times as people write them, for ``--since`` / ``--until`` on search, code, history and recall.

:func:`parse_when` turns one value into a UTC instant (``2024-05-01T00:00:00Z``);
:func:`time_range` reads a since/until pair. Accepted:

==========================================  ===========================================
written                                     means
==========================================  ===========================================
``2024-05-01``, ``2024-05-01T14:30``,       that day / minute / second (no offset: local
``2024-05-01 14:30:00``, ``…Z``, ``…+02:00``  time; with one: as written)
``2024-05``, ``2024``                       that month, that year
``now``, ``today``, ``yesterday``,          the day (local midnight to midnight)
``tomorrow``
``this week`` / ``month`` / ``quarter`` /   the current calendar week (from Monday),
``year``                                    month, quarter (Jan-Mar, ...) or year
``last week`` / ``month`` / ``quarter`` /   one week / month / quarter (3 months) /
``year``, ``past week``                     year before now (like git's "last week")
``3 days ago``, ``2 hours ago``,            that long before now; units: seconds,
``a week ago``, ``3 days``, ``last 3 days``,  minutes (``min``), hours (``h``), days
``3d``, ``2w``, ``6mo``, ``1y``             (``d``), weeks (``w``), months (``mo``),
                                            quarters (``qtr``), years (``y``)
``March``, ``Mar 2024``, ``March 2024``     that month; without a year the most recent
                                            March that has begun
``friday``, ``last friday``                 that day: the most recent Friday (today
                                            counts) / the one before today
``April 1, 2025``, ``1 April 2025``,        that day; without a year the most recent
``Apr 1``, ``2025/04/01``                   April 1 that has begun
==========================================  ===========================================

A leading "since", "from", "until", "till", "on" or "in" is ignored, so
``--since "since March"`` reads naturally. Times to come ("in 2 days",
"next week", "2 weeks from now") and digits other than 0-9 are refused.

A value names a period (a day, a month) or an instant ("3 days ago").
`end=False` gives its first instant, for ``--since``; `end=True` gives the
first instant *after* it, for ``--until``, so "until yesterday" includes all
of yesterday: compare ``since <= t < until``. Calendar words (today, March,
friday) follow the time zone of `now` (the local zone by default).
"""

from __future__ import annotations

import calendar
import os
import re
from datetime import UTC, date, datetime, timedelta, tzinfo

from lore.errors import ArgumentError, UsageError, literal
from lore.memory.values import quoted

__all__ = ["check_order", "parse_when", "read_when", "time_range"]

MAX_PHRASE = 100  # characters; the longest date or phrase Lore reads is far shorter
EXAMPLES = "2024-05-01, 2024-05, yesterday, last week, 3 days ago, 2w, since March, last friday"

_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_WEEKDAYS = {name.lower(): n for n, name in enumerate(calendar.day_name)}
_WEEKDAYS |= {name.lower(): n for n, name in enumerate(calendar.day_abbr)}
_WEEKDAYS |= {"tues": 1, "weds": 2, "thur": 3, "thurs": 3}

# unit word -> (timedelta keyword or "months", multiplier)
_UNITS: dict[str, tuple[str, int]] = {}
for _words, _unit in (
    ("s sec secs second seconds", ("seconds", 1)),
    ("min mins minute minutes", ("minutes", 1)),
    ("h hr hrs hour hours", ("hours", 1)),
    ("d day days", ("days", 1)),
    ("w wk wks week weeks", ("weeks", 1)),
    ("mo mos month months", ("months", 1)),
    ("qtr qtrs quarter quarters", ("months", 3)),
    ("y yr yrs year years", ("months", 12)),
):
    for _word in _words.split():
        _UNITS[_word] = _unit

_PREFIX = re.compile(r"^(?:since|from|until|till|til|on|in)\s+", re.IGNORECASE)
# "in 2 days", "2 weeks from now", "next week": times to come, which no window of
# past work can start or end at (without this, "in" is dropped and "in 2 days"
# would read as "2 days" ago).
_FUTURE = re.compile(r"^(?:in\s+(?:\d+\s*|(?:an?|one)\s+)[a-z]+|.*\bfrom\s+now|next\s+.*)$")
_AMOUNT = re.compile(r"^(?:(?:last|past)\s+)?(?P<n>\d+|an?|one)\s*(?P<unit>[a-z]+)(?:\s+ago)?$")
_MONTH_YEAR = re.compile(r"^(?P<month>[a-z]+)\.?(?:\s+(?P<year>\d{4}))?$")
_YEAR = re.compile(r"^\d{4}$")
_YEAR_MONTH = re.compile(r"^(?P<year>\d{4})-(?P<month>\d{1,2})$")
# A day written with its month's name: "april 1, 2025", "apr 1st", "1 april 2025"; and 2025/04/01.
_ORDINAL = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_NAMED_DAYS = (
    re.compile(rf"^(?P<month>[a-z]+)\.?\s+{_ORDINAL}(?:,?\s+(?P<year>\d{{4}}))?$"),
    re.compile(rf"^{_ORDINAL}\s+(?P<month>[a-z]+)\.?(?:,?\s+(?P<year>\d{{4}}))?$"),
)
_SLASHED = re.compile(r"^(?P<year>\d{4})/(?P<month>\d{1,2})/(?P<day>\d{1,2})$")


def parse_when(text: str, *, now: datetime | None = None, end: bool = False) -> str:
    """The UTC instant a written time stands for, as ``YYYY-MM-DDTHH:MM:SSZ``.

    Args:
        text: a date, time or phrase (module docstring).
        now: the present, for relative phrases; an aware datetime (a naive
            one is taken as UTC). Defaults to the current local time.
        end: give the first instant after the period named (for ``--until``)
            instead of its first instant (for ``--since``).

    Raises:
        UsageError: `text` is none of the accepted forms; the message names
            it and gives examples.
    """
    try:
        start, stop = _period(text, now)
        return _iso(stop if end else start)
    except (OverflowError, ValueError):  # date arithmetic past year 1 or 9999
        raise UsageError(
            f"the time '{' '.join((text or '').split())[:100]}' reaches outside the years 0001-9999; "
            f"give a time within them, e.g. {EXAMPLES}"
        ) from None


def time_range(
    since: str | None, until: str | None, *, now: datetime | None = None
) -> tuple[str | None, str | None]:
    """``--since`` and ``--until`` as UTC instants (None where not given).

    `since` is the first instant of its period, `until` the first instant
    after its period: keep times ``t`` with ``since <= t < until``.

    Raises:
        ArgumentError: a value cannot be read (naming it), or `since` is not before `until`.
    """
    now = _now(now)
    start = read_when(since, "since", now=now) if since else None
    stop = read_when(until, "until", now=now, end=True) if until else None
    check_order(since, start, until, stop, now=now)
    return start, stop


def read_when(text: str, name: str, *, now: datetime | None = None, end: bool = False) -> str:
    """:func:`parse_when`, its error naming the argument `name` (since, until)."""
    try:
        return parse_when(text, now=now, end=end)
    except UsageError as err:
        raise ArgumentError("{0}: " + literal(str(err)), name) from None


def check_order(
    since: object, start: str | None, until: object, stop: str | None, *, now: datetime | None = None
) -> None:
    """Refuse a period that ends before it begins, or begins after now
    (`--since tomorrow`): either would silently match nothing."""
    if start is not None and start > _iso(_now(now)):
        raise ArgumentError(
            f"{{0}} {literal(repr(since))} begins after now ({start}); give a past time, e.g. 'today'",
            "since",
        )
    if start is not None and stop is not None and start >= stop:
        raise ArgumentError(
            f"{{0}} {literal(repr(since))} ({start}) is not before {{1}} {literal(repr(until))} ({stop}); "
            "swap them or widen the range",
            "since",
            "until",
        )


# -- reading ---------------------------------------------------------------------------


def _now(now: datetime | None) -> datetime:
    """`now`, else the present: ``LORE_NOW`` when it is set (a replay reads
    "last week" as the lifecycle does), in the local zone."""
    if now is None:
        if os.environ.get("LORE_NOW"):
            from lore.memory.lifecycle.clock import system_now

            return system_now().astimezone()
        return datetime.now().astimezone()
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _period(text: str, given_now: datetime | None) -> tuple[datetime, datetime]:
    """The first instant of the period `text` names and the first instant after it."""
    now = _now(given_now)
    raw = " ".join((text or "").split())  # one line in any message that quotes it
    if len(raw) > MAX_PHRASE:  # quoted back clipped: an argument can be a megabyte
        raise UsageError(
            f"cannot read the time {quoted(raw, 40)} ({len(raw):,} characters); "
            f"use a date or a short phrase, e.g. {EXAMPLES}"
        )
    if any(c.isdigit() and not c.isascii() for c in raw):
        # Python's \d and int() read any script's digits: "١٢٣٤" would be the year 1234.
        raise UsageError(f"cannot read the time '{raw}': write its digits as 0-9, e.g. {EXAMPLES}")
    if _FUTURE.match(raw.lower()):
        raise UsageError(
            f"'{raw}' is in the future; give a past time or a date, e.g. '2 days ago' or 2024-05-01"
        )
    phrase = _PREFIX.sub("", " ".join(raw.lower().split()))
    if not phrase:
        raise UsageError(f"no time given; use a date or a phrase, e.g. {EXAMPLES}")
    # Wall-clock times are in the zone of `now`; None: the system's own zone,
    # whose offset may differ from date to date (daylight saving).
    zone = None if given_now is None else now.tzinfo
    today = now.date()

    found = _iso_period(raw.strip(), phrase, zone)
    if found is not None:
        return found
    if phrase == "now":
        return now, now
    days = {"today": 0, "yesterday": -1, "tomorrow": 1}
    if phrase in days:
        return _day(today + timedelta(days=days[phrase]), zone)
    if phrase.startswith("this "):
        unit = phrase[5:]
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            return _at(monday, zone), _at(monday + timedelta(weeks=1), zone)
        if unit == "month":
            first = today.replace(day=1)
            return _at(first, zone), _at(_add_months(first, 1), zone)
        if unit == "quarter":
            first = date(today.year, today.month - (today.month - 1) % 3, 1)
            return _at(first, zone), _at(_add_months(first, 3), zone)
        if unit == "year":
            return _at(date(today.year, 1, 1), zone), _at(date(today.year + 1, 1, 1), zone)
    if phrase.startswith(("last ", "past ")) and phrase[5:] in _UNITS:
        instant = _before(now, 1, phrase[5:])
        return instant, instant
    match = _AMOUNT.match(phrase)
    if match and match.group("unit") in _UNITS:
        amount = match.group("n")
        count = int(amount) if amount.isdigit() else 1
        instant = _before(now, count, match.group("unit"))
        return instant, instant
    if match and match.group("unit") == "m":
        count_text = match.group("n") if match.group("n").isdigit() else "1"
        raise UsageError(f"'{raw}': is 'm' minutes or months? write {count_text}min or {count_text}mo")
    weekday = phrase.removeprefix("last ")
    if weekday in _WEEKDAYS:
        back = (today.weekday() - _WEEKDAYS[weekday]) % 7
        if phrase.startswith("last ") and back == 0:
            back = 7
        return _day(today - timedelta(days=back), zone)
    named = _named_day(raw, phrase, today)
    if named is not None:
        return _day(named, zone)
    match = _MONTH_YEAR.match(phrase)
    if match and match.group("month") in _MONTHS:
        month = _MONTHS[match.group("month")]
        year = int(match.group("year")) if match.group("year") else today.year
        if not match.group("year") and (year, month) > (today.year, today.month):
            year -= 1  # the most recent one that has begun
        first = date(year, month, 1)
        return _at(first, zone), _at(_add_months(first, 1), zone)
    raise UsageError(
        f"cannot read the time '{raw}'; use a date (2024-05-01, 2024-05, 2024), a time "
        f"(2024-05-01T14:30) or a phrase, e.g. {EXAMPLES}"
    )


def _named_day(raw: str, phrase: str, today: date) -> date | None:
    """The day "April 1, 2025", "1 Apr" or "2025/04/01" names (without a year,
    the most recent one that has begun); None for other phrases."""
    match = _SLASHED.match(phrase) or next(
        (m for m in (rx.match(phrase) for rx in _NAMED_DAYS) if m and m.group("month") in _MONTHS), None
    )
    if match is None:
        return None
    month_text = match.group("month")
    month = int(month_text) if month_text.isdigit() else _MONTHS[month_text]
    number = int(match.group("day"))
    try:
        if match.group("year"):
            return date(int(match.group("year")), month, number)
        date(2000, month, number)  # a day no year has (Feb 30) is an error; 2000 was a leap year
        # The most recent one that has begun: this year's, or an earlier year's
        # (Feb 29: the last leap year's).
        year = today.year
        while number > calendar.monthrange(year, month)[1] or date(year, month, number) > today:
            year -= 1
        return date(year, month, number)
    except ValueError as error:
        raise UsageError(f"cannot read the date '{raw}': {error}; e.g. 2024-05-01 or 'May 1, 2024'") from None


def _iso_period(raw: str, phrase: str, zone: tzinfo | None) -> tuple[datetime, datetime] | None:
    """Dates and times written as numbers: 2024, 2024-05, 2024-05-01, 2024-05-01T14:30[:00][Z|+hh:mm]."""
    try:
        if _YEAR.match(phrase):
            year = int(phrase)
            return _at(date(year, 1, 1), zone), (_at(date(year + 1, 1, 1), zone) if year < 9999 else _LAST)
        match = _YEAR_MONTH.match(phrase)
        if match:
            first = date(int(match.group("year")), int(match.group("month")), 1)
            last = (first.year, first.month) == (9999, 12)
            return _at(first, zone), (_LAST if last else _at(_add_months(first, 1), zone))
        if re.match(r"^\d{4}-\d{2}-\d{2}$", phrase):
            return _day(date.fromisoformat(phrase), zone)
        if re.match(r"^\d{4}-\d{2}-\d{2}[t ]\d{1,2}:\d{2}", phrase):
            value = _PREFIX.sub("", raw).strip()
            instant = datetime.fromisoformat(value.replace(" ", "T", 1))
            if instant.tzinfo is None:
                instant = _localize(instant, zone)
            # the minute or second written, whole: until 14:30 includes 14:30:59. Seconds
            # are the third field of the time itself, not a colon of an offset (+02:00).
            seconds = re.match(r"^\d{4}-\d{2}-\d{2}[tT ]\d{1,2}:\d{2}:\d{2}", value)
            step = timedelta(seconds=1) if seconds else timedelta(minutes=1)
            return instant, instant + step
    except ValueError as error:
        # Python's words for an offset of a day or more name its own types: say it plainly.
        reason = "a time zone offset must be under 24 hours" if "offset" in str(error) else str(error)
        raise UsageError(
            f"cannot read the date '{raw}': {reason}; e.g. 2024-05-01 or 2024-05-01T14:30"
        ) from None
    return None


def _before(now: datetime, count: int, unit: str) -> datetime:
    kind, multiplier = _UNITS[unit]
    if kind == "months":
        months = count * multiplier
        shifted = _add_months(now.date(), -months)
        return now.replace(year=shifted.year, month=shifted.month, day=shifted.day)
    return now - timedelta(**{kind: count})


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


# The first and last instants a time can name: 0001-01-01 and 9999-12-31 are
# natural "from the start" and "for ever" values, whose edges in a zone away
# from UTC (or the day after the last) fall outside the calendar.
_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)


def _day(day: date, zone: tzinfo | None) -> tuple[datetime, datetime]:
    return _at(day, zone), (_at(day + timedelta(days=1), zone) if day < date.max else _LAST)


def _at(day: date, zone: tzinfo | None) -> datetime:
    """Midnight starting `day` in `zone`."""
    try:
        return _localize(datetime(day.year, day.month, day.day), zone)
    except (OverflowError, ValueError):
        return _FIRST if day.year == 1 else _LAST


def _localize(naive: datetime, zone: tzinfo | None) -> datetime:
    """A wall-clock time in `zone`; None is the system's zone, with the offset
    in force on that date, so midnights stay midnights across daylight saving."""
    if zone is None:
        return naive.astimezone()  # a naive value is taken as local time
    return naive.replace(tzinfo=zone)


def _iso(instant: datetime) -> str:
    try:
        utc = instant.astimezone(UTC)
    except (OverflowError, ValueError):  # an edge of the calendar, in a zone away from UTC
        return _iso(_FIRST if instant.year == 1 else _LAST)
    # Not strftime: its %Y writes year 999 as "999" on glibc, which sorts after "2024".
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}Z"
