"""Turning agent output into memory candidates: transcripts, <lore-memory> blocks, repeated errors."""

from __future__ import annotations

import json
import re

import pytest

from lore.integrations import INSTRUCTIONS, Candidate, from_stdout, from_transcript, repeated_errors
from lore.memory.capture.parse import distinct_errors

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

SESSION = "5f0c2d1e-aaaa-4bbb-8ccc-123456789abc"


def event(kind: str, uuid: str, timestamp: str, message: dict, **extra) -> str:
    return json.dumps(
        {
            "parentUuid": None,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/app",
            "sessionId": SESSION,
            "version": "1.0.80",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": timestamp,
            **extra,
        }
    )


def assistant(uuid: str, timestamp: str, content, message_id: str | None = None, **extra) -> str:
    message = {
        "id": message_id or f"msg_{uuid}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }
    return event("assistant", uuid, timestamp, message, requestId=f"req_{uuid}", **extra)


PLAN = "I'll fix the CORS error.\n\nThe API runs on port 4000, so the dev proxy must forward /api."
SPLIT_TEXT = "Found it:\n- `next.config.js` lacked the rewrite\n- added `/api/:path*`"
HEADED = "## Decision: JWT over sessions\n\nStateless API, refresh tokens in httpOnly cookies."

TRANSCRIPT = [
    json.dumps({"type": "summary", "summary": "CORS fix", "leafUuid": "u0"}),
    event(
        "user",
        "u1",
        "2025-06-01T10:00:00.000Z",
        {"role": "user", "content": "Why does the API call fail?\nIt says CORS."},
    ),
    # single-line assistant text: skipped
    assistant("a1", "2025-06-01T10:00:05.120Z", [{"type": "text", "text": "Let me look."}]),
    # thinking + multi-line text + tool_use in one message: kept, text only
    assistant(
        "a2",
        "2025-06-01T10:00:09.000Z",
        [
            {"type": "thinking", "thinking": "Probably the proxy.\nCheck config.", "signature": "x"},
            {"type": "text", "text": PLAN},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "next.config.js"}},
        ],
    ),
    event(
        "user",
        "u2",
        "2025-06-01T10:00:10.000Z",
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "module.exports = {\n}\n"}
            ],
        },
    ),
    "{this line is not json",
    "",
    # one API message written as two events (text, then tool_use) sharing message.id: joined
    assistant("a3", "2025-06-01T10:01:00Z", [{"type": "text", "text": SPLIT_TEXT}], message_id="msg_X"),
    assistant(
        "a4",
        "2025-06-01T10:01:01Z",
        [{"type": "tool_use", "id": "toolu_2", "name": "Edit", "input": {"old_string": "a\nb"}}],
        message_id="msg_X",
    ),
    # multi-line only through whitespace: after stripping it's one line, skipped
    assistant("a5", "2025-06-01T10:02:00Z", [{"type": "text", "text": "\n  Done.  \n\n"}]),
    # two single-line text parts in one message join into a multi-line one: kept
    assistant(
        "a6",
        "2025-06-01T10:03:00+02:00",
        [{"type": "text", "text": "Summary of changes:"}, {"type": "text", "text": "- proxy added"}],
    ),
    # Claude Code's own API error notice: skipped
    assistant(
        "a7",
        "2025-06-01T10:04:00Z",
        [{"type": "text", "text": "API Error: 529\nOverloaded"}],
        isApiErrorMessage=True,
    ),
    json.dumps(
        {"type": "system", "content": "Conversation compacted\nfor real", "timestamp": "2025-06-01T10:05:00Z"}
    ),
    # the same event written twice: counted once
    assistant("a8", "2025-06-01T10:06:00Z", [{"type": "text", "text": HEADED}]),
    assistant("a8", "2025-06-01T10:06:00Z", [{"type": "text", "text": HEADED}]),
    # no timestamp: skipped (occurred_at is required)
    json.dumps({"type": "assistant", "uuid": "a9", "message": {"role": "assistant", "content": "A\nB"}}),
    # a list that isn't an event
    "[1, 2, 3]",
]


