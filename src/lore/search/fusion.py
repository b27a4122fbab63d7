"""Combining keyword and vector rankings into one, with scores that mean something.

Three modes (``[search] fusion`` in config.toml):

- ``adaptive`` (default) — a weighted sum of the two calibrated relevances
  (both 0-1: :func:`~lore.search.hybrid.lexical_relevance` and
  :func:`~lore.search.hybrid.similarity_relevance`), where the keyword
  side's weight follows how clearly *it* picks a winner for this query: the
  gap between its best match and the mean of its top 20 ("peak"). A query
  whose words single out one document (names, identifiers, rare terms)
  trusts keywords up to 0.8; a query whose words are spread thinly (natural
  language against code) trusts meaning up to 0.8. The vector side's own
  peak, measured the same way, takes up to 30% off the keyword weight when
  its winner is also near in meaning (relevance above ``VECTOR_NEAR``, in
  full at 1): when meaning clearly singles out a close paraphrase, a
  keyword tie-break should not bury it, but a peak among distant
  neighbours says little. Chosen on the dev sets (LoCoMo, CoSQA dev;
  docs/benchmarks.md), where fixed weights helped one set and hurt the
  other. That weight is still a guess per query, so in memory search a
  page hedges it (:func:`hedge`): its first ``HEDGE_FROM`` results are
  the adaptive ranking's, and each next one is taken in turn from that
  ranking and from the rankings a words-leaning (0.7) and a
  meaning-leaning (0.3) keyword weight give.
- ``rrf`` — reciprocal rank fusion (seed 000): each list contributes
  w/(k + rank), k = 5, vector weight 1.5 (shrinking for long queries). The
  score is normalised by its maximum, so it says where a result ranked,
  not how relevant it is.
- ``weighted`` — seed 004: 0.7 × vector relevance + 0.3 × keyword relevance.

Ranking files (``lore code --files-only``, recall's likely files) fuses its
evidence, code chunks and similar past commits, by ``[search] files_fusion``:
``rrf`` by default, where the lists' order is what counts; the files' own
ranking is RRF over that evidence anyway (:mod:`lore.search.files`).
"""

from __future__ import annotations

from collections.abc import Hashable

FUSIONS = ("adaptive", "rrf", "weighted")
DEFAULT_FUSION = "adaptive"
# Ranking files: the chunks and commits that are evidence are ranked by RRF,
# whose vector weight falls for long queries (a task's whole text). On all ten
# time-split sets mean MRR@10 .725 → .742 against adaptive (docs/benchmarks.md).
DEFAULT_FILES_FUSION = "rrf"

RRF_K = 5
RRF_WEIGHTS = (1.0, 1.5)  # keyword, vector
VECTOR_WEIGHT = 0.7  # weighted mode (seed 004)
LONG_QUERY = 12  # terms; beyond this the RRF vector weight falls
# adaptive mode: keyword weight from LOW to HIGH as the keyword peak goes from PEAK_LOW to PEAK_HIGH.
KEYWORD_WEIGHT_LOW, KEYWORD_WEIGHT_HIGH = 0.2, 0.8
PEAK_LOW, PEAK_HIGH = 0.10, 0.25
PEAK_DEPTH = 20
VECTOR_PEAK_CUT = 0.3  # share of the keyword weight a clear vector winner takes away...
VECTOR_NEAR = 0.8  # ... in full when it is also this close in meaning (relevance 1: all of it)
LONG_QUERY_TERMS = 8
# adaptive mode: past the first HEDGE_FROM results, each next one is taken in
# turn from the adaptive ranking and the rankings with these keyword weights.
HEDGE_FROM = 7
HEDGE_WEIGHTS = (0.7, 0.3)


def vector_weight(n_terms: int) -> float:
    """RRF weight of the vector list for a query of `n_terms` terms.

    A long query (a whole commit message, a task description) is averaged
    into one vector and truncated by the model, while its many exact terms
    make keyword matching strong; on gitlog-flask the vector weight that
    worked best for such queries was about a third of the short-query one.
    """
    return RRF_WEIGHTS[1] * min(1.0, LONG_QUERY / max(1, n_terms))


def _gap(scores: list[float]) -> float:
    """How far the best of a ranked list (scores best first) stands above the
    mean of the top ``PEAK_DEPTH``."""
    top = scores[:PEAK_DEPTH]
    return top[0] - sum(top) / len(top) if top else 0.0


def _peak(scores: list[float]) -> float:
    """The keyword gap mapped to 0-1 between ``PEAK_LOW`` and ``PEAK_HIGH``."""
    return min(1.0, max(0.0, (_gap(scores) - PEAK_LOW) / (PEAK_HIGH - PEAK_LOW)))


