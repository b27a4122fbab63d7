"""Exact nearest-neighbour search with numpy over a cached matrix.

The matrix of one kind of chunk (memory, code, commit) is loaded once per
process and reused until the index's vectors change. Reading 100k vectors
out of SQLite takes seconds, too slow for a CLI started by a hook, so the
matrix is also cached on disk as .npy files (`.lore/local/cache/`, keyed by
the index's vectors version) and memory-mapped: a cold process pays only for
the pages it reads. Exact search over unit vectors is one matrix-vector
product.
See docs/benchmarks.md for where it stops being fast enough; a backend with
an approximate index (pgvector HNSW) would replace `top_k`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lore.index.store import SQLiteIndex

if TYPE_CHECKING:
    import numpy as np

_CACHE: dict[tuple[str, str, str], VectorSet] = {}


@dataclass
class VectorSet:
    version: int
    ids: np.ndarray  # chunk ids, int64
    matrix: np.ndarray  # float32 [n, dim], unit rows

    def similarities(self, query: np.ndarray) -> np.ndarray:
        return self.matrix @ query

    def top_k(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
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
    key = (str(index.path), kind, model)
    version = index.vectors_version()
    cached = _CACHE.get(key)
    if cached is None or cached.version != version:
        cached = _load(index, kind, model, version)
        _CACHE[key] = cached
    return cached


def _load(index: SQLiteIndex, kind: str, model: str, version: int) -> VectorSet:
    import hashlib
    import os

    import numpy as np

    folder = index.path.parent / "local" / "cache"
    prefix = f"vectors-{index.identity()[:12]}-{kind}-{hashlib.sha1(model.encode()).hexdigest()[:10]}"
    # Files are per version and never rewritten; the .vec file is written last,
    # so its presence means the pair is complete.
    ids_file, vec_file = folder / f"{prefix}-v{version}.ids.npy", folder / f"{prefix}-v{version}.vec.npy"
    if vec_file.exists():
        try:
            ids, matrix = np.load(ids_file), np.load(vec_file, mmap_mode="r")
            if len(ids) == matrix.shape[0]:
                return VectorSet(version, ids, matrix)
        except (OSError, ValueError):
            pass
    rows = index.vector_rows(kind, model)
    if rows:
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    else:
        ids, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.float32)
    if len(ids) >= _DISK_CACHE_MIN:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for path, array in ((ids_file, ids), (vec_file, matrix)):
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as handle:
                    np.save(handle, array)
                os.replace(tmp, path)
            # Older versions of this matrix, and matrices of indexes since rebuilt.
            for old in folder.glob(f"vectors-*-{kind}-*.npy"):
                if old not in (ids_file, vec_file) and (
                    old.name.startswith(prefix) or not old.name.startswith(f"vectors-{index.identity()[:12]}")
                ):
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache is an optimisation, never a failure
    return VectorSet(version, ids, matrix)


# Below this many vectors, reading them from SQLite is as fast as the files.
_DISK_CACHE_MIN = 5000
