"""Chunk records kept between searches are never served once the index changed."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest

import lore
from conftest import ON_POSTGRES
from lore.storage import MemoryFilter
from lore.storage.base import ChunkRecord
from lore.storage.sqlite import SQLiteStore
from lore.storage.sqlite.migrations import CONTENT_TABLES
from lore.storage.sqlite.recordcache import RecordCache

pytestmark = pytest.mark.skipif(
    ON_POSTGRES, reason="the record cache and its content token belong to the SQLite backend"
)


def _memory_chunk_ids(project: lore.Lore) -> list[int]:
    return [row[0] for row in project.store.db.execute("SELECT id FROM chunks WHERE kind = 'memory'")]


def _titles(project: lore.Lore, query: str) -> list[str]:
    return [hit.title for hit in project.search(query)]


def test_records_are_reused_until_this_process_writes(project):
    project.add(title="Deploys", body="Releases go to the staging cluster first.", type="decision")
    ids = _memory_chunk_ids(project)
    first = project.store.chunks("memory", ids)
    again = project.store.chunks("memory", ids)
    assert [c.chunk_id for c in again] == [c.chunk_id for c in first]
    assert all(a is b for a, b in zip(first, again, strict=True))  # read once

    project.add(title="Pets", body="Dogs are welcome on Fridays.", type="convention")
    after = project.store.chunks("memory", ids)
    assert after == first and not any(a is b for a, b in zip(first, after, strict=True))


def test_a_change_made_by_another_process_is_seen(tmp_path):
    root = tmp_path / "p"
    reader = lore.init(root)
    added = reader.add(title="Deploys", body="Releases go to the staging cluster first.")
    assert _titles(reader, "staging cluster") == ["Deploys"]

    writer = lore.open(root)  # another connection, as another process has
    writer.update(added.id, title="Shipping")
    writer.close()
    # The reader's next read is of the edited record, not the one it held.
    ids = _memory_chunk_ids(reader)
    assert {c.title for c in reader.store.chunks("memory", ids)} == {"Shipping"}
    assert _titles(reader, "staging cluster") == ["Shipping"]
    reader.close()


def test_a_record_one_filter_left_out_is_not_shown_to_another(project):
    project.add(title="Deploys", body="Releases go to the staging cluster first.", type="decision")
    ids = _memory_chunk_ids(project)
    assert project.store.chunks("memory", ids, MemoryFilter(types=["lesson"])) == []
    assert [c.title for c in project.store.chunks("memory", ids)] == ["Deploys"]
    assert project.store.chunks("memory", ids, MemoryFilter(types=["lesson"])) == []
    assert [c.title for c in project.store.chunks("memory", ids, MemoryFilter(types=["decision"]))] == [
        "Deploys"
    ]


def test_an_empty_filter_shares_the_unfiltered_records(project):
    """Records are held by what a filter asks of the rows: a search's empty
    ChunkFilter() reads none that an unfiltered read (the vector side) holds."""
    from lore.storage import ChunkFilter

    project.add(title="Deploys", body="Releases go to the staging cluster first.")
    ids = _memory_chunk_ids(project)
    first = project.store.chunks("memory", ids)
    assert all(a is b for a, b in zip(first, project.store.chunks("memory", ids, ChunkFilter()), strict=True))
    # A filter that asks something of the rows is held apart.
    assert project.store.chunks("memory", ids, MemoryFilter(types=["lesson"])) == []


def test_records_read_inside_a_rolled_back_write_are_dropped(project):
    project.add(title="Deploys", body="Releases go to the staging cluster first.")
    store = project.store
    ids = _memory_chunk_ids(project)
    assert [c.title for c in store.chunks("memory", ids)] == ["Deploys"]
    with pytest.raises(RuntimeError), store.transaction():
        store.db.execute("UPDATE chunks SET title = 'Rolled back' WHERE kind = 'memory'")
        assert [c.title for c in store.chunks("memory", ids)] == ["Rolled back"]
        raise RuntimeError("abandon the write")
    assert [c.title for c in store.chunks("memory", ids)] == ["Deploys"]


@pytest.fixture
def indexed_repo(repo):
    """A project with a row in every content table: code, a commit, a memory
    anchored to the code, a tier state."""
    (repo / "app.py").write_text("def deploy():\n    return 'staging'\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "Add the deploy step"], cwd=repo, check=True)
    project = lore.init(repo)
    project.refresh(embed=False)
    project.add(title="Deploys", body="Releases go to staging first: see `app.py`.", applies_to="file:app.py")
    project.store.db.execute(
        "INSERT INTO tier_state(memory_id, tier, since, checked_at) SELECT id, 'cold', '2026', '2026' FROM memories"
    )
    yield project
    project.close()


@pytest.mark.parametrize("table", sorted(CONTENT_TABLES))
def test_every_write_to_what_a_record_or_filter_reads_changes_the_token(indexed_repo, table):
    db: sqlite3.Connection = indexed_repo.store.db
    token = indexed_repo.store._content_token
    assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0
    column = (
        "tier" if table == "tier_state" else [row[1] for row in db.execute(f"PRAGMA table_info({table})")][-1]
    )
    first = f"rowid = (SELECT min(rowid) FROM {table})"
    before = token()
    db.execute(f"UPDATE {table} SET {column} = {column} WHERE 0")  # no row: no change
    assert token() == before
    db.execute(f"UPDATE {table} SET {column} = {column} WHERE {first}")
    assert token() != before
    before = token()
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute(f"DELETE FROM {table} WHERE {first}")
    assert token() != before


def test_a_tier_pass_that_only_checks_keeps_the_records(project):
    project.add(title="Deploys", body="Releases go to the staging cluster first.")
    db = project.store.db
    db.execute(
        "INSERT OR REPLACE INTO tier_state(memory_id, tier, since, checked_at) "
        "SELECT id, 'cold', '2026-01-01', '2026-01-01' FROM memories"
    )
    before = project.store._content_token()
    db.execute("UPDATE tier_state SET checked_at = '2026-02-01'")
    assert project.store._content_token() == before


def _record(chunk_id: int, text: str) -> ChunkRecord:
    return ChunkRecord(chunk_id, "code", "a.py", None, None, "python", 1, 2, "", "", text)


def test_the_least_recently_used_records_go_beyond_the_budget():
    cache = RecordCache(max_bytes=3 * (600 + 100))
    cache.valid_for("t")
    cache.keep("s", [1, 2, 3], [_record(i, "x" * 100) for i in (1, 2, 3)])
    assert [r.chunk_id for r in cache.split("s", [1])[0]] == [1]  # 1 is now the most recent
    cache.keep("s", [4], [_record(4, "x" * 100)])
    found, missing = cache.split("s", [1, 2, 3, 4])
    assert sorted(r.chunk_id for r in found) == [1, 3, 4] and missing == [2]
    cache.valid_for("changed")
    assert cache.split("s", [1]) == ([], [1]) and cache.size == 0


def test_open_stores_share_the_cache_budget(tmp_path):
    """A team server on SQLite opens a store per user: the process's record and
    term-list budgets are shared among the open stores, not multiplied."""
    from lore.storage.sqlite import recordcache

    stores = [SQLiteStore(tmp_path / f"{i}.db") for i in range(4)]
    try:
        share = stores[0]._records.max_bytes
        assert share == recordcache.MAX_BYTES // len(recordcache._OPEN) <= recordcache.MAX_BYTES // 4
        assert stores[0]._records.terms.budget() <= recordcache.TERM_LISTS_MAX_BYTES // 4
        stores.pop().close()  # a closed store leaves its share to the others
        assert stores[0]._records.max_bytes > share
    finally:
        for store in stores:
            store.close()
