"""The 1-bit prefilter of large SQLite vector sets: exact scores, good recall, never short."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import ON_POSTGRES
from lore.memory.model import Memory
from lore.memory.sync import record_of
from lore.storage import ChunkInput, MemoryFilter
from lore.storage.sqlite import SQLiteStore, vectors

pytestmark = pytest.mark.skipif(
    ON_POSTGRES,
    reason="the numpy matrix and its prefilter belong to the SQLite backend (PostgreSQL uses HNSW)",
)

MODEL = "test-model"
N = 3_000
DIM = 384


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 60 centres: neighbours are near, as in real embeddings."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, DIM)) + 0.5  # an offset mean, like MiniLM's
    rows = centres[rng.integers(0, 60, n)] + rng.normal(scale=0.6, size=(n, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "APPROX_MIN", 1_000)
    vectors.clear_process_cache()
    store = SQLiteStore(tmp_path / ".lore" / "index.db")
    matrix = clustered(N, seed=1)
    with store.transaction():
        store.set_meta("embed_model", MODEL)
        for i in range(N):
            text = f"note {i}"
            memory = Memory(title=text, body=text, tags=["rare" if i % 500 == 7 else "common"])
            rel = f".lore/memory/m{i}.md"
            file_id = store.put_file(rel, "memory", str(i), 0, 0)
            store.put_memory(file_id, record_of(memory, rel, 1))
            store.put_chunks(file_id, "memory", [ChunkInput(text, 1, 1, section="body", title=text)])
        pending = store.pending_embeddings(MODEL, N)
        by_text = {f"note {i}": matrix[i] for i in range(N)}
        store.put_embeddings(
            MODEL, [h for h, _ in pending], np.stack([by_text[t.splitlines()[-1]] for _, t in pending])
        )
    yield store
    store.close()
    vectors.clear_process_cache()


def exact(store: SQLiteStore, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    found = store._vector_set("memory", MODEL, DIM)
    return found.best(np.asarray(found.matrix @ query), k)


def queries(count: int) -> np.ndarray:
    return clustered(count, seed=2)


def test_large_sets_use_the_prefilter_and_return_exact_cosines(store):
    assert store._vector_set("memory", MODEL, DIM).codes is not None
    for query in queries(20):
        hits = store.vector_search("memory", MODEL, query, None, 10)
        assert len(hits) == 10
        truth = dict(exact(store, query, N))
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        for chunk_id, score in hits:
            assert score == pytest.approx(truth[chunk_id], abs=1e-6)


def test_the_prefilter_finds_the_true_neighbours(store, monkeypatch):
    # With candidates cut to a twentieth of the set, the codes alone must rank well:
    # picking 150 rows of 3,000 at random would find 5% of the true top 10. (Within
    # one of these synthetic clusters neighbours are nearly tied, which makes the
    # top 10 much harder than on real embeddings: bench/vector_prefilter.py.)
    monkeypatch.setattr(vectors, "candidates", lambda n, k: n // 20)
    found = []
    for query in queries(50):
        got = {i for i, _ in store.vector_search("memory", MODEL, query, None, 10)}
        found.append(len(got & {i for i, _ in exact(store, query, 10)}) / 10)
    assert np.mean(found) >= 0.4
    # A near copy of a stored vector finds that vector first.
    matrix = np.asarray(store._vector_set("memory", MODEL, DIM).matrix)
    ids = store._vector_set("memory", MODEL, DIM).ids
    noise = np.random.default_rng(3).normal(scale=0.01, size=(50, DIM)).astype(np.float32)
    for row, jitter in zip(range(0, N, N // 50), noise, strict=True):
        query = matrix[row] + jitter
        query /= np.linalg.norm(query)
        assert store.vector_search("memory", MODEL, query, None, 1)[0][0] == ids[row]


def test_a_selective_filter_is_never_short(store, monkeypatch):
    monkeypatch.setattr(vectors, "candidates", lambda n, k: 4 * k)  # the rare rows fall outside
    flt = MemoryFilter(tags=["rare"])
    rare = store.memories(flt)
    assert len(rare) == N // 500
    for query in queries(5):
        hits = store.vector_search("memory", MODEL, query, flt, 20)
        assert len(hits) == len(rare)


def test_codes_are_cached_beside_the_matrix_and_follow_its_version(store, tmp_path):
    first = store._vector_set("memory", MODEL, DIM)
    cache = tmp_path / ".lore" / "local" / "cache"
    saved = list(cache.glob("*.codes.npz"))
    assert len(saved) == 1
    vectors.clear_process_cache()
    again = store._vector_set("memory", MODEL, DIM)
    assert again.codes is not None and first.codes is not None
    assert np.array_equal(again.codes.words, first.codes.words)

    with store.transaction():
        memory = Memory(title="late", body="late", tags=["common"])
        file_id = store.put_file(".lore/memory/late.md", "memory", "late", 0, 0)
        store.put_memory(file_id, record_of(memory, ".lore/memory/late.md", 1))
        store.put_chunks(file_id, "memory", [ChunkInput("late", 1, 1, section="body", title="late")])
        [(text_hash, _)] = store.pending_embeddings(MODEL, 10)
        store.put_embeddings(MODEL, [text_hash], queries(1))
    grown = store._vector_set("memory", MODEL, DIM)
    assert grown.codes is not None and grown.codes.words.shape[1] == N + 1
    assert [p.name for p in cache.glob("*.codes.npz")] != [p.name for p in saved]
    assert len(list(cache.glob("*.codes.npz"))) == 1


def test_a_filter_met_again_gives_the_same_hits_and_follows_the_index(store):
    """A process that searches with the same filter again (recall's, a server's)
    keeps the rows passing it: the same hits as checking the nearest chunks,
    and a write to the index (a memory archived) counts at the next search."""
    from lore.storage.base import TierState

    flt = MemoryFilter(exclude_tiers=["archive"])
    asked = queries(6)
    first = [store.vector_search("memory", MODEL, asked[0], flt, 30)]
    masks = store._records.memo["allowed rows"]
    assert all(isinstance(kept, int) for kept in masks.values())  # counted, not read yet
    first += [store.vector_search("memory", MODEL, q, flt, 30) for q in asked[1:]]
    for _ in range(2):  # met again: the rows passing are read once, then reused
        assert [store.vector_search("memory", MODEL, q, flt, 30) for q in asked] == first
    assert any(isinstance(kept, tuple) for kept in masks.values())  # the mask answered
    top_chunk = first[0][0][0]
    memory_id = store.db.execute(
        "SELECT m.id FROM chunks c JOIN memories m ON m.file_id = c.file_id WHERE c.id = ?", (top_chunk,)
    ).fetchone()[0]
    with store.transaction():
        store.put_tier_states([TierState(memory_id, "archive", "2026-01-01T00:00:00Z")])
    after = store.vector_search("memory", MODEL, asked[0], flt, 30)
    assert top_chunk not in {i for i, _ in after}
    assert after[:5] == [hit for hit in first[0] if hit[0] != top_chunk][:5]


def test_a_kept_mask_does_not_keep_an_old_matrix_in_memory(store):
    """Vectors written later (the embedder catching up) make a new matrix
    without any other change to the index; a filter's mask must not hold
    the old matrix."""
    import gc
    import weakref

    with store.transaction():  # a memory still waiting for its vector
        memory = Memory(title="late", body="late", tags=["common"])
        file_id = store.put_file(".lore/memory/late.md", "memory", "late", 0, 0)
        store.put_memory(file_id, record_of(memory, ".lore/memory/late.md", 1))
        store.put_chunks(file_id, "memory", [ChunkInput("late", 1, 1, section="body", title="late")])
    flt = MemoryFilter(exclude_tiers=["archive"])
    for query in queries(12):
        store.vector_search("memory", MODEL, query, flt, 10)
    old = weakref.ref(store._vector_set("memory", MODEL, DIM))
    [(text_hash, _)] = store.pending_embeddings(MODEL, 10)
    with store.transaction():
        store.put_embeddings(MODEL, [text_hash], queries(1))
    store.vector_search("memory", MODEL, queries(1)[0], None, 10)  # the new matrix, no filter
    assert len(store._vector_set("memory", MODEL, DIM)) == N + 1
    gc.collect()
    assert old() is None  # the filter, not searched since, holds no matrix


def test_a_product_worked_out_ahead_gives_the_same_hits(store, monkeypatch):
    """The worker thread works a query's product out ahead, for up to
    AHEAD_RESULTS results (vectors_ahead); a search then takes it, and gets
    what it would have worked out itself, for any number of results."""
    import threading

    monkeypatch.setattr(vectors, "candidates", lambda n, k: min(n, 4 * k))  # counts that differ by k
    for query in queries(8):
        wanted = {k: store.vector_search("memory", MODEL, query, None, k) for k in (5, 40, 200)}
        vectors.clear_process_cache()
        store._vector_set("memory", MODEL, DIM)  # held: work ahead uses only what the process holds
        worker = threading.Thread(target=store.vectors_ahead("memory", MODEL), args=(query,))
        worker.start()
        worker.join()
        held = store._vector_set("memory", MODEL, DIM)
        assert held._product is not None and held._product.count == 4 * vectors.AHEAD_RESULTS
        for k in (5, 40):  # fewer results than worked out ahead: its nearest rows
            assert store.vector_search("memory", MODEL, query, None, k) == wanted[k]
        assert held._product.count == 4 * vectors.AHEAD_RESULTS  # taken, not worked out again
        assert store.vector_search("memory", MODEL, query, None, 200) == wanted[200]
        assert held._product.count == 4 * 200  # more than it had: worked out again


def test_a_product_a_search_claimed_is_not_worked_out_again_ahead(store):
    query = queries(1)[0]
    held = store._vector_set("memory", MODEL, DIM)
    store.vector_search("memory", MODEL, query, None, 10)
    claimed = held._product
    store.vectors_ahead("memory", MODEL)(query)
    assert held._product is claimed
