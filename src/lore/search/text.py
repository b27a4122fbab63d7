"""Turning free text into FTS5 queries, and picking snippets."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
_SPLIT_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves
""".split()
)


# Distinct terms read from a query: past a few pages of text, more say little
# and cost a check in every candidate (a 750 KB task took 11.8 s to recall).
MAX_TERMS = 1000
# And how much of it is read for them: a 1 MB description of one word
# repeated holds one term, and was read five times over (28 s to recall).
MAX_TERM_SCAN = 100_000


def terms(text: str) -> list[str]:
    """Distinct lower-case search terms of `text`, stop words removed.

    Identifiers are kept whole and also split (``refreshToken`` →
    ``refreshtoken``, ``refresh``, ``token``) so both spellings match. A
    query of nothing else keeps its stop words and single letters: ``AND``
    (a C macro), ``x`` or ``a.b.c`` are what the user looks for.
    """
    out: dict[str, None] = {}
    short: dict[str, None] = {}
    for found in _WORD.finditer(text, 0, MAX_TERM_SCAN):
        if len(out) >= MAX_TERMS:  # a pasted log of 100 KB: its first terms say what it is about
            break
        word = found.group()
        parts = [p for p in re.split(r"_+", _SPLIT_CAMEL.sub("_", word)) if p]
        for candidate in (word, *parts) if len(parts) > 1 else (word,):
            low = candidate.lower()
            if _telling(low):
                out[low] = None
            else:
                short[low] = None
    return list(out or short)


def _telling(term: str) -> bool:
    """A term that tells texts apart: no stop word, no single letter."""
    return term not in STOPWORDS and (len(term) > 1 or term.isdigit())


def says_nothing(text: str) -> bool:
    """Whether `text` has words, all stop words or single letters, and no
    identifier (`point.x`, `AND_MASK`): nothing to tell one text from another
    by (:func:`terms` keeps them then, for a lookup of `AND` or `x`)."""
    found = terms(text)
    return bool(found) and not any(map(_telling, found)) and not _IDENTIFIER_IN.search(text)


_IDENTIFIER_IN = re.compile(r"\w[._]\w|[a-z][A-Z]")


MAX_FTS_TERMS = 16


def lexical_terms(words: list[str]) -> list[str]:
    """The terms handed to the lexical index: all of them, or for a long task
    description its 16 longest (a lexical index scores every row matching any
    term, and longer words are, as a rule, rarer and say more), in order."""
    if len(words) <= MAX_FTS_TERMS:
        return words
    keep = set(sorted(words, key=len, reverse=True)[:MAX_FTS_TERMS])
    return [w for w in words if w in keep][:MAX_FTS_TERMS]


_IDENTIFIER = re.compile(r"[A-Za-z_][\w.$/-]*[A-Za-z0-9_]")


# How much of a query is read for identifiers and as a phrase (a pasted log of
# 100 KB is read for its terms, not for a 100 KB phrase held in every candidate).
MAX_EXACT_SCAN = 20_000


def identifiers(query: str) -> list[str]:
    """The identifiers and paths of `query` as written (``CliRunner`` of "fix
    CliRunner.", ``src/app.py``): what :func:`exact_tokens` reads, in case."""
    return _IDENTIFIER.findall(query, 0, MAX_EXACT_SCAN)


def exact_tokens(query: str) -> list[str]:
    """What a query names exactly: identifiers (``snake_case``, ``CamelCase``,
    ``dotted.name``, ``path/to/file.py``) and, for a query of several words,
    the phrase itself (lower-cased, spaces folded)."""
    found = []
    for token in _IDENTIFIER.findall(query, 0, MAX_EXACT_SCAN):
        inner_caps = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
        dotted = "." in token and len(token.split(".")[0]) >= 2 and all(token.split("."))
        if "_" in token.strip("_") or inner_caps or "/" in token or dotted:
            found.append(token.lower())
    words = query.split()
    if len(words) >= 2 and len(query) <= MAX_EXACT_SCAN:
        found.append(" ".join(words).lower())
    return found


def match_features(query_terms: list[str], exact: list[str], *texts: str) -> tuple[float, int]:
    """(coverage: the share of query terms found in `texts`, by their first
    five letters, a cheap stem; :func:`exactness`) in one pass."""
    if not query_terms:
        return 0.0, 0
    haystack = " ".join(texts).lower()
    found = sum(1 for t in query_terms if t[:5] in haystack)
    if exact and any(token in haystack for token in exact):
        return found / len(query_terms), 2
    return found / len(query_terms), int(found == len(query_terms))


def exactness(query_terms: list[str], exact: list[str], *texts: str) -> int:
    """2: the text holds an exact identifier or the phrase of the query;
    1: it holds every query term as a word; 0: neither.

    For hits the keyword index did not rank (so read more strictly than
    :func:`match_features`' five letters anywhere, which found "current" in
    ``.. currentmodule::``): each term must start a word (a camelCase or
    snake_case part counts) that is no more than three letters longer
    (``connect`` → ``connection``, not ``pass`` → ``password``)."""
    text = " ".join(texts)
    haystack = text.lower()
    if exact and any(token in haystack for token in exact):
        return 2
    if query_terms and all(_starts_word(t, text, haystack) for t in query_terms):
        return 1
    return 0


_MORE_LETTERS = 3  # a word may run this much past the term (plural, -ing, -ion)


def _starts_word(term: str, text: str, low: str) -> bool:
    """Whether `term` (its first five letters, then at most ``_MORE_LETTERS``
    more than it has) starts a word of `text` (`low`: it lower-cased)."""
    stem = term[:5]
    if len(low) != len(text):  # a letter whose lower case is longer: positions differ
        return stem in low
    longest = max(len(term), len(stem)) + _MORE_LETTERS
    at = low.find(stem)
    while at >= 0:
        before = text[at - 1] if at else " "
        starts = not before.isalnum() or (before.islower() and text[at].isupper())
        if starts:
            end = at + len(stem)
            while (
                end < len(text)
                and text[end].isalnum()
                and not (text[end].isupper() and text[end - 1].islower())
            ):
                end += 1
            if end - at <= longest:
                return True
        at = low.find(stem, at + 1)
    return False


def snippet(text: str, query_terms: list[str], width: int = 220) -> str:
    """A one-line excerpt of `text` around the first line that matches
    (one of the query's :func:`lexical_terms`: a long task's most telling)."""
    query_terms = lexical_terms(query_terms)
    stems = list(dict.fromkeys(t[:5] for t in query_terms if len(t) > 2)) or query_terms
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    best = 0
    for i, line in enumerate(lines):
        low = line.lower()
        if any(stem in low for stem in stems):
            best = i
            break
    flat = " ".join(lines[best:])
    if len(flat) <= width:
        return flat
    return flat[: width - 1].rsplit(" ", 1)[0] + "…"
