"""Chunks of the PostgreSQL index and the two searches over them.

- **Lexical**: a ``tsvector`` per chunk (title weight A, keywords B, text D)
  with a GIN index; scores are BM25 computed exactly as SQLite's FTS5 does
  (:func:`.sql.bm25`), with the number of chunks and their mean length per
  scope kept in ``chunk_stats`` by statement triggers.
- **Vectors**: pgvector HNSW indexes (cosine) per common dimension; the filter
  is part of the index scan's query, and a short filtered answer is run again
  exactly, so it is never short while matching chunks exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from lore.records import datarecord
from lore.storage.base import AnyFilter, ChunkInput, ChunkRecord, embedding_text, filter_is_empty, text_hash
from lore.storage.postgres import convert, sql
from lore.storage.postgres.core import StoreCore
from lore.storage.postgres.migrations import HNSW_DIMENSIONS

if TYPE_CHECKING:
    import numpy as np

# Lexical search (see ChunkRows._candidate_terms): a term in more than this share of
# a kind's chunks, and in more than FREQUENT_MIN_DOCS of them, is frequent (as on SQLite)...
FREQUENT_SHARE = 0.05
FREQUENT_MIN_DOCS = 1000
# ... and beyond EXACT_LEXICAL_DOCS chunks, so is one in more than COMMON_TERM_ROWS; its
# document frequency is then the planner's estimate rather than a count.
EXACT_LEXICAL_DOCS = 50_000
COMMON_TERM_ROWS = 20_000
# How long a term's row estimate is reused before the planner is asked again.
ESTIMATE_SECONDS = 30.0


@datarecord
class _LexicalPlan:
    """matching: the terms whose chunks are the candidates; frequent: the terms
    that only score them; estimated_df: document frequencies taken from the
    planner's statistics rather than counted."""

    matching: list[int]
    frequent: set[int] = field(default_factory=set)
    estimated_df: dict[int, int] = field(default_factory=dict)


