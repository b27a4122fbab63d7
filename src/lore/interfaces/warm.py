"""Warm start: `lore` commands forked from a server that has Lore imported.

Agents run ``lore`` from hooks, once per prompt or task, and a fresh
interpreter spends most of a short command importing (numpy, onnxruntime,
click and Lore: ~0.45 s of a 0.6 s ``lore recall`` on a 2-core machine).
So the ``lore`` command is this small client first:

- If a warm server for this interpreter and environment is listening, the
  client hands it its argv, working directory, environment, umask and its
  own stdin, stdout and stderr (file descriptors, over a Unix socket). The
  server forks; the child becomes the command exactly as a fresh process
  would run it (same pipes or terminal, so output, ``isatty`` and exit
  status are a real run's), and the client passes signals on (Ctrl-C) and
  exits with the child's status.
- Otherwise the command runs in this process, as before, and afterwards a
  server is started in the background (its own session, output to
  ``<key>.log``) for the next command. The first command pays nothing for
  it but a spawn.

The server imports Lore's modules and the libraries its commands use, then
listens; it stops after ``LORE_WARM_IDLE`` seconds without a command
(default 600), and at once when one of its Lore source files, or the folder
of a library it loaded, changed (an upgrade, an edited checkout): the client
then runs the command itself.

A server is shared by every project of one user whose commands start the
same way: the key hashes the interpreter and its options, Lore's location and
the variables read when an interpreter or module starts (``PYTHON*``, locale,
``LORE_*``, thread settings); another value gets another server. Sockets live in a
folder only the user can enter (``$LORE_WARM_DIR``, else
``$XDG_RUNTIME_DIR/lore``, else ``/tmp/lore-<uid>``); one that is not
private is not used, and the server answers only its own user.

``LORE_WARM=0`` runs every command in-process and starts no server; so does
any system but Linux (numpy's and onnxruntime's libraries are not known to be
safe to fork elsewhere), and a process under restrictions its system's
processes do not have (no new privileges, more seccomp filters): a server's
fork would not share them. In a container whose every process has them
(Docker's seccomp profile), warm start works as elsewhere; there a client that
adds Landlock rules without changing either cannot be told apart.
Long-running and interactive commands (``mcp``, ``serve``, ``edit``) always
run in-process.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: the client imports nothing it can do without
if TYPE_CHECKING:
    import socket
    from typing import Any, BinaryIO

IDLE_SECONDS = 600
# Commands that stay in their own process: servers run for hours and
# editors want the terminal as their controlling one.
IN_PROCESS = frozenset({"mcp", "serve", "edit"})
_VALUE_OPTIONS = frozenset({"--project", "--agent"})  # global options that take a value
# Variables read when an interpreter or a module starts (not when a command runs).
_KEY_PREFIXES = ("PYTHON", "LC_", "LANG", "LORE_", "OPENBLAS_", "OMP_", "ORT_", "MKL_", "TOKENIZERS_", "LD_")
# Not in the key: the server's own settings, and what a command reads when it
# runs (the forked child takes the client's whole environment): a replay that
# moves LORE_NOW at every command started a server of ~350 MB per value.
_KEY_IGNORED = (
    "LORE_WARM",
    "LORE_WARM_IDLE",
    "LORE_NOW",
    "LORE_AGENT",
    "LORE_DEBUG",
    "LORE_PROJECT",
    "LORE_DATABASE_URL",
    "LORE_TOKEN",
    "LORE_MCP_TOKEN",
    "LORE_USERS",
)
_OFF = ("0", "off", "false", "no")
# sys.flags that a command line sets (all but safe_path: -P changes nothing for Lore).
_FLAGS = (
    "debug",
    "inspect",
    "interactive",
    "optimize",
    "dont_write_bytecode",
    "no_user_site",
    "no_site",
    "ignore_environment",
    "verbose",
    "bytes_warning",
    "quiet",
    "hash_randomization",
    "isolated",
    "dev_mode",
    "utf8_mode",
    "warn_default_encoding",
    "int_max_str_digits",
)
_LINE = 1 << 16
# How long a client waits for the server to take its command (it forks at once
# unless it is reading another client's request, which times out after 5 s).
_FIRST_REPLY = 30.0
_LOG_MAX = 1 << 20
_held: list[int] = []  # the server's descriptors a command's child closes
_pending: dict[int, socket.socket] = {}  # the server's commands running: child pid -> its client
_bound: list[int] = []  # the inode of the server's socket
# The signals a client passes on to its command (SIGINT, SIGTERM, SIGHUP, SIGQUIT:
# numbers, so the client imports nothing to name them).
_RELAYED = (2, 15, 1, 3)


def run() -> None:
    """The ``lore`` entry point: the warm server's child if one answers, else in-process."""
    argv = sys.argv[1:]
    warm = enabled() and command_of(argv) not in IN_PROCESS
    if warm:
        status = through_server(argv)
        if status is not None:
            sys.exit(status)
    from lore.interfaces.cli import main

    code = main(argv)
    if warm:
        start_server()
    sys.exit(code)


