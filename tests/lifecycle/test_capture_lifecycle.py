"""Capture (seed 001): gotchas counted in the index across runs, one per distinct error,
<chati-memory> blocks, the digest, and what a new session does to the session tier."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import CLI, ON_POSTGRES

from .conftest import at, memory_files, snapshot


def frontmatter(path):
    _, meta, body = path.read_text("utf-8").split("---\n", 2)
    return yaml.safe_load(meta), body.strip()


def gotchas(root):
    found = [frontmatter(p) for p in memory_files(root, ".lore")]
    return [(meta, body) for meta, body in found if meta["type"] == "gotcha"]


# -- gotchas ------------------------------------------------------------------------------------


def test_gotcha_at_the_third_occurrence_across_two_capture_runs_and_agents(proj, cli_in):
    root = proj.project.root
    first = "building...\nValueError: port 8080 is taken\nretrying\nValueError: port 9090 is taken\n"
    out = cli_in(root, "capture", "--stdin", "--json", input=first)
    assert (out["gotchas"], out["evidence"]) == (0, 0)
    assert gotchas(root) == []

    # Another agent, another run: the third occurrence makes the gotcha (counts live in the index).
    second = "ValueError: port 7000 is taken\n"
    out = cli_in(root, "capture", "--stdin", "--agent", "codex", "--json", input=second)
    assert out["gotchas"] == 1
    ((meta, body),) = gotchas(root)
    assert meta["subject"] == "Repeated error: ValueError: port <n> is taken"
    assert meta["evidence_count"] == 3 and meta["confidence"] == 0.8
    assert "3×" in body and "ValueError: port 8080 is taken" in body
    path = memory_files(root, ".lore/local/daily")
    assert len(path) == 1, "a gotcha is local until a person promotes it"

    # Later occurrences add evidence to that gotcha; none is created again.
    out = cli_in(
        root,
        "capture",
        "--stdin",
        "--json",
        input="ValueError: port 1 is taken\nValueError: port 2 is taken\n",
    )
    assert (out["gotchas"], out["evidence"]) == (0, 2)
    ((meta, body),) = gotchas(root)
    assert meta["evidence_count"] == 5 and meta["confidence"] == 0.95
    assert "3× when this was written" in body and "so far" not in body  # the count is evidence_count

    # The same output captured again counts nothing.
    before = snapshot(root)
    out = cli_in(root, "capture", "--stdin", "--json", input=first)
    assert (out["gotchas"], out["evidence"]) == (0, 0)
    assert snapshot(root) == before


def test_one_gotcha_per_distinct_error_with_paths_relative_to_the_project(proj):
    root = proj.project.root
    for run, port in enumerate((1, 2, 3)):
        output = (
            "Traceback (most recent call last):\n"
            f'  File "{root}/src/app.py", line {10 + run}, in connect\n'
            "    sock.connect(addr)\n"
            "KeyError: 'addr'\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            f'  File "{root}/src/app.py", line {20 + run}, in main\n'
            f"ConnectionError: cannot reach db at {root}/src/app.py:{20 + run} (port {port})\n"
            f"E       ConnectionError: cannot reach db at {root}/src/app.py:{20 + run} (port {port})\n"
            "FAILED tests/test_app.py::test_main - ConnectionError: cannot reach db at "
            f"{root}/src/app.py:{20 + run} (port {port})\n"
        )
        proj.capture_stdout(output, source=f"run-{run}")
    found = gotchas(root)
    assert [meta["subject"] for meta, _ in found] == [
        "Repeated error: ConnectionError: cannot reach db at <path>:<n> (port <n>)"
    ], "one gotcha: not the chained KeyError, not one per line of the report"
    ((meta, body),) = found
    assert str(root) not in body and "src/app.py:20" in body
    assert meta["error_signature"].startswith("ConnectionError")
    # Found by the error's own words, not only by "error, auto-captured".
    assert {"error", "auto-captured", "connectionerror"} <= set(meta["keywords"])


def test_failed_comparisons_of_different_tests_are_not_one_error(proj):
    """`assert 2 == 3`, `assert 200 == 404` and `assert 10 == 11` all normalise
    to `assert <n> == <n>`: three unrelated failures made one gotcha, which kept
    gaining evidence. A message with nothing of its own names its test."""
    root = proj.project.root
    for run, (test, left, right) in enumerate(
        [
            ("test_money.py::test_round", 10, 11),
            ("test_http.py::test_status", 200, 404),
            ("test_sum.py::test_add", 2, 3),
        ]
    ):
        proj.capture_stdout(
            f"E       AssertionError: assert {left} == {right}\n"
            f"FAILED tests/{test} - AssertionError: assert {left} == {right}\n",
            source=f"run-{run}",
        )
    assert gotchas(root) == []
    for run in range(3):  # the same test failing again and again is one error
        proj.capture_stdout(
            f"E       AssertionError: assert {run} == 7\n"
            f"FAILED tests/test_money.py::test_round - AssertionError: assert {run} == 7\n",
            source=f"again-{run}",
        )
    ((meta, _),) = gotchas(root)
    assert meta["error_signature"] == "tests/test_money.py::test_round: AssertionError: assert <n> == <n>"


def test_a_file_a_tool_showed_is_code_not_errors(proj, tmp_path):
    """Reading a source file three times made a gotcha of its `raise RuntimeError(`
    line: what Read, Grep or Edit show is a file's content. Their own failures, and
    what commands print, still count."""
    root = proj.project.root
    source = "def check(x):\n    if x is None:\n        raise RuntimeError(\n            'x is missing'\n        )\n"
    shown = "\n".join(f"{n:6d}\u2192{line}" for n, line in enumerate(source.splitlines(), 1))
    shown += "\n     6\u2192except ValueError: pass\n     7\u2192KeyError: 'not an error here'"

    def session(n: int):
        lines = []

        def line(role, content, m):
            lines.append(
                {
                    "type": role,
                    "uuid": f"s{n}-{m:03d}",
                    "sessionId": f"s{n}",
                    "timestamp": at(n, minutes=m),
                    "message": {"role": role, "content": content},
                }
            )

        for m, (tool, text, failed) in enumerate(
            [
                ("Read", shown, False),
                ("Grep", "src/app.py:3:        raise RuntimeError(", False),
                ("Edit", f"The file src/app.py has been updated:\n{shown}", False),
                ("Read", "FileNotFoundError: [Errno 2] No such file: 'missing_config.py'", True),
                ("Bash", "OSError: port 8080 is taken", True),
            ]
        ):
            call = f"s{n}-t{m}"
            line("assistant", [{"type": "tool_use", "id": call, "name": tool, "input": {}}], 2 * m)
            result = {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": failed}
            line("user", [result], 2 * m + 1)
        path = tmp_path / f"s{n}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return path

    for n in range(3):
        proj.capture_transcript(session(n))
    assert sorted(meta["subject"] for meta, _ in gotchas(root)) == [
        "Repeated error: FileNotFoundError: [Errno <n>] No such file: 'missing_config.py'",
        "Repeated error: OSError: port <n> is taken",
    ]


def test_gotcha_from_transcripts_dated_by_the_event(proj, tmp_path):
    root = proj.project.root

    def transcript(name: str, times: list[str]):
        lines = []
        for n, when in enumerate(times):
            lines.append(
                {
                    "type": "tool_result",
                    "toolCallId": f"t{n}",
                    "result": f"npm ERR! code ERESOLVE at step {n}",
                    "timestamp": when,
                }
            )
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    assert proj.capture_transcript(transcript("s1", [at(1), at(2)])).gotchas == 0
    assert proj.capture_transcript(transcript("s2", [at(5), at(6)])).gotchas == 1
    ((meta, _),) = gotchas(root)
    assert str(meta["occurred_at"]).startswith("2026-03-06 12:00")  # the third occurrence's time
    assert proj.capture_transcript(transcript("s2", [at(5), at(6)])).evidence == 0  # idempotent


def test_an_archived_gotcha_seen_again_comes_back_and_stays_while_it_keeps_happening(proj, clock, cli_in):
    """A daily gotcha archived after 30 quiet days took every later occurrence as
    evidence in the archive: seen 6 times with confidence 0.95, it was never
    searched, recalled or proposed. Seen again it is back in the daily tier, and
    the daily archive counts from when a memory was last seen."""
    root = proj.project.root
    taken = "".join(f"ValueError: port {8080 + n} is taken\n" for n in range(3))
    assert cli_in(root, "capture", "--stdin", "--json", input=taken)["gotchas"] == 1
    clock.set(35)
    assert len(cli_in(root, "consolidate", "--json")["archived"]) == 1
    assert cli_in(root, "search", "port is taken", "--json") == []

    clock.set(36)
    again = "ValueError: port 9090 is taken\n"
    assert cli_in(root, "capture", "--stdin", "--json", input=again)["evidence"] == 1
    ((path),) = memory_files(root, ".lore/local/daily")
    assert memory_files(root, ".lore/local/archive") == []
    assert frontmatter(path)[0]["evidence_count"] == 4
    assert [h["title"] for h in cli_in(root, "search", "port is taken", "--json")] == [
        "Repeated error: ValueError: port <n> is taken"
    ]
    clock.set(50)  # 50 days after it was written, 14 after it was last seen: kept
    assert cli_in(root, "consolidate", "--json")["archived"] == []
    clock.set(67)  # 31 quiet days: archived again
    assert len(cli_in(root, "consolidate", "--json")["archived"]) == 1


@pytest.mark.skipif(ON_POSTGRES, reason="rebuilds the SQLite index from the files")
def test_a_rebuilt_index_finds_the_gotcha_an_error_became_instead_of_writing_another(proj, cli_in):
    """Error counts live in the index: rebuilt from the files (deleted, damaged, a
    fresh clone), the next occurrences made a second gotcha for the same error."""
    root = proj.project.root
    taken = "".join(f"ValueError: port {8080 + n} is taken\n" for n in range(3))
    assert cli_in(root, "capture", "--stdin", "--json", input=taken)["gotchas"] == 1
    proj.close()
    for db in (root / ".lore").glob("index.db*"):
        db.unlink()

    again = "".join(f"ValueError: port {9090 + n} is taken\n" for n in range(3))
    out = cli_in(root, "capture", "--stdin", "--json", input=again)
    assert (out["gotchas"], out["evidence"]) == (0, 3)
    ((meta, _),) = gotchas(root)
    assert meta["evidence_count"] == 6


def test_a_removed_gotcha_stays_removed_after_the_index_is_rebuilt(proj, cli_in):
    """ "A removed gotcha is not created again" lived in the index only: rebuilt,
    three more occurrences wrote the gotcha someone had removed. The trash keeps
    its file, which says its error."""
    root = proj.project.root
    taken = "".join(f"ValueError: port {8080 + n} is taken\n" for n in range(3))
    assert cli_in(root, "capture", "--stdin", "--json", input=taken)["gotchas"] == 1
    ((meta, _),) = gotchas(root)
    cli_in(root, "rm", meta["id"][:8], raw=True)
    proj.close()
    for db in (root / ".lore").glob("index.db*"):
        db.unlink()
    again = "".join(f"ValueError: port {9090 + n} is taken\n" for n in range(3))
    assert cli_in(root, "capture", "--stdin", "--json", input=again)["gotchas"] == 0
    assert [p for p in memory_files(root, ".lore") if "/trash/" not in p.as_posix()] == []


def test_a_removed_gotcha_stays_removed_after_the_trash_is_purged_and_the_index_rebuilt(proj, cli_in):
    """With the trash purged (`lore gc`), nothing said the error had a gotcha:
    rebuilt, the index let three more occurrences write it again. The evidence
    ledger (.lore/local/evidence.jsonl) now records each gotcha made."""
    root = proj.project.root
    taken = "".join(f"ValueError: port {8080 + n} is taken\n" for n in range(3))
    assert cli_in(root, "capture", "--stdin", "--json", input=taken)["gotchas"] == 1
    ((meta, _),) = gotchas(root)
    cli_in(root, "rm", meta["id"][:8], raw=True)
    cli_in(root, "gc", "--days", "0", raw=True)
    assert not list((root / ".lore/local/trash").glob("*.md"))
    proj.close()
    for db in (root / ".lore").glob("index.db*"):
        db.unlink()
    again = "".join(f"ValueError: port {9090 + n} is taken\n" for n in range(3))
    assert cli_in(root, "capture", "--stdin", "--json", input=again)["gotchas"] == 0
    assert memory_files(root, ".lore") == []


# -- <chati-memory> blocks ------------------------------------------------------------------------

CHATI_OUTPUT = """\
Working on the auth module.
<chati-memory>
---
id: mem-2026-02-12-001
type: procedural
agent: architect
tags: [authentication, jwt]
confidence: 0.92
tier: hot
created_at: 2026-02-10T10:15:00Z
---
# Pattern: JWT Authentication

