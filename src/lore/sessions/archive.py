"""Where compacted events go: ``archive/`` (the raw lines, gzip) and ``summaries/`` (Lore memories).

One compaction covers a range of event ids and writes two files named after
it: ``archive/000001-000300.jsonl.gz`` holds the range's lines byte for byte,
and ``summaries/000001-000300.md`` is a valid Lore memory (type ``summary``,
``source: session:<id>#1-300``, extra fields ``session_id``, ``events`` and
``archive``) that the index can pick up as a searchable session summary.
Archives are never deleted; both files are written atomically.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lore import atomic
from lore.errors import LoreError, StorageError
from lore.memory import markdown
from lore.memory.model import MAX_SUBJECT, Memory, now_iso
from lore.sessions.summary import Summary

if TYPE_CHECKING:
    from lore.sessions.events import RawEvent

_RANGE = re.compile(r"^(\d+)-(\d+)$")


FOLDER = "archive"  # a session's compacted events, gzip
SUMMARIES = "summaries"  # a session's summary memories, one per archived range


@dataclass(frozen=True)
class ArchivedRange:
    """One compaction's range and its files (absolute paths)."""

    first: int
    last: int
    archive: Path
    summary: Path

    @property
    def name(self) -> str:
        return range_name(self.first, self.last)


def range_name(first: int, last: int) -> str:
    """``000001-000300``: sorts in order for sessions of up to a million events."""
    return f"{first:06d}-{last:06d}"


def archived_ranges(session_dir: Path) -> list[ArchivedRange]:
    """The session's archived ranges, oldest first (from the archive file names)."""
    folder = session_dir / FOLDER
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        if not name.endswith(".jsonl.gz"):
            continue
        found = _RANGE.match(name.removesuffix(".jsonl.gz"))
        if found:
            first, last = int(found.group(1)), int(found.group(2))
            stem = range_name(first, last)
            out.append(ArchivedRange(first, last, folder / name, session_dir / SUMMARIES / f"{stem}.md"))
    return sorted(out, key=lambda r: r.first)


def write_archive(session_dir: Path, first: int, last: int, raws: list[bytes]) -> Path:
    """Write the range's raw lines, gzip-compressed, atomically and durably."""
    folder = session_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{range_name(first, last)}.jsonl.gz"
    data = gzip.compress(b"".join(raw + b"\n" for raw in raws), compresslevel=6, mtime=0)
    atomic.write_atomic(path, data)
    return path


def read_archive(path: Path) -> list[RawEvent]:
    """The events of one archive file, in order.

    Raises:
        StorageError: the file is not whole gzip of JSON lines (truncated,
            overwritten): named in one line, never guessed around.
    """
    try:
        with gzip.open(path, "rb") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except (EOFError, gzip.BadGzipFile, zlib.error, ValueError) as err:
        # EOFError (a truncated file) would otherwise reach click as "aborted".
        reason = str(err) or "the file ends too soon"
        raise StorageError(
            f"session archive {path} is damaged ({reason}); its events can't be read: "
            "restore it from a backup, or move it out of the archive folder to go on without them"
        ) from None


def summary_memory(
    summary: Summary,
    *,
    session_id: str,
    first: int,
    last: int,
    occurred_at: str | None,
    archive_rel: str,
    agent: str | None,
) -> Memory:
    """The summary as a Lore memory (validated as strictly as memories Lore creates)."""
    keywords = [k[:50] for k in summary.keywords[:19]] + ["session-summary"]
    topics = ", ".join(summary.keywords[:4])
    title = f"Session {session_id} events {first}-{last}" + (f": {topics}" if topics else "")
    memory = Memory(
        id=_memory_id(session_id, first, last),
        title=title[:MAX_SUBJECT],
        body=summary.body,
        type="summary",
        tags=keywords,
        occurred_at=occurred_at or now_iso(),
        agent=agent,
        source=f"session:{session_id}#{first}-{last}",
        extra={
            "session_id": session_id,
            "events": f"{first}-{last}",
            "archive": archive_rel,
            "summarizer": summary.summarizer,
        },
    )
    memory.validate(strict=True)
    return memory


def write_summary(session_dir: Path, first: int, last: int, memory: Memory) -> Path:
    """Write (or rewrite, for the same range) the summary's memory file atomically."""
    path = session_dir / SUMMARIES / f"{range_name(first, last)}.md"
    markdown.write_atomic(path, markdown.render_checked(memory, strict=True))
    return path


def read_summary(path: Path) -> Memory | None:
    """A summary file as a memory (None if missing or unreadable)."""
    try:
        memory, _ = markdown.parse(path.read_bytes(), str(path))
    except (OSError, LoreError):
        return None
    return memory


def _memory_id(session_id: str, first: int, last: int) -> str:
    """A UUID v4-shaped id fixed by the range: recompacting the same range keeps its id."""
    digest = hashlib.sha256(f"lore-session:{session_id}#{first}-{last}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))
