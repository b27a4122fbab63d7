"""All of history with paths mapped to HEAD: statuses, renames, merges, incremental walks (real repos)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lore.index.githistory import FileChange, HeadPathMap, HistoryCommit, walk_history

pytestmark = [
    pytest.mark.usefixtures("git_env"),
    pytest.mark.storage_independent,  # no index: CI's postgres pass may skip
]

START = 1_700_000_000


class Repo:
    """A real repository driven by git commands, with a clock for commit dates."""

    def __init__(self, root: Path):
        self.root = root
        self.clock = START

    def git(self, *args: str, date: int | None = None) -> str:
        env = dict(os.environ)
        if date is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
        result = subprocess.run(
            ["git", "-C", str(self.root), *args], env=env, check=True, capture_output=True, text=True
        )
        return result.stdout.strip()

    def write(self, path: str, text: str | None = None) -> None:
        """Write a file; by default 20 lines naming the path, so git's rename
        detection pairs a moved file with itself and with nothing else."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text if text is not None else "".join(f"{path} {n}\n" for n in range(20)))

    def edit(self, path: str, line: str = "edited") -> None:
        """Change one line of twenty: the file stays recognisable to rename detection."""
        target = self.root / path
        lines = target.read_text().splitlines(keepends=True)
        lines[0] = f"{line} {self.clock}\n"
        target.write_text("".join(lines))

    def move(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def remove(self, path: str) -> None:
        self.git("rm", "-q", "-r", path)

    def commit(self, message: str) -> str:
        self.clock += 60
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, date=self.clock)
        return self.git("rev-parse", "HEAD")

    def merge(self, branch: str, message: str) -> str:
        self.clock += 60
        self.git("merge", "-q", "--no-ff", "-m", message, branch, date=self.clock)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    return Repo(root)


def walk(root: Path, **kwargs) -> list[HistoryCommit]:
    with walk_history(root, **kwargs) as history:
        return list(history)


def changes(commit: HistoryCommit) -> list[tuple[str, str, str | None, str | None]]:
    """(status, path, old path, head path) per changed file, sorted."""
    return sorted(zip(commit.status, commit.files, commit.old_paths, commit.head_paths))


def head_path_of(commits: list[HistoryCommit], subject: str, path: str) -> str | None:
    (commit,) = [c for c in commits if c.subject == subject]
    return dict(zip(commit.files, commit.head_paths))[path]


# -- the walk ------------------------------------------------------------------------


def test_every_commit_newest_first_with_statuses_and_head_paths(repo):
    repo.write("app.py")
    repo.write("old.py")
    repo.write("gone.py")
    first = repo.commit("Initial import")
    repo.edit("app.py")
    repo.move("old.py", "pkg/new.py")
    repo.remove("gone.py")
    repo.write("added.py")
    second = repo.commit("Rework: move old, drop gone\n\nThe body, kept.")

    newest, oldest = walk(repo.root)
    assert (newest.sha, oldest.sha) == (second, first)
    assert newest.parents == (first,) and oldest.parents == ()
    assert newest.subject == "Rework: move old, drop gone" and newest.body == "The body, kept."
    assert newest.author == "Ada Lovelace" and newest.email == "ada@example.com"
    assert newest.date.startswith("2023-11-14T22:")
    assert changes(newest) == [
        ("A", "added.py", None, "added.py"),
        ("D", "gone.py", None, None),
        ("M", "app.py", None, "app.py"),
        ("R", "pkg/new.py", "old.py", "pkg/new.py"),
    ]
    assert newest.n_files == 4 and not newest.is_merge
    assert changes(oldest) == [
        ("A", "app.py", None, "app.py"),
        ("A", "gone.py", None, None),  # evidence kept, but not a file to open
        ("A", "old.py", None, "pkg/new.py"),
    ]
    assert oldest.head_files == ("app.py", "pkg/new.py")
    assert newest.to_dict()["head_paths"] == list(newest.head_paths)


def test_all_of_history_not_only_the_newest_commits(repo):
    stream = []
    for n in range(2500):
        data = f"{n}\n".encode()
        stream.append(
            f"commit refs/heads/main\nmark :{n + 1}\n"
            f"committer Ada <ada@example.com> {START + n} +0000\ndata 3\nc{n % 10}\n".encode()
            + (f"from :{n}\n".encode() if n else b"")
            + f"M 100644 inline counter.txt\ndata {len(data)}\n".encode()
            + data
            + b"\n"
        )
    subprocess.run(
        ["git", "-C", str(repo.root), "fast-import", "--quiet"], input=b"".join(stream), check=True
    )
    commits = walk(repo.root)
    assert len(commits) == 2500
    assert commits[0].subject == "c9" and commits[-1].subject == "c0"
    assert {c.head_paths for c in commits} == {("counter.txt",)}