def keyword_weight(
    keyword_scores: list[float], n_terms: int = 1, vector_scores: list[float] | None = None
) -> float:
    """Adaptive mode's keyword weight for one query, from its keyword and
    vector relevances (each best first) and its length.

    A long query (a task description, a commit message) is averaged into one
    vector and truncated by the model, while its many exact terms make
    keyword matching strong: beyond ``LONG_QUERY_TERMS`` terms the vector
    side's share shrinks in proportion (on the code dev sets this raised
    MRR@10 by .01-.02 and left the short-query memory sets unchanged).
    """
    weight = KEYWORD_WEIGHT_LOW + (KEYWORD_WEIGHT_HIGH - KEYWORD_WEIGHT_LOW) * _peak(keyword_scores)
    if vector_scores:
        clear = min(1.0, max(0.0, _gap(vector_scores)) / PEAK_HIGH)
        near = min(1.0, max(0.0, (vector_scores[0] - VECTOR_NEAR) / (1 - VECTOR_NEAR)))
        weight *= 1 - VECTOR_PEAK_CUT * clear * near
    if n_terms > LONG_QUERY_TERMS:
        weight = max(weight, 1 - (1 - weight) * LONG_QUERY_TERMS / n_terms)
    return weight


def fuse(
    keyword: list[tuple[Hashable, float]],
    vector: list[tuple[Hashable, float]],
    mode: str = DEFAULT_FUSION,
    n_terms: int = 1,
    meaning: dict[Hashable, float] | None = None,
    words: dict[Hashable, float] | None = None,
    weight: float | None = None,
) -> list[tuple[Hashable, float, str]]:
    """Merge two ranked lists of (key, relevance 0-1) into (key, fused score, source), best first.

    `source` is "hybrid" when both lists had the key, else the one that did.
    `n_terms` (the query's) sets the vector list's RRF weight. `meaning`: the
    vector relevance of keyword candidates the vector list did not reach
    (their exact cosines, looked up), so the score sums (adaptive, weighted)
    count both sides of every candidate rather than 0 for the side that
    missed it; `words`, likewise, the keyword relevance of vector candidates
    the keyword list did not reach. RRF ranks, and ignores both. `weight`:
    adaptive mode's keyword weight, instead of :func:`keyword_weight`'s.
    """
    meaning, words = meaning or {}, words or {}
    if mode not in FUSIONS:
        raise ValueError(f"unknown fusion {mode!r}; use one of {FUSIONS}")
    kw = {key: (rank, score) for rank, (key, score) in enumerate(keyword)}
    vec = {key: (rank, score) for rank, (key, score) in enumerate(vector)}
    if weight is None:
        weight = keyword_weight([score for _, score in keyword], n_terms, [score for _, score in vector])
    rrf_weights = (RRF_WEIGHTS[0], vector_weight(n_terms))
    fused = []
    for key in {**kw, **vec}:
        in_kw, in_vec = key in kw, key in vec
        k_score = kw[key][1] if in_kw else words.get(key, 0.0)
        v_score = vec[key][1] if in_vec else meaning.get(key, 0.0)
        if mode == "adaptive":
            score = weight * k_score + (1 - weight) * v_score
        elif mode == "rrf":
            total = sum(
                list_weight / (RRF_K + 1 + lst[key][0])
                for lst, list_weight in zip((kw, vec), rrf_weights)
                if key in lst
            )
            score = total / (sum(rrf_weights) / (RRF_K + 1))
        else:
            score = VECTOR_WEIGHT * max(0.0, v_score) + (1 - VECTOR_WEIGHT) * k_score
        source = "hybrid" if in_kw and in_vec else ("bm25" if in_kw else "vector")
        fused.append((key, min(1.0, score), source))
    fused.sort(key=lambda item: -item[1])
    return fused


def hedge(ranked: list[Hashable], others: list[list[Hashable]], start: int = HEDGE_FROM) -> list[Hashable]:
    """`ranked`'s first `start` keys, then one key in turn from `ranked` and
    from each of `others` (the next one not yet taken), until all are taken.

    The adaptive keyword weight is a guess for each query: its first results
    are its best bets, and the rest of a page hedges the guess with what a
    words-leaning and a meaning-leaning weight would have ranked next. Every
    key of `ranked` is kept, once; a longer list starts with a shorter one.
    """
    out = dict.fromkeys(ranked[:start])
    known = set(ranked)
    lists = [iter(ranked), *(iter([k for k in other if k in known]) for other in others)]
    while lists:
        for source in list(lists):
            key = next((k for k in source if k not in out), None)
            if key is None:
                lists.remove(source)
            else:
                out[key] = None
    return list(out)
