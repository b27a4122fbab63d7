"""Code search (003's search_codebase), file ranking, and history search over commits."""

from __future__ import annotations

from dataclasses import dataclass, field

from lore.records import Record, internal
from lore.search import hybrid
from lore.search.text import snippet
from lore.storage import ChunkFilter, Store


@dataclass
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
    chunk_text: str = internal(default="")

    def to_dict(self, *, full: bool = False) -> dict:
        data = super().to_dict()
        if full:
            data["chunk_text"] = self.chunk_text
        return data


@dataclass
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


def search_code(
    store: Store,
    query: hybrid.Query,
    flt: ChunkFilter,
    *,
    limit: int,
    files_only: bool = False,
    mode: str = "hybrid",
    fusion: str = "rrf",
) -> list[CodeHit]:
    """Code chunks (or, with `files_only`, files by their best chunks) matching `query`."""
    if not files_only:
        found = hybrid.search(store, "code", query, limit=limit, flt=flt, mode=mode, fusion_mode=fusion)
        return [_code_hit(s, query) for s in found]
    ranked = rank_files(store, query, flt, limit=limit, mode=mode, fusion=fusion)
    return [_code_hit(best, query, score) for best, score in ranked]


def rank_files(
    store: Store,
    query: hybrid.Query,
    flt: ChunkFilter,
    *,
    limit: int,
    mode: str = "hybrid",
    fusion: str = "rrf",
) -> list[tuple[hybrid.Scored, float]]:
    """Files by their chunks: (best chunk, file score), best first.

    A file with several good chunks is stronger evidence than one lucky
    chunk, so a file scores its best chunk plus half the next three (tuned on
    gitlog-flask: R@10 .833 with the best chunk alone, .880 with this).
    """
    pool = max(300, limit * 30)
    while True:
        chunks = hybrid.search(store, "code", query, limit=pool, flt=flt, mode=mode, fusion_mode=fusion)
        per_file: dict[str, list[hybrid.Scored]] = {}
        for hit in chunks:
            per_file.setdefault(hit.chunk.path, []).append(hit)
        if len(per_file) >= limit or len(chunks) < pool or pool >= hybrid.MAX_POOL:
            break
        pool *= 4
    scored = [(hits[0], file_score([h.score for h in hits])) for hits in per_file.values()]
    scored.sort(key=lambda item: -item[1])
    return scored[:limit]


def file_score(scores: list[float]) -> float:
    best = sorted(scores, reverse=True)
    return min(1.0, best[0] + 0.5 * sum(best[1:4]))


def search_history(
    store: Store,
    query: hybrid.Query,
    *,
    limit: int,
    flt: ChunkFilter | None = None,
    mode: str = "hybrid",
    fusion: str = "rrf",
) -> list[CommitHit]:
    """Past commits matching `query`, best first, with their files as named at HEAD."""
    found = hybrid.search(store, "commit", query, limit=limit, flt=flt, mode=mode, fusion_mode=fusion)
    out = []
    for s in found:
        commit = s.chunk.commit
        assert commit is not None
        heads = commit.head_files or list(commit.files)
        now = [p for p in heads if p]
        gone = [old for old, new in zip(commit.files, heads) if not new]
        out.append(
            CommitHit(
                commit.sha,
                commit.subject,
                commit.author,
                commit.date,
                now,
                round(s.score, 4),
                s.source,
                gone,
                commit.n_files,
            )
        )
    return out


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
        chunk.text,
    )
