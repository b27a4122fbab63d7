"""The session store on disk: round trips, crash safety (torn lines, SIGKILL), concurrent appenders."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from lore.errors import Conflict, NotFound, UsageError, ValidationError
from lore.sessions import log, message, tool_call, tool_result
from sessions.session_helpers import log_lines, metadata, open_store, sessions_config

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip


def test_events_round_trip_in_004_shapes(root, store):
    info = store.start("s-1", agent="claude-code", user="ada")
    assert info.to_dict()["path"] == ".lore/sessions/s-1"
    store.append(
        "s-1", message("user", "Héllo — use UTC, not local time", timestamp="2026-03-01T10:00:00+01:00")
    )
    call = store.append("s-1", tool_call("Read", {"file_path": "src/app.py"})).events[0]
    store.append("s-1", tool_result(call.tool_call_id, {"lines": 3}, is_error=True))
    store.append(
        "s-1", {"type": "message", "role": "assistant", "content": "key: sk-abcdefghijklmnopqrstuvwx"}
    )

    raw = [json.loads(line) for line in log_lines(root, "s-1") if line]
    assert raw[0] == {
        "id": 1,
        "type": "message",
        "role": "user",
        "content": "Héllo — use UTC, not local time",
        "timestamp": "2026-03-01T09:00:00Z",
        "tokens": raw[0]["tokens"],
    }
    assert raw[1]["type"] == "tool_call" and raw[1]["toolName"] == "Read"
    assert raw[1]["args"] == {"file_path": "src/app.py"} and raw[1]["toolCallId"] == "tc_2"
    assert raw[2] == {
        **raw[2],
        "type": "tool_result",
        "toolCallId": "tc_2",
        "result": {"lines": 3},
        "isError": True,
    }
    assert "sk-abc" not in raw[3]["content"] and "[REDACTED:openai-key]" in raw[3]["content"]

    events = store.events("s-1")
    assert [e.id for e in events] == [1, 2, 3, 4]
    assert events[0].to_dict()["content"] == "Héllo — use UTC, not local time"
    assert events[2].is_error and events[2].tool_call_id == "tc_2"
    assert all(e.tokens > 0 for e in events)

    meta = metadata(root, "s-1")
    assert {k: meta[k] for k in ("id", "channelId", "userId", "messageCount", "status")} == {
        "id": "s-1",
        "channelId": "claude-code",
        "userId": "ada",
        "messageCount": 2,
        "status": "active",
    }
    assert meta["tokenCount"] == sum(e.tokens for e in events)
    assert {"createdAt", "updatedAt"} <= set(meta)
    got = store.get("s-1").to_dict()
    assert got["event_count"] == 4 and got["message_count"] == 2 and got["agent"] == "claude-code"
    assert all(key == key.lower() for key in got)  # snake_case record

    ended = store.end("s-1")
    assert ended.status == "ended" and ended.ended_at
    with pytest.raises(Conflict, match="session s-1 has ended; start a new session"):
        store.append("s-1", message("user", "one more thing"))
    assert store.get("s-1").status == "ended" and store.get("s-1").event_count == 4
    assert [s.id for s in store.list()] == ["s-1"]


def test_bad_ids_events_and_missing_sessions_are_refused(root, store):
    # "s2\n": a pattern's `$` matches before a final line break; it made a folder "s2\n/".
    for bad in ("../escape", "a/b", ".hidden", "", "x" * 200, "spa ce", "s2\n", "s2\r\n"):
        with pytest.raises(UsageError):
            store.start(bad)
        with pytest.raises(UsageError):
            store.append(bad, message("user", "hi"), create=True)
    assert not (root / "escape").exists() and not (root / ".lore" / "escape").exists()
    assert not list((root / ".lore").rglob("s2*"))
    with pytest.raises(NotFound):
        store.append("nope", message("user", "hi"))
    with pytest.raises(NotFound):
        store.context("nope")
    store.start("s")
    with pytest.raises(Conflict):
        store.start("s")
    for event in (
        {"type": "chat"},
        {"type": "message", "role": "robot", "content": "x"},
        {"type": "message"},
        "x",
    ):
        with pytest.raises(ValidationError):
            store.append("s", event)
    assert store.get("s").event_count == 0


def test_an_agent_name_that_looks_like_a_secret_owns_no_session(root, store):
    """It was written in clear in the session's .owner and metadata.json."""
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    with pytest.raises(UsageError, match="agent name looks like a secret"):
        store.start("agsec", agent=token)
    with pytest.raises(UsageError, match="agent name looks like a secret"):
        store.append_many("hk", [message("user", "hi")], create=True, agent=token)
    assert not (root / ".lore/sessions/agsec").exists() and not (root / ".lore/sessions/hk").exists()
    store.start("fine", agent="claude-code")