Token validation fails silently when JWT_SECRET contains special characters.
Always use base64-encoded secrets.
</chati-memory>
<chati-memory type="lesson" tier="daily" title="Flaky socket test">
The socket test is flaky under load; retry it once before failing the build.
</chati-memory>
<lore-memory type="preference" private="true" title="Terse commit messages">
This agent writes terse, imperative commit messages.
</lore-memory>
"""


def test_a_captured_fact_is_evidence_only_for_a_memory_of_the_same_owner(proj, cli_in):
    """An audit: a private fact captured by one agent became evidence for a
    shared memory that said the same (or a shared fact, for another agent's
    private copy, which the others then never saw)."""
    root = proj.project.root
    fact = "The deploy script for the billing service needs the AWS profile set to prod first."
    # (Each run's output differs: the same output captured twice counts once, whoever hands it over.)
    block = '{}\n<lore-memory type="fact" title="Deploy note" tier="daily"{}>\n' + fact + "\n</lore-memory>\n"

    def capture(agent: str, run: str, private: bool = False) -> dict:
        said = block.format(run, ' private="true"' if private else "")
        return cli_in(root, "capture", "--stdin", "--agent", agent, "--json", input=said)

    assert capture("bob", "run 1")["created"] == 1
    out = capture("alice", "run 2", private=True)
    assert (out["created"], out["existing"]) == (1, 0), out  # hers, not evidence for bob's
    assert len(memory_files(root, ".lore/local/alice")) == 1
    out = capture("carol", "run 3")
    assert (out["created"], out["existing"]) == (0, 1), out  # the shared one, seen again
    shared = {r["title"]: r for r in cli_in(root, "list", "--agent", "bob", "--json")}
    assert shared["Deploy note"]["evidence_count"] == 2
    out = capture("alice", "run 4", private=True)
    assert (out["created"], out["existing"]) == (0, 1), out  # her own, seen again


def test_chati_memory_blocks_are_parsed_and_stored_by_tier_and_privacy(proj, cli_in):
    root = proj.project.root
    out = cli_in(root, "capture", "--stdin", "--agent", "architect", "--json", input=CHATI_OUTPUT)
    assert (out["created"], out["existing"], out["problems"]) == (3, 0, [])
    (durable,) = memory_files(root, ".lore/memory")
    meta, body = frontmatter(durable)
    assert meta["type"] == "pattern" and meta["sector"] == "procedural"  # 001's sector in `type`
    assert meta["confidence"] == 0.92 and meta["keywords"] == ["authentication", "jwt"]
    assert str(meta["occurred_at"]).startswith("2026-02-10") and "base64-encoded" in body
    (daily,) = memory_files(root, ".lore/local/daily")
    assert frontmatter(daily)[0]["subject"] == "Flaky socket test"
    (private,) = memory_files(root, ".lore/local/architect")
    assert frontmatter(private)[0]["subject"] == "Terse commit messages"
    assert [r["title"] for r in cli_in(root, "list", "--agent", "other", "--json")] != [] and all(
        r["title"] != "Terse commit messages" for r in cli_in(root, "list", "--agent", "other", "--json")
    )

    # The same fact from another run is evidence, not a copy; the committed file is untouched.
    before = snapshot(root, ".lore/memory")
    again = CHATI_OUTPUT.replace("Working on the auth module.", "Second run.")
    out = cli_in(root, "capture", "--stdin", "--agent", "architect", "--json", input=again)
    assert (out["created"], out["existing"], out["evidence"]) == (0, 3, 3)
    assert snapshot(root, ".lore/memory") == before
    listed = {r["title"]: r for r in cli_in(root, "list", "--agent", "architect", "--json")}
    assert listed["Pattern: JWT Authentication"]["evidence_count"] == 2  # pending: index + ledger
    assert frontmatter(daily)[0]["evidence_count"] == 2  # local files carry it at once


# -- the digest ----------------------------------------------------------------------------------


def claude_transcript(path, session: str, start_day: float = 0):
    lines = []

    def line(kind, role, content, n):
        lines.append(
            {
                "type": kind,
                "uuid": f"{session}-{n:03d}",
                "sessionId": session,
                "timestamp": at(start_day, minutes=n),
                "message": {"id": f"msg_{session}_{n}", "role": role, "content": content},
            }
        )

    line("user", "user", "Set up the database layer please.", 1)
    line(
        "assistant",
        "assistant",
        [{"type": "text", "text": "We decided to use Postgres for storage.\nIt has JSONB."}],
        2,
    )
    line("user", "user", "No, use pnpm instead of npm for installs.", 3)
    line(
        "user",
        "user",
        [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "Error: connect ECONNREFUSED 127.0.0.1:5432",
                "is_error": True,
            }
        ],
        4,
    )
    line(
        "assistant",
        "assistant",
        [{"type": "text", "text": "Fixed: the database container was not running.\nStarted it."}],
        5,
    )
    line(
        "assistant",
        "assistant",
        [{"type": "text", "text": "This project uses barrel exports in index.ts files.\nI followed that."}],
        6,
    )
    line("user", "user", "Yes, exactly.", 7)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_pre_compact_digest_classifies_with_message_ids(proj, tmp_path):
    root = proj.project.root
    result = proj.capture_transcript(claude_transcript(tmp_path / "s1.jsonl", "s1"))
    assert result.digest == {
        "decision": 1,
        "error_pattern": 1,
        "resolution": 1,
        "correction": 1,
        "validated_pattern": 1,
    }
    daily = {
        frontmatter(p)[0]["digest_class"]: frontmatter(p) for p in memory_files(root, ".lore/local/daily")
    }
    assert set(daily) == {"decision", "resolution", "correction", "validated_pattern"}
    # Message ids as the session store keeps them: the transcript's uuid (and part), the tool call's id.
    assert daily["decision"][0]["type"] == "decision" and daily["decision"][0]["evidence_refs"] == [
        "cc:s1-002:0"
    ]
    assert daily["correction"][0]["type"] == "preference" and "pnpm" in daily["correction"][1]
    assert daily["resolution"][0]["evidence_refs"] == ["result:t1", "cc:s1-005:0"]
    assert "ECONNREFUSED" in daily["resolution"][1] and "not running" in daily["resolution"][1]
    assert daily["validated_pattern"][0]["evidence_refs"][0] == "cc:s1-006:0"
    assert memory_files(root, ".lore/memory") == []

    # Another session saying the same: evidence for the same daily memories, not copies.
    again = proj.capture_transcript(claude_transcript(tmp_path / "s2.jsonl", "s2", start_day=1))
    assert again.evidence >= 4
    assert len(memory_files(root, ".lore/local/daily")) == 4
    decision = next(
        p for p in memory_files(root, ".lore/local/daily") if frontmatter(p)[0]["digest_class"] == "decision"
    )
    assert frontmatter(decision)[0]["evidence_count"] == 2


def test_a_session_id_shaped_like_a_token_never_reaches_lore_files_in_clear(proj, tmp_path):
    """`lore session import` refused such an id, but capture wrote it into
    evidence sources (.lore/local/evidence.jsonl and the index) in clear."""
    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    proj.capture_transcript(claude_transcript(tmp_path / "t.jsonl", token))
    written = [p for p in (proj.project.root / ".lore").rglob("*") if p.is_file()]
    assert any(p.name == "evidence.jsonl" for p in written)
    assert [p for p in written if token.encode() in p.read_bytes()] == []


def test_a_transcript_whose_last_line_has_no_newline_is_captured_whole(proj, tmp_path):
    """The last line was read as still being written: its decision (and any
    error on it) was silently left out of a capture, which reads a file once."""
    path = claude_transcript(tmp_path / "t.jsonl", "s1")
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]))  # the decision is the last line, without "\n"
    assert proj.capture_transcript(path).digest["decision"] == 1


def test_a_fix_long_after_an_error_first_showed_resolves_its_latest_occurrence(proj, tmp_path):
    """The fix window counts from the error's latest occurrence before the fix: an
    error seen early, then again just before "Fixed: ...", is resolved (and its
    example is the error as reported, without pytest's `E` prefix)."""
    root = proj.project.root
    failure = "E       AttributeError: module 'click' has no attribute 'get_eta'"
    lines = []

    def line(role, content, n):
        lines.append(
            {
                "type": role,
                "uuid": f"u{n:03d}",
                "sessionId": "s1",
                "timestamp": at(0, minutes=n),
                "message": {"role": role, "content": content},
            }
        )

    def result(call, text, n, error=False):
        line("user", [{"type": "tool_result", "tool_use_id": call, "content": text, "is_error": error}], n)

    line("user", "Export get_eta from click.", 0)
    result("t0", failure, 1, error=True)
    for n in range(2, 52):  # 50 unrelated reads: the first occurrence is out of the fix window
        result(f"r{n}", f"file {n}\nnothing wrong here", n)
    result("t1", failure, 52, error=True)
    line("assistant", [{"type": "text", "text": "Fixed: get_eta is exported now.\nThe import works."}], 53)
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))

    assert proj.capture_transcript(path).digest["resolution"] == 1
    ((meta, body),) = [
        frontmatter(p) for p in memory_files(root, ".lore/local/daily") if "resolution" in p.read_text()
    ]
    assert meta["evidence_refs"] == ["result:t1", "cc:u053:0"], "the occurrence the fix follows"
    assert (
        body
        == "`AttributeError: module 'click' has no attribute 'get_eta'` → Fixed: get_eta is exported now."
    )


