"""Knowing cheaply whether anything under some folders changed (Linux inotify).

A long-running process (the MCP server) must pick up hand edits before
answering, but stat-ing every memory file on every call costs ~10 ms per
1,000 files. The kernel queues an inotify event before the writing syscall
returns, so "no event since the last sync" means "nothing changed": the
check becomes one non-blocking read. Where inotify is unavailable (macOS,
a watch limit reached) :meth:`Watcher.changed` always answers True and the
caller falls back to its full stat scan.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from collections.abc import Callable
from pathlib import Path

# <sys/inotify.h>
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_Q_OVERFLOW = 0x400, 0x800, 0x4000
_IN_NONBLOCK = 0o4000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)


def _hidden(name: str) -> bool:
    return name.startswith(".")


class Watcher:
    """Watches folders (recursively) for any change; subfolders for which
    `skip` (given the folder's name) is true are left out (default: hidden ones)."""

    def __init__(self, roots: list[Path], skip: Callable[[str], bool] = _hidden, *, create: bool = True):
        """`create`: make missing roots (a memory folder to be); else a missing root is not watched."""
        self.roots = roots
        self._skip = skip
        self._create = create
        self._fd = -1
        self._libc = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(_IN_NONBLOCK)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        self._libc, self._fd = libc, fd
        if not self._watch_all():
            self.close()

    @property
    def active(self) -> bool:
        return self._fd >= 0

    def changed(self) -> bool:
        """True if anything may have changed since the last call (always True when inactive)."""
        if not self.active:
            return True
        seen = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                return True
            if not data:
                break
            seen = True
        if seen:
            # New folders need watches of their own; re-walk (cheap: folders only).
            if not self._watch_all():
                self.close()
        return seen

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1

    def _watch_all(self) -> bool:
        """Watch every folder under the roots; False when the watch limit is
        reached (the caller then scans). A folder that vanished or cannot be
        read meanwhile is passed over."""
        assert self._libc is not None
        for root in self.roots:
            if self._create:
                root.mkdir(parents=True, exist_ok=True)
            for folder, dirs, _ in os.walk(root):
                dirs[:] = [d for d in dirs if not self._skip(d)]
                if self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK) < 0:
                    if ctypes.get_errno() in (errno.ENOSPC, errno.ENOMEM):
                        return False  # the per-user watch limit: fall back to scanning
        return True

    def __del__(self) -> None:
        self.close()
