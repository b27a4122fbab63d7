"""Helpers shared by the session tests (real projects, real files, real subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import lore
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
    """A fresh store over the project's current settings (as a new process would see them)."""
    return lore.open(root).sessions


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
