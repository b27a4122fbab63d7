"""Storage: the index database behind one interface (:class:`~lore.storage.base.Store`).

The backend is chosen by configuration: ``[index] backend = "sqlite"`` (the
default, `.lore/index.db`) or ``"postgres"`` with ``[index] database_url``
(or ``LORE_DATABASE_URL``). Nothing above this package knows which one runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore.storage.base import (
    MEMORY_SORTS,
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
    LinkInput,
    LinkRecord,
    MemoryFilter,
    MemoryRecord,
    MemoryStamp,
    ProposalRecord,
    SourceCounts,
    Store,
    TierState,
)

__all__ = [
    "MEMORY_SORTS",
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
    "LinkInput",
    "LinkRecord",
    "MemoryFilter",
    "MemoryRecord",
    "MemoryStamp",
    "ProposalRecord",
    "SourceCounts",
    "Store",
    "TierState",
    "open_store",
]


def open_store(project: Any) -> Store:
    """The configured store for `project` (a :class:`lore.project.Project`)."""
    from lore.errors import UsageError

    backend = str(project.setting("index", "backend", "sqlite"))
    if backend == "sqlite":
        from lore.storage.sqlite import SQLiteStore

        path, notice = _writable_index(project)
        store = SQLiteStore(path)
        if notice:
            store.notices.insert(0, notice)
        return store
    raise UsageError(f"[index] backend = '{backend}' in .lore/config.toml is not known; use sqlite")


def _writable_index(project: Any) -> tuple[Path, str | None]:
    """Where the SQLite index can live: `.lore/index.db`, or, when `.lore/` or the
    index is read-only, a private copy in the temp folder (read-only commands
    keep working; nothing in `.lore/` is touched)."""
    import hashlib
    import os
    import shutil
    import tempfile

    path = Path(project.index_path)
    folder_ok = os.access(path.parent, os.W_OK)
    if folder_ok and (not path.exists() or os.access(path, os.W_OK)):
        return path, None
    key = hashlib.sha256(str(project.root).encode()).hexdigest()[:16]
    spare = Path(tempfile.gettempdir()) / f"lore-{os.getuid()}" / key / "index.db"
    spare.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.exists() and not spare.exists():
        try:
            shutil.copyfile(path, spare)
            os.chmod(spare, 0o600)
        except OSError:
            pass
    return (
        spare,
        f"{path.parent} is read-only: using a temporary index ({spare}); writes to memories will fail",
    )
