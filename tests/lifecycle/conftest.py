"""Fixtures for the lifecycle tests: projects opened with a clock the test moves."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import lore

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def at(days: float = 0, **more: float) -> str:
    """T0 + `days` as the ISO time memories use."""
    return (T0 + timedelta(days=days, **more)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    """The time the lifecycle reads (through LORE_NOW, as the CLI does)."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.set(0)

    def set(self, days: float) -> str:
        self.now = at(days)
        self.monkeypatch.setenv("LORE_NOW", self.now)
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    return Clock(monkeypatch)


@pytest.fixture
def proj(tmp_path, clock):
    """An initialised project (the clock at T0) and its root."""
    p = lore.init(tmp_path / "proj")
    yield p
    p.close()


def snapshot(root: Path, under: str = ".lore") -> dict[str, str]:
    """sha256 of every file under `root/under` (Markdown and ledger alike), by path."""
    base = root / under
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(base.rglob("*"))
        if p.is_file() and p.suffix == ".md"
    }


def memory_files(root: Path, folder: str) -> list[Path]:
    base = root / folder
    return sorted(base.rglob("*.md")) if base.is_dir() else []


@pytest.fixture
def cli_in():
    """Run the real CLI in a project folder (LORE_NOW passes through the environment); parsed JSON."""
    import json

    from conftest import CLI

    def run(root: Path, *args: str, input: str | None = None, ok: bool = True, raw: bool = False):
        proc = CLI(root)(*args, input=input, ok=ok)
        if raw or not ok:
            return proc
        return json.loads(proc.stdout)

    return run
