"""Cheap BM25 candidates from FTS5: frequent terms demoted, ranking inside FTS5.

FTS5 scores every row an OR query matches. A term found in a large share of
the chunks (a speaker's name in every turn of a conversation, ``self`` in
Python, ``fix`` in commit messages) makes it score most of the table, while
its IDF — and so what it adds to BM25 — is close to zero. Two rules keep the
cost proportional to the rows that can win:

- **Frequent terms do not bring in candidates on their own.** A term whose
  document frequency is above :data:`FREQUENT_SHARE` of the kind's chunks
  (and above :data:`FREQUENT_MIN_DOCS`, below which scoring costs little) does
  not pull its rows into scoring while rarer terms exist: the candidates are
  the chunks holding a rarer term, ranked twice — by the rarer terms' OR, and
  by ``(rarer OR) AND (frequent OR)``, whose BM25 counts every query term a
  chunk holds. FTS5's BM25 is a sum over the query's phrases, so the better
  of the two is exactly the score the full OR would give. Only chunks holding
  frequent terms alone are left out, unless those two come back short of the
  limit (rare terms in few chunks, or a filter): then the full OR fills the
  rest. A query of frequent terms only is OR-ed as before. Exact identifiers
  (``get_user``) are FTS5 phrases, whose own frequency is counted, so they
  stay in.
- **Ranking happens inside FTS5** (``ORDER BY bm25 LIMIT n`` over the FTS
  table alone); chunk rows and filters are read for the winners only,
  widening once when a filter rejects many, and falling back to one filtered
  join when the filter is very selective.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, MutableMapping, Sequence
from typing import Any

from lore.records import datarecord

# A term in more than this share of a kind's chunks is "frequent".
FREQUENT_SHARE = 0.05
# ... and in more than this many chunks (fewer cost nothing to score).
FREQUENT_MIN_DOCS = 1000
# Terms whose frequency a store keeps at most (a term's entry is ~200 bytes).
_KNOWN_MAX = 20_000


def phrase(term: str) -> str:
    """`term` as an FTS5 string (a phrase when it tokenizes to several words)."""
    return '"' + term.replace('"', '""') + '"'


@datarecord
class LexicalPlan:
    """The FTS5 MATCH expressions for one query's candidates.

    first: expressions whose ranked results, merged, are the candidates;
    fallback: the OR of every term, when `first` leaves it out and comes back
    short of the limit.
    """

    first: list[str]
    fallback: str | None = None


def plan(
    db: sqlite3.Connection,
    table: str,
    terms: Sequence[str],
    known: MutableMapping[Hashable, Any] | None = None,
) -> LexicalPlan:
    """One OR of every term; or, when some terms are frequent and others are
    not, the rarer terms' OR, alone and AND-ed with the frequent terms' OR.

    `known`: what earlier queries found of the table's size and their terms'
    frequency, while the index has not changed (kept there as found)."""
    every = " OR ".join(phrase(t) for t in terms)
    frequent = frequent_terms(db, table, terms, known)
    if not frequent or frequent >= set(terms):  # a term given twice is one term: no empty "rare" OR
        return LexicalPlan([every])
    rare = " OR ".join(phrase(t) for t in terms if t not in frequent)
    common = " OR ".join(phrase(t) for t in terms if t in frequent)
    return LexicalPlan([rare, f"({rare}) AND ({common})"], fallback=every)


def frequent_terms(
    db: sqlite3.Connection,
    table: str,
    terms: Sequence[str],
    known: MutableMapping[Hashable, Any] | None = None,
) -> set[str]:
    """The `terms` found in more than ``FREQUENT_SHARE`` (and ``FREQUENT_MIN_DOCS``) of the rows.

    Counting stops at the threshold, so a frequent term costs a bounded walk
    of its posting list and a rare one a short walk; what is counted is kept
    in `known` (a task's words come back in the next task's).
    """
    if len(terms) < 2:
        return set()
    known = {} if known is None else known
    rows, threshold = frequent_threshold(db, table, known)
    if rows <= threshold:
        return set()
    if len(known) > _KNOWN_MAX:
        known.clear()
    for term in terms:
        if (table, term) not in known:
            known[(table, term)] = rows_holding(db, table, term, threshold + 1) > threshold
    return {t for t in terms if known[(table, t)]}


def frequent_threshold(
    db: sqlite3.Connection, table: str, known: MutableMapping[Hashable, Any]
) -> tuple[int, int]:
    """(rows of `table`, the number of rows a term must be in to be frequent
    there); the rows are counted once while `known` holds."""
    if (table, None) not in known:
        known[(table, None)] = int(db.execute(f"SELECT count(*) FROM {table}_docsize").fetchone()[0])
    rows = known[(table, None)]
    return rows, max(int(rows * FREQUENT_SHARE), FREQUENT_MIN_DOCS)


def rows_holding(db: sqlite3.Connection, table: str, term: str, at_most: int = -1) -> int:
    """How many rows of `table` hold `term`, counting no further than `at_most`
    (-1: all). Counting walks the posting list without scoring it."""
    count = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
    return int(db.execute(count, (phrase(term), at_most)).fetchone()[0])
