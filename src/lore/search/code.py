"""Code search (003's search_codebase), file ranking, and history search over commits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lore.errors import ValidationError
from lore.memory.model import parse_time
from lore.records import Record, datarecord, internal
from lore.search import hybrid
from lore.search.text import snippet
from lore.storage import ChunkFilter, Store

if TYPE_CHECKING:
    from lore.search.files import PastWork

TestFinder = Callable[[str], list[str]]


@datarecord
class CodeHit(Record):
    """003's CodeSearchResult, plus the symbol, the file's role and where the score came from."""

    file_path: str
    symbol: str | None
    language: str | None
    start_line: int
    end_line: int
    snippet: str
    similarity: float
    source: str
    role: str | None = None
    # Files-only results: the file's tests and how many similar past commits touched it.
    tests: list[str] = internal(default_factory=list)
    commits: int = internal(default=0)
    is_file: bool = internal(default=False)
    chunk_text: str = internal(default="")
    # Files-only results: the file's most relevant chunks, each scored by its own relevance.
    chunks: list[CodeHit] = internal(default_factory=list)
    # Files-only results: a score that follows the ranking (FileMatch.order), what recall packs by.
    order: float = internal(default=0.0)
    # Files-only results: some of its evidence holds the query's words (FileMatch.worded).
    worded: bool = internal(default=True)
    # Found by meaning alone and scored under hybrid.MEANING_FLOOR: a loose match.
    weak: bool = False

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        data = super().to_dict()
        if self.is_file:
            data.update(tests=list(self.tests), commits=self.commits)
        if full:
            data["chunk_text"] = self.chunk_text
        return data


@datarecord
class CommitHit(Record):
    """A past commit (work item) and the files it changed, as named today."""

    sha: str
    subject: str
    author: str
    date: str
    files: list[str]
    relevance: float
    source: str
    gone_files: list[str] = field(default_factory=list)
    n_files: int = internal(default=0)
    # Found by meaning alone and scored under hybrid.MEANING_FLOOR: a loose match.
    weak: bool = False


def search_code(
    store: Store,
    query: hybrid.Query,
    flt: ChunkFilter,
    *,
    limit: int,
    mode: str = "hybrid",
    fusion: str = "adaptive",
) -> list[CodeHit]:
    """Code chunks matching `query`, best first: a chunk defining the
    identifier the query names, or of the file it names by path, first; then
    the chunks holding the query's exact identifier or phrase, then those
    holding every term; then the rest; within each, source before tests,
    examples, config, docs and changelogs (the files ranking's tiers,
    :data:`~lore.search.files.ROLE_WEIGHT`; a role the query is about or the
    filter asks for joins the source tier), each tier in order of relevance.

    Holding every term lifts a chunk above the tiers only for a lookup (a
    query of a few words, :func:`~lore.search.files.is_lookup`: "staging
    password"). A task of many words is what changelogs are written in: for
    "add a flag to limit the number of matches per file" a changelog line
    holding them all, at 0.17, came before the source defining the flag, at
    0.89. Scores are each chunk's own relevance."""
    from lore.search.files import ROLE_WEIGHT, is_lookup, lookup_match, lookup_names, roles_asked

    asked = (roles_asked(query.text) | set(flt.roles)) - {"test"}
    named, written = lookup_names(query, tasks=True)
    lookup = is_lookup(query)
    lifting = 1 if lookup else 2  # the exactness that goes above the tiers
    # What a pool must hold not to be read deeper: for a lookup of an identifier, its
    # definition as written; else anything named so (a path has no definition).
    wanted = 3 if lookup and any("/" not in w for w in written) else 1

    def tier(hit: hybrid.Scored) -> float:
        role = hit.chunk.role or "source"
        return 1.0 if role in asked else ROLE_WEIGHT.get(role, 1.0)

    def ranked(pool: int) -> list[hybrid.Scored]:
        found = hybrid.search(store, "code", query, limit=pool, flt=flt, mode=mode, fusion_mode=fusion)
        level = {h.chunk.chunk_id: lookup_match(h.chunk, named, written) for h in found}
        if named and max(level.values(), default=0) < wanted:
            # The definition is below the first candidates (`redact` is in many functions'
            # names and bodies): read deeper for it, once.
            deeper = hybrid.search(
                store, "code", query, limit=pool * 8, flt=flt, mode=mode, fusion_mode=fusion
            )
            more = [h for h in deeper if h.chunk.chunk_id not in level]
            level.update((h.chunk.chunk_id, lookup_match(h.chunk, named, written)) for h in more)
            found += [h for h in more if level[h.chunk.chunk_id]][:limit]
        return sorted(
            found,
            key=lambda hit: (
                -level[hit.chunk.chunk_id],
                -(hit.exact if hit.exact >= lifting else 0),
                -tier(hit),
                -max(hit.exact, 0),
            ),
        )

    # The first TIERED_POOL results are the same whatever the limit: a longer list adds after them.
    out = ranked(TIERED_POOL)[:limit]
    if limit > TIERED_POOL:
        shown = {hit.chunk.chunk_id for hit in out}
        out += [hit for hit in ranked(limit) if hit.chunk.chunk_id not in shown][: limit - len(out)]
    return [_code_hit(s, query) for s in out]


# Chunk results are read this deep before they are put in role order.
TIERED_POOL = 30


def search_files(
    store: Store,
    query: hybrid.Query,
    commits: list[hybrid.Scored] | PastWork,
    flt: ChunkFilter,
    *,
    limit: int,
    mode: str = "hybrid",
    fusion: str = "adaptive",
    tests: TestFinder | None = None,
    commit_relevance: dict[int, float] | None = None,
) -> list[CodeHit]:
    """Files likely to matter for `query` (:mod:`lore.search.files`), each as its best chunk."""
    from lore.search.files import likely_files

    matches = likely_files(
        store, query, commits, flt, limit=limit, mode=mode, fusion=fusion, commit_relevance=commit_relevance
    )
    out = []
    for m in matches:
        if m.best is not None:
            hit = _code_hit(m.best, query, m.score)
        else:
            hit = CodeHit(m.path, None, None, 1, 1, "", m.score, "history", m.role)
        hit.commits, hit.is_file, hit.order, hit.worded = m.commits, True, m.order, m.worded
        hit.weak = not m.worded and m.score < hybrid.MEANING_FLOOR
        hit.chunks = [_code_hit(chunk, query, relevance) for chunk, relevance in m.chunks]
        if tests is not None and (m.role or "source") == "source":
            hit.tests = tests(m.path)
        out.append(hit)
    return out


def commit_hits(found: list[hybrid.Scored]) -> list[CommitHit]:
    """Commit search results as past work, with their files as named at HEAD."""
    out = []
    for s in found:
        commit = s.chunk.commit
        assert commit is not None
        heads = commit.head_files or list(commit.files)
        now = list(dict.fromkeys(p for p in heads if p))
        gone = [old for old, new in zip(commit.files, heads) if not new]
        out.append(
            CommitHit(
                commit.sha,
                commit.subject,
                commit.author,
                _utc(commit.date),
                now,
                round(s.score, 4),
                s.source,
                gone,
                commit.n_files,
                weak=hybrid.weak(s.source, s.score),
            )
        )
    return out


MERGE_SPAN = timedelta(days=180)


def fold_merges(found: list[hybrid.Scored]) -> list[hybrid.Scored]:
    """`found` without the merge commits whose change is already there: a merge
    is dropped when plain commits found with it, dated in the half year before
    it, changed every file it did (a pull request's merge and its own commit are
    one piece of work, told twice). A merge that brought more than was found stays."""
    plain = [
        (_when(s), s.chunk.commit.files) for s in found if s.chunk.commit and not s.chunk.commit.is_merge
    ]
    out = []
    for s in found:
        merge = s.chunk.commit
        if merge is not None and merge.is_merge and merge.files:
            when = _when(s)
            covered = {p for date, files in plain if when - MERGE_SPAN <= date <= when for p in files}
            if covered.issuperset(merge.files):
                continue
        out.append(s)
    return out


def fold_copies(found: list[hybrid.Scored]) -> list[hybrid.Scored]:
    """`found` without the later copies of a change: a commit with the subject
    and the files of one ranked above it (a cherry-pick onto another branch,
    a change landed twice) is the same piece of work, told twice."""
    seen: set[tuple[str, frozenset[str]]] = set()
    out = []
    for s in found:
        commit = s.chunk.commit
        if commit is not None and commit.files:
            key = (commit.subject.strip().lower(), frozenset(commit.files))
            if key in seen:
                continue
            seen.add(key)
        out.append(s)
    return out


def _when(found: hybrid.Scored) -> datetime:
    """A found commit's date (the epoch when it cannot be read)."""
    assert found.chunk.commit is not None
    try:
        return datetime.fromisoformat(_utc(found.chunk.commit.date).replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, tz=UTC)


def _utc(date: str) -> str:
    """A commit's date (git's ISO 8601; older indexes hold the author's zone) as UTC `...Z`,
    like every time Lore prints."""
    try:
        return parse_time(date)
    except ValidationError:
        return date


def _code_hit(hit: hybrid.Scored, query: hybrid.Query, score: float | None = None) -> CodeHit:
    chunk = hit.chunk
    return CodeHit(
        chunk.path,
        chunk.symbol,
        chunk.language,
        chunk.start_line,
        chunk.end_line,
        snippet(chunk.text, query.terms),
        round(hit.score if score is None else score, 4),
        hit.source,
        chunk.role,
        chunk_text=chunk.text,
        weak=hybrid.weak(hit.source, hit.score if score is None else score),
    )
