"""Many agents adding memories at the same moment: all succeed, nothing torn or lost."""

from __future__ import annotations

import subprocess
import sys

import pytest

import lore
from conftest import ON_POSTGRES
from lore.memory import markdown

N = 10


def test_concurrent_adds_from_many_processes(cli):
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lore",
                "add",
                "--title",
                "Same title for everyone",
                "--body",
                f"Agent {i} has something distinct to say, number {i}.",
                "--tag",
                "race",
            ],
            cwd=cli.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for i in range(N)
    ]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), results
    files = sorted((cli.cwd / ".lore/memory").glob("*.md"))
    assert len(files) == N
    bodies = set()
    for path in files:
        memory, _ = markdown.parse(path.read_bytes(), path.name)  # every file whole and valid
        bodies.add(memory.body.strip())
    assert bodies == {f"Agent {i} has something distinct to say, number {i}." for i in range(N)}
    assert len(cli.json("search", "distinct", "--limit", "50")) == N
    assert not list((cli.cwd / ".lore/memory").glob(".*.tmp"))


def test_concurrent_identical_adds_write_one_file(cli):
    args = [
        sys.executable,
        "-m",
        "lore",
        "add",
        "--title",
        "Dup",
        "--body",
        "The very same memory body.",
        "--occurred-at",
        "2025-05-05T05:05:05Z",
        "--json",
    ]
    procs = [
        subprocess.Popen(
            args, cwd=cli.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        for _ in range(N)
    ]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    assert len(list((cli.cwd / ".lore/memory").glob("*.md"))) == 1


def test_captures_of_one_error_at_once_make_one_gotcha_counting_each_occurrence_once(cli):
    """Eight captures at once, each seeing the error once: without one hold of the
    write lock over counting and deciding, two to four gotchas were written for
    it, and occurrences already in a gotcha's count were added again as evidence."""
    outputs = []
    for i in range(8):
        outputs.append(cli.cwd.parent / f"output-{i}.txt")
        outputs[-1].write_text(f"running\nOSError: disk quota exceeded on volume {i}\n")
    procs = []
    for output in outputs:
        with output.open() as stdin:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "lore", "capture", "--stdin", "--json"],
                    cwd=cli.cwd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=stdin,
                    text=True,
                )
            )
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    found = [
        markdown.parse(path.read_bytes(), path.name)[0]
        for path in sorted((cli.cwd / ".lore/local/daily").glob("*.md"))
    ]
    assert [m.type for m in found] == ["gotcha"]
    assert found[0].extra["evidence_count"] == 8


