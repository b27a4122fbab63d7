"""Recorded sessions feed the lifecycle: what a compaction archives goes through
001's capture (the digest in the daily tier, errors counted towards a gotcha),
once, whichever way the events came in (appended, imported, captured as a
transcript before), and through the service, the CLI and the MCP server alike."""

from __future__ import annotations

import json

import lore
from lore.sessions import message, tool_result

from .conftest import at

SMALL_LIMITS = (
    "\n[sessions]\nsoft_limit_tokens = 2000\nhard_limit_tokens = 4000\nprotected_recent_tokens = 100\n"
)
DECISION = "We decided to use RabbitMQ quorum queues for the billing worker."
ERROR = "ConnectionRefusedError: [Errno 111] Connection refused (port 5432)"


def small_limits(root) -> None:
    config = root / ".lore/config.toml"
    config.write_text(config.read_text() + SMALL_LIMITS)


def session_events() -> list[dict]:
    """A decision and the same error three times early on, then enough talk to compact them away."""
    events = [message("user", "Which queue should the billing worker use for invoices?", timestamp=at(0))]
    events.append(message("assistant", DECISION, timestamp=at(0, minutes=1)))
    for n in range(3):
        events.append(
            tool_result(f"t{n}", f"{ERROR} at attempt {n}", is_error=True, timestamp=at(0, minutes=2 + n))
        )
    events += [message("assistant", f"Looking at the worker setup, step {n}.") for n in range(40)]
    return events


def daily(project) -> list[dict]:
    return project.list(tier="daily", limit=None)


def patterns(project) -> dict[str, int]:
    return {p.signature: p.count for p in project.store.error_patterns()}


def test_a_compaction_captures_what_it_archived_once(proj):
    root = proj.project.root
    small_limits(root)
    with lore.open(root) as p:
        p.start_session("s1")
        p.record_events("s1", session_events())
        done = p.compact_session("s1")
        assert done.compacted and done.first_event == 1
        decisions = [r for r in daily(p) if r["type"] == "decision"]
        assert [r["summary"] for r in decisions] == [DECISION]
        memory = p.load(decisions[0]["path"])
        assert memory.extra["digest_class"] == "decision" and memory.extra["session_id"] == "s1"
        assert memory.extra["evidence_refs"] == ["2"]  # the event that said it
        gotchas = [r for r in daily(p) if r["type"] == "gotcha"]
        assert len(gotchas) == 1 and "ConnectionRefusedError" in gotchas[0]["title"]
        counted = patterns(p)
        assert list(counted.values()) == [3]

        # The session's summary is a memory too; compacting and capturing again adds nothing.
        assert p.search("RabbitMQ quorum queues", tier="session-summary")
        before = {r["id"]: r["evidence_count"] for r in daily(p)}
        assert p.compact_session("s1").compacted is False
        p.record_events("s1", [message("assistant", f"More talk {n}.") for n in range(40)])
        p.compact_session("s1")
        assert {r["id"]: r["evidence_count"] for r in daily(p)} == before
        assert patterns(p) == counted


def test_a_range_archived_by_a_process_killed_before_it_captured_is_captured_by_the_next_call(proj):
    """A compaction archives, then captures (another step): `lore session compact`
    killed in between left the range archived and never captured, and the next
    compaction had nothing to do. The session store archiving alone is that process."""
    root = proj.project.root
    small_limits(root)
    with lore.open(root) as p:
        p.start_session("s1")
        p.record_events("s1", session_events())
        assert p.sessions.compact("s1").compacted  # the store alone: archived, nothing captured
        assert patterns(p) == {}
        assert p.sessions.uncaptured("s1")
        assert p.compact_session("s1").compacted is False  # nothing new to compact...
        assert list(patterns(p).values()) == [3]  # ...but what was archived is captured now
        assert [r["summary"] for r in daily(p) if r["type"] == "decision"] == [DECISION]
        assert p.sessions.uncaptured("s1") == []
        p.record_events("s1", [message("assistant", "One more.")])
        assert list(patterns(p).values()) == [3]  # once


def test_a_session_of_an_older_lore_is_not_captured_again(proj):
    """An older Lore captured each range as it archived it, and kept no marker."""
    root = proj.project.root
    small_limits(root)
    with lore.open(root) as p:
        p.start_session("s1")
        p.record_events("s1", session_events())
        assert p.sessions.compact("s1").compacted
        (root / ".lore/sessions/s1/.captured").unlink()
        assert p.sessions.uncaptured("s1") == []
        p.record_events("s1", [message("assistant", "One more.")])
        assert patterns(p) == {}


def test_a_transcript_captured_then_recorded_and_compacted_counts_once(proj, tmp_path):
    """The PreCompact hook does both: capture the transcript, record it, compact it."""
    root = proj.project.root
    small_limits(root)
    transcript = tmp_path / "s2.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in session_events()))
    with lore.open(root) as p:
        captured = p.capture_transcript(transcript)
        assert captured.gotchas == 1 and captured.digest["decision"] == 1
        before = {r["id"]: r["evidence_count"] for r in daily(p)}
        counted = patterns(p)
        imported = p.record_transcript(transcript, session_id="s2")
        assert imported.appended == len(session_events())
        p.compact_session("s2")
        assert {r["id"]: r["evidence_count"] for r in daily(p)} == before
        assert patterns(p) == counted


def test_an_import_by_the_cli_compacts_and_digests(proj, tmp_path, cli_in):
    root = proj.project.root
    small_limits(root)
    transcript = tmp_path / "s3.jsonl"
    filler = [
        message("user", f"Step {n}: " + "check the worker queue settings again " * 8) for n in range(60)
    ]
    transcript.write_text("".join(json.dumps(e) + "\n" for e in session_events() + filler))
    result = cli_in(root, "session", "import", str(transcript), "--session", "s3", "--json")
    assert result["compactions"]
    listed = cli_in(root, "list", "--tier", "daily", "--json")
    assert DECISION in [r["summary"] for r in listed if r["type"] == "decision"]
    assert any(r["type"] == "gotcha" for r in listed)
    shown = cli_in(root, "session", "show", "s3", "--json")
    assert shown["summaries"] >= 1


def test_ending_a_session_captures_its_last_part_once(proj):
    """Only what a compaction archived was captured, and a compaction keeps the
    recent part live: with the default limits a whole session's decisions and
    errors never reached the daily tier, not at its end, not ever."""
    root = proj.project.root
    with lore.open(root) as p:
        p.start_session("s1")
        p.record_events("s1", session_events()[:5])  # well under the default limits: nothing compacts
        assert daily(p) == []
        p.end_session("s1")
        assert [r["summary"] for r in daily(p) if r["type"] == "decision"] == [DECISION]
        assert list(patterns(p).values()) == [3]
        before = {r["id"]: r["evidence_count"] for r in daily(p)}
        p.compact_session("s1")  # compacting the ended session later takes nothing in twice
        assert {r["id"]: r["evidence_count"] for r in daily(p)} == before and list(patterns(p).values()) == [
            3
        ]
