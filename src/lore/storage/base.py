"""The storage interface: what the index layer needs from a database.

Everything above this seam (memory sync, code and history indexing,
embedding, search, the service) talks to a :class:`Store` with the typed
records and filters below; nothing above it writes SQL or imports a driver.
Two implementations: :mod:`lore.storage.sqlite` (one file per clone, the
default) and :mod:`lore.storage.postgres` (one database for a team).

What is stored is derived data: it can be rebuilt from the Markdown files and
the repository, except access statistics (reading must not dirty committed
files) and code anchors.

Conventions:
- Paths are posix, relative to the project root. Commits are stored as
  files named ``git:<sha>``.
- A *kind* of chunk is ``memory``, ``code`` or ``commit``; each kind has its
  own lexical statistics (BM25 of memories must not depend on how much code
  exists).
- Lexical scores are higher-is-better; vector scores are cosine similarity.
- Writes happen inside :meth:`Store.transaction`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from lore.records import datarecord

if TYPE_CHECKING:
    import numpy as np

KINDS = ("memory", "code", "commit")
# Orders a page of memories may be sorted in (see Store.memory_page); ties keep index order.
MEMORY_SORTS = ("occurred_at", "title", "type", "agent", "path", "confidence")

# -- records ----------------------------------------------------------------------


class FileState(NamedTuple):
    """What the index knows of one file: enough to tell whether it changed.
    (A named tuple: a sync reads one per file, 15,000 for a large memory
    folder, and a tuple is built in a fraction of a dataclass's time.)"""

    id: int
    sha256: str
    mtime_ns: int
    size: int
    error: str | None


@datarecord
class ChunkInput:
    """A chunk to store (section/symbol/language depend on the kind)."""

    text: str
    start_line: int
    end_line: int
    section: str | None = None
    symbol: str | None = None
    language: str | None = None
    title: str = ""
    keywords: str = ""


@datarecord
class MemoryRecord:
    """The indexed fields of one memory (the Markdown file stays the truth)."""

    id: str
    path: str
    title: str
    type: str
    sector: str
    tags: list[str]
    applies_to: str
    occurred_at: str
    content_hash: str
    agent: str | None = None
    task: str | None = None
    project: str | None = None
    visibility: str = "shared"
    storage: str = "durable"
    confidence: float = 1.0
    files: list[str] = field(default_factory=list)
    summary: str = ""
    body_line: int = 1
    # The file's own evidence_count plus evidence recorded since and not yet
    # written into the file (see EvidenceRecord.folded).
    evidence_count: int = 1
    owner: str | None = None  # the agent key that may see it; None: everyone
    superseded_by: str | None = None  # a newer memory replaced it (frontmatter superseded_by)
    is_global: bool = False  # shared with every project of a team database (003)
    source: str | None = None  # where it came from, e.g. ``session:<id>`` (frontmatter source)


@dataclass(frozen=True)
class MemoryStamp:
    """What attention needs of a memory, without its text: for scoring thousands at once."""

    id: str
    path: str
    occurred_at: str
    confidence: float
    source: str | None = None


@datarecord
class CommitRecord:
    """One commit as past work.

    ``files`` are the paths it changed as named then; ``head_files`` the same
    files as named at HEAD (None for a file that no longer exists), so its
    evidence points at files one can open today.
    """

    sha: str
    author: str
    email: str
    date: str
    subject: str
    body: str
    files: list[str] = field(default_factory=list)
    head_files: list[str | None] = field(default_factory=list)
    n_files: int = 0
    is_merge: bool = False
    committed: str = ""
    """When the commit landed (committer date, ISO 8601): what ``since``/``until``
    and the commits' order go by, as ``git log --since`` does; `date` is the
    author's date, shown. Not read back from the index (its ``ts`` column holds it)."""


@datarecord
class ChunkRecord:
    """One stored chunk, with its memory's or commit's fields for those kinds."""

    chunk_id: int
    kind: str
    path: str
    section: str | None
    symbol: str | None
    language: str | None
    start_line: int
    end_line: int
    title: str
    keywords: str
    text: str
    role: str | None = None
    memory: MemoryRecord | None = None
    commit: CommitRecord | None = None


@datarecord
class AnchorRecord:
    """A memory anchored to a code unit (or a file, or a line range)."""

    memory_id: str
    path: str
    symbol: str | None
    start_line: int | None
    end_line: int | None
    code_hash: str | None
    named_path: str | None = None
    stale_reason: str | None = None


@datarecord
class LinkInput:
    """A link written in a memory file, to another memory (stored per file).

    ``kind`` says how the target is named: ``path`` (a Markdown link; the
    target key is the project-relative path it points at) or ``name`` (a
    ``[[wikilink]]`` or a relation's value; the key is the name casefolded,
    matched against ids, titles, file stems and 8-character id prefixes).
    ``origin`` is where it was written: ``body``, ``section`` (a
    ``## Relations`` list) or ``frontmatter`` (``relations:``).
    """

    relation: str
    target: str
    target_key: str
    kind: str
    line: int | None = None
    origin: str = "body"


@datarecord
class LinkRecord:
    """A stored link with the memory it is written in."""

    source_id: str
    source_path: str
    source_title: str
    relation: str
    target: str
    target_key: str
    kind: str
    line: int | None = None
    origin: str = "body"


@datarecord
class FileDump:
    """One indexed file with everything stored for it: what `lore db export`
    writes and `lore db import` reads, whichever backend it comes from."""

    path: str
    kind: str
    sha256: str
    mtime_ns: int
    size: int
    error: str | None = None
    role: str | None = None
    memory: MemoryRecord | None = None
    commit: CommitRecord | None = None
    chunks: list[ChunkInput] = field(default_factory=list)
    links: list[LinkInput] = field(default_factory=list)


@datarecord
class TierState:
    """A memory's attention tier as last decided by seed 001's transitions.

    Kept between runs (tiers move on evidence and decay, they are not
    recomputed from scratch on each read); keyed by memory id, so a re-indexed
    file keeps its tier.
    """

    memory_id: str
    tier: str  # hot | warm | cold | archive
    since: str  # when it entered this tier (ISO 8601 UTC)
    low_since: str | None = None  # since when its score has stayed below the archive line
    checked_at: str = ""  # the clock's time of the last decision


@datarecord
class EvidenceRecord:
    """One more observation of a memory's fact: another capture, session or agent said it.

    ``key`` names what produced it (a message, an output line, a block), so the
    same capture run twice counts once. ``folded`` evidence is already counted
    in the memory file's own ``evidence_count``; the rest is still pending.
    """

    key: str
    memory_id: str
    source: str
    agent: str | None
    occurred_at: str
    folded: bool = False


@datarecord
class ErrorOccurrence:
    """One occurrence of a normalised error (seed 001's gotcha auto-capture).

    ``key`` names the event it was seen in, so re-reading the same output
    never counts it twice; ``example`` is the line as seen (paths relative to
    the project).
    """

    signature: str
    key: str
    source: str
    agent: str | None
    occurred_at: str
    example: str


@datarecord
class ErrorPattern:
    """A normalised error and how often it was seen, across captures, sessions and agents."""

    signature: str
    count: int
    first_at: str
    last_at: str
    example: str
    memory_id: str | None = None  # the gotcha it became (created once, at the threshold)
    agents: list[str] = field(default_factory=list)


@datarecord
class ProposalRecord:
    """A change to memory files that waits for a person's approval (``lore review``).

    ``changes`` is the exact change: a list of ``{"path", "before_sha256",
    "after"}`` (``before_sha256`` None: a new file; ``after`` None: the file
    goes to the trash). Applying checks that each file still has its
    ``before_sha256``.
    """

    id: str
    kind: str  # promote | merge | supersede | contradiction
    status: str  # open | held | applied | rejected
    title: str
    reason: str
    confidence: float
    evidence: int
    memory_ids: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""


@datarecord
class SourceCounts:
    """What the index holds of one kind of file (a source of the dashboard).

    ``embedded_chunks``: chunks with a vector of the model asked about;
    ``last_indexed_at``: when a file of this kind was last (re)indexed (ISO).
    """

    kind: str
    files: int = 0
    failed_files: int = 0
    chunks: int = 0
    embedded_chunks: int = 0
    last_indexed_at: str | None = None


@datarecord
class IndexCounts:
    memories: int = 0
    memory_files_with_errors: int = 0
    chunks: int = 0
    memory_chunks: int = 0
    code_files: int = 0
    code_chunks: int = 0
    commits: int = 0


# -- filters ----------------------------------------------------------------------


@datarecord
class MemoryFilter:
    """Which memories a read may return (all conditions must hold).

    ``since`` is inclusive, ``until`` exclusive (the first instant after the
    period asked for). ``viewer`` is the agent key reading (see :func:`lore.project.agent_key`):
    a memory with an owner (private, or a session memory written by an agent)
    is visible to that agent only; ``include_private`` (maintenance: duplicate
    ids, anchors) sees every one. ``scoped_only`` keeps memories whose scope
    is a file or area. ``storage`` / ``exclude_storage`` are storage tiers
    (durable, daily, session, archive, session-summary); ``tiers`` /
    ``exclude_tiers`` are attention tiers as last decided (:class:`TierState`;
    a memory without a state is ``cold``). ``visibility``: ``shared`` or
    ``private`` (what the memory's location says; the viewer rule still
    applies). ``stale``: only memories with a stale code anchor (True) or
    only those without (False).
    ``include_global`` adds the global memories (003's
    ``is_global``) of the *other* projects of a shared database; a store that
    holds one project has none. ``sources``: memories whose frontmatter
    ``source`` is one of these (e.g. ``session:<id>``).
    """

    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    agent: str | None = None
    task: str | None = None
    scope: str | None = None
    storage: list[str] = field(default_factory=list)
    exclude_storage: list[str] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    exclude_tiers: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None
    viewer: str | None = None
    include_private: bool = False
    ids: list[str] | None = None
    paths: list[str] | None = None
    content_hash: str | None = None
    title: str | None = None
    scoped_only: bool = False
    visibility: str | None = None
    stale: bool | None = None
    include_global: bool = False
    sources: list[str] | None = None


@datarecord
class ChunkFilter:
    """Which code or commit chunks a search may return.

    languages: tree-sitter names (python, typescript…); extensions: ``ts``,
    ``.py``…; directories: prefixes or globs (``src/components``,
    ``src/**/api``); paths: an allowed set; roles / exclude_roles: file roles
    (source, test, docs…); since / until: commit dates (ISO, UTC), for commits.
    """

    languages: list[str] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    paths: set[str] | None = None
    roles: list[str] = field(default_factory=list)
    exclude_roles: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None

    def is_empty(self) -> bool:
        return not (
            self.languages
            or self.extensions
            or self.directories
            or self.roles
            or self.exclude_roles
            or self.since
            or self.until
            or self.paths is not None
        )


AnyFilter = MemoryFilter | ChunkFilter


def filter_is_empty(flt: AnyFilter | None) -> bool:
    if flt is None:
        return True
    if isinstance(flt, ChunkFilter):
        return flt.is_empty()
    return False  # memory filters always carry visibility


# -- the interface ------------------------------------------------------------------


def embed_dim_key(model: str) -> str:
    """The meta key holding the size of an index's vectors of `model` ("" when unknown)."""
    return f"embed_dim:{model}"


@runtime_checkable
class Store(Protocol):
    """The index database. One instance per process and thread."""

    notices: list[str]
    # Called after the store rebuilt a damaged index, to refill it from the files.
    on_rebuild: Callable[[], None] | None

    # lifecycle
    def close(self) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    # In the block, a write waits at most `seconds` for another writer's lock, then
    # fails as busy (errors.is_busy), not after 30 s: bookkeeping a read leaves for later.
    def waiting_at_most(self, seconds: float) -> AbstractContextManager[None]: ...
    def check(self) -> str: ...
    def repair(self) -> bool: ...
    def identity(self) -> str: ...
    def size_bytes(self) -> int: ...
    # Return space freed by removed files to the disk where the backend keeps it (SQLite).
    def reclaim_space(self) -> None: ...
    def describe(self) -> str: ...

    # index state
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def vectors_version(self) -> int: ...
    def counts(self) -> IndexCounts: ...
    def group_counts(self, column: str) -> dict[str, int]: ...
    def source_counts(self, model: str | None, memories: MemoryFilter | None = None) -> list[SourceCounts]:
        """Per kind of file in the index (one entry per kind present): files,
        files that failed to index, chunks, chunks with a vector of `model`, and
        the last time a file of that kind was indexed.

        With `memories`, the ``memory`` entry covers only the memories that pass
        that filter (so a viewer never counts another agent's private ones);
        memory files that failed to parse have no known owner then and are left
        out of it (``files`` and ``failed_files``): callers add those they may
        show, from :meth:`file_errors`.
        """
        ...

    # files
    def file_states(self, kind: str) -> dict[str, FileState]: ...
    def paths(self, kind: str) -> set[str]: ...
    def put_file(
        self,
        path: str,
        kind: str,
        sha256: str,
        mtime_ns: int,
        size: int,
        error: str | None = None,
        role: str | None = None,
    ) -> int: ...
    def touch_file(self, file_id: int, mtime_ns: int, size: int) -> None: ...
    def delete_files(self, paths: Iterable[str]) -> int: ...
    def prune_vectors(self) -> int:
        """Delete the vectors no chunk of this index uses any more (kept until
        then: a branch switched back to needs them again), and give the space
        back; how many. 0 where vectors are shared beyond what this store
        sees (PostgreSQL: every project's, and other roles' private chunks).
        A file of its own (SQLite) is rebuilt too, so text removed from the
        index (a commit rewritten out of history) is gone from the file."""
        ...

    def forget_synced(self, paths: Iterable[str]) -> list[str]:
        """Of `paths` (files this clone does not have: an imported dump's), those
        another clone of a shared database has: this clone forgets it synced
        them and their rows stay, theirs. [] where the index is this clone's
        alone (SQLite): its rows follow its files."""
        ...

    def file_errors(self, kind: str) -> list[tuple[str, str]]: ...
    def code_files(self, paths: Sequence[str], flt: ChunkFilter | None = None) -> dict[str, str | None]: ...
    def set_roles(self, roles: dict[str, str | None]) -> None: ...

    # memories
    def put_memory(self, file_id: int, memory: MemoryRecord) -> None: ...
    def memories(
        self, flt: MemoryFilter | None = None, *, order: str = "recent", limit: int | None = None
    ) -> list[MemoryRecord]: ...
    def memory_page(
        self,
        flt: MemoryFilter,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[int, list[MemoryRecord]]:
        """One page of the memories that pass `flt`, and how many pass in all.

        `sort` is one of :data:`MEMORY_SORTS` (title compares case-insensitively,
        a missing agent sorts as ""); ties are broken by index insertion order in
        the same direction, so pages are stable. ``limit=None`` returns every
        match from `offset` on. A page must cost about the same at any offset
        and on any number of memories (count, then read only the page's rows).
        Raises ValueError for an unknown `sort`.
        """
        ...

    def memory_stamps(
        self, flt: MemoryFilter, *, sort: str = "occurred_at", descending: bool = True
    ) -> list[MemoryStamp]:
        """Id, path, time and confidence of every memory that passes `flt`, in
        :meth:`memory_page`'s order: enough to score all matches (an attention
        tier) before reading whole records for one page of them. Raises
        ValueError for an unknown `sort`.
        """
        ...

    def memory_paths(self, key: str) -> list[str]: ...
    def find_duplicate(self, occurred_at: str, content_hash: str) -> str | None: ...

    # links between memories
    def put_links(self, file_id: int, links: Sequence[LinkInput]) -> None:
        """Store the links written in one memory file (after :meth:`put_file`,
        which drops the file's old links with the rest of what was indexed for it)."""
        ...

    def links(
        self,
        flt: MemoryFilter | None = None,
        *,
        target_keys: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
    ) -> list[LinkRecord]:
        """Links written in the memories `flt` selects (privacy: `flt.viewer`),
        optionally only those whose ``target_key`` is one of `target_keys`
        (backlinks) or whose relation is one of `relations`; by source path, then line."""
        ...

    # chunks and search
    def put_chunks(self, file_id: int, kind: str, chunks: Sequence[ChunkInput]) -> None: ...
    def chunks(self, kind: str, ids: Sequence[int], flt: AnyFilter | None = None) -> list[ChunkRecord]: ...
    def first_chunk(self, path: str) -> ChunkRecord | None: ...
    def lexical_search(
        self,
        kind: str,
        terms: Sequence[str],
        flt: AnyFilter | None,
        limit: int,
        also: Sequence[int] = (),
    ) -> list[tuple[ChunkRecord, float]]:
        """The best `limit` chunks of `kind` by BM25 over `terms`, best first;
        then the chunks of `also` (ids: the vector candidates, whose words
        count too) that the same candidate expressions match but that are not
        among the best `limit`, best first, with the score they have there."""
        ...

    def warm_search(self, most: int | None = None) -> int:
        """Read ahead (at most `most` of) what this process's keyword searches
        would read as they go (a long-running process does it before its
        first query); how many were read, 0 when nothing is left to read.
        Results are the same either way."""
        ...

    def vector_search(
        self, kind: str, model: str, query: np.ndarray, flt: AnyFilter | None, limit: int
    ) -> list[tuple[int, float]]: ...
    def vector_count(self, kind: str, model: str) -> int: ...
    def vectors_ahead(self, kind: str, model: str) -> Callable[[np.ndarray], None] | None:
        """A function that works out `kind`'s vector pass for a query ahead,
        callable from another thread (it must touch no connection), so that
        the next :meth:`vector_search` with that query is quicker; None when
        there is nothing to do ahead (a database server does the pass)."""
        ...

    def vector_scores(
        self, kind: str, model: str, query: np.ndarray, chunk_ids: Sequence[int]
    ) -> dict[int, float]: ...

    # vectors
    def pending_embeddings(
        self, model: str, limit: int, kind: str | None = None
    ) -> list[tuple[str, str]]: ...
    def count_pending(self, model: str, kind: str | None = None, cap: int | None = None) -> int: ...
    def all_embedded(self, model: str) -> bool: ...
    def mark_all_embedded(self, model: str) -> None: ...
    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None: ...
    def drop_embeddings(self, keep_model: str | None) -> int: ...
    def count_embeddings(self, model: str) -> int: ...
    def embedding_dim(self, model: str) -> int | None:
        """The size of one of this index's vectors of `model` (None: it has none)."""
        ...

    # commits
    def put_commit(self, file_id: int, commit: CommitRecord) -> None: ...
    def commits(self) -> list[CommitRecord]: ...
    def prune_commits(self, keep: int) -> int: ...
    def redate_commits(self, times: dict[str, int]) -> int: ...
    def remap_commit_paths(self, mapping: dict[str, str | None]) -> int: ...
    def commits_touching(self, head_path: str, limit: int = 20) -> list[CommitRecord]: ...
    def paths_changed(self, since: str | None, until: str | None) -> set[str]: ...

    # anchors
    def replace_anchors(self, memory_id: str, anchors: Sequence[AnchorRecord]) -> None: ...
    def anchors(
        self, *, memory_id: str | None = None, path: str | None = None, fresh_only: bool = False
    ) -> list[AnchorRecord]: ...
    def move_anchors(self, old_path: str, new_path: str) -> None: ...
    def mark_stale(self, anchor: AnchorRecord, reason: str | None, commit: str | None) -> None: ...
    def stale_reasons(self, memory_ids: Sequence[str] | None = None) -> dict[str, list[str]]: ...

    # access statistics
    def access_stats(self, memory_ids: Sequence[str] | None = None) -> dict[str, tuple[int, str]]:
        """{memory id: (times recalled, when last)} of `memory_ids` (None: every memory's)."""
        ...

    def record_access(self, memory_ids: Sequence[str], when: str) -> None: ...

    # lifecycle (seed 001): tiers, evidence, error patterns, proposals
    def tier_states(self, memory_ids: Sequence[str] | None = None) -> dict[str, TierState]:
        """The kept tier of each memory that has one (all, or these ids)."""
        ...

    def put_tier_states(self, states: Sequence[TierState]) -> None:
        """Insert or replace tier states (by memory id)."""
        ...

    def add_evidence(self, rows: Sequence[EvidenceRecord]) -> list[str]:
        """Store evidence; rows whose key is known already are ignored. Returns the new keys."""
        ...

    def evidence(self, memory_id: str | None = None) -> list[EvidenceRecord]:
        """Evidence rows, oldest first (of one memory, or all)."""
        ...

    def known_evidence(self, keys: Sequence[str]) -> dict[str, str]:
        """{key: memory id} of the evidence rows these keys name (observations kept before)."""
        ...

    def fold_evidence(self, memory_id: str, keys: Sequence[str] | None = None) -> int:
        """Mark a memory's pending evidence (or these keys) as counted in its file."""
        ...

    def move_evidence(self, from_id: str, to_id: str) -> int:
        """Re-point evidence of a merged memory at the memory it was merged into."""
        ...

    def last_evidence(self, memory_ids: Sequence[str] | None = None) -> dict[str, str]:
        """{memory id: time of its latest evidence}, of these memories (None: all)."""
        ...

    def add_error_occurrences(self, rows: Sequence[ErrorOccurrence]) -> list[tuple[str, str]]:
        """Store error occurrences; (signature, key) pairs known already are ignored.
        Returns the (signature, key) pairs that were new."""
        ...

    def error_patterns(self, signatures: Sequence[str] | None = None) -> list[ErrorPattern]:
        """Counted error patterns (all, or these), most frequent first."""
        ...

    def set_error_memory(self, signature: str, memory_id: str) -> None:
        """Record the gotcha memory a pattern became."""
        ...

    def rewrite_error_text(self, rewrite: Callable[[str], str]) -> int:
        """Apply `rewrite` to every stored error signature and example (e.g.
        redaction added after they were written); a rewritten occurrence that
        now equals one already stored is dropped. Returns the rows changed."""
        ...

    def put_proposal(self, proposal: ProposalRecord) -> None:
        """Insert or replace a proposal (by id)."""
        ...

    def proposals(self, statuses: Sequence[str] | None = None) -> list[ProposalRecord]:
        """Proposals, oldest first (all, or in these statuses)."""
        ...

    def proposal(self, proposal_id: str) -> ProposalRecord | None:
        """One proposal by id, or by an unambiguous id prefix."""
        ...

    # moving an index between backends (lore db export / import)
    def dump_files(self, kind: str) -> Iterator[FileDump]: ...
    def dump_embeddings(self, model: str) -> Iterator[tuple[str, np.ndarray]]: ...
    def meta_items(self) -> dict[str, str]: ...
    def set_access(self, stats: dict[str, tuple[int, str]]) -> None:
        """Replace the access statistics with `stats` (a memory not in it has none)."""
        ...


# -- helpers shared by the backends ---------------------------------------------------


def directory_globs(directories: Sequence[str]) -> list[str]:
    """The path globs a directory filter matches: each value itself (a file
    named as a folder, or a glob naming folders) and everything under it; a
    ``**/`` also stands for no folder at all (``crates/**/searcher`` holds
    ``crates/searcher``)."""
    globs: list[str] = []
    for d in directories:
        forms = [d]
        while "**/" in forms[-1]:
            forms.append(forms[-1].replace("**/", "", 1))
        for form in forms:
            globs += [form, f"{form}/*"]
    return list(dict.fromkeys(globs))


def embedding_text(kind: str, title: str, text: str) -> str:
    """What gets embedded for a chunk: its title (a memory's title, a code
    unit's qualified symbol) then its text. Never the file path, so a renamed
    file keeps its vectors; commits embed their message as is."""
    return f"{title}\n{text}" if title and kind != "commit" else text


def text_hash(text: str) -> str:
    """Content key of a chunk: equal text shares one embedding wherever it lives."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def batched(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
