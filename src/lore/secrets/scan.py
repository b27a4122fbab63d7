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

import re
from collections.abc import Callable

from . import assignments, context, lines, pem, tokens, values
from .findings import PRIORITY_PEM, Finding, merge, replace
from .rules import load

__all__ = ["Finding", "find", "replace"]

_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")


# Characters that show as nothing: inside a token they hide it from every rule.
# Soft hyphen, combining grapheme joiner, Mongolian vowel separator, zero-width
# and direction marks, bidi embeddings, overrides and isolates, invisible
# operators, variation selectors, BOM.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff]"
)
_ESCAPED_SLASH = re.compile(r"\\/")
_ESCAPED_QUOTE = re.compile(r"\\+(?=[\"'])")  # JSON in a JSON string (a log line): {\"password\":\"…\"}
# A base64 value after a key (a Kubernetes Secret's data, a CI variable): read decoded in prose.
_BASE64 = re.compile(r"[:=][ \t]*[\"']?+(?P<value>[A-Za-z0-9+/]{16,1368}+={0,2}+)(?![\w+/=])")
_PERCENT = re.compile(r"%[2-7][0-9A-Fa-f]")  # percent-encoded printable ASCII
_ENCODED_URL = re.compile(r"%3A%2F%2F", re.I)  # "://", percent-encoded


def find(text: str, *, strict: bool) -> list[Finding]:
    """Every secret in `text`, overlapping findings merged, in order.

    ``[REDACTED:kind]`` markers already in the text are blanked out (same
    length, NUL characters) before scanning, so that a marker can neither be
    a secret nor lend its words to a key: redacting twice changes nothing.
    The text is also read as a reader would see it, where it differs:
    JSON that escapes slashes (``https:\\/\\/hooks.slack.com\\/services\\/…``, as
    PHP writes it) with them unescaped, in prose JSON escaped inside a JSON
    string (``{\\"password\\":\\"…\\"}``, a log line) with its quotes unescaped, characters that show as nothing (a
    zero-width space or soft hyphen inside a token) left out, and a
    percent-encoded URL (``https%3A%2F%2Fadmin%3Apass%40db``) decoded.
    """
    if not text:
        return []
    found = _find(text, strict)
    readings = []
    if "\\/" in text:
        readings.append(_read_as(text, _ESCAPED_SLASH, lambda _match: "/", strict))
    if not strict and '\\"' in text:  # prose and logs; code escapes quotes everywhere, for other reasons
        readings.append(_read_lines(text, '\\"', _ESCAPED_QUOTE, strict))
    if _INVISIBLE.search(text):
        readings.append(_read_as(text, _INVISIBLE, lambda _match: "", strict))
    if _ENCODED_URL.search(text):
        readings.append(_read_as(text, _PERCENT, lambda match: chr(int(match.group()[1:], 16)), strict))
    if not strict:
        readings.append(_decoded(text))
    if not readings:
        return found
    return merge([*found, *(finding for reading in readings for finding in reading)])


def _read_as(
    text: str, pattern: re.Pattern[str], reading: Callable[[re.Match[str]], str], strict: bool
) -> list[Finding]:
    """The findings in `text` read with each match of `pattern` as `reading`
    gives it, placed back in `text` (a finding covers the whole of each match
    it touches)."""
    matches = list(pattern.finditer(text))
    plain: list[str] = []
    origin: list[int] = []  # origin[i]: where plain[i] comes from in text
    position = 0
    for match in matches:
        plain.append(text[position : match.start()])
        origin.extend(range(position, match.start()))
        read = reading(match)
        plain.append(read)
        origin.extend([match.start()] * len(read))
        position = match.end()
    plain.append(text[position:])
    origin.extend(range(position, len(text)))
    ends = {match.start(): match.end() for match in matches}
    findings = []
    for f in _find("".join(plain), strict):
        start, last = origin[f.start], origin[f.end - 1]
        findings.append(Finding(start, ends.get(last, last + 1), f.kind, f.priority))
    return findings


def _read_lines(text: str, marker: str, pattern: re.Pattern[str], strict: bool) -> list[Finding]:
    """:func:`_read_as` with `pattern`'s matches left out, on the lines holding
    `marker` only (a 140 KB manual with a few escaped quotes is not read twice)."""
    found = []
    start = text.find(marker)
    while start >= 0:
        begin = text.rfind("\n", 0, start) + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        for f in _read_as(text[begin:end], pattern, lambda _match: "", strict):
            found.append(Finding(f.start + begin, f.end + begin, f.kind, f.priority))
        start = text.find(marker, end)
    return found


def _decoded(text: str) -> list[Finding]:
    """Base64 values whose decoded text holds a secret (``DATABASE_URL:
    cG9zdGdyZXM6Ly9…`` is ``postgres://app:…@db``): the whole value is one."""
    import base64
    import binascii

    found = []
    for match in _BASE64.finditer(text):
        value = match.group("value")
        if len(value) % 4 or not any(c.isdigit() or c in "+/=" for c in value):
            continue  # not base64's length; a long word or name, not an encoding
        try:
            plain = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        # `echo url | base64` ends with a newline; an .env file has several lines
        readable = plain.replace("\n", "").replace("\r", "").replace("\t", "").isprintable()
        inside = _find(plain, strict=False) if readable else []
        if inside:
            found.append(
                Finding(match.start("value"), match.end("value"), inside[0].kind, inside[0].priority)
            )
    return found


def _find(text: str, strict: bool) -> list[Finding]:
    if values.MARKER in text:
        text = _MARKER.sub(lambda marker: "\0" * len(marker.group()), text)
    rules = load()
    found: list[Finding] = []
    if "PRIVATE KEY" in text:
        found.extend(Finding(s, e, "private-key", PRIORITY_PEM) for s, e in pem.find(text))
    found.extend(tokens.find(text, rules, strict))
    if strict:
        found.extend(assignments.quoted(text, rules))
    if "://" in text:
        found.extend(context.url_credentials(text, strict))
    lowered = lines.lower(text)
    if not strict or any(keyword in lowered for keyword in rules.code_context_keywords):
        found.extend(context.find(text, lowered, rules, strict))
    if not strict:
        found.extend(assignments.in_prose(text, lowered, rules))
        if "--" in text and "|" in text:
            found.extend(assignments.table_columns(text, rules))
    return merge(found) if found else found
