"""--since / --until values: dates, times and plain phrases, against a fixed `now`."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest

from lore.errors import ArgumentError, UsageError
from lore.search.timephrase import parse_when, time_range

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

# Wednesday 2024-05-15 14:30:00 UTC
NOW = datetime(2024, 5, 15, 14, 30, 0, tzinfo=UTC)


def since(text: str, now: datetime = NOW) -> str:
    return parse_when(text, now=now)


def until(text: str, now: datetime = NOW) -> str:
    return parse_when(text, now=now, end=True)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2024-05-01", "2024-05-01T00:00:00Z", "2024-05-02T00:00:00Z"),
        ("2024-05", "2024-05-01T00:00:00Z", "2024-06-01T00:00:00Z"),
        ("2023-12", "2023-12-01T00:00:00Z", "2024-01-01T00:00:00Z"),
        ("2024", "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"),
        ("2024-05-01T12:00", "2024-05-01T12:00:00Z", "2024-05-01T12:01:00Z"),
        ("2024-05-01 12:00:30", "2024-05-01T12:00:30Z", "2024-05-01T12:00:31Z"),
        ("2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00Z", "2024-05-01T10:00:01Z"),
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00Z", "2024-05-01T12:00:01Z"),
        ("now", "2024-05-15T14:30:00Z", "2024-05-15T14:30:00Z"),
        ("today", "2024-05-15T00:00:00Z", "2024-05-16T00:00:00Z"),
        ("Yesterday", "2024-05-14T00:00:00Z", "2024-05-15T00:00:00Z"),
        ("tomorrow", "2024-05-16T00:00:00Z", "2024-05-17T00:00:00Z"),
        ("this week", "2024-05-13T00:00:00Z", "2024-05-20T00:00:00Z"),
        ("this month", "2024-05-01T00:00:00Z", "2024-06-01T00:00:00Z"),
        ("this quarter", "2024-04-01T00:00:00Z", "2024-07-01T00:00:00Z"),
        ("this year", "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"),
        ("last week", "2024-05-08T14:30:00Z", "2024-05-08T14:30:00Z"),
        ("past week", "2024-05-08T14:30:00Z", "2024-05-08T14:30:00Z"),
        ("last month", "2024-04-15T14:30:00Z", "2024-04-15T14:30:00Z"),
        ("last quarter", "2024-02-15T14:30:00Z", "2024-02-15T14:30:00Z"),
        ("past quarter", "2024-02-15T14:30:00Z", "2024-02-15T14:30:00Z"),
        ("2 quarters ago", "2023-11-15T14:30:00Z", "2023-11-15T14:30:00Z"),
        ("last year", "2023-05-15T14:30:00Z", "2023-05-15T14:30:00Z"),
        ("3 days ago", "2024-05-12T14:30:00Z", "2024-05-12T14:30:00Z"),
        ("2 hours ago", "2024-05-15T12:30:00Z", "2024-05-15T12:30:00Z"),
        ("an hour ago", "2024-05-15T13:30:00Z", "2024-05-15T13:30:00Z"),
        ("a week ago", "2024-05-08T14:30:00Z", "2024-05-08T14:30:00Z"),
        ("2 months ago", "2024-03-15T14:30:00Z", "2024-03-15T14:30:00Z"),
        ("last 3 days", "2024-05-12T14:30:00Z", "2024-05-12T14:30:00Z"),
        ("10 minutes", "2024-05-15T14:20:00Z", "2024-05-15T14:20:00Z"),
        ("3d", "2024-05-12T14:30:00Z", "2024-05-12T14:30:00Z"),
        ("2w", "2024-05-01T14:30:00Z", "2024-05-01T14:30:00Z"),
        ("6mo", "2023-11-15T14:30:00Z", "2023-11-15T14:30:00Z"),
        ("1y", "2023-05-15T14:30:00Z", "2023-05-15T14:30:00Z"),
        ("90min", "2024-05-15T13:00:00Z", "2024-05-15T13:00:00Z"),
        ("since March", "2024-03-01T00:00:00Z", "2024-04-01T00:00:00Z"),
        ("March", "2024-03-01T00:00:00Z", "2024-04-01T00:00:00Z"),
        ("may", "2024-05-01T00:00:00Z", "2024-06-01T00:00:00Z"),  # this month has begun
        ("June", "2023-06-01T00:00:00Z", "2023-07-01T00:00:00Z"),  # not in the future
        ("Dec", "2023-12-01T00:00:00Z", "2024-01-01T00:00:00Z"),
        ("Sept", "2023-09-01T00:00:00Z", "2023-10-01T00:00:00Z"),
        ("March 2022", "2022-03-01T00:00:00Z", "2022-04-01T00:00:00Z"),
        ("in Feb 2024", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"),
        ("wednesday", "2024-05-15T00:00:00Z", "2024-05-16T00:00:00Z"),  # today counts
        ("last wednesday", "2024-05-08T00:00:00Z", "2024-05-09T00:00:00Z"),
        ("last friday", "2024-05-10T00:00:00Z", "2024-05-11T00:00:00Z"),
        ("friday", "2024-05-10T00:00:00Z", "2024-05-11T00:00:00Z"),
        ("on mon", "2024-05-13T00:00:00Z", "2024-05-14T00:00:00Z"),
        ("  since   2  weeks  ago ", "2024-05-01T14:30:00Z", "2024-05-01T14:30:00Z"),
        # a day with its month's name, as people write it
        ("April 1, 2024", "2024-04-01T00:00:00Z", "2024-04-02T00:00:00Z"),
        ("apr 1st 2024", "2024-04-01T00:00:00Z", "2024-04-02T00:00:00Z"),
        ("1 April 2024", "2024-04-01T00:00:00Z", "2024-04-02T00:00:00Z"),
        ("3rd Jan, 2023", "2023-01-03T00:00:00Z", "2023-01-04T00:00:00Z"),
        ("since May 15", "2024-05-15T00:00:00Z", "2024-05-16T00:00:00Z"),  # today counts
        ("May 16", "2023-05-16T00:00:00Z", "2023-05-17T00:00:00Z"),  # not in the future
        ("2024/04/01", "2024-04-01T00:00:00Z", "2024-04-02T00:00:00Z"),
        ("2024/4/1", "2024-04-01T00:00:00Z", "2024-04-02T00:00:00Z"),
        # "in" is dropped before a month, even one starting with "a" ("in a week" is to come)
        ("in April", "2024-04-01T00:00:00Z", "2024-05-01T00:00:00Z"),
        ("in August", "2023-08-01T00:00:00Z", "2023-09-01T00:00:00Z"),
    ],
)
def test_phrases(text, start, end):
    assert since(text) == start
    assert until(text) == end


def test_this_quarter_is_the_calendar_quarter_at_both_ends_of_the_year():
    january, december = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 12, 31, 23, 0, tzinfo=UTC)
    assert (since("this quarter", january), until("this quarter", january)) == (
        "2024-01-01T00:00:00Z",
        "2024-04-01T00:00:00Z",
    )
    assert (since("this quarter", december), until("this quarter", december)) == (
        "2024-10-01T00:00:00Z",
        "2025-01-01T00:00:00Z",
    )
    assert since("last quarter", december) == "2024-09-30T23:00:00Z"


def test_calendar_words_follow_the_zone_of_now():
    tokyo = timezone(timedelta(hours=9))
    now = datetime(2024, 5, 15, 1, 0, tzinfo=tokyo)  # still the 14th in UTC
    assert since("today", now) == "2024-05-14T15:00:00Z"  # local midnight in UTC
    assert since("2024-05-01", now) == "2024-04-30T15:00:00Z"
    assert since("2024-05-01T00:00Z", now) == "2024-05-01T00:00:00Z"  # an explicit offset wins
    naive = datetime(2024, 5, 15, 14, 30)
    assert since("today", naive) == "2024-05-15T00:00:00Z"  # a naive `now` is UTC


def test_month_arithmetic_clamps_to_the_month_end():
    end_of_march = datetime(2024, 3, 31, 12, 0, tzinfo=UTC)
    assert since("1 month ago", end_of_march) == "2024-02-29T12:00:00Z"
    assert since("13 months ago", end_of_march) == "2023-02-28T12:00:00Z"
    assert since("last month", datetime(2024, 1, 10, tzinfo=UTC)) == "2023-12-10T00:00:00Z"


def test_default_now_is_the_local_present():
    before = datetime.now(UTC).replace(microsecond=0)
    got = datetime.fromisoformat(parse_when("now").replace("Z", "+00:00"))
    assert before - timedelta(seconds=1) <= got <= datetime.now(UTC) + timedelta(seconds=1)


def test_local_midnight_across_daylight_saving():
    """Without `now`, days are the system zone's days, even across a DST change."""
    code = (
        "from lore.search.timephrase import parse_when;"
        "print(parse_when('2024-03-30'), parse_when('2024-03-31', end=True))"
    )
    env = {**os.environ, "TZ": "Europe/Paris"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    # Paris: UTC+1 until 2024-03-31 02:00, then UTC+2
    assert out.stdout.split() == ["2024-03-29T23:00:00Z", "2024-03-31T22:00:00Z"]


@pytest.mark.parametrize(
    "text",
    [
        *("", "   ", "soonish", "3 fortnights ago", "2024-13", "2024-02-30", "last blursday", "12:30", "5m"),
        *("April 31, 2024", "2024/02/30", "32 May", "Smarch 1"),
        # past the years datetime holds: OverflowError / ValueError inside, an internal error before
        *("99999999999 days ago", "99999999999999999999 weeks ago", "last 9999999 years", "10000 years ago"),
        "2024-05-01T14:30+99:00",  # said as "offset must be a timedelta strictly between -timedelta(..."
    ],
)
def test_unreadable_values_are_usage_errors_naming_the_value(text):
    with pytest.raises(UsageError) as caught:
        since(text)
    message = str(caught.value)
    assert "timedelta" not in message and "datetime" not in message
    if text.strip():
        assert text.strip() in message
    assert "e.g." in message or "min or" in message


@pytest.mark.parametrize("offset", [-12, 0, 9])
def test_the_first_and_last_days_of_the_calendar_are_from_the_start_and_for_ever(offset):
    """`--since 0001-01-01` and `--until 9999-12-31` are what people write for
    "from the start" and "for ever"; their edges fell outside the calendar
    (the day after the last, or midnight of year 1 east of UTC): an error."""
    now = datetime(2024, 5, 15, 12, 0, tzinfo=timezone(timedelta(hours=offset)))
    first, last = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"
    for text in ("0001-01-01", "0001", "0001-01"):
        assert (
            since(text, now) == (first if offset > 0 else parse_when(text, now=now))
            and since(text, now) >= first
        )
    for text in ("9999-12-31", "9999", "9999-12"):
        assert parse_when(text, now=now, end=True) == last
    assert time_range("0001-01-01", "9999-12-31", now=now) == (since("0001-01-01", now), last)
    assert since("0999-05-01", datetime(2024, 1, 1, tzinfo=UTC)) == "0999-05-01T00:00:00Z"  # sorts as text


@pytest.mark.parametrize("text", ["last\n9999999 years", "next\ntuesday\r\nplease", "2024-13-45\nx"])
def test_a_value_over_several_lines_is_quoted_on_one(text):
    with pytest.raises(UsageError) as caught:
        since(text)
    assert "\n" not in str(caught.value) and "\r" not in str(caught.value)


def test_minutes_or_months_ambiguity_is_explained():
    with pytest.raises(UsageError, match="5min or 5mo"):
        since("5m")


def test_time_range():
    assert time_range("last week", "yesterday", now=NOW) == ("2024-05-08T14:30:00Z", "2024-05-15T00:00:00Z")
    assert time_range(None, "2024-05", now=NOW) == (None, "2024-06-01T00:00:00Z")
    assert time_range("March", None, now=NOW) == ("2024-03-01T00:00:00Z", None)
    assert time_range(None, None, now=NOW) == (None, None)
    assert time_range("today", "today", now=NOW) == ("2024-05-15T00:00:00Z", "2024-05-16T00:00:00Z")
    with pytest.raises(UsageError, match="^since 'today' .* is not before until 'last week'"):
        time_range("today", "last week", now=NOW)
    with pytest.raises(UsageError, match="'whenever'"):
        time_range("whenever", None, now=NOW)


def test_errors_name_the_argument_as_python_calls_it():
    """The CLI names it --until (tests/test_cli_commands.py), MCP and Python ``until``."""
    with pytest.raises(ArgumentError) as caught:
        time_range(None, "blah", now=NOW)
    assert str(caught.value).startswith("until: cannot read the time 'blah'")
    assert caught.value.named(lambda name: f"--{name}").startswith("--until: cannot read")


@pytest.mark.parametrize(
    "text", ["in 2 days", "in an hour", "in a week", "in one month", "in 3w", "next week", "2 weeks from now"]
)
def test_times_to_come_are_refused_not_read_as_past(text):
    """'in 2 days' was read as '2 days' (ago): a window silently the other way."""
    with pytest.raises(UsageError, match="is in the future; give a past time"):
        since(text)


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ("2024-04-01T23:59Z", "2024-04-02T00:00:00Z"),
        ("2024-04-01T23:59+00:00", "2024-04-02T00:00:00Z"),
        ("2024-04-01T23:59+0000", "2024-04-02T00:00:00Z"),
        ("2024-04-01T23:59-05:00", "2024-04-02T05:00:00Z"),
        ("2024-04-01 23:59:30+02:00", "2024-04-01T21:59:31Z"),
    ],
)
def test_until_a_minute_with_an_offset_includes_the_whole_minute(text, end):
    """The colon of an offset (+00:00) was counted as a seconds field."""
    assert until(text) == end


