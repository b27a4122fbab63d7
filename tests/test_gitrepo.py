"""Reading git: commits, changes, last-changed times, hook locations (real repos)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lore.index import gitrepo
from lore.index.gitrepo import Commit, FileChanges, GitError

pytestmark = [
    pytest.mark.usefixtures("git_env"),
    pytest.mark.storage_independent,
]  # no index: CI's postgres pass may skip


def git(repo: Path, *args: str, date: int | None = None) -> str:
    env = dict(os.environ)
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0200"
    result = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return result.stdout.strip()


def write(repo: Path, path: str, text: str | None = None) -> None:
    """Write a file; by default its content is its own path (so no two files
    look alike to git's rename detection)."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{path}\n" if text is None else text, encoding="utf-8")


def move(repo: Path, old: str, new: str) -> None:
    (repo / new).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "mv", old, new)


def commit(repo: Path, message: str, *, date: int | None = None) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD")


# -- locating -----------------------------------------------------------------


def test_repo_root_from_subdir_file_and_outside(repo, tmp_path):
    write(repo, "src/pkg/mod.py")
    assert gitrepo.repo_root(repo) == repo
    assert gitrepo.repo_root(repo / "src" / "pkg") == repo
    assert gitrepo.repo_root(repo / "src" / "pkg" / "mod.py") == repo
    assert gitrepo.repo_root(repo / "src" / "not-yet" / "created.py") == repo
    outside = tmp_path / "plain"
    outside.mkdir()
    assert gitrepo.repo_root(outside) is None
    assert gitrepo.repo_root(repo / ".git") is None


def test_repo_root_without_git_binary(repo, monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert gitrepo.repo_root(repo) is None


def test_head_and_branch(repo):
    assert gitrepo.head(repo) is None
    assert gitrepo.current_branch(repo) == "main"
    assert gitrepo.commits(repo) == []
    first = commit(repo, "first")
    assert gitrepo.head(repo) == first
    git(repo, "checkout", "-q", "--detach")
    assert gitrepo.current_branch(repo) is None
    assert gitrepo.head(repo) == first


def test_a_branch_name_that_is_not_utf8_is_still_text(repo):
    """A branch name goes to search and to the embedder (`lore start`): bytes
    that are not UTF-8 become U+FFFD, never surrogates that no encoder takes."""
    commit(repo, "first")
    subprocess.run(["git", "checkout", "-q", "-b", b"T-77-caf\xe9-br"], cwd=repo, check=True)
    branch = gitrepo.current_branch(repo)
    assert branch == "T-77-caf\ufffd-br"
    branch.encode("utf-8")


def test_git_errors_are_lore_errors(tmp_path):
    from lore.errors import LoreError

    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(LoreError, match="rev-parse"):
        gitrepo.git_dir(plain)


# -- commits ------------------------------------------------------------------


def test_commits_parse_bodies_unicode_renames_deletes(repo):
    write(repo, "a.txt", "a\n")
    write(repo, "old name.txt", "stays the same content\n" * 20)
    write(repo, "gone.txt")
    commit(repo, "Initial import")
    move(repo, "old name.txt", "docs/new name.txt")
    git(repo, "rm", "-q", "gone.txt")
    write(repo, "docs/日本語 ñ.md", "hola\n")
    write(repo, "weird\nname.txt")
    write(repo, "\nleading-newline.txt")
    body = (
        "Café ☕: résumé of the change\n\n"
        "Line one of the body.\n\n\n"
        "%H %x00 \x1e record-separator-looking text\n"
        "\n"
        "a.txt\n"
        "Signed-off-by: Ada <ada@example.com>\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--cleanup=verbatim", "-m", body)  # keep the blank lines
    sha = git(repo, "rev-parse", "HEAD")

    newest, oldest = gitrepo.commits(repo)
    assert newest.sha == sha
    assert newest.parents == (oldest.sha,)
    assert newest.author == "Ada Lovelace" and newest.email == "ada@example.com"
    assert newest.subject == "Café ☕: résumé of the change"
    assert newest.body == (
        "Line one of the body.\n\n\n"
        "%H %x00 \x1e record-separator-looking text\n\n"
        "a.txt\nSigned-off-by: Ada <ada@example.com>"
    )
    assert set(newest.files) == {
        "docs/new name.txt",
        "gone.txt",
        "docs/日本語 ñ.md",
        "weird\nname.txt",
        "\nleading-newline.txt",
    }
    assert "old name.txt" not in newest.files
    assert oldest.parents == ()
    assert set(oldest.files) == {"a.txt", "old name.txt", "gone.txt"}
    assert oldest.date[:4].isdigit() and oldest.date[10] == "T"


def test_commits_empty_commit_and_empty_body_between_others(repo):
    write(repo, "a")
    commit(repo, "one")
    commit(repo, "nothing changed")
    write(repo, "b")
    commit(repo, "three")
    found = gitrepo.commits(repo)
    assert [c.subject for c in found] == ["three", "nothing changed", "one"]
    assert [c.files for c in found] == [("b",), (), ("a",)]
    assert all(c.body == "" for c in found)


def test_commits_merges_list_files_against_first_parent(repo):
    write(repo, "base")
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "feature.py")
    write(repo, "shared", "feature\n")
    commit(repo, "feature work")
    git(repo, "checkout", "-q", "main")
    write(repo, "main.py")
    commit(repo, "main work")
    git(repo, "merge", "-q", "--no-edit", "feature")

    merge = gitrepo.commits(repo)[0]
    assert merge.is_merge and len(merge.parents) == 2
    assert merge.subject == "Merge branch 'feature'"
    assert set(merge.files) == {"feature.py", "shared"}
    assert {c.subject for c in gitrepo.commits(repo)} == {
        "Merge branch 'feature'",
        "main work",
        "feature work",
        "base",
    }


