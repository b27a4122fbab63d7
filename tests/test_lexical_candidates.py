"""Issue 10 (cost): BM25 candidates with frequent terms demoted, ranking inside FTS5.

A real SQLite index of 25,000 code chunks where some words are in a large
share of them (as ``self`` is in Python, or a speaker's name in every turn):
those words must not pull their rows into scoring on their own, yet chunks
that hold every query term, exact identifiers and filtered searches must
come back as the full query would rank them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.search import hybrid
from lore.storage import ChunkFilter, ChunkInput
from lore.storage.sqlite import SQLiteStore, termlists
from lore.storage.sqlite.lexical import FREQUENT_MIN_DOCS, FREQUENT_SHARE, LexicalPlan, frequent_terms, plan

# The store here is SQLite's, made by the tests, whatever backend the suite runs on.
pytestmark = pytest.mark.storage_independent

FILES, PER_FILE = 250, 100
N = FILES * PER_FILE


def _text(i: int) -> str:
    """Chunk i: 'alpha' everywhere, 'beta' in 8.6%, 'zeta' in 313 very short chunks (half with 'beta'),
    'name', 'get' and 'user' (never side by side) in half."""
    words = ["alpha", f"w{i}"] if i % 2 == 0 else ["name", "get", "alpha", f"w{i}", "user"]
    if i % 25 < 2 or i % 160 == 3:
        words.append("beta")
    if i % 80 == 3:
        words.append("zeta")
    return " ".join(words)


SPECIAL = {
    # every term of "alpha beta zeta": on 'zeta' alone it ranks below the 300
    # short 'zeta' chunks (it is longer), with 'beta' twice it ranks first
    "all_terms": "alpha beta beta zeta and a few more words here",
    "identifier": "def get_user_name(self): return alpha",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> SQLiteStore:
    path: Path = tmp_path_factory.mktemp("lexical") / "index.db"
    store = SQLiteStore(path)
    with store.transaction():
        for f in range(FILES):
            file_id = store.put_file(f"src/f{f}.py", "code", str(f), 0, 0, role="source")
            chunks = [ChunkInput(_text(f * PER_FILE + j), j, j, symbol=f"s{j}") for j in range(PER_FILE)]
            store.put_chunks(file_id, "code", chunks)
        for name, text in SPECIAL.items():
            file_id = store.put_file(f"src/{name}.py", "code", name, 0, 0, role="source")
            store.put_chunks(file_id, "code", [ChunkInput(text, 1, 1, symbol=name)])
    yield store
    store.close()


def _full_or(store: SQLiteStore, terms: list[str], limit: int) -> list[tuple[str, float]]:
    """(path, score) of the best `limit` chunks by BM25 over the OR of every term (no demotion)."""
    match = " OR ".join(f'"{t}"' for t in terms)
    rows = store.db.execute(
        "SELECT f.path, -bm25(code_fts, 4.0, 1.0, 1.0) FROM code_fts JOIN chunks c ON c.id = code_fts.rowid JOIN files f ON f.id = c.file_id "
        "WHERE code_fts MATCH ? ORDER BY bm25(code_fts, 4.0, 1.0, 1.0) LIMIT ?",
        (match, limit),
    )
    return [(r[0], r[1]) for r in rows]


def test_frequent_terms_are_the_ones_in_a_large_share_of_chunks(store):
    assert N * FREQUENT_SHARE > FREQUENT_MIN_DOCS  # the share rule applies at this size
    assert frequent_terms(store.db, "code_fts", ["alpha", "beta", "zeta", "nowhere"]) == {"alpha", "beta"}
    # the rarer terms' OR, alone and with the frequent ones (so chunks holding
    # both get their full score), and the full OR when those come back short
    assert plan(store.db, "code_fts", ["alpha", "beta", "zeta"]) == LexicalPlan(
        ['"zeta"', '("zeta") AND ("alpha" OR "beta")'], fallback='"alpha" OR "beta" OR "zeta"'
    )
    # nothing to demote (all frequent, or none): one OR, as before
    assert plan(store.db, "code_fts", ["alpha", "beta"]) == LexicalPlan(['"alpha" OR "beta"'])
    assert plan(store.db, "code_fts", ["zeta", "nowhere"]) == LexicalPlan(['"zeta" OR "nowhere"'])


def test_a_query_of_frequent_terms_only_ranks_as_the_full_query(store):
    hits = store.lexical_search("code", ["alpha", "beta"], None, 10)
    assert all("beta" in chunk.text for chunk, _ in hits)
    assert [score for _, score in hits] == [score for _, score in _full_or(store, ["alpha", "beta"], 10)]


def test_chunks_holding_rare_and_frequent_terms_get_the_full_querys_score(store):
    terms = ["alpha", "beta", "zeta"]
    hits = store.lexical_search("code", terms, None, 100)
    assert sum("beta" in chunk.text for chunk, _ in hits) > 100 // 3  # on 'zeta' alone they would tie
    # BM25 is a sum over the query's terms: the same scores as the full OR, in the same order
    assert [round(s, 9) for _, s in hits] == [round(s, 9) for _, s in _full_or(store, terms, 100)]


def test_an_exact_identifier_ranks_first_when_its_parts_are_frequent(store):
    assert frequent_terms(store.db, "code_fts", ["get", "user", "name"]) == {"get", "user", "name"}
    query = hybrid.Query.of("get_user_name")
    assert frequent_terms(store.db, "code_fts", ["get_user_name", "get"]) == {"get"}  # a phrase: rare
    found = hybrid.search(store, "code", query, limit=5, mode="bm25")
    assert found[0].chunk.path == "src/identifier.py"


def test_frequent_terms_fill_the_limit_when_rarer_ones_fall_short(store):
    with_zeta = 1 + sum(1 for i in range(N) if "zeta" in _text(i))
    hits = store.lexical_search("code", ["alpha", "zeta"], None, with_zeta + 50)
    assert len(hits) == with_zeta + 50
    assert all("zeta" in c.text for c, _ in hits[:with_zeta])  # every 'zeta' chunk first
    assert not any("zeta" in c.text for c, _ in hits[with_zeta:])


def test_a_selective_filter_returns_every_chunk_that_passes(store):
    wanted = {"src/f3.py", "src/f200.py"}  # 2 of 250 files
    hits = store.lexical_search("code", ["alpha", "zeta"], ChunkFilter(paths=wanted), 500)
    assert {chunk.path for chunk, _ in hits} == wanted
    assert len(hits) == 2 * PER_FILE


def test_a_filter_rejecting_half_still_fills_the_limit(store):
    half = {f"src/f{f}.py" for f in range(0, FILES, 2)}
    hits = store.lexical_search("code", ["alpha", "get"], ChunkFilter(paths=half), 50)
    assert len(hits) == 50
    assert {chunk.path for chunk, _ in hits} <= half


def test_chunks_asked_for_also_get_the_candidates_scores(store):
    """The keyword side of vector hits: a chunk a rarer term brings in is given
    the score the full OR gives it, after the best; one holding frequent terms
    only is not scored, as it is no keyword candidate either (unless the rarer
    terms' candidates fall short of a search's limit)."""
    terms = ["alpha", "beta", "zeta"]
    ranked = store.lexical_search("code", terms, None, 300)  # within the 'zeta' candidates
    by_id = {chunk.chunk_id: score for chunk, score in ranked}
    frequent_only = [c.chunk_id for c in store.chunks("code", range(1, 200)) if "zeta" not in c.text]
    found = store.lexical_search("code", terms, None, 20, also=[*by_id, *frequent_only])
    assert [c.chunk_id for c, _ in found[:20]] == [c.chunk_id for c, _ in ranked[:20]]
    assert {c.chunk_id: s for c, s in found} == pytest.approx(by_id)
    full = dict(_full_or(store, terms, N))
    special = {c.chunk_id: c.path for c, _ in found if c.path in {f"src/{name}.py" for name in SPECIAL}}
    assert special and all(
        s == pytest.approx(full[special[c.chunk_id]]) for c, s in found if c.chunk_id in special
    )
    # a filter: the chunks asked for are read with it too
    only = ChunkFilter(paths={"src/all_terms.py", "src/f1.py"})
    found = store.lexical_search("code", terms, only, 1, also=list(by_id))
    assert {c.path for c, _ in found} <= {"src/all_terms.py", "src/f1.py"}


def test_term_frequencies_are_kept_until_the_index_changes(tmp_path, monkeypatch):
    """A store counts a term's frequency once while its index holds (tasks
    repeat words), and counts again after any write: a term that became
    frequent is demoted from then on."""
    from lore.storage.sqlite import lexical

    monkeypatch.setattr(lexical, "FREQUENT_MIN_DOCS", 5)  # threshold: 5% of the rows
    store = SQLiteStore(tmp_path / "index.db")

    def add(name: str, texts: list[str]) -> None:
        with store.transaction():
            file_id = store.put_file(f"src/{name}.py", "code", name, 0, 0, role="source")
            store.put_chunks(file_id, "code", [ChunkInput(t, j, j) for j, t in enumerate(texts)])

    add("a", [f"alpha w{i}" + (" zeta" if i < 2 else "") for i in range(200)])
    memo = store._records.memo
    store.lexical_search("code", ["alpha", "zeta"], None, 5)
    assert (memo[("code_fts", "alpha")], memo[("code_fts", "zeta")]) == (True, False)
    memo[("code_fts", "alpha")] = "kept"  # what is known is not counted again
    store.lexical_search("code", ["alpha", "zeta"], None, 5)
    assert memo[("code_fts", "alpha")] == "kept"
    add("b", ["zeta"] * 40)
    hits = store.lexical_search("code", ["alpha", "zeta"], None, 5)
    assert memo[("code_fts", "zeta")] is True and memo[("code_fts", "alpha")] is True
    assert all("zeta" in chunk.text for chunk, _ in hits)
    store.close()


def _ranked_alike(got: list, want: list) -> None:
    """The same scores in the same order, the same chunks but for ties at the cut."""
    assert [round(s, 6) for _, s in got] == [round(s, 6) for _, s in want]
    if got:
        cut = round(got[-1][1], 6)
        assert {c.chunk_id for c, s in got if round(s, 6) > cut} == {
            c.chunk_id for c, s in want if round(s, 6) > cut
        }


QUERIES = [
    ["alpha", "beta", "zeta"],
    ["alpha", "zeta"],
    ["beta", "zeta", "w17"],
    ["alpha", "beta"],
    ["get", "user", "name"],
    ["get_user_name", "get", "alpha"],
    ["nowhere", "alpha"],
    ["zeta"],
    ["alpha", "alpha", "zeta"],  # a term given twice counts twice, in FTS5 and in the lists
]


@pytest.mark.parametrize("terms", QUERIES, ids=" ".join)
@pytest.mark.parametrize("limit", [5, 100, 400])
def test_a_process_searching_again_ranks_as_one_that_searches_once(store, monkeypatch, terms, limit):
    """A process that meets a frequent term again keeps the term's BM25 list
    and ranks from the lists; results are FTS5's, filters and the chunks
    asked for included. (Every list is paid for at its second sighting here;
    the rule that waits longer for long lists has a test of its own.)"""
    monkeypatch.setattr(termlists, "RENT_ROWS", N)
    again = SQLiteStore(store.path)  # its own process's caches
    try:
        filters = [
            None,
            ChunkFilter(paths={f"src/f{f}.py" for f in range(0, FILES, 3)}),
            ChunkFilter(paths={"src/f7.py"}),
        ]
        for flt in filters:
            store._records.clear()  # a one-shot command: FTS5 ranks
            once = store.lexical_search("code", terms, flt, limit, also=list(range(1, 60)))
            for _ in range(2):
                twice = again.lexical_search("code", terms, flt, limit, also=list(range(1, 60)))
                _ranked_alike(twice[:limit], once[:limit])
                assert {c.chunk_id: round(s, 6) for c, s in twice[limit:]} == {
                    c.chunk_id: round(s, 6) for c, s in once[limit:]
                }
        frequent = [t for t in terms if t in {"alpha", "beta", "get", "user", "name"}]
        assert all(again._records.terms.holds("code_fts", t) for t in frequent)
        assert again._records.terms.answered >= 2  # the lists ranked (at least) the unfiltered repeats
    finally:
        again.close()


def test_a_one_shot_search_reads_no_term_list(store):
    """A process's first search ranks inside FTS5, as before; later ones read a
    rarer term's list at once, and a frequent term's once the process has met
    it often enough to have paid for its list (its rows / RENT_ROWS times)."""
    store._records.clear()
    lists = store._records.terms
    store.lexical_search("code", ["zeta", "w17"], None, 10)
    store.lexical_search("code", ["alpha", "beta", "zeta"], None, 10)
    assert not any(lists.holds("code_fts", t) for t in ("alpha", "beta", "zeta", "w17"))
    beta_rows = sum(1 for i in range(N) if "beta" in _text(i)) + 1
    assert 1 < beta_rows / termlists.RENT_ROWS <= 2  # paid for at its second sighting
    store.lexical_search("code", ["beta", "zeta", "w17"], None, 10)  # 'beta' met again
    assert all(lists.holds("code_fts", t) for t in ("beta", "zeta", "w17"))
    assert not lists.holds("code_fts", "alpha")
    store.lexical_search("code", ["zeta", "w4000"], None, 10)  # rarer terms: read when first met
    assert lists.holds("code_fts", "w4000")
    # 'alpha' is in every chunk: its list is read at the sighting that pays for it, not before
    sightings = -(-(N + 2) // termlists.RENT_ROWS)
    for _sighting in range(2, sightings + 1):
        assert not lists.holds("code_fts", "alpha")
        hits = store.lexical_search("code", ["alpha", "zeta"], None, 10)
        assert [round(s, 6) for _, s in hits] == [
            round(s, 6) for _, s in _full_or(store, ["alpha", "zeta"], 10)
        ]
    assert lists.holds("code_fts", "alpha")


def test_term_lists_are_dropped_when_the_index_changes(tmp_path):
    store = SQLiteStore(tmp_path / "index.db")

    def add(name: str, texts: list[str]) -> None:
        with store.transaction():
            file_id = store.put_file(f"src/{name}.py", "code", name, 0, 0, role="source")
            store.put_chunks(file_id, "code", [ChunkInput(t, j, j) for j, t in enumerate(texts)])

    add("a", [f"alpha w{i}" + (" zeta" if i % 7 == 0 else "") for i in range(3000)])
    for _ in range(3):
        store.lexical_search("code", ["alpha", "zeta"], None, 5)
    assert store._records.terms.holds("code_fts", "alpha")
    add("b", ["zeta zeta zeta"] * 50)  # zeta's document frequency, and so every score, changes
    hits = store.lexical_search("code", ["alpha", "zeta"], None, 5)
    want = _full_or(store, ["alpha", "zeta"], 5)
    assert [round(s, 6) for _, s in hits] == [round(s, 6) for _, s in want]
    assert {c.path for c, _ in hits} == {"src/b.py"}
    store.close()


def test_a_write_to_another_kind_leaves_a_tables_lists_standing(tmp_path):
    """A memory added (an agent's session does it between searches) changes
    no code chunk: the code's lists stay, and still rank as FTS5 does."""
    store = SQLiteStore(tmp_path / "index.db")
    with store.transaction():
        file_id = store.put_file("src/a.py", "code", "a", 0, 0, role="source")
        texts = [f"alpha w{i}" + (" zeta" if i % 7 == 0 else "") for i in range(3000)]
        store.put_chunks(file_id, "code", [ChunkInput(t, j, j) for j, t in enumerate(texts)])
    for _ in range(3):
        store.lexical_search("code", ["alpha", "zeta"], None, 5)
    lists = store._records.terms
    assert lists.holds("code_fts", "alpha")
    with store.transaction():
        note = store.put_file("notes/n.md", "memory", "n", 0, 0)
        store.put_chunks(note, "memory", [ChunkInput("alpha zeta in a note", 1, 1)])
    size, answered = lists.size, lists.answered
    hits = store.lexical_search("code", ["alpha", "zeta"], None, 5)
    assert lists.answered == answered + 1 and lists.size == size  # the kept lists ranked it
    assert [round(s, 6) for _, s in hits] == [round(s, 6) for _, s in _full_or(store, ["alpha", "zeta"], 5)]
    with store.transaction():  # a code chunk: the code's lists go
        store.put_chunks(
            store.put_file("src/b.py", "code", "b", 0, 0, role="source"), "code", [ChunkInput("zeta", 1, 1)]
        )
    store.lexical_search("code", ["alpha", "zeta"], None, 5)
    assert not lists.holds("code_fts", "alpha")
    store.close()


def test_a_term_given_twice_is_one_term_and_never_damages_the_index(store):
    """Every distinct term frequent, one given twice: one OR of them (an empty
    OR of the rarer ones was an FTS5 syntax error, taken for damage: the index
    was deleted and rebuilt empty)."""
    fresh = SQLiteStore(store.path)  # a new process: FTS5 ranks its first searches
    try:
        before = fresh.counts().chunks
        for _ in range(3):
            hits = fresh.lexical_search("code", ["alpha", "alpha"], None, 5)
            assert len(hits) == 5
        assert fresh.counts().chunks == before and not fresh.notices
    finally:
        fresh.close()


def test_a_statement_fts5_cannot_parse_is_not_damage(store):
    import sqlite3

    from lore.storage.sqlite.store import is_damage

    with pytest.raises(sqlite3.OperationalError) as caught:
        store.db.execute("SELECT rowid FROM code_fts WHERE code_fts MATCH ?", ("() OR alpha",)).fetchall()
    assert "syntax error" in str(caught.value)
    assert not is_damage(caught.value)


def test_a_warmed_process_ranks_from_the_lists_from_its_first_search(store):
    """A long-running process reads its frequent terms' lists before its
    first query (an MCP server does): that query ranks from the lists, as
    FTS5 would, and warming again reads nothing more."""
    warmed = SQLiteStore(store.path)
    try:
        assert warmed.warm_search(most=1) == 1  # the most frequent first: 'alpha', in every chunk
        assert warmed._records.terms.holds("code_fts", "alpha")
        assert not warmed._records.terms.holds("code_fts", "beta")
        assert warmed.warm_search() >= 4  # 'beta', 'name', 'get', 'user'
        lists = warmed._records.terms
        assert all(lists.holds("code_fts", t) for t in ("beta", "name", "get", "user"))
        assert not lists.holds("code_fts", "zeta")  # a rarer term: read when a query meets it
        assert warmed.warm_search() == 0
        for terms in (["alpha", "beta", "zeta"], ["get", "user", "name"]):
            before = lists.answered
            hits = warmed.lexical_search("code", terms, None, 50)
            assert lists.answered == before + 1  # the lists ranked it, at the first search
            assert [round(s, 6) for _, s in hits] == [round(s, 6) for _, s in _full_or(store, terms, 50)]
    finally:
        warmed.close()


def test_terms_spelled_otherwise_share_their_list(store):
    """FTS5 folds case and stems ('Betas' is 'beta'): a query spelling a warmed
    term otherwise ranks from its list, with FTS5's scores for that spelling."""
    warmed = SQLiteStore(store.path)
    try:
        warmed.warm_search()
        lists = warmed._records.terms
        assert termlists.fts_key("Betas") == termlists.fts_key("beta") == "beta"
        assert lists.holds("code_fts", "Betas") and lists.holds("code_fts", "ALPHA")
        size = lists.size
        before = lists.answered
        hits = warmed.lexical_search("code", ["ALPHA", "Betas", "zeta"], None, 20)
        assert lists.answered == before + 1
        assert [round(s, 6) for _, s in hits] == [
            round(s, 6) for _, s in _full_or(store, ["ALPHA", "Betas", "zeta"], 20)
        ]
        zeta_rows = sum(1 for i in range(N) if "zeta" in _text(i)) + 1
        assert lists.size == size + 16 * zeta_rows  # only zeta's list was read
    finally:
        warmed.close()


def test_warming_keeps_to_its_share_of_the_budget_and_its_lists_go_last(store, monkeypatch):
    """Warming stops at its share of the lists' budget, the most frequent
    first; lists read later push out each other before a warmed one."""
    monkeypatch.setattr(termlists, "RENT_ROWS", N)  # a list is paid for at its second sighting
    alpha = 16 * (N + len(SPECIAL))  # alpha is in every chunk; name, get and user in half of them
    warmed = SQLiteStore(store.path)
    try:
        lists = warmed._records.terms
        lists.budget = lambda: int(2.4 * alpha)  # warming may take 1.2 alpha: alpha, not name as well
        warmed.warm_search()
        assert lists.holds("code_fts", "alpha")
        assert not any(lists.holds("code_fts", t) for t in ("beta", "name", "get", "user"))
        for term in ("get", "name", "user"):  # read at their second sighting: 1.5 alpha more
            for _ in range(2):
                warmed.lexical_search("code", [term, "zeta"], None, 5)
        assert lists.holds("code_fts", "alpha")  # the oldest, but warmed
        assert not lists.holds("code_fts", "get")  # the least recently used of the others
        assert lists.holds("code_fts", "name") and lists.holds("code_fts", "user")
        assert lists.size <= lists.budget()
    finally:
        warmed.close()


def test_warming_reads_the_terms_the_stemmer_would_stem_again(tmp_path):
    """FTS5 holds 'else' as 'els', which the porter stemmer stems again to
    'el': read ahead by that name, the list would be another term's (none).
    It is read by a word that stems to it, and a query's 'else' ranks from it."""
    store = SQLiteStore(tmp_path / "index.db")
    try:
        with store.transaction():
            file_id = store.put_file("src/a.py", "code", "a", 0, 0, role="source")
            texts = [
                ("else " if i % 2 else "") + f"raise w{i}" + (" zeta" if i % 9 == 0 else "")
                for i in range(3000)
            ]
            store.put_chunks(file_id, "code", [ChunkInput(t, j, j) for j, t in enumerate(texts)])
        assert termlists.fts_key("else") == "els" and termlists.fts_key("els") == "el"
        assert store.warm_search() == 2  # 'raise' (every chunk) and 'else' (half)
        lists = store._records.terms
        assert lists.holds("code_fts", "else") and lists.holds("code_fts", "raise")
        hits = store.lexical_search("code", ["else", "zeta"], None, 20)
        assert lists.answered == 1  # ranked from the lists at the first search
        assert [round(s, 6) for _, s in hits] == [
            round(s, 6) for _, s in _full_or(store, ["else", "zeta"], 20)
        ]
    finally:
        store.close()
