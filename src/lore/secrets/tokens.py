"""Token formats: one pass over the runs of token characters, rules picked by first character.

A run's first character selects the few rules whose prefix can start there, so
the cost does not grow with the number of providers. In strict mode a run that
is not a known token may still be a value assigned to a secret-like key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from . import assignments, values
from .findings import PRIORITY_TOKEN, Finding
from .rules import RuleSet, TokenRule

# Runs of characters tokens are made of. Tokens are at least 16 characters long.
_RUN = re.compile(r"[A-Za-z0-9_\-.~+/=%]{16,}")
_PIECE_BREAK = re.compile(r"[/=]+(?=[A-Za-z0-9])")
_LEADING_JUNK = "./=-+~%"
_DIGIT = re.compile(r"\d")


def _piece_starts(run: str) -> list[int]:
    """Where tokens may start inside a run: its start, and after each '/' or '='."""
    first = len(run) - len(run.lstrip(_LEADING_JUNK))
    if "/" not in run and "=" not in run:
        return [first]
    return [first, *(m.end() for m in _PIECE_BREAK.finditer(run, first))]


def _glued_starts(run: str, rules: RuleSet) -> list[int]:
    """Where a distinctive token prefix follows ``-``, ``_``, ``.`` or ``+`` in
    a run (``fix-ghp_…``, an email's ``ops+AKIA…@``): a token pasted onto a
    word is still a token."""
    index, starts = rules.glued, []
    for sep in "-_.+":
        at = run.find(sep)
        while at != -1:
            at += 1
            prefixes = index.get(run[at : at + 1])
            if prefixes and run.startswith(prefixes, at):
                starts.append(at)
            at = run.find(sep, at)
    return starts


def _inword_starts(text: str, run_start: int, run_end: int, rules: RuleSet) -> list[int]:
    """Where a distinctive prefix of a rule with an in-word shape starts in the
    middle of a word, right after a letter or digit (``mykeyAKIA…``,
    ``prefixghp_…``), as offsets in the run."""
    search = rules.inword
    if search is None:
        return []
    return [
        found.start() - run_start
        for found in search.finditer(text, run_start + 1, run_end)
        if text[found.start() - 1].isalnum()
    ]


def find(text: str, rules: RuleSet, strict: bool) -> Iterator[Finding]:
    """Token rules over every run; in strict mode also values assigned to secret-like keys.

    Most runs in code are identifiers and dotted names without a digit: for
    those only the prefix index is consulted (one C-level ``startswith`` per
    piece). Shapes, the ``after`` rules, assignments and tokens inside a word
    (which must look machine-made, digits included) need a digit.
    """
    prefix_index = rules.prefix_index
    for run in _RUN.finditer(text):
        run_text = run.group()
        has_digit = _DIGIT.search(run_text) is not None
        simple = run_text[0] not in _LEADING_JUNK and "/" not in run_text and "=" not in run_text
        run_start, run_end = run.start(), run.end()
        glued = _glued_starts(run_text, rules)
        inword = _inword_starts(text, run_start, run_end, rules) if has_digit else []
        # What follows a character (a Telegram bot token's secret, after "<digits>:")
        # may hold no digit: 33 random characters have none once in ~250 tokens.
        follows = bool(run_start) and text[run_start - 1] in rules.after
        if simple and not has_digit and not glued and not follows:
            # The common case in code (identifiers, dotted names): only a prefix can make it a token.
            entry = prefix_index.get(run_text[0])
            if entry is None or not run_text.startswith(entry[0]):
                continue
        covered = run_start
        if (has_digit or follows) and (
            hits := _shape_hits(text, run_start, run_end, run_text, rules, strict, shapes=has_digit)
        ):
            covered = hits[-1].end
            yield from hits
        starts = [0] if simple else _piece_starts(run_text)
        if glued or inword:
            starts = sorted({*starts, *glued, *inword})
        joins, in_words = set(glued), set(inword)
        contains_at: dict[str, int] = {}  # last place of a rule's `contains` in the run
        for offset in starts:
            pos = run_start + offset
            if pos < covered or pos >= run_end:
                continue
            # Offsets into the run, never slices of it: a long run may hold many starts.
            in_word = offset in in_words
            entry = prefix_index.get(run_text[offset])
            candidates = (
                [
                    rule
                    for prefix, rule in entry[1]
                    if run_text.startswith(prefix, offset)
                    and (not in_word or rule.inword is not None)
                    and (not rule.contains or _last(run_text, rule.contains, contains_at) >= offset)
                ]
                if entry is not None and run_text.startswith(entry[0], offset)
                else []
            )
            if candidates and (hits := _token_match(text, pos, candidates, strict, in_word)):
                covered = hits[-1].end
                yield from hits
            elif (
                strict
                and has_digit
                and not in_word
                and offset not in joins
                and text[pos - 1 : pos] not in assignments.QUOTES  # quoted values: _quoted_assignments
                and (assigned := assignments.assigned_before(text, pos, rules))
            ):
                covered = assigned.end
                yield assigned


def _last(run_text: str, needle: str, cache: dict[str, int]) -> int:
    """Where `needle` last starts in the run (-1: nowhere), found once per run."""
    at = cache.get(needle)
    if at is None:
        at = cache[needle] = run_text.rfind(needle)
    return at


def _shape_hits(
    text: str,
    run_start: int,
    run_end: int,
    run_text: str,
    rules: RuleSet,
    strict: bool,
    *,
    shapes: bool = True,
) -> list[Finding]:
    """Rules without a prefix: shapes anywhere in the run (when `shapes`: they
    need a digit), and rules for what follows a character."""
    hits: list[Finding] = []
    for rule in rules.shapes if shapes else ():
        if rule.contains in run_text and (found := rule.regex.search(text, run_start, run_end)):
            hits.extend(_token_match(text, found.start(), [rule], strict))
    if run_start and (after := rules.after.get(text[run_start - 1])):
        hits.extend(_token_match(text, run_start, list(after), strict))
    return sorted(hits, key=lambda f: f.end)


def _token_match(
    text: str, pos: int, candidates: list[TokenRule], strict: bool, in_word: bool = False
) -> list[Finding]:
    """The first candidate rule that matches at `pos`, as findings (one per secret group).

    Inside a word (`in_word`) a rule's stricter in-word shape is matched, and
    each secret must look machine-made in memories too: a word that merely
    contains a prefix stays.
    """
    for rule in candidates:
        if strict and rule.text_only:
            continue
        regex = rule.inword if in_word else rule.regex
        if regex is None or (match := regex.match(text, pos)) is None:
            continue
        spans = [match.span(g) for g in ("secret", "secret2") if g in regex.groupindex]
        spans = [s for s in spans if s[0] >= 0] or [match.span()]
        secret = text[spans[0][0] : spans[-1][1]]
        if rule.entropy and values.shannon(secret) < rule.entropy:
            continue
        if strict and (values.is_placeholder(secret) or values.shannon(secret) < 3.0):
            continue
        if in_word and not all(_machine_made(text[s:e]) for s, e in spans):
            continue
        return [Finding(s, e, rule.kind, PRIORITY_TOKEN) for s, e in spans]
    return []


def _machine_made(secret: str) -> bool:
    """Letters and digits, not a placeholder, entropy of 3 bits a character or
    more: the bar for a token found inside a word. (Not ``looks_random``: its
    word test reads runs of random capitals, ``AKIAIOSFODNN7…``, as words.)"""
    return (
        _DIGIT.search(secret) is not None
        and any(c.isalpha() for c in secret)
        and not values.is_placeholder(secret)
        and values.shannon(secret) >= 3.0
    )
