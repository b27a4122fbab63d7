"""What the index holds, per source, for a dashboard: files, chunks, vectors,
failures and when each source was last indexed, with freshness and jobs.

Sources are the kinds of file the store holds (memory, code, commit, and any
kind a newer indexer adds, such as session), so a new source shows up
without a change here. The numbers come from the store
(:meth:`~lore.storage.Store.source_counts`); the memory source counts only
what the acting agent may see.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from lore.records import Record, datarecord
from lore.storage import MemoryFilter, SourceCounts, Store

SOURCE_NAMES = {"memory": "memories", "code": "code", "commit": "history", "session": "sessions"}
MAX_FAILED = 200


@datarecord
class SourceStats(Record):
    """One source of the index."""

    name: str
    kind: str
    files: int
    chunks: int
    embedded_chunks: int
    failed_files: int
    last_indexed_at: str | None


@datarecord
class FailedFile(Record):
    path: str
    kind: str
    error: str


@datarecord
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
    stale_memories: list[dict[str, Any]] = field(default_factory=list)
    job: dict[str, Any] | None = None
    recent_jobs: list[dict[str, Any]] = field(default_factory=list)


def build(
    store: Store,
    status: dict[str, Any],
    *,
    memories: MemoryFilter,
    broken_memories: list[tuple[str, str]],
    stale_memories: list[dict[str, Any]],
    job: dict[str, Any] | None = None,
    recent_jobs: list[dict[str, Any]] | None = None,
) -> IndexOverview:
    """The dashboard from the store's counts and a :func:`lore.health.status` report.

    Args:
        memories: the acting agent's memory filter (its visibility).
        broken_memories: memory files that failed to parse and the agent may see.
    """
    model = status["embedding"] or status["indexed_model"]
    sources = _sources(store.source_counts(model, memories), len(broken_memories))
    chunks = sum(s.chunks for s in sources)
    failed = [FailedFile(path, "memory", error) for path, error in broken_memories]
    for kind in sorted(k for k in (s.kind for s in sources) if k != "memory"):
        failed += [FailedFile(path, kind, error) for path, error in store.file_errors(kind)]
    changes = len(status["changed_files"]) + len(status["new_files"]) + len(status["deleted_files"])
    return IndexOverview(
        sources=sources,
        failed_files=failed[:MAX_FAILED],
        embedding_model=status["embedding"],
        indexed_model=status["indexed_model"],
        search_mode=status["search"],
        embedding_problem=status["embedding_problem"],
        pending_embeddings=status["pending_embeddings"],
        embedding_coverage=round(sum(s.embedded_chunks for s in sources) / chunks, 4) if chunks else None,
        index_bytes=store.size_bytes(),
        head=status["head"],
        indexed_commit=status["indexed_commit"],
        up_to_date=status["up_to_date"],
        work_tree_changes=changes,
        stale_memories=stale_memories,
        job=job,
        recent_jobs=recent_jobs or [],
    )


def _sources(counts: list[SourceCounts], broken_memories: int) -> list[SourceStats]:
    """Memories, code and history always (sessions when indexed), then any other kind."""
    by_kind = {c.kind: c for c in counts}
    memory = by_kind.setdefault("memory", SourceCounts("memory"))
    memory.files += broken_memories
    memory.failed_files = broken_memories
    kinds = [k for k in SOURCE_NAMES if k in by_kind or k != "session"]
    kinds += sorted(k for k in by_kind if k not in SOURCE_NAMES)
    out = []
    for kind in kinds:
        c = by_kind.get(kind) or SourceCounts(kind)
        out.append(
            SourceStats(
                SOURCE_NAMES.get(kind, kind),
                kind,
                c.files,
                c.chunks,
                c.embedded_chunks,
                c.failed_files,
                c.last_indexed_at,
            )
        )
    return out
