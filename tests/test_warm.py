"""The `lore` command's warm start (lore.interfaces.warm): commands forked from
a server that has Lore imported print, read and exit as in their own process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import lore
from lore.interfaces import warm

pytestmark = pytest.mark.storage_independent
WAIT = 120  # seconds a server may take to start or stop on a loaded machine (never a figure)


@pytest.fixture
def place():
    """A private socket folder of a short path (a socket's path is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="lw-"))
    folder.chmod(0o700)
    yield folder
    for pid in {*servers(folder), *of_folder(folder)}:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    with lore.init(root) as project:
        project.add(
            title="Store times in UTC",
            body="Every timestamp is stored in UTC and converted only in the UI.",
            type="convention",
        )
    return root


def of_folder(place: Path) -> list[int]:
    """Processes whose LORE_WARM_DIR is `place` (a server still importing has no log line yet)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if (
            f"LORE_WARM_DIR={place}".encode() in environ
            and entry.name.isdigit()
            and int(entry.name) != os.getpid()
        ):
            found.append(int(entry.name))
    return found


def waiting_on_stdin(pid: int) -> bool:
    """Whether `pid` sleeps reading a pipe (its stdin, for the commands here).
    Where the kernel hides wait channels ("0"): asleep, and started 3 s ago or more."""
    try:
        channel = Path(f"/proc/{pid}/wchan").read_text()
        if channel not in ("", "0"):
            return "pipe" in channel
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, in ticks since boot
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return fields[0] == "S" and uptime - started >= 3
    except (OSError, ValueError, IndexError):
        return False


def lore_env(place: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "LORE_WARM": "1", "LORE_WARM_DIR": str(place), "NO_COLOR": "1", **extra}
    return env


def run(args, cwd, env, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-P", "-m", "lore", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
        **kwargs,
    )


def served(place: Path) -> list[str]:
    """The commands the folder's servers ran, in order."""
    lines = [line for log in sorted(place.glob("*.log")) for line in log.read_text().splitlines()]
    return [line.split()[1] for line in lines if not line.startswith("server ")]


def until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT} s for {what}"
        time.sleep(0.1)


def warm_up(repo: Path, place: Path, env: dict[str, str]) -> None:
    """Run a first command (in its own process: no server yet) and wait for the server it starts."""
    assert run(["stats", "--json"], repo, env).returncode == 0
    until(lambda: any(place.glob("*.sock")), "the warm server to listen")


def test_commands_through_the_warm_server_print_read_and_exit_as_in_their_own_process(repo, place):
    env = lore_env(place)
    cold = {**env, "LORE_WARM": "0"}
    warm_up(repo, place, env)
    assert served(place) == []

    for args in (
        ["search", "UTC timestamps", "--json"],
        ["list"],
        ["show", "no-such-memory"],
        ["recall", "x", "--frobnicate"],
    ):
        alone, forked = run(args, repo, cold), run(args, repo, env)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        )
    assert served(place) == ["search", "list", "show", "recall"]
    assert run(["show", "no-such-memory"], repo, env).returncode != 0

    # stdin is the client's; the folder is the client's (a subfolder finds the project)
    added = run(
        ["add", "--type", "lesson", "--title", "Read stdin"],
        repo / "src",
        env,
        input="The warm server's child reads the client's own stdin.\n",
    )
    assert added.returncode == 0, added.stderr
    listed = run(["list", "--json"], repo, cold)
    assert "Read stdin" in listed.stdout
    assert served(place)[-1] == "add"


