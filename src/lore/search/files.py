"""Likely files for a task: code matches, similar past work, and what each file is for.

One ranking serves `lore code --files-only`, recall's "Likely files" and
the MCP tools:

1. **Code evidence** — the one hybrid search over code chunks. From its
   pool, each file gets two strengths, one from its chunks' fused scores
   and one from their keyword relevances alone: its best chunk plus half
   its next three (a file with several good chunks is stronger evidence
   than one lucky chunk).
2. **History evidence** — the one hybrid search over past commits; every
   similar commit adds its relevance to each file it touched (as the file is
   named today; files since deleted are not offered), divided by the number
   of files the commit touched (a sweep across 80 files says little about
   each), half for merges (their files are their merged commits' too);
   commits touching more than ``MAX_COMMIT_FILES`` files are ignored. No
   discount for age: every half-life tried (30 days to 1,000) lowered the
   ten time-split sets' MRR@10 (docs/benchmarks.md, stop 51).
3. The three file rankings (the code's fused evidence, what it says in
   words, what past work touched) are fused by reciprocal rank with a small
   k (``FILE_RRF_K`` = 2), so a file at the top of any list ranks high: a
   file that every similar past change touched is strong evidence even
   when its code matches few of the task's words, and a file holding the
   task's exact words is not averaged away by the meaning side. With k =
   60, files in the middle of every list beat the top of one. Meaning
   enters through the fused chunk scores only, where the adaptive fusion
   has weighed it for this query; a vote of its own (cosines ranked apart)
   overrode that weighing and cost MRR@10 on the repositories whose code
   the model reads poorly (ten time-split sets: mean MRR@10 .703 → .710,
   R@1 .484 → .494). In bm25 or vector mode the one code ranking and
   history are fused the same way.
4. **What the task names** — a task written as a commit subject often
   starts with the part of the project it changes: ``printer: trim the line
   terminator``, ``fix(middleware/jwt): ...``, ``ignore/types: add *.rbw``
   (Conventional Commits' scope, the kernel's "subsystem:" prefix). The
   candidate files whose folders or name hold the scope's words form one
   more list (most of its words first, then by the fused evidence), fused
   like the others. Change types (``fix:``, ``docs:``, ``chore:``...) name
   no area. On the time-split sets whose history uses scopes (Go,
   TypeScript, Rust, C) this raised MRR@10 by .01-.06; the others are
   unchanged. A capitalised word ("Note:", "Error:") is a label, not an
   area. Likewise the candidate files a task names anywhere, by file name
   (``context.go``) or dotted module (``flask.helpers``, also in a
   qualified name), form a list of their own (MRR@10 +.001-.011 on gin,
   click, ripgrep, rack and jq; the others unchanged).
5. **Roles** — source files first: files are ranked tier by tier, source
   first, then tests and examples, config, docs, and last changelogs,
   vendored and generated files (:data:`ROLE_WEIGHT`); the fused evidence
   orders files within a tier. A role the query is about ("update the
   docs", "changelog"...) or a role filter asks for joins the source tier
   at half its fused evidence. Tests stay in their tier, right after
   source, even when asked for: a source file lists its tests beside it,
   and "add tests" in a task describes the change more often than its
   target; a test file the task names by its name (``fix
   tests/test_warm.py``) is ranked with source. On five time-split
   repositories this strict order beat role weights multiplied into the
   fused score.

The score shown for a file is the relevance of its own evidence: its best
chunk's (the score ``lore code`` shows that chunk with) or its best similar
commit's, whichever is higher. Relevance is the adaptive fusion's calibrated
score from the same candidates, even when the evidence is ranked by RRF
(whose scores say where a chunk ranked: the first is ~1 whatever the task),
so a task foreign to the repository shows weak files as weak, and recall's
floor leaves them out. It is not the ranking: roles, words, history and
names order the files, so a test or a doc may be shown more relevant than
the source file ranked above it. What recall packs files by is
:attr:`FileMatch.order`: the evidence weighted by role, raised to the best
ranked after it over the whole ranking (never depending on how many files
are asked for), so the pack keeps this order.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import NamedTuple

from lore.records import datarecord
from lore.search import hybrid
from lore.search.text import MAX_EXACT_SCAN, identifiers
from lore.storage import ChunkFilter, ChunkRecord, Store

LOOKUP_WORDS = 3
STABLE_FILES = 10  # the files ranked the same whatever the limit (recall and `lore code` show 10)
FILE_RRF_K = 2  # five time-split repositories (bench/files_lab.py): flat from 1 to 3, worse from 10
CODE_CHUNKS = 150  # code chunks read for file evidence (dev sets: flat from 150 to 300)
HISTORY_COMMITS = 100
MAX_COMMIT_FILES = 100
MERGE_WEIGHT = 0.5
CHUNKS_PER_FILE = 3  # beyond the best, each adding half its score
ROLE_WEIGHT = {
    "source": 1.0,
    "test": 0.5,
    "example": 0.5,
    "config": 0.4,
    "docs": 0.3,
    "changelog": 0.2,
    "community": 0.2,
    "generated": 0.2,
    "vendored": 0.2,
}
# An asked-for role's share in the source tier (0.8 put docs above source for "...and update the docs").
ASKED_ROLE_WEIGHT = 0.5
# Words that make a query about a role (then that role is not weighted down).
_ROLE_WORDS = {
    "test": r"tests?|testing|pytest|unittest|specs?|fixtures?|coverage",
    "docs": r"docs?|documentation|documented|readme|guide|tutorial|docstrings?|sphinx|rst|markdown",
    "changelog": r"changelog|changes|release notes?|news|whatsnew",
    "example": r"examples?|samples?|demo",
    "config": r"config(uration)?|settings|ci|workflows?|docker(file)?|makefile|pyproject|package\.json|tox",
    "community": r"licen[cs]e|contributing|code of conduct|security policy",
}
_ROLE_PATTERNS = {role: re.compile(rf"\b(?:{words})\b", re.I) for role, words in _ROLE_WORDS.items()}
# "area: ..." or "type(area): ..." at the start of a task (a commit subject's scope).
_SCOPE = re.compile(
    r"\s*(?:[A-Za-z]+\((?P<scope>[^()\n]{1,80})\)|(?P<bare>[\w./-]{1,60}(?:, ?[\w./-]{1,60}){0,4}))!?:\s"
)
# Conventional change types: they say what kind of change, not where.
_CHANGE_TYPES = frozenset(
    "feat feature fix fixes bugfix hotfix docs doc chore refactor perf test tests build ci style "
    "revert release wip deps merge".split()
)


@datarecord
class FileMatch:
    """A file likely to matter for a query, with its evidence."""

    path: str
    score: float
    role: str | None
    best: hybrid.Scored | None = None  # its most relevant code chunk, when code matched
    commits: int = 0  # similar past commits that touched it
    code_rank: int | None = None
    history_rank: int | None = None
    tests: list[str] = field(default_factory=list)
    # Its most relevant chunks (at most CHUNKS_PER_FILE + 1), each with its calibrated relevance.
    chunks: list[tuple[hybrid.Scored, float]] = field(default_factory=list)
    # The score that follows the ranking (role-weighted evidence, lifted): what recall packs by.
    order: float = 0.0
    # Some of its evidence holds the query's words (else it was found by meaning alone).
    worded: bool = True


class _FileCode(NamedTuple):
    """A file's code evidence."""

    strength: float  # of its chunks' fused scores: what ranks it
    relevance: float  # its most relevant chunk's calibrated relevance: what it is shown with
    chunks: list[tuple[hybrid.Scored, float]]  # its most relevant chunks first, with their relevance


