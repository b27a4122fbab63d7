"""When two memories say the same thing, or the opposite (write-time and consolidation checks).

Near-duplicates are found by word shingles: the texts are lower-cased, cut
into words (Markdown punctuation and case ignored), and every run of three
words is a shingle; two texts whose shingle sets overlap by a Jaccard index
of at least :data:`NEAR_DUPLICATE` say the same thing. When vectors are
available the caller may also accept a cosine of at least
:data:`VECTOR_NEAR_DUPLICATE` (paraphrases that share few word runs).

Contradictions (a simple, documented heuristic): two memories about the same
subject (a shared keyword, or titles/bodies with enough words in common)
contradict when

- they give different values to the same setting (``TIMEOUT=5`` /
  ``TIMEOUT = 30``, ``timeout: 5s`` / ``timeout: 30s``, "set X to Y"), or
- a sentence of one and a sentence of the other share most of their words
  but one is negated and the other not ("use X" / "don't use X", "never" /
  "always"), or they differ by an antonym (use/avoid, enable/disable,
  true/false, sync/async, allow/deny, ...), or
- a sentence of one and a sentence of the other share most of their words
  but each names a value the other does not, where a value is a name
  (capitalised inside the sentence: "Postgres" / "MySQL", "Tuesdays" /
  "Thursdays"), a number ("Node 18" / "Node 20") or an identifier
  ("acme-invoices-prod" / "acme-invoices-staging"). Plain words that differ
  ("chose" / "decided") are a paraphrase, not another value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

NEAR_DUPLICATE = 0.6
VECTOR_NEAR_DUPLICATE = 0.92
SAME_SUBJECT = 0.3  # share of content words in common
SENTENCE_OVERLAP = 0.5
SHINGLE = 3

_WORD = re.compile(r"[a-z0-9][a-z0-9_'.-]*[a-z0-9]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
NEGATIONS = frozenset(
    "not no never don't dont doesn't doesnt isn't isnt aren't arent won't wont can't cant cannot "
    "shouldn't shouldnt mustn't mustnt didn't didnt wasn't wasnt without avoid stop stopped nor "
    "neither none nothing".split()
)
ANTONYMS = {
    frozenset(pair)
    for pair in (
        ("use", "avoid"),
        ("enable", "disable"),
        ("enabled", "disabled"),
        ("true", "false"),
        ("on", "off"),
        ("allow", "deny"),
        ("allowed", "forbidden"),
        ("always", "never"),
        ("sync", "async"),
        ("synchronous", "asynchronous"),
        ("include", "exclude"),
        ("required", "optional"),
        ("increase", "decrease"),
        ("prefer", "avoid"),
        ("accept", "reject"),
        ("public", "private"),
        ("mutable", "immutable"),
        ("before", "after"),
    )
}
_ANTONYM_WORDS = frozenset(w for pair in ANTONYMS for w in pair)
_SETTING = re.compile(
    r"(?:^|[\s`(])(?P<key>[A-Za-z_][A-Za-z0-9_.-]*[A-Za-z0-9_])\s*(?:=|:)\s*(?P<value>[^\s,;`)]+)"
    r"|\bset\s+`?(?P<key2>[A-Za-z_][\w.-]*)`?\s+to\s+`?(?P<value2>[^\s,;`]+)",
    re.I,
)


def words(text: str) -> list[str]:
    """Lower-cased words, Markdown punctuation dropped."""
    return _WORD.findall(text.lower().replace("’", "'"))


@functools.lru_cache(maxsize=2048)  # a body is compared with many others in one consolidation
def shingles(text: str, size: int = SHINGLE) -> frozenset[str]:
    """Runs of `size` words (the words themselves for shorter texts)."""
    found = words(text)
    if len(found) < size:
        return frozenset(found)
    return frozenset(" ".join(found[i : i + size]) for i in range(len(found) - size + 1))


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def containment(part: AbstractSet[str], whole: AbstractSet[str]) -> float:
    """How much of `part` is in `whole` (0-1)."""
    return len(part & whole) / len(part) if part else 0.0


def content_words(text: str) -> set[str]:
    from lore.search.text import STOPWORDS

    return {w for w in words(text) if len(w) > 2 and w not in STOPWORDS and w not in NEGATIONS}


def same_subject(a_tags: Iterable[str], a_text: str, b_tags: Iterable[str], b_text: str) -> bool:
    """A shared keyword (not a generic one), or enough content words in common."""
    generic = {"note", "error", "auto-captured", "imported", "session-summary"}
    tags_a = {t.lower() for t in a_tags} - generic
    tags_b = {t.lower() for t in b_tags} - generic
    if tags_a & tags_b:
        return True
    return jaccard(content_words(a_text), content_words(b_text)) >= SAME_SUBJECT


@dataclass(frozen=True)
class Conflict:
    """Why two texts contradict each other."""

    reason: str  # one line: what differs
    confidence: float
    newer: str  # the sentence (or setting) of the newer text
    older: str


def contradiction(newer: str, older: str) -> Conflict | None:
    """The strongest sign that `newer` says the opposite of `older`, or None."""
    found = _setting_conflict(newer, older)
    if found is not None:
        return found
    best: Conflict | None = None
    for a, wa, ca in _analysed(newer):
        negated_a = _negated(wa)
        for b, wb, cb in _analysed(older):
            overlap = jaccard(ca, cb)
            if overlap < SENTENCE_OVERLAP:
                continue
            negated_b = _negated(wb)
            reason = None
            if negated_a != negated_b:
                reason = "one says not, the other does"
            else:
                for pair in ANTONYMS:
                    x, y = tuple(pair)
                    if (x in wa and y in wb and y not in wa and x not in wb) or (
                        y in wa and x in wb and x not in wa and y not in wb
                    ):
                        reason = f"'{x}' against '{y}'"
                        break
            if reason is None:
                swapped = _swapped_value(a, b)
                if swapped is not None:
                    reason = f"'{swapped[0]}' against '{swapped[1]}'"
            if reason is None:
                continue
            confidence = round(min(0.95, 0.6 + 0.4 * overlap), 3)
            if best is None or confidence > best.confidence:
                best = Conflict(reason, confidence, a, b)
    return best


@functools.lru_cache(maxsize=2048)
def _analysed(text: str) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """Each sentence of `text` with its words and its content words (but
    antonyms): a body is compared with many others in one consolidation, and
    splitting it again for every pair was most of the time spent."""
    return tuple(
        (sentence, frozenset(words(sentence)), frozenset(content_words(sentence) - _ANTONYM_WORDS))
        for sentence in _sentences(text)
    )


def _setting_conflict(newer: str, older: str) -> Conflict | None:
    new_values = settings(newer)
    for key, (value, text) in settings(older).items():
        if key in new_values and new_values[key][0] != value:
            return Conflict(
                f"{key} is {new_values[key][0]} here, {value} before", 0.95, new_values[key][1], text
            )
    return None


@functools.lru_cache(maxsize=2048)  # (read only: a body's settings, for each pair it is in)
def settings(text: str) -> dict[str, tuple[str, str]]:
    """{setting name: (value, the text that set it)} — names that look like settings
    (UPPER_CASE, snake_case or dotted), so prose like "Note: ..." is not one."""
    out: dict[str, tuple[str, str]] = {}
    for match in _SETTING.finditer(text):
        key = match.group("key") or match.group("key2")
        value = match.group("value") or match.group("value2")
        if not key or not value or "://" in value:
            continue
        if not (key.isupper() or "_" in key or "." in key.strip(".") or match.group("key2")):
            continue
        out[key.lower()] = (value.strip("'\"`.").lower(), match.group(0).strip())
    return out


_TOKEN = re.compile(r"[A-Za-z0-9][\w'/.:-]*[A-Za-z0-9]|[A-Za-z0-9]")
_SWAP = 2  # words on each side of a swap at most: "Postgres" for "MySQL", "Node 18" for "Node 20"


def _swapped_value(newer: str, older: str) -> tuple[str, str] | None:
    """A value of one sentence put where the other has a value of the same kind
    (a name for a name, a number for a number, an identifier for an
    identifier): ("mysql", "postgres"), else None. Words the other sentence
    lacks are an addition, not another value ("Postgres 15" / "Postgres (see
    docs/db.md)"); a plural or a longer spelling is the same value ("Tuesday" /
    "Tuesdays", "Postgres" / "PostgreSQL")."""
    import difflib

    a, b = _tokens(newer), _tokens(older)
    matcher = difflib.SequenceMatcher(None, [w for w, _ in a], [w for w, _ in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or i2 - i1 > _SWAP or j2 - j1 > _SWAP:
            continue
        for word_a, kind_a in a[i1:i2]:
            for word_b, kind_b in b[j1:j2]:
                if kind_a and kind_a == kind_b and not _same_value(word_a, word_b):
                    return word_a, word_b
    return None


@functools.lru_cache(maxsize=4096)
def _tokens(sentence: str) -> tuple[tuple[str, str | None], ...]:
    """Each word of a sentence, lower-cased, with the kind of value it is: a
    number (a digit in it), an identifier (`_ - . / :` inside it), a name
    (capitalised inside the sentence, or all capitals), or None."""
    out = []
    for i, match in enumerate(_TOKEN.finditer(sentence)):
        word = match.group()
        kind: str | None = None
        if any(c.isdigit() for c in word):
            kind = "number"
        elif any(c in word for c in "_-./:"):
            kind = "identifier"
        elif (len(word) > 1 and word.isupper()) or (
            i > 0 and word[0].isupper() and word.lower() not in _NOT_NAMES
        ):
            kind = "name"
        out.append((word.lower(), kind))
    return tuple(out)


def _same_value(a: str, b: str) -> bool:
    a, b = a.rstrip("s"), b.rstrip("s")
    return a.startswith(b) or b.startswith(a)


# Capitalised inside a sentence without naming anything ("I", after a colon...).
_NOT_NAMES = frozenset({"i", "we", "the", "a", "an", "it", "this", "that", "use", "do", "don't", "never"})


def _sentences(text: str) -> list[str]:
    return [s.strip(" -*>#") for s in _SENTENCE.split(text) if len(s.split()) >= 3]


def _negated(sentence_words: AbstractSet[str]) -> bool:
    return len(sentence_words & NEGATIONS) % 2 == 1


def beyond(text: str, kept: str) -> list[str]:
    """The paragraphs of `text` that `kept` does not hold, each with only its
    sentences `kept` does not hold (compared by their words): a near-duplicate
    merged away may still say one thing more ("Never on Fridays."). A code
    block is one piece, kept whole, as written."""
    have = f" {' '.join(words(kept))} "
    known = {_stem(w) for w in content_words(kept)}

    def held(piece: str) -> bool:
        """Said already: word for word, or (a sentence) in other words, three
        quarters of its content words being the kept text's ("before you push" for
        "before pushing"): a paraphrase adds nothing to keep."""
        said = " ".join(words(piece))
        if not said or f" {said} " in have:
            return True
        if piece.startswith("```"):
            return False
        mine = {_stem(w) for w in content_words(piece)}
        return bool(mine) and len(mine & known) >= HELD * len(mine)

    out = []
    for part in _FENCED.split(text.strip()):
        if part.startswith("```"):
            if not held(part):
                out.append(part)
            continue
        for paragraph in re.split(r"\n\s*\n", part):
            fresh = [
                " ".join(sentence.split())
                for sentence in _MERGE_SENTENCE.split(paragraph.strip())
                if sentence.strip() and not held(sentence)
            ]
            if fresh:
                out.append(" ".join(fresh))
    return out


_MERGE_SENTENCE = re.compile(r"(?<=[.!?])\s+")
HELD = 0.75  # share of a sentence's content words another text has for it to say nothing new


def _stem(word: str) -> str:
    """A word without its commonest endings (pushing, pushed, pushes → push)."""
    for ending in ("ing", "ed", "es", "s"):
        if len(word) > len(ending) + 3 and word.endswith(ending):
            return word[: -len(ending)]
    return word


_FENCED = re.compile(r"(```.*?(?:```|$))", re.S)


def says_more(text: str, kept: str) -> bool:
    """Whether `text` holds a sentence (or code block) that `kept` does not."""
    return bool(beyond(text, kept))