def test_interactive_and_long_running_commands_stay_in_their_own_process(repo, place):
    env = lore_env(place)
    warm_up(repo, place, env)
    editor = repo / "editor.py"
    editor.write_text("import sys\nprint('edited', file=sys.stderr)\n")
    memory = next((repo / ".lore" / "memory").glob("*.md"))
    edited = run(["edit", memory.stem], repo, {**env, "EDITOR": f"{sys.executable} {editor}"})
    assert edited.returncode == 0 and "edited" in edited.stderr, edited.stderr
    run(["--project", str(repo), "list"], repo, env)
    assert served(place) == ["list"]
    # an interpreter option the server was not started with, or a client limited
    # otherwise (nice, taskset, prlimit, a sandbox): not commands for it
    for prefix in ([sys.executable, "-X", "dev"], ["nice", "-n", "5", sys.executable]):
        other = subprocess.run(
            [*prefix, "-P", "-m", "lore", "list"], cwd=repo, env=env, capture_output=True, text=True
        )
        assert other.returncode == 0 and "Store times in UTC" in other.stdout, prefix
        assert served(place) == ["list"], prefix
    assert [
        warm.command_of(a) for a in (["--agent", "me", "edit", "x"], ["--version"], ["--project", "p", "mcp"])
    ] == [
        "edit",
        None,
        "mcp",
    ]
    assert {"edit", "mcp", "serve"} <= warm.IN_PROCESS


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv (util-linux)")
def test_a_client_under_a_sandbox_s_restrictions_is_refused(repo, place):
    """A client with no new privileges (what Landlock and seccomp sandboxes set)
    or fewer capabilities had its command run by the server's fork, outside its
    sandbox: a file it could not read was indexed and shown."""
    sandboxes = [["setpriv", "--no-new-privs"]]
    if os.geteuid() == 0:  # dropping a capability takes CAP_SETPCAP
        sandboxes.append(["setpriv", "--bounding-set", "-dac_read_search", "--inh-caps", "-dac_read_search"])
    env = lore_env(place)
    warm_up(repo, place, env)
    for sandbox in sandboxes:
        sleeper = subprocess.Popen([*sandbox, "sleep", "60"])
        plain = subprocess.Popen(["sleep", "60"])
        try:
            for pid in (sleeper.pid, plain.pid):  # exec'd: its /proc shows sleep's credentials
                until(
                    lambda pid=pid: Path(f"/proc/{pid}/comm").read_text().strip() == "sleep", "sleep to start"
                )
            # the server's own check, on the pid a client's socket names
            assert not warm._same_context(sleeper.pid, warm._context()), sandbox
            assert warm._same_context(plain.pid, warm._context())
            # restrictions beyond the system's own: no warm start of its own either
            if sandbox[1] == "--no-new-privs":
                assert warm._confined(warm._credentials(sleeper.pid))
            assert not warm._confined(warm._credentials(plain.pid)) or warm._confined(
                warm._credentials("self")
            )
        finally:
            sleeper.kill()
            plain.kill()
        listed = subprocess.run(
            [*sandbox, sys.executable, "-P", "-m", "lore", "list"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        assert listed.returncode == 0 and "Store times in UTC" in listed.stdout, listed.stderr
    assert served(place) == [], served(place)  # each ran in its own process


def waiting_add(repo: Path, env: dict[str, str], title: str, **streams) -> subprocess.Popen:
    """`lore add --title TITLE` started with stdin a pipe left open: it waits for its body."""
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "lore", "add", "--type", "lesson", "--title", title],
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        **({"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True} | streams),
    )


def interrupted(repo: Path, env: dict[str, str], command) -> tuple[int, str]:
    """(exit status, stderr) of a command waiting on stdin when Ctrl-C reaches
    it; `command(client)`: the pid of the process running the command."""
    client = waiting_add(repo, env, "Waits")
    until(lambda: waiting_on_stdin(command(client)), "the command to wait for its body on stdin")
    client.send_signal(signal.SIGINT)
    # stdin stays open until the command ends: it is the signal, not end of file, that stops it
    # (the client passes the signal on, so the command gets it a moment later)
    client.wait(timeout=WAIT)
    _out, err = client.communicate(timeout=WAIT)
    return client.returncode, err


def forked_pid(place: Path, command: str) -> int:
    """The pid of the last `command` the folder's server forked (0 before it has)."""
    lines = [line.split() for log in place.glob("*.log") for line in log.read_text().splitlines()]
    return next((int(pid) for pid, name in reversed(lines) if pid != "server" and name == command), 0)


@pytest.fixture
def interruptible():
    """Ctrl-C reaches the commands started here (this test may run as a script's
    background job, whose SIGINT is ignored: a process started from it keeps that)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_reaches_the_command(repo, place, interruptible):
    env = lore_env(place)
    alone = interrupted(repo, {**env, "LORE_WARM": "0"}, lambda client: client.pid)
    warm_up(repo, place, env)
    forked = interrupted(repo, env, lambda _client: forked_pid(place, "add"))
    assert forked == alone, forked[1]
    assert alone[0] == 130 and "lore: interrupted" in alone[1], alone  # as every Ctrl-C ends
    assert "Waits" not in run(["list"], repo, {**env, "LORE_WARM": "0"}).stdout


def test_ctrl_c_while_the_command_is_handed_over_reaches_it(repo, place, interruptible):
    """Ctrl-C before the server has said which child runs the command (here the
    server is still reading another client's request) raised KeyboardInterrupt
    in the client: a traceback, and the command ran on without its signal. The
    client now holds the signal and passes it on."""
    import socket

    env = lore_env(place)
    warm_up(repo, place, env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(str(next(place.glob("*.sock"))))  # the server waits (5 s) for its request
        client = waiting_add(repo, env, "Handed over")
        until(lambda: _connected(client.pid), "the client to reach the server")
        client.send_signal(signal.SIGINT)
        client.wait(timeout=WAIT)
    _out, err = client.communicate(timeout=WAIT)
    assert "Traceback" not in err, err
    assert client.returncode in (1, 130) and ("abort" in err or "interrupt" in err), (client.returncode, err)
    assert "Handed over" not in run(["list"], repo, {**env, "LORE_WARM": "0"}).stdout


def _connected(pid: int) -> bool:
    """Whether process `pid` has a Unix socket open (the warm client, connected)."""
    try:
        return any(os.readlink(fd).startswith("socket:") for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


def test_a_killed_client_takes_its_command_with_it(repo, place):
    env = lore_env(place)
    warm_up(repo, place, env)
    client = waiting_add(
        repo, env, "Orphan", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=False
    )
    until(lambda: waiting_on_stdin(forked_pid(place, "add")), "the command to wait on stdin")
    child = forked_pid(place, "add")
    client.kill()
    client.wait(timeout=WAIT)
    # its stdin still open here (this test holds it): nothing but the server ends the command
    until(lambda: not alive(child), "the command to end with its client")
    client.stdin.close()


def test_a_request_the_server_refuses_leaves_no_stream_of_the_client_open(place):
    """A garbled request: the server closes the descriptors it received (a
    pipe it held open would hang the client's reader)."""
    import json
    import socket

    env = lore_env(place)
    tmp = Path(tempfile.mkdtemp(prefix="lw-repo-"))
    try:
        lore.init(tmp).close()
        warm_up(tmp, place, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (address,) = place.glob("*.sock")
    read, write = os.pipe()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(address))
    socket.send_fds(conn, [b"{not json\n"], [write, write, write])
    os.close(write)
    reply = json.loads(conn.makefile("rb").readline())
    assert reply == {"refused": "bad request"}
    with os.fdopen(read, "rb") as pipe:  # end of file: no copy of its write end is left
        assert pipe.read() == b""
    conn.close()


def test_an_idle_server_stops_and_removes_its_socket(repo, place):
    env = lore_env(place, LORE_WARM_IDLE="1")
    warm_up(repo, place, env)
    until(lambda: not any(place.glob("*.sock")), "the idle server to stop")
    # the next command runs in its own process (and starts a server again)
    assert "Store times in UTC" in run(["list"], repo, env).stdout


@pytest.mark.parametrize("change", ["lore", "library"])
def test_a_server_whose_code_changed_stops_and_the_command_runs_in_its_own_process(
    repo, place, tmp_path, change
):
    import yaml

    copy = tmp_path / "site"
    shutil.copytree(Path(lore.__file__).parent, copy / "lore", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(Path(yaml.__file__).parent, copy / "yaml", ignore=shutil.ignore_patterns("__pycache__"))
    env = lore_env(place, PYTHONPATH=str(copy))
    warm_up(repo, place, env)
    assert run(["list"], repo, env).returncode == 0
    assert served(place) == ["list"]
    (old,) = servers(place)
    # a command still running through it (waiting for its body)
    running = waiting_add(repo, env, "Runs on")
    until(lambda: waiting_on_stdin(forked_pid(place, "add")), "the command to wait on stdin")
    if change == "lore":  # an edited checkout, or an upgrade of Lore
        later = time.time() + 10
        os.utime(copy / "lore" / "settings.py", (later, later))
    else:  # pip upgrading a library: its folder's files replaced
        time.sleep(0.05)  # a new folder mtime even on a coarse clock
        (copy / "yaml" / "added_by_an_upgrade.py").write_text("")
    proc = run(["list"], repo, env)  # refused at once, though the stale server still has a command
    assert proc.returncode == 0 and "Store times in UTC" in proc.stdout
    out, err = running.communicate("The command the stale server ran goes on to its end.\n", timeout=WAIT)
    assert running.returncode == 0, err
    until(lambda: not alive(old), "the stale server to stop")
    # Not run by the stale server: its log shows the first `list` only, or a new
    # server (started by the command that ran in its own process) emptied it.
    assert served(place) in ([], ["list", "add"])
    # that command started a server of the new code (stopped with the test)
    until(lambda: servers(place) not in ([], [old]), "the new server")


def servers(place: Path) -> list[int]:
    """The pids of the servers whose logs are in `place`."""
    lines = [line for log in place.glob("*.log") for line in log.read_text().splitlines()]
    return [int(line.split()[1]) for line in lines if line.startswith("server ")]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie until its parent (the session that started it is gone: init) reaps it
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_a_folder_others_may_enter_is_not_used(repo, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    proc = run(["list"], repo, lore_env(shared))
    assert proc.returncode == 0 and "Store times in UTC" in proc.stdout
    assert list(shared.iterdir()) == []  # no socket, lock or log: no server was started


def test_one_server_serves_every_clock_and_agent_and_each_command_sees_its_own(repo, place):
    """The server's key held every LORE_ variable: a replay moving LORE_NOW at
    each command started a server of ~350 MB per value. What a command reads
    when it runs is the client's own, in the forked child."""
    env = lore_env(place)
    warm_up(repo, place, env)
    for day, agent in (("2025-01-02", "ada"), ("2025-01-03", "bob")):
        forked = run(
            ["add", "--private", "--title", f"Note of {agent}", "--body", f"Written by {agent} on {day}."],
            repo,
            {**env, "LORE_NOW": f"{day}T00:00:00Z", "LORE_AGENT": agent},
        )
        assert forked.returncode == 0, forked.stderr
    assert served(place) == ["add", "add"]
    assert len(list(place.glob("*.sock"))) == 1
    mine = run(["list", "--json"], repo, {**env, "LORE_AGENT": "bob"})
    assert [m["title"] for m in json.loads(mine.stdout) if m["title"].startswith("Note of")] == [
        "Note of bob"
    ]
