"""Capture: what agents say and print becomes memories (001's digest and auto-capture).

:mod:`.parse` reads transcripts and ``<chati-memory>`` / ``<lore-memory>``
blocks into candidates, :mod:`.digest` classifies a session (decisions,
error patterns, resolutions, user corrections, validated patterns) and
:mod:`.errors` turns error reports into countable patterns. This module
decides what to keep, through the :class:`~lore.memory.lifecycle.Lifecycle`
(a fact seen again is evidence for the memory that has it) and
:class:`~lore.memory.repository.Memories` (privacy, redaction, validation).

Where captures go:

- a transcript's multi-line assistant messages (002's rules): the session
  tier, owned by the capturing agent (cleaned when its next session starts);
- the digest's decisions, resolutions, corrections and validated patterns:
  the daily tier (local, shared by the project's agents), one memory each,
  with the ids of the messages they come from;
- error patterns: counted in the index across captures, sessions and
  agents; at the third occurrence one gotcha memory is created (daily tier)
  and later occurrences add evidence to it;
- printed blocks: the tier the block names, else the caller's (durable for
  ``lore capture``: a block is an agent's deliberate write, like
  ``memory_write``); ``private="true"`` blocks go to the agent's own folder.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from lore.errors import UsageError, ValidationError
from lore.memory.capture import errors
from lore.memory.capture.digest import (
    MEMORY_TYPE,
    Digest,
    Event,
    digest,
    error_events,
    event_text,
    message_id,
)
from lore.memory.capture.parse import Candidate, from_stdout, from_transcript
from lore.memory.files import location_of
from lore.records import Record, datarecord
from lore.secrets import redact
from lore.storage import ErrorOccurrence, EvidenceRecord

if TYPE_CHECKING:
    from lore.memory.lifecycle import Lifecycle

__all__ = [
    "CaptureResult",
    "capture_events",
    "capture_stdout",
    "capture_transcript",
    "count_errors",
    "keep_digest",
    "store_candidates",
]

GOTCHA_THRESHOLD = 3  # 001: "when an error pattern appears 3+ times ... a gotcha is auto-created"


@datarecord
class CaptureResult(Record):
    """What a capture kept."""

    created: int  # new memories (session messages, or printed blocks)
    existing: int  # already known: the same memory, or the same fact seen again
    problems: list[str] = field(default_factory=list)
    gotchas: int = 0  # gotcha memories created (an error's third occurrence)
    evidence: int = 0  # facts seen again: one more piece of evidence each
    digest: dict[str, int] | None = None  # transcripts: digest items kept, by class


def gotcha_confidence(occurrences: int) -> float:
    """How sure a repeated error is worth knowing: 0.8 at 3 occurrences, 0.95 from 5 on
    (so that at 5 it may be proposed as a durable gotcha: 001's > 0.9 and evidence ≥ 5)."""
    return round(min(0.95, 0.5 + 0.1 * occurrences), 2)


def capture_transcript(
    lifecycle: Lifecycle, path: Path, events: list[Event], *, session_id: str
) -> CaptureResult:
    """Capture a session transcript (its events already read, 004's shapes):
    its multi-line assistant messages as session memories (002's rules), then
    what :func:`capture_events` keeps of its events.

    Idempotent: running it again on the same transcript creates nothing and
    counts nothing twice.
    """
    result = store_candidates(lifecycle, from_transcript(path), tier="session")
    found = capture_events(lifecycle, events, session_id=session_id)
    result.gotchas += found.gotchas
    result.evidence += found.evidence
    result.digest = found.digest
    return result


def capture_events(lifecycle: Lifecycle, events: list[Event], *, session_id: str) -> CaptureResult:
    """001's PreCompact capture of a session's events (004's shapes, oldest
    first): the digest's decisions, resolutions, corrections and validated
    patterns kept in the daily tier, its errors counted (a gotcha at the
    third occurrence). What a transcript capture and a session compaction
    both do with the events they see.

    Idempotent: each item and each occurrence is keyed by the session and the
    events it comes from, so the same events seen again (the same transcript
    captured twice, then its recorded session compacted) count once.
    """
    memories = lifecycle.memories
    result = CaptureResult(0, 0)
    session_id = redact(session_id)[0]  # a transcript's own id keys evidence, error counts and memories
    found = digest(events, session_id=session_id, root=memories.project.root)
    result.created, result.evidence = keep_digest(lifecycle, found)
    result.digest = found.counts()
    agent = memories.agent
    reports = error_events(events)
    occurrences = [
        ErrorOccurrence(
            sig, f"{session_id}:{message_id(event, index)}", f"session:{session_id}", agent, when, example
        )
        for index, event in enumerate(events)
        if reports[index]
        for when in [_event_time(lifecycle, event)]
        for sig, example in errors.occurrences(event_text(event), memories.project.root)
    ]
    gotchas, evidence_added = count_errors(lifecycle, occurrences, where=f"session {session_id}")
    result.gotchas += gotchas
    result.evidence += evidence_added
    return result


def capture_stdout(
    lifecycle: Lifecycle, text: str, *, source: str = "stdout", tier: str = "durable", private: bool = False
) -> CaptureResult:
    """Store the blocks an agent printed; count the errors it printed.

    A block already known (the same or a near-duplicate fact) is evidence for
    that memory; the same output captured twice counts once.
    """
    from lore.memory.lifecycle.clock import iso

    now = iso(lifecycle.now())
    candidates, problems = from_stdout(text, source=source, default_time=now)
    output = _hash(text)
    result = store_candidates(
        lifecycle, candidates, tier=tier, private=private, key_prefix=f"stdout:{output}"
    )
    result.problems = problems + result.problems
    agent = lifecycle.memories.agent
    occurrences = [
        ErrorOccurrence(sig, f"stdout:{output}:{n}", source, agent, now, example)
        for n, (sig, example) in enumerate(errors.occurrences(text, lifecycle.project.root, distinct=False))
    ]
    gotchas, evidence_added = count_errors(lifecycle, occurrences, where=source, private=private)
    result.gotchas += gotchas
    result.evidence += evidence_added
    return result


def keep_digest(lifecycle: Lifecycle, found: Digest) -> tuple[int, int]:
    """Keep a digest's items in the daily tier (error patterns are counted apart,
    see :func:`count_errors`); returns (memories created, evidence added)."""
    session = found.session_id or "unnamed"
    created = added = 0
    for item in found.items:
        if item.kind == "error_pattern":
            continue
        done = lifecycle.remember(
            body=item.text,
            title=None,
            type=MEMORY_TYPE[item.kind],
            key=f"digest:{session}:{item.kind}:{_hash(item.text)}",
            source=f"session:{session}",
            occurred_at=item.occurred_at or None,
            tier="daily",
            extra={"digest_class": item.kind, "session_id": session, "evidence_refs": item.evidence},
        )
        created += done.created
        added += done.evidence_added
    return created, added


def store_candidates(
    lifecycle: Lifecycle,
    candidates: Iterable[Candidate],
    *,
    tier: str,
    private: bool = False,
    key_prefix: str | None = None,
) -> CaptureResult:
    """Keep candidates: session-tier ones as they are (002's transcript rules,
    deduplicated by time and content); others through :meth:`Lifecycle.remember`
    (`key_prefix` + the block's position names each observation)."""
    from lore.memory.lifecycle.clock import iso

    result = CaptureResult(0, 0)
    candidates = list(candidates)
    # A transcript's turns are known by their place in it and their text: a turn
    # removed since it was kept is not kept again when the transcript comes back.
    as_they_are = tier == "session" and key_prefix is None
    turns = {
        index: f"turn:{c.source}:{_hash(c.body)}"
        for index, c in enumerate(candidates)
        if as_they_are and c.source
    }
    known = lifecycle.store.known_evidence(list(turns.values())) if turns else {}
    seen: list[tuple[str, str, str, str]] = []
    for index, c in enumerate(candidates):
        try:
            if turns.get(index) in known:
                result.existing += 1
                continue
            if as_they_are:
                added = lifecycle.memories.add(
                    body=c.body,
                    title=c.title,
                    type=c.type,
                    tags=c.tags,
                    applies_to=c.applies_to,  # an absolute path inside the project: made relative by add
                    occurred_at=c.occurred_at,
                    source=c.source,
                    tier="session",
                )
                created, evidence_added = added.created, False
                if index in turns and added.id:
                    when = c.occurred_at or iso(lifecycle.now())
                    seen.append((turns[index], added.id, str(c.source), when))
            else:
                done = lifecycle.remember(
                    body=c.body,
                    title=c.title,
                    type=c.type,
                    key=f"{key_prefix}:{index}",
                    source=c.source or "stdout",
                    occurred_at=c.occurred_at,
                    tags=c.tags,
                    tier=c.tier or tier,
                    private=c.private or private,
                    confidence=c.confidence,
                    applies_to=c.applies_to,  # an absolute path inside the project: made relative by add
                )
                created, evidence_added = done.created, done.evidence_added
        except (ValidationError, UsageError) as err:  # e.g. a private block and no agent
            # Said as the parser says a block's problems: by the line it opens on.
            result.problems.append(f"line {c.line}: {err}" if c.line else f"{c.source or 'block'}: {err}")
            continue
        result.created += created
        result.existing += not created
        result.evidence += evidence_added
    lifecycle.seen(list({observation[0]: observation for observation in seen}.values()))  # a key once
    return result


def count_errors(
    lifecycle: Lifecycle, found: list[ErrorOccurrence], *, where: str, private: bool = False
) -> tuple[int, int]:
    """Count error occurrences in the index; returns (gotchas created, evidence added).

    At the third occurrence of a pattern (across every capture, session and
    agent so far) one gotcha memory is created, dated by that occurrence;
    later occurrences add evidence to it. A gotcha that was removed is not
    created again.
    """
    if not found:
        return 0, 0
    # Counted and decided under one hold of the write lock: two captures at once
    # each created a gotcha for one error, and an occurrence already in a new
    # gotcha's count was counted again as its evidence.
    with lifecycle.memories.writing():
        return _count_errors(lifecycle, found, where, private)


def _count_errors(
    lifecycle: Lifecycle, found: list[ErrorOccurrence], where: str, private: bool
) -> tuple[int, int]:
    from lore.memory.lifecycle import daily, evidence

    store = lifecycle.store
    with store.transaction():
        new = set(store.add_error_occurrences(found))
    if not new:
        return 0, 0
    created = added = 0
    known: dict[str, str] | None = None
    for pattern in store.error_patterns(sorted({sig for sig, _ in new})):
        fresh = sorted(
            (o for o in found if o.signature == pattern.signature and (o.signature, o.key) in new),
            key=lambda o: o.occurred_at,
        )
        if not pattern.memory_id and pattern.count == len(fresh):  # new to this index
            # An index rebuilt from the files (or a fresh clone's) has no counts: the
            # gotcha written for this error is found by its file's error_signature.
            known = _gotchas_by_signature(lifecycle) if known is None else known
            if pattern.signature in known:
                pattern.memory_id = known[pattern.signature]
                with store.transaction():
                    store.set_error_memory(pattern.signature, pattern.memory_id)
        if pattern.memory_id:
            rows = [
                EvidenceRecord(f"error:{o.key}", pattern.memory_id, o.source, o.agent, o.occurred_at)
                for o in fresh
            ]
            targets = store.memories(lifecycle.memories.filter(ids=[pattern.memory_id]), limit=1)
            if targets:  # archived while quiet, happening again: back to the daily tier
                targets = [daily.revive(lifecycle, targets[0])]
            if targets and evidence.record(lifecycle.memories, targets[0], rows):
                added += len(rows)
                _refresh_confidence(lifecycle, pattern.memory_id)
                lifecycle.advance([pattern.memory_id])
            continue
        if pattern.count < GOTCHA_THRESHOLD:
            continue
        before = pattern.count - len(fresh)
        third = fresh[max(0, GOTCHA_THRESHOLD - before - 1)]
        memory = lifecycle.memories.add(
            title=f"Repeated error: {pattern.signature}"[:200],
            body=(
                # The count as of now: later occurrences are its evidence_count (the body stays true).
                f"This error came up again and again ({pattern.count}× when this was written, the third "
                f"time in {where}):\n\n```\n{pattern.example}\n```\n\n"
                f"Normalised: `{pattern.signature}`\n\n"
                "When you see it, look for the cause recorded with it, or add one."
            ),
            type="gotcha",
            # The error's own words too: with only these two, recall found it by body text alone.
            tags=["error", "auto-captured", *_words_of(pattern.signature)],
            confidence=gotcha_confidence(pattern.count),
            occurred_at=third.occurred_at,
            tier="daily",
            private=private and lifecycle.memories.agent is not None,
            extra={"evidence_count": pattern.count, "error_signature": pattern.signature},
        )
        with store.transaction():
            store.set_error_memory(pattern.signature, memory.id)
        # Written down beside the evidence: once the gotcha is removed and the trash
        # purged, an index rebuilt from the files still knows this error had one.
        written = memory.memory.extra.get("error_signature") if memory.memory else None  # as redacted
        evidence.append_ledger(
            lifecycle.memories,
            [
                {
                    "gotcha": written if isinstance(written, str) else pattern.signature,
                    "memory_id": memory.id,
                    "agent": lifecycle.memories.viewer if private else None,
                }
            ],
        )
        lifecycle.advance([memory.id])
        created += 1
    return created, added


def _words_of(signature: str) -> list[str]:
    """Up to four keywords from an error's signature (`ConnectionError: cannot
    reach db at <path>` → connectionerror, reach, db), placeholders left out."""
    from lore.memory.model import derive_keywords

    words = [w for w in derive_keywords(re.sub(r"<\w+>", " ", signature), "", limit=4) if w != "note"]
    return [w for w in words if w not in ("error", "auto-captured")]


def _gotchas_by_signature(lifecycle: Lifecycle) -> dict[str, str]:
    """{error signature: id} of the auto-captured gotchas this agent can see
    (their files say it), and of those in the trash."""
    from lore.errors import LoreError
    from lore.memory import sync, trash
    from lore.memory.lifecycle import evidence

    out: dict[str, str] = {}
    lifecycle.memories.sync()  # a new index: the files are read in first
    for record in lifecycle.store.memories(lifecycle.memories.filter(types=["gotcha"]), order="oldest"):
        try:
            signature = lifecycle.memories.load(record.path).extra.get("error_signature")
        except LoreError:
            continue
        if isinstance(signature, str) and record.superseded_by is None:
            out.setdefault(signature, record.id)
    # A gotcha someone removed stays removed: the trash keeps its file (the
    # index's mark of it is gone with a rebuild), so its error is not a gotcha again.
    memories = lifecycle.memories
    for entry in trash.entries(memories.project):
        if not memories.visible(entry.original):
            continue
        try:
            raw = entry.file.read_bytes()
            signature = sync.load_memory(raw, entry.original, location_of(entry.original))[0].extra.get(
                "error_signature"
            )
        except (LoreError, OSError, ValueError):
            continue
        if isinstance(signature, str):
            out.setdefault(signature, entry.id)
    # And a gotcha removed for good (`lore gc` purged the trash): the ledger says it was made.
    for data in evidence.ledger_lines(memories):
        signature, agent = data.get("gotcha"), data.get("agent")
        if isinstance(signature, str) and "memory_id" in data and agent in (None, memories.viewer):
            out.setdefault(signature, str(data["memory_id"]))
    return out


def _refresh_confidence(lifecycle: Lifecycle, memory_id: str) -> None:
    """An auto-captured gotcha grows surer with each occurrence (local files only)."""
    from lore.memory import sync
    from lore.memory.lifecycle import evidence

    records = lifecycle.store.memories(lifecycle.memories.filter(ids=[memory_id]), limit=1)
    if not records or sync.is_committed(records[0].path) or records[0].type != "gotcha":
        return
    target = gotcha_confidence(records[0].evidence_count)
    if target > records[0].confidence:
        evidence.fold(lifecycle.memories, memory_id, records[0].path, confidence=target)


def _event_time(lifecycle: Lifecycle, event: Event) -> str:
    from lore.memory.capture.parse import time_of
    from lore.memory.lifecycle.clock import iso

    return time_of(event) or iso(lifecycle.now())


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