def test_transcript_keeps_exactly_the_multiline_assistant_messages(tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("\n".join(TRANSCRIPT) + "\n")

    found = from_transcript(path)

    assert [(c.body, c.occurred_at, c.source) for c in found] == [
        (PLAN, "2025-06-01T10:00:09Z", f"transcript:{SESSION}:a2"),
        (SPLIT_TEXT, "2025-06-01T10:01:00Z", f"transcript:{SESSION}:a3"),
        ("Summary of changes:\n- proxy added", "2025-06-01T08:03:00Z", f"transcript:{SESSION}:a6"),
        (HEADED, "2025-06-01T10:06:00Z", f"transcript:{SESSION}:a8"),
    ]
    assert all(
        isinstance(c, Candidate) and c.type == "summary" and c.applies_to == "global" and c.tags == []
        for c in found
    )
    assert [c.title for c in found] == [None, None, None, "Decision: JWT over sessions"]


def test_transcript_keeps_text_in_full(tmp_path):
    long_text = "# Notes\n\n" + "\n".join(f"- point {i} " + "x" * 200 for i in range(200))
    path = tmp_path / "t.jsonl"
    path.write_text(assistant("a1", "2025-06-01T10:00:00Z", [{"type": "text", "text": long_text}]) + "\n")
    (candidate,) = from_transcript(path)
    assert candidate.body == long_text and candidate.title == "Notes"


def test_transcript_in_004_session_format(tmp_path):
    lines = [
        {"type": "message", "role": "user", "content": "Hello\nthere", "timestamp": "2024-01-01T00:00:00Z"},
        {"type": "message", "role": "assistant", "content": "Hi there!", "timestamp": "2024-01-01T00:00:01Z"},
        {"type": "tool_call", "toolName": "read", "args": {"path": "x"}, "timestamp": "2024-01-01T00:00:02Z"},
        {"type": "tool_result", "toolCallId": "tc_1", "result": "a\nb", "timestamp": "2024-01-01T00:00:03Z"},
        {
            "type": "message",
            "role": "assistant",
            "content": "User prefers dark mode.\nAnd concise replies.",
            "timestamp": "2024-01-02T12:00:00",
        },
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    (candidate,) = from_transcript(path)
    assert candidate.body == "User prefers dark mode.\nAnd concise replies."
    assert candidate.occurred_at == "2024-01-02T12:00:00Z"
    assert candidate.source == "transcript:session:line5"


def test_transcript_in_codex_rollout_format(tmp_path):
    lines = [
        {"timestamp": "2025-09-01T09:00:00.000Z", "type": "session_meta", "payload": {"id": "s1"}},
        {
            "timestamp": "2025-09-01T09:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "a\nb"}],
            },
        },
        {
            "timestamp": "2025-09-01T09:00:05.500Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Ran the tests.\nAll 12 pass."}],
            },
        },
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    (candidate,) = from_transcript(path)
    assert (candidate.body, candidate.occurred_at) == (
        "Ran the tests.\nAll 12 pass.",
        "2025-09-01T09:00:05.500Z",
    )


def test_transcript_that_is_not_jsonl_gives_nothing(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"\xff\xfe garbage\nplain text\n")
    assert from_transcript(path) == []


# ---------------------------------------------------------------- <lore-memory> blocks


STDOUT = """\
Running task 42...
<lore-memory type="gotcha" tags="auth, jwt,Auth" applies_to="file:src/auth.py" title="JWT secret must be base64">
  Token validation fails silently when JWT_SECRET contains special characters.
  Always use a base64-encoded secret.
</lore-memory>
some more output
<lore-memory>
---
type: decision
tags: [api, versioning]
applies_to: area:api
title: Version the API in the path
occurred_at: 2025-03-04T05:06:07+01:00
---
We version the public API as /v1/... because the CDN caches by path.
</lore-memory>
<lore-memory type="lesson" applies_to="area:db">
---
type: fact
tags: pool
---
Attribute beats header: this is a lesson with tag pool.
</lore-memory>
done.
"""


