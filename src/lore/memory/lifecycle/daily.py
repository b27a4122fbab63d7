"""Session → daily → archive: what happens when a session starts (seed 001's storage tiers).

- **Session** memories (``.lore/local/session/``, raw notes of a session,
  owned by the agent that wrote them) live during their session only. When
  the agent's next session starts, their digest is taken (decisions,
  resolutions, corrections, validated patterns → the daily tier, as
  evidence where the fact is known already) and they go to the trash
  (``lore restore`` brings one back until ``lore gc``).
- **Daily** memories are consolidated per day: near-duplicates merged into
  one with the evidence counted (:mod:`.consolidate`, run on the last two
  days at each session start), and moved to the archive
  (``.lore/local/archive/``) once older than ``[lifecycle]
  daily_archive_days`` (30). Archived memories stay searchable with
  ``--include-archived`` and are left out of recall.
- **Durable** memories never expire unless removed (their attention tier
  may still fade to ARCHIVE, which moves no file).
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from lore.errors import UsageError
from lore.memory import markdown, sync
from lore.memory.lifecycle.clock import days, iso, parse
from lore.records import Record, datarecord
from lore.storage import MemoryFilter, MemoryRecord, TierState

if TYPE_CHECKING:
    from datetime import datetime

    from lore.memory.lifecycle import Lifecycle

DAILY_ARCHIVE_DAYS = 30
RECENT_DAYS = 2  # what the cheap consolidation at session start looks at
# A session memory that names no session (`lore add --session`) may belong to a
# session still running beside the new one (another terminal, another window):
# it is left to a later session start until it is this old.
UNNAMED_SESSION_HOURS = 12
# A recorded session written to this recently, not ended, may be running beside
# a new one (another window): its notes are not digested and cleaned yet.
RUNNING_MINUTES = 30


@datarecord
class SessionStartReport(Record):
    """What starting a session did to the memory tiers."""

    session_id: str | None
    digested: int = 0  # previous sessions' memories whose digest was taken
    cleaned: int = 0  # ... then moved to the trash
    daily_created: int = 0  # daily memories the digest created
    evidence: int = 0  # facts the digest found known already
    archived: list[str] = field(default_factory=list)  # daily memories moved to the archive
    merged: int = 0  # near-duplicates merged by the cheap consolidation
    tiers_moved: int = 0


def session_started(
    lifecycle: Lifecycle, session_id: str | None, *, consolidating: bool = True
) -> SessionStartReport:
    """Digest and clean the previous sessions' memories; then (`consolidating`)
    archive old daily ones, consolidate what is recent, decide the tiers (what
    :func:`consolidate_recent` does on its own: a SessionStart hook runs it in
    the background, its cost growing with the project's memories)."""
    report = SessionStartReport(session_id)
    _digest_and_clean(lifecycle, session_id, report)
    if consolidating:
        consolidate_recent(lifecycle, report)
    return report


def consolidate_recent(lifecycle: Lifecycle, report: SessionStartReport) -> None:
    """Archive old daily memories, consolidate the recent ones, decide the tiers."""
    from lore.memory.lifecycle.consolidate import consolidate

    done = consolidate(lifecycle, recent_days=RECENT_DAYS)
    report.archived = done.archived
    report.merged = len(done.merged)
    report.tiers_moved = len(done.tiers_moved)


def session_of(record: MemoryRecord, source: str | None) -> str | None:
    """The session a session-tier memory came from (its ``transcript:<session>:...`` source)."""
    if source and source.startswith("transcript:"):
        parts = source.split(":")
        if len(parts) >= 3 and parts[1]:
            return parts[1]
    return None


def _digest_and_clean(lifecycle: Lifecycle, current: str | None, report: SessionStartReport) -> None:
    from lore.errors import LoreError
    from lore.memory.capture import keep_digest
    from lore.memory.capture.digest import digest

    memories = lifecycle.memories
    memories.sync()
    now = lifecycle.now()
    old: dict[str | None, list[tuple[MemoryRecord, dict[str, Any]]]] = {}
    for record in lifecycle.store.memories(memories.filter(storage=["session"]), order="oldest"):
        try:
            memory = memories.load(record.path)
        except LoreError:
            continue
        session = session_of(record, memory.source)
        if current is not None and session == current:
            continue
        written = parse(record.occurred_at)
        if session is None and written is not None and days(now, written) * 24 < UNNAMED_SESSION_HOURS:
            continue
        event = {
            "type": "message",
            "role": "assistant",
            "content": memory.body,
            "timestamp": memory.occurred_at,
            "sourceId": (memory.source or "").split(":")[-1] or record.id,
        }
        old.setdefault(session, []).append((record, event))
    for session in [s for s in old if s is not None and _may_be_running(lifecycle, s, now)]:
        del old[session]  # another window's session, still going: its notes are its own until it ends
    for session, items in old.items():
        found = digest(
            [event for _, event in items], session_id=session or "unnamed", root=memories.project.root
        )
        # Cleaned (to the trash) before the digest is kept: a memory whose whole
        # body is one decision was taken for the digest's own copy (same time,
        # same text), nothing was written, and the decision was left in the trash.
        for record, _ in items:
            try:
                memories.remove(record.path)
                report.cleaned += 1
            except LoreError:
                continue
        created, added = keep_digest(lifecycle, found)
        report.daily_created += created
        report.evidence += added
        report.digested += len(items)


def _may_be_running(lifecycle: Lifecycle, session: str, now: datetime) -> bool:
    """Whether `session` may still be running beside the one starting (another
    window): recorded in the session store, not ended, and written to in the
    last ``RUNNING_MINUTES``. A session the store does not know (a transcript's
    notes), or one quiet since, is over (an agent's hooks may never end it)."""
    from lore.errors import LoreError
    from lore.sessions.store import SessionStore

    try:
        info = SessionStore(lifecycle.memories.project).get(session)
    except LoreError:
        return False
    updated = parse(info.updated_at)
    # (abs: a store written by the system clock, a lifecycle read at LORE_NOW's)
    return (
        info.status != "ended" and updated is not None and abs(days(now, updated)) * 24 * 60 < RUNNING_MINUTES
    )


def archive_old_daily(lifecycle: Lifecycle) -> list[str]:
    """Move local daily memories older than ``[lifecycle] daily_archive_days`` (since
    they were written or last seen again: a fact still being observed stays) to the
    archive tier (same id, same content; never overwriting). Returns the new paths."""
    project = lifecycle.project
    limit = float(project.setting("lifecycle", "daily_archive_days", DAILY_ARCHIVE_DAYS))
    now = lifecycle.now()
    moved: list[str] = []
    records = lifecycle.store.memories(MemoryFilter(storage=["daily"], include_private=True), order="oldest")
    seen = lifecycle.store.last_evidence()
    old = [
        r
        for r in records
        if not sync.is_committed(r.path)
        and (when := _last_seen(r.occurred_at, seen.get(r.id))) is not None
        and days(now, when) > limit
    ]
    if not old:
        return moved
    archived = []
    with lifecycle.memories.writing():
        for record in old:
            try:
                project.check_folder(project.root / _archive_folder(record.path))
                written = markdown.move_new(
                    project.root / record.path, project.root / _archive_folder(record.path)
                )
            except UsageError as err:  # an archive folder linked out of the project: said once, kept
                said = f"{err}; daily memories are not archived until then"
                if said not in lifecycle.store.notices:
                    lifecycle.store.notices.append(said)
                continue
            except OSError:
                continue
            moved.append(project.rel(written))
            archived.append(TierState(record.id, "archive", iso(now), None, iso(now)))
    with lifecycle.store.transaction():
        lifecycle.store.put_tier_states(archived)
    lifecycle.memories.sync()
    return moved


def revive(lifecycle: Lifecycle, record: MemoryRecord) -> MemoryRecord:
    """A memory the daily archive holds, observed again: back to the daily tier (001:
    new evidence brings an archived memory back), so what keeps happening is seen.
    Returns its record as it is now (unchanged when it is not in the archive folder)."""
    project = lifecycle.project
    if record.storage != "archive" or sync.is_committed(record.path):
        return record
    parts = record.path.split("/")
    folder = "/".join([*parts[: parts.index("archive")], "daily", *parts[parts.index("archive") + 1 : -1]])
    try:
        project.check_folder(project.root / folder)
        with lifecycle.memories.writing():
            markdown.move_new(project.root / record.path, project.root / folder)
    except (OSError, UsageError):  # left where it is: the evidence still counts
        return record
    lifecycle.memories.sync()
    found = lifecycle.store.memories(MemoryFilter(ids=[record.id], include_private=True), limit=1)
    return found[0] if found else record


def _last_seen(written: str, evidence: str | None) -> datetime | None:
    """When a memory was last observed: written, or its latest evidence."""
    times = [t for t in (parse(written), parse(evidence)) if t is not None]
    return max(times) if times else None


def _archive_folder(rel: str) -> str:
    """The archive folder matching a daily memory's folder (…/daily/a/b.md → …/archive/a)."""
    parts = rel.split("/")
    index = parts.index("daily")
    return "/".join([*parts[:index], "archive", *parts[index + 1 : -1]])
