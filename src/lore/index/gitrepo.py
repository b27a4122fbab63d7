"""Reading a git repository: commits, changed files, hook locations.

Lore indexes a repository's code and its history ("past work") and keeps both
fresh from git hooks, so everything here runs the `git` binary a small, fixed
number of times per call (never once per commit or per file) and only reads.

Conventions:
- Paths are posix, relative to the work tree root, and real: output is read
  with `-z` and `core.quotepath=false`, so non-ASCII names come back as-is
  (bytes that are not UTF-8 survive as surrogate escapes, like `os.fsdecode`).
- Git is run with the repository-locating variables that hooks export
  (GIT_DIR, GIT_INDEX_FILE, ...) removed, because `root` says which repository
  is meant and a hook's GIT_INDEX_FILE may name a temporary index that is gone
  by the time a background update runs. Optional locks are off
  (GIT_OPTIONAL_LOCKS=0), so reading never takes `index.lock` from under the
  user's own git commands.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from lore.errors import GitError
from lore.records import datarecord

__all__ = [
    "DATE_FORMAT",
    "EMPTY_TREE",
    "Commit",
    "FileChanges",
    "GitError",
    "GitMissing",
    "commit_patches",
    "commits",
    "commits_mentioning",
    "current_branch",
    "diff_files",
    "git_command",
    "git_dir",
    "git_env",
    "git_folder",
    "git_tokens",
    "head",
    "head_and_shallow",
    "hooks_dir",
    "is_ancestor",
    "is_partial_clone",
    "last_changed",
    "project_scope",
    "refusal",
    "repo_root",
    "run_git",
    "untracked_files",
    "worktree_changes",
    "worktree_patch",
]

# The object name of the empty tree (the "parent" of a root commit) where
# objects are named by SHA-1, as they are by default.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class Commit:
    """One commit, as Lore indexes it.

    Attributes:
        sha: full object name.
        parents: parent shas (two or more for a merge).
        author, email: author name and email, as recorded (no mailmap).
        date: author date, ISO 8601 with offset (`2024-05-01T12:00:00+02:00`).
        subject: first paragraph of the message, folded onto one line.
        body: the rest of the message, trailing whitespace removed.
        files: paths changed (new paths for renames); for a merge, the paths it
            changed relative to its first parent.
    """

    sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    date: str
    subject: str
    body: str
    files: tuple[str, ...]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


@datarecord
class FileChanges:
    """Paths that differ between two states of the tree.

    `changed` and `deleted` are complete on their own: a rename from `a` to `b`
    puts `b` in `changed` and `a` in `deleted`, and also `(a, b)` in `renamed`
    for callers that want to carry data across the move. So a caller may
    re-read `changed`, drop `deleted` and ignore `renamed` and still be right.
    """

    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted)


# Variables git exports to hooks that would override `git -C root`.
# (`git rev-parse --local-env-vars` lists them.)
_LOCAL_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)

# One record per commit: an empty field (a path is never empty, so this marks
# where a record starts), then fixed fields. The message body is the last
# field; git ends it with NUL and, when the commit changed files, follows with
# "\n" and the NUL-terminated paths.
_LOG_FIELDS = ("%H", "%P", "%an", "%ae", "%ad", "%s", "%b")
_LOG_FORMAT = "%x00" + "%x00".join(_LOG_FIELDS)

# A commit's date (`%ad`) as ISO 8601 in UTC (git runs with TZ=UTC, see git_env).
# Not `%aI`, the time in the author's zone: git dies on it ("Timestamp before Unix
# epoch") for a commit dated in the first hours of 1970 with a zone west of UTC
# (a converted repository's missing dates), and that one commit failed every log.
DATE_FORMAT = "--date=iso-strict-local"

# Passing more paths than this to `last_changed` scans all history instead of
# giving git a pathspec.
_MAX_PATHSPEC = 64


class GitMissing(GitError):
    """git is not installed (or not on PATH): a folder is then simply not a repository."""


_MISSING = "git is not installed (or not on PATH); install git to index history and use hooks"

# What git says when it refuses a repository owned by another user (git >= 2.35.2).
_DUBIOUS = re.compile(rb"dubious ownership in repository at '([^'\n]*)'")
# ... and when a .git file (linked worktree, submodule) names a folder that is
# no repository ("not a git repository (or any of the parent ...)" is no git at all).
_BROKEN_GITFILE = re.compile(
    rb"fatal: (?:not a git repository|invalid gitfile format|no path in gitfile): (.+)"
)


def refusal(root: Path, stderr: bytes) -> GitError | None:
    """The error to raise when git's `stderr` says it cannot work in the
    repository at all, else None: the repository is owned by another user
    ("dubious ownership"), or `root`'s .git file names a git folder that is
    gone (a linked worktree whose repository moved).

    Every git command fails there until the user acts, so the repository must
    not pass for a folder without git, nor its history for an empty one.
    """
    broken = _BROKEN_GITFILE.search(stderr)
    if broken is not None:
        named = os.fsdecode(broken.group(1).strip().strip(b"'"))
        return GitError(
            f"git cannot open the repository of {root}: its .git file names {named}, which is "
            "not a repository (moved or deleted?); for a linked worktree whose repository moved, "
            f"run `git worktree repair {shlex.quote(str(root))}` in that repository"
        )
    found = _DUBIOUS.search(stderr)
    if found is None:
        return None
    where = os.fsdecode(found.group(1)) or str(root)
    return GitError(
        f"git refuses to read the repository at {where}: it belongs to another user "
        f'("dubious ownership"); if you trust it, run '
        f"`git config --global --add safe.directory {shlex.quote(where)}`"
    )


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs with: hook variables removed, optional locks
    off, prompts off, C locale, UTC (dates of DATE_FORMAT); plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_ENV}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", TZ="UTC")
    if extra:
        env.update(extra)
    return env


def git_command(root: Path, args: list[str]) -> list[str]:
    """The argument list that runs git with `args` in `root` (real, unquoted paths)."""
    return ["git", "-C", str(root), "-c", "core.quotepath=false", *args]


def run_git(
    root: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run git in `root` and return its output (bytes), read in full.

    Hook variables are removed from the environment and optional locks are
    off (see the module docstring); `env` adds variables.

    Raises:
        GitError: git is not installed, or (with `check`) exits non-zero.
    """
    try:
        result = subprocess.run(
            git_command(root, list(args)), capture_output=True, stdin=subprocess.DEVNULL, env=git_env(env)
        )
    except FileNotFoundError:
        raise GitMissing(_MISSING) from None
    if result.returncode != 0:
        refused = refusal(root, result.stderr)
        if refused is not None:
            raise refused
    if check and result.returncode != 0:
        message = _text(result.stderr).strip() or f"exit status {result.returncode}"
        raise GitError(f"`git {' '.join(args[:2])}` failed in {root}: {message}")
    return result


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _path(data: bytes) -> str:
    return os.fsdecode(data)


