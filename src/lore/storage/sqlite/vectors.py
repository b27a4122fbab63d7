"""Exact nearest-neighbour search with numpy over a cached matrix.

The matrix of one kind of chunk (memory, code, commit) is loaded once per
process and reused until the index's vectors change. Reading 100k vectors
out of SQLite takes seconds, too slow for a CLI started by a hook, so the
matrix is also cached on disk as .npy files (`.lore/local/cache/`, keyed by
the index's identity and vectors version) and memory-mapped: a cold process
pays only for the pages it reads. Exact search over unit vectors is one
matrix-vector product (see docs/benchmarks.md for where that stops being
fast enough; the PostgreSQL backend uses pgvector's HNSW index instead).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_CACHE: dict[tuple[str, str, str], VectorSet] = {}

# Below this many vectors, reading them from SQLite is about as fast as the
# files (a cold read of 3,657 commit vectors from SQLite costs ~100 ms of CPU,
# the .npy files ~6 ms).
DISK_CACHE_MIN = 256


@dataclass
class VectorSet:
    version: int
    ids: np.ndarray  # chunk ids, int64
    matrix: np.ndarray  # float32 [n, dim], unit rows

    def __len__(self) -> int:
        return len(self.ids)

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row with `query`: the one matrix product of a search."""
        sims: np.ndarray = self.matrix @ query
        return sims

    def best(self, sims: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the k best rows of `sims` (from :meth:`similarities`), best first."""
        import numpy as np

        if allowed is not None:
            sims = np.where(allowed, sims, -np.inf)
            k = min(k, int(allowed.sum()))
        k = min(k, len(sims))
        if k <= 0:
            return []
        best = np.argpartition(-sims, k - 1)[:k]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(self.ids[i]), float(sims[i])) for i in best]

    def mask(self, chunk_ids: set[int]) -> np.ndarray:
        import numpy as np

        return np.isin(self.ids, np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids)))


def vector_set(
    db_path: Path,
    identity: str,
    kind: str,
    model: str,
    version: int,
    rows: Callable[[], list[tuple[int, bytes]]],
) -> VectorSet:
    """The (cached) matrix of `kind`'s vectors for `model` at `version`.

    Args:
        rows: reads (chunk id, float32 bytes) of every embedded chunk, when
            neither the process nor the disk cache has this version.
    """
    key = (str(db_path), kind, model)
    cached = _CACHE.get(key)
    if cached is None or cached.version != version:
        cached = _load(db_path.parent / "local" / "cache", identity, kind, model, version, rows)
        _CACHE[key] = cached
    return cached


def _load(
    folder: Path,
    identity: str,
    kind: str,
    model: str,
    version: int,
    rows: Callable[[], list[tuple[int, bytes]]],
) -> VectorSet:
    import numpy as np

    prefix = f"vectors-{identity[:12]}-{kind}-{hashlib.sha1(model.encode()).hexdigest()[:10]}"
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
    found = rows()
    if found:
        ids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32).reshape(len(found), -1)
    else:
        ids, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.float32)
    if len(ids) >= DISK_CACHE_MIN:
        _save(folder, prefix, identity, kind, (ids_file, ids), (vec_file, matrix))
    return VectorSet(version, ids, matrix)


def _save(folder: Path, prefix: str, identity: str, kind: str, *pairs: tuple[Path, np.ndarray]) -> None:
    import numpy as np

    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path, array in pairs:
            tmp = f"{path}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                np.save(handle, array)
            os.replace(tmp, path)
        keep = {p for p, _ in pairs}
        # Older versions of this matrix, and matrices of indexes since rebuilt.
        for old in folder.glob(f"vectors-*-{kind}-*.npy"):
            if old not in keep and (
                old.name.startswith(prefix) or not old.name.startswith(f"vectors-{identity[:12]}")
            ):
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache is an optimisation, never a failure


def clear_process_cache() -> None:
    _CACHE.clear()
