"""Exact nearest-neighbour search with numpy over a cached matrix.

The matrix of one kind of chunk (memory, code, commit) is loaded once per
process and reused until the index's vectors change. Reading 100k vectors
out of SQLite takes seconds, too slow for a CLI started by a hook, so the
matrix is also cached on disk as .npy files (`.lore/local/cache/`, keyed by
the index's identity and vectors version) and memory-mapped: a cold process
pays only for the pages it reads. Search over unit vectors is one
matrix-vector product, exact up to `APPROX_MIN` vectors. That product is
memory-bound (100k x 384 floats is 154 MB read per query), so larger sets
first rank every row by a 1-bit code (the sign of each dimension around the
set's mean, stored word-major so the Hamming distance is a few vectorised
passes over 48 bytes a row), then compute exact cosines for the best
`candidates()` rows only: ~2 ms instead of ~10-15 ms at 100k. Returned
scores are always exact cosines; what the prefilter may cost is a true
neighbour ranked outside the candidates (recall measured by
bench/vector_prefilter.py). The PostgreSQL backend uses pgvector's HNSW.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from lore.atomic import contained
from lore.records import datarecord

if TYPE_CHECKING:
    import numpy as np

_CACHE: dict[tuple[str, str, str], VectorSet] = {}

# Below this many vectors, reading them from SQLite is about as fast as the
# files (a cold read of 3,657 commit vectors from SQLite costs ~100 ms of CPU,
# the .npy files ~6 ms).
DISK_CACHE_MIN = 256

# From this many vectors on, a 1-bit prefilter picks the rows scored exactly.
APPROX_MIN = 25_000

# While another process writes vectors (a hook's `lore index` embedding a
# commit's chunks, batch after batch), a matrix read at most this many seconds
# ago serves searches: read again at every batch's new version, a 53k-vector
# matrix made each recall of an MCP server take ~1 s instead of ~30 ms. What it
# may miss meanwhile is the vector side of chunks embedded since (their words
# still find them); rows of chunks removed since are left out where read.
STALE_SECONDS = 2.0


# Searches usually want at most this many results (a files ranking's code
# pool, lore.search.files.CODE_CHUNKS): a product worked out ahead is for these.
AHEAD_RESULTS = 150


class _Product:
    """One query's cosines over a set, worked out by the first thread to claim it."""

    def __init__(self, key: bytes, count: int) -> None:
        self.key, self.count = key, count  # the query's bytes; rows scored (every row: an exact set)
        self.pid = os.getpid()  # a fork's child finds its parent's products, never done there
        self.done = threading.Event()
        self.rows: np.ndarray | None = None  # the prefilter's rows, nearest first (None: every row)
        self.cosines: np.ndarray | None = None  # theirs, in that order (or every row's); None: failed