def test_a_sentence_two_classes_recognise_is_one_observation(proj, tmp_path):
    """ "We decided to always ..." is a decision and a validated pattern: kept once,
    it counts once per session as evidence (it counted twice, so a fact seen in three
    sessions reached the promotion threshold of five)."""
    root = proj.project.root
    said = "We decided to always run the completion tests with pytest -p no:randomly."
    for n in range(3):
        line = {
            "type": "assistant",
            "uuid": f"s{n}-001",
            "sessionId": f"s{n}",
            "timestamp": at(n),
            "message": {"role": "assistant", "content": [{"type": "text", "text": f"Notes.\n{said}"}]},
        }
        path = tmp_path / f"s{n}.jsonl"
        path.write_text(json.dumps(line) + "\n")
        digest = proj.capture_transcript(path).digest
        assert (digest["decision"], digest["validated_pattern"]) == (1, 0)
    (meta, body) = next(
        frontmatter(p) for p in memory_files(root, ".lore/local/daily") if said in p.read_text()
    )
    assert body == said and meta["type"] == "decision"
    assert meta["evidence_count"] == 3, "three sessions said it: three observations"


def test_a_new_session_digests_and_cleans_the_previous_sessions_memories(proj, tmp_path, cli_in):
    root = proj.project.root
    transcript = tmp_path / "s1.jsonl"
    claude_transcript(transcript, "s1")
    cli_in(root, "capture", "--transcript", str(transcript), "--agent", "claude-code", "--json")
    other = cli_in(
        root, "add", "--session", "--agent", "codex", "-b", "Codex's own scratch note.\nKeep it.", "--json"
    )
    session_files = memory_files(root, ".lore/local/session")
    assert len(session_files) == 4  # 3 multi-line assistant messages + codex's note
    daily_before = len(memory_files(root, ".lore/local/daily"))

    proc = cli_in(root, "session", "start", "--agent", "claude-code", "--id", "s-next", raw=True)
    assert proc.stdout.strip() == "s-next"
    assert "3 session memories digested and cleaned" in proc.stderr
    left = memory_files(root, ".lore/local/session")
    assert [frontmatter(p)[0]["id"] for p in left] == [other["id"]], "another agent's session is its own"
    trashed = cli_in(root, "restore", "--list", "--agent", "claude-code", "--json")
    assert len(trashed) == 3  # cleaned = trashed: `lore restore` brings one back
    assert len(memory_files(root, ".lore/local/daily")) == daily_before  # the digest was taken already
    # ...to keep: in the daily tier (in the session tier the next start cleaned it again).
    back = cli_in(root, "restore", trashed[0]["id"][:8], "--agent", "claude-code", "--json")["restored"]
    assert back.startswith(".lore/local/daily/")
    kept = frontmatter(root / back)[1]
    again = cli_in(root, "session", "start", "--agent", "claude-code", "--id", "s-after", raw=True)
    assert "0 session memories digested and cleaned" in again.stderr or "digested" not in again.stderr
    daily = " ".join(frontmatter(p)[1] for p in memory_files(root, ".lore/local/daily"))
    assert all(line in daily for line in kept.splitlines() if line.strip())  # itself, or merged whole


