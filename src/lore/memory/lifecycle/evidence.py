"""Evidence: a memory's fact observed again, by another capture, session or agent.

Each observation is an :class:`~lore.storage.EvidenceRecord` keyed by what
produced it (a message, an output line, a block), so running the same
capture twice counts once. Where the count lives:

- **local files** (daily, session, archive, private — Lore's own runtime
  files): the evidence is written into the file's ``evidence_count`` at once
  ("folded"), so the file stays the truth;
- **committed files** (``.lore/memory/``): never rewritten without a
  person's approval (seed 001's governance). The evidence waits in the index
  and in ``.lore/local/evidence.jsonl`` (git-ignored); a memory's
  ``evidence_count`` as search and tiers see it is the file's own count plus
  this pending evidence, and it is written into the file when ``lore review``
  applies a change to that memory.

The ledger ``.lore/local/evidence.jsonl`` holds every evidence row (and
which were folded), so an index rebuilt from the files gets its evidence
back (:func:`replay`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lore.locking import file_lock
from lore.memory import sync
from lore.storage import EvidenceRecord, MemoryRecord

if TYPE_CHECKING:
    from lore.memory.repository import Memories

LEDGER = "evidence.jsonl"
_REPLAYED = "evidence_ledger_replayed"
_FOLDING = "evidence_folding:"  # + memory id: a fold begun and not finished (see fold, settle)


def record(memories: Memories, target: MemoryRecord, rows: Sequence[EvidenceRecord]) -> int:
    """Record evidence for `target`; returns how many rows were new.

    Local files get the new count written at once; committed ones keep it pending.
    """
    store = memories.store
    replay(memories)
    with store.transaction():
        added = store.add_evidence([_for(row, target.id) for row in rows])
    if not added:
        return 0
    append_ledger(memories, [{**ledger_row(row, target.id)} for row in rows if row.key in added])
    if not sync.is_committed(target.path):
        fold(memories, target.id, target.path)
    return len(added)


def fold(memories: Memories, memory_id: str, rel: str, *, confidence: float | None = None) -> int:
    """Write the memory's pending evidence into its file's ``evidence_count``.

    For committed files only as part of an approved change (``lore review``).
    Returns the count now in the file.
    """
    store = memories.store
    settle(memories, memory_id, rel)
    pending = [row for row in store.evidence(memory_id) if not row.folded]
    memory = memories.load(rel)
    count = file_count(memory.extra) + len(pending)
    if not pending and confidence is None:
        return count
    keys = [row.key for row in pending]
    if keys:
        # What is about to be written, first: a process killed between the file
        # and the index's mark left the rows pending, and they were counted again.
        intent = {"folding": keys, "memory_id": memory_id, "count": count}
        append_ledger(memories, [intent])
        with store.transaction():
            store.set_meta(_FOLDING + memory_id, json.dumps(intent))
    memory.extra["evidence_count"] = count
    if confidence is not None:
        memory.confidence = confidence
    memories.rewrite(rel, memory)
    with store.transaction():
        store.fold_evidence(memory_id, keys)
        if keys:
            store.set_meta(_FOLDING + memory_id, "")
    append_ledger(memories, [{"folded": keys}])
    return count


def settle(memories: Memories, memory_id: str, rel: str) -> None:
    """Finish a fold of `memory_id` that a killed process left half done: if
    its file states the count the fold was writing, the file was written and
    its rows are marked folded; otherwise they stay pending (and count once)."""
    store = memories.store
    recorded = store.get_meta(_FOLDING + memory_id)
    if not recorded:
        return
    try:
        intent = json.loads(recorded)
        keys, count = [str(k) for k in intent["folding"]], int(intent["count"])
    except (ValueError, KeyError, TypeError):
        keys, count = [], 0
    written = bool(keys) and file_count(memories.load(rel).extra) >= count
    with store.transaction():
        if written:
            store.fold_evidence(memory_id, keys)
        store.set_meta(_FOLDING + memory_id, "")
    if written:
        append_ledger(memories, [{"folded": keys}])


def mark_folded(memories: Memories, memory_id: str) -> None:
    """The memory's pending evidence was written into a new file by the caller."""
    store = memories.store
    keys = [row.key for row in store.evidence(memory_id) if not row.folded]
    if keys:
        with store.transaction():
            store.fold_evidence(memory_id, keys)
        append_ledger(memories, [{"folded": keys}])


