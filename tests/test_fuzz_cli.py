"""Fuzzing the command line in process: argument vectors generated from the
real click command tree (options, values, junk, unicode, bytes that are not
UTF-8), run through `lore.interfaces.cli.main` against a real project.

Never a traceback: exit status 0, 1 or 2, and a failure is one line.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import KNOWN_OUTSIDE_SCOPE, check_cli, cli_argvs, fuzz_project, hostile_text, run_cli
from lore.interfaces.cli import cli

BOUNDED = settings(
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


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
