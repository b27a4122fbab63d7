"""One hybrid search for every kind of chunk: memories, code, commits.

    query ─┬─ lexical candidates (the store's BM25, filters inside) ─┐
           └─ vector candidates  (the store's nearest, filters inside) ┴─ fuse ─ exact first ─ floor

- **Candidates** come from the store with the filter applied inside candidate
  generation; when grouping (best chunk per memory, per file) leaves fewer
  results than asked for, the pools widen until the limit is filled or the
  candidates run out.
- **Relevance, 0-1, comparable across queries**: lexical hits by
  :func:`lexical_relevance` (share of query terms matched, and how strongly);
  vector hits by :func:`similarity_relevance` (cosine mapped between the
  model's "unrelated" and "same meaning" levels); fused by
  :mod:`lore.search.fusion`. In memory search every candidate counts both
  sides: a keyword candidate beyond the nearest vector candidates is fused
  with its own cosine (looked up by id), and a vector candidate beyond the
  keyword candidates with its own BM25, not with 0 (:data:`COMPLETED_KINDS`).
- **Exact matches stay on top**: a result holding an exact identifier or the
  query's phrase, or every query term, is never outranked by a vector-only hit.
- **No good match is an answer**: results below the relevance floor are
  dropped, so a nonsense query returns nothing rather than confident noise.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

from lore.records import datarecord
from lore.search import fusion
from lore.search.text import exact_tokens, exactness, lexical_terms, match_features, terms
from lore.storage import ChunkRecord, Store
from lore.storage.base import AnyFilter

if TYPE_CHECKING:
    import numpy as np

MODES = ("hybrid", "bm25", "vector")
CANDIDATES = 100  # top-N from each list before fusion
MAX_POOL = 4000  # widening stops here
# BM25 scores grow with the number and rarity of matched terms; this many
# "points" per query term count as a half-strength match.
_HALF_SCORE_PER_TERM = 1.5
# Cosine levels of the default model (all-MiniLM-L6-v2) for "unrelated" and
# "same meaning"; see docs/benchmarks.md for how they were read off the data.
# Another model declares its own (``similarity_levels`` of its embedder):
# (relevance 0, relevance 1, below this a vector-only hit is no match at all).
SIMILARITY_FLOOR = 0.15
SIMILARITY_FULL = 0.75
DEFAULT_LEVELS = (SIMILARITY_FLOOR, SIMILARITY_FULL, SIMILARITY_FLOOR)
# Kinds whose keyword candidates beyond the nearest vector candidates are
# fused with their own cosine rather than 0 (LoCoMo R@1 .353 → .358, MRR
# .507 → .512, R@10 .652 → .658; CoSQA unchanged), and vector candidates
# beyond the keyword candidates with their own BM25 (CoSQA test MRR .503 →
# .510, LoCoMo R@10 .654 → .665, offline): memories. Not code or
# commits: on the ten time-split sets it lowered MRR@10 on seven (sqlalchemy
# .695 → .684, ripgrep .627 → .608), where the model reads code poorly and
# the files ranking weighs words and meaning its own way (docs/benchmarks.md).
COMPLETED_KINDS = frozenset({"memory"})
# Kinds whose adaptive ranking hedges its keyword weight past the first
# results (:func:`fusion.hedge`; LoCoMo R@10 .662 → .679, CoSQA test .794 →
# .816): memories. Code and commit lists are mostly evidence pools for
# ranking files, which reads their scores; there it lowered CoSQA through
# the code indexer (dev MRR@10 .463 → .444).
HEDGED_KINDS = frozenset({"memory"})
# Results below this relevance are "no good match" and left out.
RELEVANCE_FLOOR = 0.01
# Found by meaning alone (no word of the query in it) and scored under this: a
# weak result, shown marked as such; recall leaves it out (see
# lore.search.recall, where it was chosen: nonsense tasks on click scored
# 0.06-0.23, mostly under 0.19; meaning-only past commits of real tasks 0.22-0.48).
MEANING_FLOOR = 0.2


def weak(source: str, score: float) -> bool:
    """Whether a result found by `source` ("vector": by meaning alone) is a weak one."""
    return source == "vector" and score < MEANING_FLOOR


@datarecord
class Query:
    """A search query, prepared once: its terms and what it names exactly."""

    text: str
    terms: list[str]
    exact: list[str]
    vector: np.ndarray | None = None
    model: str | None = None
    levels: tuple[float, float, float] = DEFAULT_LEVELS  # the model's cosine levels (DEFAULT_LEVELS)
    # (vector, model) when first needed: the embedding is being made on another
    # thread (EmbeddingRuntime.prefetch) while the keyword pass runs.
    later: Callable[[], tuple[np.ndarray | None, str | None]] | None = None

    @classmethod
    def of(cls, text: str, vector: np.ndarray | None = None, model: str | None = None) -> Query:
        return cls(text, terms(text), exact_tokens(text), vector, model)

    def embedded(self) -> Query:
        """This query with its vector (None when the model failed meanwhile: keywords only)."""
        if self.later is not None:
            later, self.later = self.later, None
            self.vector, self.model = later()
        return self


@datarecord
class Scored:
    """One result: its chunk, 0-1 relevance and where it came from."""

    chunk: ChunkRecord
    score: float
    source: str  # bm25 | vector | hybrid
    lexical: float = 0.0
    similarity: float = 0.0
    exact: int = 0  # 2 exact identifier/phrase, 1 every term, 0 neither; -1 not read yet

    def copy(self) -> Scored:
        """A copy for a fusion to score (every fusion copies its hits; copy.copy took 5x as long)."""
        return Scored(self.chunk, self.score, self.source, self.lexical, self.similarity, self.exact)


def lexical_relevance(score: float, n_terms: int, covered: float) -> float:
    """Map a BM25 match to 0-1.

    Half of it is *coverage* (the share of query terms the chunk contains),
    half is the BM25 score squashed as s / (s + 1.5·n). Coverage keeps scores
    meaningful in tiny corpora, where BM25's IDF is near zero; the squashed
    score separates strong matches from weak ones in large corpora.
    """
    strength = max(score, 0.0) / (max(score, 0.0) + _HALF_SCORE_PER_TERM * max(1, n_terms))
    return 0.5 * covered + 0.5 * strength


def similarity_relevance(cosine: float, levels: tuple[float, float, float] = DEFAULT_LEVELS) -> float:
    """Cosine similarity mapped to 0-1 between the model's unrelated and same-meaning levels."""
    low, full = levels[0], levels[1]
    return min(1.0, max(0.0, (cosine - low) / (full - low)))


