"""The Lore service: every capability, once, for all interfaces.

The CLI, MCP server and HTTP API are thin layers over :class:`Lore`; so is
the Python API (``lore.open(path)``). Methods keep the index fresh before
they read, so a hand-edited or deleted file is never served stale.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lore.errors import NotFound, UsageError, ValidationError
from lore.index import memory_sync
from lore.index.memory_sync import SyncReport
from lore.index.store import SQLiteIndex
from lore.locking import file_lock
from lore.memory import markdown, secrets, trash
from lore.memory.model import Memory, now_iso, parse_time
from lore.project import Project
from lore.search.filters import MemoryFilter, clamp_limit
from lore.search.memories import MemoryHit
from lore.search.text import terms

# Pending memory chunks embedded inline before a search (more: `lore index`).
INLINE_EMBED_LIMIT = 256
CODE_CHECK_SECONDS = 2.0
DEFAULT_FUSION = "rrf"


@dataclass
class AddResult:
    memory: Memory
    path: str
    created: bool  # False: an identical memory existed (dedup)
    redacted: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {
            "id": self.memory.id,
            "path": self.path,
            "created": self.created,
            "title": self.memory.title,
            "type": self.memory.type,
            "redacted": dict(self.redacted),
        }


@dataclass
class Page:
    """A slice of a memory file (004's paginated read)."""

    id: str
    path: str
    content: str
    offset: int
    total_chars: int
    next_offset: int | None
    memory: Memory

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "path": self.path,
            "content": self.content,
            "offset": self.offset,
            "totalChars": self.total_chars,
            "nextOffset": self.next_offset,
            "title": self.memory.title,
            "type": self.memory.type,
        }


@dataclass
class Problem:
    level: str  # error | warning
    where: str  # path[:line]
    message: str

    def to_json(self) -> dict:
        return {"level": self.level, "where": self.where, "message": self.message}


