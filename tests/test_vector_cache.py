"""The on-disk matrix cache is never served for a different index or version."""

from __future__ import annotations

from pathlib import Path

import pytest

import lore
from conftest import ON_POSTGRES
from lore.storage.sqlite import vectors


@pytest.mark.skipif(
    ON_POSTGRES,
    reason="the on-disk numpy matrix cache and .lore/index.db belong to the SQLite backend "
    "(PostgreSQL searches vectors with HNSW)",
)
def test_cache_is_used_then_invalidated_by_changes_and_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "DISK_CACHE_MIN", 1)  # cache even a tiny matrix
    root = tmp_path / "p"
    project = lore.init(root)
    project.add(
        title="Deploys", body="Releases go to the staging cluster for an hour first.", tags=["deploy"]
    )
    project.add(title="Pets", body="Dogs are welcome in the office on Fridays.", tags=["office"])
    assert project.search("shipping a new version", mode="vector")[0].title == "Deploys"
    cache = root / ".lore/local/cache"
    first = sorted(p.name for p in cache.glob("*.vec.npy"))
    assert first
    project.close()

    # A new process reads the cached matrix (same identity and version).
    reopened = lore.open(root)
    vectors._CACHE.clear()
    assert reopened.search("animals at work", mode="vector")[0].title == "Pets"
    assert sorted(p.name for p in cache.glob("*.vec.npy")) == first
    # A change makes a new version; the old files go.
    reopened.add(title="Coffee", body="The espresso machine is descaled every Monday.", tags=["office"])
    vectors._CACHE.clear()
    assert reopened.search("cleaning the coffee maker", mode="vector")[0].title == "Coffee"
    second = sorted(p.name for p in cache.glob("*.vec.npy"))
    assert second and second != first
    reopened.close()

    # A rebuilt index starts its counters again: it must not read the old matrix.
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root / '.lore/index.db'}{suffix}").unlink(missing_ok=True)
    rebuilt = lore.open(root)
    vectors._CACHE.clear()
    assert rebuilt.search("cleaning the coffee maker", mode="vector")[0].title == "Coffee"
    assert rebuilt.search("animals at work", mode="vector")[0].title == "Pets"
    assert not set(second) & {p.name for p in cache.glob("*.vec.npy")}
    rebuilt.close()


@pytest.mark.skipif(ON_POSTGRES, reason="the on-disk numpy matrix cache belongs to the SQLite backend")
def test_a_cached_matrix_of_the_wrong_shape_is_read_again_from_the_index(tmp_path, monkeypatch):
    # A damaged cache (a valid .npy of other dimensions, or one number) made every
    # vector search an internal error ("matmul: ... mismatch") until the index changed.
    import numpy as np

    monkeypatch.setattr(vectors, "DISK_CACHE_MIN", 1)
    root = tmp_path / "p"
    project = lore.init(root)
    project.add(title="Deploys", body="Releases go to the staging cluster for an hour first.")
    project.add(title="Pets", body="Dogs are welcome in the office on Fridays.")
    assert project.search("shipping a new version", mode="vector")[0].title == "Deploys"
    cache = root / ".lore/local/cache"
    [vec] = cache.glob("*.vec.npy")
    [ids] = cache.glob("*.ids.npy")
    for matrix, numbers in (
        (np.zeros((2, 7), dtype=np.float32), np.arange(2)),
        (np.float32(1), np.arange(1)),
    ):
        np.save(vec, matrix)
        np.save(ids, numbers)
        vectors.clear_process_cache()
        assert project.search("animals at work", mode="vector")[0].title == "Pets"
    assert np.load(vec).shape == (2, 384)
    project.close()


@pytest.mark.skipif(ON_POSTGRES, reason="the vectors' blobs in .lore/index.db belong to the SQLite backend")
def test_vectors_damaged_into_nan_are_left_out_without_warnings(tmp_path):
    # A blob of NaN or infinity (damage in the index file, or an older provider's
    # answer) was searched as if it were a vector, and nothing said it was damaged.
    import sqlite3
    import subprocess
    import sys

    import numpy as np

    root = tmp_path / "p"
    project = lore.init(root)
    project.add(title="Deploys", body="Releases go to the staging cluster for an hour first.")
    project.add(title="Pets", body="Dogs are welcome in the office on Fridays.")
    project.embed()
    project.close()
    db = sqlite3.connect(root / ".lore/index.db")
    [(text_hash, blob)] = db.execute(
        "SELECT DISTINCT e.text_hash, e.vector FROM embeddings e JOIN chunks c ON c.text_hash = e.text_hash "
        "WHERE c.text LIKE '%staging cluster%'"
    ).fetchall()
    bad = np.frombuffer(blob, dtype=np.float32).copy()
    bad[::7] = np.nan
    bad[1] = np.inf
    db.execute("UPDATE embeddings SET vector = ? WHERE text_hash = ?", (bad.tobytes(), text_hash))
    db.commit()
    db.close()
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "lore", "search", "--mode", "vector", "dogs at work", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and "invalid value" not in proc.stderr, proc.stderr
    assert "1 vectors of" in proc.stderr and "not numbers" in proc.stderr and "--reembed" in proc.stderr
    import json

    assert json.loads(proc.stdout)[0]["title"] == "Pets"


@pytest.mark.skipif(ON_POSTGRES, reason="the process's matrix cache belongs to the SQLite backend")
def test_another_writers_new_version_waits_a_moment(tmp_path, monkeypatch):
    """A hook's `lore index` embedding batch after batch gave every batch a new
    version, and an MCP server read the whole matrix again at each recall
    (~1 s at 53k vectors instead of ~30 ms). Another writer's version may wait
    STALE_SECONDS; what the store writes itself is read at once (it asks
    without stale_ok: every in-process add-then-search test)."""
    import numpy as np

    reads = []

    def rows(n):
        def read():
            reads.append(n)
            return [(i, np.eye(4, dtype=np.float32)[i % 4].tobytes()) for i in range(n)]

        return read

    db = tmp_path / ".lore" / "index.db"
    vectors._CACHE.clear()
    first = vectors.vector_set(db, "id", "code", "m", 1, rows(2), 4)
    assert vectors.vector_set(db, "id", "code", "m", 2, rows(3), 4, stale_ok=True) is first
    assert vectors.held_vector_set(db, "code", "m", 2, 4, stale_ok=True) is first
    assert reads == [2]
    monkeypatch.setattr(vectors, "STALE_SECONDS", 0.0)
    assert len(vectors.vector_set(db, "id", "code", "m", 2, rows(3), 4, stale_ok=True)) == 3
    monkeypatch.setattr(vectors, "STALE_SECONDS", 1000.0)
    assert len(vectors.vector_set(db, "id", "code", "m", 3, rows(4), 4)) == 4  # not stale_ok: read at once
    assert reads == [2, 3, 4]
    vectors._CACHE.clear()