def roles_asked(query: str) -> set[str]:
    """The file roles a query is about, by its words ("update the docs" → docs)."""
    head = query[:MAX_EXACT_SCAN]  # a role named in a task is named early (a 100 KB paste: 0.2 s)
    return {role for role, pattern in _ROLE_PATTERNS.items() if pattern.search(head)}


def is_lookup(query: hybrid.Query) -> bool:
    """A query of at most :data:`LOOKUP_WORDS` words looks something up (an
    identifier, a path, "staging password"); a longer one describes a task."""
    return len(query.text.split()) <= LOOKUP_WORDS


def lookup_names(query: hybrid.Query, *, tasks: bool = False) -> tuple[list[str], set[str]]:
    """What a query names: its exact identifiers and paths, lower case, or its
    one word when that is an identifier (``lore code redact``); and the same
    as the query wrote them. Nothing for a task (not :func:`is_lookup`)
    unless `tasks`."""
    if not tasks and not is_lookup(query):
        return [], set()
    tokens = [token for token in query.exact if " " not in token]
    word = query.text.strip()
    if (declared := _DECLARATION.fullmatch(word)) is not None:  # `def echo`, `class Option`: the name
        word = declared["name"]
    if not tokens and _IDENTIFIER.fullmatch(word):
        tokens = [word.lower()]
    wanted = set(tokens)
    return tokens, {w for w in identifiers(query.text) if w.lower() in wanted}


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
# A lookup written as the declaration it looks for (`def echo`, `pub fn parse()`, `class Option:`).
_DECLARATION = re.compile(
    r"(?:(?:async|export|pub|public|private|static|abstract)\s+)*"
    r"(?:def|class|func|fn|function|struct|interface|type|enum|trait|impl|module|const|let|var|val|macro)"
    r"\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*\)?)?\s*:?",
    re.IGNORECASE,
)


