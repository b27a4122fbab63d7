"""Agent-facing commands end to end (issue 6): `lore install/uninstall`, the
hidden `lore hook ...` commands run the way Claude Code runs them (hook JSON
on stdin), and `lore capture`. Every command is the real CLI in a subprocess,
in a real project made in a temp dir (`[embedding] provider = "none"`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import anyio
import pytest
import yaml

from lore.integrations.agents import INSTRUCTIONS, MD_BEGIN, MD_END

LORE = [sys.executable, "-m", "lore"]
_GIT_LOCAL = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


# ---------------------------------------------------------------- helpers


def git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCAL} | GIT_ENV
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.strip()


@pytest.fixture
def repo(cli):
    """The `cli` project as a git repository (one commit on main), BM25 only."""
    root = cli.cwd
    config = root / ".lore/config.toml"
    text = config.read_text()
    assert re.search(r'^provider = "local"$', text, re.M), "config template changed"
    config.write_text(re.sub(r'^provider = "local"$', 'provider = "none"', text, count=1, flags=re.M))
    (root / "README.md").write_text("# Demo\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial commit")
    return cli


@pytest.fixture
def codex_home(tmp_path) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    return home


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file outside .lore/ and .git/, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".lore", ".git")
    }


def memory_files(root: Path, folder: str) -> dict[str, tuple[dict, str]]:
    """{file name: (frontmatter, body)} of the memory files in `folder`."""
    out = {}
    base = root / folder
    for path in sorted(base.glob("*.md")) if base.is_dir() else []:
        _, meta, body = path.read_text("utf-8").split("---\n", 2)
        out[path.name] = (yaml.safe_load(meta), body.strip())
    return out


def all_memories(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / ".lore").rglob("*.md"))}


def dump(data) -> str:
    return json.dumps(data, indent=2) + "\n"


def hook(cli, event: str, payload, *, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Run `lore hook EVENT` as Claude Code does: the payload as JSON on stdin."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    started = time.perf_counter()
    proc = cli("hook", event, input=text, ok=False, cwd=cwd)
    return proc, time.perf_counter() - started


def until(condition, what: str, seconds: float = 120) -> None:
    """Wait for `condition` (a background process's work), at most `seconds` (never a figure)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.05)


def log_lines(root: Path) -> list[str]:
    log = root / ".lore/local/hooks.log"
    return log.read_text().splitlines() if log.exists() else []


# ---------------------------------------------------------------- install: claude-code

EXISTING_MCP = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
        },
    },
}
EXISTING_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "ruff format"}]}],
    },
}


def lore_hook(event: str) -> str:
    return shlex.join(["lore", "hook", event])


def test_install_claude_code_merges_is_idempotent_and_uninstall_restores_bytes(cli):
    root = cli.cwd
    (root / ".mcp.json").write_text(dump(EXISTING_MCP))
    (root / ".claude").mkdir()
    (root / ".claude/settings.json").write_text(dump(EXISTING_SETTINGS))
    before = snapshot(root)

    out = cli("install", "claude-code").stdout.splitlines()
    assert out == [
        "updated .mcp.json: set MCP server 'lore'",
        "updated .claude/settings.json: set hooks SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd",
    ]

    mcp = json.loads((root / ".mcp.json").read_text())
    assert mcp["mcpServers"]["github"] == EXISTING_MCP["mcpServers"]["github"]
    assert mcp["mcpServers"]["lore"] == {
        "command": "lore",
        "args": ["mcp"],
    }  # no venv path in committed files
    settings = json.loads((root / ".claude/settings.json").read_text())
    assert settings["permissions"] == EXISTING_SETTINGS["permissions"]
    hooks = settings["hooks"]
    assert hooks["PostToolUse"][0] == EXISTING_SETTINGS["hooks"]["PostToolUse"][0]
    assert hooks["PostToolUse"][1] == {
        "matcher": "",
        "hooks": [{"type": "command", "command": lore_hook("post-tool-use")}],
    }
    assert hooks["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": lore_hook("user-prompt-submit")}]}
    ]
    assert hooks["SessionStart"][0] == EXISTING_SETTINGS["hooks"]["SessionStart"][0]
    assert hooks["SessionStart"][1] == {
        "matcher": "",
        "hooks": [{"type": "command", "command": lore_hook("session-start")}],
    }
    assert hooks["PreCompact"] == [
        {"matcher": "", "hooks": [{"type": "command", "command": lore_hook("pre-compact")}]}
    ]
    assert hooks["Stop"] == [{"hooks": [{"type": "command", "command": lore_hook("stop")}]}]
    assert hooks["SessionEnd"] == [{"hooks": [{"type": "command", "command": lore_hook("session-end")}]}]

    installed = snapshot(root)
    again = cli("install", "claude-code")
    assert again.stdout.strip() == "Lore is already installed for claude-code"
    assert snapshot(root) == installed  # byte-identical
    assert cli.json("install", "claude-code") == {"agent": "claude-code", "changes": []}

    out = cli("uninstall", "claude-code").stdout.splitlines()
    assert out == [  # unedited since Lore wrote them: the original bytes come back, and it says so
        "restored .mcp.json as it was before Lore",
        "restored .claude/settings.json as it was before Lore",
    ]
    assert snapshot(root) == before  # the original bytes
    assert cli("uninstall", "claude-code").stdout.strip() == "Lore was not installed for claude-code"


