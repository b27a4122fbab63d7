"""The rule table (rules.toml) loaded once into compiled, indexed records.

Rules are data so that adding a provider is adding a table, not code: see the
header of rules.toml for the fields. Loading is lazy (first scan) and cached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# A token rule's match must not run on into more letters or digits: a longer
# string that merely starts like a key is something else.
_END = r"(?![A-Za-z0-9])"


@dataclass(frozen=True)
class TokenRule:
    """A secret with a recognisable start (or a distinctive shape)."""

    kind: str
    regex: re.Pattern[str]
    prefixes: tuple[str, ...] = ()
    contains: str = ""
    after: str = ""
    entropy: float = 0.0
    text_only: bool = False
    # The stricter shape the token must have to be found inside a word (no
    # separator before it: ``mykeyAKIA…``); None: only at a word's start or a join.
    inword: re.Pattern[str] | None = None


@dataclass(frozen=True)
class ContextRule:
    """A secret recognised by what surrounds it; tried when a keyword occurs."""

    kind: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    check: str
    code: bool = False
    lines: int = 1


@dataclass(frozen=True)
class KeyKind:
    """The kind reported for assignments whose key contains all `words`."""

    words: frozenset[str]
    kind: str


@dataclass(frozen=True)
class RuleSet:
    """Every rule, with token rules indexed by the first character they need."""

    tokens: tuple[TokenRule, ...]
    prefix_index: dict[str, PrefixEntry]
    shapes: tuple[TokenRule, ...]
    after: dict[str, tuple[TokenRule, ...]]
    contexts: tuple[ContextRule, ...]
    code_contexts: tuple[ContextRule, ...]
    code_context_keywords: tuple[str, ...]
    key_kinds: tuple[KeyKind, ...]
    kinds: frozenset[str] = field(default_factory=frozenset)
    glued: dict[str, tuple[str, ...]] = field(default_factory=dict)
    inword: re.Pattern[str] | None = None


def _token_rule(row: dict[str, Any]) -> TokenRule:
    regex = re.compile(f"(?:{row['regex']}){_END}")
    inword = row.get("inword", False)
    return TokenRule(
        kind=row["kind"],
        regex=regex,
        prefixes=tuple(row.get("prefixes", ())),
        contains=row.get("contains", ""),
        after=row.get("after", ""),
        entropy=float(row.get("entropy", 0.0)),
        text_only=bool(row.get("text_only", False)),
        inword=re.compile(f"(?:{inword}){_END}") if isinstance(inword, str) else regex if inword else None,
    )


PrefixEntry = tuple[tuple[str, ...], tuple[tuple[str, TokenRule], ...]]


def _index_prefixes(tokens: list[TokenRule]) -> dict[str, PrefixEntry]:
    """First character -> (all prefixes starting with it, (prefix, rule) longest first).

    The tuple of prefixes lets the scanner reject a piece with one
    ``str.startswith(tuple)`` call; the pairs are ordered so that ``sk-ant-``
    is tried before ``sk-``.
    """
    pairs: dict[str, list[tuple[str, TokenRule]]] = {}
    for rule in tokens:
        for prefix in rule.prefixes:
            pairs.setdefault(prefix[0], []).append((prefix, rule))
    return {
        char: (tuple(p for p, _ in items), tuple(sorted(items, key=lambda item: -len(item[0]))))
        for char, items in pairs.items()
    }


def _distinctive(prefix: str) -> bool:
    """Short or plain-word prefixes (``M``, ``SK``, ``pat``, ``eyJ``) start
    inside ordinary identifiers: a distinctive prefix is at least four
    characters, or three with a non-letter in it (``sk-``, ``hf_``)."""
    return len(prefix) >= 4 or (len(prefix) == 3 and not prefix.isalpha())


def _glued(tokens: list[TokenRule]) -> dict[str, tuple[str, ...]]:
    """First character -> the distinctive prefixes starting with it: those
    the scanner also looks for right after ``-``, ``_`` or ``.`` inside a run
    (``fix-ghp_…``, ``id_AKIA…``, ``T-sk-proj-…``: a token pasted onto a
    word)."""
    index: dict[str, set[str]] = {}
    for rule in tokens:
        for prefix in rule.prefixes:
            if _distinctive(prefix):
                index.setdefault(prefix[0], set()).add(prefix)
    return {char: tuple(sorted(prefixes)) for char, prefixes in index.items()}


def _alternation(words: set[str]) -> str:
    """A regex for any of `words`, factored by character like a trie, so that a
    failed attempt costs a comparison or two rather than one per word."""
    groups: dict[str, set[str]] = {}
    for word in words:
        groups.setdefault(word[0], set()).add(word[1:])
    branches = []
    for head, tails in sorted(groups.items()):
        rest = tails - {""}
        tail = _alternation(rest) if rest else ""
        branches.append(re.escape(head) + (f"(?:{tail})?" if rest and "" in tails else tail))
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


def _inword(tokens: list[TokenRule]) -> re.Pattern[str] | None:
    """The distinctive prefixes of the rules with an in-word shape, as one
    search: where a token may start in the middle of a word (``prefixghp_…``)."""
    prefixes = {p for rule in tokens if rule.inword for p in rule.prefixes if _distinctive(p)}
    # A lookahead: every start, also one inside another prefix's match (``AKIAKIA2E…``).
    return re.compile(f"(?={_alternation(prefixes)})") if prefixes else None


@lru_cache(maxsize=1)
def load() -> RuleSet:
    """Parse and compile rules.toml (once per process)."""
    import tomllib
    from importlib import resources

    data = tomllib.loads(resources.files(__package__).joinpath("rules.toml").read_text("utf-8"))
    tokens = [_token_rule(row) for row in data.get("token", [])]
    contexts = tuple(
        ContextRule(
            kind=row["kind"],
            regex=re.compile(row["regex"]),
            keywords=tuple(k.lower() for k in row["keywords"]),
            check=row.get("check", "random"),
            code=bool(row.get("code", False)),
            lines=int(row.get("lines", 1)),
        )
        for row in data.get("context", [])
    )
    after: dict[str, list[TokenRule]] = {}
    for rule in tokens:
        if rule.after:
            after.setdefault(rule.after, []).append(rule)
    key_kinds = tuple(KeyKind(frozenset(row["words"]), row["kind"]) for row in data.get("key_kind", []))
    kinds = {r.kind for r in tokens} | {r.kind for r in contexts} | {k.kind for k in key_kinds}
    return RuleSet(
        tokens=tuple(tokens),
        prefix_index=_index_prefixes(tokens),
        shapes=tuple(r for r in tokens if r.contains and not r.prefixes),
        after={char: tuple(rules) for char, rules in after.items()},
        contexts=contexts,
        code_contexts=tuple(rule for rule in contexts if rule.code),
        code_context_keywords=tuple({k for rule in contexts if rule.code for k in rule.keywords}),
        key_kinds=key_kinds,
        kinds=frozenset(kinds | {"private-key", "url-password", "password", "assigned-secret"}),
        glued=_glued(tokens),
        inword=_inword(tokens),
    )
