"""Fuzzing the command line in process: argument vectors generated from the
real click command tree (options, values, junk, unicode, bytes that are not
UTF-8), run through `lore.interfaces.cli.main` against a real project.

Never a traceback: exit status 0, 1 or 2, and a failure is one line.
"""

from __future__ import annotations

import os
import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lore
from fuzzing import KNOWN_OUTSIDE_SCOPE, check_cli, cli_argvs, hostile_text, run_cli
from lore.interfaces.cli import cli

BOUNDED = settings(
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def fuzz_project(root, git: bool = True) -> list[str]:
    """A project with a few memories (BM25 only, for speed); returns paths for path parameters."""
    root.mkdir()
    if git:
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        (root / "app.py").write_text("def handler():\n    return 42\n")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-qm", "first"], cwd=root, check=True)
    project = lore.init(root)
    config = root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    added = project.add(title="Use UTC", body="Store every time in UTC.", tags=["time"])
    project.add(
        title="Retry twice", body="Network calls retry twice.", tags=["net"], private=True, agent="a1"
    )
    project.close()
    (root / "notes.txt").write_text("A body from a file, long enough.\n")
    (root / "bad.txt").write_bytes(b"not \xff utf-8 body text\n")
    return [
        str(root / added.path),
        str(root / "notes.txt"),
        str(root / "bad.txt"),
        str(root),
        str(root / "missing.json"),
        "-",
        "/dev/null",
        os.fsdecode(os.fsencode(str(root)) + b"/caf\xe9.txt"),
    ]


def test_generated_command_lines_never_crash(tmp_path, git_env, monkeypatch):
    root = tmp_path / "proj"
    paths = fuzz_project(root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("EDITOR", "true")
    monkeypatch.setenv("VISUAL", "true")

    @BOUNDED
    @given(
        cli_argvs(cli, paths),
        st.binary(max_size=200) | hostile_text.map(lambda s: s.encode("utf-8", "replace")),
    )
    def run(argv, stdin):
        outcome = check_cli(run_cli(["--project", str(root), *argv], stdin))
        assert outcome is None or outcome in KNOWN_OUTSIDE_SCOPE, (argv, outcome)

    run()