def test_file_renamed_twice_then_deleted(repo):
    repo.write("a.py")
    repo.write("keep.py")
    repo.commit("add a")
    repo.edit("a.py")
    repo.commit("edit a")
    repo.move("a.py", "b.py")
    repo.commit("a to b")
    repo.move("b.py", "lib/c.py")
    repo.commit("b to c")
    repo.edit("lib/c.py")
    repo.commit("edit c")
    commits = walk(repo.root)
    assert head_path_of(commits, "add a", "a.py") == "lib/c.py"
    assert head_path_of(commits, "edit a", "a.py") == "lib/c.py"
    assert head_path_of(commits, "a to b", "b.py") == "lib/c.py"

    repo.remove("lib/c.py")
    repo.commit("delete c")
    commits = walk(repo.root)
    for subject, path in [("add a", "a.py"), ("a to b", "b.py"), ("edit c", "lib/c.py")]:
        assert head_path_of(commits, subject, path) is None
    assert head_path_of(commits, "add a", "keep.py") == "keep.py"


def test_directory_move_follows_every_file_even_one_rewritten_in_the_move(repo):
    for name in ("app.py", "cli.py", "json/tag.py", "views.py"):
        repo.write(f"flask/{name}")
    repo.write("setup.py")
    repo.commit("the package")
    repo.edit("flask/json/tag.py")
    repo.commit("tag fix")
    repo.move("flask", "src/flask")
    # views.py is rewritten while moved: git alone reports delete + add
    repo.write("src/flask/views.py", "entirely new text\n")
    repo.commit("move to src directory")

    commits = walk(repo.root)
    move = commits[0]
    assert changes(move) == [
        ("R", "src/flask/app.py", "flask/app.py", "src/flask/app.py"),
        ("R", "src/flask/cli.py", "flask/cli.py", "src/flask/cli.py"),
        ("R", "src/flask/json/tag.py", "flask/json/tag.py", "src/flask/json/tag.py"),
        ("R", "src/flask/views.py", "flask/views.py", "src/flask/views.py"),
    ]
    assert head_path_of(commits, "tag fix", "flask/json/tag.py") == "src/flask/json/tag.py"
    initial = dict(zip(commits[-1].files, commits[-1].head_paths))
    assert initial == {
        "flask/app.py": "src/flask/app.py",
        "flask/cli.py": "src/flask/cli.py",
        "flask/json/tag.py": "src/flask/json/tag.py",
        "flask/views.py": "src/flask/views.py",
        "setup.py": "setup.py",
    }


def test_unrelated_add_is_not_paired_with_a_delete_by_directory(repo):
    repo.write("old/a.py")
    repo.write("old/b.py")
    repo.commit("one")
    repo.move("old/a.py", "new/a.py")
    repo.remove("old/b.py")
    repo.write("new/other.py", "unrelated\n")
    repo.commit("move a, drop b, add other")
    commits = walk(repo.root)
    assert changes(commits[0]) == [
        ("A", "new/other.py", None, "new/other.py"),
        ("D", "old/b.py", None, None),
        ("R", "new/a.py", "old/a.py", "new/a.py"),
    ]
    assert head_path_of(commits, "one", "old/b.py") is None


def test_deleted_and_recreated_path_is_a_different_file_unless_restored(repo):
    repo.write("notes.md", "first version\n" * 10)
    repo.write("config.py")
    repo.commit("first notes and config")
    repo.remove("notes.md")
    repo.remove("config.py")
    repo.commit("drop notes and config")
    repo.write("notes.md", "a different file\n")
    repo.git("checkout", "HEAD~1", "--", "config.py")  # the delete reverted: same content
    repo.commit("new notes, config restored")
    repo.edit("notes.md")
    repo.commit("edit notes")

    commits = walk(repo.root)
    first = dict(zip(commits[-1].files, commits[-1].head_paths))
    assert first == {"notes.md": None, "config.py": "config.py"}
    assert head_path_of(commits, "drop notes and config", "notes.md") is None
    assert head_path_of(commits, "new notes, config restored", "notes.md") == "notes.md"