def search(
    store: Store,
    kind: str,
    query: Query,
    *,
    limit: int,
    flt: AnyFilter | None = None,
    mode: str = "hybrid",
    fusion_mode: str = "adaptive",
    key: Callable[[ChunkRecord], Hashable] | None = None,
    floor: float = RELEVANCE_FLOOR,
) -> list[Scored]:
    """The `limit` best results of `kind` for `query`, best first.

    Args:
        key: groups chunks (e.g. by memory path); the best chunk of each group
            stands for it. None: every chunk is its own result.
        mode: hybrid, bm25 or vector (vector needs ``query.vector``).
        floor: results with a lower relevance are left out (a keyword match never is).
    """
    found = search_each(
        store, kind, query, limit=limit, flt=flt, mode=mode, fusions=(fusion_mode,), key=key, floor=floor
    )
    return found[fusion_mode]


def search_each(
    store: Store,
    kind: str,
    query: Query,
    *,
    limit: int,
    fusions: Sequence[str],
    flt: AnyFilter | None = None,
    mode: str = "hybrid",
    key: Callable[[ChunkRecord], Hashable] | None = None,
    floor: float = RELEVANCE_FLOOR,
) -> dict[str, list[Scored]]:
    """:func:`search` fused each of `fusions` ways from one set of candidates
    (the keyword and vector passes are most of a search's cost): recall ranks
    past work one way and weighs it as file evidence another."""
    key = key or (lambda chunk: chunk.chunk_id)
    pool = max(limit, CANDIDATES)
    # Memories count both sides of every candidate (COMPLETED_KINDS): the keyword
    # pass also scores the vector candidates beyond its own.
    complete = mode == "hybrid" and kind in COMPLETED_KINDS and any(f != "rrf" for f in fusions)
    while True:
        if complete:  # the keyword pass scores the vector candidates too: vectors first
            vector = _vector(store, kind, query, flt, pool)
            lexical, words = _lexical(store, kind, query, flt, pool, [h.chunk.chunk_id for h in vector])
        else:  # keywords first: the query's embedding may still be on its way
            lexical, words = _lexical(store, kind, query, flt, pool, []) if mode != "vector" else ([], [])
            vector = _vector(store, kind, query, flt, pool) if mode != "bm25" else []
        out = {}
        for fusion_mode in dict.fromkeys(fusions):
            results = _fuse(store, kind, query, lexical, vector, mode, fusion_mode, key, words)
            if mode != "bm25":  # (an explicit vector search too: it listed everything at 0%)
                results = [r for r in results if _relevant(r, floor, query.levels)]
            out[fusion_mode] = results
        # Widen only where more candidates could still count: every lexical
        # match does, a nearer-first vector list only while its last is above the floor.
        full = len(lexical) >= pool or (len(vector) >= pool and _relevant(vector[-1], floor, query.levels))
        if all(len(results) >= limit for results in out.values()) or not full or pool >= MAX_POOL:
            return {fusion_mode: results[:limit] for fusion_mode, results in out.items()}
        pool *= 4


