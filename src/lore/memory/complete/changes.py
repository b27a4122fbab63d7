"""The task's work as git knows it: its commits, the files they changed, the decisions they state.

A task's commits are those reachable from HEAD whose message mentions the task
id as a whole word (``jat-abc``, ``[jat-abc]``, ``jat-abc:``; not ``jat-abcd``
or the child task ``jat-abc.1``). When there are none, the uncommitted work
tree (staged, unstaged and untracked) is taken as the task's work.
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path

from lore.errors import UsageError
from lore.index import gitrepo
from lore.index.gitrepo import Commit
from lore.memory.complete.decisions import mine_decisions
from lore.memory.complete.diff import FileStat, by_churn, fold_diff, parse_patch, untracked_stat
from lore.records import datarecord

__all__ = ["TaskChanges", "task_changes"]


@datarecord
class TaskChanges:
    """What git knows about a task's work.

    Attributes:
        commits: the task's commits, newest first (empty when the work is
            uncommitted or nothing was found).
        files: changed files (posix, relative to the repository root) that
            still exist after the task, most changed lines first.
        key_files: ``(path, line, note)`` per file in `files`' order: the first
            changed line in the new version (None for binary or mode-only
            changes) and a short note such as ``+12 −3 lines in `def foo()```.
        decisions: decisions stated in the commit messages, each ending with
            the commit's short sha, e.g. ``Chose X rather than Y (a1b2c3d)``.
        task: the task id asked for.
    """

    commits: list[Commit] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    key_files: list[tuple[str, int | None, str]] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    task: str = ""


def task_changes(root: Path, task: str, *, max_commits: int = 200) -> TaskChanges:
    """Find a task's commits (or, without any, the uncommitted work) and summarise them.

    Args:
        root: any folder inside the work tree.
        task: the task id, e.g. ``jat-abc``; matched as a whole word,
            case-insensitively, in commit subjects and bodies.
        max_commits: consider at most this many (newest) task commits.

    Returns an empty :class:`TaskChanges` when `root` is not in a git work
    tree, so a memory can still be written from the bundle alone. Runs a
    fixed handful of git processes (never one per commit or per file).

    Raises:
        UsageError: `task` is empty.
        GitError: git failed unexpectedly.
    """
    task = (task or "").strip()
    if not task:
        raise UsageError("no task id given; pass the task's id, e.g. jat-abc")
    top = gitrepo.repo_root(Path(root))
    if top is None:
        return TaskChanges(task=task)
    found = _task_commits(top, task, max_commits)
    if found:
        # A merge's first-parent diff repeats its branch's commits; use merges
        # only when the task has nothing else (e.g. only "Merge jat-abc" names it).
        plain = [c for c in found if not c.is_merge] or found
        stats = _commit_stats(top, [c.sha for c in reversed(plain)])
        files = by_churn(stats)
    else:
        stats, files = _worktree_stats(top)
    # Lore's own files (.lore/config.toml, memory files) are never what a task changed.
    files = [p for p in files if ".lore" not in p.split("/")]
    key_files = [
        (p, stats[p].first if p in stats else None, stats[p].note() if p in stats else "changed")
        for p in files
    ]
    return TaskChanges(
        commits=found, files=files, key_files=key_files, decisions=mine_decisions(found, task), task=task
    )


def _task_pattern(task: str) -> re.Pattern[str]:
    # Whole word: not inside a longer id (jat-abcd, xjat-abc, jat-abc-2) and not
    # a child task (jat-abc.1); "jat-abc." at the end of a sentence still counts.
    return re.compile(rf"(?<![\w-]){re.escape(task)}(?![\w-]|\.\w)", re.IGNORECASE)


def _task_commits(root: Path, task: str, max_commits: int) -> list[Commit]:
    if max_commits <= 0:
        return []
    # git narrows to messages containing the id anywhere (a fixed string, so
    # no regex escaping issues); the whole-word test is done here.
    pattern = _task_pattern(task)
    found = [c for c in gitrepo.commits_mentioning(root, task) if pattern.search(f"{c.subject}\n{c.body}")]
    return found[:max_commits]


def _commit_stats(root: Path, shas_oldest_first: list[str]) -> dict[str, FileStat]:
    stats: dict[str, FileStat] = {}
    for diff in parse_patch(gitrepo.commit_patches(root, shas_oldest_first)):
        fold_diff(stats, diff)
    return stats


def _worktree_stats(root: Path) -> tuple[dict[str, FileStat], list[str]]:
    """Uncommitted changes: `git diff HEAD` for tracked files, line counts for untracked ones."""
    changes = gitrepo.worktree_changes(root)
    if not changes:
        return {}, []
    stats: dict[str, FileStat] = {}
    for diff in parse_patch(gitrepo.worktree_patch(root)):
        fold_diff(stats, diff)
    for path in gitrepo.untracked_files(root):
        if path not in stats:
            stats[path] = untracked_stat(root / path)
    present = set(changes.changed)
    # A file staged and then changed back has no net change: it is left out.
    return stats, [p for p in by_churn(stats) if p in present]
