"""Shared fixtures: real projects in temp dirs, and the CLI run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import lore

FIXTURES = Path(__file__).parent / "fixtures"

# Tests never touch the user's real cache (the re-quantised model lives here, shared by test runs).
os.environ.setdefault("LORE_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"lore-test-cache-{os.getuid()}"))
# `lore` on PATH, as after `pip install`: agent configs name the command, not a path.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture
def project(tmp_path) -> lore.Lore:
    """An initialised project with no memories."""
    p = lore.init(tmp_path / "proj")
    yield p
    p.close()


class CLI:
    """Runs `python -m lore` in a subprocess, in the project folder."""

    def __init__(self, cwd: Path):
        self.cwd = cwd

    def __call__(
        self,
        *args: str,
        input: str | None = None,
        ok: bool = True,
        cwd: Path | None = None,
        env: dict | None = None,
    ) -> subprocess.CompletedProcess:
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
        stdin = None if input is not None else subprocess.DEVNULL
        proc = subprocess.run(
            [sys.executable, "-m", "lore", *args],
            cwd=cwd or self.cwd,
            input=input,
            stdin=stdin,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=120,
        )
        if ok and proc.returncode != 0:
            raise AssertionError(
                f"lore {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str, **kwargs):
        return json.loads(self(*args, "--json", **kwargs).stdout)


@pytest.fixture
def cli(tmp_path) -> CLI:
    root = tmp_path / "repo"
    root.mkdir()
    runner = CLI(root)
    runner("init")
    return runner


@pytest.fixture
def git_env(monkeypatch, tmp_path):
    """Isolate git from the user's config and give it an identity."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path))
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ada Lovelace")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ada@example.com")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo(tmp_path, git_env) -> Path:
    """An empty git repository on branch main (modules may define their own `repo`)."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    return root
