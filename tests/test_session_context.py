"""Memories recorded in one session lend each other context in search: the
answer to a question is often the memory recorded just after the one whose
words the query shares."""

from __future__ import annotations

from pathlib import Path

import pytest

import lore
from conftest import ON_POSTGRES
from lore.search import memories as memory_search
from lore.storage import MemoryFilter

QUERY = "how did the kids take the car accident"
SESSION = "session:2024-05-03-evening"


def _project(root: Path) -> lore.Lore:
    """A keyword-only project (exact scores, no model)."""
    lore.init(root).close()
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    return lore.open(root)


def _add(project: lore.Lore, title: str, body: str, when: str, source: str | None) -> str:
    return project.add(title=title, body=body, type="lesson", occurred_at=when, source=source).id


def _conversation(
    project: lore.Lore, answer_source: str | None = SESSION, between: bool = False
) -> dict[str, str]:
    """The question's turn, its answer a second later, and a distractor that
    shares the answer's one query word in a shorter text (BM25 ranks it above
    the answer on words alone)."""
    ids = {
        "question": _add(
            project,
            "Melanie: the car accident",
            "Melanie: a car accident, the kids in the back: how will the kids take the car accident?",
            "2024-05-03T19:00:00Z",
            SESSION,
        ),
        "distractor": _add(
            project,
            "Jon: the bus",
            "Jon: the kids take the bus to school, by car on rainy days.",
            "2024-05-01T08:00:00Z",
            None,
        ),
    }
    if between:
        ids["between"] = _add(
            project,
            "Caroline: oh no",
            "Caroline: oh no, I am so sorry to hear that, are you all right?",
            "2024-05-03T19:00:01Z",
            SESSION,
        )
    ids["answer"] = _add(
        project,
        "Melanie: they were scared",
        "Melanie: they were scared at first, but we calmed them down and now the kids take it well, "
        "they even joke about it with their friends at school.",
        "2024-05-03T19:00:02Z",
        answer_source,
    )
    return ids


def _scores(project: lore.Lore, ids: dict[str, str]) -> dict[str, float]:
    names = {mid: name for name, mid in ids.items()}
    return {names[h.id]: h.score for h in project.search(QUERY, mode="bm25") if h.id in names}


def test_the_memory_after_the_question_in_its_session_is_lifted(tmp_path, monkeypatch):
    with _project(tmp_path / "p") as project:
        ids = _conversation(project)
        order = [h.id for h in project.search(QUERY, mode="bm25")]
        assert order.index(ids["answer"]) < order.index(ids["distractor"])
        lifted = _scores(project, ids)
        assert lifted["question"] > lifted["answer"] > lifted["distractor"]
        monkeypatch.setattr(memory_search, "SESSION_CONTEXT", 0.0)  # the test fails without the rule
        plain = _scores(project, ids)
        assert plain["answer"] <= plain["distractor"] < lifted["answer"]


def test_no_lift_across_sessions_or_past_a_memory_between(tmp_path):
    for name, kwargs in (
        ("other", {"answer_source": "session:another-evening"}),
        ("none", {"answer_source": None}),
        ("between", {"between": True}),
    ):
        with _project(tmp_path / name) as project:
            found = _scores(project, _conversation(project, **kwargs))
            assert found["answer"] <= found["distractor"], (name, found)


def test_a_lifted_score_stays_a_relevance_and_the_limit_holds(tmp_path):
    with _project(tmp_path / "p") as project:
        _conversation(project)
        for limit in (1, 2, 3):
            hits = project.search(QUERY, mode="bm25", limit=limit)
            assert len(hits) == limit
            assert all(0 < h.score <= 1 for h in hits)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_index_keeps_each_memorys_source(tmp_path):
    with _project(tmp_path / "p") as project:
        ids = _conversation(project, between=True)
        stamps = project.store.memory_stamps(
            MemoryFilter(sources=[SESSION]), sort="occurred_at", descending=False
        )
        assert [s.source for s in stamps] == [SESSION] * 3
        assert [s.id for s in stamps] == [ids["question"], ids["between"], ids["answer"]]
        assert {m.id: m.source for m in project.store.memories()}[ids["distractor"]] is None


@pytest.mark.parametrize("source", ["session:s1#1-40", "stdout", "session:"])
def test_only_a_whole_session_source_groups_memories(source):
    from lore.storage import ChunkRecord, MemoryRecord

    memory = MemoryRecord(
        id="a", path="a.md", title="t", type="lesson", sector="episodic", tags=[],
        applies_to="global", occurred_at="2024-01-01T00:00:00Z", content_hash="h", source=source,
    )  # fmt: skip
    chunk = ChunkRecord(1, "memory", "a.md", None, None, None, 1, 1, "t", "", "x", memory=memory)
    assert memory_search._session_of(chunk) is None


@pytest.mark.skipif(ON_POSTGRES, reason="writes an older format's index straight into the SQLite file")
def test_an_index_of_the_older_format_reads_again_only_the_files_naming_a_source(tmp_path):
    import sqlite3

    root = tmp_path / "p"
    with _project(root) as project:
        ids = _conversation(project)
    db = sqlite3.connect(root / ".lore/index.db")
    with db:  # as format 3 left it: no sources
        db.execute("UPDATE memories SET source = NULL")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'memory_format'")
    db.close()
    with lore.open(root) as project:
        report = project.sync()
        assert len(report.updated) == 2  # the question and the answer; not the distractor
        sources = {m.id: m.source for m in project.store.memories()}
        assert sources == {ids["question"]: SESSION, ids["answer"]: SESSION, ids["distractor"]: None}
        assert project.store.get_meta("memory_format") == "4"
        assert not project.sync().changed
