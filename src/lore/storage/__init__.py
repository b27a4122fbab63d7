"""Storage: the index database behind one interface (:class:`~lore.storage.base.Store`).

The backend is chosen by configuration: ``[index] backend = "sqlite"`` (the
default, `.lore/index.db`) or ``"postgres"`` with ``[index] database_url``
(or ``LORE_DATABASE_URL``). Nothing above this package knows which one runs.
"""

from __future__ import annotations

from lore.storage.base import (
    AnchorRecord,
    ChunkFilter,
    ChunkInput,
    ChunkRecord,
    CommitRecord,
    ErrorOccurrence,
    ErrorPattern,
    EvidenceRecord,
    FileState,
    IndexCounts,
    MemoryFilter,
    MemoryRecord,
    ProposalRecord,
    Store,
    TierState,
)

__all__ = [
    "AnchorRecord",
    "ChunkFilter",
    "ChunkInput",
    "ChunkRecord",
    "CommitRecord",
    "ErrorOccurrence",
    "ErrorPattern",
    "EvidenceRecord",
    "FileState",
    "IndexCounts",
    "MemoryFilter",
    "MemoryRecord",
    "ProposalRecord",
    "Store",
    "TierState",
    "open_store",
]


def open_store(project) -> Store:
    """The configured store for `project` (a :class:`lore.project.Project`)."""
    from lore.errors import UsageError

    backend = str(project.setting("index", "backend", "sqlite"))
    if backend == "sqlite":
        from lore.storage.sqlite import SQLiteStore

        return SQLiteStore(project.index_path)
    raise UsageError(f"[index] backend = '{backend}' in .lore/config.toml is not known; use sqlite")