def candidates(n: int, k: int) -> int:
    """How many prefiltered rows get an exact cosine when `k` are wanted of `n`."""
    return min(n, max(2_000, 20 * k, n // 40))


@datarecord
class VectorSet:
    version: int
    ids: np.ndarray  # chunk ids, int64
    matrix: np.ndarray  # float32 [n, dim], unit rows
    codes: Codes | None = None  # the 1-bit prefilter, for sets of APPROX_MIN rows and more
    # Vectors of the model left out because they have another dimension than the
    # query's: the same model name served a different model (re-embed), or damage.
    skipped: int = 0
    damaged: int = 0  # vectors holding NaN or infinity (damage): left out too
    loaded_at: float = field(default_factory=time.monotonic, repr=False)
    _order: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _product: _Product | None = field(default=None, repr=False)  # the last query's (see similarities)
    _claiming: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def ahead(self, query: np.ndarray) -> None:
        """Work out :meth:`similarities` for `query` now, for up to
        :data:`AHEAD_RESULTS` results (on the thread that embedded it, while
        the searching thread runs its keyword pass), unless a search has
        claimed that work already."""
        key, count = query.tobytes(), self._count(AHEAD_RESULTS)
        with self._claiming:
            if self._product is not None and self._product.key == key and self._product.pid == os.getpid():
                return
            product = self._product = _Product(key, count)
        self._work_out(product, query)

    def similarities(self, query: np.ndarray, k: int) -> np.ndarray:
        """Cosine of every row with `query`, or of the prefilter's best rows for `k` (others -inf).

        The one matrix product of a search: widening only re-ranks it. A
        product worked out for this query ahead (:meth:`ahead`) serves it, once
        done, when it scored as many rows; the same cosines either way.
        """
        import numpy as np

        key, count = query.tobytes(), self._count(k)
        with self._claiming:
            product = self._product
            mine = (
                product is None or product.key != key or product.count < count or product.pid != os.getpid()
            )
            if mine:
                product = self._product = _Product(key, count)
        assert product is not None
        if mine:
            self._work_out(product, query)
        else:
            product.done.wait()
        if product.cosines is None:  # it failed where it ran: meet the failure here
            product = _Product(key, count)
            self._work_out(product, query)
        assert product.cosines is not None
        if product.rows is None:
            return product.cosines
        sims = np.full(len(self), -np.inf, dtype=np.float32)
        sims[product.rows[:count]] = product.cosines[:count]
        return sims

    def _count(self, k: int) -> int:
        """How many rows a search for `k` results scores exactly."""
        return len(self) if self.codes is None else candidates(len(self), k)

    def _work_out(self, product: _Product, query: np.ndarray) -> None:
        """Fill `product`: every row's cosine, or the prefilter's `count` nearest rows' (nearest first)."""
        import numpy as np

        try:
            if self.codes is None:
                product.cosines = self.matrix @ query
                product.cosines.setflags(write=False)  # handed to every search with this query
            else:
                rows = self.codes.nearest(query, product.count)
                ascending = np.sort(rows)  # matrix rows read in order
                cosines = self.matrix[ascending] @ query
                product.rows, product.cosines = rows, cosines[np.searchsorted(ascending, rows)]
        finally:
            product.done.set()

    def best_exact(self, query: np.ndarray, k: int, allowed: np.ndarray) -> list[tuple[int, float]]:
        """The k best rows among `allowed` by exact cosine (a selective filter's last resort)."""
        import numpy as np

        rows = np.flatnonzero(allowed)
        sims = np.full(len(self), -np.inf, dtype=np.float32)
        sims[rows] = self.matrix[rows] @ query
        return self.best(sims, k, allowed)

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
        return [(int(self.ids[i]), float(sims[i])) for i in best if sims[i] > -np.inf]

    def cosines(self, query: np.ndarray, chunk_ids: Sequence[int]) -> dict[int, float]:
        """{chunk id: exact cosine with `query`} of the given chunks held here."""
        import numpy as np

        if not len(self) or not len(chunk_ids):
            return {}
        if self._order is None:  # (order, the ids in that order), made on the first lookup
            order = np.argsort(self.ids, kind="stable")
            self._order = (order, self.ids[order])
        order, sorted_ids = self._order
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        rows = order[np.minimum(np.searchsorted(sorted_ids, wanted), len(order) - 1)]
        rows = rows[self.ids[rows] == wanted]
        sims = self.matrix[rows] @ query
        return {int(i): float(c) for i, c in zip(self.ids[rows], sims, strict=True)}

    def mask(self, chunk_ids: set[int]) -> np.ndarray:
        import numpy as np

        return np.isin(self.ids, np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids)))