def test_stdout_blocks_with_attributes_and_with_header():
    found, problems = from_stdout(STDOUT, default_time="2025-06-01T12:00:00Z")
    assert problems == []
    first, second, third = found
    assert first == Candidate(
        body="Token validation fails silently when JWT_SECRET contains special characters.\n"
        "Always use a base64-encoded secret.",
        occurred_at="2025-06-01T12:00:00Z",
        title="JWT secret must be base64",
        type="gotcha",
        tags=["auth", "jwt"],
        applies_to="file:src/auth.py",
        source="stdout",
    )
    assert second == Candidate(
        body="We version the public API as /v1/... because the CDN caches by path.",
        occurred_at="2025-03-04T04:06:07Z",
        title="Version the API in the path",
        type="decision",
        tags=["api", "versioning"],
        applies_to="area:api",
        source="stdout",
    )
    assert (third.type, third.tags, third.applies_to) == ("lesson", ["pool"], "area:db")
    assert third.body == "Attribute beats header: this is a lesson with tag pool."


def test_stdout_malformed_blocks_are_reported_and_the_rest_parse():
    text = "\n".join(
        [
            '<lore-memory type="lesson">',  # 1: unclosed (next opens)
            "half a thought",
            '<lore-memory type="wisdom">Bad type here, long enough.</lore-memory>',  # 3
            '<lore-memory applies_to="repo:x">Bad scope here, long enough.</lore-memory>',  # 4
            '<lore-memory type="fact">   \n  </lore-memory>',  # 5: empty body
            '<lore-memory occurred_at="yesterday">Bad time, long enough.</lore-memory>',  # 7
            '<lore-memory type="fact" mood="calm">Unknown attribute kept.</lore-memory>',  # 8
            "<lore-memory type=fact>Unquoted attribute value.</lore-memory>",  # 9
            '<lore-memory type="fact"/>',  # 10
            "<lore-memory>\n---\ntype: [unclosed\n---\nbody text here\n</lore-memory>",  # 11
            '<lore-memory type="pattern">Good one survives.</lore-memory>',  # 17
            '<lore-memory type="fact">never closed, at the end',  # 18
        ]
    )
    found, problems = from_stdout(text, default_time="2025-01-01T00:00:00Z")

    assert [c.body for c in found] == ["Unknown attribute kept.", "Good one survives."]
    assert [p.split(":")[0] for p in problems] == [
        "line 1",
        "line 3",
        "line 4",
        "line 5",
        "line 7",
        "line 8",
        "line 9",
        "line 10",
        "line 11",
        "line 18",
    ]
    joined = "\n".join(problems)
    assert "no </lore-memory>" in problems[0]
    assert "unknown type 'wisdom'" in problems[1]
    assert "applies_to 'repo:x'" in problems[2]
    assert "empty body" in problems[3]
    assert "occurred_at 'yesterday'" in problems[4]
    assert "ignored unknown field 'mood'" in problems[5] and "skipped" not in problems[5]
    assert 'name="value"' in problems[6]
    assert "no body" in problems[7]
    assert "malformed YAML header" in problems[8]
    assert "no </lore-memory>" in problems[9]
    assert all("\n" not in p for p in problems) and joined.count("line ") == len(problems)


def test_stdout_block_dated_more_than_a_day_ahead_is_left_out():
    """A block dated 2099 (a clock gone wrong) was kept, and never grew old enough to archive."""
    text = '<lore-memory type="fact" occurred_at="2099-01-01T00:00:00Z">From the far future, long enough.</lore-memory>'
    found, problems = from_stdout(text + '\n<lore-memory type="fact">Dated now, long enough.</lore-memory>')
    assert [c.body for c in found] == ["Dated now, long enough."]
    assert problems == [
        "line 1: occurred_at '2099-01-01T00:00:00Z' is in the future; give when it happened (at most a day ahead); skipped"
    ]


