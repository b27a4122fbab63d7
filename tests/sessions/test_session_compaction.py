"""Compaction: soft limit, protected tail, archives that keep every raw event, summaries
that are valid Lore memories, the hard limit on the view only, and crash recovery."""

from __future__ import annotations

import gzip
import json

import pytest

from lore.memory import markdown
from lore.sessions import archive, message, tool_call, tool_result
from lore.sessions.events import tokens_of
from sessions.session_helpers import log_lines, metadata, open_store, sessions_config

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip


def conversation(n: int) -> list[dict]:
    """A coding session's worth of varied events (messages, tool calls, results)."""
    out = []
    for i in range(n):
        when = f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z"
        if i % 5 == 3:
            out.append(tool_call("Edit", {"file_path": f"src/module_{i}.py", "new": "x = 1"}, timestamp=when))
        elif i % 5 == 4:
            out.append(tool_result(None, f"edited src/module_{i - 1}.py ({i} lines)", timestamp=when))
        else:
            role = "user" if i % 2 == 0 else "assistant"
            out.append(
                message(
                    role, f"Step {i}: we will use approach number {i} for the parser. " * 2, timestamp=when
                )
            )
    return out


def test_compaction_archives_every_raw_event_byte_for_byte(root):
    sessions_config(root, soft=100_000, hard=200_000, protected=600)
    store = open_store(root)
    store.append_many("s", conversation(120), create=True)
    before = [line for line in log_lines(root, "s") if line]
    assert len(before) == 120

    result = store.compact("s")
    assert result.compacted and result.reason == "manual"
    assert (result.first_event, result.events_archived) == (1, result.last_event)
    archived = gzip.decompress((root / result.archive).read_bytes()).split(b"\n")[:-1]
    live = [line for line in log_lines(root, "s") if line]
    assert archived + live == before  # moved, byte for byte, nothing lost or added
    assert result.archive.endswith(f"archive/{1:06d}-{result.last_event:06d}.jsonl.gz")

    # The protected tail: the newest events, within protected_recent_tokens, stay live.
    tail_tokens = sum(tokens_of(json.loads(line)) for line in live)
    assert tail_tokens <= 600 and tail_tokens + tokens_of(json.loads(archived[-1])) > 600

    everything = store.events("s", include_archived=True)
    assert [e.id for e in everything] == list(range(1, 121))
    assert [e.id for e in store.events("s")] == [json.loads(line)["id"] for line in live]

    # A second compaction archives the next range; ranges never overlap.
    store.append_many("s", conversation(60))
    second = store.compact("s")
    assert second.first_event == result.last_event + 1
    ranges = archive.archived_ranges(root / ".lore/sessions/s")
    assert [(r.first, r.last) for r in ranges] == [
        (1, result.last_event),
        (second.first_event, second.last_event),
    ]
    assert [e.id for e in store.events("s", include_archived=True)] == list(range(1, 181))
    info = store.get("s")
    assert (info.compactions, info.archived_event_count) == (2, second.last_event)
    assert store.compact("s").reason == "nothing-to-compact"


def test_summary_file_is_a_valid_lore_memory_linked_to_its_archive(root):
    sessions_config(root, soft=100_000, hard=200_000, protected=300)
    store = open_store(root)
    store.start("s-42", agent="claude-code")
    store.append_many("s-42", conversation(50))
    result = store.compact("s-42")

    path = root / result.summary_path
    assert path.name == f"{1:06d}-{result.last_event:06d}.md"
    memory, _ = markdown.parse(path.read_bytes(), result.summary_path)
    memory.validate(strict=True)  # as strict as memories Lore creates itself
    last = store.events("s-42", include_archived=True)[result.last_event - 1]
    assert memory.type == "summary" and memory.agent == "claude-code"
    assert memory.source == f"session:s-42#1-{result.last_event}"
    assert memory.occurred_at == last.timestamp
    assert memory.extra["session_id"] == "s-42"
    assert memory.extra["events"] == f"1-{result.last_event}"
    assert (root / memory.extra["archive"]).exists() and memory.extra["archive"] == result.archive
    assert "session-summary" in memory.tags and len(memory.tags) >= 2
    assert "parser" in memory.body and "approach" in memory.tags
    assert "src/module_3.py" in memory.body  # files touched by tools

    # Recompacting the same range (after a crash) would keep the memory's id.
    again = archive.summary_memory(
        archive.Summary(body=memory.body, keywords=memory.tags, summarizer="extractive"),
        session_id="s-42",
        first=1,
        last=result.last_event,
        occurred_at=memory.occurred_at,
        archive_rel=result.archive,
        agent="claude-code",
    )
    assert again.id == memory.id


def test_crossing_the_soft_limit_on_append_compacts_proactively(root):
    sessions_config(root, soft=800, hard=5000, protected=200)
    store = open_store(root)
    store.start("s")
    results = [store.append("s", event) for event in conversation(100)]
    triggered = [i for i, r in enumerate(results) if r.compaction]
    assert triggered, "the soft limit never triggered a compaction"
    live_tokens = 0
    for index, result in enumerate(results):
        event_tokens = result.events[0].tokens
        live_tokens += event_tokens
        if index in triggered:
            assert live_tokens > 800  # only once the limit is crossed
            assert result.compaction.reason == "soft-limit"
            live_tokens -= result.compaction.tokens_archived
        assert live_tokens <= 800 or index == len(results) - 1
    meta = metadata(root, "s")
    assert meta["liveTokenCount"] <= 800 and meta["compactions"] == len(triggered)
    assert meta["tokenCount"] == meta["liveTokenCount"] + meta["summaryTokenCount"]
    assert [e.id for e in store.events("s", include_archived=True)] == list(range(1, 101))

    # Bulk appends (imports) compact between batches, as if recorded live.
    store.append_many("bulk", conversation(100), create=True)
    assert store.get("bulk").compactions == len(triggered)


