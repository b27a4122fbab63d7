"""Finding secrets in text: where they are and what kind they are.

Two modes share every rule:

* ``strict=False`` (memories, commit text, session digests): recall first. A
  redacted word in prose costs little; a leaked key in a file committed to git
  and shared by a team costs a lot.
* ``strict=True`` (source code chunks in the code index): precision first, and
  speed. Only machine-made values count: known token formats whose body is not
  a placeholder, private key blocks, URL passwords and high-entropy values
  assigned to secret-like keys.

One pass over the *runs* of token characters drives the token rules: a run's
first character selects the few rules whose prefix can start there, so the
cost does not grow with the number of providers.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

from . import keys, pem, values
from .rules import ContextRule, RuleSet, TokenRule, load

# Priorities when findings overlap: the most specific kind names the merged span.
PRIORITY_PEM, PRIORITY_TOKEN, PRIORITY_CONTEXT, PRIORITY_URL, PRIORITY_ASSIGNED = 5, 4, 3, 2, 1


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret at text[start:end]."""

    start: int
    end: int
    kind: str
    priority: int


# Runs of characters tokens are made of. Tokens are at least 16 characters long.
_RUN = re.compile(r"[A-Za-z0-9_\-.~+/=%]{16,}")
_PIECE_BREAK = re.compile(r"[/=]+(?=[A-Za-z0-9])")
_LEADING_JUNK = "./=-+~%"
_DIGIT = re.compile(r"\d")
_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")

# An assignment after a key: closing quotes, an optional type annotation, the
# separator, an optional opening quote (with string prefixes like b"" f"" @"").
_ASSIGN = re.compile(
    r"""(?P<kq>["'`]{0,2}\]?["'`]?)
        (?P<ann>[ \t]*:[ \t]*[A-Za-z_][\w\[\], .|]{0,60}?(?=[ \t]*=[^=>]))?
        [ \t]*(?P<sep>:=|=>|==|!=|=|:(?!//)|\uff1a)
        [ \t]*(?P<vq>[@rRbBuUfF]{0,2}["'`])?""",
    re.X,
)
# Unquoted values end at a space, a quote or a closing bracket; after '=' also at ';' '&' ','
# (connection strings, query strings, argument lists), after ':' only at ',' (YAML, headers).
# Longer values are data (blobs, encoded files), not credentials typed or pasted by a person.
MAX_VALUE = 1000
_UNQUOTED = re.compile(r"[^\s'\"`,;&<>)\]}\0]{1,1024}")
_UNQUOTED_AFTER_COLON = re.compile(r"[^\s'\"`,<>)\]}\0]{1,1024}")
_LINE_END = re.compile(r"[ \t]*(?:$|\n|\r|#|//|[,;})\]]|\\n)")
# Words a secret-like key contains (searched in the lower-cased text).
_KEY_WORDS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "cred",
    "pw",
    "sas",
    *keys.FOREIGN_PASSWORD_WORDS,
)
_PREVIOUS_WORD = re.compile(r"([A-Za-z]+)[ \t]$")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_KEY_TAIL = re.compile(r"[\w.\-]*")
# The key (or auth scheme) that ends right where a value starts, for strict mode.
# It is matched on the text before the value *reversed*, so one anchored match does the
# work of a search: read right to left, the opening quote (and string prefix), the
# separator, an optional type annotation, the key's closing quote, the key.
_KEY_BEFORE_REVERSED = re.compile(
    r"""(?:(?:["'`][@rRbBuUfF]{0,2})?
           [ \t]*(?:=:|>=|==|=!|=|:|\uff1a)
           (?:[ \t]*[\w\[\], .|]{0,60}?[A-Za-z_][ \t]*:)?
           [ \t]*["'`]?\]?["'`]{0,2}
           (?P<key>[\w.\-]*[A-Za-z_\-])
        |[ \t]+(?P<scheme>(?i:reraeb|cisab))(?![\w]))""",
    re.X,
)
_VALUE_SEPARATORS = frozenset("\"'`=:")
_QUOTES = frozenset("\"'`")
_QUOTED_VALUE = re.compile(r"""[=:][ \t]*[@bBrRuUfF]{0,2}(?P<q>["'`])(?P<value>[^"'`\s\\]{12,200})(?P=q)""")
_URL_CREDENTIALS = re.compile(r"://(?P<user>[^\s:/@'\"<>\0]*):(?P<secret>[^\s/'\"<>\0]+)@(?=[\w\[])")
_ENV_LINE = re.compile(r"[ \t]*(?:export[ \t]+|-[ \t]+)?$")
# Keys right after these are inside a connection string, a query or an .npmrc line.
_INLINE_CONFIG = frozenset(";&?:")


