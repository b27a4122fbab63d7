"""Searching a project: memories, code and history, with queries prepared once.

:class:`Searcher` turns a user's query into a :class:`~lore.search.hybrid.Query`
(terms, exact tokens, the query vector when a model is available) and runs
the one hybrid search over the kind asked for. It also knows the attention
of memories (001), which list, recall and the tiers use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lore.errors import UsageError
from lore.search import hybrid
from lore.search.attention import STALE_FACTOR, attention
from lore.storage import ChunkFilter, MemoryFilter, MemoryRecord, MemoryStamp, Store

if TYPE_CHECKING:
    from lore.embed.runtime import EmbeddingRuntime
    from lore.search.code import CodeHit, CommitHit
    from lore.search.memories import MemoryHit

DEFAULT_FUSION = "rrf"


class Searcher:
    """Hybrid search over one project's store."""

    def __init__(self, store: Store, embedding: EmbeddingRuntime, settings: dict[str, Any]):
        self.store = store
        self.embedding = embedding
        self.settings = settings

    @property
    def fusion(self) -> str:
        from lore.search.fusion import FUSIONS

        mode = str(self.settings.get("search", {}).get("fusion", DEFAULT_FUSION))
        if mode not in FUSIONS:
            raise UsageError(
                f"[search] fusion = '{mode}' in .lore/config.toml; use one of {', '.join(FUSIONS)}"
            )
        return mode

    @property
    def half_life(self) -> float:
        return float(self.settings.get("recall", {}).get("half_life_days", 90))

    def query(self, text: str, kind: str, mode: str | None) -> tuple[hybrid.Query, str]:
        """The prepared query and the mode that will run (hybrid falls back to bm25)."""
        if mode not in (None, *hybrid.MODES):
            raise UsageError(f"unknown search mode '{mode}'; use hybrid, bm25 or vector")
        if not text or not text.strip():
            raise UsageError("the query is empty; give words to search for")
        query = hybrid.Query.of(text)
        if mode == "bm25":
            return query, "bm25"
        query.vector, query.model = self.embedding.query_vector(self.store, text, kind)
        if query.vector is None:
            if mode == "vector":
                raise UsageError(f"vector search is unavailable ({self.embedding.problem or 'see above'})")
            return query, "bm25"
        return query, mode or "hybrid"

    def memories(
        self,
        text: str,
        flt: MemoryFilter,
        limit: int,
        *,
        mode: str | None = None,
        fusion: str | None = None,
        flag_stale: bool = True,
    ) -> list[MemoryHit]:
        """Memories matching `text`, best first; stale ones flagged at half their score."""
        from lore.search import memories

        query, run = self.query(text, "memory", mode)
        hits = memories.search(self.store, query, flt, limit, mode=run, fusion=fusion or self.fusion)
        return self.flag_stale(hits) if flag_stale else hits

    def flag_stale(self, hits: list[MemoryHit]) -> list[MemoryHit]:
        """Stale memories stay findable, flagged, at half their score."""
        stale = self.store.stale_reasons([h.id for h in hits])
        for hit in hits:
            if hit.id in stale:
                hit.stale = stale[hit.id]
                hit.score = round(hit.score * STALE_FACTOR, 4)
        return sorted(hits, key=lambda h: -h.score) if stale else hits

    def code(
        self,
        text: str,
        flt: ChunkFilter,
        limit: int,
        *,
        files_only: bool = False,
        mode: str | None = None,
        fusion: str | None = None,
    ) -> list[CodeHit]:
        from lore.search.code import search_code

        query, run = self.query(text, "code", mode)
        return search_code(
            self.store, query, flt, limit=limit, files_only=files_only, mode=run, fusion=fusion or self.fusion
        )

    def history(
        self,
        text: str,
        limit: int,
        *,
        flt: ChunkFilter | None = None,
        mode: str | None = None,
        fusion: str | None = None,
    ) -> list[CommitHit]:
        from lore.search.code import search_history

        query, run = self.query(text, "commit", mode)
        return search_history(self.store, query, limit=limit, flt=flt, mode=run, fusion=fusion or self.fusion)

    # -- attention (001) ------------------------------------------------------------------

    def attention_of(
        self,
        records: Sequence[MemoryRecord | MemoryStamp],
        access: dict[str, tuple[int, str]] | None = None,
        stale: dict[str, list[str]] | None = None,
    ) -> dict[str, float]:
        """Query-free attention of memories, for tiers."""
        access = self.store.access_stats() if access is None else access
        stale = self.store.stale_reasons() if stale is None else stale
        half_life = self.half_life
        out = {}
        for record in records:
            count, last = access.get(record.id, (0, None))  # type: ignore[assignment]
            out[record.id] = attention(
                1.0,
                occurred_at=record.occurred_at,
                last_accessed=last,
                access_count=count,
                confidence=record.confidence,
                stale=record.id in stale,
                half_life_days=half_life,
            )
        return out
