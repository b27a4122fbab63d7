"""``session.jsonl``: an append-only event log that survives crashes and concurrent writers.

- Appends are single ``write()`` calls on an ``O_APPEND`` descriptor, made
  while holding the session's lock (the caller takes it), so lines from
  several processes never interleave.
- A process killed in the middle of an append can leave a torn last line
  (bytes without the final newline). Readers ignore it; the next append
  repairs it first: a fragment that is still a whole event only lacked its
  newline and is kept, anything else is cut off and saved to
  ``session.jsonl.rejected`` -- complete lines are never touched.
- Malformed lines elsewhere (a hand edit, another tool) are skipped on read.
- Only compaction rewrites the file, atomically (temp file + fsync + rename),
  after the events it drops are safely archived (malformed lines go to
  ``session.jsonl.rejected`` rather than away).
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path

from lore import atomic
from lore.records import datarecord
from lore.safe_read import json_loads
from lore.sessions.events import RawEvent, is_event

_TAIL_CHUNK = 1 << 13  # most events fit; longer ones widen the read
# Never through a link: the session store refuses folders holding one, and a
# link made since then fails here (ELOOP) rather than writing elsewhere.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@datarecord
class LogLine:
    """One event and its exact bytes in the file (archives keep the bytes verbatim)."""

    event: RawEvent
    raw: bytes


@datarecord
class LogRead:
    lines: list[LogLine] = field(default_factory=list)
    torn_tail: bool = False  # the file ends in an incomplete line (ignored)
    malformed: list[bytes] = field(default_factory=list)  # complete lines that are not events


def read(path: Path) -> LogRead:
    """Every complete event line, in file order (missing file: nothing)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return LogRead()
    out = LogRead()
    pieces = data.split(b"\n")
    fragment = pieces.pop()  # b"" when the file ends with a newline
    for raw in pieces:
        event = _parse(raw)
        if event is not None:
            out.lines.append(LogLine(event, raw))
        elif raw.strip():
            out.malformed.append(raw)
    if fragment.strip():
        event = _parse(fragment)
        if event is not None:  # whole, only its newline is missing
            out.lines.append(LogLine(event, fragment))
        else:
            out.torn_tail = True
    return out


def last_id(path: Path) -> int:
    """The id of the file's last event (0 if none), reading only its end."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    with open(path, "rb") as handle:
        start = max(0, size - _TAIL_CHUNK)
        while True:
            handle.seek(start)
            chunk = handle.read(size - start)
            pieces = chunk.split(b"\n")
            if start > 0:
                pieces = pieces[1:]  # may begin mid-line
            for raw in reversed(pieces):
                event = _parse(raw)
                if event is not None:
                    return int(event["id"])
            if start == 0:
                return 0
            start = max(0, start - _TAIL_CHUNK * 4)


def append(path: Path, lines: list[bytes]) -> str | None:
    """Append event lines in one write (the caller holds the session lock).

    Returns a note when a torn last line had to be repaired first, else None.
    """
    note = repair_tail(path)
    payload = b"".join(line + b"\n" for line in lines)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    try:
        view = memoryview(payload)
        while view:  # a regular file takes it whole; loop in case the kernel says otherwise
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)
    return note


def repair_tail(path: Path) -> str | None:
    """Make the file end with a newline again (the caller holds the session lock)."""
    try:
        fd = os.open(path, os.O_RDWR | _NOFOLLOW)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return None
        start = max(0, size - _TAIL_CHUNK)
        while True:
            chunk = os.pread(fd, size - start, start)
            cut = chunk.rfind(b"\n")
            if cut >= 0 or start == 0:
                break
            start = max(0, start - _TAIL_CHUNK * 4)
        keep = start + cut + 1  # cut == -1 and start == 0: the whole file is one fragment
        fragment = os.pread(fd, size - keep, keep)
        if _parse(fragment) is not None:
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, b"\n")
            return "completed the last line (it had lost its newline)"
        save_rejected(path, [fragment])
        os.ftruncate(fd, keep)
        return f"cut a torn last line ({len(fragment)} bytes, saved to {path.name}.rejected)"
    finally:
        os.close(fd)


def rewrite(path: Path, lines: list[bytes]) -> None:
    """Replace the file with `lines` atomically (compaction; the caller holds the lock)."""
    atomic.write_atomic(path, b"".join(line + b"\n" for line in lines))


def save_rejected(path: Path, raws: list[bytes]) -> None:
    """Keep lines that are not events next to the log (never thrown away)."""
    if raws:
        fd = os.open(
            path.with_name(path.name + ".rejected"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644
        )
        with os.fdopen(fd, "ab") as saved:
            saved.write(b"".join(raw + b"\n" for raw in raws))


def _parse(raw: bytes) -> RawEvent | None:
    if not raw.strip():
        return None
    try:
        event = json_loads(raw)
    except ValueError:  # UnicodeDecodeError is one
        return None
    return event if is_event(event) else None