def find(text: str, *, strict: bool) -> list[Finding]:
    """Every secret in `text`, overlapping findings merged, in order.

    ``[REDACTED:kind]`` markers already in the text are blanked out (same
    length, NUL characters) before scanning, so that a marker can neither be
    a secret nor lend its words to a key: redacting twice changes nothing.
    """
    if not text:
        return []
    if values.MARKER in text:
        text = _MARKER.sub(lambda marker: "\0" * len(marker.group()), text)
    rules = load()
    found: list[Finding] = []
    if "PRIVATE KEY" in text:
        found.extend(Finding(s, e, "private-key", PRIORITY_PEM) for s, e in pem.find(text))
    found.extend(_tokens(text, rules, strict))
    if strict:
        found.extend(_quoted_assignments(text, rules))
    if "://" in text:
        found.extend(_url_credentials(text, strict))
    lowered = _lower(text)
    if not strict or any(keyword in lowered for keyword in rules.code_context_keywords):
        found.extend(_contexts(text, lowered, rules, strict))
    if not strict:
        found.extend(_assignments(text, lowered, rules))
    return _merge(found) if found else found


def _lower(text: str) -> str:
    """Lower-cased text with the same indices (str.lower can change the length)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _occurrences(lowered: str, words: tuple[str, ...]) -> list[int]:
    """Sorted positions of every occurrence of any of `words` (C-speed str.find loops)."""
    positions: list[int] = []
    for word in words:
        i = lowered.find(word)
        while i >= 0:
            positions.append(i)
            i = lowered.find(word, i + 1)
    positions.sort()
    return positions


def _line_windows(lowered: str, words: tuple[str, ...], extra_lines: int) -> list[tuple[int, int]]:
    """Merged (start, end) spans: each line holding one of `words`, plus `extra_lines` after it."""
    windows: list[tuple[int, int]] = []
    for pos in _occurrences(lowered, words):
        if windows and pos < windows[-1][1]:
            continue
        start = lowered.rfind("\n", 0, pos) + 1
        end = pos
        for _ in range(extra_lines + 1):
            end = lowered.find("\n", end + 1)
            if end < 0:
                end = len(lowered)
                break
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


# --- tokens ---------------------------------------------------------------------


def _piece_starts(run: str) -> list[int]:
    """Where tokens may start inside a run: its start, and after each '/' or '='."""
    first = len(run) - len(run.lstrip(_LEADING_JUNK))
    if "/" not in run and "=" not in run:
        return [first]
    return [first, *(m.end() for m in _PIECE_BREAK.finditer(run, first))]


def _tokens(text: str, rules: RuleSet, strict: bool) -> Iterator[Finding]:
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
        if simple and not has_digit:
            # The common case in code (identifiers, dotted names): only a prefix can make it a token.
            entry = prefix_index.get(run_text[0])
            if entry is None or not run_text.startswith(entry[0]):
                continue
        covered = run_start
        if has_digit and (hits := _shape_hits(text, run_start, run_end, run_text, rules, strict)):
            covered = hits[-1].end
            yield from hits
        for offset in [0] if simple else _piece_starts(run_text):
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
                and text[pos - 1 : pos] not in _QUOTES  # quoted values: _quoted_assignments
                and (assigned := _assigned_before(text, pos, rules))
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


def _quoted_assignments(text: str, rules: RuleSet) -> Iterator[Finding]:
    """Strict mode: quoted literals of 12+ characters after '=' or ':', judged by their key.

    Catches values whose symbols break them into short runs (a Django
    SECRET_KEY, a generated password) and values shorter than a run.
    """
    for match in _QUOTED_VALUE.finditer(text):
        if (assigned := _assigned_before(text, match.start("value"), rules)) is not None:
            yield assigned


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


# --- assignments: key = value -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Value:
    start: int
    end: int
    quoted: bool
    followed_by_text: bool


def _value_after(text: str, pos: int, quote: str, sep: str = "=") -> _Value | None:
    """The value starting at `pos` (after its opening quote, if any)."""
    if quote:
        q = quote[-1]
        end = pos
        while True:
            end = text.find(q, end, pos + MAX_VALUE + 1)
            if end < 0:
                return None
            if text[end - 1] != "\\":
                break
            end += 1
        if "\n" in text[pos:end]:
            return None
        return _Value(pos, end, True, False)
    match = (_UNQUOTED_AFTER_COLON if sep == ":" else _UNQUOTED).match(text, pos)
    if match is None or match.end() - pos > MAX_VALUE:
        return None
    return _Value(pos, match.end(), False, _LINE_END.match(text, match.end()) is None)


def _kind_for_key(key: str, key_class: keys.KeyClass, rules: RuleSet) -> str:
    key_words = set(keys.words(key))
    for key_kind in rules.key_kinds:
        if key_kind.words <= key_words:
            return key_kind.kind
    return "password" if key_class is keys.KeyClass.PASSWORD else "assigned-secret"


def _assignment(
    text: str,
    key_start: int,
    key_end: int,
    rules: RuleSet,
    strict: bool,
    value_at: int = -1,
    key: str = "",
) -> Finding | None:
    """Judge ``key <sep> value`` with the key at text[key_start:key_end] (or named `key`)."""
    key = key or text[key_start:key_end]
    key_class = keys.classify(key)
    if key_class is None:
        return None
    assign = _ASSIGN.match(text, key_end)
    if assign is None:
        return None
    quote = assign.group("vq") or ""
    value = _value_after(text, assign.end(), quote, assign.group("sep"))
    if value is None or value.end <= value.start or (value_at >= 0 and value.start != value_at):
        return None
    literal = text[value.start : value.end]
    if values.is_marker(literal):
        return None
    if value.quoted:
        if "{" in literal and "}" in literal:  # a format template: f"{token}", "{password}"
            return None
    elif values.is_reference(literal, key) or _is_call_argument(
        text, key_start, assign.group("sep"), literal
    ):
        return None
    if strict:
        line_style = not value.quoted and (
            _starts_line(text, key_start) or (key_start > 0 and text[key_start - 1] in _INLINE_CONFIG)
        )
        if not (value.quoted or line_style):
            return None
        min_len = 12 if key_class is keys.KeyClass.PASSWORD else 16
        if not values.looks_random(literal, min_len=min_len, min_entropy=3.0):
            return None
    elif key_class is keys.KeyClass.PASSWORD:
        if not values.plausible_password(
            literal, quoted=value.quoted, followed_by_text=value.followed_by_text
        ):
            return None
    elif not (
        values.plausible_token(literal)
        or (  # a config line (`JWT_SECRET=supersecretvalue`, `token: abcdefghij`) holds literals
            len(literal) >= 8
            and not value.followed_by_text
            and _is_config_line(text, key_start, key, assign)
            and values.plausible_password(literal, quoted=value.quoted, followed_by_text=False)
        )
    ):
        return None
    return Finding(value.start, value.end, _kind_for_key(key, key_class, rules), PRIORITY_ASSIGNED)


def _starts_line(text: str, pos: int) -> bool:
    """Only indentation, ``export`` or a list dash before `pos` on its line."""
    floor = max(0, pos - 80)
    line_start = text.rfind("\n", floor, pos) + 1
    if line_start == 0 and floor > 0:
        return False
    return _ENV_LINE.match(text, line_start, pos) is not None


def _is_config_line(text: str, key_start: int, key: str, assign: re.Match[str]) -> bool:
    """``KEY=value`` (.env), ``key: value`` (YAML), ``UPPER_KEY = value``: not a code assignment."""
    if not _starts_line(text, key_start):
        return False
    sep = assign.group("sep")
    if sep in (":", "\uff1a"):
        return True
    spaced = assign.group(0)[: assign.start("sep") - assign.start()].endswith((" ", "\t"))
    return sep == "=" and (not spaced or key.isupper())


def _is_call_argument(text: str, key_start: int, sep: str, literal: str) -> bool:
    """``connect(user=user, password=pw)``: a keyword argument naming a variable."""
    if sep != "=" or not literal.isidentifier():
        return False
    before = text[max(0, key_start - 40) : key_start].rstrip()
    return before.endswith(("(", ","))


def _assignments(text: str, lowered: str, rules: RuleSet) -> Iterator[Finding]:
    """Prose mode: every key containing a secret-like word, followed by a value."""
    key_end = -1
    for hit in _occurrences(lowered, _KEY_WORDS):
        if hit < key_end:
            continue
        key_start = hit
        floor = max(0, key_start - 64)
        while key_start > floor and (text[key_start - 1].isalnum() or text[key_start - 1] in "_.-"):
            key_start -= 1
        tail = _KEY_TAIL.match(text, hit)
        key_end = tail.end() if tail else hit + 1
        key = text[key_start:key_end]
        if keys.classify(key) is None and (previous := _PREVIOUS_WORD.search(text, floor, key_start)):
            key = f"{previous.group(1)}_{key}"  # "API key: ...", "secret key = ..."
        if (finding := _assignment(text, key_start, key_end, rules, strict=False, key=key)) is not None:
            yield finding


def _follows_separator(text: str, pos: int) -> bool:
    """A value can start here: after a quote, '=' or ':', or after spaces following one or an auth scheme."""
    prev = text[pos - 1]
    if prev in _VALUE_SEPARATORS:
        return True
    if prev not in " \t":
        return False
    j = pos - 1
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j and text[j - 1] in "=:":
        return True
    word = text[max(0, j - 6) : j].lower()
    return word.endswith(("bearer", "basic"))


def _assigned_before(text: str, pos: int, rules: RuleSet) -> Finding | None:
    """Strict mode: a high-entropy value right after a secret-like key or auth scheme."""
    if not pos or not _follows_separator(text, pos):
        return None
    line_start = max(text.rfind("\n", max(0, pos - 120), pos) + 1, pos - 120)
    before = _KEY_BEFORE_REVERSED.match(text[line_start:pos][::-1])
    if before is None:
        return None
    if before.group("scheme"):
        match = _UNQUOTED.match(text, pos)
        if match is None:
            return None
        token = match.group()
        basic = before.group("scheme").lower() == "cisab"
        ok = _is_basic_credentials(token) if basic else values.looks_random(token)
        kind = "basic-auth" if basic else "bearer-token"
        return Finding(pos, match.end(), kind, PRIORITY_CONTEXT) if ok else None
    key_start, key_end = pos - before.end("key"), pos - before.start("key")
    return _assignment(text, key_start, key_end, rules, strict=True, value_at=pos)


# --- URLs and context rules --------------------------------------------------------


def _url_credentials(text: str, strict: bool) -> Iterator[Finding]:
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


def _is_basic_credentials(token: str) -> bool:
    """Base64 of ``user:password`` (what HTTP Basic auth and docker's "auth" carry)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and password) and decoded.isprintable()


def _context_ok(rule: ContextRule, match: re.Match[str], secret: str, strict: bool) -> bool:
    if values.is_marker(secret) or (len(secret) > MAX_VALUE and rule.kind != "private-key"):
        return False
    if rule.check == "any":
        return not values.is_placeholder(secret)
    if strict:
        return values.looks_random(secret)
    if rule.check == "basic":
        return _is_basic_credentials(secret)
    if rule.check == "password":
        return values.plausible_password(secret, quoted=True, followed_by_text=False)
    if rule.check == "machine_made":
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


def _contexts(text: str, lowered: str, rules: RuleSet, strict: bool) -> Iterator[Finding]:
    """Context rules, each on the lines holding one of its keywords."""
    for rule in rules.code_contexts if strict else rules.contexts:
        has_secret_group = "secret" in rule.regex.groupindex
        keyed = "key" in rule.regex.groupindex
        for start, end in _line_windows(lowered, rule.keywords, rule.lines - 1):
            for match in rule.regex.finditer(text, start, end):
                span = match.span("secret") if has_secret_group else match.span()
                if _context_ok(rule, match, text[span[0] : span[1]], strict):
                    kind = rule.kind
                    if keyed and (key_class := keys.classify(match.group("key"))) is not None:
                        kind = _kind_for_key(match.group("key"), key_class, rules)
                    yield Finding(span[0], span[1], kind, PRIORITY_CONTEXT)


# --- merging and applying ------------------------------------------------------------


def _merge(found: list[Finding]) -> list[Finding]:
    """Overlapping findings become one span named by the most specific kind."""
    if not found:
        return []
    merged: list[Finding] = []
    for finding in sorted(found, key=lambda f: (f.start, -f.priority, -f.end)):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            best = last if last.priority >= finding.priority else finding
            merged[-1] = Finding(last.start, max(last.end, finding.end), best.kind, best.priority)
        else:
            merged.append(finding)
    return merged


def replace(text: str, findings: list[Finding]) -> str:
    """`text` with each finding replaced by ``[REDACTED:<kind>]``."""
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for finding in findings:
        parts.append(text[pos : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)
