"""Combining keyword and vector rankings.

Two modes (``[search] fusion`` in config.toml):

- ``rrf`` (default) — reciprocal rank fusion (seed 000): each list
  contributes w/(k + rank). Seed 000 suggests k = 60 with equal weights; on
  the dev sets (docs/benchmarks.md) k = 5 with the vector list weighted 1.5
  did better on both (LoCoMo R@10 .655 → .669, CoSQA-dev MRR .471 → .527).
  The score is normalised by its maximum, (1 + 1.5)/(k + 1): 1.0 means first
  in both lists; 0.6 first by vectors alone, 0.4 first by keywords alone.
  For queries longer than 12 terms the vector weight shrinks (see
  :func:`vector_weight`).
- ``weighted`` — seed 004: 0.7 × vector similarity + 0.3 × keyword relevance,
  both already 0-1, so the score is an absolute relevance estimate.
"""

from __future__ import annotations

from collections.abc import Hashable

RRF_K = 5
RRF_WEIGHTS = (1.0, 1.5)  # keyword, vector
VECTOR_WEIGHT = 0.7  # weighted mode (seed 004)
CANDIDATES = 40  # top-N from each list (dev results flat from 30 to 100)
LONG_QUERY = 12  # terms; beyond this the vector list's weight falls


def vector_weight(n_terms: int) -> float:
    """RRF weight of the vector list for a query of `n_terms` terms.

    A long query (a whole commit message, a task description) is averaged
    into one vector and truncated by the model, while its many exact terms
    make keyword matching strong; on gitlog-flask the vector weight that
    worked best for such queries was about a third of the short-query one.
    """
    return RRF_WEIGHTS[1] * min(1.0, LONG_QUERY / max(1, n_terms))


FUSIONS = ("rrf", "weighted")


def fuse(
    keyword: list[tuple[Hashable, float]],
    vector: list[tuple[Hashable, float]],
    mode: str = "rrf",
    n_terms: int = 1,
) -> list[tuple[Hashable, float, str]]:
    """Merge two ranked lists of (key, score 0-1) into (key, fused score, source), best first.

    `source` is "hybrid" when both lists had the key, else the one that did.
    `n_terms` (the query's) sets the vector list's RRF weight.
    """
    weights = (RRF_WEIGHTS[0], vector_weight(n_terms))
    kw = {key: (rank, score) for rank, (key, score) in enumerate(keyword)}
    vec = {key: (rank, score) for rank, (key, score) in enumerate(vector)}
    fused = []
    for key in {**kw, **vec}:
        in_kw, in_vec = key in kw, key in vec
        if mode == "rrf":
            total = sum(
                weight / (RRF_K + 1 + lst[key][0]) for lst, weight in zip((kw, vec), weights) if key in lst
            )
            score = total / (sum(weights) / (RRF_K + 1))
        elif mode == "weighted":
            score = VECTOR_WEIGHT * max(0.0, vec[key][1] if in_vec else 0.0) + (1 - VECTOR_WEIGHT) * (
                kw[key][1] if in_kw else 0.0
            )
        else:
            raise ValueError(f"unknown fusion {mode!r}; use one of {FUSIONS}")
        source = "hybrid" if in_kw and in_vec else ("bm25" if in_kw else "vector")
        fused.append((key, score, source))
    fused.sort(key=lambda item: -item[1])
    return fused