def test_a_month_day_without_a_year_is_its_most_recent_past_occurrence():
    """Feb 29 in a year without one was "day is out of range for month"."""
    assert since("Feb 29", datetime(2026, 11, 29, tzinfo=UTC)) == "2024-02-29T00:00:00Z"
    assert since("29 February", datetime(2024, 2, 28, tzinfo=UTC)) == "2020-02-29T00:00:00Z"
    assert since("Feb 29", datetime(2024, 3, 1, tzinfo=UTC)) == "2024-02-29T00:00:00Z"
    with pytest.raises(UsageError, match="day is out of range"):
        since("Feb 30")


@pytest.mark.parametrize("text", ["١٢٣٤", "٢٠٢٤-٠٥-٠١", "३ days ago", "Apr ١"])
def test_only_ascii_digits_are_read(text):
    """Python's \\d and int() read other scripts' digits: "١٢٣٤" was the year 1234."""
    with pytest.raises(UsageError, match="digits as 0-9"):
        since(text)


def test_a_megabyte_of_time_is_refused_without_being_quoted_back():
    """MCP's `since` reached the error whole: a one-line error a megabyte long."""
    with pytest.raises(UsageError) as caught:
        since("a" * 1_000_000)
    message = str(caught.value)
    assert len(message) < 250 and "1,000,000 characters" in message and message.count("a") < 60
