"""SQL pieces of the PostgreSQL backend: column lists, filters, scopes, BM25.

Filters arrive as the typed objects of :mod:`lore.storage.base` and leave as
(WHERE clause, parameters) with ``%s`` placeholders; nothing here runs SQL.
The clauses mirror the SQLite backend's one for one, so both backends
return the same rows for the same filter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from lore.storage.base import AnyFilter, ChunkFilter, MemoryFilter, directory_globs

MEMORY_COLUMNS = (
    "m.id, m.title, m.type, m.sector, m.tags, m.applies_to, m.agent, m.task, m.project, m.visibility, "
    "m.storage, m.occurred_at, m.content_hash, m.confidence, m.files, m.summary, m.body_line, "
    # The file's own evidence count plus evidence not written into the file yet.
    "m.evidence_count + (SELECT count(*) FROM evidence e WHERE e.project_id = m.project_id "
    "AND e.memory_id = m.id AND NOT e.folded), m.owner, {path}, m.is_global, m.superseded_by, m.source"
)
COMMIT_COLUMNS = (
    "m.sha, m.author, m.email, m.date, m.subject, m.body, m.files, m.head_files, m.n_files, m.is_merge"
)
CHUNK_COLUMNS = (
    "c.id, c.kind, {path}, c.section, c.symbol, c.language, c.start_line, c.end_line, c.title, "
    "c.keywords, c.text, f.role"
)
# A global memory of another project is shown as @<project>/<path>: its path
# means nothing in this clone and must not collide with one that does.
FOREIGN_PATH = (
    "CASE WHEN f.project_id = %s THEN f.path "
    "ELSE '@' || (SELECT name FROM projects p WHERE p.id = f.project_id) || '/' || f.path END"
)
ORDERS = {
    "recent": 'm.occurred_at COLLATE "C" DESC',
    "path": 'f.path COLLATE "C"',
    "oldest": 'm.occurred_at COLLATE "C"',
}
# Store.memory_page's sort keys (storage.base.MEMORY_SORTS), compared as SQLite does
# (bytes; the title without case). Ties: insertion order (file ids only grow).
PAGE_SORTS = {
    "occurred_at": 'm.occurred_at COLLATE "C"',
    "title": 'lower(m.title) COLLATE "C"',
    "type": 'm.type COLLATE "C"',
    "agent": "coalesce(m.agent, '') COLLATE \"C\"",
    "path": 'f.path COLLATE "C"',
    "confidence": "m.confidence",
}

# BM25 as SQLite's FTS5 computes it (k1 = 1.2, b = 0.75), with its column weights
# (title, keywords, text) per kind. ts_rank_cd of a one-term query with weights
# {D, C, B, A} sums the weight of every occurrence, so with the weights scaled
# into 0-1 it *is* FTS5's weighted term frequency (times the scale).
K1, B = 1.2, 0.75
WEIGHTS = {"memory": (4.0, 2.0, 1.0), "code": (4.0, 1.0, 1.0), "commit": (4.0, 1.0, 1.0)}
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def tsweights(kind: str) -> str:
    """ts_rank's weight array {D, C, B, A} for text, -, keywords, title."""
    title, keywords, text = WEIGHTS[kind]
    top = max(WEIGHTS[kind])
    return "{" + ",".join(f"{w:g}" for w in (text / top, 0.0, keywords / top, title / top)) + "}"


def lexical_text(text: str) -> str:
    """Text as FTS5's unicode61 tokenizer sees it: runs of letters and digits,
    everything else a separator (``refresh_token`` → ``refresh token``)."""
    return " ".join(_TOKEN.findall(text))


# PostgreSQL refuses a tsvector over 1 MiB (1,048,575 bytes) and skips words over
# 2,047 bytes; a chunk's lexical text is cut to stay below TSVECTOR_BUDGET.
TSVECTOR_BUDGET = 900_000
MAX_LEXEME_BYTES = 2047


