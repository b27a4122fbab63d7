"""Hybrid search over code chunks and commits (the non-memory kinds).

Same recipe as memory search: BM25 top-N and exact vector top-N, each scored
0-1, fused (:mod:`lore.search.fusion`). Callers group the fused chunks as
they need (best chunk per file, per commit).
"""

from __future__ import annotations

from dataclasses import dataclass

from lore.index.store import SQLiteIndex
from lore.search.memories import bm25_relevance, coverage
from lore.search.text import fts_query, terms


@dataclass
class ChunkMatch:
    row: object  # sqlite3.Row of the chunk (+ file path, + commit fields)
    score: float
    source: str


def search_kind(
    index: SQLiteIndex,
    kind: str,
    query: str,
    *,
    limit: int,
    where: str = "",
    params: tuple = (),
    query_vector=None,
    model: str | None = None,
    fusion: str = "rrf",
    mode: str = "hybrid",
) -> list[ChunkMatch]:
    """Chunks of `kind` best matching `query`.

    Args:
        where/params: an SQL filter over `chunks c` and `files f`.
        mode: hybrid, bm25 or vector (vector/hybrid need `query_vector` and `model`).
    """
    from lore.search.fusion import CANDIDATES, fuse

    words = terms(query)
    pool = max(limit, CANDIDATES)
    rows: dict[int, object] = {}
    keyword: list[tuple[int, float]] = []
    if mode in ("hybrid", "bm25") and (match := fts_query(query)):
        for row in index.search_chunks(kind, match, pool, where, params):
            rows[row["chunk_id"]] = row
            found = coverage(words, row["text"], row["title"], row["keywords"])
            keyword.append((row["chunk_id"], bm25_relevance(row["bm25"], len(words), found)))
        keyword.sort(key=lambda item: -item[1])
    vector: list[tuple[int, float]] = []
    if mode in ("hybrid", "vector") and query_vector is not None and model:
        from lore.search.vectors import vector_set

        top = vector_set(index, kind, model).top_k(query_vector, pool)
        fetched = (
            {r["chunk_id"]: r for r in index.chunk_rows(kind, [i for i, _ in top], where, params)}
            if top
            else {}
        )
        for chunk_id, sim in top:
            row = fetched.get(chunk_id)
            if row is not None:
                rows.setdefault(chunk_id, row)
                vector.append((chunk_id, max(0.0, sim)))
    if not vector:
        return [ChunkMatch(rows[i], s, "bm25") for i, s in keyword[:limit]]
    if mode == "vector":
        return [ChunkMatch(rows[i], s, "vector") for i, s in vector[:limit]]
    return [ChunkMatch(rows[i], s, src) for i, s, src in fuse(keyword, vector, fusion, len(words))[:limit]]