def test_rename_whose_target_is_deleted_later(repo):
    repo.write("a.py")
    repo.commit("add a")
    repo.move("a.py", "b.py")
    repo.commit("a to b")
    repo.remove("b.py")
    repo.write("a.py", "a new a\n")
    repo.commit("drop b, new a")
    commits = walk(repo.root)
    assert head_path_of(commits, "add a", "a.py") is None  # that a became b, which is gone
    assert head_path_of(commits, "drop b, new a", "a.py") == "a.py"


def test_copies_when_the_user_turned_copy_detection_on(repo):
    repo.git("config", "diff.renames", "copies")
    repo.write("base.py")
    repo.commit("base")
    repo.write("copy.py", (repo.root / "base.py").read_text())
    repo.edit("base.py")
    repo.commit("copy base")
    commits = walk(repo.root)
    statuses = {path: status for status, path, _, _ in changes(commits[0])}
    assert statuses["base.py"] == "M"
    assert statuses["copy.py"] in ("A", "C")  # -M may override the config; either is right
    assert head_path_of(commits, "base", "base.py") == "base.py"
    assert dict(zip(commits[0].files, commits[0].head_paths))["copy.py"] == "copy.py"


def test_odd_file_names(repo):
    names = ["spaced name.py", "日本語/ñ.md", "line\nbreak.txt", ":colon-first.txt", '"quoted".txt']
    for name in names:
        repo.write(name)
    repo.commit("odd names")
    repo.move(":colon-first.txt", "dir/:still-colon.txt")
    repo.commit("move the colon")
    commits = walk(repo.root)
    assert sorted(commits[1].files) == sorted(names)
    assert dict(zip(commits[1].files, commits[1].head_paths))[":colon-first.txt"] == "dir/:still-colon.txt"
    assert changes(commits[0]) == [("R", "dir/:still-colon.txt", ":colon-first.txt", "dir/:still-colon.txt")]