def lookup_match(chunk: ChunkRecord, tokens: list[str], written: Iterable[str] = ()) -> int:
    """How `chunk` answers a lookup of `tokens` (lower case; `written`: the
    identifiers as the query wrote them): 3, its file is named by path, or its
    text defines one as written (``testPersistentHooks``, not Go's other
    ``TestPersistentHooks``); 2, in another case; 1, its unit is named so
    without the definition in its text (a later window of a long function); 0, no.

    A definition is a declaration at the start of a line (``def``, ``func
    (e *Engine) Name``, ``public static Gson create``, ``pub fn``, ``export
    const``, ``#define``) or an assignment at a module's top level
    (``MAX_LIMIT = 50``): not a keyword argument on a line of its own
    (``configure=partial(...)``), a local variable, or a comment's words."""
    if not tokens:
        return 0
    if path_named(chunk.path, tokens):  # `lore code package.json`: the file itself, first
        return 3
    # A token's last dotted part is a name (`CliRunner.invoke`), unless it is a file's extension (`utils.py`).
    names = {t.rsplit(".", 1)[-1] for t in tokens if "/" not in t and not _file_name(t)} - {""}
    if names:
        as_written = {w.rsplit(".", 1)[-1] for w in written}
        found = 0
        for match in _definitions(tuple(sorted(names))).finditer(chunk.text):
            if (match.group("declared") or match.group("assigned")) in as_written:
                return 3
            found = 2
        if found:
            return found
    symbols = (chunk.symbol or "").lower().split(", ")
    return int(any(s and (s in tokens or s.rsplit(".", 1)[-1] in tokens) for s in symbols))


def _file_name(token: str) -> bool:
    """Whether a dotted token names a file (``package.json``, ``utils.py``): its
    last part is an extension the indexer knows, or one of settings and data."""
    from lore.index.chunker import language_for

    last = token.rsplit(".", 1)[-1]
    return "." in token and (language_for(token) is not None or last in _DATA_EXTENSIONS)


_DATA_EXTENSIONS = frozenset("json jsonc yaml yml toml ini cfg conf lock txt md rst xml csv env".split())

# Words that declare something, across the chunker's languages (lower case in all of them).
_DECLARING = (
    r"def|class|func|fn|fun|function|struct|interface|type|trait|enum|impl|module|macro|"
    r"const|let|var|val|static|public|private|protected|internal|override|async|export|default|"
    r"object|abstract|final|open|sealed|inline|unsafe|extern|virtual|readonly|declare|pub(?:\([\w:]+\))?|"
    r"\#[ \t]*define"
)


