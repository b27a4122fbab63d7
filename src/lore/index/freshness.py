"""Keeping the code and history index fresh: full runs, hook updates, throttled checks.

:class:`CodeIndex` runs the code sync and the history sync together (and
follows anchored memories when code changes), answers 003's update_index for
hooks, and tells what changed in the work tree since the last run (status).
A watching, long-running process re-checks the work tree at most every
``CHECK_SECONDS``, and only when inotify saw a change under the work tree or
the git directory since the last check (or ``FULL_CHECK_SECONDS`` have
passed, in case an event was missed): the scan costs ~0.2-0.3 s on a tree of
2,000 indexed files, and a server answering a call every few seconds paid it
on every other call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.atomic import contained
from lore.errors import GitError, UsageError
from lore.index import gitrepo
from lore.index.code_sync import IndexResult, sync_code
from lore.index.history_sync import HistoryResult, sync_history
from lore.project import Project
from lore.storage import Store

if TYPE_CHECKING:
    from lore.index.watch import Watcher

CHECK_SECONDS = 2.0
# Scanned at least this often even when no change was seen (a watch missed, a
# change on a network file system).
FULL_CHECK_SECONDS = 60.0
DEFAULT_HISTORY_COMMITS = 200_000


# Folders of dependencies and build output: many folders, much churn, no sources of the project's own.
UNWATCHED = frozenset({"node_modules", "__pycache__", "target", "dist", "venv", "site-packages"})


def _as_given(root: Path, path: str) -> str | None:
    """`path` relative to `root` as written (`./a/../b.py` → `b.py`, links
    not followed), or None when it is absolute elsewhere or climbs out."""
    rel = os.path.relpath(os.path.normpath(os.path.join(root, path)), root)
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else Path(rel).as_posix()


def _unwatched(name: str) -> bool:
    return name.startswith(".") or name in UNWATCHED


class CodeIndex:
    """The repository's files and history in the index."""

    def __init__(self, project: Project, store: Store, *, watching: bool = False):
        self.project = project
        self.store = store
        self.watching = watching
        self._checked = float("-inf")
        self._scanned = float("-inf")
        self._paths: tuple[int, set[str]] | None = None
        self._watcher: Watcher | None = None

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.project.settings.get("index", {}))

    @property
    def history_limit(self) -> int:
        return int(self.settings.get("history_commits", DEFAULT_HISTORY_COMMITS))

    def is_git(self) -> bool:
        return gitrepo.repo_root(self.project.root) is not None

    def run(
        self,
        *,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        only: list[str] | None = None,
        deleted: list[str] | None = None,
    ) -> IndexResult:
        """Index the repository's files (incremental) and its git history.

        Returns 003's IndexResult. Chunks are searchable by BM25 at once;
        vectors follow (the embedding runtime).
        """
        root = self.project.root
        result = sync_code(
            root,
            self.store,
            self.settings,
            force=force,
            only=only,
            deleted=deleted,
            progress=progress,
            cache=cache if contained(root, cache := self.project.local_dir / "cache") else None,
        )
        history = self.sync_history(force=force and only is None)
        head = history.head or (gitrepo.head(root) if self.is_git() else None)
        if result.changed_paths or result.removed_paths or result.renamed_paths or result.added_paths:
            from lore.index import anchors

            with self.store.transaction():
                result.newly_stale = anchors.check(
                    self.store,
                    root,
                    result.changed_paths,
                    result.removed_paths,
                    result.renamed_paths,
                    head,
                    added=result.added_paths,
                )
        # Written only when it changes: a read's freshness check takes no write
        # lock when nothing changed (another process may be writing the index).
        if only is None and (head or "") != (self.store.get_meta("indexed_commit") or ""):
            with self.store.transaction():  # no HEAD (an orphan branch): none indexed either
                self.store.set_meta("indexed_commit", head or "")
        result.commits_added = history.added
        result.commits_updated = history.updated
        return result

    def sync_history(self, *, force: bool = False) -> HistoryResult:
        return sync_history(self.project.root, self.store, self.history_limit, force=force)

    def refresh(self) -> None:
        """Pick up changed files before reading code (unless `[index] auto_sync = false`)."""
        if not self.settings.get("auto_sync", True):
            return
        if self.watching:
            now = time.monotonic()
            if now - self._checked < CHECK_SECONDS:
                return
            self._checked = now
            if self._watcher is None:  # watching before the first scan: nothing falls between
                self._watcher = self._watch()
            elif not self._watcher.changed() and now - self._scanned < FULL_CHECK_SECONDS:
                return
        try:
            self.run()
        except BaseException:
            self._scanned = float("-inf")  # the change seen is not picked up yet: scan at the next check
            raise
        self._checked = self._scanned = time.monotonic()

    def _watch(self) -> Watcher:
        """inotify over the work tree and the git directory (a commit, a
        checkout); inactive where inotify is not available or the watch limit
        is reached (then every check scans). Hidden folders (the index's own,
        `.git` itself, `.github`) and those of dependencies and builds
        (:data:`UNWATCHED`) are not watched: a change there waits for the next
        full scan, as does one to `.lore/config.toml`'s include rules."""
        from lore.index.watch import Watcher

        roots = [self.project.root]
        if self.is_git():
            try:
                roots.append(gitrepo.git_dir(self.project.root))
            except GitError:
                pass
        return Watcher(roots, skip=_unwatched, create=False)

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()

    def update(self, files: list[str], deleted: list[str] | None = None) -> dict[str, Any]:
        """003's update_index: re-check these paths (for hooks and tools). Besides
        the counts, which of `files` the index does not hold and why (no such
        file, ignored by git, excluded, binary, too large...): a tool that named
        one learns it was not indexed."""
        # Each path as the project names it, resolved (the file a link names is
        # the one indexed); a report names it as it was given. A path outside
        # the project is one more file not indexed, not an error for the batch.
        given: dict[str, str] = {}
        refused: list[dict[str, str]] = []

        def named(path: str) -> str | None:
            try:
                rel = self.project.rel(self.project.inside(path, base=self.project.root))
            except UsageError:  # outside (a NUL no file system can name is refused before)
                refused.append({"path": path, "reason": "outside the project"})
                return None
            given.setdefault(rel, _as_given(self.project.root, path) or rel)
            return rel

        changed = [rel for path in files if (rel := named(path)) is not None]
        gone = [rel for path in deleted or [] if (rel := named(path)) is not None]
        result = self.run(only=changed + gone, deleted=gone)
        wanted = set(changed)
        return {
            "updated": result.files_processed + result.files_renamed,
            "deleted": result.files_removed,
            "skipped": refused
            + [{"path": given.get(p, p), "reason": r} for p, r in result.unindexed if p in wanted],
        }

    def paths(self) -> set[str]:
        """The files in the code index now (cached until chunks change)."""
        version = self.store.vectors_version()
        if self._paths is None or self._paths[0] != version:
            self._paths = (version, self.store.paths("code"))
        return self._paths[1]

    def read(self, path: str) -> dict[str, str]:
        """An indexed code file's text (anchors link to it). Only files the code
        index holds, never an arbitrary path: NotFound otherwise. Secret-shaped
        values are masked as in the index's chunks, or the file view would hand
        out in clear what code search redacts."""
        from lore.errors import NotFound
        from lore.index.code_sync import shown_text
        from lore.index.discover import size_limit
        from lore.index.encoding import decode_text
        from lore.safe_read import read_inside

        rel = self.project.rel(self.project.inside(path, base=self.project.root))
        if rel not in self.paths():
            raise NotFound(f"{path} is not an indexed code file; see `lore status`")
        most = int(self.settings.get("max_file_bytes", 1_000_000))
        try:  # a regular file inside the project, of at most the size indexed (never a FIFO put in its place)
            raw = read_inside(self.project.root, rel, max_bytes=max(most, size_limit(rel, most)))
        except NotFound:  # deleted since it was indexed
            raise NotFound(f"{path} is no longer in the work tree; run `lore index`") from None
        return {"path": rel, "text": shown_text(rel, decode_text(raw))}

    def recent_paths(self, days: float) -> set[str]:
        """Files changed by commits in the last `days` days."""
        if not self.is_git():
            raise UsageError("--changed-within needs a git repository")
        cutoff = time.time() - days * 86400
        return {path for path, when in gitrepo.last_changed(self.project.root).items() if when >= cutoff}

    def changes(self) -> dict[str, Any]:
        """What changed in the work tree since the last index run."""
        from lore.index.discover import discover

        root = self.project.root
        settings = self.settings
        found = discover(
            root,
            include=settings.get("include") or None,
            exclude=settings.get("exclude") or None,
            max_bytes=int(settings.get("max_file_bytes", 1_000_000)),
            cache=cache if contained(root, cache := self.project.local_dir / "cache") else None,
        )
        known = self.store.file_states("code")
        changed, new = [], []
        for rel in found.files:
            state = known.get(rel)
            if state is None:
                new.append(rel)
                continue
            try:
                st = os.stat(root / rel)
            except OSError:
                continue
            if (st.st_mtime_ns, st.st_size) != (state.mtime_ns, state.size):
                changed.append(rel)
        wanted = set(found.files)
        deleted = [p for p in known if p not in wanted]
        is_git = self.is_git()
        head, shallow = gitrepo.head_and_shallow(root) if is_git else (None, "")
        indexed = self.store.get_meta("indexed_commit") or None
        # A shallow clone deepened (`git fetch --unshallow`) brings older commits; HEAD does not move.
        deepened = bool(self.store.get_meta("history_head")) and shallow != (
            self.store.get_meta("history_shallow") or ""
        )
        return {
            "git": is_git,
            "head": head,
            "indexed_commit": indexed,
            "up_to_date": not (changed or new or deleted or deepened) and (head == indexed or not is_git),
            "changed_files": sorted(changed),
            "new_files": sorted(new),
            "deleted_files": sorted(deleted),
        }