def test_empty_commits_and_messages(repo):
    repo.git("commit", "-q", "--allow-empty", "-m", "root, empty", "-m", "body")
    repo.git("commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    newest, root = walk(repo.root)
    assert (newest.subject, newest.body, newest.files, newest.n_files) == ("", "", (), 0)
    assert (root.subject, root.body, root.files) == ("root, empty", "body", ())


def test_unborn_branch_and_not_a_repository(repo, tmp_path):
    assert walk(repo.root) == []
    plain = tmp_path / "plain"
    plain.mkdir()
    history = walk_history(plain)
    assert list(history) == [] and history.head is None and not history.incremental


# -- merges ----------------------------------------------------------------------------


def test_merge_lists_its_first_parent_diff_and_is_flagged(repo):
    repo.write("base.py")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("feature.py")
    repo.commit("feature work")
    repo.git("checkout", "-q", "main")
    repo.write("main.py")
    repo.commit("main work")
    merge_sha = repo.merge("feature", "Merge pull request #7 from dev/feature\n\nAdd the feature")

    commits = walk(repo.root)
    merge = commits[0]
    assert merge.sha == merge_sha and merge.is_merge and len(merge.parents) == 2
    assert merge.body == "Add the feature"
    assert changes(merge) == [("A", "feature.py", None, "feature.py")]
    assert merge.n_files == 1
    assert [c.subject for c in commits[1:]] == ["main work", "feature work", "base"]


def test_side_branch_commits_newer_than_a_rename_on_main_follow_it(repo):
    """A maintenance branch keeps editing CHANGES after main renamed it CHANGES.rst."""
    repo.write("CHANGES")
    repo.write("app.py")
    repo.commit("base")
    repo.git("branch", "maintenance")
    repo.move("CHANGES", "CHANGES.rst")
    repo.move("app.py", "src/app.py")
    repo.commit("rename on main")
    repo.git("checkout", "-q", "maintenance")
    repo.edit("CHANGES", "maintenance entry")
    repo.edit("app.py", "maintenance fix")
    repo.commit("fix on maintenance")  # newer than the rename: walked before it
    repo.git("checkout", "-q", "main")
    repo.merge("maintenance", "Merge branch 'maintenance'")

    commits = walk(repo.root)
    assert [c.subject for c in commits[:2]] == ["Merge branch 'maintenance'", "fix on maintenance"]
    fix = dict(zip(commits[1].files, commits[1].head_paths))
    assert fix == {"CHANGES": "CHANGES.rst", "app.py": "src/app.py"}
    assert head_path_of(commits, "base", "CHANGES") == "CHANGES.rst"
    cheaper = walk(repo.root, merge_renames=False)
    assert dict(zip(cheaper[1].files, cheaper[1].head_paths)) == {"CHANGES": None, "app.py": None}


def test_branch_that_deleted_and_recreated_a_file_does_not_cut_its_history(repo):
    """Net effect of the branch is "modified": older mentions still count for the file."""
    repo.write("docs/mongokit.rst")
    repo.commit("docs page")
    repo.edit("docs/mongokit.rst")
    repo.commit("edit docs page")
    repo.git("checkout", "-q", "-b", "rewrite")
    repo.remove("docs/mongokit.rst")
    repo.commit("drop the page")
    repo.write("docs/mongokit.rst", "a short redirect\n")
    repo.commit("redirect page")
    repo.git("checkout", "-q", "main")
    repo.merge("rewrite", "Merge rewrite")

    commits = walk(repo.root)
    assert head_path_of(commits, "docs page", "docs/mongokit.rst") == "docs/mongokit.rst"
    assert head_path_of(commits, "edit docs page", "docs/mongokit.rst") == "docs/mongokit.rst"
    assert head_path_of(commits, "drop the page", "docs/mongokit.rst") is None
    assert head_path_of(commits, "redirect page", "docs/mongokit.rst") == "docs/mongokit.rst"


def test_branch_delete_kept_by_the_merge_ends_the_file(repo):
    repo.write("legacy.py")
    repo.write("app.py")
    repo.commit("base")
    repo.edit("legacy.py")
    repo.commit("edit legacy")
    repo.git("checkout", "-q", "-b", "cleanup")
    repo.remove("legacy.py")
    repo.commit("drop legacy")
    repo.git("checkout", "-q", "main")
    repo.edit("app.py")
    repo.commit("main edit")
    repo.merge("cleanup", "Merge cleanup")
    commits = walk(repo.root)
    assert changes(commits[0]) == [("D", "legacy.py", None, None)]
    assert head_path_of(commits, "edit legacy", "legacy.py") is None
    assert head_path_of(commits, "base", "app.py") == "app.py"


# -- incremental walks -------------------------------------------------------------------


def test_incremental_walk_and_moved_paths_match_a_full_walk(repo):
    for name in ("a.py", "b.py", "c.py", "d/e.py", "d/f.py"):
        repo.write(name)
    repo.commit("one")
    repo.edit("a.py")
    repo.edit("d/e.py")
    repo.commit("two")
    stored = {c.sha: dict(zip(c.files, c.head_paths)) for c in walk(repo.root)}
    last = repo.git("rev-parse", "HEAD")

    repo.move("a.py", "lib/a.py")
    repo.commit("three")
    repo.move("lib/a.py", "lib/alpha.py")
    repo.remove("b.py")
    repo.move("d", "dir")
    repo.commit("four")

    with walk_history(repo.root, since=last) as history:
        new = list(history)
        assert history.incremental and history.since == last
        moved = history.moved()
        assert history.head_path("a.py") == "lib/alpha.py"
        assert history.head_path("c.py") == "c.py"
    assert [c.subject for c in new] == ["four", "three"]
    assert moved["a.py"] == "lib/alpha.py" and moved["b.py"] is None
    assert moved["d/e.py"] == "dir/e.py" and "c.py" not in moved

    remapped = {
        sha: {path: moved.get(head, head) if head else None for path, head in files.items()}
        for sha, files in stored.items()
    }
    full = {c.sha: dict(zip(c.files, c.head_paths)) for c in walk(repo.root)}
    assert {sha: full[sha] for sha in remapped} == remapped
    assert remapped[next(iter(stored))]["a.py"] == "lib/alpha.py"


def test_incremental_walk_with_nothing_new(repo):
    repo.write("a.py")
    sha = repo.commit("one")
    with walk_history(repo.root, since=sha) as history:
        assert list(history) == [] and history.incremental and history.moved() == {}


@pytest.mark.parametrize("rewrite", ["amend", "rebase", "unknown", "branch switch"])
def test_rewritten_history_gives_a_full_walk(repo, rewrite):
    repo.write("a.py")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "topic")
    repo.write("t.py")
    indexed = repo.commit("topic")
    if rewrite == "amend":
        repo.git("commit", "-q", "--amend", "-m", "topic, amended")
    elif rewrite == "rebase":
        repo.git("checkout", "-q", "main")
        repo.write("m.py")
        repo.commit("main moved")
        repo.git("checkout", "-q", "topic")
        repo.git("rebase", "-q", "main")
    elif rewrite == "branch switch":
        repo.git("checkout", "-q", "main")
    else:
        indexed = "f" * 40
    with walk_history(repo.root, since=indexed) as history:
        commits = list(history)
        assert not history.incremental and history.since is None
    assert commits[-1].subject == "base"
    assert indexed not in {c.sha for c in commits}