def test_hard_limit_cuts_the_view_oldest_first_never_the_disk(root):
    sessions_config(root, soft=1000, hard=1200, protected=300)
    store = open_store(root)
    store.append_many("s", conversation(200), create=True)
    on_disk = len(store.events("s", include_archived=True))
    log_before = log_lines(root, "s")

    view = store.context("s")
    assert view.tokens <= 1200 and view.dropped > 0
    assert view.tokens == sum(e.tokens for e in view.events)
    assert view.events[-1].id == 200  # the newest stays
    ids = [e.id for e in view.events if e.id is not None]
    assert ids == sorted(ids) and ids[-1] == 200

    wide = store.context("s", limit_tokens=1_000_000)
    assert wide.dropped == 0 and wide.summaries == store.get("s").compactions
    assert wide.events[0].role == "system" and wide.events[0].summary_of == "1-" + str(
        archive.archived_ranges(root / ".lore/sessions/s")[0].last
    )
    assert wide.events[0].content.startswith("Previous conversation summary (events 1-")
    assert view.events == wide.events[view.dropped :]  # the cut view is the tail of the full one
    assert len(store.events("s", include_archived=True)) == on_disk == 200
    assert log_lines(root, "s") == log_before  # reading the view wrote nothing

    tiny = store.context("s", limit_tokens=1)
    assert len(tiny.events) == 1 and tiny.events[0].id == 200


@pytest.mark.parametrize("event", ["message", "tool_call", "tool_result"])
def test_one_event_over_the_limit_is_cut_to_fit_in_the_view_and_kept_whole_on_disk(root, event):
    """The newest item always stays: a 3 MB tool call made a view of 750,005 tokens
    against a limit of 100 (and of the 150,000 hard limit without one)."""
    sessions_config(root, soft=1_000_000, hard=2_000_000, protected=300)
    store = open_store(root)
    big = "v" * 400_000
    made = {
        "message": message("user", big),
        "tool_call": tool_call("Edit", {"k": big}),
        "tool_result": tool_result("c1", big),
    }[event]
    store.append_many("s", [message("user", "hello"), made], create=True)
    view = store.context("s", limit_tokens=100)
    assert view.tokens <= 100 and view.tokens == sum(e.tokens for e in view.events)
    (shown,) = view.events
    text = {"message": shown.content, "tool_call": shown.args, "tool_result": shown.result}[event]
    assert text.endswith("the whole event is kept on disk]") and len(text) < 1000
    assert store.context("s", limit_tokens=10**7).events[-1] == store.events("s")[-1]  # whole when it fits
    assert len(log_lines(root, "s")[-2]) > 400_000  # the disk keeps it whole (the last line ends the file)


def test_interrupted_compaction_never_loses_or_doubles_events(root):
    """A compaction killed after writing its archive but before rewriting the log."""
    sessions_config(root, soft=100_000, hard=200_000, protected=300)
    store = open_store(root)
    store.append_many("s", conversation(60), create=True)
    folder = root / ".lore/sessions/s"
    lines = [line for line in log_lines(root, "s") if line]
    archive.write_archive(folder, 1, 30, lines[:30])  # the archive landed; the rest did not

    fresh = open_store(root)
    assert [e.id for e in fresh.events("s", include_archived=True)] == list(range(1, 61))
    view = fresh.context("s", limit_tokens=10**6)
    assert view.events[0].summary_of == "1-30" and "summary is missing" in view.events[0].content
    assert [e.id for e in view.events[1:]] == list(range(31, 61))
    info = fresh.get("s")  # metadata recounted from the files
    assert (info.event_count, info.archived_event_count, info.compactions) == (60, 30, 1)

    result = fresh.compact("s")  # the next compaction writes the missing summary first
    assert (folder / "summaries" / "000001-000030.md").exists()
    assert result.first_event == 31
    assert [e.id for e in fresh.events("s", include_archived=True)] == list(range(1, 61))
    assert fresh.append("s", message("user", "still counting")).events[0].id == 61


@pytest.mark.parametrize("damage", ["truncated", "not gzip", "not json"])
def test_a_damaged_archive_is_named_in_one_line(root, damage):
    # A truncated archive raised EOFError, which click took for Ctrl-D: `lore: aborted`
    # and nothing else; other damage was an internal error.
    import subprocess
    import sys

    sessions_config(root, soft=100_000, hard=200_000, protected=300)
    store = open_store(root)
    store.append_many("s", conversation(60), create=True)
    path = root / store.compact("s").archive
    data = path.read_bytes()
    path.write_bytes(
        {
            "truncated": data[: len(data) // 2],
            "not gzip": b"overwritten by something else",
            "not json": gzip.compress(b'{"id": 1, "type": "message"\n'),
        }[damage]
    )
    kept = path.read_bytes()
    for args in (["show", "s", "--all"], ["show", "s"]):
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "lore", "session", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if args[-1] != "--all":  # the context view reads summaries, not archives
            assert proc.returncode == 0, proc.stderr
            continue
        assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith(f"lore: error: session archive {path} is damaged (")
        assert proc.stderr.rstrip().endswith(
            "its events can't be read: restore it from a backup, "
            "or move it out of the archive folder to go on without them"
        )
    assert path.read_bytes() == kept