def _line(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


def _nearest_folder(path: Path) -> Path | None:
    """`path` if it is a folder, else its nearest parent that is (None: none is)."""
    start = Path(path).absolute()
    while not start.is_dir():
        if start.parent == start:
            return None
        start = start.parent
    return start


def repo_root(path: Path) -> Path | None:
    """The top level of the work tree containing `path`.

    Returns None when `path` is not inside a git work tree (including inside
    `.git/` itself) or git is not installed.

    Raises:
        GitError: git refuses the repository (:func:`refusal`).
    """
    start = _nearest_folder(path)
    if start is None:
        return None
    try:
        result = run_git(start, "rev-parse", "--show-toplevel", check=False)
    except GitMissing:
        return None
    if result.returncode != 0 or not result.stdout.strip():
        return None
    return Path(_line(result))


def git_folder(path: Path) -> tuple[Path, bool] | None:
    """When `path` is a git directory or inside one (a bare repository, a
    `.git/` folder): that git directory and whether the repository is bare.
    None anywhere else, and where git is not installed. One git process."""
    start = _nearest_folder(path)
    if start is None:
        return None
    try:
        result = run_git(
            start,
            "rev-parse",
            "--is-inside-git-dir",
            "--is-bare-repository",
            "--absolute-git-dir",
            check=False,
        )
    except GitMissing:
        return None
    lines = _line(result).split("\n")
    if result.returncode != 0 or len(lines) != 3 or lines[0] != "true":
        return None
    return Path(lines[2]), lines[1] == "true"


def head(root: Path) -> str | None:
    """The sha HEAD points at, or None on an unborn branch (no commits yet).

    Raises:
        GitError: HEAD names an object that is missing or not a commit.
    """
    result = run_git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    if result.returncode != 0:
        _check_unborn(root)
        return None
    return _line(result)


def _check_unborn(root: Path) -> None:
    """After HEAD did not resolve to a commit: return on an unborn branch (HEAD
    names nothing yet); raise when it names an object the repository lacks
    (damaged, or half copied), which must not pass for an empty history."""
    named = run_git(root, "rev-parse", "-q", "--verify", "HEAD", check=False)
    sha = _line(named) if named.returncode == 0 else ""
    if sha:
        raise GitError(
            f"HEAD names {sha}, which is not a commit in the repository at {root} (it is damaged "
            "or incomplete); check it with `git fsck`, or check out a branch that is whole"
        )


def head_if_git(root: Path) -> str | None:
    """:func:`head`, or None where git is not installed (one process, where
    asking :func:`repo_root` first took two: a cold command pays for each)."""
    try:
        return head(root)
    except GitMissing:
        return None


def head_and_shallow(root: Path) -> tuple[str | None, str]:
    """:func:`head_if_git` (raising as :func:`head` does), and where a shallow clone's history stops: the
    sorted shas of the commits whose parents it lacks, one a line ("" for a
    complete repository). The boundary changes when `git fetch --deepen` or
    `--unshallow` brings older commits in, which moves no ref. One git process."""
    try:
        result = run_git(
            root, "rev-parse", "--git-path", "shallow", "-q", "--verify", "HEAD^{commit}", check=False
        )
    except GitMissing:
        return None, ""
    lines = _line(result).split("\n")
    if not lines[0]:
        return None, ""  # not a repository
    sha = lines[1] if result.returncode == 0 and len(lines) > 1 else None
    if sha is None:
        _check_unborn(root)
    path = Path(lines[0])
    try:
        text = (path if path.is_absolute() else Path(root) / path).read_text("ascii", "replace")
    except OSError:
        return sha, ""  # no such file: not shallow
    return sha, "\n".join(sorted(text.split()))


def current_branch(root: Path) -> str | None:
    """The checked-out branch's short name, or None when HEAD is detached."""
    result = run_git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if result.returncode != 0:
        return None
    # Text for people and for search (a task id, words), never a path to open:
    # bytes that are not UTF-8 become U+FFFD rather than surrogates no encoder takes.
    return result.stdout.decode("utf-8", "replace").rstrip("\n") or None


DEFAULT_BRANCHES = ("main", "master", "trunk", "develop")


@datarecord
class BranchWork:
    """The work on the checked-out branch, as git tells it.

    Attributes:
        branch: the branch's short name (None: detached HEAD).
        base: the default branch it was compared with (None: this is a
            default branch, or none exists).
        ahead: commits on `branch` not on `base`.
        files: files changed by those commits and in the work tree
            (uncommitted, untracked too), relative to `root`, that exist now.
    """

    branch: str | None = None
    base: str | None = None
    ahead: int = 0
    files: list[str] = field(default_factory=list)


def branch_work(root: Path) -> BranchWork:
    """What the current branch changed since it left the default branch, plus
    uncommitted changes (paths relative to `root`). A handful of git processes."""
    branch = current_branch(root)
    work = BranchWork(branch=branch)
    files: dict[str, None] = {}
    if branch and branch not in DEFAULT_BRANCHES and head(root):
        for base in DEFAULT_BRANCHES:
            found = run_git(root, "merge-base", "HEAD", base, check=False)
            if found.returncode == 0 and _line(found):
                work.base = base
                fork = _line(found)
                count = run_git(root, "rev-list", "--count", f"{fork}..HEAD", check=False)
                work.ahead = int(_line(count) or 0) if count.returncode == 0 else 0
                diff = run_git(
                    root, "diff", "--name-only", "-z", "--relative", fork, "HEAD", "--", check=False
                )
                files.update(dict.fromkeys(_path(p) for p in diff.stdout.split(b"\0") if p))
                break
    if head(root):
        files.update(dict.fromkeys(worktree_changes(root).changed))
    work.files = [p for p in files if (Path(root) / p).is_file()]
    return work


def is_ancestor(root: Path, a: str, b: str) -> bool:
    """True if commit `a` is `b` or an ancestor of it; False if either is unknown."""
    result = run_git(root, "merge-base", "--is-ancestor", a, b, check=False)
    return result.returncode == 0


def is_partial_clone(root: Path) -> bool:
    """True in a partial clone (`git clone --filter=...`): objects it lacks are
    fetched from a remote when a command needs them. One git process."""
    result = run_git(
        root, "config", "--get-regexp", r"^(remote\..*\.promisor|extensions\.partialclone)$", check=False
    )
    for line in _line(result).splitlines():
        key, _, value = line.partition(" ")
        if key == "extensions.partialclone" or value.lower() in ("true", "yes", "on", "1"):
            return True
    return False


def project_scope(root: Path) -> list[str]:
    """The pathspec that limits history to a project in a subfolder of its repository.

    A project at the top of its work tree sees every commit (``[]``); one in
    a subfolder sees only the commits touching it (``["."]``), and git's
    `--relative` then gives paths relative to that folder.
    """
    top = repo_root(root)
    return ["."] if top is not None and top != Path(root).resolve() else []


def commits(root: Path, *, limit: int = 1000, since: str | None = None) -> list[Commit]:
    """Commits reachable from HEAD, newest first, merges included.

    Args:
        root: the work tree root.
        limit: at most this many commits.
        since: a commit already indexed. When it is an ancestor of HEAD, only
            the commits after it are returned (HEAD's side of `since..HEAD`).
            When it is not (history rewritten by amend or rebase, or an unknown
            sha), the newest `limit` commits are returned and the caller
            re-syncs; check with :func:`is_ancestor` to tell the cases apart.

    Returns an empty list on an unborn branch. Runs at most two git processes.
    See :func:`lore.index.githistory.walk_history` for all of history with
    change statuses and paths mapped to HEAD.
    """
    if limit <= 0:
        return []
    revisions = ["HEAD"]
    if since and is_ancestor(root, since, "HEAD"):
        revisions.append(f"^{since}")
    return _log_commits(
        root,
        "--relative",
        f"--max-count={limit}",
        *revisions,
        "--",
        *project_scope(root),
    )


def commit_times(root: Path) -> dict[str, int]:
    """{sha: committer time, epoch seconds} of every commit reachable from HEAD
    (one git process, no diffs: ~1 s per 100,000 commits)."""
    out = run_git(root, "log", "--format=%H %ct", "HEAD", check=False)
    times = {}
    for line in _text(out.stdout).splitlines():
        sha, _, when = line.partition(" ")
        if when.isdigit():
            times[sha] = int(when)
    return times


def commits_mentioning(root: Path, text: str) -> list[Commit]:
    """Commits reachable from HEAD whose message contains `text`, newest first.

    `text` is matched as a fixed string, case-insensitively, anywhere in the
    subject or body (callers that want whole words filter the result). Paths
    are relative to the repository root; a merge lists the files it changed
    relative to its first parent. Returns an empty list on an unborn branch
    or for empty `text`. One git process.
    """
    if not text or head(root) is None:
        return []
    return _log_commits(root, "--regexp-ignore-case", "--fixed-strings", f"--grep={text}", "HEAD", "--")


def _log_commits(root: Path, *args: str) -> list[Commit]:
    """`git log` with Lore's commit format and `args` (revisions, limits, pathspec)."""
    result = run_git(
        root,
        "log",
        "-z",
        "--name-only",
        "--diff-merges=first-parent",
        "--find-renames",
        "--encoding=UTF-8",
        "--no-show-signature",
        DATE_FORMAT,
        f"--format={_LOG_FORMAT}",
        *args,
        check=False,
    )
    if result.returncode != 0:
        if head(root) is None:
            return []
        raise GitError(f"`git log` failed in {root}: {_text(result.stderr).strip()}")
    found = []
    for fields, files in _records(iter(result.stdout.split(b"\0")), len(_LOG_FIELDS)):
        sha, parents, author, email, date, subject, body = (_text(f) for f in fields)
        found.append(
            Commit(
                sha=sha,
                parents=tuple(parents.split()),
                author=author,
                email=email,
                date=date,
                subject=subject,
                body=body.rstrip(),
                files=tuple(_path(f) for f in files),
            )
        )
    return found


# Options of the patches handed to callers that parse them (task completion):
# no context lines, so each hunk header says exactly which lines changed, and
# nothing that depends on the user's configuration (colour, external diff
# drivers, textconv filters, mnemonic or missing a/ b/ prefixes).
_PATCH_OPTIONS = (
    "-p",
    "-U0",
    "--inter-hunk-context=0",
    "--find-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


def commit_patches(root: Path, shas: list[str]) -> str:
    """The patches of `shas`, in the order given, as one text.

    Each commit is compared with its first parent (a root commit with the
    empty tree). Patch format: `diff --git a/X b/Y` headers, renames
    detected, zero context lines (`-U0`), so every hunk header says exactly
    which lines changed; binary files as "Binary files ... differ". Between
    commits a line starting with NUL and the sha separates them. Bytes that
    are not UTF-8 survive as surrogate escapes. One git process.
    """
    if not shas:
        return ""
    result = run_git(
        root,
        "log",
        "--no-walk=unsorted",
        "--root",
        "--diff-merges=first-parent",
        "--no-show-signature",
        *_PATCH_OPTIONS,
        "--format=%x00%H",
        *shas,
        "--",
    )
    return result.stdout.decode("utf-8", "surrogateescape")


def worktree_patch(root: Path) -> str:
    """The patch of uncommitted changes to tracked files (staged and unstaged)
    against HEAD (the empty tree on an unborn branch), in the format of
    :func:`commit_patches`. Untracked files are not in it: see
    :func:`untracked_files`."""
    base = "HEAD" if head(root) else _empty_tree(root)
    result = run_git(root, "diff", *_PATCH_OPTIONS, base, "--")
    return result.stdout.decode("utf-8", "surrogateescape")


def _empty_tree(root: Path) -> str:
    """The empty tree's name in this repository (:data:`EMPTY_TREE` where objects
    are named by SHA-1; another one with SHA-256). One git process."""
    return _line(run_git(root, "hash-object", "-t", "tree", "--stdin"))  # stdin is empty


def untracked_files(root: Path) -> list[str]:
    """Untracked files that are not ignored, relative to `root`."""
    result = run_git(root, "ls-files", "-z", "--others", "--exclude-standard")
    return [_path(raw) for raw in result.stdout.split(b"\0") if raw]


def _records(tokens: Iterator[bytes], width: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """Split `git log -z --name-only` output (NUL-separated tokens) into records.

    Each record is an empty token, `width` fields, then optionally the first
    path prefixed by "\\n" and further paths, up to the next empty token.
    """
    pending: bytes | None = None
    while True:
        token = pending if pending is not None else next(tokens, None)
        pending = None
        if token is None:
            return
        if token != b"":
            continue  # not a record start; cannot happen with our format
        fields = []
        for _ in range(width):
            value = next(tokens, None)
            if value is None:
                return
            fields.append(value)
        files: list[bytes] = []
        token = next(tokens, None)
        if token is not None and token.startswith(b"\n"):
            files.append(token[1:])
            token = next(tokens, None)
            while token:  # stops at b"" (next record) or None (end)
                files.append(token)
                token = next(tokens, None)
        yield fields, files
        if token is None:
            return
        pending = token


def diff_files(root: Path, old: str | None, new: str) -> FileChanges:
    """Paths that differ between commits `old` and `new` (renames detected).

    Args:
        old: the earlier commit, or None for the empty tree (every file of
            `new` is then "changed").
        new: the later commit.
    """
    if old is None:
        result = run_git(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", new)
        return FileChanges(changed=[_path(p) for p in result.stdout.split(b"\0") if p])
    result = run_git(
        root,
        "diff-tree",
        "-r",
        "-z",
        "--no-commit-id",
        "--name-status",
        "--find-renames",
        old,
        new,
        check=False,
    )
    if result.returncode != 0:
        raise GitError(
            f"cannot compare {old[:12]} with {new[:12]} in {root} "
            f"({_text(result.stderr).strip()}); if history was rewritten or "
            "garbage-collected, re-index from scratch"
        )
    changes = FileChanges()
    tokens = iter(result.stdout.split(b"\0"))
    for status in tokens:
        if not status:
            continue
        kind = status[:1]
        if kind in (b"R", b"C"):
            source, target = _path(next(tokens)), _path(next(tokens))
            changes.changed.append(target)
            if kind == b"R":
                changes.deleted.append(source)
                changes.renamed.append((source, target))
        elif kind == b"D":
            changes.deleted.append(_path(next(tokens)))
        else:  # A, M, T (type change), U
            changes.changed.append(_path(next(tokens)))
    return changes


def worktree_changes(root: Path) -> FileChanges:
    """Uncommitted changes against HEAD: staged, unstaged and untracked files.

    Ignored files and submodules are left out. A path counts as `changed` if
    it exists in the work tree now and `deleted` if it does not; renames staged
    with `git mv` are also reported in `renamed`. Directories (nested
    repositories) are skipped: the result lists files.
    """
    result = run_git(
        root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=all"
    )
    root = Path(root)
    changes = FileChanges()
    seen: set[str] = set()

    def add(path: str) -> None:
        if path in seen or path.endswith("/"):
            return
        seen.add(path)
        full = root / path
        if full.is_symlink() or full.is_file():
            changes.changed.append(path)
        elif not full.exists():
            changes.deleted.append(path)

    tokens = iter(result.stdout.split(b"\0"))
    for entry in tokens:
        if len(entry) < 4:
            continue
        status, path = entry[:2], _path(entry[3:])
        if b"R" in status or b"C" in status:
            source = _path(next(tokens, b""))
            add(path)
            if b"R" in status:
                add(source)
                if path in changes.changed and source in changes.deleted:
                    changes.renamed.append((source, path))
        else:
            add(path)
    return changes


def last_changed(
    root: Path, paths: Iterable[str] | None = None, *, max_commits: int = 5000
) -> dict[str, int]:
    """When each path last changed: path -> unix time of the newest commit touching it.

    One `git log` pass over at most `max_commits` non-merge commits, newest
    first (committer time). With `paths`, only those are reported and reading
    stops as soon as all are found; a short list is also handed to git as a
    pathspec, so only commits touching those paths are read (and count towards
    `max_commits`). A path not touched within the window is absent. Without
    `paths`, every path seen is reported, including since-deleted ones.
    """
    wanted = None if paths is None else set(paths)
    if wanted is not None and not wanted:
        return {}
    args = [
        "log",
        "-z",
        "--name-only",
        "--no-merges",
        "--no-renames",
        "--relative",
        "--format=%x00%ct",
        f"--max-count={max_commits}",
        "HEAD",
        "--",
    ]
    extra_env = None
    if wanted is not None and len(wanted) <= _MAX_PATHSPEC:
        args += sorted(wanted)  # lets git skip commits that touch none of them
        extra_env = {"GIT_LITERAL_PATHSPECS": "1"}
    times: dict[str, int] = {}
    with git_tokens(root, args, env=extra_env) as tokens:
        for fields, files in _records(tokens, 1):
            when = int(fields[0] or 0)
            for raw in files:
                path = _path(raw)
                if wanted is not None and path not in wanted:
                    continue
                if when > times.get(path, -1):
                    times[path] = when
            if wanted is not None and len(times) == len(wanted):
                break
    return times


@contextmanager
def git_tokens(
    root: Path, args: list[str], *, env: dict[str, str] | None = None, check: bool = False
) -> Iterator[Iterator[bytes]]:
    """Run git with NUL-separated (`-z`) output and stream its tokens as they arrive.

    The caller may stop reading at any time: leaving the block ends git.
    Nothing is held in memory beyond one read buffer.

    Args:
        args: git's arguments (after ``git -C root -c core.quotepath=false``).
        env: extra environment variables.
        check: raise GitError when git, read to its end, exits non-zero
            (its stderr is kept in a temporary file, so it can never block).

    Raises:
        GitError: git is not installed; with `check`, git failed.
    """
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(
                git_command(root, args),
                stdout=subprocess.PIPE,
                stderr=errors if check else subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                env=git_env(env),
            )
        except FileNotFoundError:
            raise GitMissing(_MISSING) from None
        stdout = process.stdout
        assert stdout is not None
        read_to_end = False

        def tokens() -> Iterator[bytes]:
            nonlocal read_to_end
            yield from _stream_tokens(stdout)
            read_to_end = True

        try:
            yield tokens()
        finally:
            stdout.close()
            if not read_to_end and process.poll() is None:
                process.kill()  # the caller stopped early: don't let git finish the walk
            status = process.wait()
        if check and read_to_end and status != 0:
            errors.seek(0)
            message = _text(errors.read()).strip() or f"exit status {status}"
            raise GitError(f"`git {' '.join(args[:2])}` failed in {root}: {message}")


def _stream_tokens(stream: IO[bytes], size: int = 1 << 16) -> Iterator[bytes]:
    """NUL-separated tokens read incrementally, so the caller can stop early."""
    rest = b""
    while True:
        chunk = stream.read1(size) if hasattr(stream, "read1") else stream.read(size)
        if not chunk:
            break
        parts = (rest + chunk).split(b"\0")
        rest = parts.pop()
        yield from parts
    yield rest


def git_dir(root: Path) -> Path:
    """The absolute git directory of the work tree (`.git/worktrees/<name>` in a linked worktree)."""
    return Path(_line(run_git(root, "rev-parse", "--absolute-git-dir")))


def hooks_dir(root: Path) -> Path:
    """Where git looks for hooks: core.hooksPath if set, else the common `.git/hooks`.

    A relative core.hooksPath is relative to the work tree root, as git runs
    hooks from there. Linked worktrees share the main repository's hooks.
    """
    path = Path(_line(run_git(root, "rev-parse", "--git-path", "hooks")))
    if not path.is_absolute():
        path = Path(root) / path
    return Path(os.path.normpath(path))


def exclude_locally(root: Path, lore_dir: Path, names: tuple[str, ...]) -> None:
    """Name `names` (of `lore_dir`) in the repository's `info/exclude`, once:
    never committed, never switched with a branch."""
    try:
        found = run_git(root, "rev-parse", "--show-toplevel", "--git-path", "info/exclude", check=False)
    except GitError:
        return
    lines = os.fsdecode(found.stdout).splitlines()
    if found.returncode != 0 or len(lines) != 2:
        return  # not a git work tree
    top, exclude = Path(lines[0]), Path(lines[1])
    if not exclude.is_absolute():
        exclude = root / exclude
    try:
        prefix = lore_dir.resolve().relative_to(top.resolve()).as_posix()
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        wanted = [f"/{prefix}/{name}" for name in names]
        missing = [line for line in wanted if line not in text.splitlines()]
        if missing:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with open(exclude, "a", encoding="utf-8") as handle:
                head = "" if not text or text.endswith("\n") else "\n"
                handle.write(head + "# Lore: the index and private memories\n" + "\n".join(missing) + "\n")
    except (OSError, ValueError):
        pass