def test_torn_last_line_is_ignored_then_repaired_without_losing_lines(root, store):
    store.start("s")
    for n in range(3):
        store.append("s", message("user", f"line {n}"))
    path = root / ".lore/sessions/s/session.jsonl"
    before = path.read_bytes()
    with open(path, "ab") as handle:
        handle.write(b'{"id": 4, "type": "message", "role": "user", "content": "cut sho')  # killed mid-append

    read = log.read(path)
    assert read.torn_tail and [line.event["id"] for line in read.lines] == [1, 2, 3]
    assert [e.content for e in store.events("s")] == ["line 0", "line 1", "line 2"]
    assert store.context("s").events[-1].content == "line 2"

    store.append("s", message("user", "after the crash"))
    after = path.read_bytes()
    assert after.startswith(before)  # complete lines untouched
    assert [json.loads(line)["id"] for line in after.splitlines()] == [1, 2, 3, 4]
    assert json.loads(after.splitlines()[-1])["content"] == "after the crash"
    assert b"cut sho" in (root / ".lore/sessions/s/session.jsonl.rejected").read_bytes()
    assert any("torn" in notice for notice in store.notices)

    # A last line that only lost its newline is a whole event: it is kept.
    with open(path, "ab") as handle:
        handle.write(json.dumps({"id": 5, "type": "message", "role": "user", "content": "whole"}).encode())
    assert store.events("s")[-1].content == "whole"
    store.append("s", message("assistant", "next"))
    assert [e.id for e in store.events("s")] == [1, 2, 3, 4, 5, 6]


def test_metadata_left_behind_by_a_crash_is_recounted_from_the_files(root, store):
    store.start("s", agent="a")
    store.append("s", message("user", "one"))
    path = root / ".lore/sessions/s/session.jsonl"
    with open(path, "ab") as handle:  # the process died after its append, before metadata.json
        handle.write(
            json.dumps({"id": 2, "type": "message", "role": "user", "content": "two"}).encode() + b"\n"
        )
    fresh = open_store(root)
    info = fresh.get("s")
    assert (info.event_count, info.message_count, info.agent) == (2, 2, "a")
    assert any("recounted" in n for n in fresh.notices)
    assert fresh.append("s", message("user", "three")).events[0].id == 3

    (root / ".lore/sessions/s/metadata.json").write_text("{not json")
    assert open_store(root).get("s").event_count == 3


CHILD = """
import sys
from lore.sessions import SessionStore, message
from lore.project import Project

store = SessionStore(Project.find("."))
big = "x" * int(sys.argv[1])
n = 0
while True:
    n += 1
    event = store.append("s", message("user", f"{n} " + big), create=True).events[0]
    print(event.id, flush=True)
"""


@pytest.mark.parametrize("size", [200, 300_000])
def test_sigkill_mid_append_leaves_a_readable_session(root, size):
    """Real processes killed at random moments; large events make a kill inside write() likely."""
    torn_seen = False
    acknowledged = 0
    for round_ in range(4):
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CHILD), str(size)],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        target = acknowledged + 3
        for line in child.stdout:
            acknowledged = int(line)
            if acknowledged >= target:
                break
        time.sleep(0.003 * round_)  # vary where in the next append the kill lands
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()

        path = root / ".lore/sessions/s/session.jsonl"
        torn_seen |= log.read(path).torn_tail
        store = open_store(root)  # big events cross the soft limit: compactions were killed too
        events = store.events("s", include_archived=True)
        ids = [e.id for e in events]
        assert ids == list(range(1, len(ids) + 1))  # contiguous, no duplicates, nothing garbled
        assert len(ids) >= acknowledged  # every acknowledged append survived
        for event in events:  # every event whole: the child's full payload, or ours
            assert event.content == "recovered" or event.content.split(" ", 1)[1] == "x" * size
        assert store.get("s").event_count == len(ids)
        added = store.append("s", message("assistant", "recovered")).events[0]
        assert added.id == len(ids) + 1
        assert path.read_bytes().endswith(b"\n")
        acknowledged = added.id
    print(f"\nsize {size}: a torn last line was {'seen and repaired' if torn_seen else 'not produced'}")