class ChunkRows(StoreCore):
    """Store methods about chunks and search (see :class:`lore.storage.base.Store`)."""

    def put_chunks(self, file_id: int, kind: str, chunks: Sequence[ChunkInput]) -> None:
        """Insert a file's chunks in one statement (one BM25-statistics update)."""
        if not chunks:
            return
        columns: dict[str, list[Any]] = {
            name: []
            for name in (
                "ord section symbol language start_line end_line title keywords text text_hash n_tokens "
                "lex_title lex_keywords lex_text"
            ).split()
        }
        for i, c in enumerate(chunks):
            lex_title, lex_keywords, lex_text = sql.lexical_texts(c.title, c.keywords, c.text)
            for name, value in (
                ("ord", i),
                ("section", convert.clean(c.section)),
                ("symbol", convert.clean(c.symbol)),
                ("language", c.language),
                ("start_line", c.start_line),
                ("end_line", c.end_line),
                ("title", convert.clean(c.title)),
                ("keywords", convert.clean(c.keywords)),
                ("text", convert.clean(c.text)),
                ("text_hash", text_hash(embedding_text(kind, c.title, c.text))),
                ("n_tokens", sql.token_count(c.title, c.keywords, c.text)),
                ("lex_title", lex_title),
                ("lex_keywords", lex_keywords),
                ("lex_text", lex_text),
            ):
                columns[name].append(value)
        types = "int[] text[] text[] text[] int[] int[] text[] text[] text[] text[] int[] text[] text[] text[]".split()
        unnest = ", ".join(f"%s::{t}" for t in types)
        cfg = self.text_search
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO chunks(file_id, project_id, clone_id, kind, owner_role, is_global, ord, section, "
                "symbol, language, start_line, end_line, title, keywords, text, text_hash, n_tokens, tsv) "
                "SELECT f.id, f.project_id, f.clone_id, %s, f.owner_role, f.is_global, u.ord, u.section, "
                "u.symbol, u.language, u.start_line, u.end_line, u.title, u.keywords, u.text, u.text_hash, "
                "u.n_tokens, setweight(to_tsvector(%s::regconfig, u.lex_title), 'A') || "
                "setweight(to_tsvector(%s::regconfig, u.lex_keywords), 'B') || "
                "to_tsvector(%s::regconfig, u.lex_text) "
                f"FROM files f, unnest({unnest}) AS u(ord, section, symbol, language, start_line, end_line, "
                "title, keywords, text, text_hash, n_tokens, lex_title, lex_keywords, lex_text) "
                "WHERE f.id = %s",
                (kind, cfg, cfg, cfg, *columns.values(), file_id),
            )

    def chunks(self, kind: str, ids: Sequence[int], flt: AnyFilter | None = None) -> list[ChunkRecord]:
        """The chunks with these ids that pass `flt` (order not kept)."""
        if not ids:
            return []
        where, params = self._where(kind, flt)
        rows = self._rows(
            f"SELECT {self._select(kind)} {sql.chunk_from(kind)} WHERE c.id = ANY(%s){' AND ' + where if where else ''}",
            (*self._select_params(kind), list(ids), *params),
        )
        return [convert.chunk_record(kind, row) for row in rows]

    def first_chunk(self, path: str) -> ChunkRecord | None:
        row = self._one(
            f"SELECT {sql.CHUNK_COLUMNS.format(path='f.path')} FROM chunks c JOIN files f ON f.id = c.file_id "
            f"WHERE {sql.scope('f')} AND f.path = %s ORDER BY f.clone_id NULLS FIRST, c.ord LIMIT 1",
            (*self._scope, path),
        )
        return convert.chunk_record("code", row) if row else None

    def _select(self, kind: str) -> str:
        path = sql.FOREIGN_PATH if kind == "memory" else "f.path"
        columns = sql.CHUNK_COLUMNS.format(path=path)
        if kind == "memory":
            return f"{columns}, {sql.MEMORY_COLUMNS.format(path=path)}"
        if kind == "commit":
            return f"{columns}, {sql.COMMIT_COLUMNS}"
        return columns

    def _select_params(self, kind: str) -> tuple[str, ...]:
        return (self.project_id, self.project_id) if kind == "memory" else ()

    def warm_search(self, most: int | None = None) -> int:
        """Nothing to read ahead: PostgreSQL keeps its own caches (shared buffers)."""
        return 0

    def lexical_search(
        self,
        kind: str,
        terms: Sequence[str],
        flt: AnyFilter | None,
        limit: int,
        also: Sequence[int] = (),
    ) -> list[tuple[ChunkRecord, float]]:
        """BM25 (computed as SQLite's FTS5 does) over chunks of `kind` matching
        any of `terms`; (chunk, score), best first, then the chunks of `also`
        the candidates' terms match but that are not among them.

        As on SQLite (:mod:`lore.storage.sqlite.lexical`), frequent terms score
        the candidates the rarer terms find but bring in none of their own; if
        that comes back short of `limit`, every term brings in candidates."""
        if not terms or limit <= 0:
            return []
        queries = self._term_queries(terms)
        if not queries:
            return []
        glob = sql.wants_global(flt)
        docs, tokens = self._chunk_stats(kind, glob)
        docs = max(docs, 1)
        plan = self._candidate_terms(kind, queries, docs)
        found = self._bm25(kind, queries, plan, flt, limit, docs, tokens)
        if len(found) < limit and plan.frequent:
            found = self._bm25(
                kind, queries, _LexicalPlan(list(range(len(queries)))), flt, limit, docs, tokens
            )
        shown = {chunk.chunk_id for chunk, _ in found}
        rest = [i for i in dict.fromkeys(also) if i not in shown]
        if len(found) < limit or not rest:  # short: every chunk the terms match is there already
            return found
        scores = self._scores_of(kind, queries, plan, glob, docs, tokens, rest)
        chunks = {c.chunk_id: c for c in self.chunks(kind, list(scores), flt)} if scores else {}
        extra = [(chunks[i], score) for i, score in scores.items() if i in chunks]
        return found + sorted(extra, key=lambda hit: -hit[1])

    def _bm25(
        self,
        kind: str,
        queries: list[str],
        plan: _LexicalPlan,
        flt: AnyFilter | None,
        limit: int,
        docs: int,
        tokens: int,
    ) -> list[tuple[ChunkRecord, float]]:
        """Candidates holding a term of `plan.matching`, each scored by BM25
        over every query term, best `limit` first (one statement; a filter
        that rejects most of the best rows takes a second)."""
        where, params = self._where(kind, flt)
        scoring, scoring_params = self._scoring(kind, queries, plan, sql.wants_global(flt), docs, tokens)
        # Rank first, then read the rows of the winners only (reading every
        # scored row's chunk, file and memory before sorting cost most of a
        # search at 300k chunks). A filter reads those rows, so it is checked
        # on the best `want` first, and on every scored row only if that
        # comes back short while more rows were scored.
        want = limit if not where else limit * 3 // 2 + 16
        query = (
            f"{scoring}, best AS MATERIALIZED (SELECT id, score FROM scored ORDER BY score DESC, id LIMIT %s) "
            f"SELECT {self._select(kind)}, (SELECT count(*) FROM best), best.score FROM best "
            f"JOIN chunks c ON c.id = best.id {sql.chunk_joins(kind)}{' WHERE ' + where if where else ''} "
            "ORDER BY best.score DESC, c.id LIMIT %s"
        )
        rows = self._rows(query, (*scoring_params, want, *self._select_params(kind), *params, limit))
        short = bool(where) and len(rows) < limit
        if short and (int(rows[0][-2]) if rows else self._best_count(scoring, scoring_params, want)) >= want:
            query = (
                f"{scoring} SELECT {self._select(kind)}, 0, scored.score FROM scored JOIN chunks c "
                f"ON c.id = scored.id {sql.chunk_joins(kind)} WHERE {where} "
                "ORDER BY scored.score DESC, c.id LIMIT %s"
            )
            rows = self._rows(query, (*scoring_params, *self._select_params(kind), *params, limit))
        return [(convert.chunk_record(kind, row), float(row[-1])) for row in rows]

    def _scoring(
        self,
        kind: str,
        queries: list[str],
        plan: _LexicalPlan,
        glob: bool,
        docs: int,
        tokens: int,
        only: Sequence[int] | None = None,
    ) -> tuple[str, tuple[Any, ...]]:
        """The CTEs ending in ``scored(id, score)``: BM25 over every query term
        of the chunks holding a term of `plan.matching` (of the chunks `only`
        names, when given), and their parameters."""
        avgdl = max(tokens / docs, 1.0)
        n = len(queries)
        counts: list[str] = []
        count_params: list[Any] = []
        for i, q in enumerate(queries):
            if i in plan.estimated_df:
                counts.append(f"{plan.estimated_df[i]}::bigint AS d{i}")
            elif i in plan.frequent:  # not among the candidates: counted over the index
                counts.append(
                    f"(SELECT count(*) FROM chunks c WHERE c.kind = %s AND {sql.scope('c', glob)} "
                    f"AND c.tsv @@ %s::tsquery) AS d{i}"
                )
                count_params += [kind, *self._scope, q]
            else:
                counts.append(f"count(*) FILTER (WHERE marks.m{i}) AS d{i}")
        any_term = " | ".join(f"({queries[i]})" for i in plan.matching)
        every_term = " | ".join(f"({q})" for q in queries)
        restrict = " AND c.id = ANY(%s)" if only is not None else ""
        scoring = (
            "WITH hits AS (SELECT c.id, c.tsv, c.n_tokens FROM chunks c "
            f"WHERE c.kind = %s AND {sql.scope('c', glob)} AND c.tsv @@ %s::tsquery{restrict}), "
            f"marks AS MATERIALIZED (SELECT hits.id, hits.n_tokens, hits.tsv, {sql.term_marks(kind, n)} "
            "FROM hits), "
            f"df AS (SELECT {', '.join(counts)} FROM marks), "
            f"idf AS MATERIALIZED (SELECT {sql.idf(n, docs)} FROM df), "
            f"tfs AS (SELECT marks.id, marks.n_tokens, {sql.term_frequencies(kind, n)} FROM marks), "
            f"scored AS (SELECT tfs.id, {sql.bm25(n, avgdl)} AS score FROM tfs, idf)"
        )
        chosen = (list(only),) if only is not None else ()
        return scoring, (kind, *self._scope, any_term, *chosen, *queries, every_term, *count_params, *queries)

    def _scores_of(
        self,
        kind: str,
        queries: list[str],
        found: _LexicalPlan,
        glob: bool,
        docs: int,
        tokens: int,
        chunk_ids: list[int],
    ) -> dict[int, float]:
        """BM25 of the given chunks among the candidates `found` brings in: every
        term's document frequency counted over the index (or, beyond
        ``EXACT_LEXICAL_DOCS`` chunks, the planner's estimate for a frequent
        one, as there), the term frequencies read for these rows only."""
        counted = {i for i in range(len(queries)) if i not in found.estimated_df}
        plan = _LexicalPlan(found.matching, counted, found.estimated_df)
        scoring, params = self._scoring(kind, queries, plan, glob, docs, tokens, only=chunk_ids)
        rows = self._rows(f"{scoring} SELECT id, score FROM scored", params)
        return {int(r[0]): float(r[1]) for r in rows}

    def _best_count(self, scoring: str, params: tuple[Any, ...], want: int) -> int:
        """How many rows `scoring` scores, up to `want` (when a filter left none to say)."""
        row = self._one(f"{scoring} SELECT count(*) FROM (SELECT 1 FROM hits LIMIT %s) h", (*params, want))
        return int(row[0]) if row else 0

    def _candidate_terms(self, kind: str, queries: list[str], docs: int) -> _LexicalPlan:
        """Which terms bring in candidates, and how the others' document
        frequencies are known.

        A term the planner's statistics say is in more than
        ``FREQUENT_SHARE`` of the chunks and more than ``FREQUENT_MIN_DOCS``
        of them (beyond ``EXACT_LEXICAL_DOCS`` chunks: more than
        ``COMMON_TERM_ROWS``) brings in no candidates while rarer terms exist;
        if every term is that frequent, the rarest one alone does. Up to
        ``EXACT_LEXICAL_DOCS`` chunks a frequent term's document frequency is
        counted, so scores equal FTS5's; beyond, the planner's estimate is used
        (counting would read most of the index)."""
        everything = list(range(len(queries)))
        if docs <= FREQUENT_MIN_DOCS or len(queries) < 2:
            return _LexicalPlan(everything)
        threshold = max(FREQUENT_MIN_DOCS, min(FREQUENT_SHARE * docs, COMMON_TERM_ROWS))
        estimates = [self._estimated_rows(kind, q) for q in queries]
        frequent = {i for i, e in enumerate(estimates) if e > threshold}
        if len(frequent) == len(queries):
            frequent.discard(min(everything, key=estimates.__getitem__))
        estimated = {i: min(estimates[i], docs) for i in frequent} if docs > EXACT_LEXICAL_DOCS else {}
        return _LexicalPlan([i for i in everything if i not in frequent], frequent, estimated)

    def _estimated_rows(self, kind: str, tsquery: str) -> int:
        """The planner's estimate of the chunks matching `tsquery` (from ANALYZE's
        most common lexemes; no scan), re-read after ``ESTIMATE_SECONDS``: a
        long-lived server must see the statistics of the rows indexed since."""
        key = f"{kind}\x00{tsquery}"
        cached = self._estimates.get(key)
        if cached is not None and time.monotonic() - cached[0] < ESTIMATE_SECONDS:
            return cached[1]
        from psycopg import sql as pgsql

        # Literals, not parameters: a generic plan would not look at the values.
        statement = pgsql.SQL(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM chunks c WHERE c.kind = {} AND c.tsv @@ {}::tsquery"
        ).format(pgsql.Literal(kind), pgsql.Literal(tsquery))
        row = self._run(lambda conn: conn.execute(statement).fetchone())
        plan = row[0] if row else [{"Plan": {"Plan Rows": 0}}]
        estimate = int(plan[0]["Plan"]["Plan Rows"])
        self._estimates[key] = (time.monotonic(), estimate)
        return estimate

    def _term_queries(self, terms: Sequence[str]) -> list[str]:
        """Each term as a tsquery (phrases for terms of several tokens), in order;
        terms with no searchable token are left out."""
        missing = [t for t in dict.fromkeys(terms) if t not in self._tsqueries]
        if missing:
            rows = self._rows(
                "SELECT t, phraseto_tsquery(%s::regconfig, l)::text FROM unnest(%s::text[], %s::text[]) AS u(t, l)",
                (self.text_search, missing, [sql.lexical_text(t) for t in missing]),
            )
            self._tsqueries.update({r[0]: r[1] for r in rows})
        return [self._tsqueries[t] for t in terms if self._tsqueries.get(t)]

    def vector_search(
        self, kind: str, model: str, query: np.ndarray, flt: AnyFilter | None, limit: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the chunks nearest `query` that pass `flt`, best first.

        The filter is part of the HNSW scan's query: with pgvector's iterative
        scans the index keeps producing candidates until `limit` rows pass it.
        If that still comes back short (a very selective filter), the same
        query runs exactly, so a filtered search is never short while
        matching chunks exist.
        """
        import numpy as np

        if limit <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32)
        dim = int(vector.shape[0])
        found = self._nearest(kind, model, vector, flt, limit, exact=dim not in HNSW_DIMENSIONS)
        if len(found) < limit and dim in HNSW_DIMENSIONS:
            found = self._nearest(kind, model, vector, flt, limit, exact=True)
        return found

    def _nearest(
        self, kind: str, model: str, vector: np.ndarray, flt: AnyFilter | None, limit: int, *, exact: bool
    ) -> list[tuple[int, float]]:
        dim = int(vector.shape[0])
        # The HNSW index is on vector::vector(dim); the bare column is not indexed,
        # so ordering by it is an exact scan over the rows that pass the filter.
        distance = (
            "(e.vector <=> %s::vector)" if exact else f"(e.vector::vector({dim}) <=> %s::vector({dim}))"
        )
        where, params = self._where(kind, flt)
        glob = sql.wants_global(flt)
        joins = sql.chunk_joins(kind) if not filter_is_empty(flt) else ""
        query = (
            f"SELECT id, 1 - d FROM (SELECT c.id, {distance} AS d FROM embeddings e "
            f"JOIN chunks c ON c.text_hash = e.text_hash {joins} "
            f"WHERE e.model = %s AND e.dim = {dim} AND c.kind = %s AND {sql.scope('c', glob)}"
            f"{' AND ' + where if where else ''} ORDER BY {distance} LIMIT %s) nn ORDER BY d, id"
        )
        rows = self._rows(query, (vector, model, kind, *self._scope, *params, vector, limit))
        return [(int(r[0]), float(r[1])) for r in rows]

    def vector_scores(
        self, kind: str, model: str, query: np.ndarray, chunk_ids: Sequence[int]
    ) -> dict[int, float]:
        """{chunk id: cosine with `query`} of the given chunks that have a vector."""
        import numpy as np

        if not chunk_ids:
            return {}
        vector = np.asarray(query, dtype=np.float32)
        rows = self._rows(
            "SELECT c.id, 1 - (e.vector <=> %s::vector) FROM chunks c "
            "JOIN embeddings e ON e.text_hash = c.text_hash AND e.model = %s AND e.dim = %s "
            f"WHERE c.kind = %s AND c.id = ANY(%s) AND {sql.scope('c', True)}",
            (vector, model, int(vector.shape[0]), kind, list(chunk_ids), *self._scope),
        )
        return {int(r[0]): float(r[1]) for r in rows}

    def vectors_ahead(self, kind: str, model: str) -> Callable[[np.ndarray], None] | None:
        """None: the server does the vector pass (pgvector), nothing to do ahead."""
        return None

    def vector_count(self, kind: str, model: str) -> int:
        row = self._one(
            f"SELECT count(*) FROM chunks c WHERE c.kind = %s AND {sql.scope('c')} AND EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = c.text_hash)",
            (kind, *self._scope, model),
        )
        return int(row[0]) if row else 0