def test_stdout_time_falls_back_to_now():
    (candidate,), _ = from_stdout("<lore-memory>Body of the memory.</lore-memory>")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", candidate.occurred_at)
    assert (candidate.type, candidate.applies_to, candidate.title) == ("summary", "global", None)


def test_stdout_ignores_ansi_colours_and_crlf_and_records_source():
    text = '\x1b[32mok\x1b[0m\r\n<lore-memory type="fact">\r\nUses \x1b[1mPostgres 16\x1b[0m.\r\n</lore-memory>\r\n'
    (candidate,), problems = from_stdout(text, default_time="2025-01-01", source="stdout:run.log")
    assert problems == []
    assert candidate.body == "Uses Postgres 16."
    assert candidate.occurred_at == "2025-01-01T00:00:00Z"
    assert candidate.source == "stdout:run.log"


def test_stdout_skips_the_example_from_lores_instructions():
    found, problems = from_stdout("The instructions say:\n" + INSTRUCTIONS)
    assert found == []
    assert len(problems) == 1 and "example block" in problems[0]


def test_stdout_without_blocks():
    assert from_stdout("nothing to see\n</lore-memory>\n") == ([], [])


# ---------------------------------------------------------------- repeated errors


def test_repeated_errors_normalises_and_counts():
    output = "\n".join(
        [
            "2025-06-01T10:00:00Z ERROR Connection refused: 127.0.0.1:5432",
            "src/app.py:42: TypeError: unsupported operand type(s) for +: 'int' and 'str'",
            "Traceback (most recent call last):",
            '  File "/home/dev/app/x.py", line 10, in <module>',
            "    main()",
            "KeyError: 'user_17'",
            "2025-06-01T10:00:05.123Z ERROR Connection refused: 127.0.0.1:5432",
            "src/app.py:57: TypeError: unsupported operand type(s) for +: 'int' and 'str'",
            "Segfault-ish object at 0x7f3a2b1c4d50 in worker 3: Exception raised",
            "Traceback (most recent call last):",
            '  File "/home/dev/app/x.py", line 12, in <module>',
            "KeyError: 'user_99'",
            "all good, 0 errors",
            "2025-06-01 10:00:09,511 ERROR Connection refused: 127.0.0.1:5432",
            "src/app.py:61: TypeError: unsupported operand type(s) for +: 'int' and 'str'",
            "Segfault-ish object at 0x55d1e2f3a4b0 in worker 7: Exception raised",
            "error[E0382]: borrow of moved value: `v`",
            "error[E0382]: borrow of moved value: `v`",
            "error[E0499]: cannot borrow `x` as mutable more than once",
            "Traceback (most recent call last):",
            '  File "/home/dev/app/y.py", line 3, in f',
            "KeyError: 'user_5'",
        ]
    )
    assert repeated_errors(output) == [
        ("<time> ERROR Connection refused: <n>:<n>", 3),
        ("src/app.py:<n>: TypeError: unsupported operand type(s) for +: 'int' and 'str'", 3),
        ("KeyError: 'user_<n>'", 3),
    ]
    assert ("error[E0382]: borrow of moved value: `v`", 2) in repeated_errors(output, threshold=2)
    assert ("Segfault-ish object at <hex> in worker <n>: Exception raised", 2) in repeated_errors(
        output, threshold=2
    )
    assert all(
        "0 errors" not in pattern and "Traceback" not in pattern
        for pattern, _ in repeated_errors(output, threshold=1)
    )


def test_repeated_errors_from_lines_and_other_tools():
    lines = [
        "npm ERR! code ERESOLVE",
        "FAILED tests/test_api.py::test_login - AssertionError",
        "fatal: not a git repository (or any of the parent directories): .git",
    ] * 4
    lines += ["npm ERR! code ERESOLVE"]
    assert repeated_errors(lines, threshold=4) == [
        ("npm ERR! code ERESOLVE", 5),
        ("FAILED tests/test_api.py::test_login - AssertionError", 4),
        ("fatal: not a git repository (or any of the parent directories): .git", 4),
    ]
    assert repeated_errors(lines, threshold=6) == []
    assert repeated_errors("everything passed\n12 tests, 0 failures") == []