def _relevant(hit: Scored, floor: float, levels: tuple[float, float, float]) -> bool:
    """Evidence enough to show: a lexical match, or a vector match above the
    floor and above the model's "no match at all" cosine."""
    if hit.lexical > 0:
        return True
    return hit.similarity >= levels[2] and similarity_relevance(hit.similarity, levels) >= floor


def _lexical(
    store: Store, kind: str, query: Query, flt: AnyFilter | None, pool: int, also: list[int]
) -> tuple[list[Scored], list[Scored]]:
    """The keyword candidates, best first, and the chunks of `also` beyond
    them that hold a query term (each with its keyword relevance)."""
    found = store.lexical_search(kind, lexical_terms(query.terms), flt, pool, also)
    out = []
    for chunk, raw in found:
        covered, exact = match_features(
            query.terms, query.exact, chunk.text, chunk.title, chunk.keywords, chunk.path
        )
        relevance = lexical_relevance(raw, len(query.terms), covered)
        out.append(Scored(chunk, relevance, "bm25", lexical=relevance, exact=exact))
    candidates, beyond = out[:pool], out[pool:]
    candidates.sort(key=lambda s: -s.score)
    return candidates, beyond


def _vector(store: Store, kind: str, query: Query, flt: AnyFilter | None, pool: int) -> list[Scored]:
    vector = query.embedded().vector
    if vector is None or not query.model:
        return []
    nearest = store.vector_search(kind, query.model, vector, flt, pool)
    by_id = {c.chunk_id: c for c in store.chunks(kind, [i for i, _ in nearest])}
    out = []
    for chunk_id, cosine in nearest:
        chunk = by_id.get(chunk_id)
        if chunk is not None:  # exactness is read later, only where it can matter
            out.append(
                Scored(
                    chunk, similarity_relevance(cosine, query.levels), "vector", similarity=cosine, exact=-1
                )
            )
    return out


def _fuse(
    store: Store,
    kind: str,
    query: Query,
    lexical: list[Scored],
    vector: list[Scored],
    mode: str,
    fusion_mode: str,
    key: Callable[[ChunkRecord], Hashable],
    beyond: list[Scored],
) -> list[Scored]:
    """Best chunk per group from each list, the lists fused, exact matches first.

    `beyond`: vector candidates past the keyword candidates, with the
    keyword relevance of their words (memories: :data:`COMPLETED_KINDS`).
    """
    lex, vec = _best_per_group(lexical, key), _best_per_group(vector, key)
    if mode == "bm25" or not vec:
        return list(lex.values())
    if mode == "vector":
        return list(vec.values())
    complete = fusion_mode != "rrf" and kind in COMPLETED_KINDS
    meaning = _meaning_of(store, kind, query, [h for g, h in lex.items() if g not in vec] if complete else [])
    by_chunk = {hit.chunk.chunk_id: hit for hit in beyond} if complete else {}
    words = {g: by_chunk[h.chunk.chunk_id] for g, h in vec.items() if h.chunk.chunk_id in by_chunk}
    lists = (
        [(k, s.score) for k, s in lex.items()],
        [(k, s.score) for k, s in vec.items()],
        fusion_mode,
        len(query.terms),
        {
            g: similarity_relevance(meaning[h.chunk.chunk_id], query.levels)
            for g, h in lex.items()
            if h.chunk.chunk_id in meaning
        },
        {g: hit.lexical for g, hit in words.items()},
    )
    fused = fusion.fuse(*lists)
    if fusion_mode == "adaptive" and kind in HEDGED_KINDS and len(fused) > fusion.HEDGE_FROM:
        fused = _hedged(fused, [fusion.fuse(*lists, weight=w) for w in fusion.HEDGE_WEIGHTS])
    out = []
    for group, score, source in fused:
        if group in lex:
            hit = lex[group].copy()  # each fusion scores its own
        else:
            hit = vec[group].copy()
            worded = words.get(group)
            if worded is not None:
                hit.lexical, hit.exact = worded.lexical, worded.exact
        if group in vec:
            hit.similarity = vec[group].similarity
        elif hit.chunk.chunk_id in meaning:
            hit.similarity = meaning[hit.chunk.chunk_id]
        hit.score, hit.source = score, source
        out.append(hit)
    if fusion_mode == "adaptive" and _exact_at_their_words(out, 1 if len(query.text.split()) == 1 else 2):
        out.sort(key=lambda h: -h.score)  # stable: the rest keeps its order
    return exact_first(out, query)