def lexical_texts(title: str, keywords: str, text: str) -> tuple[str, str, str]:
    """The lexical texts (:func:`lexical_text`) of a chunk's title, keywords and
    text, the text cut at the token where the row's ``tsvector`` would pass
    :data:`TSVECTOR_BUDGET` (a memory of one huge section, unique words: FTS5
    has no such limit). Only the cut tail goes unfound by keywords; the chunk,
    its text and its vector are whole."""
    texts = [lexical_text(title), lexical_text(keywords), lexical_text(text)]
    # A token costs at most 5x its text with its separator (4 bytes a character,
    # lowercasing aside): rows far below the limit need no count.
    if sum(len(t) for t in texts) * 4 * 5 <= TSVECTOR_BUDGET:
        return texts[0], texts[1], texts[2]
    positions: dict[str, int] = {}
    size = 0
    for i, lex in enumerate(texts):
        tokens = lex.split(" ")
        for n, token in enumerate(tokens):
            key = token.lower()
            width = len(key.encode("utf-8", "surrogatepass"))
            if not token or width > MAX_LEXEME_BYTES:
                continue
            count = positions.get(key, 0)
            # a lexeme: its entry (4), text, alignment (1), position count (2);
            # then 2 bytes a position, up to 256 positions
            size += (8 + width) if count == 0 else (2 if count < 256 else 0)
            positions[key] = count + 1
            if size > TSVECTOR_BUDGET:
                texts[i] = " ".join(tokens[:n])
                return texts[0], texts[1] if i >= 1 else "", texts[2] if i >= 2 else ""
    return texts[0], texts[1], texts[2]


def token_count(*texts: str) -> int:
    """Tokens of a row, for BM25's document length (FTS5 counts all columns)."""
    return sum(len(_TOKEN.findall(t)) for t in texts)


def term_marks(kind: str, n_terms: int) -> str:
    """Select list ``m0, m1, …, total`` over row ``hits``: whether each query
    term matches, and FTS5's weighted frequency of all the terms together (the
    rank of their OR). Parameters: each term's tsquery, in order, then the OR
    of them all."""
    scale = max(WEIGHTS[kind])
    marks = [f"hits.tsv @@ %s::tsquery AS m{i}" for i in range(n_terms)]
    total = f"ts_rank_cd('{tsweights(kind)}'::float4[], hits.tsv, %s::tsquery, 0) * {scale:g} AS total"
    return ", ".join([*marks, total])


def term_frequencies(kind: str, n_terms: int) -> str:
    """Select list ``tf0, tf1, …``: FTS5's weighted frequency of each query
    term in row ``marks`` (:func:`term_marks`). ts_rank_cd of a one-term query
    with weights {D, C, B, A} sums the weight of every occurrence, so a row
    matching one term only has that term's frequency in ``total`` already; the
    rank is computed per term only for rows matching several (most rows of a
    search match one: a third of the ts_rank_cd calls for 3 terms). Parameters:
    each term's tsquery, in order."""
    scale = max(WEIGHTS[kind])
    weights = tsweights(kind)
    matched = " + ".join(f"marks.m{i}::int" for i in range(n_terms))
    return ", ".join(
        f"CASE WHEN NOT marks.m{i} THEN 0 WHEN {matched} = 1 THEN marks.total "
        f"ELSE ts_rank_cd('{weights}'::float4[], marks.tsv, %s::tsquery, 0) * {scale:g} END AS tf{i}"
        for i in range(n_terms)
    )


def idf(n_terms: int, docs: int) -> str:
    """Select list ``i0, i1, …``: FTS5's idf of each term, log((N - n + 0.5) /
    (n + 0.5)), 1e-6 where that is not positive, from the document frequencies
    ``df.d<i>``; once per query, in double precision (the inner greatest keeps
    ln's argument positive: a ratio ≤ 1 gives 1e-6 too)."""
    return ", ".join(
        f"greatest(ln(greatest(({int(docs)}::float8 - df.d{i} + 0.5) / (df.d{i} + 0.5), 1)), 1e-6) AS i{i}"
        for i in range(n_terms)
    )


