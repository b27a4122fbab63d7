"""The project's git history as past work: each commit is an episodic work item.

Commits are stored as chunks of kind "commit" (subject, body, changed files),
so they get BM25 and vectors like everything else. The newest N commits are
kept (``[index] history_commits``); each sync adds only the commits after the
last one indexed, unless history was rewritten (amend, rebase), in which case
the set is re-read and commits no longer reachable are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lore.index import gitrepo
from lore.storage import ChunkInput, CommitRecord, Store

KIND = "commit"
PREFIX = "git:"


@dataclass
class HistoryResult:
    added: int = 0
    removed: int = 0
    head: str | None = None


def sync_history(root: Path, store: Store, limit: int) -> HistoryResult:
    head = gitrepo.head(root) if gitrepo.repo_root(root) else None
    result = HistoryResult(head=head)
    last = store.get_meta("history_head")
    if head is None or head == last:
        return result
    incremental = bool(last) and gitrepo.is_ancestor(root, last, head)
    commits = gitrepo.commits(root, limit=limit, since=last if incremental else None)
    known = set(store.file_states(KIND))
    with store.transaction():
        if not incremental:
            reachable = {PREFIX + c.sha for c in commits}
            result.removed = store.delete_files(p for p in known if p not in reachable)
            known &= reachable
        for commit in commits:
            path = PREFIX + commit.sha
            if path in known:
                continue
            file_id = store.put_file(path, KIND, commit.sha, 0, 0)
            store.put_commit(file_id, record_of(commit))
            store.put_chunks(file_id, KIND, [commit_chunk(commit)])
            result.added += 1
        store.prune_commits(limit)
        store.set_meta("history_head", head)
    return result


def record_of(commit: gitrepo.Commit) -> CommitRecord:
    return CommitRecord(
        sha=commit.sha,
        author=commit.author,
        email=commit.email,
        date=commit.date,
        subject=commit.subject,
        body=commit.body,
        files=list(commit.files),
        head_files=list(commit.files),
        n_files=len(commit.files),
        is_merge=commit.is_merge,
    )


def commit_chunk(commit: gitrepo.Commit) -> ChunkInput:
    files = "\n".join(commit.files[:50])
    text = f"{commit.subject}\n\n{commit.body}".strip() + (f"\n\nFiles:\n{files}" if files else "")
    path_words = " ".join({w for f in commit.files for w in re.split(r"[/._-]+", f) if len(w) > 1})
    return ChunkInput(
        text=text,
        start_line=1,
        end_line=text.count("\n") + 1,
        section="commit",
        symbol=commit.sha[:12],
        title=commit.subject,
        keywords=path_words,
    )