def move(memories: Memories, from_id: str, to_id: str) -> None:
    """A merged memory's evidence now counts for the memory it was merged into."""
    with memories.store.transaction():
        memories.store.move_evidence(from_id, to_id)
    append_ledger(memories, [{"moved": from_id, "to": to_id}])


def file_count(extra: dict[str, Any]) -> int:
    """The ``evidence_count`` a file states (1 when it states none or nonsense)."""
    return sync.evidence_count_of(extra.get("evidence_count"))


def replay(memories: Memories) -> int:
    """Load the ledger into an index that has not seen it (a new or rebuilt
    index), line by line in the order it was written. Returns the rows loaded."""
    store = memories.store
    if store.get_meta(_REPLAYED) == "1":
        return 0
    if not (memories.project.local_dir / LEDGER).is_file():
        store.set_meta(_REPLAYED, "1")  # nothing to load (no transaction: a read path may heal)
        return 0
    owner: dict[str, str] = {}  # evidence key -> memory id, as the ledger goes
    folding: dict[str, dict[str, Any]] = {}  # memory id -> a fold begun and not (yet) finished
    loaded = 0
    with store.transaction():
        for data in ledger_lines(memories):
            if isinstance(data.get("folding"), list) and "memory_id" in data:
                folding[str(data["memory_id"])] = data
            elif isinstance(data.get("folded"), list):
                done = set(map(str, data["folded"]))
                folding = {m: d for m, d in folding.items() if not done & set(map(str, d["folding"]))}
                for key in map(str, data["folded"]):
                    if key in owner:
                        store.fold_evidence(owner[key], [key])
            elif "moved" in data:
                from_id, to_id = str(data["moved"]), str(data.get("to"))
                store.move_evidence(from_id, to_id)
                owner.update({k: to_id for k, m in owner.items() if m == from_id})
            elif "key" in data and "memory_id" in data:
                row = EvidenceRecord(
                    str(data["key"]),
                    str(data["memory_id"]),
                    str(data.get("source", "")),
                    data.get("agent"),
                    str(data.get("occurred_at", "")),
                )
                loaded += len(store.add_evidence([row]))
                owner[row.key] = row.memory_id
        for memory_id, data in folding.items():  # settled at the memory's next fold
            store.set_meta(_FOLDING + memory_id, json.dumps(data))
        store.set_meta(_REPLAYED, "1")
    return loaded


def ledger_lines(memories: Memories) -> Iterator[dict[str, Any]]:
    try:
        with open(memories.project.local_dir / LEDGER, "rb") as handle:
            for line in handle:
                try:
                    data = json.loads(line)
                except ValueError:  # UnicodeDecodeError too: torn mid-character
                    continue  # a torn line
                if isinstance(data, dict):
                    yield data
    except FileNotFoundError:
        return


def _for(row: EvidenceRecord, memory_id: str, *, folded: bool = False) -> EvidenceRecord:
    return EvidenceRecord(row.key, memory_id, row.source, row.agent, row.occurred_at, folded)


def ledger_row(row: EvidenceRecord, memory_id: str) -> dict[str, Any]:
    return {
        "key": row.key,
        "memory_id": memory_id,
        "source": row.source,
        "agent": row.agent,
        "occurred_at": row.occurred_at,
    }


def append_ledger(memories: Memories, lines: list[dict[str, Any]]) -> None:
    """Append to the ledger (one write, under the write lock, so lines never interleave)."""
    if not lines:
        return
    local = memories.project.local_dir
    local.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
    with file_lock(local / ".evidence.lock"):
        fd = os.open(local / LEDGER, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # A torn last line (a write cut short by a full disk or a crash) stays a
                # line of its own, skipped on read, instead of swallowing this one.
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
