"""Filtering memories by attention tier (the index path for warm/hot, the
default 'cold' for memories the lifecycle has not decided yet)."""

from __future__ import annotations

import pytest

from lore.memory.model import Memory
from lore.memory.sync import record_of
from lore.storage import MemoryFilter, TierState
from lore.storage.sqlite import SQLiteStore

TIERS = {"a": "hot", "b": "warm", "c": "cold", "d": None, "e": "archive"}  # d: no tier row yet


@pytest.fixture
def store(tmp_path):
    store = SQLiteStore(tmp_path / "index.db")
    with store.transaction():
        for name in TIERS:
            memory = Memory(
                id=name * 8, title=name, body=f"memory {name}", occurred_at="2024-01-01T00:00:00Z"
            )
            rel = f".lore/memory/{name}.md"
            store.put_memory(store.put_file(rel, "memory", name, 0, 0), record_of(memory, rel, 1))
    when = "2024-01-02T00:00:00Z"
    store.put_tier_states([TierState(n * 8, t, when) for n, t in TIERS.items() if t])
    yield store
    store.close()


def _titles(store: SQLiteStore, **filters) -> list[str]:
    return sorted(m.title for m in store.memories(MemoryFilter(**filters)))


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"tiers": ["hot"]}, ["a"]),
        ({"tiers": ["hot", "warm"]}, ["a", "b"]),
        ({"tiers": ["cold"]}, ["c", "d"]),
        ({"tiers": ["warm", "cold"]}, ["b", "c", "d"]),
        ({"tiers": ["hot"], "exclude_tiers": ["archive"]}, ["a"]),
        ({"exclude_tiers": ["hot", "archive"]}, ["b", "c", "d"]),
    ],
)
def test_tier_filters(store, filters, expected):
    assert _titles(store, **filters) == expected