def test_install_claude_code_into_a_bare_project_and_uninstall_leaves_nothing(cli):
    root = cli.cwd
    changes = cli.json("install", "claude-code")["changes"]
    assert changes == [
        "created .mcp.json: MCP server 'lore'",
        "created .claude/settings.json: hooks SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd",
    ]
    cli("uninstall", "claude-code")
    assert snapshot(root) == {} and not (root / ".claude").exists()


@pytest.mark.surface
def test_installed_claude_code_entries_actually_run(repo):
    """What `lore install claude-code` wrote works: the MCP server entry starts a
    server that answers, and each hook command runs and exits 0."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root = repo.cwd
    repo(
        "add",
        "--type",
        "convention",
        "--title",
        "API errors use RFC 7807 problem details",
        "--body",
        "Every API error is a problem+json document.\nNever return bare strings.",
    )
    repo("install", "claude-code")
    server = json.loads((root / ".mcp.json").read_text())["mcpServers"]["lore"]

    async def talk():
        backend = os.environ.get("LORE_DATABASE_URL")  # the SDK passes a minimal environment on
        params = StdioServerParameters(
            command=server["command"],
            args=server["args"],
            cwd=str(root),
            env={"LORE_DATABASE_URL": backend} if backend else None,
        )
        with open(root.parent / "server.err", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    with anyio.fail_after(60):
                        await session.initialize()
                        tools = await session.list_tools()
                        result = await session.call_tool("memory_search", {"query": "problem details"})
                    return [t.name for t in tools.tools], result

    names, result = anyio.run(talk)
    assert len(names) == 13
    assert not result.is_error and "RFC 7807" in result.content[0].text

    settings = json.loads((root / ".claude/settings.json").read_text())
    for event, payload in (
        ("SessionStart", {"hook_event_name": "SessionStart", "source": "startup"}),
        ("UserPromptSubmit", {"hook_event_name": "UserPromptSubmit", "prompt": "Fix the API errors"}),
        (
            "PostToolUse",
            {
                "hook_event_name": "PostToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": "src/api.py"},
                "tool_response": "def handler(): ...",
                "tool_use_id": "toolu_01",
            },
        ),
        ("PreCompact", {"hook_event_name": "PreCompact", "trigger": "auto"}),
        ("Stop", {"hook_event_name": "Stop"}),
        ("SessionEnd", {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
    ):
        command = settings["hooks"][event][-1]["hooks"][0]["command"]
        env = {k: v for k, v in os.environ.items() if k != "LORE_PROJECT"} | {"CLAUDE_PROJECT_DIR": str(root)}
        proc = subprocess.run(
            ["sh", "-c", command],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            input=json.dumps({"session_id": "s1", "cwd": str(root), **payload}),
        )
        assert proc.returncode == 0, (event, proc.stderr)
        if event == "SessionStart":
            context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
            assert "RFC 7807" in context
        else:
            assert proc.stdout == ""
    # one line an event, and the session start's consolidation, in the background
    until(
        lambda: any(" ok consolidate: " in line for line in log_lines(root)), "the background consolidation"
    )
    assert len([line for line in log_lines(root) if " consolidate: " not in line]) == 6
    # Without a transcript, the prompt and the tool call came from the hooks' payloads,
    # recorded as the hooks' agent's session (another agent, or none, would not see it).
    recorded = repo.json("session", "show", "s1", "--all", env={"LORE_AGENT": "claude-code"})
    assert [(e["type"], e["content"] or e["tool_name"] or e["result"]) for e in recorded] == [
        ("message", "Fix the API errors"),
        ("tool_call", "Read"),
        ("tool_result", "def handler(): ..."),
    ]


def test_a_hooks_payload_never_moves_it_to_another_project(cli, tmp_path):
    """The payload's "cwd" won over --project and CLAUDE_PROJECT_DIR: a prompt
    was recorded in whatever Lore project the payload named."""
    other = tmp_path / "other"
    other.mkdir()
    type(cli)(other)("init", "--here")
    payload = {"session_id": "s9", "cwd": str(other), "hook_event_name": "UserPromptSubmit"}
    for args, env in (
        (["--project", str(cli.cwd)], {}),
        ([], {"CLAUDE_PROJECT_DIR": str(cli.cwd)}),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "lore", *args, "hook", "user-prompt-submit"],
            cwd=tmp_path,
            env={**os.environ, "LORE_AGENT": "claude-code", **env},
            input=json.dumps({**payload, "prompt": f"Rotate the keys {len(args)}"}),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
    assert not (other / ".lore/sessions").exists()
    shown = cli.json("session", "show", "s9", "--all", env={"LORE_AGENT": "claude-code"})
    assert [e["content"] for e in shown] == ["Rotate the keys 2", "Rotate the keys 0"]


# ---------------------------------------------------------------- install: cursor, codex, instructions


def test_install_cursor(cli):
    root = cli.cwd
    assert cli("install", "cursor").stdout.strip() == "created .cursor/mcp.json: MCP server 'lore'"
    doc = json.loads((root / ".cursor/mcp.json").read_text())
    assert doc == {"mcpServers": {"lore": {"command": "lore", "args": ["mcp"]}}}
    first = snapshot(root)
    assert cli("install", "cursor").stdout.strip() == "Lore is already installed for cursor"
    assert snapshot(root) == first

    # Another server added later is kept by uninstall.
    doc["mcpServers"]["linear"] = {"url": "https://mcp.linear.app/sse"}
    (root / ".cursor/mcp.json").write_text(dump(doc))
    cli("uninstall", "cursor")
    assert json.loads((root / ".cursor/mcp.json").read_text()) == {
        "mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}
    }
    (root / ".cursor/mcp.json").unlink()
    (root / ".cursor").rmdir()

    cli("install", "cursor")
    cli("uninstall", "cursor")
    assert snapshot(root) == {} and not (root / ".cursor").exists()


CODEX_CONFIG = """\
# my Codex settings
model = "o3"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # keep this comment
"""


def test_install_codex_with_codex_home(cli, codex_home, tmp_path):
    root = cli.cwd.resolve()
    env = {"CODEX_HOME": str(codex_home)}
    config = codex_home / "config.toml"
    config.write_text(CODEX_CONFIG)

    out = cli("install", "codex", env=env).stdout.strip()
    assert out == f"updated {config}: set MCP server 'lore' for {root}"
    text = config.read_text()
    assert text.startswith(CODEX_CONFIG)  # everything there before, byte for byte
    data = tomllib.loads(text)
    assert data["model"] == "o3" and data["mcp_servers"]["docs"]["command"] == "npx"
    lore = data["mcp_servers"]["lore"]
    assert lore["command"] == sys.executable and lore["args"] == ["-P", "-m", "lore", "mcp"]
    assert lore["cwd"] == str(root) and lore["env"] == {"LORE_PROJECT": str(root)}
    assert snapshot(root) == {}  # nothing written into the project

    assert cli("install", "codex", env=env).stdout.strip() == "Lore is already installed for codex"
    assert config.read_text() == text

    # Codex starts the server from its own folder: LORE_PROJECT finds the project.
    cli(
        "add",
        "--type",
        "fact",
        "--title",
        "Payments use Stripe",
        "--body",
        "All card payments go through Stripe.\nNo other processor.",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [lore["command"], *lore["args"][:-1], "search", "Stripe payments", "--json"],
        cwd=elsewhere,
        env={**os.environ, **lore["env"]},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["title"] == "Payments use Stripe"

    cli("uninstall", "codex", env=env)
    assert config.read_text() == CODEX_CONFIG


def test_install_codex_into_an_empty_codex_home(cli, codex_home):
    env = {"CODEX_HOME": str(codex_home)}
    cli("install", "codex", env=env)
    assert (codex_home / "config.toml").stat().st_mode & 0o777 == 0o600
    cli("uninstall", "codex", env=env)
    assert not (codex_home / "config.toml").exists()


def test_instructions_block_goes_to_claude_md_and_agents_md(cli, codex_home):
    root = cli.cwd
    original = "# Team notes\n\nRun `make test` before pushing.\n"
    (root / "CLAUDE.md").write_text(original)
    env = {"CODEX_HOME": str(codex_home)}

    out = cli("install", "claude-code", "--instructions").stdout
    assert "updated CLAUDE.md: added Lore instructions" in out
    text = (root / "CLAUDE.md").read_text()
    assert text.startswith(original)
    block = text[len(original) :]
    assert block.strip().startswith(MD_BEGIN) and block.strip().endswith(MD_END)
    assert INSTRUCTIONS.strip() in block
    assert text.count(MD_BEGIN) == 1
    assert not (root / "AGENTS.md").exists()
    cli("install", "claude-code", "--instructions")
    assert (root / "CLAUDE.md").read_text() == text  # idempotent

    cli("install", "codex", "--instructions", env=env)
    agents = (root / "AGENTS.md").read_text()
    assert agents.startswith(MD_BEGIN) and INSTRUCTIONS.strip() in agents
    cli("install", "cursor", "--instructions")
    assert (root / "AGENTS.md").read_text() == agents  # one block, shared

    cli("uninstall", "claude-code")
    assert (root / "CLAUDE.md").read_text() == original
    out = cli("uninstall", "codex", env=env).stdout
    assert "kept the Lore block in AGENTS.md" in out  # cursor still uses it
    cli("uninstall", "cursor")
    assert not (root / "AGENTS.md").exists()


def test_install_bad_agent_and_malformed_config(cli):
    proc = cli("install", "vim", ok=False)
    assert proc.returncode != 0 and "vim" in proc.stderr
    (cli.cwd / ".mcp.json").write_text("{not json")
    proc = cli("install", "claude-code", ok=False)
    assert proc.returncode != 0 and ".mcp.json" in proc.stderr and "JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (cli.cwd / ".mcp.json").read_text() == "{not json"
    assert not (cli.cwd / ".claude").exists()  # nothing half-done


# ---------------------------------------------------------------- hooks

SESSION = "6a1f0c2e-1111-4222-8333-944455556666"


def transcript_events() -> tuple[list[dict], list[str]]:
    """A Claude Code transcript, and the assistant texts 002's rules keep."""
    events: list[dict] = []
    n = 0

    def event(kind: str, message: dict, ts: str) -> dict:
        nonlocal n
        n += 1
        item = {
            "type": kind,
            "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "parentUuid": None,
            "sessionId": SESSION,
            "timestamp": ts,
            "cwd": "/somewhere",
            "message": message,
        }
        events.append(item)
        return item

    def assistant(content, ts: str, mid: str) -> dict:
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return event(
            "assistant", {"id": mid, "role": "assistant", "model": "claude-sonnet-4", "content": content}, ts
        )

    def tool_error(text: str, ts: str) -> None:
        event(
            "user",
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text, "is_error": True}
                ],
            },
            ts,
        )

    keep = [
        "## OAuth refresh timeout\nThe refresh call goes through the corporate proxy.\n"
        "Set OAUTH_TIMEOUT=5 and retry once.",
        "Summary of the fix:\n- lowered the timeout\n- added one retry\n- documented it in README",
        "I'll run the tests now.\nThey take about a minute.",
    ]
    event(
        "user",
        {"role": "user", "content": "Why does the OAuth login\ntime out on staging?"},
        "2026-03-01T10:00:00Z",
    )
    assistant("Let me look at the auth module.", "2026-03-01T10:00:05Z", "msg_01")
    assistant(
        [
            {"type": "thinking", "thinking": "Maybe the proxy.\nCheck env."},
            {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "pytest"}},
        ],
        "2026-03-01T10:00:06Z",
        "msg_02",
    )
    for i, seconds in enumerate((30, 31, 29)):
        tool_error(
            f'Traceback (most recent call last):\n  File "auth.py", line {10 + i}, in refresh\n'
            f"TimeoutError: refresh timed out after {seconds} s",
            f"2026-03-01T10:00:{10 + i}Z",
        )
    assistant(keep[0], "2026-03-01T10:01:00Z", "msg_03")
    assistant("Done.", "2026-03-01T10:02:00Z", "msg_04")
    assistant(keep[1], "2026-03-01T10:03:00Z", "msg_05")
    assistant(
        [
            {"type": "text", "text": keep[2]},
            {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "make test"}},
        ],
        "2026-03-01T10:04:00Z",
        "msg_06",
    )
    events.append(dict(events[-1]))  # the same event written twice
    event("user", {"role": "user", "content": "Thanks!\nLooks good."}, "2026-03-01T10:05:00Z")
    return events, keep


