"""Dates and times on the command line, one rule everywhere: a time without
an offset is the user's local time and a bare date that local day, whether it
is stored (`add --occurred-at`) or filters (`--since`/`--until`); text output
shows local days, JSON UTC (docs/cli.md, "Dates and times"). Commits are
dated by when they landed (the committer date) for every filter.

Each test names its zone (TZ in the command's environment), far from UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from test_cli_experience import indexed
from test_code_index import commit, git, write

NEW_YORK = {"TZ": "America/New_York"}  # UTC-4 in April


def add(cli, title: str, *extra: str, ok: bool = True):
    args = ("add", "--title", title, "--body", f"{title}: a body long enough to keep.", *extra)
    return cli(*args, "--json", env=NEW_YORK, ok=ok)


def titles(cli, *args: str) -> list[str]:
    return sorted(m["title"] for m in cli.json("list", *args, env=NEW_YORK))


def test_a_time_without_an_offset_is_local_when_stored_and_when_filtering(cli):
    """It was stored as UTC but filtered as local time: `--since 12:00` missed a memory of 12:00."""
    add(cli, "Noon", "--occurred-at", "2026-04-01T12:00:00")
    add(cli, "Day", "--occurred-at", "2026-04-01")
    add(cli, "Written in UTC", "--occurred-at", "2026-04-02T02:00:00Z")  # 22:00 on April 1 in New York
    stored = {m["title"]: m["occurred_at"] for m in cli.json("list", env=NEW_YORK)}
    assert stored == {
        "Noon": "2026-04-01T16:00:00Z",
        "Day": "2026-04-01T04:00:00Z",  # local midnight
        "Written in UTC": "2026-04-02T02:00:00Z",
    }
    assert titles(cli, "--since", "2026-04-01T12:00", "--until", "2026-04-01T12:00") == ["Noon"]
    assert titles(cli, "--since", "2026-04-01", "--until", "2026-04-01") == ["Day", "Noon", "Written in UTC"]
    # Text output shows the local day, the one these filters go by.
    shown = cli("list", env=NEW_YORK).stdout
    assert "2026-04-01" in shown and "2026-04-02" not in shown, shown


@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_occurred_at_is_refused_not_taken_as_now(cli, value):
    proc = add(cli, "Blank", "--occurred-at", value, ok=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        proc.stderr
        == "lore: error: --occurred-at: it is empty; give an ISO 8601 time (2026-02-10T15:30) or leave it out\n"
    )


def test_an_occurred_at_in_the_future_is_refused(cli):
    proc = add(cli, "Future", "--occurred-at", "3000-01-01", ok=False)
    assert proc.returncode == 2 and "--occurred-at: '3000-01-01T05:00:00Z' is in the future" in proc.stderr
    assert proc.stderr.count("\n") == 1
    soon = (datetime.now(UTC) + timedelta(hours=12)).strftime("%Y-%m-%dT%H:%MZ")  # clocks disagree a little
    assert add(cli, "Soon", "--occurred-at", soon).returncode == 0
    assert "3000" not in cli("stats", env=NEW_YORK).stdout


def test_date_errors_name_the_flag(cli):
    for args, says in [
        (("list", "--until", "blah"), "lore: error: --until: cannot read the time 'blah'; use a date"),
        (("list", "--since", "in 2 days"), "lore: error: --since: 'in 2 days' is in the future"),
        # A period that begins after now matched nothing, silently (an audit): `--until tomorrow` is fine.
        (("search", "x", "--since", "tomorrow"), "lore: error: --since 'tomorrow' begins after now"),
        (("code", "x", "--since", "3000-01-01"), "lore: error: --since '3000-01-01' begins after now"),
        (
            ("search", "x", "--since", "١٢٣٤"),
            "lore: error: --since: cannot read the time '١٢٣٤': write its digits",
        ),
    ]:
        proc = cli(*args, ok=False)
        assert proc.returncode == 2 and proc.stderr.startswith(says) and proc.stderr.count("\n") == 1, (
            proc.stderr
        )


def test_help_says_until_includes_the_date_it_names(cli):
    for command in (("list",), ("search",), ("code",), ("history",), ("recall",)):
        text = " ".join(cli(*command, "--help").stdout.split())
        assert "up to and including" in text, (command, text)
        assert "before (date" not in text and "Occurred before" not in text


@pytest.fixture
def landed_late(repo):
    """A commit written in 2020 (author date) that landed in 2026 (committer
    date), as after a rebase or a long-lived branch; and one of 2024."""
    write(repo, "src/old.py", "def rebased_helper():\n    return 1\n")
    git(repo, "add", "-A")
    dates = {"GIT_AUTHOR_DATE": "2020-01-01T12:00:00Z", "GIT_COMMITTER_DATE": "2026-11-01T12:00:00Z"}
    git(repo, "commit", "-q", "-m", "Rebased helper", env=dates)
    write(repo, "src/plain.py", "def plain_helper():\n    return 2\n")
    commit(repo, "Plain helper", date="2024-06-01T12:00:00Z")
    return indexed(repo)


def test_history_and_code_filter_commits_by_when_they_landed(landed_late):
    """`history --since` and `code --since` went by the author date, `--changed-within` and
    `git log --since` by the committer date: 2020's commit, landed in 2026, was 'old' to one."""
    cli = landed_late

    def found(command: str, *args: str) -> list[str]:
        hits = cli.json(command, "helper", *args)
        return sorted(h["subject"] if command == "history" else h["file_path"] for h in hits)

    assert found("history", "--since", "2026-10-01") == ["Rebased helper"]
    assert found("history", "--until", "2024-12-31") == ["Plain helper"]
    assert found("code", "--since", "2026-10-01", "--files-only") == ["src/old.py"]
    assert found("code", "--until", "2020-12-31", "--files-only") == []
    # The date shown is still the author's: when the work was written.
    rebased = next(h for h in cli.json("history", "helper") if h["subject"] == "Rebased helper")
    assert rebased["date"].startswith("2020-01-01")