def enabled() -> bool:
    """Warm start is on unless ``LORE_WARM=0``; on Linux only (elsewhere numpy's
    and onnxruntime's libraries are not known to be safe to fork); never in a
    confined process (see :func:`_confined`)."""
    return (
        sys.platform.startswith("linux")
        and os.environ.get("LORE_WARM", "1").strip().lower() not in _OFF
        and not _confined(_credentials("self"))
    )


# Lines of /proc/<pid>/status that say what a process may do: its ids and
# groups, capabilities, and the restrictions a sandbox adds.
_CREDENTIALS = (
    "Uid",
    "Gid",
    "Groups",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
    "NoNewPrivs",
    "Seccomp",
    "Seccomp_filters",
)


def _credentials(pid: int | str) -> dict[str, str] | None:
    """The :data:`_CREDENTIALS` lines of a process's status (None: unreadable)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    found = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name in _CREDENTIALS:
            found[name] = " ".join(value.split())
    return found


def _confined(credentials: dict[str, str] | None) -> bool:
    """Whether a process runs under restrictions beyond its system's own (its
    pid namespace's first process: a container's seccomp profile applies to
    every process in it): no new privileges (what an unprivileged Landlock
    ruleset requires; Landlock's rules themselves cannot be read from
    outside) or more seccomp filters. Such a process runs its commands
    itself: a server it started would serve others under its restrictions."""
    if credentials is None:
        return True
    system = _credentials(1) or {}
    return any(
        _number(credentials.get(name)) > _number(system.get(name))
        for name in ("NoNewPrivs", "Seccomp", "Seccomp_filters")
    )


def _number(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def command_of(argv: list[str]) -> str | None:
    """The subcommand's name in `argv` (after global options), or None."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def key() -> str:
    """Which server may run this process's commands: same interpreter, same
    Lore, same start-up variables."""
    import hashlib

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    startup = sorted(
        (k, v) for k, v in os.environ.items() if k.startswith(_KEY_PREFIXES) and k not in _KEY_IGNORED
    )
    text = repr((sys.executable, here, sys.version, startup, _options()))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def _options() -> tuple[object, ...]:
    """The interpreter's options (``-O``, ``-E``, ``-s``, ``-X …``, ``-W …``...)
    but ``-P``, which the server is started with and changes nothing here."""
    flags = tuple(getattr(sys.flags, name, None) for name in _FLAGS)
    return flags, tuple(sys.warnoptions), tuple(sorted(sys._xoptions.items()))


def _interpreter_args() -> list[str]:
    """The command-line options that give a new interpreter this one's :func:`_options`."""
    import subprocess

    made = getattr(subprocess, "_args_from_interpreter_flags", None)  # what multiprocessing uses
    return list(made()) if made is not None else []


def folder(*, create: bool = True) -> str | None:
    """The private folder for the sockets (made if missing, with `create`), or None if it is not private."""
    base = os.environ.get("LORE_WARM_DIR")
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = os.path.join(runtime, "lore") if runtime else f"/tmp/lore-{os.getuid()}"
    try:
        if create:
            os.makedirs(base, mode=0o700, exist_ok=True)
        st = os.lstat(base)
    except OSError:
        return None
    import stat

    private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    return base if private else None