def test_a_session_still_running_in_another_window_keeps_its_notes(proj, tmp_path, clock, cli_in):
    """An audit: a second window's session start digested and cleaned the notes
    of a session still running (recorded, not ended, written to minutes ago).
    Once it has been quiet for a while (an agent's hooks may never end it), or
    it ended, its notes are digested as before."""
    from datetime import UTC, datetime, timedelta

    root = proj.project.root
    transcript = tmp_path / "win-a.jsonl"
    claude_transcript(transcript, "win-a")
    # The session store writes the system clock's time: the lifecycle reads the same present.
    real = datetime.now(UTC)
    clock.monkeypatch.setenv("LORE_NOW", real.strftime("%Y-%m-%dT%H:%M:%SZ"))
    cli_in(root, "session", "start", "--id", "win-a", "--agent", "claude-code", raw=True)
    cli_in(root, "capture", "--transcript", str(transcript), "--agent", "claude-code", "--json")
    assert len(memory_files(root, ".lore/local/session")) == 3
    proc = cli_in(root, "session", "start", "--agent", "claude-code", "--id", "win-b", raw=True)
    assert (
        " 0 session memories digested" in proc.stderr and len(memory_files(root, ".lore/local/session")) == 3
    )
    later = real + timedelta(hours=1)  # an hour without a word from it
    clock.monkeypatch.setenv("LORE_NOW", later.strftime("%Y-%m-%dT%H:%M:%SZ"))
    proc = cli_in(root, "session", "start", "--agent", "claude-code", "--id", "win-c", raw=True)
    assert "3 session memories digested and cleaned" in proc.stderr, proc.stderr
    assert memory_files(root, ".lore/local/session") == []