@pytest.mark.skipif(ON_POSTGRES, reason="holds the SQLite index's write lock from another connection")
def test_an_add_the_busy_index_cannot_take_is_saved_and_said_so(tmp_path):
    """Another process holding the index: the file was written, then the add
    failed saying "try again", and trying again found the first ("already stored")."""
    import sqlite3

    import lore

    root = tmp_path / "p"
    lore.init(root).close()
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    with lore.open(root) as project:
        project.sync()
        project.store.db.execute("PRAGMA busy_timeout = 200")  # not the default 30 s, for the test's sake
        other = sqlite3.connect(root / ".lore/index.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process's write transaction
        try:
            result = project.add(title="Walrus cache", body="Keep the walrus cache small.")
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert result.created and (root / result.path).is_file()
        assert result.note and "not searchable yet" in result.note and "try again" not in result.note
    with lore.open(root) as project:  # the next command indexes it
        assert [h.id for h in project.search("walrus cache")] == [result.id]


def _open_index_at(path: str, start, results) -> None:
    from pathlib import Path

    from lore.storage.sqlite.store import SQLiteStore

    start.wait()
    try:
        SQLiteStore(Path(path)).close()
        results.put("ok")
    except Exception as err:  # the test reports what the process hit
        results.put(repr(err))


@pytest.mark.skipif(ON_POSTGRES, reason="opens new SQLite index files")
def test_processes_opening_a_new_index_together_all_open_it(tmp_path):
    """Six processes opening a new index at the same moment race to switch it
    to WAL; SQLite answers the losers "database is locked" at once instead of
    waiting. One in a few rounds failed so (a task's completions run together
    from agents' hooks); each must wait its turn instead."""
    import multiprocessing

    import lore.storage.sqlite.store  # noqa: F401 - imported once, before the forks

    context = multiprocessing.get_context("fork")
    for round_ in range(10):
        path = str(tmp_path / f"index{round_}.db")
        start, results = context.Barrier(6), context.Queue()
        openers = [context.Process(target=_open_index_at, args=(path, start, results)) for _ in range(6)]
        for opener in openers:
            opener.start()
        outcomes = [results.get(timeout=60) for _ in openers]
        for opener in openers:
            opener.join(timeout=60)
        assert outcomes == ["ok"] * 6, (round_, outcomes)


def _together(cwd, commands: list[list[str]]) -> list[tuple[str, str, int]]:
    """Run `lore` with each of `commands` at once: (stdout, stderr, exit status) of each."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "lore", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for args in commands
    ]
    return [p.communicate(timeout=120) + (p.returncode,) for p in procs]


def test_tags_and_edits_of_one_memory_at_once_are_all_kept(cli):
    """`lore tag` read the memory before taking the write lock and wrote its
    copy back: the appends and tags written meanwhile were lost (0 of 4 kept)."""
    memory_id = cli.json("add", "--title", "Race target", "--body", "A memory many agents change at once.")[
        "id"
    ]
    commands = [["tag", memory_id, "--add", f"tag{i}"] for i in range(4)]
    commands += [["edit", memory_id, "--append", f"Appended line {i}."] for i in range(4)]
    results = _together(cli.cwd, commands)
    assert all(code == 0 for _, _, code in results), results
    shown = cli.json("show", memory_id)
    text = (cli.cwd / shown["path"]).read_text()
    assert [f"Appended line {i}." in text for i in range(4)] == [True] * 4
    assert {f"tag{i}" for i in range(4)} <= set(cli.json("tag", memory_id)[0]["tags"])


def test_a_memory_removed_while_it_is_tagged_stays_removed(cli):
    """The tag's copy, read before the removal, was written back: the trashed
    memory came back (and could no longer be restored)."""
    for round_ in range(3):
        memory_id = cli.json(
            "add", "--title", f"Doomed {round_}", "--body", f"Soon removed, round {round_}."
        )["id"]
        removed, _tagged = _together(cli.cwd, [["rm", memory_id], ["tag", memory_id, "--add", "late"]])
        assert removed[2] == 0, removed
        assert not [p for p in (cli.cwd / ".lore/memory").glob("*.md") if f"Doomed {round_}" in p.read_text()]


def test_a_memory_moved_while_it_is_removed_is_removed_where_it_went(cli):
    """`lore rm` found the file gone (moved by `lore mv`, or a promotion, at the
    same moment) and failed with "removed meanwhile", leaving the memory live."""
    for round_ in range(3):
        memory_id = cli.json(
            "add", "--title", f"Wanderer {round_}", "--body", f"Moved and removed, {round_}."
        )["id"]
        removed, _moved = _together(cli.cwd, [["rm", memory_id], ["mv", memory_id, f"place{round_}/"]])
        assert removed[2] == 0, removed
        live = [p for p in (cli.cwd / ".lore/memory").rglob("*.md") if f"Wanderer {round_}" in p.read_text()]
        assert not live, live


def _held_by_another_process(project):
    """Another connection holding the index's write lock (SQLite's, or the
    clone's writer lock on PostgreSQL), as a long `lore index` does; a function
    that lets it go."""
    store = project.store
    if type(store).__name__ == "SQLiteStore":
        import sqlite3

        other = sqlite3.connect(project.project.lore_dir / "index.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")

        def release() -> None:
            other.execute("ROLLBACK")
            other.close()

        return release
    import psycopg

    conn = psycopg.connect(store.url, autocommit=True)
    conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (store._clone_key,))
    return conn.close


def test_a_read_behind_a_long_write_is_answered_without_its_bookkeeping(project):
    """A recall while another process wrote the index (a long `lore index`)
    waited the write timeout, 30 s, for its access counts before answering
    without them. The read is answered at once; the counts wait for a free index."""
    import threading

    deploys = project.add(title="Deploys", body="Releases go to the staging cluster first.")
    project.recall("staging cluster")  # fresh index; one access counted
    counted = project.store.access_stats([deploys.id])[deploys.id][0]
    release = _held_by_another_process(project)
    answers: list[object] = []
    reader = threading.Thread(
        target=lambda: answers.extend([project.recall("staging cluster"), project.search("staging")])
    )
    reader.start()
    try:
        reader.join(timeout=20)  # under the 30 s a write waits
        waited = reader.is_alive()
    finally:
        release()
        reader.join()  # (never close the store under a reading thread)
    assert not waited, "the read waited for its bookkeeping's write"
    pack, hits = answers
    assert [it.key for it in pack.items if it.kind == "memory"] == [deploys.id]
    assert [h.id for h in hits] == [deploys.id]
    assert project.store.access_stats([deploys.id])[deploys.id][0] == counted  # left for later
    project.recall("staging cluster")
    assert project.store.access_stats([deploys.id])[deploys.id][0] == counted + 1


def test_past_work_found_while_another_process_writes_the_index(project, monkeypatch):
    """Another process (a git hook's `lore index`, an agent's `lore add`)
    changed the index while a search of past work ran: the search looked its
    own results up again under the index's newer version, and raised KeyError.
    Here another connection writes each time the version is read once the
    search is done."""
    from lore.search import hybrid

    other = lore.open(project.project.root)
    search_each, version = hybrid.search_each, project.store.vectors_version
    writes: list[str] = []
    searched: list[bool] = []

    def searched_then(*args, **kwargs):
        found = search_each(*args, **kwargs)
        searched.append(True)
        return found

    def read_after_a_write():
        if searched:  # a real write, through a connection of its own
            topic = ("deploys", "caching", "logging", "billing", "search", "backups")[len(writes) % 6]
            writes.append(other.add(title=f"About {topic}", body=f"Another process wrote of {topic}.").id)
        return version()

    monkeypatch.setattr(hybrid, "search_each", searched_then)
    monkeypatch.setattr(project.store, "vectors_version", read_after_a_write)
    try:
        assert project.history("release notes", fresh=False) == []
    finally:
        other.close()
    assert searched


def test_threads_sharing_one_lore_take_turns(project):
    """Threads of one program share one Lore (a web app's request threads):
    searches, recalls, adds and history calls at once. Its one connection and
    its caches had two callers at a time (a KeyError in its recent past work,
    a transaction of one thread's holding another's statements): each call
    now holds the Lore's lock. Every add is kept, every answer is the one a
    lone caller gets."""
    import threading

    seed = [project.add(title=f"Seed {topic}", body=f"How we handle {topic} here.").id for topic in TOPICS]
    alone = {topic: [h.id for h in project.search(topic)] for topic in TOPICS}
    errors: list[BaseException] = []
    added: list[str] = []
    answers: list[tuple[str, list[str]]] = []

    def work(n: int) -> None:
        try:
            for round_ in range(3):
                topic = TOPICS[(n + round_) % len(TOPICS)]
                answers.append((topic, [h.id for h in project.search(topic)]))
                project.recall(f"change the {topic}", fresh=False)
                project.history(topic, fresh=False)
                added.append(
                    project.add(title=f"Note {n}.{round_}", body=f"Thread {n} noted round {round_}.").id
                )
        except BaseException as err:  # every failure is the test's finding
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    assert len(added) == len(set(added)) == 24
    stored = {m["id"] for m in project.list(limit=100)}
    assert set(added) | set(seed) <= stored
    for topic, ids in answers:  # each topic's own memory first, as for a lone caller
        assert ids[:1] == alone[topic][:1] == [seed[TOPICS.index(topic)]], topic


TOPICS = ("deploys", "caching", "logging", "billing")


def test_a_second_embedder_waits_for_the_first_then_embeds_what_is_left(tmp_path):
    """`lore index` beside a git hook's update embedded the same texts twice
    (together 68 texts/s fell to 49): one process embeds at a time."""
    import threading

    import lore
    from lore.locking import file_lock

    with lore.init(tmp_path / "proj") as project:
        lock = project.project.local_dir / "embedding.lock"
        done = threading.Event()
        with file_lock(lock):  # another process embedding
            worker = threading.Thread(target=lambda: (project.embed(), done.set()))
            worker.start()
            assert not done.wait(1.0), "it went on beside the other embedder"
        assert done.wait(30)
        worker.join()
        assert any("waiting for it" in m for m in project.notices)