def write_transcript(path: Path) -> list[str]:
    events, keep = transcript_events()
    lines = [json.dumps(e) for e in events]
    lines.insert(3, "this line is not JSON {")
    # Nested past what the parser (or what walks the event) can take: skipped like the line above,
    # where a RecursionError stopped the session's recording at this line for good.
    lines.insert(4, json.dumps({"type": "user", "x": "["}).replace('"["', "[" * 5000 + "]" * 5000))
    lines.insert(5, json.dumps({"type": "user", "x": "["}).replace('"["', "[" * 150 + "]" * 150))
    path.write_text("\n".join(lines) + "\n")
    return keep


def test_session_start_hook_adds_memories_relevant_to_the_branch(repo):
    root = repo.cwd
    repo(
        "add",
        "--type",
        "gotcha",
        "--title",
        "OAuth token refresh times out behind the proxy",
        "--body",
        "The OAuth refresh call hangs for 30 s behind the corporate proxy.\n"
        "Set OAUTH_TIMEOUT=5 and retry once.",
    )
    repo(
        "add",
        "--type",
        "decision",
        "--title",
        "Use Postgres for storage",
        "--body",
        "We chose Postgres over MySQL for JSONB support.\nMigrations live in db/.",
    )
    git(root, "checkout", "-q", "-b", "fix-oauth-timeout")

    payload = {
        "session_id": SESSION,
        "transcript_path": str(root.parent / "none.jsonl"),
        "cwd": str(root),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    proc, took = hook(repo, "session-start", payload)
    print(f"\nsession-start hook: {took:.2f} s")
    assert proc.returncode == 0 and proc.stderr == ""
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "OAuth token refresh times out behind the proxy" in context
    assert "OAUTH_TIMEOUT=5" in context
    # Recent decisions belong at session start too, but the branch's own gotcha comes first.
    assert context.index("OAuth token refresh times out") < context.index("Use Postgres for storage")
    assert "fix-oauth-timeout" in context
    assert any(" ok session-start: " in line for line in log_lines(root))

    # Claude Code runs hooks in the project, but the payload's cwd is what counts.
    (root / "src").mkdir()
    proc, _ = hook(repo, "session-start", {**payload, "cwd": str(root / "src")}, cwd=root.parent)
    assert proc.returncode == 0
    assert "OAuth token refresh" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_pre_compact_hook_captures_multiline_assistant_messages_once(repo, tmp_path):
    root = repo.cwd
    transcript = tmp_path / f"{SESSION}.jsonl"
    keep = write_transcript(transcript)
    payload = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(root),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": "",
    }

    proc, took = hook(repo, "pre-compact", payload)
    print(f"\npre-compact hook (capture): {took:.2f} s")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""

    session = memory_files(root, ".lore/local/session")
    assert sorted(body for _, body in session.values()) == sorted(keep)
    for meta, _body in session.values():
        assert meta["agent"] == "claude-code"
        assert meta["source"].startswith(f"transcript:{SESSION}:")
        assert str(meta["occurred_at"]).startswith("2026-03-01 10:0")
    titles = {meta["subject"] for meta, _ in session.values()}
    assert "OAuth refresh timeout" in titles  # the heading became the title

    # Nothing committed without a review (001's governance): the gotcha and the
    # digest go to the local daily tier.
    assert memory_files(root, ".lore/memory") == {}
    daily = memory_files(root, ".lore/local/daily")
    gotchas = [(meta, body) for meta, body in daily.values() if meta["type"] == "gotcha"]
    assert len(gotchas) == 1, daily
    meta, body = gotchas[0]
    assert "TimeoutError: refresh timed out after" in meta["subject"] and "TimeoutError" in body
    assert "3×" in body and meta["evidence_count"] == 3
    assert str(meta["occurred_at"]).startswith("2026-03-01 10:00:12")  # the third occurrence, not now
    lessons = [meta for meta, _ in daily.values() if meta.get("digest_class") == "resolution"]
    assert len(lessons) == 1 and lessons[0]["type"] == "lesson" and lessons[0]["evidence_refs"]
    assert "captured" in log_lines(root)[-1] and "1 gotchas" in log_lines(root)[-1]

    listed = repo.json(
        "list", "--tier", "session", "--agent", "claude-code"
    )  # an agent's session memories are its own
    assert len(listed) == len(keep)

    before = all_memories(root)
    proc, took = hook(repo, "pre-compact", payload)
    print(f"pre-compact hook (nothing new): {took:.2f} s")
    assert proc.returncode == 0 and proc.stdout == ""
    assert all_memories(root) == before  # idempotent: nothing new, nothing rewritten
    assert "0 captured" in log_lines(root)[-1]