@pytest.mark.parametrize(
    "noisy, same",
    [
        (
            "Error: build abc1234f failed at /tmp/tmpk2j3h4x/out.o",
            "Error: build 9f8e7d6c failed at /tmp/tmpzz81ab/out.o",
        ),
        (
            "ValueError: request 3fa85f64-5717-4562-b3fc-2c963f66afa6 timed out after 30.5s",
            "ValueError: request 123e4567-e89b-42d3-a456-426614174000 timed out after 2s",
        ),
    ],
)
def test_repeated_errors_treats_volatile_parts_as_equal(noisy, same):
    assert repeated_errors([noisy, same], threshold=2)[0][1] == 2


# ---------------------------------------------------------------- one gotcha per distinct error (issue 14)

PYTEST_FAILURE = """\
=================================== FAILURES ===================================
____________________________________ test_total ____________________________________

    def test_total():
>       raise ValueError("invoice 42 has no lines")
E       ValueError: invoice 42 has no lines

tests/test_billing.py:3: ValueError
=========================== short test summary info ============================
FAILED tests/test_billing.py::test_total - ValueError: invoice 42 has no lines
============================== 1 failed in 0.01s ===============================
"""
NPM_FAILURE = """\
npm ERR! code E404
npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found
npm ERR! 404
npm ERR! A complete log of this run can be found in: /root/.npm/_logs/debug-0.log
"""
RUST_FAILURE = """\
error[E0382]: borrow of moved value: `v`
 --> src/main.rs:4:22
  |
3 |     let w = v;
  |             - value moved here
4 |     println!("{:?}", v);
  |                      ^ value borrowed here after move

For more information about this error, try `rustc --explain E0382`.
error: could not compile `demo` (bin "demo") due to 1 previous error
"""
JAVA_FAILURE = """\
Exception in thread "main" java.lang.IllegalStateException: pool exhausted
\tat com.acme.Pool.take(Pool.java:41)
\tat com.acme.Main.main(Main.java:9)
Caused by: java.io.IOException: too many open files
\tat com.acme.Pool.open(Pool.java:12)
\t... 2 more
"""
NODE_FAILURE = """\
Error: connect ECONNREFUSED 127.0.0.1:5432
    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)
    at Protocol.connect (/srv/app/node_modules/pg/lib/client.js:132:7)
"""


@pytest.mark.parametrize(
    "output, pattern",
    [
        (PYTEST_FAILURE, "ValueError: invoice <n> has no lines"),
        (NPM_FAILURE, "npm ERR! code E404"),
        (RUST_FAILURE, "error[E0382]: borrow of moved value: `v`"),
        (JAVA_FAILURE, 'Exception in thread "main" java.lang.IllegalStateException: pool exhausted'),
        (NODE_FAILURE, "Error: connect ECONNREFUSED <n>:<n>"),
    ],
    ids=["pytest", "npm", "rust", "java", "node"],
)
def test_one_error_is_one_pattern_however_many_lines_report_it(output, pattern):
    runs = "\n$ make test\n".join([output] * 3)
    assert repeated_errors(runs) == [(pattern, 3)]
    assert repeated_errors(output, threshold=1) == [(pattern, 1)]


def test_distinct_errors_stay_apart_and_know_where_they_last_occurred():
    lines = [*PYTEST_FAILURE.splitlines(), "", *RUST_FAILURE.splitlines(), ""] * 3
    found = distinct_errors(lines)
    assert [(e.pattern, e.count) for e in found] == [
        ("ValueError: invoice <n> has no lines", 3),
        ("error[E0382]: borrow of moved value: `v`", 3),
    ]
    assert "FAILED" in lines[found[0].last_line] and "error[E0382]" in lines[found[1].last_line]