@datarecord
class Codes:
    """Sign bits of each row around the set's mean, as uint64 words [words, n] (word-major)."""

    center: np.ndarray  # float32 [dim]
    words: np.ndarray  # uint64 [ceil(dim / 64), n]

    @classmethod
    def of(cls, matrix: np.ndarray) -> Codes:
        import numpy as np

        center = np.asarray(matrix.mean(axis=0), dtype=np.float32)
        words = np.empty((-(-matrix.shape[1] // 64), matrix.shape[0]), dtype=np.uint64)
        for start in range(0, matrix.shape[0], 16_384):  # bounded temporaries
            block = np.asarray(matrix[start : start + 16_384])
            words[:, start : start + len(block)] = _pack(block > center).T
        return cls(center, words)

    def nearest(self, query: np.ndarray, count: int) -> np.ndarray:
        """Row indices of the `count` rows whose codes are nearest the query's,
        nearest first, ties by row: so the nearest `c` of them are the
        nearest `c` (a product worked out for more rows serves fewer)."""
        import numpy as np

        code = _pack((query > self.center)[None, :])[0]
        distance = np.bitwise_count(self.words[0] ^ code[0]).astype(np.int64)
        for word in range(1, len(code)):
            distance += np.bitwise_count(self.words[word] ^ code[word])
        n = len(distance)
        order = distance * n + np.arange(n)  # one value per row: no ties
        if count >= n:
            return np.argsort(order)
        rows = np.argpartition(order, count - 1)[:count]
        return rows[np.argsort(order[rows])]


def _pack(signs: np.ndarray) -> np.ndarray:
    """Bool [n, dim] as uint64 [n, ceil(dim / 64)] (zero-padded)."""
    import numpy as np

    packed = np.packbits(signs, axis=1)
    pad = -packed.shape[1] % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def vector_set(
    db_path: Path,
    identity: str,
    kind: str,
    model: str,
    version: int,
    rows: Callable[[], list[tuple[int, bytes]]],
    dim: int,
    *,
    stale_ok: bool = False,
) -> VectorSet:
    """The (cached) matrix of `kind`'s `dim`-dimensional vectors for `model` at `version`.

    Args:
        rows: reads (chunk id, float32 bytes) of every embedded chunk, when
            neither the process nor the disk cache has this version.
        dim: the query's dimension; vectors of another are left out (counted
            in ``skipped``), as PostgreSQL compares only vectors of the query's.
        stale_ok: a matrix of an older version read less than
            :data:`STALE_SECONDS` ago will do (another process is writing).
    """
    key = (str(db_path), kind, model)
    cached = _CACHE.get(key)
    if cached is None or not _serves(cached, version, dim, stale_ok):
        folder = db_path.parent / "local" / "cache"
        # No disk cache through a link out of the index's folder (a cloned repository's `.lore/local`).
        cached = _load(
            folder if contained(db_path.parent, folder) else None, identity, kind, model, version, rows, dim
        )
        _CACHE[key] = cached
    return cached


def _no_products_in_a_fork() -> None:
    """A forked child has none of its parent's threads: a product one of them was
    working out is never done there (a search would wait for it), and a claim it
    held is never let go. The child works out its own."""
    for vectors in _CACHE.values():
        vectors._product, vectors._claiming = None, threading.Lock()


os.register_at_fork(after_in_child=_no_products_in_a_fork)


def held_vector_set(
    db_path: Path, kind: str, model: str, version: int, dim: int, *, stale_ok: bool = False
) -> VectorSet | None:
    """The matrix :func:`vector_set` would give, if this process holds it already (else None)."""
    cached = _CACHE.get((str(db_path), kind, model))
    if cached is None or not _serves(cached, version, dim, stale_ok):
        return None
    return cached


def _serves(cached: VectorSet, version: int, dim: int, stale_ok: bool) -> bool:
    if cached.matrix.shape[1] != dim:
        return False
    if cached.version == version:
        return True
    return stale_ok and time.monotonic() - cached.loaded_at < STALE_SECONDS


def _load(
    folder: Path | None,
    identity: str,
    kind: str,
    model: str,
    version: int,
    rows: Callable[[], list[tuple[int, bytes]]],
    dim: int,
) -> VectorSet:
    import numpy as np

    prefix = f"vectors-{identity[:12]}-{kind}-{hashlib.sha1(model.encode()).hexdigest()[:10]}"
    # Files are per version and never rewritten; the .vec file is written last,
    # so its presence means the pair is complete. No folder: no disk cache.
    place = folder or Path(os.devnull)
    ids_file, vec_file = place / f"{prefix}-v{version}.ids.npy", place / f"{prefix}-v{version}.vec.npy"
    codes_file = place / f"{prefix}-v{version}.codes.npz"
    if folder is not None and vec_file.exists():
        try:
            ids, matrix = np.load(ids_file), np.load(vec_file, mmap_mode="r")
            if ids.ndim == 1 and matrix.ndim == 2 and matrix.shape == (len(ids), dim):
                return VectorSet(version, ids, matrix, _codes(codes_file, matrix))
        except (OSError, ValueError):
            pass
    found = rows()
    width = 4 * dim  # float32
    usable = [r for r in found if len(r[1]) == width]
    damaged = 0
    if usable:
        ids = np.fromiter((r[0] for r in usable), dtype=np.int64, count=len(usable))
        matrix = np.frombuffer(b"".join(r[1] for r in usable), dtype=np.float32).reshape(len(usable), dim)
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():  # one such row makes numpy warn at every search, and ranks nothing
            damaged = int(finite.size - finite.sum())
            ids, matrix = ids[finite], matrix[finite]
    else:
        ids, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    if folder is not None and len(ids) >= DISK_CACHE_MIN:
        _save(folder, prefix, identity, kind, (ids_file, ids), (vec_file, matrix), keep_also=codes_file)
    return VectorSet(
        version, ids, matrix, _codes(codes_file, matrix), skipped=len(found) - len(usable), damaged=damaged
    )


def _codes(path: Path, matrix: np.ndarray) -> Codes | None:
    """The prefilter of a large matrix: read from its cache file, else computed and saved."""
    import numpy as np

    if matrix.shape[0] < APPROX_MIN:
        return None
    try:
        with np.load(path) as saved:
            codes = Codes(saved["center"], saved["words"])
        if codes.words.shape == (-(-matrix.shape[1] // 64), matrix.shape[0]):
            return codes
    except (OSError, ValueError, KeyError):
        pass
    codes = Codes.of(matrix)
    try:
        _write_private(path, lambda handle: np.savez(handle, center=codes.center, words=codes.words))
    except OSError:
        pass  # a cache is an optimisation, never a failure
    return codes


def _write_private(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write `path` owner-only through a temporary file renamed over it
    (numpy writes to the handle, so a 150 MB matrix is never held twice)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _save(
    folder: Path, prefix: str, identity: str, kind: str, *pairs: tuple[Path, np.ndarray], keep_also: Path
) -> None:
    import numpy as np

    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path, array in pairs:
            _write_private(path, functools.partial(np.save, arr=array))
        keep = {p for p, _ in pairs} | {keep_also}
        # Older versions of this matrix, and matrices of indexes since rebuilt.
        for old in folder.glob(f"vectors-*-{kind}-*.np[yz]"):
            if old not in keep and (
                old.name.startswith(prefix) or not old.name.startswith(f"vectors-{identity[:12]}")
            ):
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache is an optimisation, never a failure


def clear_process_cache() -> None:
    _CACHE.clear()