@functools.lru_cache(maxsize=256)
def _definitions(names: tuple[str, ...]) -> re.Pattern[str]:
    """A declaration of one of `names` (lower case; matched in any case) at
    the start of a line, after decorators and declaring words, with a Go
    receiver or up to two words of type between them; or an assignment to
    one at column 0."""
    either = "|".join(re.escape(name) for name in names)
    return re.compile(
        rf"^[ \t]*(?:@[\w.]+(?:\([^()\n]*\))?[ \t]+)*(?:(?:{_DECLARING})[ \t]+)+"
        rf"(?:\([^()\n]*\)[ \t]*|[\w<>\[\]?,.*&]+[ \t]+){{0,2}}(?P<declared>(?i:{either}))\b"
        rf"|^(?P<assigned>(?i:{either}))[ \t]*(?::[^=\n]+)?=(?!=)",
        re.M,
    )


def path_named(path: str, tokens: list[str]) -> bool:
    """Whether a query's exact tokens name `path` (whole, or its last parts)."""
    low = path.lower()
    return any(
        ("/" in token or "." in token) and (low == token or low.endswith("/" + token)) for token in tokens
    )


def scope_words(query: str) -> list[str]:
    """The words of the area a commit-style task names (``ignore/types: ...``
    → ignore, types; ``fix(jsx): ...`` → jsx; ``fix: ...`` → none)."""
    found = _SCOPE.match(query)
    if found is None:
        return []
    scope = found.group("scope") or found.group("bare")
    if found.group("bare") and (scope.lower() in _CHANGE_TYPES or _is_label(scope)):
        return []
    words = (w for w in re.split(r"[/,\s]+", scope.lower()) if w and w not in _CHANGE_TYPES)
    return list(dict.fromkeys(words))


def _is_label(word: str) -> bool:
    """A capitalised word before a colon ("Note:", "Error:", "TypeError:",
    "CLI:") labels a sentence; an area is written in lower case ("printer:")
    or as a path ("README.md:", "src/App:")."""
    return any(c.isupper() for c in word) and not any(c in word for c in "/._")


# A file name or dotted module in a task: context.go, flask.helpers, Gson.java.
# Matches start at a word's start and never backtrack (a long word is linear).
_DOTTED = re.compile(r"(?<![\w.-])[A-Za-z_][\w-]*+(?:\.[A-Za-z_][\w-]*+)+")
# Parts of a dotted name looked at (a module is rarely deeper; "a.a.a..." is not).
_MAX_NAME_PARTS = 12
# A package's own file stands for its folder: flask/json/__init__.py is flask.json.
_PACKAGE_FILES = frozenset({"__init__", "index", "mod", "lib"})


def _named(paths: Iterable[str], query: str) -> dict[str, float]:
    """{path: 1.0} for the paths a query names by file name or dotted module:
    any tail of two or more parts of the path's module (``flask.helpers``
    for ``src/flask/helpers.py``), also as the start of a qualified name
    (``flask.helpers.get_root_path``)."""
    names: set[str] = set()
    for token in _DOTTED.findall(query):
        parts = token.lower().split(".", _MAX_NAME_PARTS)[:_MAX_NAME_PARTS]
        names.update(".".join(parts[:end]) for end in range(2, len(parts) + 1))
    if not names:
        return {}
    out = {}
    for path in paths:
        parts = path.lower().split("/")
        stem = parts[-1].rsplit(".", 1)[0]
        module = [*parts[:-1], stem] if stem not in _PACKAGE_FILES else parts[:-1]
        tails = {".".join(module[i:]) for i in range(len(module) - 1)}  # two parts or more
        if parts[-1] in names or not names.isdisjoint(tails):
            out[path] = 1.0
    return out