WRITER = """
import sys
from lore.sessions import SessionStore, message
from lore.project import Project

store = SessionStore(Project.find("."))
name, count = sys.argv[1], int(sys.argv[2])
for n in range(count):
    store.append("shared", message("user", f"{name} {n} " + "words " * 20), create=True)
"""


@pytest.mark.parametrize("compacting", [False, True], ids=["append-only", "with-compaction"])
def test_concurrent_appenders_lose_nothing(root, compacting):
    if compacting:
        sessions_config(root, soft=1500, hard=3000, protected=400)
    writers, count = 4, 120
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(WRITER), f"w{w}", str(count)],
            cwd=root,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err

    store = open_store(root)
    events = store.events("shared", include_archived=True)
    assert [e.id for e in events] == list(range(1, writers * count + 1))
    seen = [tuple(e.content.split()[:2]) for e in events]
    assert len(set(seen)) == writers * count
    for w in range(writers):  # each writer's own order is kept
        mine = [int(n) for name, n in seen if name == f"w{w}"]
        assert mine == list(range(count))
    info = store.get("shared")
    assert info.event_count == writers * count and info.message_count == writers * count
    if compacting:
        assert info.compactions >= 2 and info.archived_event_count > 0
        assert info.live_event_count == len(store.events("shared"))


def test_sessions_folder_is_git_ignored_in_new_and_old_projects(tmp_path, git_env):
    import lore

    for name, legacy in (("new", False), ("old", True)):
        root = tmp_path / name
        root.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        project = lore.init(root)
        if legacy:  # a .lore/ made before sessions existed
            ignore = root / ".lore/.gitignore"
            ignore.write_text(ignore.read_text().replace("sessions/\n", ""))
        project.sessions.append("s", message("user", "secret plans"), create=True)
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout
        assert ".lore/sessions" not in status, (name, status)
        assert (root / ".lore/sessions/.gitignore").exists() == legacy
        project.close()


def test_list_orders_by_update_and_filters_by_status(store):
    for name in ("a", "b", "c"):
        store.start(name)
    store.end("b")
    time.sleep(1.05)  # timestamps have second precision
    store.append("a", message("user", "latest"))
    assert [s.id for s in store.list()][0] == "a"
    assert [s.id for s in store.list(status="ended")] == ["b"]
    assert len(store.list(limit=2)) == 2
    with pytest.raises(UsageError):
        store.list(status="paused")


def test_event_builders_give_004_shapes():
    assert [
        message("user", "hi"),
        tool_call("Bash", {"command": "ls"}, call_id="c1"),
        tool_result("c1", "ok", is_error=True),
    ] == [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "tool_call", "toolName": "Bash", "args": {"command": "ls"}, "toolCallId": "c1"},
        {"type": "tool_result", "toolCallId": "c1", "result": "ok", "isError": True},
    ]