def test_commits_limit(repo):
    for n in range(5):
        write(repo, f"f{n}")
        commit(repo, f"c{n}")
    assert [c.subject for c in gitrepo.commits(repo, limit=2)] == ["c4", "c3"]
    assert gitrepo.commits(repo, limit=0) == []


def test_commits_since_is_incremental(repo):
    shas = []
    for n in range(4):
        write(repo, f"f{n}")
        shas.append(commit(repo, f"c{n}"))
    assert [c.subject for c in gitrepo.commits(repo, since=shas[1])] == ["c3", "c2"]
    assert gitrepo.commits(repo, since=shas[3]) == []
    assert len(gitrepo.commits(repo, since="0" * 40)) == 4  # unknown: full list
    assert len(gitrepo.commits(repo, since="not-a-revision")) == 4


def test_commits_since_after_amend_returns_full_list(repo):
    write(repo, "a")
    commit(repo, "one")
    write(repo, "b")
    before = commit(repo, "two")
    git(repo, "commit", "-q", "--amend", "-m", "two, amended")
    assert not gitrepo.is_ancestor(repo, before, "HEAD")
    assert [c.subject for c in gitrepo.commits(repo, since=before)] == ["two, amended", "one"]


def test_commits_since_after_rebase_returns_full_list(repo):
    write(repo, "a")
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "topic")
    write(repo, "t")
    indexed = commit(repo, "topic")
    git(repo, "checkout", "-q", "main")
    write(repo, "m")
    commit(repo, "main moved")
    git(repo, "checkout", "-q", "topic")
    git(repo, "rebase", "-q", "main")
    assert not gitrepo.is_ancestor(repo, indexed, "HEAD")
    assert [c.subject for c in gitrepo.commits(repo, since=indexed)] == ["topic", "main moved", "base"]


def test_is_ancestor(repo):
    write(repo, "a")
    first = commit(repo, "one")
    write(repo, "b")
    second = commit(repo, "two")
    assert gitrepo.is_ancestor(repo, first, second)
    assert gitrepo.is_ancestor(repo, second, second)
    assert not gitrepo.is_ancestor(repo, second, first)
    assert not gitrepo.is_ancestor(repo, "f" * 40, second)


# -- diffs --------------------------------------------------------------------


def test_diff_files_renames_deletes_changes(repo):
    write(repo, "keep.py", "v1\n")
    write(repo, "src/old.py", "def f():\n    return 1\n" * 10)
    write(repo, "gone.py", "to be deleted\n")
    old = commit(repo, "one")
    write(repo, "keep.py", "v2\n")
    move(repo, "src/old.py", "src/ñew.py")
    git(repo, "rm", "-q", "gone.py")
    write(repo, "added.py", "brand new\n")
    new = commit(repo, "two")

    changes = gitrepo.diff_files(repo, old, new)
    assert sorted(changes.changed) == ["added.py", "keep.py", "src/ñew.py"]
    assert sorted(changes.deleted) == ["gone.py", "src/old.py"]
    assert changes.renamed == [("src/old.py", "src/ñew.py")]
    assert gitrepo.diff_files(repo, new, new) == FileChanges()
    assert not gitrepo.diff_files(repo, new, new)


