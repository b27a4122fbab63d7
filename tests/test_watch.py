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
