"""`lore session ...` as a real subprocess, and the MCP tools through the official SDK client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

import forkserver
from sessions.session_helpers import CLAUDE_JSONL, sessions_config


def test_session_commands_end_to_end(cli, tmp_path):
    started = cli.json("session", "start", "--agent", "cli", "--user", "ada")
    sid = started["id"]
    assert (
        started["status"] == "active"
        and started["agent"] == "cli"
        and started["path"] == f".lore/sessions/{sid}"
    )
    assert cli("session", "start", "--id", "fixed-1").stdout.strip() == "fixed-1"
    # The session is agent cli's: without that identity it is not there (docs/lifecycle.md).
    unseen = cli("session", "append", sid, "--content", "x", ok=False)
    assert unseen.returncode == 1 and f"no session {sid}" in unseen.stderr
    as_cli = {"env": {"LORE_AGENT": "cli"}}

    out = cli.json("session", "append", sid, "--content", "No, use pnpm instead of npm", **as_cli)
    assert out["events"][0]["id"] == 1 and out["events"][0]["role"] == "user" and out["compaction"] is None
    piped = cli.json("session", "append", sid, "--role", "assistant", input="Switched to pnpm.\n", **as_cli)
    assert piped["events"][0]["content"] == "Switched to pnpm."
    tool = cli.json(
        "session",
        "append",
        sid,
        "--tool",
        "Bash",
        "--args",
        '{"command": "pnpm test"}',
        "--result",
        "2 passed",
        **as_cli,
    )
    call, result = tool["events"]
    assert call["tool_name"] == "Bash" and call["args"] == {"command": "pnpm test"}
    assert result["tool_call_id"] == call["tool_call_id"] and result["result"] == "2 passed"
    assert all(key == key.lower() for key in call)

    bad = cli("session", "append", sid, "--tool", "Bash", "--args", "{not json", ok=False)
    assert bad.returncode == 2 and "--args must be JSON" in bad.stderr and "Traceback" not in bad.stderr
    orphan = cli("session", "append", sid, "--result", "x", ok=False)  # was stored as "tool result (None): x"
    assert orphan.returncode == 2 and "--call-id" in orphan.stderr
    missing = cli("session", "append", "no-such", "--content", "x", ok=False)
    assert missing.returncode == 1 and "no session no-such" in missing.stderr
    assert not (cli.cwd / ".lore/sessions/no-such").exists()  # no lock file left behind
    escape = cli("session", "append", "../x", "--content", "x", ok=False)
    assert escape.returncode == 2 and "invalid session id" in escape.stderr
    assert cli.json("session", "append", "new-1", "--content", "hello", "--create")["events"][0]["id"] == 1

    listed = cli.json("session", "list")
    assert {s["id"] for s in listed} == {"fixed-1", "new-1"}
    assert {s["id"] for s in cli.json("session", "list", **as_cli)} == {sid, "fixed-1", "new-1"}
    table = cli("session", "list").stdout
    assert "fixed-1" in table and "new-1" in table and "active" in table

    view = cli.json("session", "show", sid, **as_cli)
    assert [e["id"] for e in view["events"]] == [1, 2, 3, 4] and view["summaries"] == 0
    text = cli("session", "show", sid, **as_cli)
    assert "[1] user: No, use pnpm instead of npm" in text.stdout and "4 items" in text.stderr

    nothing = cli.json("session", "compact", sid, "--if-over", **as_cli)
    assert nothing["compacted"] is False and nothing["reason"] == "under-soft-limit"
    ended = cli.json("session", "end", sid, **as_cli)
    assert ended["status"] == "ended" and ended["ended_at"]
    assert [s["id"] for s in cli.json("session", "list", "--status", "ended", **as_cli)] == [sid]
    refused = cli("session", "append", sid, "--content", "more", ok=False, **as_cli)
    assert refused.returncode == 1 and f"session {sid} has ended; start a new session" in refused.stderr

    transcript = tmp_path / "claude.jsonl"
    transcript.write_text(CLAUDE_JSONL)
    imported = cli.json("session", "import", str(transcript))
    assert imported["format"] == "claude-code" and imported["appended"] == 3
    assert cli("session", "import", str(transcript)).stdout.startswith(
        "claude-code transcript → session cc-1: 0 new"
    )
    every = cli.json("session", "show", "cc-1", "--all")
    assert [e["type"] for e in every] == ["message", "tool_call", "tool_result"]


def test_compaction_through_the_cli(cli):
    sessions_config(cli.cwd, soft=400, hard=2000, protected=100)
    cli("session", "start", "--id", "long")
    compactions = []
    for i in range(40):
        out = cli.json(
            "session",
            "append",
            "long",
            "--content",
            f"Turn {i}: we decided to keep option {i} for the cache.",
        )
        if out["compaction"]:
            compactions.append(out["compaction"])
    assert compactions and all(c["reason"] == "soft-limit" for c in compactions)
    assert (cli.cwd / compactions[0]["summary_path"]).exists() and (
        cli.cwd / compactions[0]["archive"]
    ).exists()
    forced = cli.json("session", "compact", "long")
    assert forced["reason"] in ("manual", "nothing-to-compact")
    view = cli.json("session", "show", "long", "--limit-tokens", "300")
    assert view["tokens"] <= 300 and view["dropped"] > 0
    assert len(cli.json("session", "show", "long", "--all")) == 40


def test_mcp_session_tools(cli):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root: Path = cli.cwd
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"', 1))

    async def talk():
        command, args = forkserver.lore_command(["--project", str(root), "mcp"])
        params = StdioServerParameters(command=command, args=args, cwd=str(root))
        with open(root.parent / "mcp.err", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(60):
                    await session.initialize()
                    calls = [
                        (
                            "session_append",
                            {"session_id": "agent-1", "role": "user", "content": "Fix the flaky test"},
                        ),
                        (
                            "session_append",
                            {"session_id": "agent-1", "tool_name": "Bash", "args": {"command": "pytest"}},
                        ),
                        (
                            "session_append",
                            {
                                "session_id": "agent-1",
                                "result": "1 failed",
                                "tool_call_id": "tc_2",
                                "is_error": True,
                            },
                        ),
                        ("session_context", {"session_id": "agent-1"}),
                        ("session_context", {"session_id": "agent-1", "events": True}),
                        ("session_append", {"session_id": "agent-1"}),
                        ("session_context", {"session_id": "../etc"}),
                    ]
                    return [await session.call_tool(name, args) for name, args in calls]

    results = anyio.run(talk)
    decoded = [json.loads(r.content[0].text) if not r.is_error else r.content[0].text for r in results[:5]]
    assert decoded[0]["events"][0]["id"] == 1 and decoded[0]["notices"] == []
    assert decoded[1]["events"][0]["tool_call_id"] == "tc_2"
    assert decoded[2]["events"][0]["is_error"] is True
    text_view = decoded[3]
    assert "events" not in text_view and text_view["text"].startswith("[1] user: Fix the flaky test")
    assert "[3] tool result error (tc_2): 1 failed" in text_view["text"]
    assert [e["id"] for e in decoded[4]["events"]] == [1, 2, 3]
    assert results[5].is_error and "give content" in results[5].content[0].text
    assert results[6].is_error and "invalid session id" in results[6].content[0].text
    assert (root / ".lore/sessions/agent-1/session.jsonl").exists()


def test_no_secret_reaches_a_session_file_from_any_field(cli):
    """Contents and args were redacted, but a token in `--user`, a tool's name
    or call id (a hook's `tool_use_id`) went into metadata.json and
    session.jsonl in clear."""
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
    cli("session", "start", "--id", "s-secret", "--user", f"ada {token}")
    cli("session", "append", "s-secret", "--tool", f"run-{token}", "--args", "{}")
    cli("session", "append", "s-secret", "--result", "done", "--call-id", f"call-{token}")
    hook = {"session_id": "s-secret", "tool_name": "Bash", "tool_input": {}, "tool_use_id": f"tu-{token}"}
    cli("hook", "post-tool-use", input=json.dumps(hook))
    folder = cli.cwd / ".lore" / "sessions" / "s-secret"
    written = {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}
    assert "session.jsonl" in written and "metadata.json" in written
    assert all(token not in text for text in written.values()), written
    assert "[REDACTED:github-token]" in written["session.jsonl"]
    events = cli.json("session", "show", "s-secret", "--all")  # every event, archived ones too
    assert len(events) == 3 and token not in json.dumps(events)

    # Nor as the session's id, which names its folder: refused, and the message does not repeat it.
    for args in (
        ("session", "start", "--id", token),
        ("session", "append", token, "--content", "hi", "--create"),
    ):
        refused = cli(*args, ok=False)
        assert refused.returncode == 2 and "looks like a secret" in refused.stderr, refused.stderr
        assert token not in refused.stderr + refused.stdout
    assert not (cli.cwd / ".lore" / "sessions" / token).exists()


def test_listing_no_sessions_without_an_agent_says_where_an_agents_sessions_are(cli):
    """Claude Code's hooks record sessions as claude-code: a person running `lore
    session list` in a terminal is told how to see them, not just 'no sessions'."""
    cli("--agent", "claude-code", "session", "start", "--id", "s-hooked")
    shown = cli("session", "list").stdout.strip()
    assert shown == "no sessions; an agent's own are listed with --agent NAME (Claude Code's: claude-code)"
    assert "s-hooked" in cli("--agent", "claude-code", "session", "list").stdout
    assert cli("--agent", "codex", "session", "list").stdout.strip() == "no sessions"


def test_a_private_session_stays_private_when_its_metadata_is_damaged(cli):
    """The owning agent lived only in metadata.json, rewritten on every append;
    damaged, it was rebuilt from the events without an owner, and the private
    session became every agent's."""
    cli("--agent", "alice", "session", "start", "--id", "s-priv")
    cli("--agent", "alice", "session", "append", "s-priv", "--content", "codename HERON")
    folder = cli.cwd / ".lore/sessions/s-priv"
    (folder / "metadata.json").write_text("{damaged")
    hidden = cli("--agent", "bob", "session", "show", "s-priv", ok=False)
    assert hidden.returncode == 1 and "HERON" not in hidden.stdout + hidden.stderr
    assert "s-priv" not in cli("--agent", "bob", "session", "list", "--json").stdout
    shown = cli.json("--agent", "alice", "session", "show", "s-priv")
    assert [e["content"] for e in shown["events"]] == ["codename HERON"]
    cli("--agent", "alice", "session", "append", "s-priv", "--content", "still mine")  # recounts the metadata
    assert json.loads((folder / "metadata.json").read_text())["channelId"] == "alice"

    # A session an older Lore wrote has no owner file: damaged, no agent may see it.
    (folder / ".owner").unlink()
    (folder / "metadata.json").write_text("{damaged")
    assert cli("--agent", "bob", "session", "show", "s-priv", ok=False).returncode == 1
    assert "s-priv" not in cli("--agent", "bob", "session", "list", "--json").stdout


def test_an_ended_session_stays_ended_when_its_metadata_is_damaged(cli):
    """The ended status lived only in metadata.json; damaged, the recount from
    the events made the session active again, and appending to it was allowed."""
    cli("session", "start", "--id", "s-done")
    cli("session", "append", "s-done", "--content", "shipped the fix")
    ended = cli.json("session", "end", "s-done")
    folder = cli.cwd / ".lore/sessions/s-done"
    (folder / "metadata.json").write_text("{damaged")
    refused = cli("session", "append", "s-done", "--content", "more", ok=False)
    assert refused.returncode != 0 and "has ended" in refused.stderr, refused.stderr
    listed = {s["id"]: s for s in cli.json("session", "list")}
    assert listed["s-done"]["status"] == "ended", listed
    assert listed["s-done"]["ended_at"] == ended["ended_at"]
    assert json.loads((folder / "metadata.json").read_text())["status"] == "ended"


def test_session_show_never_sends_a_control_character_to_the_terminal(cli):
    """An audit: a transcript's escapes (coloured tool output, a title set by
    `\\x1b]0;`) reached the terminal raw through `session show`."""
    cli("session", "start", "--id", "esc1")
    cli("session", "append", "esc1", "--role", "user", input="before \x1b[2J\x1b]0;pwned\x07 after\n")
    for args in (("session", "show", "esc1"), ("session", "show", "esc1", "--all")):
        proc = cli(*args, ok=False)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout, (args, proc.stdout)
        assert "before \\x1b[2J\\x1b]0;pwned\\x07 after" in proc.stdout, proc.stdout
    # JSON stays exact.
    assert "\x1b[2J" in cli("session", "show", "esc1", "--json").stdout.encode().decode("unicode_escape")


def test_a_timestamp_given_by_hand_follows_the_one_rule_for_times(cli):
    """An audit: `session append --timestamp 2026-01-01T10:00` was stored as
    10:00 UTC where `lore add --occurred-at` reads local time (09:00 UTC in
    Paris), and a refused value exited 1, not 2 (a usage error)."""
    paris = {"env": {"TZ": "Europe/Paris"}}
    cli("session", "start", "--id", "tz1")
    out = cli.json(
        "session", "append", "tz1", "--content", "hello", "--timestamp", "2026-01-01T10:00", **paris
    )
    assert out["events"][0]["timestamp"] == "2026-01-01T09:00:00Z"
    utc = cli.json(
        "session", "append", "tz1", "--content", "again", "--timestamp", "2026-01-01T10:00Z", **paris
    )
    assert utc["events"][0]["timestamp"] == "2026-01-01T10:00:00Z"
    for bad, says in (("3000-01-01", "in the future"), ("yesterday-ish", "not an ISO 8601 time")):
        proc = cli("session", "append", "tz1", "--content", "x", "--timestamp", bad, ok=False)
        assert proc.returncode == 2 and says in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_an_empty_transcript_and_an_unknown_session_are_said(cli, tmp_path):
    """An audit: importing an empty file made an empty session named after it,
    and `session search --session nosuch` answered "no matches"."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    proc = cli("session", "import", str(empty), ok=False)
    assert proc.returncode == 2 and "holds no events" in proc.stderr
    assert cli.json("session", "list") == []
    proc = cli("session", "search", "x", "--session", "nosuch", ok=False)
    assert proc.returncode == 1 and "no session nosuch" in proc.stderr
