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


def terms(text: str) -> list[str]:
    """Distinct lower-case search terms of `text`, stop words removed.

    Identifiers are kept whole and also split (``refreshToken`` →
    ``refreshtoken``, ``refresh``, ``token``) so both spellings match.
    """
    out: dict[str, None] = {}
    for word in _WORD.findall(text):
        parts = [p for p in re.split(r"_+", _SPLIT_CAMEL.sub("_", word)) if p]
        for candidate in (word, *parts) if len(parts) > 1 else (word,):
            low = candidate.lower()
            if low not in STOPWORDS and (len(low) > 1 or low.isdigit()):
                out[low] = None
    return list(out)


MAX_FTS_TERMS = 16


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression: every term quoted, OR-ed (BM25 ranks by how
    many and how rare the matches are). None when nothing is searchable.

    FTS5 scores every row matching any OR-ed term, so a long task description
    is cut to its 16 longest terms (longer words are, as a rule, rarer and
    say more), in their original order."""
    words = terms(text)
    if not words:
        return None
    if len(words) > MAX_FTS_TERMS:
        keep = set(sorted(words, key=len, reverse=True)[:MAX_FTS_TERMS])
        words = [w for w in words if w in keep][:MAX_FTS_TERMS]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def snippet(text: str, query_terms: list[str], width: int = 220) -> str:
    """A one-line excerpt of `text` around the first line that matches."""
    stems = [t[:5] for t in query_terms if len(t) > 2] or query_terms
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