def test_diff_files_from_empty_tree(repo):
    write(repo, "a.py")
    write(repo, "dir/b c.py")
    sha = commit(repo, "one")
    changes = gitrepo.diff_files(repo, None, sha)
    assert sorted(changes.changed) == ["a.py", "dir/b c.py"]
    assert changes.deleted == [] and changes.renamed == []


def test_diff_files_unknown_commit_raises_actionable_error(repo):
    from lore.errors import LoreError

    write(repo, "a")
    sha = commit(repo, "one")
    with pytest.raises(LoreError, match="re-index from scratch"):
        gitrepo.diff_files(repo, "e" * 40, sha)


def test_worktree_changes(repo):
    write(repo, ".gitignore", "*.log\n")
    write(repo, "modified.py", "v1\n")
    write(repo, "staged.py", "v1\n")
    write(repo, "to_delete.py")
    write(repo, "to_rename.py", "content that stays\n" * 10)
    commit(repo, "one")
    assert gitrepo.worktree_changes(repo) == FileChanges()

    write(repo, "modified.py", "v2\n")  # unstaged
    write(repo, "staged.py", "v2\n")
    git(repo, "add", "staged.py")  # staged
    (repo / "to_delete.py").unlink()  # unstaged delete
    move(repo, "to_rename.py", "renamed/ü.py")  # staged rename
    write(repo, "new/deep/untracked é.py")  # untracked, in an untracked dir
    write(repo, "debug.log")  # ignored
    changes = gitrepo.worktree_changes(repo)
    assert sorted(changes.changed) == ["modified.py", "new/deep/untracked é.py", "renamed/ü.py", "staged.py"]
    assert sorted(changes.deleted) == ["to_delete.py", "to_rename.py"]
    assert changes.renamed == [("to_rename.py", "renamed/ü.py")]


def test_worktree_changes_on_unborn_branch(repo):
    write(repo, "a.py")
    write(repo, "b.py")
    git(repo, "add", "a.py")
    assert sorted(gitrepo.worktree_changes(repo).changed) == ["a.py", "b.py"]


# -- last changed -------------------------------------------------------------


def test_last_changed(repo):
    write(repo, "a.py", "1\n")
    write(repo, "b.py", "1\n")
    commit(repo, "one", date=1_700_000_000)
    write(repo, "a.py", "2\n")
    commit(repo, "two", date=1_700_000_100)
    move(repo, "b.py", "c é.py")
    commit(repo, "three", date=1_700_000_200)

    times = gitrepo.last_changed(repo)
    assert times["a.py"] == 1_700_000_100
    assert times["c é.py"] == 1_700_000_200
    assert times["b.py"] == 1_700_000_200  # deleted by the rename
    assert gitrepo.last_changed(repo, ["a.py", "missing.py"]) == {"a.py": 1_700_000_100}
    assert gitrepo.last_changed(repo, []) == {}
    # Many paths: one scan of history instead of a pathspec.
    many = ["a.py", "c é.py"] + [f"nope{n}.py" for n in range(100)]
    assert gitrepo.last_changed(repo, many) == {"a.py": 1_700_000_100, "c é.py": 1_700_000_200}
    # max_commits bounds the commits read; a short path list only reads
    # commits touching those paths.
    assert gitrepo.last_changed(repo, many, max_commits=1) == {"c é.py": 1_700_000_200}
    assert gitrepo.last_changed(repo, ["a.py"], max_commits=1) == {"a.py": 1_700_000_100}


def test_last_changed_stops_early_in_long_history(repo):
    write(repo, "target.py")
    for n in range(30):
        write(repo, f"f{n}.py")
        commit(repo, f"c{n}", date=1_700_000_000 + n)
    many = ["target.py", "f29.py"] + [f"x{n}" for n in range(70)]
    assert gitrepo.last_changed(repo, many)["f29.py"] == 1_700_000_029
    assert gitrepo.last_changed(repo, ["f29.py", "f28.py"]) == {
        "f29.py": 1_700_000_029,
        "f28.py": 1_700_000_028,
    }


# -- hook locations -----------------------------------------------------------


def test_git_dir_and_hooks_dir(repo):
    assert gitrepo.git_dir(repo) == repo / ".git"
    assert gitrepo.hooks_dir(repo) == repo / ".git" / "hooks"


