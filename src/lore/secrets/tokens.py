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
    """Where a distinctive token prefix follows ``-``, ``_`` or ``.`` in a run
    (``fix-ghp_…``): a token pasted onto a word is still a token."""
    index, starts = rules.glued, []
    for sep in "-_.":
        at = run.find(sep)
        while at != -1:
            at += 1
            prefixes = index.get(run[at : at + 1])
            if prefixes and run.startswith(prefixes, at):
                starts.append(at)
            at = run.find(sep, at)
    return starts


def find(text: str, rules: RuleSet, strict: bool) -> Iterator[Finding]:
    """Token rules over every run; in strict mode also values assigned to secret-like keys.

    Most runs in code are identifiers and dotted names without a digit: for
    those only the prefix index is consulted (one C-level ``startswith`` per
    piece). Shapes, the ``after`` rules and assignments need a digit.
    """
    prefix_index = rules.prefix_index
    for run in _RUN.finditer(text):
        run_text = run.group()
        has_digit = _DIGIT.search(run_text) is not None
        simple = run_text[0] not in _LEADING_JUNK and "/" not in run_text and "=" not in run_text
        run_start, run_end = run.start(), run.end()
        glued = _glued_starts(run_text, rules)
        if simple and not has_digit and not glued:
            # The common case in code (identifiers, dotted names): only a prefix can make it a token.
            entry = prefix_index.get(run_text[0])
            if entry is None or not run_text.startswith(entry[0]):
                continue
        covered = run_start
        if has_digit and (hits := _shape_hits(text, run_start, run_end, run_text, rules, strict)):
            covered = hits[-1].end
            yield from hits
        starts = [0] if simple else _piece_starts(run_text)
        if glued:
            starts = sorted({*starts, *glued})
        for offset in starts:
            pos = run_start + offset
            if pos < covered or pos >= run_end:
                continue
            piece = run_text[offset:]
            entry = prefix_index.get(piece[0])
            candidates = (
                [
                    rule
                    for prefix, rule in entry[1]
                    if piece.startswith(prefix) and (not rule.contains or rule.contains in piece)
                ]
                if entry is not None and piece.startswith(entry[0])
                else []
            )
            if candidates and (hits := _token_match(text, pos, candidates, strict)):
                covered = hits[-1].end
                yield from hits
            elif (
                strict
                and has_digit
                and offset not in glued
                and text[pos - 1 : pos] not in assignments.QUOTES  # quoted values: _quoted_assignments
                and (assigned := assignments.assigned_before(text, pos, rules))
            ):
                covered = assigned.end
                yield assigned


def _shape_hits(
    text: str, run_start: int, run_end: int, run_text: str, rules: RuleSet, strict: bool
) -> list[Finding]:
    """Rules without a prefix: shapes anywhere in the run, and rules for what follows a character."""
    hits: list[Finding] = []
    for rule in rules.shapes:
        if rule.contains in run_text and (found := rule.regex.search(text, run_start, run_end)):
            hits.extend(_token_match(text, found.start(), [rule], strict))
    if run_start and (after := rules.after.get(text[run_start - 1])):
        hits.extend(_token_match(text, run_start, list(after), strict))
    return sorted(hits, key=lambda f: f.end)


def _token_match(text: str, pos: int, candidates: list[TokenRule], strict: bool) -> list[Finding]:
    """The first candidate rule that matches at `pos`, as findings (one per secret group)."""
    for rule in candidates:
        if strict and rule.text_only:
            continue
        match = rule.regex.match(text, pos)
        if match is None:
            continue
        spans = [match.span(g) for g in ("secret", "secret2") if g in rule.regex.groupindex]
        spans = [s for s in spans if s[0] >= 0] or [match.span()]
        secret = text[spans[0][0] : spans[-1][1]]
        if rule.entropy and values.shannon(secret) < rule.entropy:
            continue
        if strict and (values.is_placeholder(secret) or values.shannon(secret) < 3.0):
            continue
        return [Finding(s, e, rule.kind, PRIORITY_TOKEN) for s, e in spans]
    return []