def test_code_that_names_an_error_is_not_an_error():
    """`cat -n`, `sed -n`, `grep -rn` print source: its raise, except, import and
    class lines name errors without being any."""
    shown = [
        "src/shop/cart.py:12:        raise ValueError(f'invoice {n} has no lines')",
        "src/shop/cart.py-13-    except (KeyError, IndexError):",
        "    14\tfrom .errors import CartError, PaymentError",
        "    15\u2192class CartError(Exception):",
        "    with pytest.raises(ValueError, match='no lines'):",
        "  } catch (IOException e) {",
        "  public void load() throws IOException {",
        "ValueError: invoice 7 has no lines",
    ]
    found = distinct_errors(shown * 3)
    assert [(e.pattern, e.count) for e in found] == [("ValueError: invoice <n> has no lines", 3)]


def test_paths_under_the_project_are_written_relative_to_it():
    line = "FileNotFoundError: [Errno 2] No such file or directory: '/home/dev/shop/data/in.csv'"
    found = distinct_errors([line, line, line], root="/home/dev/shop")
    assert found[0].pattern == "FileNotFoundError: [Errno <n>] No such file or directory: 'data/in.csv'"
    outside = "FileNotFoundError: [Errno 2] No such file or directory: '/etc/shop.conf'"
    assert "'/etc/shop.conf'" in distinct_errors([outside] * 3, root="/home/dev/shop")[0].pattern


def test_blocks_may_be_private_or_session_captures():
    text = (
        '<lore-memory type="preference" private="true">\nI like short answers.\n</lore-memory>\n'
        '<lore-memory type="fact" storage="session">\nThe staging DB is down today.\n</lore-memory>\n'
        '<lore-memory type="fact">\n---\nprivate: yes\n---\nMy token lives in the keyring.\n</lore-memory>\n'
        '<lore-memory type="fact" private="maybe">\nNot kept.\n</lore-memory>\n'
        '<lore-memory type="fact" storage="cloud">\nNot kept either.\n</lore-memory>\n'
    )
    found, problems = from_stdout(text)
    assert [(c.private, c.session) for c in found] == [(True, None), (False, True), (True, None)]
    assert problems == [
        "line 13: 'private' must be true or false; skipped",
        "line 16: storage 'cloud' must be durable or session; skipped",
    ]


def read_front(path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text("utf-8").split("---\n")[1])


def tool_result(uuid: str, timestamp: str, text: str) -> str:
    return event(
        "user",
        uuid,
        timestamp,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{uuid}", "content": text}]},
    )


def test_transcript_gotcha_is_one_per_error_dated_by_its_last_occurrence(tmp_path):
    import lore

    with lore.init(tmp_path / "shop") as shop:
        root = shop.project.root
        failure = PYTEST_FAILURE.replace("tests/test_billing.py", f"{root}/tests/test_billing.py")
        times = ["2026-03-01T10:00:00Z", "2026-03-01T10:05:00Z", "2026-03-01T10:09:30Z"]
        transcript = tmp_path / f"{SESSION}.jsonl"
        transcript.write_text(
            "\n".join(tool_result(f"u{i}", when, failure) for i, when in enumerate(times)) + "\n"
        )
        result = shop.capture_transcript(transcript)
        assert result.gotchas == 1
        # An auto-captured gotcha is a daily memory (local); it becomes durable through `lore review`.
        [gotcha] = list((root / ".lore/local/daily").glob("*.md"))
        front = read_front(gotcha)
        assert front["type"] == "gotcha"
        assert front["subject"] == "Repeated error: ValueError: invoice <n> has no lines"
        assert str(front["occurred_at"]).replace(" ", "T").startswith("2026-03-01T10:09:30")
        assert str(root) not in gotcha.read_text("utf-8")
        assert shop.capture_transcript(transcript).gotchas == 0  # idempotent


