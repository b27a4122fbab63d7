"""Capture: what agents say and print becomes memories (001's digest and auto-capture).

:mod:`.parse` reads transcripts and ``<lore-memory>`` blocks into candidates
and spots repeated errors; this module decides what to store, through
:class:`~lore.memory.repository.Memories` (so privacy, redaction and
validation are the same as for any other write).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lore import secrets
from lore.errors import ValidationError
from lore.memory.capture.parse import Candidate, from_stdout, from_transcript, repeated_errors
from lore.memory.model import content_hash
from lore.memory.repository import Memories

__all__ = ["capture_stdout", "capture_transcript", "store_candidates", "store_gotchas"]


def capture_transcript(memories: Memories, path: Path) -> dict[str, Any]:
    """Store a transcript's qualifying messages (002's rules) as session-tier
    memories, and errors repeated 3+ times as gotchas. Idempotent."""
    result = store_candidates(memories, from_transcript(path), session=True)
    result["gotchas"] = store_gotchas(memories, transcript_lines(path), where=f"session {path.stem}")
    return result


def capture_stdout(memories: Memories, text: str, *, source: str = "stdout") -> dict[str, Any]:
    """Store `<lore-memory>` blocks an agent printed; repeated errors become gotchas."""
    candidates, problems = from_stdout(text, source=source)
    # Printed blocks carry no time of their own: a block is known by its content.
    result = store_candidates(memories, candidates, session=False, by_content=True)
    result["problems"] = problems + result["problems"]
    result["gotchas"] = store_gotchas(memories, text.splitlines(), where=source)
    return result


def store_candidates(
    memories: Memories, candidates: Iterable[Candidate], *, session: bool, by_content: bool = False
) -> dict[str, Any]:
    created = existing = 0
    problems: list[str] = []
    for c in candidates:
        known = content_hash(secrets.redact(c.body)[0])  # as it would be written
        if by_content and memories.store.memories(memories.filter(content_hash=known), limit=1):
            existing += 1
            continue
        try:
            added = memories.add(
                body=c.body,
                title=c.title,
                type=c.type,
                tags=c.tags,
                applies_to=c.applies_to,
                occurred_at=c.occurred_at,
                source=c.source,
                session=session,
            )
        except ValidationError as err:
            problems.append(f"{c.source or 'block'}: {err}")
            continue
        created += added.created
        existing += not added.created
    return {"created": created, "existing": existing, "problems": problems}


def store_gotchas(memories: Memories, lines: Iterable[str], *, where: str) -> int:
    """001's auto-capture: an error pattern seen 3+ times becomes a gotcha (once)."""
    count = 0
    for pattern, seen in repeated_errors(lines, threshold=3):
        title = f"Repeated error: {pattern}"[:200]
        if memories.store.memories(memories.filter(types=["gotcha"], title=title), limit=1):
            continue
        body = (
            f"This error came up again and again ({seen}× in {where}) before it was solved:\n\n"
            f"```\n{pattern}\n```\n\nWhen you see it, look for the cause recorded with it, or add one."
        )
        memories.add(body=body, title=title, type="gotcha", tags=["error", "auto-captured"], confidence=0.6)
        count += 1
    return count


def transcript_lines(path: Path) -> list[str]:
    """Every string in a JSONL transcript, split into lines (errors hide in tool results)."""
    lines: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            for text in _strings(event):
                lines.extend(text.splitlines())
    return lines


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
