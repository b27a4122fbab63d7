"""BM25 by term, kept between the searches of one process.

FTS5's BM25 is a sum over a query's phrases, each phrase's part depending
only on that phrase and the row (its document frequency, its count in each
column, the row's length). So a term's part can be worked out once, for
every row holding it, and kept: the next query that uses the term adds the
kept list instead of having FTS5 score those rows again. A process that
searches again and again — an MCP server, the web UI, a bench loop — meets
the same words in query after query (``request``, ``config``, ``test``, a
speaker's name), and scoring rows is most of what a keyword search costs
(~2.3 µs a row inside FTS5; a sorted lookup here costs a fraction of that).

:meth:`TermLists.rank` gives the same candidates and scores as the FTS5
expressions of :func:`lore.storage.sqlite.lexical.plan`: the rows holding a
rarer term, each scored over every term; or, when the query has no such
split, the rows holding any term. Reading a list costs about what FTS5's
scoring of its rows does, so only a process that searches again reads
them: its first search of a table ranks inside FTS5 (a one-shot command
pays nothing more than before), later ones read a rarer term's list when
they first meet it. A *frequent* term's list is long (``test`` is in 26k
of the stdlib's 38k code chunks: 50-250 ms to read), so it is read once
the queries that met the term have paid as much ranking inside FTS5 as the
list costs (ski rental: at most twice the cost of the best choice in
hindsight, and no query stalls on several long lists at once).

A list belongs to the term's FTS5 tokens, not its spelling: ``tests``,
``Test`` and ``test`` are one porter-stemmed term to FTS5, and share one list.
A long-running process (the MCP server, the web UI) can read the longest lists
before its first query (:meth:`TermLists.warm`): its first queries then rank
from the lists as later ones do, instead of paying FTS5 for those rows again.

A table's lists are good while its rows are unchanged (its ``terms_token``,
new at every write to them: a memory added leaves the code's lists standing),
and take at most :data:`MAX_BYTES` (shared among the process's
open stores), the least recently used dropped first; lists read by
:meth:`TermLists.warm` go last.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lore.storage.sqlite.lexical import phrase, rows_holding
from lore.storage.sqlite.migrations import FTS_TOKENIZER

if TYPE_CHECKING:
    import numpy as np

# What the lists may take: 16 bytes a row (its id and its score), ~3M rows. The
# frequent terms' lists of the 52,973-chunk bench index take ~15 MB.
MAX_BYTES = 48 << 20
# Frequent terms remembered as met (their names only), at most.
_MET_MAX = 20_000
# About how many of a frequent term's rows FTS5 scores when a query holding it
# ranks inside FTS5 (the rows holding the query's rarer terms).
RENT_ROWS = 2000
# Warming reads lists until they take this share of the budget (the rest is for
# the lists met later).
WARM_SHARE = 0.5


class TermRanking:
    """One query's candidates from the term lists: :meth:`first`, and :meth:`every` when it has a split."""

    def __init__(self, rare: list[np.ndarray], lists: list[tuple[np.ndarray, np.ndarray]], split: bool):
        self._rare, self._lists, self.split = rare, lists, split

    def first(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) best first of the rows holding a rarer term (any term,
        without a split), each scored over every term (FTS5's BM25, negated)."""
        return _scored(_union(self._rare), self._lists)

    def every(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) best first of the rows holding any term."""
        return _scored(_union([ids for ids, _ in self._lists]), self._lists)

    def scores_of(self, wanted: Sequence[int]) -> dict[int, float]:
        """{id: score} of the `wanted` rows that are among :meth:`first`'s."""
        import numpy as np

        rows = np.unique(np.asarray(wanted, dtype=np.int64))
        inside = np.zeros(len(rows), dtype=bool)
        for ids in self._rare:
            if len(ids):
                at = np.minimum(np.searchsorted(ids, rows), len(ids) - 1)
                inside |= ids[at] == rows
        ids, scores = _scored(rows[inside], self._lists)
        return dict(zip(ids.tolist(), scores.tolist(), strict=True))


class TermLists:
    def __init__(self, budget: Callable[[], int] | None = None) -> None:
        self.budget = budget or (lambda: MAX_BYTES)  # bytes the lists may take, asked at each read
        self.answered = 0  # searches the lists answered (the store counts them)
        self.size = 0
        # Keyed by (table, the term's FTS5 tokens: fts_key), as are _met and _rows.
        self._lists: OrderedDict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._warm: set[tuple[str, str]] = set()  # lists read by warm(): dropped last
        self._met: dict[tuple[str, str], int] = {}  # frequent terms not read yet: times met
        self._rows: dict[tuple[str, str], int] = {}  # and their rows, counted once
        self._searched: set[str] = set()  # the tables searched before
        self._tokens: dict[str, object] = {}  # the table's terms_token the lists were read at

    def holds(self, table: str, term: str) -> bool:
        """Whether `term`'s list for `table` has been read (and is kept)."""
        return (table, fts_key(term)) in self._lists

    def clear(self) -> None:
        self._lists.clear()
        self._warm.clear()
        self._met.clear()
        self._rows.clear()
        self._searched.clear()
        self._tokens.clear()
        self.size = 0

    def valid_for(self, table: str, token: object) -> None:
        """Drop `table`'s lists (and what was counted of its terms) when its
        rows changed since they were read: `token` is the table's
        ``terms_token``, new at every write to its rows (migration 12)."""
        if table in self._tokens and self._tokens[table] != token:
            for key in [k for k in self._lists if k[0] == table]:
                ids, scores = self._lists.pop(key)
                self.size -= ids.nbytes + scores.nbytes
            self._warm = {k for k in self._warm if k[0] != table}
            self._met = {k: v for k, v in self._met.items() if k[0] != table}
            self._rows = {k: v for k, v in self._rows.items() if k[0] != table}
        self._tokens[table] = token

    def warm(self, db: sqlite3.Connection, terms: list[tuple[str, str, str, int]], most: int) -> int:
        """Read the lists of `terms` ((table, its BM25 column weights as SQL,
        term, rows holding it), the longest first) not read yet, at most
        `most` of them, while the lists read so take at most
        :data:`WARM_SHARE` of the budget. Each table then ranks from the lists
        from its first search on. Returns how many were read (0: nothing left)."""
        read = 0
        for table, weights, term, rows in terms:
            self._searched.add(table)
            key = (table, fts_key(term))
            if key in self._warm:
                continue
            if read >= most or self._warm_bytes() + 16 * rows > self.budget() * WARM_SHARE:
                break
            self._list(db, table, weights, term)
            self._warm.add(key)
            read += 1
        return read

    def _warm_bytes(self) -> int:
        return sum(
            ids.nbytes + scores.nbytes for key, (ids, scores) in self._lists.items() if key in self._warm
        )

    def rank(
        self,
        db: sqlite3.Connection,
        table: str,
        weights: str,
        terms: Sequence[str],
        frequent: set[str],
    ) -> TermRanking | None:
        """The query's candidates from the term lists; None (rank inside FTS5)
        at the process's first search of `table`, and while a frequent term's
        list is not paid for yet (:meth:`_paid_for`).

        `frequent`: the terms :func:`~lore.storage.sqlite.lexical.frequent_terms`
        found frequent; `weights`: the table's BM25 column weights, as SQL.
        """

        if table not in self._searched:  # (warm() counts as a search)
            self._searched.add(table)
            return None  # a one-shot command: FTS5 ranks, no term split or read
        keys = dict(zip(terms, fts_keys(terms), strict=True))
        unread = [t for t in keys if t in frequent and (table, keys[t]) not in self._lists]
        if len(self._met) > _MET_MAX:
            self._met.clear()
        for term in unread:
            self._met[(table, keys[term])] = self._met.get((table, keys[term]), 0) + 1
        if not all(self._paid_for(db, table, t) for t in unread):
            return None
        lists = {t: self._list(db, table, weights, t) for t in dict.fromkeys(terms)}
        split = bool(frequent) and len(frequent & set(lists)) < len(lists)
        rare = [t for t in lists if t not in frequent] if split else list(lists)
        return TermRanking([lists[t][0] for t in rare], [lists[t] for t in terms], split)

    def _paid_for(self, db: sqlite3.Connection, table: str, term: str) -> bool:
        """Whether a frequent term was met often enough that ranking it inside
        FTS5 (~:data:`RENT_ROWS` rows scored each time) has cost what its list
        (a row each) costs to read: then at most twice what the best choice in
        hindsight would have cost, and no single query stalls on a long list."""
        key = (table, fts_key(term))
        met = self._met.get(key, 0)
        if met < 2:
            return False
        rows = self._rows.get(key)
        if rows is None:  # counting a posting list is ~30x cheaper than scoring it
            rows = self._rows[key] = rows_holding(db, table, term)
        return met * RENT_ROWS >= rows

    def _list(
        self, db: sqlite3.Connection, table: str, weights: str, term: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(row ids ascending, each row's BM25 part for `term`), read once."""
        import numpy as np

        key = (table, fts_key(term))
        if key in self._lists:
            self._lists.move_to_end(key)
            return self._lists[key]
        rows = db.execute(
            f"SELECT rowid, -bm25({table}, {weights}) FROM {table} WHERE {table} MATCH ?", (phrase(term),)
        ).fetchall()
        pairs = np.array(rows, dtype=np.float64).reshape(-1, 2)
        ids, scores = pairs[:, 0].astype(np.int64), np.ascontiguousarray(pairs[:, 1])
        if len(ids) > 1 and bool((ids[1:] < ids[:-1]).any()):
            order = np.argsort(ids, kind="stable")
            ids, scores = ids[order], scores[order]
        self._met.pop(key, None)  # an evicted frequent list is paid for again before it is read again
        self._lists[key] = (ids, scores)
        self.size += ids.nbytes + scores.nbytes
        budget = self.budget()
        while self.size > budget and len(self._lists) > 1:
            # The least recently used, warmed lists last (they are the longest to read again).
            old = next((k for k in self._lists if k not in self._warm and k != key), None)
            if old is None:
                old = next(iter(self._lists))
                if old == key:
                    break
            old_ids, old_scores = self._lists.pop(old)
            self._warm.discard(old)
            self.size -= old_ids.nbytes + old_scores.nbytes
        return ids, scores


_TOKENIZER: sqlite3.Connection | None = None
_TOKENIZING = threading.Lock()
_KEYS: dict[str, str] = {}  # term -> fts_key(term), bounded by _KEYS_MAX
_KEYS_MAX = 50_000


def fts_key(term: str) -> str:
    """The tokens FTS5 makes of `term` (case-folded, porter-stemmed), space-separated:
    the terms a query may spell differently ("tests", "Test") whose rows and
    BM25 parts are one term's. Split by FTS5 itself, on a table of its own in memory."""
    key = _KEYS.get(term)
    return key if key is not None else fts_keys([term])[0]


def fts_keys(terms: Sequence[str]) -> list[str]:
    """:func:`fts_key` of each of `terms`; those not split before in one pass."""
    known = {term: key for term in terms if (key := _KEYS.get(term)) is not None}
    new = [term for term in dict.fromkeys(terms) if term not in known]
    if new:
        global _TOKENIZER
        with _TOKENIZING:
            if _TOKENIZER is None:
                db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
                db.execute(f"CREATE VIRTUAL TABLE split USING fts5(x, tokenize = '{FTS_TOKENIZER}')")
                db.execute("CREATE VIRTUAL TABLE split_terms USING fts5vocab(split, 'instance')")
                _TOKENIZER = db
            tokens: dict[int, list[str]] = {}
            try:
                _TOKENIZER.executemany("INSERT INTO split(rowid, x) VALUES (?, ?)", list(enumerate(new, 1)))
                for doc, token in _TOKENIZER.execute(
                    "SELECT doc, term FROM split_terms ORDER BY doc, offset"
                ):
                    tokens.setdefault(doc, []).append(token)
            finally:
                _TOKENIZER.execute("DELETE FROM split")
            if len(_KEYS) + len(new) > _KEYS_MAX:
                _KEYS.clear()
            for doc, term in enumerate(new, 1):
                known[term] = _KEYS[term] = " ".join(tokens[doc]) if doc in tokens else term
    return [known[term] for term in terms]


# Endings tried on an FTS5 term (a stem) to find a word that stems to it.
_ENDINGS = ("", "e", "s", "es", "ed", "ing", "y", "al", "er", "ion", "ation", "ment", "ive", "ity", "ness")


def spelled(stems: dict[str, int]) -> list[tuple[str, int]]:
    """A query word for each of `stems` (FTS5's terms, e.g. read from
    fts5vocab: {term: rows}), with its rows, the most frequent first. FTS5
    stems a query's words, and the porter stemmer may stem a stem again
    (``els``, from ``else``, becomes ``el``): a term is asked for by a word
    that stems to it, found by trying common endings; a term no such word
    reaches is left out."""
    found: dict[str, str] = {}
    for ending in _ENDINGS:
        left = [stem for stem in stems if stem not in found]
        if not left:
            break
        words = [stem + ending for stem in left]
        for stem, word, key in zip(left, words, fts_keys(words), strict=True):
            if key == stem:
                found[stem] = word
    return sorted(((found[stem], rows) for stem, rows in stems.items() if stem in found), key=lambda t: -t[1])


def _union(parts: list[np.ndarray]) -> np.ndarray:
    import numpy as np

    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))


def _scored(ids: np.ndarray, lists: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """`ids` best first, with their scores summed over `lists` (a term given
    twice counts twice, as FTS5 counts a phrase each time it is given). The
    sums are added in the query's order, FTS5's AND-ed expression adds the
    rarer terms first: the last bit may differ, which can only reorder ties."""
    import numpy as np

    total = np.zeros(len(ids), dtype=np.float64)
    for term_ids, term_scores in lists:
        if not len(term_ids) or not len(ids):
            continue
        at = np.minimum(np.searchsorted(term_ids, ids), len(term_ids) - 1)
        held = term_ids[at] == ids
        total[held] += term_scores[at[held]]
    order = np.argsort(-total, kind="stable")
    return ids[order], total[order]
