"""Run `lore ARGS` as a fork of a test worker's fork server (tests/forkserver.py).

``python -S -P forklaunch.py SOCKET ARGS...``: for clients that start a
process themselves (an MCP client starts its server). The command runs with
this process's stdin, stdout, stderr, folder and environment; signals sent
here go on to it, and this process exits with its exit status.
"""

import json
import os
import signal
import socket
import sys

_MESSAGE = 1 << 20


def main() -> int:
    address, args = sys.argv[1], sys.argv[2:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(address)
    request = {"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
    pid = json.loads(sock.recv(_MESSAGE))["pid"]

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:
        try:
            reply = sock.recv(_MESSAGE)
            break
        except InterruptedError:
            continue
    if not reply:  # the server went away
        return 1
    return json.loads(reply)["status"]


if __name__ == "__main__":
    sys.exit(main())
