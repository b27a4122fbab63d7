"""Capture: what agents say and print becomes memories (001's digest and auto-capture).

:mod:`.parse` reads transcripts and ``<lore-memory>`` blocks into candidates
and spots repeated errors; this module decides what to store, through
:class:`~lore.memory.repository.Memories` (so privacy, redaction and
validation are the same as for any other write).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lore import secrets
from lore.errors import UsageError, ValidationError
from lore.memory.capture.parse import Candidate, distinct_errors, from_stdout, from_transcript, time_of
from lore.memory.model import content_hash
from lore.memory.repository import Memories

__all__ = ["capture_stdout", "capture_transcript", "store_candidates", "store_gotchas"]


def capture_transcript(memories: Memories, path: Path) -> dict[str, Any]:
    """Store a transcript's qualifying messages (002's rules) as session-tier
    memories, and errors repeated 3+ times as gotchas, dated when the error
    last occurred. Idempotent."""
    result = store_candidates(memories, from_transcript(path), session=True)
    lines, times = transcript_lines(path)
    result["gotchas"] = store_gotchas(memories, lines, where=f"session {path.stem}", times=times)
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
    """Write the candidates through `memories` (privacy, redaction, validation as
    any write). A candidate marked private goes to the acting agent's folder,
    one marked session (or all, with `session`) to the local session tier;
    ``applies_to`` paths are stored relative to the project."""
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
                applies_to=project_scope(memories, c.applies_to),
                occurred_at=c.occurred_at,
                source=c.source,
                private=c.private,
                session=c.session if c.session is not None else session,
            )
        except (ValidationError, UsageError) as err:
            problems.append(f"{c.source or 'block'}: {err}")
            continue
        created += added.created
        existing += not added.created
    return {"created": created, "existing": existing, "problems": problems}


def project_scope(memories: Memories, scope: str) -> str:
    """``file:/abs/project/src/x.py`` → ``file:src/x.py`` (paths inside the project, relative)."""
    if not scope.startswith("file:"):
        return scope
    path = Path(scope[5:])
    root = memories.project.root
    if path.is_absolute() and path.is_relative_to(root):
        return "file:" + path.relative_to(root).as_posix()
    return scope


def store_gotchas(
    memories: Memories, lines: Sequence[str], *, where: str, times: Sequence[str | None] | None = None
) -> int:
    """001's auto-capture: an error seen 3+ times becomes a gotcha (once per
    distinct error, however many lines report it), its paths relative to the
    project, dated by `times` (one per line, None where unknown) at the error's
    last occurrence, else now."""
    count = 0
    for error in distinct_errors(lines, threshold=3, root=str(memories.project.root)):
        title = f"Repeated error: {error.pattern}"[:200]
        if memories.store.memories(memories.filter(types=["gotcha"], title=title), limit=1):
            continue
        body = (
            f"This error came up again and again ({error.count}× in {where}) before it was solved:\n\n"
            f"```\n{error.pattern}\n```\n\nWhen you see it, look for the cause recorded with it, or add one."
        )
        memories.add(
            body=body,
            title=title,
            type="gotcha",
            tags=["error", "auto-captured"],
            confidence=0.6,
            occurred_at=times[error.last_line] if times else None,
        )
        count += 1
    return count


def transcript_lines(path: Path) -> tuple[list[str], list[str | None]]:
    """Every string in a JSONL transcript, split into lines (errors hide in tool
    results), each with its event's time; a blank line between strings, so one
    tool result's output never runs into the next."""
    lines: list[str] = []
    times: list[str | None] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            when = time_of(event)
            for text in _strings(event):
                split = [*text.splitlines(), ""]
                lines.extend(split)
                times.extend([when] * len(split))
    return lines, times


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
