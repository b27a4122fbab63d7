"""Secrets known by their surroundings: context rules (headers, command lines, config
syntax) on the lines holding their keywords, and passwords in URLs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from . import assignments, keys, lines, values
from .findings import PRIORITY_CONTEXT, PRIORITY_URL, Finding
from .rules import ContextRule, RuleSet

# A hex value (a commit, a digest) that a sentence places right after a word
# naming a change ("the password reset was fixed in 4e90…", "token refresh, sha
# 4e90…") is that change; after a separator ("API key in prod: 9f86…", "= 9f86…")
# or any other word ("token is 9f86…", "API key in .env 9f86…") it is a secret.
_HEX = re.compile(r"[0-9a-fA-F]{20,}")
_PROSE_GAP = re.compile(
    r"(?i)^[^:=]*\b(?:in|at|by|sha|commit|revision|rev|fixed|merged|landed|reverted)[ \t(]*$"
)

_URL_CREDENTIALS = re.compile(r"://(?P<user>[^\s:/@'\"<>\0]*):(?P<secret>[^\s/'\"<>\0]+)@(?=[\w\[])")


def url_credentials(text: str, strict: bool) -> Iterator[Finding]:
    """``scheme://user:password@host``: the password (user and host stay).

    In code, only passwords of 8+ characters with a digit or a symbol count:
    tests and docs are full of ``user:pass@``, ``joe:password@``, ``a:b@``.
    """
    for match in _URL_CREDENTIALS.finditer(text):
        secret = match.group("secret")
        if values.is_marker(secret) or values.is_placeholder(secret) or len(secret) < 3:
            continue
        if strict and not values.plausible_password(secret, quoted=False, followed_by_text=True, min_len=8):
            continue
        yield Finding(match.start("secret"), match.end("secret"), "url-password", PRIORITY_URL)


def _context_ok(rule: ContextRule, match: re.Match[str], secret: str, strict: bool) -> bool:
    """Judge a context rule's candidate by the rule's `check` (see rules.toml)."""
    if values.is_marker(secret) or (len(secret) > assignments.MAX_VALUE and rule.kind != "private-key"):
        return False
    if rule.check == "any":
        return not values.is_placeholder(secret)
    if strict:
        return values.looks_random(secret)
    if rule.check == "basic":
        return values.is_basic_credentials(secret)
    if rule.check == "password":
        return values.plausible_password(secret, quoted=True, followed_by_text=False)
    if rule.check == "machine_made":
        if _HEX.fullmatch(secret.rstrip(".")) and _PROSE_GAP.match(match.group("gap") or ""):
            return False  # "the password reset was fixed in 4e90992…": a commit, named in a sentence
        return values.looks_random(secret, min_len=20)
    if rule.check == "prose_password":  # "the password is hunter2": only values with a digit or symbol
        return values.plausible_password(secret, quoted=False, followed_by_text=True)
    if rule.check == "keyed_random":  # ("password", "Sup3rS3cret!") in an argument list
        return keys.classify(match.group("key")) is not None and values.plausible_token(secret)
    if rule.check == "keyed":
        key_class = keys.classify(match.group("key"))
        if key_class is keys.KeyClass.PASSWORD:
            return values.plausible_password(secret, quoted=True, followed_by_text=False)
        return key_class is not None and values.plausible_token(secret)
    return values.plausible_token(secret)


def find(text: str, lowered: str, rules: RuleSet, strict: bool) -> Iterator[Finding]:
    """Context rules, each on the lines holding one of its keywords."""
    for rule in rules.code_contexts if strict else rules.contexts:
        has_secret_group = "secret" in rule.regex.groupindex
        keyed = "key" in rule.regex.groupindex
        for start, end in lines.line_windows(lowered, rule.keywords, rule.lines - 1):
            for match in rule.regex.finditer(text, start, end):
                span = match.span("secret") if has_secret_group else match.span()
                if _context_ok(rule, match, text[span[0] : span[1]], strict):
                    kind = rule.kind
                    if keyed and (key_class := keys.classify(match.group("key"))) is not None:
                        kind = assignments.kind_for_key(match.group("key"), key_class, rules)
                    yield Finding(span[0], span[1], kind, PRIORITY_CONTEXT)
