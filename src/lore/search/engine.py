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
from lore.memory.values import clip
from lore.search import hybrid
from lore.search.attention import STALE_FACTOR, attention
from lore.search.fusion import DEFAULT_FILES_FUSION, DEFAULT_FUSION
from lore.storage import ChunkFilter, MemoryFilter, MemoryRecord, MemoryStamp, Store

if TYPE_CHECKING:
    from lore.embed.runtime import EmbeddingRuntime
    from lore.search.code import CodeHit, CommitHit
    from lore.search.memories import MemoryHit


class Searcher:
    """Hybrid search over one project's store."""

    def __init__(self, store: Store, embedding: EmbeddingRuntime, settings: dict[str, Any]):
        self.store = store
        self.embedding = embedding
        self.settings = settings
        self._tests: tuple[int, Any] | None = None
        self._recent: dict[tuple[object, ...], list[hybrid.Scored]] = {}

    @property
    def fusion(self) -> str:
        """How results are ranked and scored (``[search] fusion``)."""
        return self._fusion("fusion", DEFAULT_FUSION)

    @property
    def files_fusion(self) -> str:
        """How the evidence that ranks files is fused (``[search] files_fusion``)."""
        return self._fusion("files_fusion", DEFAULT_FILES_FUSION)

    def _fusion(self, key: str, default: str) -> str:
        from lore.search.fusion import FUSIONS

        mode = str(self.settings.get("search", {}).get(key, default))
        if mode not in FUSIONS:
            raise UsageError(
                f"[search] {key} = '{mode}' in .lore/config.toml; use one of {', '.join(FUSIONS)}"
            )
        return mode

    @property
    def half_life(self) -> float:
        return float(self.settings.get("recall", {}).get("half_life_days", 90))

    def query(
        self, text: str, kind: str, mode: str | None, *, ahead: bool = False
    ) -> tuple[hybrid.Query, str]:
        """The prepared query and the mode that will run (hybrid falls back to bm25).

        `ahead`: when the model is loaded, the query's vector is made on the
        worker thread and taken when a vector pass first needs it
        (:meth:`hybrid.Query.embedded`); the searches here run their keyword
        pass first meanwhile, where they can."""
        if mode not in (None, *hybrid.MODES):
            raise UsageError(f"unknown search mode '{mode}'; use hybrid, bm25 or vector")
        if text is not None and not isinstance(text, str):
            raise UsageError(f"the query must be text, not {type(text).__name__}; give words to search for")
        if not text or not text.strip():
            raise UsageError("the query is empty; give words to search for")
        # Half a surrogate pair (a JavaScript client's cut string) is no text a
        # tokenizer takes: it becomes U+FFFD, as a broken byte does when decoding.
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        query = hybrid.Query.of(text)
        # "???", "the", "*": nothing to match, by words or meaning (a phrase of such is none either)
        if not query.terms and not [token for token in query.exact if " " not in token]:
            raise UsageError(
                f"the query '{clip(' '.join(text.split()), 60)}' has no words to search for "
                "(only stop words or symbols); give some words"
            )
        if mode == "bm25":
            return query, "bm25"
        if ahead and mode != "vector" and self.prefetch(text, [kind]):
            # Embedded on the worker thread meanwhile: taken when the vector pass needs it.
            query.later = lambda: self.embedding.query_vector(self.store, text, kind)
            query.levels = self.embedding.similarity_levels or query.levels
            return query, mode or "hybrid"
        query.vector, query.model = self.embedding.query_vector(self.store, text, kind)
        query.levels = self.embedding.similarity_levels or query.levels
        if query.vector is None:
            if mode == "vector":
                raise UsageError(f"vector search is unavailable ({self.embedding.problem or 'see above'})")
            return query, "bm25"
        return query, mode or "hybrid"

    def prefetch(self, text: str, kinds: Sequence[str]) -> bool:
        """Start embedding `text` on the worker thread, and the vector passes of
        `kinds` (in that order) after it, for searches about to run (recall:
        code, past work, memories); whether it started (or was done)."""
        return self.embedding.prefetch(self.store, text, kinds)

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
        history: bool = True,
        period: ChunkFilter | None = None,
    ) -> list[CodeHit]:
        """Code chunks, or with `files_only` the likely files (code, past commits
        and roles; `period` limits the commits taken as evidence)."""
        from lore.search.code import search_code, search_files

        query, run = self.query(text, "code", mode, ahead=True)
        if not files_only:
            return search_code(self.store, query, flt, limit=limit, mode=run, fusion=fusion or self.fusion)
        evidence = fusion or self.files_fusion

        def past_work() -> tuple[list[hybrid.Scored], dict[int, float]]:
            if not history:
                return [], {}
            commits = self._commits(text, mode, evidence, period)
            # The same commits as calibrated relevances: what a file's shown score is.
            calibrated = self._commits(text, mode, DEFAULT_FUSION, period)
            return commits, {hit.chunk.chunk_id: hit.score for hit in calibrated}

        # Past work is searched once the code's evidence is in (its keyword
        # pass runs while the query's embedding is made).
        return search_files(
            self.store, query, past_work, flt, limit=limit, mode=run, fusion=evidence, tests=self.tests_of
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
        """Past commits matching `text`, best first, with their files as named today."""
        from lore.search.code import commit_hits, fold_copies, fold_merges

        return commit_hits(fold_copies(fold_merges(self._commits(text, mode, fusion, flt)))[:limit])

    def _commits(
        self, text: str, mode: str | None, fusion: str | None, flt: ChunkFilter | None = None
    ) -> list[hybrid.Scored]:
        """The past commits most similar to `text` (remembered briefly: recall asks
        for them twice, once as related work and once as evidence for files,
        fused each way from one search)."""
        from lore.search.files import HISTORY_COMMITS

        period = (flt.since, flt.until) if flt is not None else (None, None)
        wanted = fusion or self.fusion
        # Read once: another process indexing meanwhile must not make this
        # search's own results unfindable under a newer version.
        version = self.store.vectors_version()
        recent = self._recent.get((text, mode, wanted, period, version))
        if recent is not None:
            return recent
        query, run = self.query(text, "commit", mode, ahead=True)
        found = hybrid.search_each(
            self.store,
            "commit",
            query,
            limit=HISTORY_COMMITS,
            mode=run,
            flt=flt,
            fusions=(wanted, self.fusion, self.files_fusion, DEFAULT_FUSION),
        )
        while len(self._recent) > 8:
            self._recent.pop(next(iter(self._recent)), None)
        for fused, results in found.items():
            self._recent[(text, mode, fused, period, version)] = results
        return found[wanted]

    def tests_of(self, path: str) -> list[str]:
        """The test files that belong to a source file (cached until code changes)."""
        from lore.index.roles import SourceTestIndex

        version = self.store.vectors_version()
        if self._tests is None or self._tests[0] != version:
            self._tests = (version, SourceTestIndex(self.store.paths("code")))
        return self._tests[1].tests_for(path)[:3]

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
            count, last = access.get(record.id, (0, None))
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
