"""The inotify-backed freshness check of long-running processes."""

from __future__ import annotations

import lore
from lore.index.watch import Watcher


def test_watcher_reports_changes_and_quiet(tmp_path):
    folder = tmp_path / "memory"
    watcher = Watcher([folder])
    if not watcher.active:  # no inotify here: callers scan instead
        assert watcher.changed()
        return
    assert not watcher.changed()
    (folder / "a.md").write_text("x")
    assert watcher.changed() and not watcher.changed()
    (folder / "sub").mkdir()
    assert watcher.changed()
    (folder / "sub" / "b.md").write_text("y")  # new folders are watched too
    assert watcher.changed()
    watcher.close()


def test_watching_lore_sees_hand_edits_made_between_calls(tmp_path):
    project = lore.init(tmp_path / "p")
    config = project.project.lore_dir / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    project.close()
    watched = lore.open(tmp_path / "p", watch=True)
    added = watched.add(title="Cache policy", body="The cache is warmed at start-up.", tags=["cache"])
    assert [h.id for h in watched.search("warmed")] == [added.memory.id]
    path = watched.project.root / added.path
    path.write_text(path.read_text().replace("warmed at start-up", "flushed nightly"))
    assert [h.id for h in watched.search("nightly")] == [added.memory.id]
    assert watched.search("warmed") == []
    report = watched.last_sync
    watched.search("nightly")
    assert watched.last_sync is report  # nothing changed: no rescan
    path.unlink()
    assert watched.search("nightly") == []
    watched.close()


def _git(repo, *args: str) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _watched_repo(repo, monkeypatch) -> lore.Lore:
    """A git repository with one committed source file, open as a server
    opens it (watching; BM25 only), re-checking code at every call."""
    from lore.index import freshness

    monkeypatch.setattr(freshness, "CHECK_SECONDS", 0.0)
    (repo / "src").mkdir()
    (repo / "src" / "shapes.py").write_text("def circle_area(radius):\n    return 3.14159 * radius**2\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Add circle area")
    project = lore.init(repo)
    config = project.project.lore_dir / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    project.close()
    return lore.open(repo, watch=True)


def test_a_watching_lore_scans_the_code_only_after_a_change(repo, monkeypatch):
    """A server re-checks the work tree before reading code; with inotify it
    scans only when something under the tree or the git directory changed:
    an edit, a new file and a commit are found at the next call, and calls
    with nothing changed scan nothing (a scan of a 2,000-file tree is ~0.3 s)."""

    watched = _watched_repo(repo, monkeypatch)
    try:
        code = watched.code_index
        assert [h.file_path for h in watched.code_search("circle area")] == ["src/shapes.py"]
        if watched._watcher is None or not watched._watcher.active:  # no inotify here: every check scans
            return
        assert code._watcher is not None and code._watcher.active
        scanned = code._scanned
        for _ in range(3):
            watched.code_search("circle area")
        assert code._scanned == scanned  # nothing changed: no scan

        (repo / "src" / "ledger.py").write_text(
            "def reconcile_ledger_entries(book):\n    return sorted(book)\n"
        )
        assert [h.file_path for h in watched.code_search("reconcile ledger entries")][:1] == ["src/ledger.py"]
        assert code._scanned > scanned

        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "Reconcile the ledger's entries in order")
        assert [c.subject for c in watched.history("reconcile ledger entries order")][:1] == [
            "Reconcile the ledger's entries in order"
        ]
    finally:
        watched.close()


def test_a_change_seen_while_the_index_is_busy_is_picked_up_at_the_next_call(repo, monkeypatch):
    """The scan after a change fails (another process holds the index): the
    change is not forgotten, the next call scans again."""
    import sqlite3

    import pytest

    from lore.errors import LoreError

    watched = _watched_repo(repo, monkeypatch)
    if type(watched.store).__name__ != "SQLiteStore":
        watched.close()
        pytest.skip("another process's lock on a SQLite index")
    try:
        assert watched.code_search("circle area")
        watched.store.db.execute("PRAGMA busy_timeout = 200")  # not the default 30 s, for the test's sake
        (repo / "src" / "ledger.py").write_text(
            "def reconcile_ledger_entries(book):\n    return sorted(book)\n"
        )
        other = sqlite3.connect(watched.project.lore_dir / "index.db")
        other.execute("BEGIN IMMEDIATE")  # another process writing
        with pytest.raises((LoreError, sqlite3.OperationalError)):  # (as the index's write lock is refused)
            watched.code_search("reconcile ledger entries")
        other.rollback()
        other.close()
        assert [h.file_path for h in watched.code_search("reconcile ledger entries")][:1] == ["src/ledger.py"]
    finally:
        watched.close()


def test_watching_a_work_tree_never_makes_the_folders_it_watched(repo, monkeypatch):
    """A folder removed while watched (a linked worktree removed, a project
    deleted under a running server) stays removed."""
    from lore.index.watch import Watcher

    gone = repo / "wt"
    (gone / "sub").mkdir(parents=True)
    watcher = Watcher([repo, gone], create=False)
    if not watcher.active:
        return
    import shutil

    shutil.rmtree(gone)
    assert watcher.changed()
    assert not gone.exists()
    watcher.close()