def bm25(n_terms: int, avgdl: float) -> str:
    """FTS5's BM25 of row ``tfs`` (term frequencies ``tf<i>``, length
    ``n_tokens``) given the rows' mean length and each term's idf ``idf.i<i>``
    (:func:`idf`). Double precision throughout: numeric arithmetic per row
    cost more than the term frequencies."""
    norm = f"{K1!r}::float8 * (1 - {B!r}::float8 + {B!r}::float8 * tfs.n_tokens / {float(avgdl)!r}::float8)"
    return " + ".join(
        f"idf.i{i} * tfs.tf{i} * {K1 + 1!r}::float8 / (tfs.tf{i} + {norm})" for i in range(n_terms)
    )


# -- scope -----------------------------------------------------------------------------


def scope(alias: str, include_global: bool = False) -> str:
    """Rows this clone sees: its project's shared rows and its own; with
    `include_global`, the global memories of every other project too.
    Parameters: project id, clone id."""
    own = f"({alias}.project_id = %s AND ({alias}.clone_id IS NULL OR {alias}.clone_id = %s))"
    if include_global:
        return f"({own} OR ({alias}.is_global AND {alias}.clone_id IS NULL))"
    return own


def wants_global(flt: AnyFilter | None) -> bool:
    return isinstance(flt, MemoryFilter) and flt.include_global


# -- filters ---------------------------------------------------------------------------------


def page_order(sort: str, descending: bool) -> str:
    """ORDER BY for a page of memories: the sort column, then insertion order."""
    if sort not in PAGE_SORTS:
        raise ValueError(f"cannot sort memories by {sort!r}")
    direction = "DESC" if descending else "ASC"
    return f"{PAGE_SORTS[sort]} {direction}, m.file_id {direction}"


def filter_where(kind: str, flt: AnyFilter | None, clone_id: int) -> tuple[str, list[Any]]:
    """The WHERE clause of `flt` for chunks of `kind` (`clone_id`: whose anchors say stale)."""
    if isinstance(flt, MemoryFilter):
        return memory_where(flt, clone_id)
    if isinstance(flt, ChunkFilter):
        return chunk_where(kind, flt)
    return "", []


def memory_where(flt: MemoryFilter | None, clone_id: int) -> tuple[str, list[Any]]:
    """A WHERE clause over `memories m` and `files f` (as the SQLite backend's).

    `clone_id`: the clone whose code anchors decide ``flt.stale`` (anchors
    are a clone's: they point into its checkout)."""
    if flt is None:
        return "", []
    clauses: list[str] = []
    params: list[Any] = []

    def among(column: str, values: Sequence[Any], negate: bool = False) -> None:
        clauses.append(f"{'NOT ' if negate else ''}{column} = ANY(%s)")
        params.append(list(values))

    if flt.types:
        among("m.type", flt.types)
    for tag in flt.tags:
        clauses.append(
            "EXISTS (SELECT 1 FROM jsonb_array_elements_text(m.tags) t WHERE lower(t) = lower(%s))"
        )
        params.append(tag)
    for column, value in (
        ("m.agent", flt.agent),
        ("m.task", flt.task),
        ("m.content_hash", flt.content_hash),
        ("m.title", flt.title),
    ):
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    if flt.scope:
        clauses.append("(m.applies_to = %s OR m.applies_to LIKE %s)")
        params += [flt.scope, like_prefix(flt.scope)]
    if flt.scoped_only:
        clauses.append("m.applies_to < 'global' COLLATE \"C\"")
    if flt.storage:
        among("m.storage", flt.storage)
    if flt.exclude_storage:
        among("m.storage", flt.exclude_storage, negate=True)
    # The attention tier as last decided (lifecycle); a memory without one is cold.
    tier = (
        "coalesce((SELECT t.tier FROM tier_state t WHERE t.project_id = m.project_id "
        "AND t.memory_id = m.id), 'cold')"
    )
    if flt.tiers:
        among(tier, flt.tiers)
    if flt.exclude_tiers:
        among(tier, flt.exclude_tiers, negate=True)
    if flt.since:
        clauses.append("m.occurred_at >= %s")
        params.append(flt.since)
    if flt.until:
        clauses.append("m.occurred_at < %s")
        params.append(flt.until)
    if flt.ids is not None:
        among("m.id", flt.ids)
    if flt.paths is not None:
        among("f.path", flt.paths)
    if flt.sources is not None:
        among("m.source", flt.sources)
    if flt.visibility is not None:
        clauses.append("m.visibility = %s")
        params.append(flt.visibility)
    if flt.stale is not None:
        stale = (
            "m.id IN (SELECT a.memory_id FROM anchors a WHERE a.clone_id = %s AND a.stale_reason IS NOT NULL)"
        )
        clauses.append(stale if flt.stale else f"NOT {stale}")
        params.append(clone_id)
    if not flt.include_private:
        if flt.viewer:
            clauses.append("(m.owner IS NULL OR m.owner = %s)")
            params.append(flt.viewer)
        else:
            clauses.append("m.owner IS NULL")
    return " AND ".join(clauses), params