def test_repeated_errors_keep_no_secret_in_the_index_or_the_gotcha(tmp_path):
    import lore

    token, password = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4", "hunter2" + "secret"
    error = (
        "ConnectionError: could not connect to "
        f"postgres://deploy:{password}@db.internal/prod with token {token}"
    )
    with lore.init(tmp_path / "shop") as shop:
        root = shop.project.root
        for run in range(3):  # three captures of the same failure make a gotcha
            transcript = tmp_path / f"run{run}.jsonl"
            transcript.write_text(tool_result(f"u{run}", f"2026-03-0{run + 1}T10:00:00Z", error) + "\n")
            shop.capture_transcript(transcript)
        [gotcha] = list((root / ".lore/local/daily").glob("*.md"))
        patterns = shop.store.error_patterns()
    text = gotcha.read_text("utf-8")
    assert "[REDACTED:" in read_front(gotcha)["error_signature"]
    assert token not in text and password not in text
    assert patterns and all(
        token not in p.signature + p.example and password not in p.signature + p.example for p in patterns
    )


def test_error_patterns_counted_before_redaction_are_redacted_once(tmp_path):
    """Occurrences stored in clear by an older Lore are rewritten at the first
    sync of this one (the memory format's upgrade), keeping their count and gotcha."""
    import lore
    from lore.storage import ErrorOccurrence

    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    other = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
    with lore.init(tmp_path / "shop") as shop:
        store = shop.store
        old = [
            ErrorOccurrence(
                f"AuthError: bad token {t}",
                f"k{n}",
                "stdout",
                None,
                f"2026-03-0{n + 1}T00:00:00Z",
                f"AuthError: bad token {t}",
            )
            for n, t in enumerate([token, other, token])
        ]
        with store.transaction():
            store.add_error_occurrences(old)
            store.set_error_memory(f"AuthError: bad token {token}", "6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f")
            store.set_meta("memory_format", "1")
        shop.sync()
        [pattern] = store.error_patterns()
    assert pattern.signature == "AuthError: bad token [REDACTED:github-token]"
    assert token not in pattern.example and other not in pattern.example
    assert pattern.count == 3 and pattern.memory_id == "6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f"


def test_a_captured_file_is_named_without_its_local_path(tmp_path):
    """Memories are committed: the file an agent's output came from is named
    relative to the project, or by its name alone when it lies outside."""
    import lore

    block = '<lore-memory type="fact">\nThe {} cache is rebuilt nightly at two.\n</lore-memory>\n'
    with lore.init(tmp_path / "shop") as shop:
        root = shop.project.root
        (root / "logs").mkdir()
        shop.capture_stdout(block.format("orders"), source=str(root / "logs" / "run.txt"))
        shop.capture_stdout(block.format("billing"), source=str(tmp_path / "home" / "ada" / "out.txt"))
        sources = sorted(str(read_front(f)["source"]) for f in (root / ".lore/memory").glob("*.md"))
    assert sources == ["logs/run.txt", "out.txt"]


def test_a_captured_files_name_is_redacted_in_the_evidence_and_error_counts_too(tmp_path):
    """The memory's `source` was redacted, but the same name reached the evidence
    rows, .lore/local/evidence.jsonl and the error occurrences in clear."""
    import sqlite3

    import lore

    token = "glpat-" + "Ca9zAbCdEf12GhIjKlMn"
    output = '<lore-memory type="fact">\nThe orders cache is rebuilt nightly.\n</lore-memory>\n'
    output += "Error: connection refused at db.internal port 5432\n" * 3
    with lore.init(tmp_path / "shop") as shop:
        root = shop.project.root
        for _ in range(2):  # the second time: evidence for the known block
            shop.capture_stdout(output, source=str(tmp_path / f"run-{token}.txt"))
    written = [p.read_text("utf-8", "replace") for p in (root / ".lore").rglob("*") if p.is_file()]
    written += list(sqlite3.connect(root / ".lore/index.db").iterdump())
    assert not [text for text in written if token in text]


