"""Code search (003's search_codebase) and history search over commits."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from lore.errors import UsageError
from lore.search.chunks import ChunkMatch, search_kind
from lore.search.text import snippet, terms


@dataclass
class CodeFilter:
    """languages: tree-sitter names (python, typescript…); extensions: ts, .py…;
    directories: prefixes or globs (src/components, src/**/api); paths: an
    allowed set (e.g. changed within N days)."""

    languages: list[str] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    paths: set[str] | None = None

    def sql(self) -> tuple[str, tuple]:
        clauses, params = [], []
        if self.languages:
            clauses.append(f"c.language IN ({','.join('?' * len(self.languages))})")
            params += [lang.lower() for lang in self.languages]
        if self.extensions:
            clauses.append("(" + " OR ".join("f.path LIKE ?" for _ in self.extensions) + ")")
            params += ["%." + ext.lstrip(".").lower() for ext in self.extensions]
        if self.directories:
            globs = []
            for d in self.directories:
                d = d.strip().strip("/")
                if ".." in d.split("/"):
                    raise UsageError(f"directory filter '{d}' leaves the project; give a path inside it")
                # A glob names directories (src/*/api): match files under them too.
                globs += [d, f"{d}/*"] if any(ch in d for ch in "*?[") else [f"{d}/*"]
            clauses.append("(" + " OR ".join("f.path GLOB ?" for _ in globs) + ")")
            params += globs
        if self.paths is not None:
            clauses.append("f.path IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(sorted(self.paths)))
        return " AND ".join(clauses), tuple(params)


@dataclass
class CodeHit:
    """003's CodeSearchResult, plus the symbol and where the score came from."""

    file_path: str
    symbol: str | None
    language: str | None
    start_line: int
    end_line: int
    snippet: str
    chunk_text: str
    similarity: float
    source: str

    def to_json(self, *, full: bool = False) -> dict:
        data = {
            "file_path": self.file_path,
            "symbol": self.symbol,
            "language": self.language,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "snippet": self.snippet,
            "similarity": round(self.similarity, 4),
            "source": self.source,
        }
        if full:
            data["chunk_text"] = self.chunk_text
        return data


@dataclass
class CommitHit:
    sha: str
    subject: str
    author: str
    date: str
    files: list[str]
    relevance: float
    source: str

    def to_json(self) -> dict:
        return {
            "sha": self.sha,
            "subject": self.subject,
            "author": self.author,
            "date": self.date,
            "files": self.files,
            "relevance": round(self.relevance, 4),
            "source": self.source,
        }


def search_code(
    index, query: str, flt: CodeFilter, *, limit: int, files_only: bool = False, **search
) -> list[CodeHit]:
    where, params = flt.sql()
    words = terms(query)
    if not files_only:
        matches = search_kind(index, "code", query, limit=limit, where=where, params=params, **search)
        return [_code_hit(m, words) for m in matches]
    # Files: a file with several good chunks is stronger evidence than one lucky
    # chunk, so rank by the best chunk plus half the next three (tuned on
    # gitlog-flask: R@10 .833 with the best chunk alone, .880 with this).
    matches = search_kind(
        index, "code", query, limit=max(300, limit * 30), where=where, params=params, **search
    )
    per_file: dict[str, list] = {}
    for m in matches:
        per_file.setdefault(m.row["path"], []).append(m)
    ranked = sorted(per_file.values(), key=lambda ms: -file_score([m.score for m in ms]))
    return [_code_hit(ms[0], words) for ms in ranked[:limit]]


def file_score(scores: list[float]) -> float:
    best = sorted(scores, reverse=True)
    return best[0] + 0.5 * sum(best[1:4])


def search_history(index, query: str, *, limit: int, **search) -> list[CommitHit]:
    matches = search_kind(index, "commit", query, limit=limit, **search)
    return [
        CommitHit(
            m.row["sha"],
            m.row["subject"],
            m.row["author"],
            m.row["date"],
            json.loads(m.row["files"]),
            m.score,
            m.source,
        )
        for m in matches
    ]


def _code_hit(match: ChunkMatch, words: list[str]) -> CodeHit:
    row = match.row
    return CodeHit(
        row["path"],
        row["symbol"],
        row["language"],
        row["start_line"],
        row["end_line"],
        snippet(row["text"], words),
        row["text"],
        match.score,
        match.source,
    )