@pytest.mark.parametrize(
    ("payload", "logged"),
    [
        ("this is not JSON", "skipped pre-compact: the hook's input is not JSON (Expecting value: "),
        (
            "[" * 100_000 + "]" * 100_000,
            "skipped pre-compact: the hook's input is not JSON (nested too deeply",
        ),
        ("[" * 150 + "]" * 150, "skipped pre-compact: the hook's input is not JSON (nested more than 100"),
        ("", "ok pre-compact: no transcript"),
        ("[1, 2, 3]", "skipped pre-compact: the hook's input is a JSON list, not an object; nothing done"),
        (
            json.dumps({"transcript_path": "/no/such/transcript.jsonl", "hook_event_name": "PreCompact"}),
            "ok pre-compact: no transcript",
        ),
        (json.dumps({"hook_event_name": "PreCompact"}), "ok pre-compact: no transcript"),
        (json.dumps({"transcript_path": 42}), "ok pre-compact: transcript_path is not a path"),
        (json.dumps({"cwd": 5}), "skipped pre-compact: 'cwd' is int, not a folder's path; nothing done"),
    ],
    ids=[
        *("not-json", "too-deep-to-parse", "too-deep", "empty", "not-an-object", "missing-transcript"),
        "no-transcript-path",
        *("path-not-string", "cwd-not-string"),
    ],
)
def test_broken_hook_payloads_exit_0_silently_and_are_logged(repo, payload, logged):
    """A payload that is not a JSON object is logged as skipped, with why; one
    that is (or none at all) is handled, saying what it lacked."""
    root = repo.cwd
    before_memories = all_memories(root)
    before_log = log_lines(root)
    proc, took = hook(repo, "pre-compact", payload)
    print(f"\npre-compact hook (broken payload): {took:.2f} s")
    assert proc.returncode == 0
    assert proc.stdout == "" and proc.stderr == ""
    log = log_lines(root)
    assert len(log) == len(before_log) + 1 and log[-1].split(" ", 1)[1].startswith(logged), log[-1]
    assert all_memories(root) == before_memories


