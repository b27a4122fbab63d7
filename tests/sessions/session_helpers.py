"""Helpers shared by the session tests (real projects, real files, real subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from lore.project import Project
from lore.sessions import SessionStore


def sessions_config(root: Path, soft: int, hard: int, protected: int, summary: str = "") -> None:
    """Set `[sessions]` limits (and an optional `[sessions.summary]` body) in config.toml."""
    config = root / ".lore" / "config.toml"
    text = config.read_text()
    text += (
        f"\n[sessions]\nsoft_limit_tokens = {soft}\nhard_limit_tokens = {hard}\n"
        f"protected_recent_tokens = {protected}\n"
    )
    if summary:
        text += "\n[sessions.summary]\n" + textwrap.dedent(summary)
    config.write_text(text)


def open_store(root: Path) -> SessionStore:
    """A fresh store over the project's current settings (as a new process would see
    them), seeing every agent's sessions."""
    return SessionStore(Project.find(root))


def log_lines(root: Path, session_id: str) -> list[bytes]:
    return (root / ".lore" / "sessions" / session_id / "session.jsonl").read_bytes().split(b"\n")


def metadata(root: Path, session_id: str) -> dict:
    return json.loads((root / ".lore" / "sessions" / session_id / "metadata.json").read_text())


def run_python(code: str, *, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a Python snippet in a fresh interpreter (a real, separate process)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# A short Claude Code transcript: a prompt, a tool call and its result (session "cc-1").
CLAUDE_JSONL = "".join(
    json.dumps(line) + "\n"
    for line in (
        {
            "type": "user",
            "sessionId": "cc-1",
            "uuid": "a1",
            "timestamp": "2026-03-01T10:00:00Z",
            "message": {"role": "user", "content": "List the files"},
        },
        {
            "type": "assistant",
            "sessionId": "cc-1",
            "uuid": "a2",
            "timestamp": "2026-03-01T10:00:01Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
                ],
            },
        },
        {
            "type": "user",
            "sessionId": "cc-1",
            "uuid": "a3",
            "timestamp": "2026-03-01T10:00:02Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
            },
        },
    )
)
