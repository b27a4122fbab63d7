"""What the index holds, per source, for a dashboard: files, chunks, vectors,
failures and when each source was last indexed.

Sources are the `files.kind` values (memory, code, commit, and any kind a
newer indexer adds, such as session), so a new source shows up without a
change here. Read-only queries over the index; they belong behind the
storage interface when it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lore.index.store import SQLiteIndex
from lore.records import Record

SOURCE_NAMES = {"memory": "memories", "code": "code", "commit": "history", "session": "sessions"}
MAX_FAILED = 200


@dataclass
class SourceStats(Record):
    """One source of the index."""

    name: str
    kind: str
    files: int
    chunks: int
    embedded_chunks: int
    failed_files: int
    last_indexed_at: str | None


@dataclass
class FailedFile(Record):
    path: str
    kind: str
    error: str


@dataclass
class IndexOverview(Record):
    """The dashboard's numbers (see :meth:`lore.service.Lore.index_overview`)."""

    sources: list[SourceStats] = field(default_factory=list)
    failed_files: list[FailedFile] = field(default_factory=list)
    embedding_model: str | None = None
    indexed_model: str | None = None
    search_mode: str = "bm25"
    embedding_problem: str | None = None
    pending_embeddings: int | None = None
    embedding_coverage: float | None = None
    index_bytes: int = 0
    head: str | None = None
    indexed_commit: str | None = None
    up_to_date: bool | None = None
    work_tree_changes: int = 0
    stale_memories: list[dict] = field(default_factory=list)
    job: dict | None = None
    recent_jobs: list[dict] = field(default_factory=list)


def sources(index: SQLiteIndex, model: str | None) -> list[SourceStats]:
    """Per kind of file: counts, failures, last indexed time, chunks with a vector of `model`."""
    files = {
        kind: (n, failed, last)
        for kind, n, failed, last in index.db.execute(
            "SELECT kind, count(*), sum(error IS NOT NULL), max(indexed_at) FROM files GROUP BY kind"
        )
    }
    chunks: dict[str, tuple[int, int]] = {
        kind: (n, embedded or 0)
        for kind, n, embedded in index.db.execute(
            "SELECT c.kind, count(*), sum(e.text_hash IS NOT NULL) FROM chunks c "
            "LEFT JOIN embeddings e ON e.model = ? AND e.text_hash = c.text_hash GROUP BY c.kind",
            (model or "",),
        )
    }
    kinds = [k for k in SOURCE_NAMES if k in files or k in chunks or k != "session"]
    kinds += sorted(k for k in files if k not in SOURCE_NAMES)
    out = []
    for kind in kinds:
        n_files, failed, last = files.get(kind, (0, 0, None))
        n_chunks, embedded = chunks.get(kind, (0, 0))
        out.append(
            SourceStats(SOURCE_NAMES.get(kind, kind), kind, n_files, n_chunks, embedded, failed or 0, last)
        )
    return out


def failed_files(index: SQLiteIndex) -> list[FailedFile]:
    rows = index.db.execute(
        "SELECT path, kind, error FROM files WHERE error IS NOT NULL ORDER BY path LIMIT ?", (MAX_FAILED,)
    )
    return [FailedFile(*row) for row in rows]