def test_private_and_session_blocks_go_to_the_local_tiers(tmp_path):
    import lore

    lore.init(tmp_path / "shop").close()
    with lore.open(tmp_path / "shop", agent="codex") as shop:
        root = shop.project.root
        printed = (
            '<lore-memory type="preference" private="true">\nI like short answers.\n</lore-memory>\n'
            '<lore-memory type="fact" storage="session">\nThe staging DB is down today.\n</lore-memory>\n'
            f'<lore-memory type="gotcha" applies_to="file:{root}/src/db.py">\n'
            "Reconnect after a failover.\n</lore-memory>\n"
        )
        assert shop.capture_stdout(printed).created == 3
        private = list(shop.project.agent_dir("codex").glob("*.md"))
        session = list((root / ".lore/local/session").glob("*.md"))
        durable = list((root / ".lore/memory").glob("*.md"))
        assert [read_front(p)["type"] for p in private] == ["preference"]
        assert [read_front(p)["type"] for p in session] == ["fact"]
        assert [read_front(p)["applies_to"] for p in durable] == ["file:src/db.py"]
        assert "local/" in (root / ".lore/.gitignore").read_text().splitlines()  # not committed
    with lore.open(tmp_path / "shop") as anonymous:
        problems = anonymous.capture_stdout(
            'chatter\n<lore-memory type="fact" private="true">\nMine only.\n</lore-memory>\n'
        ).problems
        # Named by the line the block opens on, as the parser names a block's problems.
        assert len(problems) == 1 and "agent" in problems[0] and problems[0].startswith("line 2: ")


def test_a_transcripts_own_ids_reach_no_file_or_index_row_in_clear(tmp_path):
    """A transcript's session id and message ids key the digest's memories, their
    evidence and the error counts: a token in them (a pasted id, a hostile
    transcript) is redacted like its text, and capturing it again counts nothing twice."""
    import sqlite3

    import lore

    session = "ghp_" + "Se5Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    message = "AKIA" + "Q7ZK4M2P9X3N8W5R"
    call = "glpat-" + "Xy9zAbCdEf12GhIjKlMn"
    lines = []
    for n in range(3):
        when = f"2026-03-0{n + 1}T10:00:00Z"
        said = {"role": "user", "content": f"we decided to use postgres for the queue, take {n}"}
        failed = {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": f"{call}{n}",
                    "content": "Error: connection refused at db.internal port 5432",
                    "is_error": True,
                }
            ],
        }
        for uuid, message_body in ((f"{message} {n}", said), (f"{message}.{n}", failed)):
            lines.append(
                json.dumps(
                    {
                        "type": "user",
                        "sessionId": session,
                        "uuid": uuid,
                        "timestamp": when,
                        "message": message_body,
                    }
                )
            )
    transcript = tmp_path / "run.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    with lore.init(tmp_path / "shop") as shop:
        root = shop.project.root
        first = shop.capture_transcript(transcript)
        again = shop.capture_transcript(transcript)
    assert first.digest.get("decision") and first.gotchas == 1
    assert (again.created, again.gotchas, again.evidence) == (0, 0, 0)
    written = [p.read_text("utf-8", "replace") for p in (root / ".lore").rglob("*") if p.is_file()]
    written += list(sqlite3.connect(root / ".lore/index.db").iterdump())
    for secret in (session, message, call):
        assert not [text for text in written if secret in text], secret


def test_a_block_s_bad_value_is_named_redacted():
    """An attribute's bad value was echoed in clear (every other error redacts its echo)."""
    token = "ghp_" + "OhbVrpoiVgRV5IfLBcbfnoGMbJmTPSIAoCLr"
    for attribute in ("confidence", "type", "occurred_at", "tier", "applies_to", "storage"):
        text = f'<lore-memory {attribute}="{token}">A body long enough to be a memory.</lore-memory>'
        found, problems = from_stdout(text, default_time="2025-01-01T00:00:00Z")
        assert found == [] and len(problems) == 1, (attribute, problems)
        assert token[:8] not in problems[0] and "[REDACTED:" in problems[0], problems[0]