class Lore:
    """A project's memories and index."""

    def __init__(self, project: Project, *, agent: str | None = None, watch: bool = False):
        """Args:
        watch: for long-running processes (the MCP server): use inotify so
            the freshness check before each read costs nothing unless a
            memory file changed.
        """
        self.project = project
        self.agent = agent
        self._watcher = None
        self._code_checked = float("-inf")
        if watch:
            from lore.index.watch import Watcher

            self._watcher = Watcher([project.memory_dir, project.local_dir])
        self._index: SQLiteIndex | None = None
        self._embedder = None
        self._embedder_error: str | None = None
        self._query_vectors: dict[str, object] = {}
        self._messages: list[str] = []
        self.last_sync: SyncReport | None = None

    @classmethod
    def open(cls, path: str | os.PathLike = ".", *, agent: str | None = None, watch: bool = False) -> Lore:
        return cls(Project.find(path), agent=agent, watch=watch)

    @classmethod
    def init(cls, path: str | os.PathLike = ".", *, agent: str | None = None) -> Lore:
        project, created = Project.init(path)
        lore = cls(project, agent=agent)
        lore.created = created
        return lore

    # -- the index -------------------------------------------------------------

    @property
    def index(self) -> SQLiteIndex:
        if self._index is None:
            self._index = SQLiteIndex(self.project.index_path)
        return self._index

    @property
    def notices(self) -> list[str]:
        """One-line messages for the user (index rebuilt, BM25-only fallback, ...)."""
        return (self._index.notices if self._index else []) + self._messages

    def _notice(self, message: str) -> None:
        if message not in self._messages:
            self._messages.append(message)

    # -- embeddings ------------------------------------------------------------------

    @property
    def embedding_settings(self) -> dict:
        return dict(self.project.settings.get("embedding", {}))

    @property
    def embedder(self):
        """The configured embedder, or None (provider "none", or it failed to load:
        then search is BM25-only and a notice says why, once)."""
        if self._embedder is None and self._embedder_error is None:
            from lore.embed import load_embedder
            from lore.errors import ProviderError

            try:
                self._embedder = load_embedder(self.embedding_settings, root=self.project.root)
                if self._embedder is None:
                    self._embedder_error = "embedding provider is 'none'"
            except ProviderError as err:
                self._embedder_error = str(err)
                self._notice(f"vector search off, BM25 only: {err}")
        return self._embedder

    def vector_model(self, *, load: bool = True) -> str | None:
        """The model id vector search can use now, or None.

        The index remembers which model made its vectors; if the configured
        model differs, vectors are not mixed: search falls back to BM25 and
        the user is told to run `lore index --reembed`.
        """
        if self.embedding_settings.get("provider", "local") == "none":
            self._embedder_error = "embedding provider is 'none' ([embedding] in .lore/config.toml)"
            return None
        embedder = self.embedder if load else self._embedder
        if embedder is None:
            return None
        indexed = self.index.get_meta("embed_model")
        if indexed is None:
            with self.index.write():
                self.index.set_meta("embed_model", embedder.model_id)
            return embedder.model_id
        if indexed != embedder.model_id:
            self._notice(
                f"the index's vectors were made with {indexed} but the configured model is "
                f"{embedder.model_id}; run `lore index --reembed` (BM25 only until then)"
            )
            return None
        return embedder.model_id

    def embed(self, *, progress=None, limit: int | None = None, kind: str | None = None) -> int:
        """Embed chunks that have no vector yet; returns how many."""
        model = self.vector_model()
        if model is None:
            return 0
        from lore.index.embedding import embed_pending

        return embed_pending(self.index, self.embedder, progress=progress, limit=limit, kind=kind)

    def reembed(self, *, progress=None) -> int:
        """Switch the index to the configured model: drop other vectors, embed everything."""
        embedder = self.embedder
        if embedder is None:
            raise UsageError(
                f"no embedding model available ({self._embedder_error}); "
                "set [embedding] provider in .lore/config.toml"
            )
        with self.index.write():
            self.index.set_meta("embed_model", embedder.model_id)
            self.index.drop_embeddings(embedder.model_id)
        return self.embed(progress=progress)

    def _query_vector(self, query: str, kind: str = "memory"):
        """The query's embedding, or None when vector search is unavailable."""
        model = self.vector_model()
        if model is None:
            return None, None
        from lore.errors import ProviderError

        try:
            # Memories written since the last `lore index` are few: embed them now,
            # so a fresh memory is found by meaning straight away.
            if (
                not self.index.all_embedded(model)
                and self.index.count_pending(model, kind, cap=INLINE_EMBED_LIMIT + 1) <= INLINE_EMBED_LIMIT
            ):
                self.embed(kind=kind)
            if query not in self._query_vectors:  # recall embeds one query for several searches
                if len(self._query_vectors) > 64:
                    self._query_vectors.clear()
                self._query_vectors[query] = self.embedder.embed_query(query)
            return self._query_vectors[query], model
        except ProviderError as err:
            self._notice(f"vector search off, BM25 only: {err}")
            return None, None

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._watcher is not None:
            self._watcher.close()

    def __enter__(self) -> Lore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def sync(self, *, force: bool = False) -> SyncReport:
        """Bring the index up to date with the memory files (cheap when nothing changed)."""
        if (
            not force
            and self.last_sync is not None
            and self._watcher is not None
            and not self._watcher.changed()
        ):
            return self.last_sync
        self.last_sync = memory_sync.sync_memories(self.project, self.index, force=force)
        return self.last_sync

    def reindex(self, *, force: bool = False) -> SyncReport:
        """`lore index`: sync the text index (``force``: re-read every file).
        Embedding follows separately (:meth:`embed`), so BM25 works at once."""
        return self.sync(force=force)

    # -- writing -------------------------------------------------------------------

    def add(
        self,
        *,
        body: str,
        title: str | None = None,
        type: str = "fact",
        tags: list[str] | tuple = (),
        applies_to: str = "global",
        agent: str | None = None,
        task: str | None = None,
        project: str | None = None,
        files: list[str] | tuple = (),
        labels: list[str] | tuple = (),
        confidence: float | None = None,
        occurred_at: str | None = None,
        id: str | None = None,
        private: bool = False,
        session: bool = False,
        source: str | None = None,
        extra: dict | None = None,
    ) -> AddResult:
        """Write a new memory file and index it.

        Idempotent: a memory with the same ``occurred_at`` and body hash is
        returned instead of written again. Secrets are redacted first.
        """
        agent = agent or self.agent
        if private and not agent:
            raise UsageError("a private memory needs an agent; pass --agent NAME")
        if not (body or "").strip():
            raise ValidationError("the memory's content is empty; give the text to remember", field="body")
        body, found = secrets.redact(body)
        title, found_title = secrets.redact((title or "").strip())
        found += found_title
        from lore.memory.model import derive_title, new_id

        memory = Memory(
            title=title or derive_title(body),
            body=body.strip() + "\n",
            type=type,
            tags=list(tags) or suggest_keywords(title or derive_title(body), body),
            applies_to=applies_to,
            agent=agent,
            task=task,
            project=project,
            files=list(files),
            labels=list(labels),
            confidence=1.0 if confidence is None else confidence,
            occurred_at=parse_time(occurred_at) if occurred_at else now_iso(),
            id=id or new_id(),
            source=source,
            extra=dict(extra or {}),
        )
        memory.validate(strict=True)
        folder = (
            self.project.agent_dir(agent)
            if private
            else self.project.session_dir
            if session
            else self.project.memory_dir
        )
        with file_lock(self.project.local_dir / ".write.lock"):
            self.sync()
            existing = self.index.find_duplicate(memory.occurred_at, memory.content_hash)
            if existing:
                return AddResult(self.load(existing), existing, False, found)
            path = markdown.write_new(folder, markdown.file_name(memory), markdown.render(memory))
            rel = self.project.rel(path)
            with self.index.write():
                memory = memory_sync.index_memory(
                    self.index,
                    self.project,
                    rel,
                    path.read_bytes(),
                    path.stat(),
                    memory_sync.location_of(rel),
                )
        memory.path = rel
        return AddResult(memory, rel, True, found)

    def update(
        self,
        key: str,
        *,
        body: str | None = None,
        title: str | None = None,
        type: str | None = None,
        **fields,
    ) -> AddResult:
        """Rewrite an existing memory in canonical form (unknown fields kept).

        Args:
            fields: other Memory fields to set (tags, applies_to, confidence,
                files, labels, agent, project, priority, risk, task_type);
                None leaves a field as it is.
        """
        from lore.memory.model import SECTOR_OF_TYPE, UPDATABLE

        unknown = set(fields) - UPDATABLE
        if unknown:
            raise UsageError(
                f"cannot update {', '.join(sorted(unknown))}; "
                f"updatable fields: {', '.join(sorted(UPDATABLE))}"
            )
        rel = self.resolve(key)
        memory = self.load(rel)
        found: Counter = Counter()
        if body is not None:
            memory.body, found = secrets.redact(body.strip() + "\n")
        if title is not None:
            memory.title, more = secrets.redact(title.strip())
            found += more
        if type is not None:
            memory.type, memory.sector = type, SECTOR_OF_TYPE.get(type, memory.sector)
        for name, value in fields.items():
            if value is not None:
                setattr(memory, name, list(value) if isinstance(value, (list, tuple)) else value)
        memory.updated_at = now_iso()
        memory.validate()
        with file_lock(self.project.local_dir / ".write.lock"):
            markdown.write_atomic(self.project.root / rel, markdown.render(memory))
        self.sync()
        return AddResult(self.load(rel), rel, False, found)

    def remove(self, key: str) -> trash.TrashEntry:
        """Soft delete into `.lore/local/trash/` (see `restore`, `gc`)."""
        rel = self.resolve(key)
        memory_id = self._id_of(rel)
        entry = trash.trash(self.project, rel, memory_id)
        self.sync()
        return entry

    def restore(self, key: str) -> str:
        rel = trash.restore(self.project, trash.find(self.project, key))
        self.sync()
        return rel

    def trash_entries(self) -> list[trash.TrashEntry]:
        return trash.entries(self.project)

    def gc(self, *, retention_days: float | None = None) -> list[trash.TrashEntry]:
        days = retention_days
        if days is None:
            days = float(self.project.setting("memory", "trash_retention_days", 30))
        return trash.purge(self.project, days)

    # -- code and history --------------------------------------------------------------

    def index_code(
        self,
        *,
        force: bool = False,
        progress=None,
        only: list[str] | None = None,
        deleted: list[str] | None = None,
    ):
        """Index the repository's files (incremental) and its git history.

        Returns 003's IndexResult. Chunks are searchable by BM25 at once;
        call :meth:`embed` for vectors.
        """
        from lore.index import gitrepo
        from lore.index.code_sync import sync_code
        from lore.index.history_sync import sync_history

        result = sync_code(
            self.project.root,
            self.index,
            self.project.settings.get("index", {}),
            force=force,
            only=only,
            deleted=deleted,
            progress=progress,
        )
        history = sync_history(self.project.root, self.index, self.history_limit)
        head = history.head or (
            gitrepo.head(self.project.root) if gitrepo.repo_root(self.project.root) else None
        )
        if result.changed_paths or result.removed_paths or result.renamed_paths:
            from lore.index import anchors

            with self.index.write():
                result.newly_stale = anchors.check(
                    self.index,
                    self.project.root,
                    result.changed_paths,
                    result.removed_paths,
                    result.renamed_paths,
                    head,
                )
        if only is None and head:
            with self.index.write():
                self.index.set_meta("indexed_commit", head)
        result.commits_added = history.added
        return result

    @property
    def history_limit(self) -> int:
        return int(self.project.setting("index", "history_commits", 2000))

    def update_index(self, files: list[str], deleted: list[str] | None = None) -> dict:
        """003's update_index: re-check these paths (for hooks and tools)."""
        for path in [*files, *(deleted or [])]:
            self.project.inside(path, base=self.project.root)
        result = self.index_code(only=list(files) + list(deleted or []), deleted=deleted)
        return {"updated": result.files_processed + result.files_renamed, "deleted": result.files_removed}

    def refresh(self, *, embed: bool = True) -> dict:
        """Everything a git hook does: memories, code, history, then vectors."""
        report = self.sync()
        code = self.index_code()
        embedded = self.embed() if embed else 0
        return {
            "memories": len(report.added) + len(report.updated) + len(report.removed),
            "code": code.to_json(),
            "embedded": embedded,
        }

    def code_search(
        self,
        query: str,
        *,
        limit: int | None = None,
        languages=(),
        extensions=(),
        directories=(),
        changed_within_days: float | None = None,
        files_only: bool = False,
        mode: str | None = None,
        fusion: str | None = None,
        fresh: bool = True,
    ):
        """003's search_codebase: code chunks (or files) by hybrid search.

        Args:
            changed_within_days: only files changed by commits this recent (git).
            fresh: first pick up files changed on disk (cheap stat check).
        """
        from lore.search.code import CodeFilter, search_code

        paths = None
        if changed_within_days is not None:
            paths = self._recent_paths(changed_within_days)
        flt = CodeFilter(list(languages), list(extensions), list(directories), paths)
        if fresh:
            self._refresh_code()
        return search_code(
            self.index,
            query,
            flt,
            limit=clamp_limit(limit),
            files_only=files_only,
            **self._search_args(query, mode, fusion, "code"),
        )

    def _refresh_code(self) -> None:
        """Pick up changed files before reading code (unless `[index] auto_sync
        = false`). A watching, long-running process re-checks at most every
        CODE_CHECK_SECONDS: the scan costs tens of ms on a large repository."""
        import time

        if not self.project.setting("index", "auto_sync", True):
            return
        if self._watcher is not None and time.monotonic() - self._code_checked < CODE_CHECK_SECONDS:
            return
        self.index_code()
        self._code_checked = time.monotonic()

    def history(
        self,
        query: str,
        *,
        limit: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        fresh: bool = True,
    ):
        """Past commits (work items) matching `query`, with their files."""
        from lore.index.history_sync import sync_history
        from lore.search.code import search_history

        if fresh:
            sync_history(self.project.root, self.index, self.history_limit)
        return search_history(
            self.index, query, limit=clamp_limit(limit), **self._search_args(query, mode, fusion, "commit")
        )

    def _search_args(self, query: str, mode: str | None, fusion: str | None, kind: str) -> dict:
        if mode not in (None, "hybrid", "bm25", "vector"):
            raise UsageError(f"unknown search mode '{mode}'; use hybrid, bm25 or vector")
        args = {"mode": mode or "hybrid", "fusion": fusion or self.fusion}
        if mode != "bm25":
            vector, model = self._query_vector(query, kind)
            if vector is None and mode == "vector":
                raise UsageError(f"vector search is unavailable ({self._embedder_error or 'see above'})")
            args.update(query_vector=vector, model=model)
        return args

    def _recent_paths(self, days: float) -> set[str]:
        import time

        from lore.index import gitrepo

        if not gitrepo.repo_root(self.project.root):
            raise UsageError("--changed-within needs a git repository")
        cutoff = time.time() - days * 86400
        return {path for path, when in gitrepo.last_changed(self.project.root).items() if when >= cutoff}

    def status(self) -> dict:
        """How fresh the index is: indexed commit vs HEAD, changed files, pending vectors."""
        import os as _os

        from lore.index import gitrepo
        from lore.index.discover import discover

        root = self.project.root
        is_git = gitrepo.repo_root(root) is not None
        head = gitrepo.head(root) if is_git else None
        indexed = self.index.get_meta("indexed_commit")
        settings = self.project.settings.get("index", {})
        found = discover(
            root,
            include=settings.get("include") or None,
            exclude=settings.get("exclude") or None,
            max_bytes=int(settings.get("max_file_bytes", 1_000_000)),
        )
        known = self.index.file_states("code")
        changed, new = [], []
        for rel in found.files:
            state = known.get(rel)
            if state is None:
                new.append(rel)
                continue
            try:
                st = _os.stat(root / rel)
            except OSError:
                continue
            if (st.st_mtime_ns, st.st_size) != (state.mtime_ns, state.size):
                changed.append(rel)
        wanted = set(found.files)
        deleted = [p for p in known if p not in wanted]
        report = self.sync()
        counts = self.index.counts()
        return {
            "project": str(root),
            "git": is_git,
            "head": head,
            "indexedCommit": indexed,
            "upToDate": not (changed or new or deleted) and (head == indexed or not is_git),
            "changedFiles": sorted(changed),
            "newFiles": sorted(new),
            "deletedFiles": sorted(deleted),
            "codeFiles": counts["code_files"],
            "codeChunks": counts["code_chunks"],
            "commits": counts["commits"],
            "memories": counts["memories"],
            "brokenMemoryFiles": [p for p, _ in report.errors],
            **self.embedding_status(),
        }

    # -- task lifecycle ----------------------------------------------------------------

    def complete(self, task: str, *, title: str, bundle=None, agent: str | None = None) -> AddResult:
        """000's write-on-complete: the task's memory with Summary, Approach,
        Decisions, Key Files, Lessons and Cross-Agent Intel, its files taken
        from the task's commits (or the work tree). Idempotent per task: a
        second call rewrites the same memory."""
        from lore.memory.complete import CompletionBundle, render_body, task_changes

        bundle = bundle or CompletionBundle()
        changes = task_changes(self.project.root, task)
        body = render_body(bundle, changes)
        agent = agent or bundle.agent or self.agent
        self.sync()
        existing = self.index.list_memories(
            "m.task = ? AND m.type = 'summary' AND m.visibility = 'shared'", (task,), limit=1
        )
        fields = dict(
            tags=bundle.tags or suggest_keywords(title, body),
            files=changes.files,
            labels=bundle.labels,
            agent=agent,
            project=self.project.root.name,
        )
        if not existing:
            return self.add(
                body=body, title=title, type="summary", task=task, extra=_task_extra(bundle), **fields
            )
        return self.update(existing[0]["path"], body=body, title=title, **fields, **_task_extra(bundle))

    # -- capture ---------------------------------------------------------------------

    def capture_transcript(self, path: str | os.PathLike, *, agent: str | None = None) -> dict:
        """Store a transcript's qualifying messages (002's rules) as session-tier
        memories, and errors repeated 3+ times as gotchas. Idempotent."""
        from lore.integrations import capture

        transcript = Path(path)
        result = self._store_candidates(capture.from_transcript(transcript), agent=agent, session=True)
        result["gotchas"] = self._capture_gotchas(
            _transcript_lines(transcript), agent=agent, where=f"session {transcript.stem}"
        )
        return result

    def capture_stdout(self, text: str, *, agent: str | None = None, source: str = "stdout") -> dict:
        """Store `<lore-memory>` blocks an agent printed; repeated errors become gotchas."""
        from lore.integrations import capture

        candidates, problems = capture.from_stdout(text, source=source)
        # Printed blocks carry no time of their own: a block is known by its content.
        result = self._store_candidates(candidates, agent=agent, session=False, by_content=True)
        result["problems"] = problems + result["problems"]
        result["gotchas"] = self._capture_gotchas(text.splitlines(), agent=agent, where=source)
        return result

    def _store_candidates(
        self, candidates, *, agent: str | None, session: bool, by_content: bool = False
    ) -> dict:
        from lore.memory.model import content_hash

        created = existing = 0
        problems: list[str] = []
        for c in candidates:
            known = content_hash(secrets.redact(c.body)[0])  # as it would be written
            if by_content and self.index.list_memories("m.content_hash = ?", (known,), limit=1):
                existing += 1
                continue
            try:
                added = self.add(
                    body=c.body,
                    title=c.title,
                    type=c.type,
                    tags=c.tags,
                    applies_to=c.applies_to,
                    occurred_at=c.occurred_at,
                    agent=agent,
                    source=c.source,
                    session=session,
                )
            except ValidationError as err:
                problems.append(f"{c.source or 'block'}: {err}")
                continue
            created += added.created
            existing += not added.created
        return {"created": created, "existing": existing, "problems": problems}

    def _capture_gotchas(self, lines, *, agent: str | None, where: str) -> int:
        """001's auto-capture: an error pattern seen 3+ times becomes a gotcha (once)."""
        from lore.integrations.capture import repeated_errors

        count = 0
        for pattern, seen in repeated_errors(lines, threshold=3):
            title = f"Repeated error: {pattern}"[:200]
            if self.index.list_memories("m.type = 'gotcha' AND m.title = ?", (title,), limit=1):
                continue
            body = (
                f"This error came up again and again ({seen}× in {where}) before it was solved:\n\n"
                f"```\n{pattern}\n```\n\nWhen you see it, look for the cause recorded with it, or add one."
            )
            self.add(
                body=body,
                title=title,
                type="gotcha",
                tags=["error", "auto-captured"],
                confidence=0.6,
                agent=agent,
            )
            count += 1
        return count

    # -- recall ----------------------------------------------------------------------

    def recall(
        self,
        title: str,
        *,
        description: str = "",
        task: str | None = None,
        files: list[str] | tuple = (),
        budget: int | None = None,
        level: str | None = "auto",
        bracket: str | None = None,
        limit_per_type: int = 5,
        include_memories: bool = True,
        include_code: bool = True,
        include_related_work: bool = True,
        agent: str | None = None,
        fresh: bool = True,
    ):
        """What an agent picking up a task should know, packed into `budget` tokens.

        Returns a :class:`~lore.search.recall.RecallPack` (Markdown + 003's ContextResult).
        """
        from lore.index import anchors
        from lore.search import recall as rc
        from lore.search.pack import resolve_level

        agent = agent or self.agent
        request = rc.RecallRequest(
            title=title,
            description=description or "",
            task=task,
            files=[self.project.rel(self.project.inside(f, base=self.project.root)) for f in files],
            budget=int(budget if budget is not None else self.project.setting("recall", "budget", 2000)),
            level=resolve_level(level, bracket),
            limit_per_type=clamp_limit(limit_per_type, 5),
            agent=agent,
        )
        query = request.text
        if fresh and (include_code or include_related_work):
            self._refresh_code()  # code and history
        items, tasks = [], {}
        if include_memories:
            # Unflagged hits: attention applies the stale penalty itself.
            self.sync()
            hits = self._search(
                query,
                self._filter({"viewer": agent} if agent else {}),
                clamp_limit(max(20, request.limit_per_type * 4)),
                None,
                None,
            )
            stale = anchors.stale_reasons(self.index)
            access = self._access_stats()
            hot = self._hot_memories(request, access, stale, exclude={h.id for h in hits})
            for hit in [*hits[: request.limit_per_type * 2], *hot]:
                hit.body = self.load(hit.path).body
            items += rc.memory_items(hits, access, stale, request, self.half_life, hot)
            for hit in hits[: request.limit_per_type] if include_related_work else []:
                if hit.task_id and hit.task_id not in tasks:
                    tasks[hit.task_id] = rc.task_item(hit.task_id, hit.title, hit.score)
        commits = []
        if include_code or include_related_work:
            commits = self.history(query, limit=20, fresh=False)
        if include_code:
            code_files = self.code_search(
                query, limit=max(10, request.limit_per_type * 2), files_only=True, fresh=False
            )
            existing = self._code_paths()
            ranked = rc.rank_files(
                [(h.file_path, h.similarity) for h in code_files], commits, existing, request.files
            )
            items += [rc.file_item(p, s, r) for p, s, r in ranked[: max(request.limit_per_type * 2, 10)]]
            # The best chunk of each top file: code snippets from different files.
            items += [rc.code_item(h) for h in code_files[: request.limit_per_type]]
        if include_related_work:
            work = [rc.work_item(c) for c in commits] + list(tasks.values())
            items += sorted(work, key=lambda it: -it.value)[: request.limit_per_type]
        result = rc.build(request, items)
        self._record_access([it.key for it in result.items if it.kind == "memory"])
        return result

    def _code_paths(self) -> set[str]:
        version = self.index.vectors_version()
        if getattr(self, "_paths_cache", (None,))[0] != version:
            self._paths_cache = (version, self.index.paths("code"))
        return self._paths_cache[1]

    def branch_title(self, task: str | None = None) -> str:
        """A task title from the task id and the current git branch
        (`fix-oauth-timeout` → "fix oauth timeout"); "" if there is neither."""
        from lore.index import gitrepo

        root = self.project.root
        branch = gitrepo.current_branch(root) if gitrepo.repo_root(root) else None
        if branch in ("main", "master", "trunk", "develop"):
            branch = None
        words = " ".join((branch or "").replace("/", " ").replace("-", " ").replace("_", " ").split())
        return " ".join(filter(None, [task, words]))

    @property
    def half_life(self) -> float:
        return float(self.project.setting("recall", "half_life_days", 90))

    def _access_stats(self) -> dict[str, tuple[int, str]]:
        return self.index.access_stats()

    def _record_access(self, memory_ids: list[str]) -> None:
        """Count a read; kept in the index so reading never dirties committed files."""
        if memory_ids:
            with self.index.write():
                self.index.record_access(memory_ids, now_iso())

    def attention_of(self, rows, access=None, stale=None) -> dict[str, float]:
        """Query-free attention (001) of memory rows, for tiers."""
        from lore.index import anchors
        from lore.search.attention import attention

        access = self._access_stats() if access is None else access
        stale = anchors.stale_reasons(self.index) if stale is None else stale
        out = {}
        for row in rows:
            count, last = access.get(row["id"], (0, None))
            out[row["id"]] = attention(
                1.0,
                occurred_at=row["occurred_at"],
                last_accessed=last,
                access_count=count,
                confidence=row["confidence"],
                stale=row["id"] in stale,
                half_life_days=self.half_life,
            )
        return out

    def _hot_memories(self, request, access, stale, exclude: set[str]) -> list[MemoryHit]:
        """HOT memories (query-free attention > 0.7) whose scope the task touches."""
        from lore.search import recall as rc
        from lore.search.attention import HOT
        from lore.search.memories import hit_from_row

        where, params = self._filter({"viewer": request.agent} if request.agent else {}).sql()
        # 'area:…' and 'file:…' sort before 'global': one index range scan.
        rows = self.index.list_memories(
            where + (" AND " if where else "") + "m.applies_to < 'global'", params
        )
        scores = self.attention_of(rows, access, stale)
        text = f"{request.title} {request.description}".lower()
        touched = set(request.files)
        hot = []
        for row in rows:
            if row["id"] in exclude or scores[row["id"]] <= HOT:
                continue
            if rc._applies(row["applies_to"], touched, text):
                first = self.index.first_chunk(row["path"]) or {
                    "section": None,
                    "start_line": 1,
                    "end_line": 1,
                }
                hot.append(hit_from_row({**dict(row), **first}, row["summary"], 1.0, "hot"))
        return hot

    def stale(self) -> list[dict]:
        """Memories whose anchored code changed, with the reasons."""
        from lore.index import anchors

        self.sync()
        reasons = anchors.stale_reasons(self.index)
        rows = self.index.list_memories(order="f.path") if reasons else []
        return [
            {"id": r["id"], "path": r["path"], "title": r["title"], "reasons": reasons[r["id"]]}
            for r in rows
            if r["id"] in reasons
        ]

    def verify(self, key: str) -> dict:
        """A human or agent checked the memory: re-anchor it to the current code."""
        from lore.index import anchors

        rel = self.resolve(key)
        memory = self.load(rel)
        with self.index.write():
            count = anchors.record(self.index, self.project.root, memory)
        return {
            "id": memory.id,
            "path": rel,
            "anchors": anchors.anchors_of(self.index, memory.id),
            "anchored": count,
        }

    # -- reading -------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        **filters,
    ) -> list[MemoryHit]:
        """Memories matching `query`, best first.

        Args:
            mode: "hybrid" (default when an embedding model is available),
                "bm25" or "vector".
            fusion: "rrf" or "weighted" (default: `[search] fusion` in config).
            filters: see :class:`~lore.search.filters.MemoryFilter`.
        """
        flt = self._filter(filters)
        limit = clamp_limit(limit)
        if mode not in (None, "hybrid", "bm25", "vector"):
            raise UsageError(f"unknown search mode '{mode}'; use hybrid, bm25 or vector")
        self.sync()
        return self._flag_stale(self._search(query, flt, limit, mode, fusion))

    def _search(
        self, query: str, flt: MemoryFilter, limit: int, mode: str | None, fusion: str | None
    ) -> list[MemoryHit]:
        from lore.search import memories

        if mode == "bm25":
            return memories.search_bm25(self.index, query, flt, limit)
        vector, model = self._query_vector(query)
        if vector is None:
            if mode == "vector":
                raise UsageError(f"vector search is unavailable ({self._embedder_error or 'see above'})")
            return memories.search_bm25(self.index, query, flt, limit)
        if mode == "vector":
            return memories.search_vector(self.index, vector, model, flt, limit, query)
        return memories.search_hybrid(self.index, query, vector, model, flt, limit, fusion or self.fusion)

    def _flag_stale(self, hits: list[MemoryHit]) -> list[MemoryHit]:
        """Stale memories stay findable, flagged, at half their score."""
        from lore.index import anchors
        from lore.search.attention import STALE_FACTOR

        stale = anchors.stale_reasons(self.index, [h.id for h in hits])
        for hit in hits:
            if hit.id in stale:
                hit.stale = stale[hit.id]
                hit.score = round(hit.score * STALE_FACTOR, 4)
        return sorted(hits, key=lambda h: -h.score) if stale else hits

    @property
    def fusion(self) -> str:
        from lore.search.fusion import FUSIONS

        mode = self.project.setting("search", "fusion", DEFAULT_FUSION)
        if mode not in FUSIONS:
            raise UsageError(
                f"[search] fusion = '{mode}' in .lore/config.toml; use one of {', '.join(FUSIONS)}"
            )
        return mode

    def list(self, *, limit: int | None = None, **filters) -> list[dict]:
        """Memories newest first, as dicts (id, path, title, type, tags, ...)."""
        flt = self._filter(filters)
        self.sync()
        where, params = flt.sql()
        attention_tier = flt.tier if flt.tier in ("hot", "warm", "cold") else None
        rows = self.index.list_memories(where, params, limit=None if attention_tier else limit)
        if attention_tier:
            from lore.search.attention import tier

            scores = self.attention_of(rows)
            rows = [r for r in rows if tier(scores[r["id"]]) == attention_tier][:limit]
        from lore.search.browse import memory_row

        return [memory_row(r) for r in rows]

    def show(self, key: str, *, offset: int = 0, limit: int | None = None) -> Page:
        """A memory's whole file, or a character slice of it (004's memory_read)."""
        if offset < 0 or (limit is not None and limit < 1):
            raise UsageError("offset must be ≥ 0 and limit ≥ 1")
        rel = self.resolve(key)
        text = (self.project.root / rel).read_text("utf-8")
        memory = self.load(rel)
        end = len(text) if limit is None else min(len(text), offset + limit)
        self._record_access([memory.id])
        return Page(
            memory.id, rel, text[offset:end], offset, len(text), end if end < len(text) else None, memory
        )

    def load(self, rel: str) -> Memory:
        """Parse the memory file at `rel` (relative to the project root)."""
        raw = (self.project.root / rel).read_bytes()
        memory, _ = memory_sync.load_memory(raw, rel, memory_sync.location_of(rel))
        memory.path = rel
        return memory

    def resolve(self, key: str) -> str:
        """A memory's path from its id, id prefix, file name or path."""
        self.sync()
        candidate = Path(key)
        if key.endswith(".md") or os.sep in key or "/" in key:
            outside = []
            for base in (Path.cwd(), self.project.root):
                try:
                    full = self.project.inside(candidate, base=base)
                except UsageError as err:  # relative to the cwd it may leave the project
                    outside.append(err)
                    continue
                if full.is_file():
                    rel = self.project.rel(full)
                    if not rel.startswith(".lore/"):
                        raise UsageError(f"{key} is not a memory file (not under .lore/)")
                    return rel
            if len(outside) == 2:
                raise outside[0]
        paths = self.index.memory_paths(key)
        if not paths:
            broken = [p for p, _ in self.index.file_errors("memory") if Path(p).stem == key or p == key]
            if broken:
                return broken[0]
            raise NotFound(f"no memory '{key}'; see `lore list` or `lore search`")
        if len(paths) > 1:
            raise UsageError(
                f"'{key}' matches {len(paths)} memories ({', '.join(paths[:3])}…); give more of the id"
            )
        return paths[0]

    def path_of(self, key: str) -> Path:
        return self.project.root / self.resolve(key)

    def check(self, rel: str) -> None:
        """Re-read one file after a hand edit; raises ValidationError if it is broken."""
        self.sync()
        for path, error in self.index.file_errors("memory"):
            if path == rel:
                line, message = memory_sync.split_error(path, error)
                raise ValidationError(message, path=rel, line=line)

    def stats(self) -> dict:
        self.sync()
        counts = self.index.counts()
        size = sum(
            os.path.getsize(f"{self.project.index_path}{s}")
            for s in ("", "-wal", "-shm")
            if os.path.exists(f"{self.project.index_path}{s}")
        )
        return {
            "project": str(self.project.root),
            "memories": counts["memories"],
            "brokenFiles": counts["memory_files_with_errors"],
            "chunks": counts["chunks"],
            "codeFiles": counts["code_files"],
            "codeChunks": counts["code_chunks"],
            "commits": counts["commits"],
            "byType": self.index.group_counts("type"),
            "byVisibility": self.index.group_counts("visibility"),
            "byStorage": self.index.group_counts("storage"),
            "trash": len(self.trash_entries()),
            "indexBytes": size,
            **self.embedding_status(),
        }

    def embedding_status(self, *, load: bool = True) -> dict:
        """Search mode, model, vectors and pending embeddings (for stats/status)."""
        model = self.vector_model(load=load)
        indexed = self.index.get_meta("embed_model")
        return {
            "search": "hybrid" if model else "bm25",
            "embedding": model,
            "indexedModel": indexed,
            "embeddingProblem": None
            if model
            else (self._embedder_error or (self._messages[-1] if self._messages else None)),
            "vectors": self.index.count_embeddings(indexed) if indexed else 0,
            "pendingEmbeddings": self.index.count_pending(model) if model else None,
        }

    def doctor(self) -> list[Problem]:
        """Every problem with the files and the index, each with what to do."""
        problems: list[Problem] = []
        report = self.sync()
        for path, error in report.errors:
            line, message = memory_sync.split_error(path, error)
            problems.append(Problem("error", path, f"line {line}: {message}" if line else message))
        seen_ids: dict[str, str] = {}
        import json

        from lore.memory.model import UUID4_RE

        for row in self.index.list_memories(order="f.path"):
            path, mid = row["path"], row["id"]
            if mid in seen_ids:
                problems.append(
                    Problem(
                        "error",
                        path,
                        f"id {mid} is also used by {seen_ids[mid]}; "
                        "give one of them a new id (e.g. `uuidgen`)",
                    )
                )
            seen_ids.setdefault(mid, path)
            if not UUID4_RE.match(mid):
                problems.append(
                    Problem(
                        "warning",
                        path,
                        f"id '{mid}' is not a UUID v4 (seed 002); fine to keep, `lore edit` to change",
                    )
                )
            if not json.loads(row["tags"]):
                problems.append(
                    Problem(
                        "warning", path, "no keywords; add `keywords: [...]` so search and recall can find it"
                    )
                )
            memory = self.load(path)
            if memory.declared_hash and memory.declared_hash != memory.content_hash:
                problems.append(
                    Problem(
                        "warning",
                        path,
                        f"content_hash {memory.declared_hash} does not "
                        f"match the body ({memory.content_hash}); it was edited by hand — "
                        "harmless, `lore edit` rewrites it",
                    )
                )
        from lore.index import anchors

        for memory_id, reasons in anchors.stale_reasons(self.index).items():
            paths = self.index.memory_paths(memory_id)
            problems.append(
                Problem(
                    "warning",
                    paths[0] if paths else memory_id,
                    f"stale: {'; '.join(reasons)}; check it, then `lore verify {memory_id[:8]}`",
                )
            )
        ok = self.index.check()
        if ok != "ok":
            problems.append(
                Problem(
                    "error",
                    self.project.rel(self.project.index_path),
                    f"index check failed ({ok}); run `lore index --force`",
                )
            )
        return problems

    # -- helpers -------------------------------------------------------------------

    def _filter(self, filters: dict) -> MemoryFilter:
        filters = {k: v for k, v in filters.items() if v not in (None, (), [])}
        for key in ("types", "tags"):
            if isinstance(filters.get(key), str):
                filters[key] = [filters[key]]
        if "type" in filters:
            filters["types"] = [filters.pop("type")]
        if "tag" in filters:
            filters["tags"] = [filters.pop("tag")]
        filters.setdefault("viewer", filters.get("agent") or self.agent)
        try:
            return MemoryFilter(**filters)
        except TypeError as err:
            raise UsageError(str(err)) from None

    def _id_of(self, rel: str) -> str:
        rows = self.index.list_memories("f.path = ?", (rel,))
        return rows[0]["id"] if rows else Path(rel).stem

    # -- curation and jobs (issue 15) ---------------------------------------------
    # What the web UI and HTTP API need beyond the methods above. The behaviour
    # lives in search/browse.py, memory/curation.py, index/overview.py and
    # jobs.py; these methods apply the agent's visibility and keep the index
    # and vectors fresh after each change.

    def visible(self, key: str) -> str:
        """The path of memory `key` if this Lore's agent may see it. Another
        agent's private memory is reported exactly like a missing one."""
        rel = self.resolve(key)
        if not self._may_see(rel):
            raise NotFound(f"no memory '{key}'; see `lore list` or `lore search`")
        return rel

    def _may_see(self, rel: str) -> bool:
        visibility, _, owner = memory_sync.location_of(rel)
        return visibility != "private" or (
            bool(self.agent) and owner == self.project.agent_dir(self.agent).name
        )

    def browse(
        self,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int = 50,
        visibility: str | None = None,
        stale: bool | None = None,
        **filters,
    ):
        """One page of memories (newest first by default) with the total count,
        each with staleness, attention score and tier. `filters` as for
        :meth:`list`; the viewer is always this Lore's agent."""
        from lore.index import anchors
        from lore.search import browse
        from lore.search.attention import tier

        flt = self._filter(filters)
        flt.viewer = self.agent
        query = browse.BrowseQuery(flt, visibility, stale, sort, descending, offset, limit)
        self.sync()
        access = self._access_stats()
        if flt.tier in ("hot", "warm", "cold"):
            rows = browse.page(self.index, query, everything=True)
            scores = self.attention_of(rows, access)
            rows = [r for r in rows if tier(scores[r["id"]]) == flt.tier]
            total, rows = len(rows), rows[offset : offset + limit]
        else:
            total, rows = browse.count(self.index, query), browse.page(self.index, query)
        stale_ids = anchors.stale_reasons(self.index, [r["id"] for r in rows])
        scores = self.attention_of(rows, access, stale_ids)
        items = [
            {
                **browse.memory_row(r),
                "stale": stale_ids.get(r["id"]),
                "attention": round(scores[r["id"]], 4),
                "tier": tier(scores[r["id"]]),
            }
            for r in rows
        ]
        return browse.BrowsePage(total, offset, limit, sort, "desc" if descending else "asc", items)

    def memory_detail(self, key: str):
        """Everything about one memory: fields, body, file version, anchors,
        staleness, attention, access counts (reading it here is not an access)."""
        from lore.index import anchors
        from lore.memory.curation import MemoryDetail, file_sha256
        from lore.search.attention import tier

        rel = self.visible(key)
        memory = self.load(rel)
        sha = file_sha256(self.project.root / rel)
        rows = self.index.list_memories("f.path = ?", (rel,))
        count, last = self._access_stats().get(memory.id, (0, None))
        stale = anchors.stale_reasons(self.index, [memory.id]).get(memory.id)
        score = self.attention_of(rows, stale={memory.id: stale} if stale else {})[memory.id] if rows else 0.0
        found = anchors.anchors_of(self.index, memory.id)
        return MemoryDetail(
            memory.id,
            rel,
            memory.title,
            memory.type,
            memory.sector or "",
            memory.tags,
            memory.applies_to,
            memory.occurred_at,
            memory.updated_at,
            memory.agent,
            memory.task,
            memory.visibility,
            memory.storage,
            memory.confidence,
            memory.files,
            memory.frontmatter(),
            memory.body,
            sha,
            found,
            stale,
            round(score, 4),
            tier(score),
            count,
            last,
            {"anchors": len(found), "files": len(memory.files)},
        )

    def memory_log(self, key: str, *, limit: int = 20):
        """The git log of a memory's file (renames followed); [] when git does not track it."""
        from lore.memory.curation import file_log

        return file_log(self.project.root, self.visible(key), limit)

    def create(self, **fields) -> AddResult:
        """:meth:`add`, then embed the new memory at once (found by meaning straight away)."""
        result = self.add(**fields)
        self._embed_memories()
        return result

    def update_checked(self, key: str, *, expected_sha256: str | None = None, **changes) -> AddResult:
        """:meth:`update` a memory this agent may see, refusing (:class:`~lore.errors.Conflict`)
        if its file changed since the caller read the version `expected_sha256`; then
        re-embed it at once."""
        from lore.memory.curation import ensure_unchanged

        rel = self.visible(key)
        if expected_sha256:
            ensure_unchanged(self.project.root / rel, rel, expected_sha256)
        result = self.update(rel, **changes)
        self._embed_memories()
        return result

    def _embed_memories(self) -> None:
        from lore.errors import ProviderError

        try:
            self.embed(kind="memory", limit=INLINE_EMBED_LIMIT)
        except ProviderError as err:
            self._notice(f"not embedded yet (BM25 finds it): {err}")

    def trash_memory(self, key: str) -> trash.TrashEntry:
        """:meth:`remove` (soft delete) a memory this agent may see."""
        return self.remove(self.visible(key))

    def trashed(self) -> list[trash.TrashEntry]:
        """The trash entries this agent may see, newest last."""
        return [e for e in self.trash_entries() if self._may_see(e.original)]

    def _trashed_entry(self, key: str) -> trash.TrashEntry:
        entry = trash.find(self.project, key)
        if not self._may_see(entry.original):
            raise NotFound(f"nothing in the trash matches '{key}'; see `lore restore --list`")
        return entry

    def restore_trashed(self, key: str) -> str:
        """:meth:`restore` a trash entry this agent may see; returns the restored path."""
        rel = trash.restore(self.project, self._trashed_entry(key))
        self.sync()
        self._embed_memories()
        return rel

    def purge_trashed(self, key: str) -> trash.TrashEntry:
        """Delete one trash entry now (instead of waiting for :meth:`gc`)."""
        entry = self._trashed_entry(key)
        entry.file.unlink(missing_ok=True)
        entry.file.with_suffix(".json").unlink(missing_ok=True)
        return entry

    def bulk(
        self,
        action: str,
        *,
        apply: bool = False,
        confirm: str | None = None,
        ids: list[str] | None = None,
        add_tags: list[str] | tuple = (),
        remove_tags: list[str] | tuple = (),
        new_type: str | None = None,
        new_tier: str | None = None,
        visibility: str | None = None,
        stale: bool | None = None,
        **filters,
    ):
        """Preview (default) or apply a bulk action — delete, restore, retag,
        set_type (`new_type`), set_tier (`new_tier`: durable or session), verify —
        on the memories `filters` select (narrowed to `ids` when given;
        `restore` selects from the trash).
        Applying needs `confirm` = the preview's digest. Returns a
        :class:`~lore.memory.curation.BulkResult`."""
        from lore.memory import curation

        params = curation.BulkParams(list(add_tags), list(remove_tags), new_type, new_tier)
        params.check(action)
        if action == "restore":
            rows = self._trash_selection(filters, ids)
        else:
            rows = self._selection(filters, visibility, stale, ids)
        root = self.project.root
        acts = {
            "delete": lambda row: self.remove(row["path"]),
            "restore": lambda row: trash.restore(self.project, row["entry"]),
            "retag": lambda row: self.update(row["path"], tags=curation.retagged(row["tags"], params)),
            "set_type": lambda row: self.update(row["path"], type=params.type),
            "set_tier": lambda row: curation.move_storage(
                root,
                row["path"],
                self.project.memory_dir if new_tier == "durable" else self.project.session_dir,
            ),
            "verify": lambda row: self.verify(row["path"]),
        }
        result = curation.run_bulk(action, rows, params, apply=apply, confirm=confirm, act=acts[action])
        if result.applied:
            self.sync()
            self._embed_memories()
        return result

    def _selection(self, filters: dict, visibility, stale, ids) -> list[dict]:
        from lore.search import browse

        flt = self._filter(filters)
        flt.viewer = self.agent
        self.sync()
        query = browse.BrowseQuery(flt, visibility, stale, sort="path", descending=False)
        rows = browse.page(self.index, query, everything=True)
        if flt.tier in ("hot", "warm", "cold"):
            from lore.search.attention import tier

            scores = self.attention_of(rows)
            rows = [r for r in rows if tier(scores[r["id"]]) == flt.tier]
        wanted = set(ids) if ids else None
        return [
            {**browse.memory_row(r), "version": r["content_hash"]}
            for r in rows
            if wanted is None or r["id"] in wanted
        ]

    def _trash_selection(self, filters: dict, ids) -> list[dict]:
        """Trash entries as selection rows (types and tags filters apply; others are not kept in the trash)."""
        flt = self._filter(filters)
        wanted = set(ids) if ids else None
        rows = []
        for entry in self.trashed():
            try:
                memory, _ = markdown.parse(entry.file.read_bytes(), entry.original)
            except (OSError, ValidationError):
                continue
            tags = {t.lower() for t in memory.tags}
            if flt.types and memory.type not in flt.types:
                continue
            if any(t.lower() not in tags for t in flt.tags) or (wanted and entry.id not in wanted):
                continue
            rows.append(
                {
                    "id": entry.id,
                    "path": entry.original,
                    "title": memory.title,
                    "type": memory.type,
                    "tags": memory.tags,
                    "version": entry.deleted_at,
                    "entry": entry,
                }
            )
        return rows

    def index_overview(self):
        """The index dashboard: per source counts, failures, last indexed
        time; embedding model, coverage and pending vectors; index size;
        freshness against git; stale memories; the running and recent jobs."""
        from lore.index import overview

        status = self.status()
        model = status["embedding"] or status["indexedModel"]
        sources = overview.sources(self.index, model)
        chunks = sum(s.chunks for s in sources)
        changes = len(status["changedFiles"]) + len(status["newFiles"]) + len(status["deletedFiles"])
        jobs = self._jobs
        current = jobs.current() if jobs else None
        return overview.IndexOverview(
            sources=sources,
            failed_files=overview.failed_files(self.index),
            embedding_model=status["embedding"],
            indexed_model=status["indexedModel"],
            search_mode=status["search"],
            embedding_problem=status["embeddingProblem"],
            pending_embeddings=status["pendingEmbeddings"],
            embedding_coverage=round(sum(s.embedded_chunks for s in sources) / chunks, 4) if chunks else None,
            index_bytes=self.stats()["indexBytes"],
            head=status["head"],
            indexed_commit=status["indexedCommit"],
            up_to_date=status["upToDate"],
            work_tree_changes=changes,
            stale_memories=self.stale(),
            job=current.to_dict() if current else None,
            recent_jobs=[j.to_dict() for j in jobs.jobs()[:10]] if jobs else [],
        )

    @property
    def _jobs(self):
        return getattr(self, "_job_runner", None)

    def start_index_job(self, kind: str = "update", *, files=(), deleted_files=()):
        """Queue a background index run (see :mod:`lore.jobs`) and return its
        :class:`~lore.jobs.IndexJob` at once. `kind`: files (003's update_index
        with `files`/`deleted_files`), update (everything, incremental) or
        rebuild (re-read every file). The run uses a Lore of its own."""
        from lore.jobs import JobRunner

        for name, paths in (("files", files), ("deleted_files", deleted_files)):
            for path in paths:
                try:
                    self.project.inside(path, base=self.project.root)
                except UsageError as err:
                    raise ValidationError(str(err), field=name) from None
        if self._jobs is None:
            project, agent = self.project, self.agent
            self._job_runner = JobRunner(lambda: Lore(project, agent=agent))
        return self._jobs.submit(kind, list(files), list(deleted_files))

    def index_jobs(self) -> list:
        """Background index runs still remembered, newest first."""
        return self._jobs.jobs() if self._jobs else []

    def index_job(self, job_id: str):
        """A background index run by id (:class:`NotFound` once forgotten)."""
        job = self._jobs.get(job_id) if self._jobs else None
        if job is None:
            raise NotFound(f"no index job '{job_id}' (finished jobs are kept for a while only)")
        return job

    def code_file(self, path: str) -> dict:
        """An indexed code file's text (for links from a memory's anchors to the code).
        Only files the code index holds: never an arbitrary path."""
        rel = self.project.rel(self.project.inside(path, base=self.project.root))
        if rel not in self.index.paths("code"):
            raise NotFound(f"{path} is not an indexed code file; see `lore status`")
        raw = (self.project.root / rel).read_bytes()
        return {"path": rel, "text": raw.decode("utf-8", "replace")}

    def stop_index_jobs(self) -> None:
        """Let the running index job finish (bounded wait) and cancel queued ones."""
        if self._jobs is not None:
            self._jobs.close()


def _task_extra(bundle) -> dict:
    return {
        k: v
        for k, v in (("priority", bundle.priority), ("risk", bundle.risk), ("task_type", bundle.task_type))
        if v is not None
    }


def _transcript_lines(path: Path) -> list[str]:
    """Every string in a JSONL transcript, split into lines (errors hide in tool results)."""
    import json

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    lines: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            for text in strings(event):
                lines.extend(text.splitlines())
    return lines


def suggest_keywords(title: str, body: str, limit: int = 5) -> list[str]:
    """Keywords for a memory given none: the title's terms, then the body's most frequent."""
    import re

    noise = re.compile(r"^(\d+|[0-9a-f]{7,40})$")  # numbers and commit shas say nothing
    words = [w for w in terms(title) if not noise.match(w) and len(w) <= 50]
    if len(words) < limit:
        counts = Counter(w for w in terms_all(body) if len(w) > 3 and not noise.match(w))
        words += [w for w, _ in counts.most_common(limit * 2) if w not in words]
    return words[:limit] or ["note"]


def terms_all(text: str) -> list[str]:
    import re

    from lore.search.text import STOPWORDS

    return [w for w in re.findall(r"[a-z][a-z0-9_]+", text.lower()) if w not in STOPWORDS]
