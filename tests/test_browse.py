"""Browsing and curating memories through the core (real project, real SQLite):
the store's page of memories and per-source counts, attention tiers, bulk
actions, and the privacy rules they keep for the acting agent."""

from __future__ import annotations

import pytest

import lore
from lore.storage import MemoryFilter

AUTH_PY = 'def parse_token(header):\n    """Bearer token."""\n    return header.partition(" ")[2]\n'


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "proj"
    lore.init(root).close()
    config = root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    (root / "src").mkdir()
    (root / "src/auth.py").write_text(AUTH_PY)
    return root


def add(root, title, *, agent=None, **fields):
    with lore.open(root, agent=agent) as project:
        return project.add(title=title, body=f"{title}: the details.", **fields).id


def test_memory_page_sorts_pages_and_counts(root):
    titles = ["banana", "Apple", "cherry", "apple pie", "Date"]
    for i, title in enumerate(titles):
        add(root, title, occurred_at=f"2024-01-0{i + 1}T00:00:00Z")
    with lore.open(root) as project:
        project.sync()
        store = project.store
        total, first = store.memory_page(MemoryFilter(), sort="title", descending=False, limit=2)
        _, rest = store.memory_page(MemoryFilter(), sort="title", descending=False, offset=2, limit=10)
        assert total == 5
        assert [r.title for r in first + rest] == ["Apple", "apple pie", "banana", "cherry", "Date"]
        total, newest = store.memory_page(MemoryFilter(), limit=1)
        assert total == 5 and newest[0].title == "Date"
        assert store.memory_page(MemoryFilter(), offset=99, limit=5) == (5, [])
        every = store.memory_page(MemoryFilter(), sort="path", descending=False)[1]
        assert [r.path for r in every] == sorted(r.path for r in every) and len(every) == 5
        assert store.memory_page(MemoryFilter(types=["lesson"]), limit=5) == (0, [])
        stamps = store.memory_stamps(MemoryFilter(), sort="title", descending=False)
        assert [(s.id, s.path) for s in stamps] == [(r.id, r.path) for r in first + rest]
        with pytest.raises(ValueError):
            store.memory_page(MemoryFilter(), sort="colour")
        with pytest.raises(ValueError):
            store.memory_stamps(MemoryFilter(), sort="colour")


def test_visibility_and_stale_filters(root):
    shared = add(root, "Token parsing", files=["src/auth.py"])
    add(root, "Unrelated note")
    own = add(root, "Alice's private note", agent="alice", private=True)
    add(root, "Bob's private note", agent="bob", private=True)
    with lore.open(root, agent="alice") as alice:
        alice.index_code()
        (root / "src/auth.py").write_text(AUTH_PY.replace("[2]", "[2].strip()"))
        alice.index_code()
        page = alice.browse(stale=True)
        assert [i.id for i in page.items] == [shared] and page.items[0].stale
        assert page.items[0].tier in ("warm", "cold")  # stale halves the attention
        assert alice.browse(stale=False).total == 2
        assert [i.id for i in alice.browse(visibility="private").items] == [own]
        assert alice.browse().total == 3  # never Bob's
        assert alice.browse(agent="bob").total == 0
        assert [h.id for h in alice.search("token parsing", stale=True)] == [shared]


def test_attention_tiers_page_and_list_agree(root):
    """Tiers are the ones the lifecycle keeps (seed 001's transitions): a memory
    observed five times or more with confidence > 0.7 is hot; a new one is cold."""
    new = [add(root, f"Fresh note {i}", extra={"evidence_count": 6}) for i in range(3)]
    old = add(root, "Old doubtful note", occurred_at="2015-01-01T00:00:00Z", confidence=0.5)
    with lore.open(root) as project:
        hot = project.browse(tier="hot", sort="title", descending=False, limit=2)
        assert hot.total == 3 and [i.title for i in hot.items] == ["Fresh note 0", "Fresh note 1"]
        assert {i.tier for i in hot.items} == {"hot"}
        assert [i.id for i in project.browse(tier="hot", offset=2, limit=2, sort="title").items] == [new[0]]
        cold = project.browse(tier="cold")
        assert [i.id for i in cold.items] == [old] and cold.items[0].attention < 0.3
        assert [r["id"] for r in project.list(tier="cold")] == [old]
        assert {r["id"] for r in project.list(tier="hot")} == set(new)
        assert [h.id for h in project.search("doubtful", tier="cold")] == [old]
        assert project.search("doubtful", tier="hot") == []


def test_dashboard_counts_only_what_the_agent_may_see(root):
    add(root, "Shared one")
    add(root, "Bob's plan", agent="bob", private=True)
    (root / ".lore/local/bob").joinpath("broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (root / ".lore/memory/broken-shared.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    with lore.open(root, agent="alice") as alice:
        alice.sync()
        counts = {c.kind: c for c in alice.store.source_counts(None)}
        assert counts["memory"].files == 4 and counts["memory"].failed_files == 2  # the whole index
        overview = alice.index_overview()
        memories = next(s for s in overview.sources if s.name == "memories")
        assert (memories.files, memories.failed_files) == (2, 1)
        assert [f.path for f in overview.failed_files] == [".lore/memory/broken-shared.md"]
    with lore.open(root, agent="bob") as bob:
        memories = next(s for s in bob.index_overview().sources if s.name == "memories")
        assert (memories.files, memories.failed_files) == (4, 2)


def test_id_prefix_shared_with_a_private_memory_resolves_to_the_visible_one(root):
    mine = add(root, "Alice's note", agent="alice", id="abcd1234-0000-4000-8000-00000000000a")
    add(root, "Bob's secret", agent="bob", private=True, id="abcd1234-0000-4000-8000-00000000000b")
    with lore.open(root, agent="alice") as alice:
        assert alice.memory_detail("abcd1234").id == mine
    add(root, "Carol's note", id="abcd1234-0000-4000-8000-00000000000c")
    with lore.open(root, agent="alice") as alice:
        with pytest.raises(lore.UsageError) as err:
            alice.resolve("abcd1234")
        assert "2 memories" in str(err.value) and ".lore/local/bob" not in str(err.value)


def test_bulk_set_tier_and_privacy_of_the_trash(root):
    ids = [add(root, f"Session candidate {i}", tags=["move"]) for i in range(2)]
    secret = add(root, "Bob's draft", agent="bob", private=True, tags=["move"])
    with lore.open(root, agent="bob") as bob:
        bob.remove(secret)
    with lore.open(root, agent="alice") as alice:
        preview = alice.bulk("set_tier", new_tier="session", tag="move")
        assert sorted(i.id for i in preview.items) == sorted(ids)
        done = alice.bulk("set_tier", new_tier="session", tag="move", apply=True, confirm=preview.digest)
        assert done.applied and not done.errors
        assert {r["storage"] for r in alice.list(tag="move")} == {"session"}
        assert alice.trash_entries() == []
        assert alice.gc(retention_days=0) == []  # Bob's trash waits for Bob
        for call in (alice.restore, alice.purge):
            with pytest.raises(lore.NotFound):
                call(secret)
        restore = alice.bulk("restore", tag="move")
        assert restore.total == 0
    with lore.open(root, agent="bob") as bob:
        assert [e.id for e in bob.trash_entries()] == [secret]
        assert [e.id for e in bob.gc(retention_days=0)] == [secret]
