"""Proposals: changes to memory files that wait for a person (``lore review``).

Seed 001's governance: *never auto-modify user files; heuristic proposals
require confidence > 0.9, evidence >= 5, and explicit user approval.* A
proposal that would change or create a committed memory (``.lore/memory/``)
is therefore **open** (it can be applied) only when its confidence is above
:data:`MIN_CONFIDENCE` and its evidence at least :data:`MIN_EVIDENCE`;
below that it is **held** (shown by ``lore review --all``, re-evaluated by
each ``lore consolidate`` as evidence grows). A proposal that only touches
local files (daily, session, archive, private) is open at once but still
waits for approval: consolidation applies by itself only the merges of
local near-duplicates.

Each proposal stores the exact change — the new text of each file, or
that it goes to the trash — and the hash of each file as it was when
proposed; applying refuses if a file changed since (``lore consolidate``
proposes again from what is there now). Proposals live in the index
(git-ignored); a rejected proposal is not proposed again.

Kinds: ``promote`` (a local memory with enough evidence becomes a durable,
committed one), ``merge`` (two committed near-duplicates become one),
``supersede`` (a newer memory says all the older one did and more: the
older is marked ``superseded_by``) and ``contradiction`` (a newer memory
says the opposite: the older is marked ``superseded_by``, with the reason).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from lore.errors import Conflict, NotFound, UsageError
from lore.locking import file_lock
from lore.memory import markdown, sync
from lore.memory.lifecycle.clock import iso
from lore.memory.model import Memory
from lore.records import Record, datarecord
from lore.storage import MemoryRecord, ProposalRecord

if TYPE_CHECKING:
    from lore.memory.lifecycle import Lifecycle

MIN_CONFIDENCE = 0.9  # strictly above
MIN_EVIDENCE = 5
KINDS = ("promote", "merge", "supersede", "contradiction")


@datarecord
class ProposedChange(Record):
    """One file a proposal changes."""

    path: str
    action: str  # create | rewrite | trash


@datarecord
class Proposal(Record):
    """A change waiting for approval, with its diff against the files as they are now."""

    id: str
    kind: str
    status: str  # open | held | applied | rejected
    title: str
    reason: str
    confidence: float
    evidence: int
    memory_ids: list[str]
    changes: list[ProposedChange]
    created_at: str
    updated_at: str
    diff: str = ""
    outdated: bool = False  # a file changed since it was proposed: consolidate again
    held_because: str | None = None


def governed(changes: list[dict[str, Any]]) -> bool:
    """Whether the change touches a committed memory (001's governance applies)."""
    return any(sync.is_committed(change["path"]) for change in changes if not change.get("keep"))


def held_reason(confidence: float, evidence: int, changes: list[dict[str, Any]]) -> str | None:
    """Why a proposal can't be applied yet (None: it can)."""
    if not governed(changes) or (confidence > MIN_CONFIDENCE and evidence >= MIN_EVIDENCE):
        return None
    return (
        f"a change to committed memories needs confidence > {MIN_CONFIDENCE} and evidence ≥ {MIN_EVIDENCE} "
        f"(this one: {confidence:.2f}, {evidence})"
    )


def _deciding(lifecycle: Lifecycle) -> AbstractContextManager[bool]:
    """The lock under which a proposal's status is read and changed: two
    `lore review` runs (or a review and a consolidation) never both decide one."""
    return file_lock(lifecycle.project.local_dir / ".review.lock")


def propose(
    lifecycle: Lifecycle,
    *,
    kind: str,
    title: str,
    reason: str,
    confidence: float,
    evidence: int,
    memory_ids: list[str],
    changes: list[dict[str, Any]],
) -> ProposalRecord | None:
    """Store (or refresh) a proposal; None when it was applied or rejected already."""
    store = lifecycle.store
    key = f"{kind}:" + ",".join(sorted(memory_ids))
    proposal_id = hashlib.sha1(key.encode()).hexdigest()[:10]
    with _deciding(lifecycle):  # a review deciding it meanwhile is seen, not overwritten
        known = store.proposal(proposal_id)
        if known is not None and known.status in ("applied", "rejected"):
            return None
        now = iso(lifecycle.now())
        record = ProposalRecord(
            id=proposal_id,
            kind=kind,
            status="held" if held_reason(confidence, evidence, changes) else "open",
            title=title[:200],
            reason=reason,
            confidence=round(confidence, 3),
            evidence=evidence,
            memory_ids=memory_ids,
            changes=changes,
            created_at=known.created_at if known else now,
            updated_at=now,
        )
        if known is not None and _same(known, record):
            return known
        with store.transaction():
            store.put_proposal(record)
        return record


def rewrite_change(lifecycle: Lifecycle, record: MemoryRecord, memory: Memory) -> dict[str, Any]:
    return {
        "path": record.path,
        "before_sha256": file_sha(lifecycle, record.path),
        "after": _written(memory),
    }


def create_change(rel: str, memory: Memory) -> dict[str, Any]:
    return {"path": rel, "before_sha256": None, "after": _written(memory)}


def _written(memory: Memory) -> str:
    """The file a proposal would write, redacted as any write is: a memory it
    rests on may hold a secret written by hand, which neither the proposal
    (kept in the index) nor the file it writes may repeat."""
    memory = copy.copy(memory)
    sync.redacted(memory)
    return markdown.render(memory)


def trash_change(lifecycle: Lifecycle, record: MemoryRecord) -> dict[str, Any]:
    return {"path": record.path, "before_sha256": file_sha(lifecycle, record.path), "after": None}


def kept_change(lifecycle: Lifecycle, record: MemoryRecord) -> dict[str, Any]:
    """A memory the proposal rests on but does not change (the newer one a
    memory is superseded by): the proposal is applied only while it is as it
    was, like the files it changes (an older memory pointed at a removed one
    went out of every list with it)."""
    return {
        "path": record.path,
        "before_sha256": file_sha(lifecycle, record.path),
        "after": None,
        "keep": True,
    }


def file_sha(lifecycle: Lifecycle, rel: str) -> str | None:
    try:
        return hashlib.sha256((lifecycle.project.root / rel).read_bytes()).hexdigest()
    except OSError:
        return None


# -- reading ----------------------------------------------------------------------------------


def listed(lifecycle: Lifecycle, *, include_held: bool = False, include_done: bool = False) -> list[Proposal]:
    """Proposals this agent may see (every memory they touch is visible to it)."""
    statuses = (
        ["open"] + (["held"] if include_held else []) + (["applied", "rejected"] if include_done else [])
    )
    return [
        public(lifecycle, record)
        for record in lifecycle.store.proposals(statuses)
        if _visible(lifecycle, record)
    ]


def get(lifecycle: Lifecycle, proposal_id: str) -> ProposalRecord:
    record = lifecycle.store.proposal(proposal_id.strip()) if proposal_id and proposal_id.strip() else None
    if record is None or not _visible(lifecycle, record):
        raise NotFound(f"no proposal '{proposal_id}'; see `lore review`")
    return record


def public(lifecycle: Lifecycle, record: ProposalRecord) -> Proposal:
    outdated = any(
        file_sha(lifecycle, change["path"]) != change["before_sha256"]
        for change in record.changes
        if record.status in ("open", "held")
    )
    return Proposal(
        id=record.id,
        kind=record.kind,
        status=record.status,
        title=record.title,
        reason=record.reason,
        confidence=record.confidence,
        evidence=record.evidence,
        memory_ids=list(record.memory_ids),
        changes=[ProposedChange(c["path"], _action(c)) for c in record.changes if not c.get("keep")],
        created_at=record.created_at,
        updated_at=record.updated_at,
        diff=diff(lifecycle, record),
        outdated=outdated,
        held_because=held_reason(record.confidence, record.evidence, record.changes)
        if record.status == "held"
        else None,
    )


def diff(lifecycle: Lifecycle, record: ProposalRecord) -> str:
    """The proposal as a unified diff against the files as they are now."""
    from lore.secrets import redact

    parts = []
    for change in record.changes:
        path = change["path"]
        if change.get("keep"):
            continue
        try:  # shown as it may be shown: a secret written in the file by hand is not
            before = redact((lifecycle.project.root / path).read_text(encoding="utf-8"))[0]
        except (OSError, UnicodeDecodeError):
            before = ""
        if change["after"] is None:
            parts.append(f"--- {path}\n+++ (moved to .lore/local/trash/)\n")
            continue
        lines = difflib.unified_diff(
            before.splitlines(keepends=True) if change["before_sha256"] else [],
            change["after"].splitlines(keepends=True),
            fromfile=path if change["before_sha256"] else "/dev/null",
            tofile=path,
        )
        parts.append("".join(lines))
    return "".join(part if part.endswith("\n") else part + "\n" for part in parts if part)


# -- deciding -----------------------------------------------------------------------------------


def apply(lifecycle: Lifecycle, proposal_id: str) -> Proposal:
    """Make the change a person approved; nothing is written unless every file
    is as it was when proposed."""
    from lore.memory.lifecycle import evidence

    with _deciding(lifecycle):  # read under the lock: a concurrent reject or apply decided first
        record = get(lifecycle, proposal_id)
        if record.status in ("applied", "rejected"):
            raise Conflict(f"proposal {record.id} was {record.status} already")
        why = held_reason(record.confidence, record.evidence, record.changes)
        if why is not None:
            raise UsageError(f"proposal {record.id} is held: {why}; it opens when the evidence grows")
        memories = lifecycle.memories
        memories.apply_changes(record.changes, what=f"proposal {record.id}")
        if record.kind == "merge" and len(record.memory_ids) == 2:
            evidence.move(memories, record.memory_ids[1], record.memory_ids[0])
        for memory_id in record.memory_ids[:1]:
            evidence.mark_folded(memories, memory_id)  # the new text states the count
        _decided(lifecycle, record, "applied")
    lifecycle.advance(record.memory_ids)
    return public(lifecycle, record)


def reject(lifecycle: Lifecycle, proposal_id: str) -> Proposal:
    """Drop a proposal; it is not proposed again."""
    with _deciding(lifecycle):
        record = get(lifecycle, proposal_id)
        if record.status in ("applied", "rejected"):
            raise Conflict(f"proposal {record.id} was {record.status} already")
        _decided(lifecycle, record, "rejected")
    return public(lifecycle, record)


def _decided(lifecycle: Lifecycle, record: ProposalRecord, status: str) -> None:
    record.status = status
    record.updated_at = iso(lifecycle.now())
    with lifecycle.store.transaction():
        lifecycle.store.put_proposal(record)


def _visible(lifecycle: Lifecycle, record: ProposalRecord) -> bool:
    paths = [c["path"] for c in record.changes if c["before_sha256"] is not None]
    return all(lifecycle.memories.visible(path) for path in paths)


def _action(change: dict[str, Any]) -> str:
    if change["after"] is None:
        return "trash"
    return "create" if change["before_sha256"] is None else "rewrite"


def _same(a: ProposalRecord, b: ProposalRecord) -> bool:
    return (a.status, a.confidence, a.evidence, a.changes, a.reason) == (
        b.status,
        b.confidence,
        b.evidence,
        b.changes,
        b.reason,
    )


__all__ = ["KINDS", "Proposal", "ProposedChange", "apply", "listed", "propose", "reject"]
