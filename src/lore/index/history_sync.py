"""The project's git history as past work: each commit is an episodic work item.

Commits are stored as chunks of kind "commit" (subject, body, changed files),
so they get BM25 and vectors like everything else. Every commit reachable
from HEAD is kept (up to ``[index] history_commits``, for very large
monorepos), each with the paths it changed *and* those files' paths at HEAD
(renames followed, :mod:`lore.index.githistory`), so past work points at
files one can open today. Commit messages are redacted before they are
stored (:func:`lore.secrets.redact`): a token pasted into a message stays in
git, but not in the index, its snippets, or a recall pack.

A sync after new commits walks only those and remaps the stored HEAD paths
through the renames they made; after a rewrite (amend, rebase) or a branch
switch the whole history is walked again, commits no longer reachable are
dropped and commits whose HEAD paths changed are updated.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from lore.filenames import display_path
from lore.index import gitrepo
from lore.index.githistory import HistoryCommit, walk_history
from lore.records import datarecord
from lore.storage import ChunkInput, CommitRecord, FileState, Store

KIND = "commit"
PREFIX = "git:"
MAX_FILES_IN_TEXT = 50
BATCH = 500
# Bumped when what is stored of a commit changes: an index of another format
# walks the whole history again (2: messages redacted; 3: commits dated by
# when they landed, the committer date, for since/until and their order).
FORMAT = "3"


@datarecord
class HistoryResult:
    added: int = 0
    removed: int = 0
    updated: int = 0
    head: str | None = None


def sync_history(root: Path, store: Store, limit: int, *, force: bool = False) -> HistoryResult:
    """Bring the indexed commits up to HEAD: new commits only, unless the
    stored format is older, a shallow clone was deepened, or `force`
    (`lore index --force`), which walks and writes every commit again."""
    head, shallow = gitrepo.head_and_shallow(root)
    result = HistoryResult(head=head)
    last = store.get_meta("history_head")
    if head is None:
        if last:
            with store.transaction():
                result.removed = store.delete_files(store.file_states(KIND))
                store.set_meta("history_head", "")
        return result
    stored_format = store.get_meta("history_format")
    if stored_format == "2" and not force:
        # Format 3 only dates commits by when they landed: set that in place
        # (one `git log`) rather than walking a long history again.
        with store.transaction():
            store.redate_commits(gitrepo.commit_times(root))
            store.set_meta("history_format", FORMAT)
        stored_format = FORMAT
    # Stored by an older Lore, or asked for: rewrite every commit.
    rewrite = force or stored_format != FORMAT
    if rewrite:
        last = ""
    # A shallow clone deepened (`git fetch --deepen`, `--unshallow`) has older
    # commits that HEAD did not move for: walk all of history again.
    if shallow != (store.get_meta("history_shallow") or ""):
        last = ""
    # `[index] history_commits` changed: lowered, the oldest commits go; raised,
    # history is walked again for the older ones (those stored are kept).
    capped = store.get_meta("history_limit") or ""
    if capped.isdigit() and int(capped) < limit:
        last = ""
    if head == last:
        if capped != str(limit):
            with store.transaction():
                store.prune_commits(limit)
                store.set_meta("history_limit", str(limit))
        return result
    known = store.file_states(KIND)
    stored = {c.sha: c.head_files for c in store.commits()} if known and not rewrite else {}
    seen: set[str] = set()
    # Where a shallow clone stops, git compares a commit with nothing: it would
    # be stored as changing every file of the tree (a CI checkout's only commit).
    boundary = set(shallow.split())
    with walk_history(root, since=last or None, cap=limit) as walk:
        batch: list[CommitRecord] = []
        for commit in walk:
            seen.add(PREFIX + commit.sha)
            record = record_of(commit)
            if commit.sha in boundary:  # its changes are unknown: no files, not all of them
                record = dataclasses.replace(record, files=[], head_files=[], n_files=0)
            if PREFIX + commit.sha not in known or stored.get(commit.sha) != record.head_files:
                batch.append(record)
            if len(batch) >= BATCH:
                _store(store, batch, known, result)
        _store(store, batch, known, result)
        with store.transaction():
            if walk.incremental:
                store.remap_commit_paths(_printable_moves(walk.moved()))
            else:
                result.removed = store.delete_files(p for p in known if p not in seen)
            store.prune_commits(limit)
            store.set_meta("history_limit", str(limit))
            store.set_meta("history_head", head)
            store.set_meta("history_format", FORMAT)
            store.set_meta("history_shallow", shallow)
    return result


def _store(
    store: Store, batch: list[CommitRecord], known: dict[str, FileState], result: HistoryResult
) -> None:
    """Write a batch of commits in one transaction (an interrupted sync keeps
    what it wrote; the next one walks again and skips it)."""
    if not batch:
        return
    with store.transaction():
        for record in batch:
            path = PREFIX + record.sha
            if path in known:
                store.delete_files([path])
                result.updated += 1
            else:
                result.added += 1
            file_id = store.put_file(path, KIND, record.sha, 0, 0)
            store.put_commit(file_id, record)
            store.put_chunks(file_id, KIND, [commit_chunk(record)])
    batch.clear()


def record_of(commit: HistoryCommit) -> CommitRecord:
    """The commit as stored: its message, author, email and file names
    redacted (a token pasted as a name or named in a file's name stays out of
    the index). Paths that are not UTF-8 are kept in their printable form
    (``caf\\xe9.py``): no index can store them as git gives them, and the
    commit itself must not be lost for one odd name."""
    from lore.secrets import redact, redact_name

    def path(name: str) -> str:
        return redact_name(display_path(name))[0]

    return CommitRecord(
        sha=commit.sha,
        author=redact_name(commit.author)[0],
        email=redact_name(commit.email)[0],
        date=commit.date,
        committed=commit.committed,
        subject=redact(commit.subject)[0],
        body=redact(commit.body)[0] if commit.body else commit.body,
        files=[path(p) for p in commit.files],
        head_files=[path(p) if p is not None else None for p in commit.head_paths],
        n_files=commit.n_files or len(commit.files),
        is_merge=commit.is_merge,
    )


def _printable_moves(moved: dict[str, str | None]) -> dict[str, str | None]:
    """Renames in the form stored head paths are kept in (see :func:`record_of`)."""
    return {display_path(old): display_path(new) if new is not None else None for old, new in moved.items()}


def commit_chunk(commit: CommitRecord) -> ChunkInput:
    """A commit's searchable text: its message, then the files it changed."""
    files = "\n".join(commit.files[:MAX_FILES_IN_TEXT])
    text = f"{commit.subject}\n\n{commit.body}".strip() + (f"\n\nFiles:\n{files}" if files else "")
    names = {*commit.files[:MAX_FILES_IN_TEXT], *(p for p in commit.head_files[:MAX_FILES_IN_TEXT] if p)}
    path_words = " ".join(sorted({w for f in names for w in re.split(r"[/._-]+", f) if len(w) > 1}))
    return ChunkInput(
        text=text,
        start_line=1,
        end_line=text.count("\n") + 1,
        section="commit",
        symbol=commit.sha[:12],
        title=commit.subject,
        keywords=path_words,
    )
