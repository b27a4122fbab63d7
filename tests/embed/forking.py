"""A program that embeds, forks, and lets the child end normally: what the
child's exit status is, or "hung" (killed after 30 s). Run in a fresh
interpreter, so the child's end is a real interpreter's end."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_WAIT = """
import os, sys, time
pid = os.fork()
if pid == 0:  # the child: the same text again, then a normal end (its interpreter frees what it holds)
    again = embed()
    sys.exit(0 if again.tobytes() == first.tobytes() else 3)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("exit", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("hung")
"""


def forked_child_outcome(prepare: str, env: dict[str, str] | None = None) -> str:
    """`prepare` (Python defining ``embed()``; it is called once before the
    fork as ``first``) then the fork; "exit 0" when the child embedded the
    same vector and ended, "exit N" or "hung" otherwise."""
    script = textwrap.dedent(prepare) + "\nfirst = embed()\n" + _WAIT
    run = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.stdout.strip() or run.stderr.strip()[-500:]