def test_sessions_that_never_compacted_are_captured_when_quiet(proj, cli_in):
    """An audit: a session recorded by an agent's hooks, never compacted and
    never ended (no SessionEnd), reached neither the daily tier nor the
    error counts: the same error in three such sessions made no gotcha. A
    session start captures what quiet sessions said since their last capture."""
    from datetime import UTC, datetime, timedelta

    import lore as lore_api
    from lore.sessions import message, tool_call, tool_result

    root = proj.project.root
    real = datetime.now(UTC)
    error = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'wombatlib'"
    for n, name in enumerate(("qa", "qb", "qc")):
        with lore_api.open(root, agent="claude-code") as agent:
            agent.record_events(
                name,
                [
                    message("user", "Run the tests please."),
                    tool_call("Bash", {"command": "pytest"}, call_id=f"c{n}"),
                    tool_result(f"c{n}", error, is_error=True),
                    message("assistant", "We decided to pin wombatlib to 2.1 in requirements.txt."),
                ],
                create=True,
            )
    assert gotchas(root) == []
    later = (real + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    proc = CLI(root)("--agent", "claude-code", "session", "start", "--id", "qd", env={"LORE_NOW": later})
    assert proc.returncode == 0, proc.stderr
    ((meta, body),) = gotchas(root)
    assert "wombatlib" in meta["subject"] and meta["evidence_count"] == 3, meta
    daily = " ".join(frontmatter(p)[1] for p in memory_files(root, ".lore/local/daily"))
    assert "pin wombatlib to 2.1" in daily
    # Idempotent: another start captures nothing more; the sessions are not ended.
    CLI(root)("--agent", "claude-code", "session", "start", "--id", "qe", env={"LORE_NOW": later})
    ((meta, _),) = gotchas(root)
    assert meta["evidence_count"] == 3
    with lore_api.open(root, agent="claude-code") as agent:
        assert agent.session_info("qa").status == "active"


def test_claude_codes_session_end_captures_the_session_without_ending_it(proj):
    """SessionEnd (Claude Code's last hook of a session): what the session
    said since its last capture reaches the daily tier at once, and the
    session stays open (Claude Code may resume it)."""
    import json

    import lore as lore_api
    from lore.sessions import message

    root = proj.project.root
    with lore_api.open(root, agent="claude-code") as agent:
        said = "We decided to pin wombatlib to 2.1 in requirements.txt."
        agent.record_events("se1", [message("user", "Pin it."), message("assistant", said)], create=True)
    payload = json.dumps({"session_id": "se1", "hook_event_name": "SessionEnd", "reason": "exit"})
    env = {"CLAUDE_PROJECT_DIR": str(root)}
    proc = CLI(root)("hook", "session-end", input=payload, env=env, unset=("LORE_PROJECT",))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    daily = " ".join(frontmatter(p)[1] for p in memory_files(root, ".lore/local/daily"))
    assert "pin wombatlib to 2.1" in daily
    with lore_api.open(root, agent="claude-code") as agent:
        assert agent.session_info("se1").status == "active"


def test_a_session_note_of_one_decision_reaches_the_daily_tier_and_a_fresh_one_waits(proj, clock, cli_in):
    """A session memory whose whole body was one decision was taken for the
    digest's own copy (same time, same text): nothing reached the daily tier
    and the decision was left in the trash. And a note naming no session, made
    minutes ago, was cleaned by a second window's session start, its session
    still running."""
    root = proj.project.root
    said = "We decided to use Redis for the rate limiter cache."
    cli_in(root, "add", "--session", "-t", "redis", "-b", said, "--occurred-at", clock.now, "--json")
    assert cli_in(root, "session", "start", "--id", "window-2", raw=True).returncode == 0
    assert len(memory_files(root, ".lore/local/session")) == 1  # its session may still run
    clock.set(1)  # a day on: its session is over
    proc = cli_in(root, "session", "start", "--id", "next-day", raw=True)
    assert "1 session memories digested and cleaned" in proc.stderr
    assert memory_files(root, ".lore/local/session") == []
    daily = [frontmatter(p) for p in memory_files(root, ".lore/local/daily")]
    assert [(meta["type"], body) for meta, body in daily] == [("decision", said)]


def test_daily_memories_are_archived_after_30_days(proj, clock, tmp_path, cli_in):
    root = proj.project.root
    proj.capture_transcript(claude_transcript(tmp_path / "s1.jsonl", "s1"))
    daily = memory_files(root, ".lore/local/daily")
    assert daily
    clock.set(30)
    assert cli_in(root, "consolidate", "--json")["archived"] == []
    clock.set(31)
    # An archive folder linking out of the project: nothing moved, and said (it was silent).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".lore/local/archive").symlink_to(elsewhere)
    linked = cli_in(root, "consolidate", raw=True)
    assert "archive/ leads outside the project" in linked.stderr and "not archived" in linked.stderr
    assert len(memory_files(root, ".lore/local/daily")) == len(daily) and not list(elsewhere.iterdir())
    (root / ".lore/local/archive").unlink()
    report = cli_in(root, "consolidate", "--json")
    assert len(report["archived"]) == len(daily)
    assert memory_files(root, ".lore/local/daily") == []
    assert len(memory_files(root, ".lore/local/archive")) == len(daily)
    plain = cli_in(root, "search", "Postgres storage", "--json")
    assert plain and not any(h["path"].startswith(".lore/local/archive/") for h in plain)  # the session note
    found = cli_in(root, "search", "Postgres storage", "--include-archived", "--json")
    assert any(h["path"].startswith(".lore/local/archive/") for h in found)


def test_a_removed_digest_memory_stays_removed_when_the_transcript_is_captured_again(proj, tmp_path):
    """Claude Code's PreCompact hands over the whole transcript every time: a
    memory the user removed came back, with a new id, at the next capture."""
    root = proj.project.root
    transcript = claude_transcript(tmp_path / "s1.jsonl", "s1")
    proj.capture_transcript(transcript)
    daily = memory_files(root, ".lore/local/daily")
    correction = next(p for p in daily if frontmatter(p)[0]["digest_class"] == "correction")
    proj.remove(str(correction.relative_to(root)))
    again = proj.capture_transcript(transcript)
    assert again.created == 0
    assert sorted(memory_files(root, ".lore/local/daily")) == sorted(set(daily) - {correction})
    assert not [hit for hit in proj.search("pnpm") if "pnpm" in hit.title.lower()]


def test_a_removed_session_turn_stays_removed_when_the_transcript_is_captured_again(proj, tmp_path):
    """The transcript's own turns (its multi-line assistant messages, kept in the
    session tier) were deduplicated against the memories that exist: one the
    user removed came back at the next capture, with a new id."""
    root = proj.project.root
    transcript = claude_transcript(tmp_path / "s1.jsonl", "s1")
    proj.capture_transcript(transcript)
    turns = memory_files(root, ".lore/local/session")
    postgres = next(p for p in turns if "Postgres" in p.read_text())
    kept = set(turns) - {postgres}
    proj.remove(str(postgres.relative_to(root)))
    again = proj.capture_transcript(transcript)
    assert again.created == 0
    assert set(memory_files(root, ".lore/local/session")) == kept
    proj.capture_transcript(transcript)  # and at every capture after
    assert set(memory_files(root, ".lore/local/session")) == kept


def _half_folded(proj, written: bool = True):
    """A daily memory with one piece of evidence pending, and the state a process
    killed in the middle of folding it leaves: the fold's intent recorded (index
    and ledger), the file's count raised, the index's rows not marked folded."""
    import json

    from lore.memory.lifecycle import evidence
    from lore.storage import EvidenceRecord

    lc = proj.lifecycle
    kept = lc.remember(
        body="Run the migrations before the seed script.", title=None, type="lesson", key="k0", source="test"
    )
    store, memories = proj.store, proj.memories
    record = next(r for r in store.memories(memories.filter()) if r.id == kept.id)
    with store.transaction():
        store.add_evidence([EvidenceRecord("k1", kept.id, "test", None, at(1))])
    evidence.append_ledger(
        memories, [evidence.ledger_row(EvidenceRecord("k1", kept.id, "test", None, at(1)), kept.id)]
    )
    count = evidence.file_count(memories.load(record.path).extra) + 1
    intent = {"folding": ["k1"], "memory_id": kept.id, "count": count}
    evidence.append_ledger(memories, [intent])
    with store.transaction():
        store.set_meta("evidence_folding:" + kept.id, json.dumps(intent))
    if written:  # (else killed before writing the file)
        memory = memories.load(record.path)
        memory.extra["evidence_count"] = count
        memories.rewrite(record.path, memory)  # ... and killed here
    return kept, record.path, count


@pytest.mark.parametrize("written", [True, False])
def test_a_fold_a_killed_process_left_half_done_counts_once(proj, written):
    """A process killed between writing a memory's evidence count into its file
    and marking that evidence folded in the index: the next fold counted it
    again. (Killed before writing the file: the evidence is still to count.)"""
    from lore.memory.lifecycle import evidence
    from lore.storage import EvidenceRecord

    kept, path, count = _half_folded(proj, written)
    record = next(r for r in proj.store.memories(proj.memories.filter()) if r.id == kept.id)
    added = evidence.record(proj.memories, record, [EvidenceRecord("k2", kept.id, "test", None, at(2))])
    assert added == 1
    assert evidence.file_count(proj.memories.load(path).extra) == count + 1  # k1 once, and k2


def test_a_fold_half_done_before_the_index_was_rebuilt_counts_once(proj):
    """The same, when the index is rebuilt from the files and the ledger before the next fold."""
    import lore
    from lore.memory.lifecycle import evidence
    from lore.storage import EvidenceRecord

    kept, path, count = _half_folded(proj)
    root = proj.project.root
    proj.close()
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (root / ".lore" / name).unlink(missing_ok=True)
    with lore.open(root) as again:
        again.sync()  # the index rebuilt from the files (the ledger is read at the next evidence)
        record = next(r for r in again.store.memories(again.memories.filter()) if r.id == kept.id)
        evidence.record(again.memories, record, [EvidenceRecord("k2", kept.id, "test", None, at(2))])
        assert evidence.file_count(again.memories.load(path).extra) == count + 1


# -- what counts as the same fact ----------------------------------------------------------------


def block(text: str, title: str = "Orders database") -> str:
    return f'<lore-memory type="decision" tier="daily" title="{title}">\n{text}\n</lore-memory>\n'


def test_a_fact_naming_another_value_or_saying_more_is_kept_not_counted_as_the_same(proj):
    """Six sessions choosing six databases made one memory, "Postgres, seen 6
    times", proposed for promotion; and a fact saying one thing more was
    folded into the shorter one, the extra sentence lost. A fact is the same
    only when it names the same values and says nothing more."""
    root = proj.project.root
    said = "We decided to use {} as the primary database for the orders service in production."
    first = proj.capture_stdout(block(said.format("Postgres")), source="s1", tier="daily")
    again = proj.capture_stdout(block(said.format("Postgres") + "\n"), source="s2", tier="daily")
    assert (first.created, again.created, again.evidence) == (1, 0, 1)  # the same fact, seen again
    other = proj.capture_stdout(block(said.format("MySQL")), source="s3", tier="daily")
    node = "The orders service runs on Node {} in production and in CI."
    proj.capture_stdout(block(node.format(18), "Node"), source="s4", tier="daily")
    newer_node = proj.capture_stdout(block(node.format(20), "Node"), source="s5", tier="daily")
    more = proj.capture_stdout(
        block(said.format("Postgres") + " Run its migrations before the service starts."),
        source="s6",
        tier="daily",
    )
    assert (other.created, newer_node.created, more.created) == (1, 1, 1)
    bodies = " ".join(body for _, body in map(frontmatter, memory_files(root, ".lore/local/daily")))
    assert "MySQL" in bodies and "Node 20" in bodies and "Run its migrations" in bodies
    # Consolidation: a contradiction to review, not a merge of two different databases.
    report = proj.consolidate()
    reasons = [p.reason.split(":")[0] for p in proj.proposals() if p.kind == "contradiction"]
    assert any({"'mysql'", "'postgres'"} <= set(r.split(" against ")) for r in reasons), reasons
    assert "'20' against '18'" in reasons
    assert "MySQL" in " ".join(body for _, body in map(frontmatter, memory_files(root, ".lore/local/daily")))
    # The one saying more absorbs its shorter twin, keeping every sentence.
    assert len(report.merged) == 1
    assert "Run its migrations before the service starts." in bodies


def test_two_gotchas_of_two_errors_are_never_merged(proj):
    """Auto-captured gotchas share a template, so two of different errors from
    one session reached the near-duplicate level: merged, the second one's
    code block was flattened into a line and its later errors were dropped."""
    root = proj.project.root
    key, module = "KeyError: 'DATABASE_URL'", "ModuleNotFoundError: No module named 'psycopg2'"
    for run in range(3):
        proj.capture_stdout(f"run {run}, at 10:0{run}\n{key}\n{module}\n", source=f"run-{run}")
    assert len(gotchas(root)) == 2
    assert proj.consolidate().merged == []
    assert len(gotchas(root)) == 2
    later = proj.capture_stdout(f"later, at 11:00\n{module}\n", source="later")
    assert later.evidence == 1


def test_errors_a_shell_only_showed_or_the_assistant_only_mentioned_make_no_gotcha(proj, tmp_path):
    """Three sessions reading one troubleshooting page through a shell (`cat`, as
    Codex reads every file), a `git log` of "fix TimeoutError", and an assistant
    musing on a possible error made three gotchas. What a command printed when it
    failed still counts."""
    root = proj.project.root

    def session(n: int):
        lines = []

        def line(role, content, m):
            message = {"role": role, "content": content}
            lines.append(
                {
                    "type": role,
                    "uuid": f"s{n}-{m:03d}",
                    "sessionId": f"s{n}",
                    "timestamp": at(n, minutes=m),
                    "message": message,
                }
            )

        steps = [
            (
                "cat docs/troubleshooting.md",
                "If you see ConnectionRefusedError: [Errno 111] Connection refused, start the db.",
                False,
            ),
            (
                "cd src && git log -1 | head -5",
                "commit abc123\n\n    fix: handle TimeoutError: read timed out",
                False,
            ),
            ("pytest -q", "E   KeyError: 'DATABASE_URL'", True),
            ("tail -n 50 logs/app.log", "ConnectionResetError: the peer closed the socket", False),
        ]
        for m, (command, text, failed) in enumerate(steps):
            call = f"s{n}-t{m}"
            line(
                "assistant",
                [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}],
                3 * m,
            )
            line(
                "user",
                [{"type": "tool_result", "tool_use_id": call, "content": text, "is_error": failed}],
                3 * m + 1,
            )
        line(
            "assistant",
            [{"type": "text", "text": "The docs mention OSError: [Errno 28] No space left on device."}],
            20,
        )
        path = tmp_path / f"s{n}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return path

    for n in range(3):
        proj.capture_transcript(session(n))
    assert sorted(meta["subject"] for meta, _ in gotchas(root)) == [
        "Repeated error: ConnectionResetError: the peer closed the socket",  # an app's log: it happened
        "Repeated error: KeyError: 'DATABASE_URL'",
    ]