def _named_in_capitals(paths: Iterable[str], query: str, everything: Callable[[], Iterable[str]]) -> set[str]:
    """The files among `paths` that the task names by one of a project's
    conventional document names in capitals, written as the file's is
    (``README`` for ``README.md``, ``CHANGES`` for ``CHANGES.rst``; not
    ``README.ja.md``), if they are the shallowest of that name in the project
    (`everything`: every indexed path): "the README" is the project's, not an
    example's. Only the first sentence of the task's first line is read: it
    says what the task is about, where "see the README" or "update the
    CHANGELOG too" further on leaves it about code."""
    title = query.lstrip().split("\n", 1)[0][:MAX_EXACT_SCAN]
    words = {word for word in _WORD.findall(_SENTENCE_END.split(title, 1)[0]) if word in _DOC_NAMES}
    if not words:
        return set()
    depth: dict[str, int] = {}
    for path in everything():
        stem = _stem(path)
        if stem in words:
            depth[stem] = min(depth.get(stem, path.count("/")), path.count("/"))
    return {p for p in paths if depth.get(_stem(p)) == p.count("/")}


def _stem(path: str) -> str:
    """A file's name without its last extension (``README.md`` → ``README``)."""
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


# Names a project's own documents have by convention, written in capitals. Not
# any capitals: "Fix JSON parsing in the API client" names no API.md.
_DOC_NAMES = frozenset(
    "README CHANGES CHANGELOG HISTORY NEWS RELEASES LICENSE LICENCE COPYING NOTICE CONTRIBUTING "
    "AUTHORS INSTALL SECURITY CODE_OF_CONDUCT UPGRADING MIGRATION FAQ".split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


# A word on its own (not part of a dotted name: ``CHANGES.rst`` is named as a path is).
_WORD = re.compile(r"(?<![\w.-])[A-Za-z][A-Za-z0-9_]*+(?![\w-]|\.\w)")


def _in_scope(paths: Iterable[str], words: list[str]) -> dict[str, float]:
    """{path: share of the scope's words that name one of its folders, its
    name or its name without the extension}, for paths with any."""
    out = {}
    for path in paths:
        parts = path.lower().split("/")
        names = {*parts, parts[-1].rsplit(".", 1)[0]}
        share = sum(word in names for word in words) / len(words)
        if share:
            out[path] = share
    return out


# Past commits similar to the query and {commit chunk id: calibrated relevance},
# asked for once the code's evidence is in (see likely_files).
PastWork = Callable[[], tuple[list[hybrid.Scored], dict[int, float]]]


def likely_files(
    store: Store,
    code_query: hybrid.Query,
    commits: list[hybrid.Scored] | PastWork,
    flt: ChunkFilter,
    *,
    limit: int,
    mode: str = "hybrid",
    fusion: str = "adaptive",
    commit_relevance: dict[int, float] | None = None,
) -> list[FileMatch]:
    """The `limit` files most likely to matter for the query, best first.

    The first :data:`STABLE_FILES` are the same whatever `limit` is: when
    their ranking holds too few files for a longer list, it is ranked again
    from more code chunks (a wider pool) and adds the files it finds after
    them (before, `--limit 20` reordered the top five).

    Args:
        commits: past commits similar to the query, best first (the hybrid
            search over commits, ``HISTORY_COMMITS`` of them); [] for none.
            Or a :data:`PastWork`, called once the code's evidence is in:
            the code's keyword pass then runs while the query's embedding
            is made on the worker thread (which the commits' vector pass
            would wait for).
        commit_relevance: {commit chunk id: calibrated relevance} when
            `commits` were fused by rank (their scores then say where each
            ranked, not how relevant it is); a file's shown score is its
            evidence's relevance.
    """
    past: PastWork
    if callable(commits):
        past = functools.cache(commits)
    else:
        given = (commits, commit_relevance or {})
        past = lambda: given  # noqa: E731

    def rank(wanted: int) -> list[FileMatch]:
        return _ranked_files(store, code_query, past, flt, wanted, mode, fusion)

    ranked = rank(STABLE_FILES)  # (its candidate pools too: `--limit 3` ranked among fewer, differently)
    if STABLE_FILES < len(ranked) < limit:  # (at most STABLE_FILES: no more files have evidence)
        top = ranked[:STABLE_FILES]
        shown = {m.path for m in top}
        ranked = top + [m for m in rank(limit) if m.path not in shown]
    # The packing value follows the ranking: a file ranked above another is
    # worth at least as much (lifting it, rather than lowering the files below
    # a weak one), over the whole ranking, so it never depends on `limit`.
    best_after = 0.0
    for m in reversed(ranked):
        best_after = m.order = max(best_after, m.order)
    out = ranked[:limit]
    for m in out:
        m.score, m.order = round(m.score, 4), round(m.order, 4)
    return out


def _ranked_files(
    store: Store,
    code_query: hybrid.Query,
    past: PastWork,
    flt: ChunkFilter,
    wanted: int,
    mode: str,
    fusion: str,
) -> list[FileMatch]:
    """Every file with evidence, best first (:func:`likely_files` without its
    cut), code evidence read for at least `wanted` files."""
    code, words = _code_evidence(store, code_query, flt, wanted, mode, fusion)
    history = _history_evidence(*past())
    # Past work is evidence only for files that exist now and pass the filter.
    roles = store.code_files(list(history), flt) if history else {}
    history = {p: ev for p, ev in history.items() if p in roles}
    asked = roles_asked(code_query.text) | set(flt.roles)
    fused: dict[str, float] = defaultdict(float)
    code_rank = _ranks({p: ev.strength for p, ev in code.items()})
    history_rank = _ranks({p: ev[0] for p, ev in history.items()})
    # Hybrid: the code's fused evidence, what it says in words, what past work touched.
    # (A query whose vector did not come, the model failing meanwhile, ranks as BM25 mode does.)
    hybrid_ranking = mode == "hybrid" and code_query.vector is not None
    lists = (code_rank, _ranks(words)) if hybrid_ranking else (code_rank,)
    for ranks in (*lists, history_rank):
        for path, rank in ranks.items():
            fused[path] += 1.0 / (FILE_RRF_K + 1 + rank)
    # What the task names: an area ("printer: ..."), files or modules ("context.go").
    scope = scope_words(code_query.text)
    # A file named in capitals ("update the README") is ranked as source is, whatever its role.
    capitals = _named_in_capitals(fused, code_query.text, lambda: store.paths("code"))
    by_name = _named(fused, code_query.text)
    named_files = {**by_name, **dict.fromkeys(capitals, 1.0)}
    for named in (_in_scope(fused, scope) if scope else {}, named_files):
        for rank, path in enumerate(sorted(named, key=lambda p: (-named[p], -fused[p]))):
            fused[path] += 1.0 / (FILE_RRF_K + 1 + rank)
    # A lookup of an identifier or path puts the file defining it, or named, first (as `lore code` does).
    tokens, written = lookup_names(code_query)
    matches = []
    for path, value in fused.items():
        chunks = code[path].chunks if path in code else []
        lookup = (
            max((lookup_match(hit.chunk, tokens, written) for hit, _ in chunks), default=0) if tokens else 0
        )
        if tokens and path_named(path, tokens):  # (a file with no chunk among the candidates too)
            lookup = 3
        best = chunks[0][0] if chunks else None
        role = best.chunk.role if best is not None else roles.get(path)
        weight = ROLE_WEIGHT.get(role or "source", 1.0)
        tier = weight
        # Named in capitals, ranked as source (a test still comes beside its source,
        # unless the task names it by its name: "fix tests/test_warm.py").
        if (path in capitals and role != "test") or (path in by_name and role == "test"):
            weight = tier = 1.0
        elif role in asked and role not in ("source", "test"):
            # a role the task asks for is ranked with source, below it at equal evidence
            weight, tier, value = max(weight, ASKED_ROLE_WEIGHT), 1.0, value * ASKED_ROLE_WEIGHT
        matched = code[path].relevance if path in code else 0.0
        evidence = max(matched, history[path].relevance if path in history else 0.0)
        # What recall packs by (and holds its floor against) takes a similar
        # commit's relevance whole, as the floor was chosen with.
        worth = max(matched, history[path].best if path in history else 0.0)
        matches.append(
            (
                (lookup, tier, value),
                FileMatch(
                    path,
                    evidence,
                    role,
                    best,
                    history[path][1] if path in history else 0,
                    code_rank.get(path),
                    history_rank.get(path),
                    chunks=chunks,
                    order=worth * weight,
                    worded=path in words or (path in history and history[path].worded),
                ),
            )
        )
    matches.sort(key=lambda item: item[0], reverse=True)
    return [m for _, m in matches]


def _code_evidence(
    store: Store, query: hybrid.Query, flt: ChunkFilter, limit: int, mode: str, fusion: str
) -> tuple[dict[str, _FileCode], dict[str, float]]:
    """Per file: its code evidence (:class:`_FileCode`); and the strength of
    its chunks' keyword relevances, for the files with any.

    Files are ranked on `fusion`'s scores; a rank fusion's scores say where a
    chunk ranked (the best is ~1 whatever the query), so the relevance shown
    and held against recall's floor is the adaptive fusion's, from the same
    candidates (:data:`~lore.search.fusion.DEFAULT_FUSION`)."""
    from lore.search.fusion import DEFAULT_FUSION

    pool = max(CODE_CHUNKS, limit * 15)
    while True:
        found = hybrid.search_each(
            store, "code", query, limit=pool, flt=flt, mode=mode, fusions=(fusion, DEFAULT_FUSION)
        )
        chunks = found[fusion]
        per_file: dict[str, list[hybrid.Scored]] = {}
        for hit in chunks:
            per_file.setdefault(hit.chunk.path, []).append(hit)
        if len(per_file) >= limit * 2 or len(chunks) < pool or pool >= hybrid.MAX_POOL:
            break
        pool *= 4
    relevance = {hit.chunk.chunk_id: hit.score for hit in found[DEFAULT_FUSION]}
    fused, words = {}, {}
    for path, hits in per_file.items():
        ranked = sorted(((h, relevance.get(h.chunk.chunk_id, 0.0)) for h in hits), key=lambda hr: -hr[1])
        fused[path] = _FileCode(
            _strength([h.score for h in hits]), ranked[0][1], ranked[: 1 + CHUNKS_PER_FILE]
        )
        if any(h.lexical > 0 for h in hits):
            words[path] = _strength([h.lexical for h in hits])
    return fused, words


def _strength(scores: list[float]) -> float:
    """A file's evidence from its chunks' scores: the best plus half the next ``CHUNKS_PER_FILE``."""
    ranked = sorted(scores, reverse=True)
    return ranked[0] + 0.5 * sum(ranked[1 : 1 + CHUNKS_PER_FILE])


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    """{path: rank from 0}, highest score first."""
    return {p: r for r, p in enumerate(sorted(scores, key=lambda p: -scores[p]))}


def _history_evidence(commits: list[hybrid.Scored], relevance: dict[int, float]) -> dict[str, _History]:
    """Per file (as named today): (summed evidence, commits, its relevance:
    the best of its commits' relevances — from `relevance` by chunk id where
    given, else their scores — each shared among the commit's files, divided
    by the square root of their number: a commit matching the task says the
    most of a file it changed alone, less of one among many)."""
    evidence: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0, 0, 0.0])
    for hit in commits:
        commit = hit.chunk.commit
        if commit is None or commit.n_files > MAX_COMMIT_FILES:
            continue
        files = [p for p in dict.fromkeys(commit.head_files) if p]
        merge = MERGE_WEIGHT if commit.is_merge else 1.0
        weight = hit.score / max(1, commit.n_files) * merge
        shared = relevance.get(hit.chunk.chunk_id, hit.score) / max(1, commit.n_files) ** 0.5 * merge
        for path in files:
            entry = evidence[path]
            entry[0] += weight
            entry[1] += 1
            entry[2] = max(entry[2], shared)
            entry[3] = entry[3] or hit.lexical > 0
            entry[4] = max(entry[4], relevance.get(hit.chunk.chunk_id, hit.score))
    return {p: _History(e[0], int(e[1]), e[2], bool(e[3]), e[4]) for p, e in evidence.items()}


class _History(NamedTuple):
    """A file's history evidence."""

    strength: float  # summed over the similar commits that touched it: what ranks it
    commits: int
    relevance: float  # what it is shown with
    worded: bool  # a commit holding some of the query's words touched it
    best: float  # its best commit's relevance, not shared: what recall packs by