def through_server(argv: list[str]) -> int | None:
    """Run `argv` as a child of the warm server; its exit status, or None when
    no server took it: none listening, a standard stream closed, or the server
    refused it (its code changed; the client runs in another context)."""
    place = folder()
    if place is None:
        return None
    import signal

    # A signal that comes while the command is handed over (Ctrl-C before the
    # server has said which child runs it) is held, then passed on to the
    # child, or ends this process as it would have ended the command here.
    pending: list[int] = []
    saved = {
        signum: signal.signal(signum, lambda got, _frame: pending.append(got))
        for signum in _RELAYED
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    handed = _hand_over(argv, place)
    if isinstance(handed, tuple):
        return _wait(*handed, pending)
    for signum, handler in saved.items():
        signal.signal(signum, handler)
    return _ended_by(pending[0]) if pending else handed


def _ended_by(signum: int) -> int:
    """End as a command run here ends on `signum` before it began: Ctrl-C
    interrupts (status 130, as the CLI says), another signal kills this
    process with its default action."""
    import signal

    if signum == signal.SIGINT:
        return _interrupted()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum


def _interrupted() -> int:
    """Say what the CLI says of a command Ctrl-C stopped; its exit status. For a
    Ctrl-C that comes before the CLI's own handling began."""
    print("lore: interrupted", file=sys.stderr, flush=True)
    return 130


def _hand_over(argv: list[str], place: str) -> tuple[BinaryIO, int] | int | None:
    """Hand `argv` to the server: (its replies, the child's pid), an exit
    status (the server took the command but did not say which child runs it),
    or None (no server took it: run it here)."""
    import json
    import socket

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(os.path.join(place, key() + ".sock"))
        conn.settimeout(_FIRST_REPLY)
        replies = conn.makefile("rb")
        # First what the server checks (nothing handed over yet: any failure here runs the command here)...
        conn.sendall(json.dumps({"interrupts": not _ignores_interrupts(), **_context()}).encode() + b"\n")
        answer = json.loads(replies.readline() or b"{}")
        if not isinstance(answer, dict) or not answer.get("ok"):
            conn.close()
            return None
        # ... then the command and the streams.
        mask = os.umask(0)
        os.umask(mask)
        request = {"args": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask}
        payload = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n"
        sent = socket.send_fds(conn, [payload], [0, 1, 2])
    except (OSError, ValueError):
        conn.close()
        return None  # nothing was handed over: run it here
    # From here on the server may have forked the command: it never runs twice.
    why = ""
    try:
        conn.sendall(payload[sent:])
        line = replies.readline()
        why = "it closed the connection" if not line else f"it said {line[:60]!r}"
        first = json.loads(line or b"{}")
        conn.settimeout(None)  # the command takes as long as it takes
    except (OSError, ValueError) as err:
        why = why or f"{type(err).__name__}: {err}"
        first = {}
    if first.get("refused"):
        conn.close()
        return None
    pid = first.get("pid")
    if not isinstance(pid, int):
        print(
            f"lore: error: the warm server did not answer ({why or 'no pid'}); run the command again "
            "(LORE_WARM=0 runs commands without it)",
            file=sys.stderr,
        )
        return 1
    return replies, pid


def _ignores_interrupts() -> bool:
    """Whether this process was started with SIGINT ignored (a background job
    of a script): Python then leaves it so, and so does the forked command."""
    import signal

    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _context() -> dict[str, object]:
    """What a command inherits from its process besides argv, folder and
    environment, which the server compares with its own: a limited client (CPU
    mask, nice, resource limits) is refused and runs its command itself (a
    sandboxed one, in other namespaces, a chroot or a cgroup, the server sees
    by its pid)."""
    import resource

    limits = {
        name: list(resource.getrlimit(getattr(resource, name)))
        for name in dir(resource)
        if name.startswith("RLIMIT_")
    }
    return {"cpus": sorted(os.sched_getaffinity(0)), "nice": os.nice(0), "limits": limits}


def _wait(replies: BinaryIO, pid: int, pending: list[int]) -> int:
    """The child's exit status, passing our signals on to it meanwhile (first
    `pending`, those that came while it was handed over)."""
    import json
    import signal

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    def suspend(_signum: int, _frame: object) -> None:  # Ctrl-Z: stop the command, then ourselves
        forward(signal.SIGTSTP, None)
        os.kill(os.getpid(), signal.SIGSTOP)
        forward(signal.SIGCONT, None)  # resumed (fg, bg)

    for signum in _RELAYED:
        signal.signal(signum, forward)
    signal.signal(signal.SIGTSTP, suspend)
    for signum in pending:
        forward(signum, None)
    try:
        line = replies.readline()
    except OSError:
        line = b""
    try:
        status = json.loads(line).get("status") if line else None
    except ValueError:
        status = None
    if isinstance(status, int):
        if status < 0:  # killed by a signal: end the same way, as a shell expects
            try:
                signal.signal(-status, signal.SIG_DFL)
            except (OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
                pass
            os.kill(os.getpid(), -status)
        return status
    # The server stopped before the command did: wait for the command, then fail.
    import time

    while True:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.05)
    print("lore: error: the warm server stopped during the command; run it again", file=sys.stderr)
    return 1


def start_server() -> None:
    """Start a warm server in the background (if one is starting, it gives way)."""
    place = folder()
    if place is None:
        return
    import subprocess

    try:
        with open(os.path.join(place, key() + ".log"), "ab") as log:
            subprocess.Popen(
                [sys.executable, *_interpreter_args(), "-P", "-m", "lore.interfaces.warm", "serve"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                close_fds=True,
                cwd="/",  # each command runs in its client's folder; the server holds none
            )
    except OSError:
        pass


# -- the server -----------------------------------------------------------------------


def serve() -> None:
    """Run the warm server for this environment until it is idle (or its code changed)."""
    import fcntl
    import socket

    place = folder(create=False)  # gone (a test's, a cleaned /tmp): no server
    if place is None:
        return
    base = os.path.join(place, key())
    lock = open(base + ".lock", "a")  # noqa: SIM115  (held for the server's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server has it
    _held.append(lock.fileno())
    with open(base + ".log", "ab") as log:  # this server's: the last one's lines are old news
        log.truncate(0)
    preload()
    sources = _sources()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    address = base + ".sock"
    try:
        os.unlink(address)
    except FileNotFoundError:
        pass
    listener.bind(address)
    os.chmod(address, 0o600)
    _bound.append(os.stat(address).st_ino)
    listener.listen(64)
    _held.append(listener.fileno())
    print(f"server {os.getpid()}", file=sys.stderr, flush=True)
    try:
        _loop(listener, address, sources)
    finally:
        _unlink(address)
        listener.close()


def _release() -> None:
    """Let another server start for this key (the lock is the first descriptor held)."""
    import fcntl

    try:
        fcntl.flock(_held[0], fcntl.LOCK_UN)
    except (OSError, IndexError):
        pass


def _unlink(path: str) -> None:
    """Remove this server's socket, not one a newer server bound at the same path."""
    try:
        if _bound and os.stat(path).st_ino == _bound[0]:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _loop(listener: socket.socket, address: str, sources: dict[str, int]) -> None:
    """Accept commands and fork them; report each child's status to its client,
    and kill a child whose client is gone (killed: the command dies with it)."""
    import selectors
    import signal
    import time

    idle = float(os.environ.get("LORE_WARM_IDLE") or IDLE_SECONDS)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pending = _pending
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    _held.extend((wake_r, wake_w, selector.fileno()))
    last = time.monotonic()
    stopping = False
    while pending or not stopping:
        wait = None if pending else idle - (time.monotonic() - last)
        if wait is not None and wait <= 0:
            break
        for ready, _ in selector.select(wait):
            if ready.fileobj is listener:
                conn, _ = listener.accept()
                last = time.monotonic()
                if _sources() != sources:  # the code changed: stop taking commands
                    stopping = True
                    _refuse(conn, "stale")
                    selector.unregister(listener)
                    _unlink(address)  # the next client starts a server of the new code...
                    listener.close()
                    _release()  # ... which may take the lock while this one's commands end
                    continue
                pid = _start(conn)
                if pid is None:
                    conn.close()
                else:
                    pending[pid] = conn
                    selector.register(conn, selectors.EVENT_READ, pid)
            elif ready.fileobj == wake_r:
                try:
                    os.read(wake_r, 512)
                except BlockingIOError:
                    pass
            elif ready.data in pending:  # a client sends nothing more: readable means gone
                try:
                    os.kill(ready.data, signal.SIGKILL)
                except OSError:
                    pass
        _reap(pending, selector)


def _reap(pending: dict[int, socket.socket], selector: Any) -> None:
    import json

    while pending:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = pending.pop(pid, None)
        if conn is not None:
            selector.unregister(conn)
            try:
                conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            except OSError:
                pass
            conn.close()


def _refuse(conn: socket.socket, why: str) -> None:
    """Tell a client to run its command itself."""
    import json

    try:
        conn.sendall(json.dumps({"refused": why}).encode() + b"\n")
    except OSError:
        pass
    conn.close()


def _start(conn: socket.socket) -> int | None:
    """Read one request from `conn` and fork its command; the child's pid, or
    None when it was refused (and `conn` closed). The descriptors received are
    closed here whatever happens: a client's pipe held open would hang its reader."""
    import json
    import signal
    import socket

    conn.settimeout(5)
    fds: list[int] = []
    try:
        peer = _peer(conn)
        if peer is None or peer[1] != os.getuid():
            _refuse(conn, "peer")
            return None
        hello = json.loads(_line(conn))
        if not isinstance(hello, dict) or not _same_context(peer[0], hello):
            _refuse(conn, "context")
            return None
        conn.sendall(b'{"ok": true}\n')
        data, fds, _flags, _addr = socket.recv_fds(conn, _LINE, 3)
        while not data.endswith(b"\n") and len(data) < 256 * _LINE:
            more = conn.recv(_LINE)
            if not more:
                break
            data += more
        request = json.loads(data.decode("utf-8", "surrogateescape"))
        if len(fds) != 3 or not isinstance(request, dict):
            raise ValueError("not a request")
        request["interrupts"] = hello.get("interrupts", True)
        sys.stdout.flush()
        sys.stderr.flush()
        # The child starts with Ctrl-C held back until it has its own handler: a
        # client passes it on as soon as it knows the pid, and the server's
        # disposition (ignore) would lose it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pid = os.fork()
            if pid == 0:
                _child(request, fds, conn)  # never returns
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    except Exception as error:  # whatever it was, the client runs its command itself
        if not isinstance(error, (OSError, ValueError)):
            import traceback

            traceback.print_exc()
        _refuse(conn, "bad request")
        return None
    finally:
        for fd in fds:
            os.close(fd)
    # What ran, for `lore`'s maintainers and tests: the command's name, never its arguments (secrets).
    print(f"{pid} {command_of(request.get('args') or []) or '-'}", file=sys.stderr, flush=True)
    try:
        if os.fstat(2).st_size > _LOG_MAX:  # a server busy for weeks never idles out
            os.ftruncate(2, 0)
    except OSError:
        pass
    try:
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:
        pass
    return pid


def _line(conn: socket.socket) -> bytes:
    """One line from `conn`, read a byte at a time (what follows it is not ours to read)."""
    data = bytearray()
    while not data.endswith(b"\n") and len(data) < _LINE:
        byte = conn.recv(1)
        if not byte:
            break
        data += byte
    return bytes(data)


def _peer(conn: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the client (Linux's SO_PEERCRED)."""
    import socket
    import struct

    try:
        pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except (OSError, AttributeError):
        return None
    return pid, uid


def _same_context(pid: int, request: dict[str, Any]) -> bool:
    """Whether the client runs where and as the server does: the same
    namespaces (mounts, pids, network, users...), root, cgroup, ids, groups,
    capabilities, security label, CPUs, nice value and resource limits, and
    under no restriction of a sandbox (no new privileges, seccomp). A
    sandboxed client (bubblewrap, `unshare`, a chroot, Landlock, seccomp,
    dropped capabilities, `taskset`, `nice`, `prlimit`) would otherwise have
    its command run outside its sandbox."""

    def seen(path: str) -> str:
        try:
            if path.endswith("/cgroup") and "/ns/" not in path:  # the file; ns/cgroup is a link
                with open(path, encoding="utf-8", errors="replace") as handle:
                    return handle.read()
            return os.readlink(path)
        except OSError:
            return "?"

    places = ["root", "cgroup", *(f"ns/{n}" for n in ("mnt", "pid", "net", "user", "ipc", "uts", "cgroup"))]
    if any(seen(f"/proc/{pid}/{place}") != seen(f"/proc/self/{place}") for place in places):
        return False
    # The same ids, groups, capabilities and sandbox restrictions (no new
    # privileges, seccomp filters), the same security label.
    theirs = _credentials(pid)
    if theirs is None or theirs != _credentials("self"):
        return False
    if _label(pid) != _label("self"):
        return False
    return all(request.get(name) == value for name, value in _context().items())


def _label(pid: int | str) -> str:
    """A process's security module label (AppArmor, SELinux), "" without one."""
    try:
        with open(f"/proc/{pid}/attr/current", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip("\x00\n ")
    except OSError:
        return ""


def _child(request: dict[str, Any], fds: list[int], conn: socket.socket) -> None:
    """Become ``lore ARGS`` in the client's folder, environment and streams."""
    import signal
    import time

    try:
        conn.close()
        for fd in _held:
            os.close(fd)
        for other in list(_pending.values()):  # other commands' clients: not this one's to hold
            other.close()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        interrupts = request.get("interrupts", True)
        signal.signal(signal.SIGINT, signal.default_int_handler if interrupts else signal.SIG_IGN)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        # sys.stdout was made for the server's /dev/null: on a terminal, line by line as a fresh process's
        if os.isatty(1):
            sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(int(request["umask"]))
        time.tzset()  # the client's TZ: the C library read the server's at start
        sys.argv = ["lore", *request["args"]]
    except BaseException:  # what an interpreter does with an exception nothing caught
        import traceback

        traceback.print_exc()
        _exit(1)
    try:  # the Ctrl-C held back since the fork, if one came
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except KeyboardInterrupt:
        _exit(_interrupted())
    run_here(list(request["args"]))


def run_here(args: list[str]) -> None:
    """Run ``lore ARGS`` in this process, a fork of one that has Lore imported,
    and end the process as ``python -m lore`` would (never returns). The test
    suite's fork server (tests/forkserver.py) ends its commands so too."""
    code: object = 1
    try:
        from lore.interfaces.cli import main

        code = main(args)
    except SystemExit as done:
        code = done.code
    except KeyboardInterrupt:  # Ctrl-C before the CLI's own handling began (a forked child's first instants)
        code = _interrupted()
    except BaseException:  # what an interpreter does with an exception nothing caught
        import traceback

        traceback.print_exc()
        code = 1
    _exit(code)


def _exit(code: object) -> None:
    """An interpreter's exit, less tearing down the modules the server imported:
    the command's threads joined, its atexit handlers run, its streams flushed."""
    import atexit
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    os._exit(code)


# What the warm server imports: every Lore module but servers' (their commands
# run in-process), and the libraries commands import lazily.
SKIPPED_MODULES = ("lore.__main__", "lore.interfaces.mcp", "lore.interfaces.web")
LIBRARIES = ("numpy", "onnxruntime", "tokenizers", "sqlite3", "yaml", "psycopg", "rich.console", "rich.table")


def preload(skip: tuple[str, ...] = SKIPPED_MODULES, libraries: tuple[str, ...] = LIBRARIES) -> None:
    """Import what commands import (most of it lazily, inside the function that
    needs it) and build what they would build on first use, once per process,
    before forking them: the default model's tokenizer and its session for
    queries (on one thread: a session's thread pool does not survive a fork),
    the secret scanner's ~300 rules (read by any command that redacts, or
    indexes a file name with a long run of digits) and the default globs of
    code discovery (every freshness check reads them). The test suite's fork
    server (tests/forkserver.py) prepares so too, with every module."""
    import importlib
    import pkgutil

    import lore

    names = [m.name for m in pkgutil.walk_packages(lore.__path__, "lore.") if not m.name.startswith(skip)]
    for name in [*names, *libraries]:
        try:
            importlib.import_module(name)
        except Exception:  # an optional dependency: the command that needs it says so
            pass
    try:
        from lore.embed.local import DEFAULT_MAX_TOKENS, TOKENIZER, load_local
        from lore.embed.onnx_encoder import load_tokenizer
        from lore.index import discover
        from lore.secrets import redact_name, rules

        load_tokenizer(TOKENIZER, DEFAULT_MAX_TOKENS)
        load_local({}).open_for_queries()
        rules.load()
        redact_name("")
        discover.prepare()
    except Exception:
        pass


def _sources() -> dict[str, int]:
    """{path: mtime} of what the server's code is: every Lore module loaded, and
    the folder of every other top-level package loaded from outside the
    standard library (pip replaces a package's files when it upgrades it). A
    change means an upgrade or an edit: the server stops."""
    import sysconfig

    paths = sysconfig.get_paths()
    stdlib = paths["stdlib"]
    # A system Python keeps site-packages inside the standard library's folder.
    installed = tuple({paths["purelib"], paths["platlib"], *(p for p in sys.path if "-packages" in p)})
    stamps = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        if name == "lore" or name.startswith("lore."):
            watched = path
        elif "." not in name and (path.startswith(installed) or not path.startswith(stdlib)):
            watched = os.path.dirname(path) if os.path.basename(path).startswith("__init__.") else path
        else:
            continue
        try:
            stamps[watched] = os.stat(watched).st_mtime_ns
        except OSError:
            stamps[watched] = 0
    return stamps


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    serve()