def chunk_where(kind: str, flt: ChunkFilter) -> tuple[str, list[Any]]:
    """A WHERE clause over `chunks c`, `files f` (and `commits m` for commits)."""
    clauses: list[str] = []
    params: list[Any] = []
    if flt.languages:
        clauses.append("c.language = ANY(%s)")
        params.append([lang.lower() for lang in flt.languages])
    if flt.extensions:
        clauses.append("(" + " OR ".join("f.path LIKE %s" for _ in flt.extensions) + ")")
        params += ["%." + like_escape(ext.lstrip(".").lower()) for ext in flt.extensions]
    if flt.directories:
        patterns = [glob_regex(g) for g in directory_globs(flt.directories)]
        clauses.append("(" + " OR ".join("f.path ~ %s" for _ in patterns) + ")")
        params += patterns
    if flt.paths is not None:
        clauses.append("f.path = ANY(%s)")
        params.append(sorted(flt.paths))
    if flt.roles:
        clauses.append("f.role = ANY(%s)")
        params.append(list(flt.roles))
    if flt.exclude_roles:
        clauses.append("NOT (coalesce(f.role, '') = ANY(%s))")
        params.append(list(flt.exclude_roles))
    if kind == "commit":
        if flt.since:
            clauses.append("m.ts >= %s")
            params.append(epoch(flt.since))
        if flt.until:
            clauses.append("m.ts < %s")
            params.append(epoch(flt.until))
    return " AND ".join(clauses), params


def glob_regex(glob: str) -> str:
    """SQLite GLOB semantics as an anchored POSIX regex (``*`` crosses ``/`` there too)."""
    out, i = ["^"], 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out) + "$"


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like_prefix(text: str) -> str:
    return like_escape(text) + "%"


def epoch(when: str) -> int:
    """Unix time of an ISO 8601 timestamp (naive = UTC); 0 if unreadable."""
    try:
        parsed = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return int(parsed.timestamp())
    except (OverflowError, OSError, ValueError):
        return 0


# -- joins -----------------------------------------------------------------------------


def chunk_joins(kind: str) -> str:
    """Joins from ``chunks c`` to ``files f`` (and ``memories m`` / ``commits m`` for those kinds)."""
    join = "JOIN files f ON f.id = c.file_id"
    if kind == "memory":
        return f"{join} JOIN memories m ON m.file_id = c.file_id"
    if kind == "commit":
        return f"{join} JOIN commits m ON m.file_id = c.file_id"
    return join


def chunk_from(kind: str) -> str:
    return f"FROM chunks c {chunk_joins(kind)}"


def iso_utc(column: str) -> str:
    """A timestamptz as SQLite's backend writes times (``2025-01-02T03:04:05Z``)."""
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
