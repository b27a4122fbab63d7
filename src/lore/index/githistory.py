"""All of a repository's history, each changed path mapped to its name at HEAD.

:func:`walk_history` streams every commit reachable from HEAD, newest first
(children always before their parents), with the files each one changed and
their status, read with git's own rename detection (``-M``). While it walks,
a :class:`HeadPathMap` follows renames backwards, so every path a commit
names is also given as the path of the same file at HEAD, or None when that
file no longer exists. Evidence from a commit about a file that was renamed
since (flask moved ``flask/app.py`` to ``src/flask/app.py``) then counts for
the file as it is named today, and evidence about deleted files stays on the
commit without being offered as a file to open.

Cost: one `git ls-tree` (HEAD's files), one streamed `git log`, and, only
when history has merges, one long-running `git diff-tree --stdin` asked for
each merge's diff against its other parents. Nothing is held in memory but
the path map (one entry per path ever renamed or deleted) and HEAD's file
list: about 20 MB of Python for 28,687 commits of ipython. Git's rename
detection is most of the time; ``bench/history_scale.py`` measures it.

How paths are followed
----------------------
The walk keeps a map "path as named at this point of history -> path at
HEAD (or None)". A path the map has no entry for resolves to itself when it
exists at HEAD, else to None. A commit's paths resolve through the map as it
stands after all newer commits; then the walk steps back through the commit:

- a rename ``old -> new`` makes ``old`` resolve to whatever ``new``
  resolves to (renamed twice: followed twice; renamed, then the new name
  deleted: None);
- a delete of ``p`` makes older mentions of ``p`` resolve to None: they
  were a file that ended here. A path deleted and created again later is a
  different file, with one exception: when the later creation has exactly
  the deleted content (a reverted delete, a file moved out and back), it is
  the same file and older mentions follow it;
- an add changes nothing: if the path existed earlier, a delete or a rename
  away from it sits between, and that step sets its fate;
- a copy (only reported if the user's git config turns copy detection on)
  is an add of its target; the source is untouched;
- a directory move: git pairs files by content, so a file that was moved
  *and* heavily edited in the same commit shows up as a delete plus an add.
  When other files of the commit were renamed with the same directory
  change (``flask/`` -> ``src/flask/``) and the added path is exactly the
  deleted one under the new directory, the pair is taken as a rename and
  reported with status ``R``.

Branches and merges. History is a graph, not a line, and one map is shared
by all branches, so two rules keep one branch's steps from leaking into
commits of another:

- a merge lists (and the map steps back through) its diff against its
  *first parent*: the net change the merged branch made to the main line,
  renames and deletes included. So a commit on a side branch is only deleted
  from the map's point of view if the merge kept it deleted; a branch that
  deleted and re-created a file (net: modified) leaves older mentions alone.
  Hence deletes by ordinary commits are applied only on HEAD's first-parent
  chain; off that chain they reach the map through their merge. Renames are
  applied wherever they happen (they are positive evidence of identity).
- a merge's diff against its *other* parents holds the main line's renames
  as the merged branch saw them. A maintenance branch that kept editing
  ``CHANGES`` after the main line renamed it ``CHANGES.rst`` has commits
  newer than that rename, walked before it; the merge's second-parent diff
  (``CHANGES -> CHANGES.rst``) resolves them. These renames only fill in
  paths that would otherwise resolve to None.

Checked on pallets/flask (3,657 commits, 931 merges) against an exact
per-branch computation (a separate map for every line of descent, from each
merge's diffs against all its parents; much more expensive): of 10,662
changed paths, 3 resolve to None where the exact one finds a file, and 94
resolve to a file where it finds none, all pairs made by the directory-move
rule (``examples/flaskr/`` became ``examples/tutorial/`` in a rewrite).
Without the two rules above, 145 paths resolve to None wrongly.

Merge commits carry their first-parent diff as their files, flagged by
`is_merge`: it is what the merge changed on the main line, it is needed
anyway to map paths, and for pull-request workflows the merge message holds
the PR's title while its diff holds the PR's files. Its files are also the
files of the merged commits (walked too), so a caller that sums file
evidence over commits should count a merge's files only when its message
says more than "Merge branch 'x'", or discount them by `n_files` like any
large commit.

In a partial clone (``git clone --filter=blob:none``) only renames that keep
the content are followed: finding the others compares old file versions,
which such a clone lacks and would fetch from its remote one by one.

Incremental sync: ``walk_history(root, since=last_indexed_head)`` walks only
the commits not reachable from it; afterwards :meth:`HistoryWalk.moved`
gives, for paths as named at `since`, their new HEAD path (or None), so
stored head paths are remapped with ``moved.get(p, p)``. On linear history
this equals a full walk; across merges it may differ from one in rare cases.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from lore.errors import GitError
from lore.index import gitrepo
from lore.index.gitrepo import Commit
from lore.records import Record

__all__ = ["FileChange", "HeadPathMap", "HistoryCommit", "HistoryWalk", "walk_history"]

# Fields of one commit record; see `_read_log` for the layout.
# %ad, %cd: author and committer dates (gitrepo.DATE_FORMAT)
_FIELDS = ("%H", "%P", "%an", "%ae", "%ad", "%cd", "%s", "%b")
_FORMAT = "%x00" + "%x00".join(_FIELDS)

# Raw diff options shared by the log and the merge diffs: full blob names
# (no abbreviation lookups) so a deleted blob can be compared with a later
# added one; renames found by content, as git does by default (`_renames`).
_DIFF_OPTIONS = ("-r", "-z", "--raw", "--no-abbrev")


def _renames(exact: bool) -> str:
    """Rename detection: by content similarity, or (`exact`) only where the
    content is unchanged, which compares object names and reads no file. A
    partial clone lacks old file versions and would fetch each one compared
    from its remote (or fail offline)."""
    return "-M100%" if exact else "-M"


# Echoed back by `git diff-tree --stdin` (a line that is not an object name
# is copied to its output and flushed): marks the end of one merge's diff.
_END = b"lore-end-of-diff\n"

# At most this many distinct directory changes per commit are tried when
# pairing deletes with adds (see `_pair_directory_moves`).
_MAX_DIRECTORY_MOVES = 16


@dataclass(frozen=True)
class HistoryCommit(Commit, Record):
    """A commit with its changes and where each changed file is now.

    All tuples below are parallel to `files` (inherited from
    :class:`~lore.index.gitrepo.Commit`: the path after the change; the
    deleted path for a delete), so ``zip(c.files, c.status, c.head_paths)``
    reads one change at a time.

    For a project in a subfolder, `parents` are the nearest ancestors that
    touch the folder (git's parent rewriting), not necessarily the real ones.

    Attributes:
        status: one letter per file: ``A`` added, ``M`` modified, ``D``
            deleted, ``R`` renamed (from `old_paths`), ``T`` type changed
            (file <-> symlink), ``C`` copied (only with copy detection on).
        committed: the committer date (when the commit landed; ``date`` is
            the author's), ISO 8601 like it.
        old_paths: the path before the change for ``R`` and ``C``, else None.
        head_paths: the same file's path at HEAD (the walk's HEAD), or None
            when it no longer exists there (always None for ``D``).
        n_files: how many files the commit changed (for a merge: against its
            first parent), so callers can discount huge commits (mass
            reformatting, vendoring, a long-lived branch merged).
    """

    status: tuple[str, ...] = ()
    committed: str = ""
    old_paths: tuple[str | None, ...] = ()
    head_paths: tuple[str | None, ...] = ()
    n_files: int = 0

    @property
    def head_files(self) -> tuple[str, ...]:
        """The distinct files of this commit that exist at HEAD, by their HEAD path."""
        return tuple(dict.fromkeys(p for p in self.head_paths if p is not None))


class FileChange(NamedTuple):
    """One file changed by a commit, as git's raw diff gives it.

    Attributes:
        status: one letter, as in :attr:`HistoryCommit.status`.
        path: the path after the change (the deleted path for ``D``).
        old_path: the path before, for ``R`` and ``C``; else None.
        old_blob, new_blob: the object names of the content before and after
            (all zeros for none), to tell a restored file from a new one.
    """

    status: str
    path: str
    old_path: str | None
    old_blob: bytes
    new_blob: bytes


class HeadPathMap:
    """Paths as named at some point of history -> the same file's path at HEAD.

    Start at HEAD (`head_files`) and call :meth:`step_back` for each commit,
    newest first; in between, :meth:`resolve` answers for the point reached.
    The rules are in the module docstring.
    """

    def __init__(self, head_files: Iterable[str]):
        self._head = set(head_files)
        self._map: dict[str, str | None] = {}
        # path -> blob it was (re)created with, while that file exists at HEAD
        self._created: dict[str, bytes] = {}

    def resolve(self, path: str) -> str | None:
        """Where the file named `path` at the point reached is at HEAD (None: gone)."""
        if path in self._map:
            return self._map[path]
        return path if path in self._head else None

    def step_back(self, changes: Iterable[FileChange], *, deletes: bool = True) -> None:
        """Move from after a commit to before it.

        Args:
            changes: the commit's changes.
            deletes: apply its deletes (False for a commit off HEAD's
                first-parent chain, whose deletes reach the map through its
                merge).
        """
        updates: dict[str, str | None] = {}
        for change in changes:
            if change.status == "D":
                created = self._created.pop(change.path, None)
                if deletes and created != change.old_blob:
                    updates[change.path] = None
            elif change.status == "R" and change.old_path is not None:
                updates[change.old_path] = self.resolve(change.path)
            elif change.status in ("A", "C") and self.resolve(change.path) is not None:
                self._created[change.path] = change.new_blob
        self._map.update(updates)

    def adopt_renames(self, renames: Iterable[tuple[str, str | None]]) -> None:
        """Let `old` resolve to `target` for each pair, where `old` resolves to nothing yet.

        For a merge's renames against its other parents (module docstring):
        the targets are resolved by the caller before stepping back through
        the merge.
        """
        for old, target in renames:
            if target is not None and self.resolve(old) is None:
                self._map[old] = target

    def moved(self) -> dict[str, str | None]:
        """Every path whose HEAD path differs from its own name, and that HEAD path.

        Paths absent resolve to themselves (if they exist at HEAD) or None.
        """
        return {path: target for path, target in self._map.items() if target != path}


class HistoryWalk(Iterator[HistoryCommit]):
    """Commits reachable from HEAD, newest first, as :class:`HistoryCommit`.

    Created by :func:`walk_history`. Iterate it (once); stopping early is
    fine, and ``with`` (or :meth:`close`) ends the git processes at once.

    Attributes:
        root: the project folder walked.
        head: the HEAD sha walked from (None on an unborn branch).
        since: the base commit when the walk is incremental, else None.
        incremental: True when only the commits not reachable from `since`
            are walked; False for a full walk (no `since`, or `since` is not
            an ancestor of HEAD: history was rewritten, the branch switched,
            or the sha is unknown; the caller should then re-index history).
    """

    def __init__(
        self, root: Path, *, since: str | None = None, cap: int | None = None, merge_renames: bool = True
    ):
        self.root = Path(root)
        self._merge_renames = merge_renames
        self.head = gitrepo.head_if_git(self.root)
        self.incremental = bool(self.head and since and gitrepo.is_ancestor(self.root, since, self.head))
        self.since = since if self.incremental else None
        self._scope = gitrepo.project_scope(self.root) if self.head else []
        self._exact_renames = bool(self.head) and gitrepo.is_partial_clone(self.root)
        self._paths = HeadPathMap(self._head_files() if self.head else ())
        self._next_on_chain = self.head  # next commit of HEAD's first-parent chain
        self._merges: _MergeDiffs | None = None
        self._commits = self._walk(cap)

    def __next__(self) -> HistoryCommit:
        return next(self._commits)

    def close(self) -> None:
        """Stop walking and end the git processes."""
        self._commits.close()
        if self._merges is not None:
            self._merges.close()
            self._merges = None

    def __enter__(self) -> HistoryWalk:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def head_path(self, path: str) -> str | None:
        """Where `path`, as named at the point the walk has reached, is at HEAD.

        After a complete incremental walk, that point is `since`: this maps a
        stored head path to its new one.
        """
        return self._paths.resolve(path)

    def moved(self) -> dict[str, str | None]:
        """After the walk: paths as named at the point reached whose HEAD path changed.

        For an incremental walk, the paths at `since` that new commits
        renamed (-> new path) or deleted (-> None); apply it to stored head
        paths with ``moved.get(p, p)`` (a path not in it is unchanged). May
        also name paths that did not exist at `since`; no stored head path
        names them.
        """
        return self._paths.moved()

    # -- internals ------------------------------------------------------------

    def _head_files(self) -> list[str]:
        # ls-tree lists paths relative to the folder it runs in, and only
        # those under it: right for a project in a subfolder too.
        result = gitrepo.run_git(self.root, "ls-tree", "-r", "-z", "--name-only", "HEAD")
        return [os.fsdecode(p) for p in result.stdout.split(b"\0") if p]

    def _walk(self, cap: int | None) -> Generator[HistoryCommit, None, None]:
        if self.head is None or (cap is not None and cap <= 0):
            return
        revisions = [self.head] + ([f"^{self.since}"] if self.since else [])
        args = [
            "log",
            "--date-order",
            "--diff-merges=first-parent",
            "--relative",
            # With a pathspec (a project in a subfolder) commits that do not
            # touch it are skipped; --parents then names the nearest shown
            # ancestors as parents, so HEAD's first-parent chain stays known,
            # and --simplify-merges drops merges that brought nothing into it
            # (without it, parent rewriting plus merge diffs shows every commit).
            "--parents",
            *(["--simplify-merges"] if self._scope else []),
            *_DIFF_OPTIONS,
            _renames(self._exact_renames),
            "--encoding=UTF-8",
            "--no-show-signature",
            gitrepo.DATE_FORMAT,
            f"--format={_FORMAT}",
            *([f"--max-count={cap}"] if cap is not None else []),
            *revisions,
            "--",
            *self._scope,
        ]
        try:
            with gitrepo.git_tokens(self.root, args, check=True) as tokens:
                for fields, changes in _read_log(tokens):
                    yield self._step(fields, changes)
        finally:
            if self._merges is not None:
                self._merges.close()
                self._merges = None

    def _step(self, fields: list[bytes], changes: list[FileChange]) -> HistoryCommit:
        sha, parents_text, author, email, date, committed, subject, body = (
            value.decode("utf-8", "replace") for value in fields
        )
        parents = tuple(parents_text.split())
        on_chain = sha == self._next_on_chain
        if on_chain:
            self._next_on_chain = parents[0] if parents else None
        changes = _pair_directory_moves(changes)
        paths = self._paths
        head_paths = tuple(None if c.status == "D" else paths.resolve(c.path) for c in changes)
        side_renames: list[tuple[str, str | None]] = []
        if len(parents) > 1 and self._merge_renames:
            for parent in parents[1:]:
                for change in _pair_directory_moves(self._merge_diffs().diff(sha, parent)):
                    if change.status == "R" and change.old_path is not None:
                        side_renames.append((change.old_path, paths.resolve(change.path)))
        paths.step_back(changes, deletes=on_chain or len(parents) > 1)
        paths.adopt_renames(side_renames)
        return HistoryCommit(
            sha=sha,
            parents=parents,
            author=author,
            email=email,
            date=date,
            committed=committed,
            subject=subject,
            body=body.rstrip(),
            files=tuple(c.path for c in changes),
            status=tuple(c.status for c in changes),
            old_paths=tuple(c.old_path for c in changes),
            head_paths=head_paths,
            n_files=len(changes),
        )

    def _merge_diffs(self) -> _MergeDiffs:
        if self._merges is None:
            self._merges = _MergeDiffs(self.root, self._scope, exact_renames=self._exact_renames)
        return self._merges


def walk_history(
    root: Path, *, since: str | None = None, cap: int | None = None, merge_renames: bool = True
) -> HistoryWalk:
    """Every commit reachable from HEAD, newest first, paths mapped to HEAD.

    Args:
        root: the project folder: a work tree's root, or a subfolder of one
            (then only commits touching it are walked, with paths relative
            to it, like :func:`lore.index.gitrepo.commits`).
        since: the HEAD of the last walk. When it is an ancestor of HEAD only
            the commits not reachable from it are walked (``walk.incremental``);
            otherwise (rewritten history, branch switch, unknown sha) all.
        cap: walk at most this many (newest) commits; None for all. For very
            large monorepos.
        merge_renames: also read each merge's renames against its other
            parents (module docstring). It resolves commits of long-lived
            branches that predate a rename on the main line (flask's 0.12
            maintenance commits to ``flask/json.py``, now
            ``src/flask/json/__init__.py``), at the price of a second git
            process that about doubles git's work on merge-heavy histories;
            False skips it (those paths then resolve to None).

    Returns a :class:`HistoryWalk`: iterate it for :class:`HistoryCommit`
    records; afterwards ``walk.moved()`` gives the renames and deletes the
    walked commits made to paths as they were named at `since`.

    Raises:
        GitError: git is missing or fails (an unborn branch or a folder that
            is not in a git work tree is an empty walk, not an error).

    Example::

        with walk_history(root, since=last_head) as walk:
            for commit in walk:
                store(commit.sha, commit.files, commit.head_paths)
            if walk.incremental:
                remap_stored_paths(walk.moved())
            last_head = walk.head
    """
    return HistoryWalk(root, since=since, cap=cap, merge_renames=merge_renames)


# -- reading git's output ----------------------------------------------------


def _read_log(tokens: Iterator[bytes]) -> Iterator[tuple[list[bytes], list[FileChange]]]:
    """Records of `git log -z --raw --format=<_FORMAT>` output.

    A record is an empty token (the format starts with NUL), the fields (the
    message body last), then, if the commit changed files, raw entries: the
    first prefixed by "\\n". An entry is ``:mode mode blob blob status`` then
    one path (two for R and C). Paths are read by position, so a path that
    looks like anything else is still a path.
    """
    pending: bytes | None = None
    while True:
        token = pending if pending is not None else next(tokens, None)
        pending = None
        if token is None:
            return
        if token != b"":
            continue  # not a record start; cannot happen with our format
        fields = [next(tokens, None) for _ in _FIELDS]
        if fields[-1] is None:
            return  # the empty token after the last record
        changes: list[FileChange] = []
        token = next(tokens, None)
        if token is not None and token.startswith(b"\n:"):
            token = token[1:]
            while token is not None and token.startswith(b":"):
                changes.append(_read_change(token, tokens))
                token = next(tokens, None)
        yield [f or b"" for f in fields], changes
        if token is None:
            return
        pending = token


def _read_change(entry: bytes, tokens: Iterator[bytes]) -> FileChange:
    """One raw entry (``:100644 100644 <old> <new> R087``) and its path(s)."""
    _, _, old_blob, new_blob, status_code = entry[1:].split(b" ", 4)
    status = chr(status_code[0]) if status_code else "M"
    path = os.fsdecode(next(tokens, b""))
    if status in ("R", "C"):
        return FileChange(status, os.fsdecode(next(tokens, b"")), path, old_blob, new_blob)
    if status not in ("A", "D", "T"):
        status = "M"  # M, and U/X which log never shows
    return FileChange(status, path, None, old_blob, new_blob)


def _pair_directory_moves(changes: list[FileChange]) -> list[FileChange]:
    """Deletes and adds of one commit that are files of a moved directory, as renames.

    Git pairs a delete with an add only when the contents are at least half
    alike, so a file moved *and* heavily edited in the commit that moved its
    directory is reported as a delete plus an add. When the commit's other
    renames show the directory change (``flask/app.py -> src/flask/app.py``:
    ``"" -> "src/"``) and the added path is the deleted one with that change,
    the pair becomes one rename.
    """
    if not any(c.status == "R" for c in changes):
        return changes
    added = {c.path: c for c in changes if c.status == "A"}
    if not added or not any(c.status == "D" for c in changes):
        return changes
    moves = Counter(
        move
        for c in changes
        if c.status == "R" and c.old_path is not None
        for move in [_directory_move(c.old_path, c.path)]
        if move is not None
    )
    candidates = [move for move, _ in moves.most_common(_MAX_DIRECTORY_MOVES)]
    paired: dict[str, FileChange] = {}  # deleted path -> the add it pairs with
    for change in changes:
        if change.status != "D":
            continue
        for old_prefix, new_prefix in candidates:
            if change.path.startswith(old_prefix):
                target = added.get(new_prefix + change.path[len(old_prefix) :])
                if target is not None and target.path not in paired:
                    paired[change.path] = target
                    paired[target.path] = target  # marks the add as used
                    break
    if not paired:
        return changes
    result = []
    for change in changes:
        target = paired.get(change.path)
        if change.status == "D" and target is not None:
            result.append(FileChange("R", target.path, change.path, change.old_blob, target.new_blob))
        elif change.status != "A" or change.path not in paired:
            result.append(change)
    return result


def _directory_move(old: str, new: str) -> tuple[str, str] | None:
    """The directory change of a rename that keeps the file name:
    ``a/b/x.py -> c/b/x.py`` gives ``("a/", "c/")``; None if the name changed."""
    old_parts, new_parts = old.split("/"), new.split("/")
    common = 0
    while common < min(len(old_parts), len(new_parts)) and old_parts[-1 - common] == new_parts[-1 - common]:
        common += 1
    if common == 0 or (common == len(old_parts) and common == len(new_parts)):
        return None
    old_prefix = "/".join(old_parts[: len(old_parts) - common])
    new_prefix = "/".join(new_parts[: len(new_parts) - common])
    return (old_prefix + "/" if old_prefix else "", new_prefix + "/" if new_prefix else "")


class _MergeDiffs:
    """A long-running `git diff-tree --stdin` answering "merge M against parent P".

    One process for all merges of a walk: each request is a line "M P"
    followed by a line that is not an object name, which git echoes and
    flushes, so the answer's end is known without waiting for more.
    """

    def __init__(self, root: Path, scope: list[str], *, exact_renames: bool = False):
        # Only renames are used, and adds/deletes to pair by directory: the
        # modifications (most of a long-lived branch's diff) are left out.
        args = [
            "diff-tree",
            "--stdin",
            "--always",
            "--relative",
            "--diff-filter=ADR",
            *_DIFF_OPTIONS,
            _renames(exact_renames),
            "--",
            *scope,
        ]
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                gitrepo.git_command(root, args),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=gitrepo.git_env(),
            )
        except FileNotFoundError:
            raise GitError("git is not installed (or not on PATH)") from None

    def diff(self, merge: str, parent: str) -> list[FileChange]:
        """`merge`'s changes against `parent` (raw entries, renames detected).

        If git cannot answer (a parent missing from a shallow clone makes it
        exit), this and later merges get no diff: their renames only refine
        the path map, so the walk goes on without them.
        """
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            return []
        try:
            process.stdin.write(f"{merge} {parent}\n".encode() + _END)
            process.stdin.flush()
            data = b""
            while True:
                chunk = os.read(process.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                data += chunk
                if data.endswith(_END):
                    changes = _parse_diff_tree(data[: -len(_END)])
                    if changes is not None:
                        return changes
        except OSError:  # BrokenPipeError: git exited
            pass
        self.close()
        return []

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        if process.poll() is None:
            process.kill()
        process.wait()


def _parse_diff_tree(data: bytes) -> list[FileChange] | None:
    """One answer of `diff-tree --stdin --always -z --raw`: the merge's name,
    then raw entries. None if `data` stops inside an entry (read more)."""
    tokens = data.split(b"\0")
    if tokens[-1] != b"":
        return None  # the end marker was inside a path: not the end yet
    tokens.pop()
    stream = iter(tokens)
    changes = []
    for token in stream:
        if not token.startswith(b":"):
            continue  # the header (the merge's name)
        entry = token
        needed = 2 if entry.rsplit(b" ", 1)[-1][:1] in (b"R", b"C") else 1
        paths = [next(stream, None) for _ in range(needed)]
        if any(p is None for p in paths):
            return None
        changes.append(_read_change(entry, iter(p for p in paths if p is not None)))
    return changes
