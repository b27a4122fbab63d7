"""Exact nearest-neighbour search with numpy over a cached matrix.

The matrix of one kind of chunk (memory, code, commit) is loaded once per
process and reused until the index's generation changes. Exact search over
unit vectors is a single matrix-vector product: ~1 ms per 10k chunks here.
See docs/benchmarks.md for where it stops being fast enough; a backend with
an approximate index (pgvector HNSW) would replace `top_k`.
"""

from __future__ import annotations

from dataclasses import dataclass

from lore.index.store import SQLiteIndex

_CACHE: dict[tuple[str, str, str], "VectorSet"] = {}


@dataclass
class VectorSet:
    generation: int
    ids: "np.ndarray"        # chunk ids, int64
    matrix: "np.ndarray"     # float32 [n, dim], unit rows

    def similarities(self, query: "np.ndarray") -> "np.ndarray":
        return self.matrix @ query

    def top_k(self, query: "np.ndarray", k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the k most similar chunks, best first."""
        import numpy as np

        if not len(self.ids):
            return []
        sims = self.similarities(query)
        k = min(k, len(sims))
        best = np.argpartition(-sims, k - 1)[:k]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(self.ids[i]), float(sims[i])) for i in best]


def vector_set(index: SQLiteIndex, kind: str, model: str) -> VectorSet:
    import numpy as np

    key = (str(index.path), kind, model)
    generation = index.generation()
    cached = _CACHE.get(key)
    if cached is not None and cached.generation == generation:
        return cached
    rows = index.vector_rows(kind, model)
    if rows:
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    else:
        ids, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.float32)
    _CACHE[key] = VectorSet(generation, ids, matrix)
    return _CACHE[key]