def test_the_session_start_hook_leaves_consolidation_to_a_process_of_its_own(repo):
    """The hook consolidated the project's recent memories before the agent got
    its context: 8 s at 10,000 memories. It now prints the pack, then a detached
    `lore hook consolidate` archives old daily memories (and the rest of 001's
    session start), logged to hooks.log."""
    root = repo.cwd
    key = repo.json(
        "add", "-t", "Old daily", "-b", "A daily memory past its time.", "--occurred-at", "2020-01-02"
    )["id"]
    rel = repo.json("mv", key[:8], ".lore/local/daily/old-daily.md")["path"]
    payload = {"session_id": "s-bg", "cwd": str(root), "hook_event_name": "SessionStart", "source": "startup"}
    proc, _ = hook(repo, "session-start", payload)
    assert proc.returncode == 0 and proc.stderr == ""
    (started,) = [line for line in log_lines(root) if " session-start: " in line]
    assert "consolidating in the background" in started
    until(
        lambda: any(" ok consolidate: " in line for line in log_lines(root)), "the background consolidation"
    )
    (done,) = [line for line in log_lines(root) if " consolidate: " in line]
    assert "1 archived" in done, done
    assert not (root / rel).exists() and (root / ".lore/local/archive/old-daily.md").exists()


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit", "stop"])
def test_an_oversized_hook_payload_is_skipped_and_logged_with_why(repo, event):
    """Over the 16 MiB input limit: exit 0, nothing printed (a session-start
    pack would be context for an event that was never read), no session
    recorded, and the log says it was skipped and why, never "ok"."""
    root = repo.cwd
    repo("add", "-t", "Retry policy", "-b", "Retry three times with backoff.")
    small = {"session_id": SESSION, "cwd": str(root), "prompt": "Fix the retry policy."}
    huge = json.dumps({**small, "prompt": "x" * (16 * 1024 * 1024)})
    proc, _ = hook(repo, event, huge)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert log_lines(root)[-1].split(" ", 1)[1] == (
        f"skipped {event}: the hook's input is over the 16 MiB limit; nothing done"
    )
    assert not (root / ".lore/sessions").exists() or not any((root / ".lore/sessions").iterdir())
    proc, _ = hook(repo, event, small)  # the same event within the limit is handled
    assert proc.returncode == 0 and log_lines(root)[-1].split(" ", 1)[1].startswith(f"ok {event}: ")


