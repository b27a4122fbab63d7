"""The suite's forked `lore` runs (tests/forkserver.py) behave as `python -m lore` does."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import forkserver

pytestmark = pytest.mark.storage_independent  # checks the test harness; the SQLite pass runs it


def _both(cwd, *args: str, input: str | None = None, env: dict[str, str] | None = None):
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    forked = forkserver.Server.get().run(list(args), cwd=cwd, env=full_env, input=input, timeout=60)
    fresh = forkserver.fresh_run(list(args), cwd=cwd, env=full_env, input=input, timeout=60)
    return forked, fresh


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--json"),  # output
        ("show", "no-such-memory"),  # a one-line error and its exit status
        ("search",),  # a usage error: exit 2
        ("no-such-command",),
    ],
)
def test_a_forked_run_prints_and_exits_as_a_fresh_interpreter_does(cli, args):
    cli("add", "--title", "Walrus cache", "--body", "Keep the walrus cache small and cold.")
    forked, fresh = _both(cli.cwd, *args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_a_forked_run_reads_stdin_and_takes_its_environment_and_folder(cli):
    body = "A body from standard input, long enough to keep.\n"
    forked, fresh = _both(cli.cwd, "add", "--title", "From stdin", "--body-file", "-", input=body)
    assert forked.returncode == 0, forked.stderr
    assert fresh.returncode == 0, fresh.stderr
    shown = forkserver.fresh_run(
        ["list", "--json"], cwd=cli.cwd, env=dict(os.environ), input=None, timeout=60
    )
    # The forked run went first and stored the body it read; the fresh one found it stored.
    assert json.loads(shown.stdout)[0]["summary"] == body.strip()
    # An agent name from the environment, and the folder the command runs in.
    sub = cli.cwd / "deep" / "er"
    sub.mkdir(parents=True)
    forked, fresh = _both(
        sub,
        "add",
        "--title",
        "Private note",
        "--body",
        "Only this agent sees it.",
        "--private",
        env={"LORE_AGENT": "ada"},
    )
    assert forked.returncode == fresh.returncode == 0, (forked.stderr, fresh.stderr)
    forked, fresh = _both(sub, "list", "--json", env={"LORE_AGENT": "ada"})
    assert forked.stdout == fresh.stdout and forked.stdout.count("Private note") == 1
    forked, fresh = _both(sub, "list", "--json")  # another agent does not see it
    assert forked.stdout == fresh.stdout and "Private note" not in forked.stdout


def test_an_uncaught_error_under_lore_debug_is_a_traceback_and_exit_1(cli, tmp_path):
    forked, fresh = _both(cli.cwd, "show", "x", env={"LORE_PROJECT": str(tmp_path / "nowhere")})
    assert forked.returncode == fresh.returncode != 0
    assert forked.stderr == fresh.stderr
    forked, fresh = _both(
        cli.cwd, "show", "x", env={"LORE_PROJECT": str(tmp_path / "nowhere"), "LORE_DEBUG": "1"}
    )
    assert forked.returncode == fresh.returncode == 1
    assert forked.stderr.startswith("Traceback") and fresh.stderr.startswith("Traceback")
    assert forked.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]


def test_an_environment_the_interpreter_reads_at_start_runs_a_fresh_interpreter(monkeypatch):
    forkserver.Server.get()
    assert forkserver.needs_exec({**os.environ, "PYTHONIOENCODING": "latin-1"})
    assert forkserver.needs_exec(
        {k: v for k, v in os.environ.items() if not k.startswith("LC_")} | {"LC_ALL": "C"}
    )
    assert not forkserver.needs_exec({**os.environ, "LORE_AGENT": "ada"})
    # Set in this process after the server started: the server still runs without it.
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    assert forkserver.needs_exec(dict(os.environ))


def test_a_command_past_its_timeout_is_killed(cli):
    server = forkserver.Server.get()
    env = {**os.environ, "NO_COLOR": "1"}
    with pytest.raises(subprocess.TimeoutExpired):  # a server on a loopback port runs until it is stopped
        server.run(["serve", "--port", "0"], cwd=cli.cwd, env=env, input=None, timeout=3)
    assert server.run(["list", "--json"], cwd=cli.cwd, env=env, input=None, timeout=60).returncode == 0


def test_a_launched_command_takes_the_launchers_pipes_folder_and_environment_and_exit_status(cli):
    """What an MCP client starts (forkserver.lore_command) is the command itself
    to the client: its stdin, stdout, stderr, exit status; a signal reaches it."""
    cli("add", "--title", "Walrus cache", "--body", "Keep the walrus cache small and cold.")
    command, args = forkserver.lore_command(["list", "--json"])
    assert args[:3] == ["-S", "-P", str(forkserver.Path(forkserver.__file__).with_name("forklaunch.py"))]
    env = {**os.environ, "NO_COLOR": "1"}
    launched = subprocess.run(
        [command, *args], cwd=cli.cwd, env=env, capture_output=True, text=True, timeout=60
    )
    fresh = forkserver.fresh_run(["list", "--json"], cwd=cli.cwd, env=env, input=None, timeout=60)
    assert (launched.returncode, launched.stdout, launched.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )
    missing = subprocess.run(
        [command, *forkserver.lore_command(["show", "nothing-here"])[1]],
        cwd=cli.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "no memory" in missing.stderr
    # A long-lived command (an MCP server reading stdin) ends on the launcher's SIGTERM.
    server = subprocess.Popen(
        [command, *forkserver.lore_command(["mcp"])[1]],
        cwd=cli.cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        server.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        server.terminate()
        assert server.wait(timeout=30) != 0
    finally:
        server.kill()
        server.wait()
    # With LORE_TEST_EXEC=1, or start-up variables to set, it is the real interpreter.
    assert forkserver.lore_command(["mcp"], {"PYTHONPATH": "/x"})[1] == ["-m", "lore", "mcp"]
