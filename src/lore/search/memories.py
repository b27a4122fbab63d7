"""Memory search: the hybrid search over memory chunks, best chunk per memory."""

from __future__ import annotations

from lore.records import Record, datarecord, internal
from lore.search import hybrid
from lore.search.text import snippet
from lore.storage import ChunkRecord, MemoryFilter, MemoryRecord, Store


@datarecord
class MemoryHit(Record):
    """One memory found by a search (seed 000's result fields, snake_case)."""

    id: str
    path: str
    title: str
    type: str
    tags: list[str]
    section: str | None
    snippet: str
    score: float
    start_line: int
    end_line: int
    source: str
    task_id: str | None = None
    agent: str | None = None
    applies_to: str = "global"
    occurred_at: str = ""
    summary: str = ""
    stale: list[str] | None = None
    confidence: float = internal(default=1.0)
    # Found by meaning alone and scored under hybrid.MEANING_FLOOR: a loose match.
    weak: bool = False


def search(
    store: Store,
    query: hybrid.Query,
    flt: MemoryFilter,
    limit: int,
    *,
    mode: str = "hybrid",
    fusion: str = "adaptive",
) -> list[MemoryHit]:
    """Memories matching `query`, best first (best chunk per memory)."""
    found = hybrid.search(
        store,
        "memory",
        query,
        limit=limit,
        flt=flt,
        mode=mode,
        fusion_mode=fusion,
        key=lambda chunk: chunk.path,
    )
    return [hit_of(s.chunk, snippet(s.chunk.text, query.terms), s.score, s.source) for s in found]


def hit_of(chunk: ChunkRecord, snip: str, score: float, source: str) -> MemoryHit:
    memory = chunk.memory
    assert memory is not None
    return MemoryHit(
        id=memory.id,
        path=memory.path,
        title=memory.title,
        type=memory.type,
        tags=list(memory.tags),
        section=chunk.section,
        snippet=snip,
        score=round(score, 4),
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        source=source,
        task_id=memory.task,
        agent=memory.agent,
        applies_to=memory.applies_to,
        occurred_at=memory.occurred_at,
        summary=memory.summary,
        confidence=memory.confidence,
        weak=hybrid.weak(source, score),
    )


def hit_of_record(memory: MemoryRecord, first: ChunkRecord | None, score: float, source: str) -> MemoryHit:
    """A hit for a memory found without a query (e.g. a HOT memory that applies)."""
    hit = MemoryHit(
        id=memory.id,
        path=memory.path,
        title=memory.title,
        type=memory.type,
        tags=list(memory.tags),
        section=first.section if first else None,
        snippet=memory.summary,
        score=round(score, 4),
        start_line=first.start_line if first else memory.body_line,
        end_line=first.end_line if first else memory.body_line,
        source=source,
        task_id=memory.task,
        agent=memory.agent,
        applies_to=memory.applies_to,
        occurred_at=memory.occurred_at,
        summary=memory.summary,
        confidence=memory.confidence,
    )
    return hit


__all__ = ["MemoryHit", "hit_of", "hit_of_record", "search"]
