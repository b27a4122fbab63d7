"""File names as text: which ones Lore can store and show, and how to show the rest.

A repository may hold names that are not UTF-8 (Python hands their bytes over
as surrogate escapes, which no database or JSON document accepts) or that
carry control characters (a newline or an escape sequence would break the
one-line output every command promises). Memory files, code discovery and git
history all decide with :func:`unsafe_name` and print with
:func:`display_path`, so one odd name is reported and skipped, never fatal.
"""

from __future__ import annotations

import re

MAX_PATH = 4096  # the longest path (or memory key) Lore takes from a user, as file systems do
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def unsafe_name(rel: str) -> bool:
    """True when `rel` is not UTF-8 text or holds control characters."""
    return _UNSAFE.search(rel) is not None


def display_path(rel: str) -> str:
    """`rel` printable on one line: bytes that are not UTF-8 and control
    characters shown as ``\\xNN`` escapes."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def plain_path(path: str) -> str:
    """A project path as given (`./src/a.py`, `src/`) without its leading `./`
    and trailing `/`, and nothing else: `.github/ci.yaml` keeps its dot (a
    character strip took it: a memory about it was anchored to nothing)."""
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def in_lore_folder(path: str) -> bool:
    """Whether `path` (relative to the project root) is in ``.lore/``: Lore's
    own files (memories, another agent's private ones, the index), never code
    a memory is anchored to."""
    import posixpath

    normal = posixpath.normpath(path.replace("\\", "/"))
    return normal == ".lore" or normal.startswith(".lore/")