@pytest.mark.parametrize("name", ["session.jsonl", "metadata.json", ".owner", "archive"])
def test_a_link_in_a_session_folder_is_refused_and_nothing_outside_is_touched(tmp_path, root, store, name):
    """A repository can commit `.lore/sessions/<id>/session.jsonl -> ~/.bashrc`:
    appending must not cut that file's last line or write to it, and reading
    must not show it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "bashrc"
    target.write_text('export IMPORTANT=1\nalias ll="ls -l"')  # no final newline: a "torn" tail
    folder = root / ".lore/sessions/s-1"
    folder.mkdir(parents=True)
    (folder / ".owner").write_text("")
    (folder / "session.jsonl").write_text("")
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(outside if name == "archive" else target)

    with pytest.raises(UsageError, match=rf"s-1/{name} is a symbolic link or not a (file|folder); remove it"):
        store.append("s-1", message("user", "hello"))
    with pytest.raises(UsageError, match="is a symbolic link"):
        store.events("s-1")
    assert store.list() == []  # left out (with a notice), not a failure of every listing
    assert target.read_text() == 'export IMPORTANT=1\nalias ll="ls -l"'
    assert not (folder / "session.jsonl.rejected").exists()


def test_a_fifo_in_a_session_folder_is_refused_without_blocking(tmp_path, root, store):
    import os

    folder = root / ".lore/sessions/s-1"
    folder.mkdir(parents=True)
    (folder / ".owner").write_text("")
    os.mkfifo(folder / "session.jsonl")
    with pytest.raises(UsageError, match="session.jsonl is a symbolic link or not a file"):
        store.events("s-1")
    # An import read the folder's metadata before checking it: a FIFO there blocked it.
    os.unlink(folder / "session.jsonl")
    os.mkfifo(folder / "metadata.json")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "message", "role": "user", "content": "hi"}) + "\n")
    with pytest.raises(UsageError, match="metadata.json is a symbolic link or not a file"):
        store.import_transcript(transcript, session_id="s-1")


def test_one_unsound_session_is_left_out_of_the_list_not_every_one(root, store):
    store.start("s-good")
    folder = root / ".lore/sessions/s-bad"
    folder.mkdir(parents=True)
    (folder / ".owner").write_text("")
    (folder / "session.jsonl").write_text("")
    (folder / "archive").write_text("a file where the archive folder goes")
    assert [info.id for info in store.list()] == ["s-good"]  # it raised NotADirectoryError
    with pytest.raises(UsageError, match="s-bad/archive is a symbolic link or not a folder"):
        store.events("s-bad")


def test_a_transcripts_long_id_is_shortened_and_a_typed_one_refused():
    """The cap on ids refused a transcript line whose tool id ran to 200
    characters (with its `tool:` prefix): every later import of that session failed."""
    from lore.sessions.events import normalise

    long_id = "toolu_" + "x" * 300
    sources = []
    for other in (long_id + "a", long_id + "b"):
        event = {"type": "tool_call", "toolName": "Bash", "toolCallId": other, "sourceId": f"tool:{other}"}
        kept = normalise(event, imported=True)
        assert len(kept["toolCallId"]) == 200 and len(kept["sourceId"]) == 200
        sources.append(kept["sourceId"])
    assert sources[0] != sources[1]  # two events stay two (source ids are what dedupes imports)
    with pytest.raises(ValidationError, match="at most 200"):
        normalise({"type": "tool_call", "toolName": "Bash", "toolCallId": long_id})


def test_a_live_event_dated_more_than_a_day_ahead_is_refused(store):
    """A clock gone wrong: the event would sort after everything to come (and a
    capture's memory dated 2099 never grows old)."""
    with pytest.raises(ValidationError, match="timestamp.*is in the future"):
        store.append("s-1", message("user", "hello", timestamp="2099-01-01T00:00:00Z"), create=True)
    assert store.append("s-1", message("user", "hello", timestamp="2026-01-01T00:00:00Z"), create=True).events


def test_a_secret_cut_through_is_redacted_before_the_cut():
    """A hook's payload over the limit, and a transcript's over-long tool name
    or call id, were cut first and redacted after: a token the cut went through
    was no longer found, and 26 of its 36 characters were kept."""
    from lore.sessions import events

    token = "ghp_OhbVrpoiVgRV5IfLBcbfnoGMbJmTPSIAoCLr"
    marker = " … [cut: 1,000,000 characters]"  # (its length)
    words = "the output was long " * (events.MAX_PAYLOAD // 20)
    prompt = words[: events.MAX_PAYLOAD - len(marker) - 20] + " " + token + " and more" * 10
    cut = events.fitted(prompt)
    assert token[:8] not in cut and "[REDACTED:github-to" in cut, cut[-200:]
    assert cut.endswith(f" … [cut: {len(prompt):,} characters]"), cut[-200:]
    name = "t" * (events.MAX_NAME - 30) + "_" + token
    call = events.normalise(
        {"type": "tool_call", "toolName": name, "toolCallId": name, "args": {}}, imported=True
    )
    for value in (call["toolName"], call["toolCallId"]):
        assert token[:8] not in value and len(value) <= events.MAX_NAME, value