def test_hooks_dir_honours_core_hooks_path(repo, tmp_path):
    git(repo, "config", "core.hooksPath", ".githooks")
    assert gitrepo.hooks_dir(repo) == repo / ".githooks"
    elsewhere = tmp_path / "shared-hooks"
    git(repo, "config", "core.hooksPath", str(elsewhere))
    assert gitrepo.hooks_dir(repo) == elsewhere


def test_worktrees_share_hooks(repo, tmp_path):
    write(repo, "a")
    commit(repo, "one")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    assert gitrepo.repo_root(linked / ".") == linked
    assert gitrepo.git_dir(linked) == repo / ".git" / "worktrees" / "linked"
    assert gitrepo.hooks_dir(linked) == repo / ".git" / "hooks"
    assert gitrepo.current_branch(linked) == "side"


def test_hook_environment_does_not_leak_into_reads(repo, monkeypatch):
    """Hooks export GIT_INDEX_FILE/GIT_DIR; reads must follow `root` instead."""
    write(repo, "a")
    commit(repo, "one")
    write(repo, "b")
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "gone-index.lock"))
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    assert gitrepo.worktree_changes(repo).changed == ["b"]
    assert [c.subject for c in gitrepo.commits(repo)] == ["one"]


def test_commit_is_frozen():
    c = Commit("s", (), "a", "e", "d", "subj", "", ())
    with pytest.raises(AttributeError):
        c.sha = "t"  # type: ignore[misc]
    assert not c.is_merge


def test_commits_with_empty_messages_and_no_files_at_the_end(repo):
    git(repo, "commit", "-q", "--allow-empty", "-m", "root, empty", "-m", "body")
    git(repo, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    newest, root = gitrepo.commits(repo)
    assert (newest.subject, newest.body, newest.files) == ("", "", ())
    assert (root.subject, root.body, root.files, root.parents) == ("root, empty", "body", (), ())


# -- public helpers used by other modules ----------------------------------------


def test_commits_mentioning_is_a_fixed_string_case_insensitive_search(repo):
    write(repo, "a.py")
    commit(repo, "Fix [JAT-1.x] parser (see jat-1.x)")
    write(repo, "b.py")
    commit(repo, "Unrelated\n\nbody mentions jat-1.X too")
    write(repo, "c.py")
    commit(repo, "jat-1yx is not a match for the dot")
    found = gitrepo.commits_mentioning(repo, "jat-1.x")
    assert [c.subject for c in found] == ["Unrelated", "Fix [JAT-1.x] parser (see jat-1.x)"]
    assert found[0].files == ("b.py",)
    assert gitrepo.commits_mentioning(repo, "") == []


def test_commits_mentioning_on_unborn_branch(repo):
    assert gitrepo.commits_mentioning(repo, "anything") == []


def test_commit_patches_in_the_order_given_and_worktree_patch(repo):
    write(repo, "a.py", "one\n")
    first = commit(repo, "one")
    write(repo, "a.py", "one\ntwo\n")
    second = commit(repo, "two")
    patches = gitrepo.commit_patches(repo, [first, second])
    assert patches.index(first) < patches.index(second)
    assert "new file mode" in patches and "@@ -1,0 +2 @@" in patches
    assert gitrepo.commit_patches(repo, []) == ""

    write(repo, "a.py", "one\nTWO\n")
    write(repo, "new dir/untracked é.py", "x\n")
    assert "@@ -2 +2 @@" in gitrepo.worktree_patch(repo)
    assert gitrepo.untracked_files(repo) == ["new dir/untracked é.py"]


def test_worktree_patch_on_unborn_branch(repo):
    write(repo, "a.py", "staged\n")
    git(repo, "add", "a.py")
    assert "+staged" in gitrepo.worktree_patch(repo)


def test_git_tokens_streams_stops_early_and_reports_failures(repo):
    for n in range(3):
        write(repo, f"f{n}")
        commit(repo, f"c{n}")
    with gitrepo.git_tokens(repo, ["log", "-z", "--format=%s"], check=True) as tokens:
        assert next(tokens) == b"c2"  # leaving the block early ends git without an error
    with gitrepo.git_tokens(repo, ["log", "-z", "--format=%s"], check=True) as tokens:
        assert [t for t in tokens if t] == [b"c2", b"c1", b"c0"]
    with pytest.raises(GitError, match="no-such-revision"):
        with gitrepo.git_tokens(repo, ["log", "no-such-revision"], check=True) as tokens:
            list(tokens)


def test_project_scope(repo):
    (repo / "sub").mkdir()
    assert gitrepo.project_scope(repo) == []
    assert gitrepo.project_scope(repo / "sub") == ["."]