def test_an_unreadable_hook_payload_is_skipped_and_logged(repo):
    """Input that is not text in the stream's encoding can't be read: skipped, with why."""
    import io

    from lore.integrations.hooks import run_hook

    root = repo.cwd
    stdin = io.TextIOWrapper(io.BytesIO(b'{"session_id": "\xff\xfe"}'), encoding="utf-8")
    assert run_hook("stop", str(root), stdin) == 0
    line = log_lines(root)[-1].split(" ", 1)[1]
    assert line.startswith("skipped stop: the hook's input can't be read ('utf-8' codec can't decode")
    assert line.endswith("; nothing done")


def test_stop_hook_and_hooks_outside_a_project_never_fail(repo, tmp_path):
    proc, took = hook(
        repo,
        "stop",
        {"session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": False, "cwd": str(repo.cwd)},
    )
    print(f"\nstop hook: {took:.2f} s")
    assert proc.returncode == 0 and proc.stdout == ""
    assert "stop" in log_lines(repo.cwd)[-1]

    nowhere = tmp_path / "not-a-project"
    nowhere.mkdir()
    for event in ("session-start", "pre-compact", "stop"):
        proc, _ = hook(repo, event, {"cwd": str(nowhere)}, cwd=nowhere)
        assert proc.returncode == 0 and proc.stdout == "", (event, proc.stdout, proc.stderr)


# ---------------------------------------------------------------- lore capture

AGENT_OUTPUT = """\
Running the test suite...
\x1b[32mall green\x1b[0m
<lore-memory type="lesson" tags="a,b" title="Retry the flaky socket test">
The socket test is flaky under load.
Retry it once before failing the build.
</lore-memory>
Some more chatter from the agent.
<lore-memory type="bogus" tags="x">
This block has a type Lore does not know.
</lore-memory>
<lore-memory type="gotcha" tags="db,migrations" applies_to="area:database">
Migrations must run before the seed script.
Otherwise the seed fails on missing tables.
</lore-memory>
Done.
"""