def test_an_index_dating_commits_by_author_walks_history_again(landed_late):
    """History format 2 kept the author date as the commit's time: an index of
    it is dated again at the next sync (in place: one `git log`, not a walk of
    the whole history), then filters by the committer date."""
    import lore
    from lore.index import history_sync

    cli = landed_late
    with lore.open(cli.cwd) as project:  # the commit as format 2 stored it: no committer date
        store = project.store
        (rebased,) = [c for c in store.commits() if c.subject == "Rebased helper"]
        with store.transaction():
            path = history_sync.PREFIX + rebased.sha
            store.delete_files([path])
            file_id = store.put_file(path, history_sync.KIND, rebased.sha, 0, 0)
            store.put_commit(file_id, rebased)  # `committed` is not read back: dated by its author
            store.put_chunks(file_id, history_sync.KIND, [history_sync.commit_chunk(rebased)])
            store.set_meta("history_format", "2")
    hits = cli.json("history", "helper", "--since", "2026-10-01")
    assert [h["subject"] for h in hits] == ["Rebased helper"]
    with lore.open(cli.cwd) as project:  # dated in place, not written again
        assert project.store.file_states(history_sync.KIND)[path].id == file_id
        assert project.store.get_meta("history_format") == history_sync.FORMAT


def test_yesterday_is_the_calendar_day_before_as_since_yesterday_reads_it(monkeypatch):
    """An audit: a commit two calendar days old (38 h) was shown "yesterday",
    while `--since yesterday` left it out."""
    import time

    from lore.interfaces.cli.output import relative_time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        now = datetime(2026, 12, 1, 7, 30, tzinfo=UTC)
        assert relative_time("2026-11-29T17:00:00Z", now) == "2 days ago"  # 38 h, two calendar days
        assert relative_time("2026-11-30T00:10:00Z", now) == "yesterday"  # 31 h, the day before
        assert relative_time("2026-11-30T20:00:00Z", now) == "11 h ago"
        assert relative_time("2026-11-21T09:00:00Z", now) == "10 days ago"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_lore_now_is_the_present_time_phrases_are_read_from(cli):
    """An audit: with LORE_NOW fixed (a replay), `--since "last week"` was read
    from the real clock, so the same command listed other memories every day."""
    for title, when in (
        ("Old decision", "2024-02-20T12:00:00Z"),
        ("Recent decision", "2024-03-01T12:00:00Z"),
    ):
        cli("add", "--title", title, "--body", f"{title}: a body long enough to keep.", "--occurred-at", when)
    replay = {"LORE_NOW": "2024-03-05T12:00:00Z", "TZ": "UTC"}
    listed = cli.json("list", "--since", "last week", env=replay)
    assert [m["title"] for m in listed] == ["Recent decision"]
    assert "4 days ago" in cli("list", env=replay).stdout
