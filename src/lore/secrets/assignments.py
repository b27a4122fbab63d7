"""``key = value`` in every syntax: is the key secret-like, and is the value a literal secret?

Prose mode finds every key holding a secret-like word and judges what follows
it; strict mode (code) starts from a candidate value and reads the key before
it. Both end in :func:`judge`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from . import keys, lines, values
from .findings import PRIORITY_ASSIGNED, PRIORITY_CONTEXT, Finding
from .rules import RuleSet

# An assignment after a key: closing quotes, an optional type annotation, the
# separator (a comma before a quote: a call's arguments), an optional opening
# quote (with string prefixes like b"" f"" @""). Prose writes a key in Markdown
# emphasis (`**Password:** …`, `**Password**: …`) or qualified (`Password
# (staging): …`, `password for staging: …`).
# An annotation is followed by a value on its line: `password: WGs5I21RMiE=` ending
# its line is base64 under a key (a Kubernetes Secret's data), not `key: type =`;
# an `=` glued to it opens a literal (`key: str="…"`): `password: Tr0b=Bz9Vun0` is a value.
# A no-break space (pasted from a web page or a chat) counts as a space; a Markdown
# table's cell border as a separator (`| DB_PASSWORD | hunter2x9 |`, prose only).
_ASSIGN = re.compile(
    r"""(?P<kq>(?:\*{1,2}|_{1,2})?["'`]{0,2}\]?["'`]?)
        (?P<qual>[ \t]+\([^()\n]{1,40}\)|[ \t]+for[ \t]+[\w.\-]{1,40})?
        (?P<ann>[ \t]*:[ \t]*[A-Za-z_][\w\[\], .|]{0,60}?(?=[ \t]+=[ \t]*[^=>\s]|=[ \t]*[@rRbBuUfF]{0,2}["'`(\[{]))?
        [ \t\u00a0]*(?P<sep>:=|=>|==|!=|=|:(?!//)|\uff1a|\|(?![|\-:])|,(?=[ \t]*[@rRbBuUfF]{0,2}["'`]))
        (?:\*{1,2}|_{1,2})?[ \t\u00a0]*(?P<vq>[@rRbBuUfF]{0,2}["'`])?""",
    re.X,
)
# Unquoted values end at a space, a quote or a closing bracket; after '=' also at ';' '&' ','
# (connection strings, query strings, argument lists), after ':' only at ',' (YAML, headers).
# Longer values are data (blobs, encoded files), not credentials typed or pasted by a person.
MAX_VALUE = 1000
_UNQUOTED = re.compile(r"[^\s'\"`,;&<>)\]}\0]{1,1024}")
_UNQUOTED_AFTER_COLON = re.compile(r"[^\s'\"`,<>)\]}\0]{1,1024}")
_UNQUOTED_CELL = re.compile(r"[^\s'\"`|\0]{1,1024}")  # a table cell ends at its border
# On a line of its own (`.env`, YAML, properties) a value runs to the next space: `;`, `&`
# and `,` are a password's symbols there, not the end of a connection or query string.
_UNQUOTED_LINE = re.compile(r"[^\s'\"`\0]{1,1024}")
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
_KEY_TAIL = re.compile(r"[\w.\-]*")
# The key (or auth scheme) that ends right where a value starts, for strict mode.
# It is matched on the text before the value *reversed*, so one anchored match does the
# work of a search: read right to left, the opening quote (and string prefix), the
# separator, an optional type annotation, the key's closing quote, the key.
_KEY_BEFORE_REVERSED = re.compile(
    r"""(?:(?:["'`][@rRbBuUfF]{0,2})?
           [ \t]*(?:=:|>=|==|=!|=|:|\uff1a|,)
           (?:[ \t]*[\w\[\], .|]{0,60}?[A-Za-z_][ \t]*:)?
           [ \t]*["'`]?\]?["'`]{0,2}
           (?P<key>[\w.\-]*[A-Za-z_\-])
        |[ \t]+(?P<scheme>(?i:reraeb|cisab))(?![\w]))""",
    re.X,
)
_VALUE_SEPARATORS = frozenset("\"'`=:")
# A snake_case or kebab-case name: what a list of keys holds next to a key.
_NAME_LIKE = re.compile(r"[a-z][a-z0-9]*(?:[_\-][a-z0-9]+)+")
QUOTES = frozenset("\"'`")
_QUOTED_VALUE = re.compile(
    r"""(?:[=:]>?|,)[ \t]*[@bBrRuUfF]{0,2}(?P<q>["'`])(?P<value>[^"'`\s\\]{12,200})(?P=q)"""
)
_ENV_LINE = re.compile(r"[ \t]*(?:export[ \t]+|-[ \t]+)?$")
# Keys right after these are inside a connection string, a query or an .npmrc line.
_INLINE_CONFIG = frozenset(";&?:")


@dataclass(frozen=True, slots=True)
class _Value:
    start: int
    end: int
    quoted: bool
    followed_by_text: bool


def _value_after(text: str, pos: int, quote: str, sep: str = "=", *, own_line: bool = False) -> _Value | None:
    """The value starting at `pos` (after its opening quote, if any); `own_line`:
    the key starts its line (a config line, not a connection or query string)."""
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
    if sep == "|":
        unquoted = _UNQUOTED_CELL
    elif own_line and sep in ("=", ":"):
        unquoted = _UNQUOTED_LINE
    else:
        unquoted = _UNQUOTED_AFTER_COLON if sep == ":" else _UNQUOTED
    match = unquoted.match(text, pos)
    if match is None or match.end() - pos > MAX_VALUE:
        return None
    end = match.end()
    trailing = ".:,;)]}" if unquoted is _UNQUOTED_LINE else ".:"
    while end > pos + 1 and text[end - 1] in trailing:  # end of a sentence, `if password == None:`
        end -= 1
    return _Value(pos, end, False, _LINE_END.match(text, match.end()) is None)


def kind_for_key(key: str, key_class: keys.KeyClass, rules: RuleSet) -> str:
    """The kind reported for a secret assigned to `key` (rules.toml's key_kind tables)."""
    key_words = set(keys.words(key))
    for key_kind in rules.key_kinds:
        if key_kind.words <= key_words:
            return key_kind.kind
    return "password" if key_class is keys.KeyClass.PASSWORD else "assigned-secret"


def judge(
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
    if assign is None or (strict and assign.group("sep") == "|"):
        return None
    # A quoted key, a comma, a quoted value: a call's arguments (`define('API_KEY', '…')`,
    # `put("apiKey", "…")`), in code only (prose reads "the token, 'x'" as a sentence).
    if assign.group("sep") == "," and not (strict and assign.group("kq")):
        return None
    quote = assign.group("vq") or ""
    own_line = not quote and _starts_line(text, key_start)
    value = _value_after(text, assign.end(), quote, assign.group("sep"), own_line=own_line)
    if value is None or value.end <= value.start or (value_at >= 0 and value.start != value_at):
        return None
    literal = text[value.start : value.end]
    if values.is_marker(literal):
        return None
    if assign.group("sep") == "," and _NAME_LIKE.fullmatch(literal):
        return None  # a list of names (`("private_key", "public_key_sha256")`), not a key and its value
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
    return Finding(value.start, value.end, kind_for_key(key, key_class, rules), PRIORITY_ASSIGNED)


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


def in_prose(text: str, lowered: str, rules: RuleSet) -> Iterator[Finding]:
    """Prose mode: every key containing a secret-like word, followed by a value."""
    key_end = -1
    for hit in lines.occurrences(lowered, _KEY_WORDS):
        if hit < key_end:
            continue
        key_start = hit
        floor = max(0, key_start - 64)
        while key_start > floor and (text[key_start - 1].isalnum() or text[key_start - 1] in "_.-"):
            key_start -= 1
        tail = _KEY_TAIL.match(text, hit)
        key_end = tail.end() if tail else hit + 1
        phrase = next((p for p in keys.PHRASES if lowered.startswith(p, hit)), None)
        if phrase is not None:  # a key of several words: "mot de passe : …"
            key_end = hit + len(phrase)
        if _ASSIGN.match(text, key_end) is None:
            continue  # no separator after it: nothing assigned (judge would say so, after more work)
        if text.startswith("${", key_start - 2) and text.startswith((":?", "?"), key_end):
            continue  # ${PASSWORD:?must be set}: the shell's message when it is unset
        key = text[key_start:key_end]
        if keys.classify(key) is None and (previous := _PREVIOUS_WORD.search(text, floor, key_start)):
            key = f"{previous.group(1)}_{key}"  # "API key: ...", "secret key = ..."
        if (finding := judge(text, key_start, key_end, rules, strict=False, key=key)) is not None:
            yield finding


# A Markdown table's delimiter row: `|---|:--:|`, `--- | ---`.
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)+\|?[ \t]*$", re.M)


def table_columns(text: str, rules: RuleSet) -> Iterator[Finding]:
    """Prose mode: the cells under a Markdown table's header that names a
    secret (``| user | password |``), each judged as that key's value."""
    rules_found = list(_TABLE_RULE.finditer(text))
    # A table's rows end where the next table's header starts: each line is read once.
    headers = [text.rfind("\n", 0, max(0, rule.start() - 1)) + 1 for rule in rules_found]
    for number, rule in enumerate(rules_found):
        header_end = rule.start() - 1
        if header_end < 0:
            continue
        header_start = headers[number]
        rows_end = headers[number + 1] if number + 1 < len(rules_found) else len(text)
        header = _cells(text, header_start, header_end)
        secret = [
            (i, key, cls) for i, (_, _, key) in enumerate(header) if (cls := keys.classify(key)) is not None
        ]
        if not secret:
            continue
        row_start = rule.end() + 1
        while row_start < rows_end:
            row_end = text.find("\n", row_start, rows_end)
            row_end = rows_end if row_end < 0 else row_end
            if "|" not in text[row_start:row_end]:
                break
            cells = _cells(text, row_start, row_end)
            for column, key, key_class in secret:
                if column >= len(cells):
                    continue
                start, end, value = cells[column]
                quoted = len(value) > 1 and value[0] == value[-1] and value[0] in QUOTES
                if quoted:
                    start, end, value = start + 1, end - 1, value[1:-1]
                plausible = (
                    values.plausible_password(value, quoted=quoted, followed_by_text=False)
                    if key_class is keys.KeyClass.PASSWORD
                    else values.plausible_token(value)
                )
                if plausible and not values.is_marker(value) and not values.is_reference(value, key):
                    yield Finding(start, end, kind_for_key(key, key_class, rules), PRIORITY_ASSIGNED)
            row_start = row_end + 1


def _cells(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """A table row's cells between `start` and `end`: (start, end, text), stripped."""
    line = text[start:end]
    inner_start = start + (len(line) - len(line.lstrip()))
    line = line.strip()
    if line.startswith("|"):
        line, inner_start = line[1:], inner_start + 1
    if line.endswith("|"):
        line = line[:-1]
    cells = []
    position = 0
    for part in line.split("|"):
        lead = len(part) - len(part.lstrip())
        cells.append(
            (inner_start + position + lead, inner_start + position + len(part.rstrip()), part.strip())
        )
        position += len(part) + 1
    return cells


def quoted(text: str, rules: RuleSet) -> Iterator[Finding]:
    """Strict mode: quoted literals of 12+ characters after '=' or ':', judged by their key.

    Catches values whose symbols break them into short runs (a Django
    SECRET_KEY, a generated password) and values shorter than a run.
    """
    for match in _QUOTED_VALUE.finditer(text):
        if (assigned := assigned_before(text, match.start("value"), rules)) is not None:
            yield assigned


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


def assigned_before(text: str, pos: int, rules: RuleSet) -> Finding | None:
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
        ok = values.is_basic_credentials(token) if basic else values.looks_random(token)
        kind = "basic-auth" if basic else "bearer-token"
        return Finding(pos, match.end(), kind, PRIORITY_CONTEXT) if ok else None
    key_start, key_end = pos - before.end("key"), pos - before.start("key")
    return judge(text, key_start, key_end, rules, strict=True, value_at=pos)