def test_capture_from_stdout_stores_blocks_reports_problems_and_dedups(repo):
    root = repo.cwd
    out_file = root.parent / "agent-output.txt"
    out_file.write_text(AGENT_OUTPUT)

    proc = repo("capture", "--from-stdout", str(out_file), ok=False)
    assert proc.returncode == 1  # a block left out: a pipeline notices (it exited 0)
    assert proc.stdout.strip() == "captured 2 new, 0 already known"
    problems = proc.stderr.strip().splitlines()
    assert len(problems) == 1, proc.stderr
    assert problems[0].startswith("lore: line 8:") and "bogus" in problems[0]

    stored = memory_files(root, ".lore/memory")
    assert len(stored) == 2
    by_type = {meta["type"]: (meta, body) for meta, body in stored.values()}
    lesson, body = by_type["lesson"]
    assert lesson["subject"] == "Retry the flaky socket test" and lesson["keywords"] == ["a", "b"]
    assert body == "The socket test is flaky under load.\nRetry it once before failing the build."
    gotcha, body = by_type["gotcha"]
    assert gotcha["keywords"] == ["db", "migrations"] and gotcha["applies_to"] == "area:database"
    assert body.startswith("Migrations must run before the seed script.")
    assert not (root / ".lore/local/session").exists() or not list((root / ".lore/local/session").iterdir())

    before = all_memories(root)
    time.sleep(1.1)  # a later run, as in real use (times have 1 s resolution)
    proc = repo("capture", "--from-stdout", str(out_file), ok=False)
    assert proc.stdout.strip() == "captured 0 new, 2 already known", (
        f"second capture of the same output was not deduplicated: {proc.stdout.strip()}"
    )
    assert all_memories(root) == before


def test_capture_from_stdin_as_json(repo):
    block = (
        '<lore-memory type="convention" tags="style" title="Black line length">\n'
        "Code is formatted with black at line length 100.\nCI checks it.\n</lore-memory>\n"
    )
    result = repo.json("capture", "--from-stdout", "-", input=block)
    assert result == {
        "created": 1,
        "existing": 0,
        "problems": [],
        "gotchas": 0,
        "evidence": 0,
        "digest": None,
    }
    assert repo.json("search", "black line length")[0]["title"] == "Black line length"


def test_capture_transcript_json_is_idempotent(repo, tmp_path):
    root = repo.cwd
    transcript = tmp_path / "session.jsonl"
    keep = write_transcript(transcript)

    first = repo.json("capture", "--transcript", str(transcript), "--agent", "codex")
    digest = first.pop("digest")
    assert first == {"created": len(keep), "existing": 0, "problems": [], "gotchas": 1, "evidence": 0}
    assert digest["error_pattern"] == 1 and digest["resolution"] == 1
    session = memory_files(root, ".lore/local/session")
    assert sorted(body for _, body in session.values()) == sorted(keep)
    assert {meta["agent"] for meta, _ in session.values()} == {"codex"}

    before = all_memories(root)
    second = repo.json("capture", "--transcript", str(transcript), "--agent", "codex")  # the same agent again
    assert second == {
        "created": 0,
        "existing": len(keep),
        "problems": [],
        "gotchas": 0,
        "evidence": 0,
        "digest": digest,
    }
    assert all_memories(root) == before


def test_capture_needs_a_source(repo, tmp_path):
    proc = repo("capture", ok=False)
    assert proc.returncode != 0 and "--transcript" in proc.stderr and "--from-stdout" in proc.stderr
    proc = repo("capture", "--transcript", str(tmp_path / "missing.jsonl"), ok=False)
    assert proc.returncode != 0 and "missing.jsonl" in proc.stderr
    # Lines none of which is a transcript's: "captured 0 new", exit 0, looked like nothing to learn.
    (tmp_path / "notes.jsonl").write_text("not json\n[1, 2]\n# README\n")
    proc = repo("capture", "--transcript", str(tmp_path / "notes.jsonl"), ok=False)
    assert proc.returncode == 2 and "notes.jsonl is not a transcript" in proc.stderr
    (tmp_path / "empty.jsonl").write_text("")
    assert repo.json("capture", "--transcript", str(tmp_path / "empty.jsonl"))["created"] == 0