def _exact_at_their_words(hits: list[Scored], exact: int = 2) -> bool:
    """Raise a hit holding the query's exact identifier or phrase to its keyword
    relevance where the fusion scored it lower (``lore code ZebraStripes`` gave
    the one chunk defining it 0.22, its words alone 0.92: its meaning, averaged
    over a long chunk, pulled it down). A query of one word names what it
    looks for as exactly (`exact` 1: the hit holds the word): ``nonempty`` in
    zod showed its definition at 0.18, and 0.88 in BM25 mode. Whether any was raised."""
    raised = False
    for hit in hits:
        if hit.exact >= exact and hit.lexical > hit.score:
            hit.score, raised = hit.lexical, True
    return raised


def _hedged(
    fused: list[tuple[Hashable, float, str]], others: list[list[tuple[Hashable, float, str]]]
) -> list[tuple[Hashable, float, str]]:
    """`fused` in :func:`fusion.hedge`'s order. Shown scores follow the order:
    a result the hedge lifted above better ones is raised to the best score
    ranked after it. The others keep theirs (lowering them instead would
    understate them to recall, which weighs memories by score)."""
    by_key = {key: (score, source) for key, score, source in fused}
    order = fusion.hedge([key for key, _, _ in fused], [[key for key, _, _ in other] for other in others])
    out, best_after = [], 0.0
    for key in reversed(order):
        score, source = by_key[key]
        best_after = max(best_after, score)
        out.append((key, best_after, source))
    return out[::-1]


def _meaning_of(store: Store, kind: str, query: Query, hits: list[Scored]) -> dict[int, float]:
    """{chunk id: cosine} of keyword hits the vector candidates did not reach
    (their meaning counts in the fused score as the vector hits' does)."""
    if not hits or query.vector is None or not query.model:
        return {}
    return store.vector_scores(kind, query.model, query.vector, [h.chunk.chunk_id for h in hits])


def _best_per_group(hits: list[Scored], key: Callable[[ChunkRecord], Hashable]) -> dict[Hashable, Scored]:
    best: dict[Hashable, Scored] = {}
    for hit in hits:  # already best first
        best.setdefault(key(hit.chunk), hit)
    return best


def _meaning_only(hit: Scored) -> bool:
    """A vector candidate that holds none of the query's words (by BM25) and is no exact match."""
    return hit.source == "vector" and hit.lexical == 0 and not hit.exact


def exact_first(ranked: list[Scored], query: Query) -> list[Scored]:
    """Move vector-only hits that lack the query's terms below the last hit that
    matches it exactly (an identifier or the phrase) or holds every query
    term; the rest keeps its order."""
    last = max((i for i, hit in enumerate(ranked) if hit.exact > 0), default=-1)
    if last < 0:
        return ranked
    head = ranked[: last + 1]
    for hit in head:
        if hit.exact < 0:
            chunk = hit.chunk
            hit.exact = exactness(
                query.terms, query.exact, chunk.text, chunk.title, chunk.keywords, chunk.path
            )
    weak = [h for h in head if _meaning_only(h)]
    if not weak:
        return ranked
    kept = [h for h in head if not _meaning_only(h)]
    demoted = weak
    for hit in demoted:  # keep scores monotone with rank
        hit.score = min(hit.score, kept[-1].score)
    return kept + demoted + ranked[last + 1 :]