# -- limits, early stops, subfolders ---------------------------------------------------------


def test_cap_and_early_stop(repo):
    for n in range(6):
        repo.write(f"f{n}.py")
        repo.commit(f"c{n}")
    assert [c.subject for c in walk(repo.root, cap=2)] == ["c5", "c4"]
    assert walk(repo.root, cap=0) == []
    history = walk_history(repo.root)
    assert next(history).subject == "c5"
    history.close()  # ends git; a closed walk yields nothing more
    assert list(history) == []


def test_project_in_a_subfolder_sees_its_commits_with_relative_paths(repo):
    repo.write("service/app.py")
    repo.write("other/x.py")
    repo.commit("both")
    repo.write("other/y.py")
    repo.commit("outside only")
    repo.move("service/app.py", "service/src/app.py")
    repo.commit("move inside")
    commits = walk(repo.root / "service")
    assert [c.subject for c in commits] == ["move inside", "both"]
    assert changes(commits[0]) == [("R", "src/app.py", "app.py", "src/app.py")]
    assert dict(zip(commits[1].files, commits[1].head_paths)) == {"app.py": "src/app.py"}


def test_subfolder_project_follows_deletes_across_commits_outside_it(repo):
    """Commits outside the folder are skipped: the main line must still be known."""
    repo.write("service/old.py")
    repo.write("service/keep.py")
    repo.commit("start")
    repo.write("elsewhere.py")
    repo.commit("outside")
    repo.remove("service/old.py")
    repo.commit("drop old")
    repo.write("service/old.py", "a new file with the old name\n")
    repo.commit("new old")
    commits = walk(repo.root / "service")
    assert [c.subject for c in commits] == ["new old", "drop old", "start"]
    assert commits[1].parents == (commits[2].sha,)  # the nearest ancestor touching the folder
    assert dict(zip(commits[2].files, commits[2].head_paths)) == {"keep.py": "keep.py", "old.py": None}


def test_shallow_clone_walks_what_it_has(repo, tmp_path):
    """CI checkouts are often shallow: the walk covers the commits present."""
    repo.write("a.py")
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "side")
    repo.move("a.py", "b.py")
    repo.commit("side rename")
    repo.git("checkout", "-q", "main")
    repo.write("c.py")
    repo.commit("main work")
    repo.merge("side", "Merge side")
    repo.write("d.py")
    repo.commit("after merge")
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{repo.root}", str(shallow)],
        check=True,
        capture_output=True,
    )
    commits = walk(shallow)
    assert [c.subject for c in commits][:2] == ["after merge", "Merge side"]
    assert all(c.sha for c in commits)


def test_hook_environment_does_not_leak_into_the_walk(repo, monkeypatch):
    repo.write("a.py")
    repo.commit("one")
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo.root / ".git" / "gone.lock"))
    assert [c.subject for c in walk(repo.root)] == ["one"]


# -- the path map alone -------------------------------------------------------------------


def _change(status: str, path: str, old: str | None = None, old_blob: bytes = b"1", new_blob: bytes = b"2"):
    return FileChange(status, path, old, old_blob, new_blob)


def test_head_path_map_rules():
    paths = HeadPathMap(["src/app.py", "notes.md"])
    assert paths.resolve("src/app.py") == "src/app.py" and paths.resolve("nowhere.py") is None
    paths.step_back([_change("R", "src/app.py", "app.py")])
    assert paths.resolve("app.py") == "src/app.py"
    paths.step_back([_change("A", "notes.md", new_blob=b"same")])
    paths.step_back([_change("D", "notes.md", old_blob=b"same")])  # restored later: same file
    assert paths.resolve("notes.md") == "notes.md"
    paths.step_back([_change("D", "app.py")], deletes=False)  # off the main line: ignored
    assert paths.resolve("app.py") == "src/app.py"
    paths.step_back([_change("D", "app.py")])
    assert paths.resolve("app.py") is None
    paths.adopt_renames([("app.py", "src/app.py"), ("x.py", None)])
    assert paths.resolve("app.py") == "src/app.py" and paths.resolve("x.py") is None
    assert paths.moved() == {"app.py": "src/app.py"}


def test_head_path_map_applies_a_commit_at_once():
    """Two names swapped in one commit (git reports that only with -B; the map handles it)."""
    paths = HeadPathMap(["a.py", "b.py"])
    paths.step_back([_change("R", "a.py", "b.py"), _change("R", "b.py", "a.py")])
    assert (paths.resolve("a.py"), paths.resolve("b.py")) == ("b.py", "a.py")