def test_a_fact_said_again_in_other_words_is_the_same_fact(proj):
    """A sentence counted as new when one word differed ("before you push" for
    "before pushing"): four rewordings of one fact made three memories, and a
    merge stacked the paraphrases in one body."""
    root = proj.project.root
    said = [
        "Always run make test before pushing to main. The integration suite needs the local database running.",
        "Always run make test before you push to main. The integration suite needs the local database running.",
        "Always run `make test` before pushing to main. The integration suite needs the local database running.",
        "Always run make test before pushing to main! The integration suite needs the local database to be running.",
    ]
    for n, text in enumerate(said):
        proj.capture_stdout(block(text, "Tests before pushing"), source=f"s{n}", tier="daily")
    ((meta, body),) = [frontmatter(p) for p in memory_files(root, ".lore/local/daily")]
    assert meta["evidence_count"] == 4 and body == said[0]


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        ("Meetings are on Tuesdays at the office.", "Meetings are on Tuesday at the office."),
        (
            "The orders service uses Postgres 15 in production.",
            "The orders service uses Postgres in production (see docs/db.md).",
        ),
        (
            "Deploy the web app with make deploy on Fridays.",
            "Deploy the web app with make deploy on Fridays, owned by Alice.",
        ),
        (
            "Use the read-only replica for reporting queries.",
            "Use the replica for reporting queries, see ADR-12.",
        ),
        (
            "We use PostgreSQL for the orders service in production.",
            "We use Postgres for the orders service in production.",
        ),
    ],
)
def test_an_added_detail_a_plural_or_a_longer_spelling_is_no_other_value(newer, older):
    from lore.memory.lifecycle.similarity import contradiction

    assert contradiction(newer, older) is None
