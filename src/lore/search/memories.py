"""Memory search: BM25 and/or vectors over memory chunks, best chunk per memory.

Scores are 0-1: :func:`bm25_relevance` for keyword hits, cosine similarity
(clamped at 0) for vector hits, and :mod:`lore.search.fusion` for hybrid.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from lore.index.store import SQLiteIndex
from lore.search.filters import MemoryFilter
from lore.search.text import fts_query, snippet, terms

# BM25 scores grow with the number and rarity of matched terms; this many
# "points" per query term count as a half-strength match.
_HALF_SCORE_PER_TERM = 1.5


@dataclass
class MemoryHit:
    """One memory found by a search (fields follow seed 000's result shape)."""

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
    confidence: float = 1.0
    stale: list[str] | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        extra = data.pop("extra")
        # 000's camelCase names, kept stable for scripts.
        data["taskId"] = data.pop("task_id")
        data["startLine"] = data.pop("start_line")
        data["endLine"] = data.pop("end_line")
        data["occurredAt"] = data.pop("occurred_at")
        data["appliesTo"] = data.pop("applies_to")
        data.pop("confidence")
        data.update(extra)
        return data


def bm25_relevance(score: float, n_terms: int, coverage: float) -> float:
    """Map a BM25 match to 0-1.

    Half of it is *coverage* (the share of query terms the chunk contains),
    half is the BM25 score squashed as s / (s + 1.5·n). Coverage keeps scores
    meaningful in tiny corpora, where BM25's IDF is near zero; the squashed
    score separates strong matches from weak ones in large corpora.
    """
    strength = max(score, 0.0) / (max(score, 0.0) + _HALF_SCORE_PER_TERM * max(1, n_terms))
    return 0.5 * coverage + 0.5 * strength


def coverage(query_terms: list[str], *texts: str) -> float:
    """Share of query terms found (by their first five letters, a cheap stem) in `texts`."""
    if not query_terms:
        return 0.0
    haystack = " ".join(texts).lower()
    return sum(1 for t in query_terms if t[:5] in haystack) / len(query_terms)


def search_bm25(
    index: SQLiteIndex, query: str, flt: MemoryFilter, limit: int, candidates: int | None = None
) -> list[MemoryHit]:
    """Best chunk per memory, ranked by BM25 relevance (hits built for the winners only)."""
    match = fts_query(query)
    if match is None:
        return []
    words = terms(query)
    where, params = flt.sql()
    rows = index.search_memory_chunks(match, where, params, candidates or max(limit * 5, 50))
    best: dict[str, tuple[float, object]] = {}
    for row in rows:
        if row["path"] not in best:
            found = coverage(words, row["text"], row["title"], row["tags"])
            best[row["path"]] = (bm25_relevance(row["bm25"], len(words), found), row)
    ranked = sorted(best.values(), key=lambda item: -item[0])[:limit]
    return [hit_from_row(row, snippet(row["text"], words), score, "bm25") for score, row in ranked]


def search_vector(
    index: SQLiteIndex, query_vector, model: str, flt: MemoryFilter, limit: int, query: str = ""
) -> list[MemoryHit]:
    """Best chunk per memory, ranked by cosine similarity (exact search)."""
    from lore.search.vectors import vector_set

    vectors = vector_set(index, "memory", model)
    where, params = flt.sql()
    words = terms(query)
    want = limit * 2  # grows below when chunks collapse into fewer memories, or filters reject

    while True:
        top = vectors.top_k(query_vector, want)
        by_id = {row["chunk_id"]: row for row in index.memory_chunk_rows([i for i, _ in top], where, params)}
        hits: dict[str, MemoryHit] = {}
        for chunk_id, sim in top:
            row = by_id.get(chunk_id)
            if row is not None and row["path"] not in hits:
                hits[row["path"]] = hit_from_row(row, snippet(row["text"], words), max(0.0, sim), "vector")
        # Selective filters can reject most of the nearest chunks: look further.
        if len(hits) >= limit or want >= len(vectors.ids):
            return list(hits.values())[:limit]
        want *= 4


def search_hybrid(
    index: SQLiteIndex,
    query: str,
    query_vector,
    model: str,
    flt: MemoryFilter,
    limit: int,
    fusion: str = "rrf",
) -> list[MemoryHit]:
    """BM25 top-N and vector top-N, fused (see :mod:`lore.search.fusion`)."""
    from lore.search.fusion import CANDIDATES, fuse

    n = max(limit, CANDIDATES)
    keyword = search_bm25(index, query, flt, n)
    vector = search_vector(index, query_vector, model, flt, n, query)
    by_path = {h.path: h for h in vector}
    by_path.update({h.path: h for h in keyword})  # keyword hits have the better snippet
    fused = fuse(
        [(h.path, h.score) for h in keyword], [(h.path, h.score) for h in vector], fusion, len(terms(query))
    )
    hits = []
    for path, score, source in fused[:limit]:
        hit = by_path[path]
        hit.score, hit.source = round(score, 4), source
        hits.append(hit)
    return hits


def hit_from_row(row, snip: str, score: float, source: str) -> MemoryHit:
    return MemoryHit(
        id=row["id"],
        path=row["path"],
        title=row["title"],
        type=row["type"],
        tags=json.loads(row["tags"]),
        section=row["section"],
        snippet=snip,
        score=round(score, 4),
        start_line=row["start_line"],
        end_line=row["end_line"],
        source=source,
        task_id=row["task"],
        agent=row["agent"],
        applies_to=row["applies_to"],
        occurred_at=row["occurred_at"],
        summary=row["summary"],
        confidence=row["confidence"],
    )