def test_complete_writes_the_task_memory_from_its_commits_and_is_idempotent(cli, git_env):
    import subprocess

    root = cli.cwd

    def git(*args):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src/auth.py").write_text("def timeout():\n    return 5\n")
    (root / "README.md").write_text("unrelated\n")
    git("add", "-A")
    git("commit", "-qm", "initial import")
    (root / "src/auth.py").write_text("def timeout():\n    return 15\n")
    git("commit", "-qam", "jat-abc: raise the timeout to 15s rather than adding retries")
    (root / "README.md").write_text("other task\n")
    git("commit", "-qam", "jat-xyz: unrelated docs")

    first = cli.json(
        "complete",
        "jat-abc",
        "--title",
        "Fix OAuth timeout",
        "--summary",
        "Raised the timeout",
        "--lesson",
        "The provider is slow under load",
        "--agent",
        "FairBay",
    )
    assert first["created"] and first["files"] == ["src/auth.py"]
    text = (root / first["path"]).read_text()
    assert first["path"].endswith("-jat-abc-fix-oauth-timeout.md")
    for section in ("## Summary", "## Approach", "## Decisions", "## Key Files", "## Lessons"):
        assert section in text
    assert "rather than adding retries" in text and "`src/auth.py:2`" in text and "agent: FairBay" in text
    first_text = text

    again = cli.json(
        "complete",
        "jat-abc",
        "--title",
        "Fix OAuth timeout",
        "--summary",
        "Raised it to 15s",
        "--gotcha",
        "Retries hide outages",
    )
    assert not again["created"] and again["id"] == first["id"] and again["path"] == first["path"]
    assert len(list((root / ".lore/memory").glob("*.md"))) == 1
    text = (root / first["path"]).read_text()
    assert "Raised it to 15s" in text and "Raised the timeout" not in text  # the summary is the latest
    # What the first completion had learned stays (a rewrite dropped it, and nothing kept it).
    assert "The provider is slow under load" in text and "Retries hide outages" in text
    assert text.count("rather than adding retries") == first_text.count(
        "rather than adding retries"
    )  # once each
    assert cli.json("search", "timeout", "--mode", "bm25")[0]["id"] == first["id"]


def test_completing_again_keeps_what_a_person_wrote_into_the_task_memory(cli, git_env):
    """A second `lore complete` rewrote the body whole: a note someone had added
    (here with `lore edit --append`) was gone, with no copy anywhere. An edited
    body is now kept as it is, and the new completion's items are added to it."""
    first = cli.json(
        "complete", "T-7", "--title", "Fix it", "--summary", "Did the thing", "--lesson", "Old lesson"
    )
    path = cli.cwd / first["path"]
    cli("edit", first["id"][:8], "--append", "USER NOTE: keep the retry budget at 3.")
    again = cli.json(
        "complete", "T-7", "--title", "Fix it", "--summary", "Did more", "--lesson", "New lesson"
    )
    assert again["path"] == first["path"]
    text = path.read_text()
    assert "USER NOTE: keep the retry budget at 3." in text
    for item in ("- Did the thing", "- Did more", "- Old lesson", "- New lesson"):
        assert text.count(item + "\n") == 1, item
    assert text.index("- Old lesson") < text.index("- New lesson")  # added after the section's items
    # And on the next completion too (the edit still differs from what complete wrote).
    cli.json("complete", "T-7", "--title", "Fix it", "--summary", "Third")
    text = path.read_text()
    assert "USER NOTE: keep the retry budget at 3." in text and "- Third" in text
    # A body nobody edited is rewritten as before: its summary is the latest.
    fresh = cli.json("complete", "T-8", "--title", "Other", "--summary", "First try")
    cli.json("complete", "T-8", "--title", "Other", "--summary", "Second try")
    text = (cli.cwd / fresh["path"]).read_text()
    assert "Second try" in text and "First try" not in text


def test_two_tasks_with_the_same_summary_get_a_memory_each(cli, git_env):
    """`add` returns a memory of the same text instead of writing it again;
    another task's memory is not the same memory, whatever its text."""
    first = cli.json("complete", "T-77", "--title", "Bump dependencies", "--summary", "Bumped them all.")
    second = cli.json("complete", "T-80", "--title", "Bump dependencies", "--summary", "Bumped them all.")
    assert first["created"] and second["created"] and second["id"] != first["id"]
    assert "task: T-80" in cli.json("show", second["id"][:8])["content"]
    again = cli.json("complete", "T-80", "--title", "Bump dependencies", "--summary", "Bumped them all.")
    assert not again["created"] and again["id"] == second["id"]


def test_completions_of_one_task_at_once_write_one_memory(cli, git_env):
    """The task's memory is looked up and written under one lock: completions
    started together (here: all waiting while the test holds the memory write
    lock) write one memory, as they do one after the other."""
    from lore.locking import file_lock

    root = cli.cwd
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    runs = []
    with file_lock(root / ".lore/local/.write.lock"):
        for n in range(3):
            runs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "lore",
                        "complete",
                        "jat-race",
                        "--title",
                        "Race",
                        "--summary",
                        f"Summary number {n} of the task",
                        "--json",
                    ],
                    cwd=root,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        time.sleep(3)  # each has looked for the task's memory, or waits to
    outs = [run.communicate(timeout=60) for run in runs]
    assert all(run.returncode == 0 for run in runs), outs
    assert len({json.loads(out)["id"] for out, _ in outs}) == 1
    assert len(list((root / ".lore/memory").glob("*.md"))) == 1


def test_complete_says_how_many_files_in_plain_words(repo):
    """`lore complete` said "(1 files)"."""
    (repo.cwd / "a.py").write_text("def a():\n    return 1\n")
    git(repo.cwd, "add", "-A")
    git(repo.cwd, "commit", "-q", "-m", "T-1: add a")
    out = repo("complete", "T-1", "--title", "Add a", "--summary", "Added a.").stdout
    assert out.rstrip().endswith("(1 file)"), out
