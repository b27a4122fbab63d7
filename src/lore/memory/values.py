"""Guards for values that come from memory files or from users.

A value that Lore cannot store, index or write back faithfully is refused
here with a :class:`~lore.errors.ValidationError` naming the field, before it
reaches SQLite (integers over 64 bits), a terminal or a one-line field
(control characters, line breaks), a file (lone surrogates, which UTF-8
cannot encode), or a recursive walk (cycles, absurd nesting).
"""

from __future__ import annotations

import math
import re
import unicodedata

from lore.errors import ValidationError

MAX_INT = 2**63 - 1
"""Largest integer Lore accepts anywhere (SQLite's INTEGER is 64-bit signed)."""
MIN_INT = -(2**63)
MAX_LINE = 10**9
"""Largest line number a memory may point at (Key Files); larger means "no line"."""
MAX_DEPTH = 32
"""Deepest nesting of lists/mappings accepted in a field's value."""
MAX_NODES = 100_000
"""Most scalars + collections in one field's value."""

_SURROGATE = re.compile("[\ud800-\udfff]")
# One-line fields: no control characters (C0, DEL, C1) and no Unicode line or
# paragraph separators, which YAML and editors treat as line breaks.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def describe_char(char: str) -> str:
    """``U+0007 (BEL)``-style name of a character for error messages."""
    name = unicodedata.name(char, "")
    if not name:
        name = {"\n": "line break", "\r": "carriage return", "\t": "tab", "\x00": "NUL"}.get(char, "")
    return f"U+{ord(char):04X}" + (f" ({name.lower()})" if name else "")


def check_text(value: str, field: str, *, path: str | None = None) -> None:
    """Multi-line text (a body, a string inside an extra field): any character
    but NUL and lone surrogates (left by bytes that were not UTF-8)."""
    if "\x00" in value:
        raise ValidationError("contains a NUL character; remove it", field=field, path=path)
    bad = _SURROGATE.search(value)
    if bad:
        raise ValidationError(
            f"is not valid Unicode ({describe_char(bad.group())} at character {bad.start()}, "
            "from bytes that were not UTF-8); give UTF-8 text",
            field=field,
            path=path,
        )


def check_line(value: str, field: str, *, path: str | None = None) -> None:
    """One-line text (title, keyword, id, scope, agent...): no control
    characters or line breaks, no lone surrogates."""
    check_text(value, field, path=path)
    bad = _NOT_ONE_LINE.search(value)
    if bad:
        raise ValidationError(
            f"must be one line without control characters (has {describe_char(bad.group())} "
            f"at character {bad.start()}); remove it",
            field=field,
            path=path,
        )


def fold_line(text: str) -> str:
    """`text` made into a valid one-line value: whitespace runs (line breaks,
    tabs) become one space, other control characters and lone surrogates go."""
    text = _SURROGATE.sub("", text)
    text = " ".join(_NOT_ONE_LINE.sub(" ", text).split())
    return text


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def quoted(value: object, limit: int = 60) -> str:
    """A user's value quoted for a one-line error message: redacted, then cut
    (cut first, a token lost its end and no longer looked like one)."""
    from lore.secrets import redact

    return "'" + clip(redact(fold_line(str(value)[: 4 * limit + 1000]))[0], limit) + "'"


def check_int(value: int, field: str, *, path: str | None = None) -> None:
    """A 64-bit signed integer, as SQLite stores them."""
    if not MIN_INT <= value <= MAX_INT:
        raise ValidationError(
            f"number {_short(value)} is out of range; whole numbers must be between -2^63 and 2^63-1",
            field=field,
            path=path,
        )


def safe_line(value: object) -> int | None:
    """A line number from a memory (e.g. Key Files' ``src/a.py:45``), or None.

    None for anything that is not a plain ASCII number between 1 and
    :data:`MAX_LINE` (so ``:0``, ``:99999999999999999999`` and digits of
    other scripts mean "no line", never an overflow or a 4,300-digit int).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1 <= value <= MAX_LINE else None
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(MAX_LINE)):
        return None
    number = int(text)
    return number if 1 <= number <= MAX_LINE else None


def check_plain(value: object, field: str, *, path: str | None = None) -> None:
    """Plain YAML data Lore can write back exactly: strings, 64-bit integers,
    floats, booleans, null, lists and mappings (with scalar keys), nested at
    most :data:`MAX_DEPTH` deep, without cycles, at most :data:`MAX_NODES`
    values (a value shared in several places is written out each time, and
    counted each time). Raises :class:`ValidationError` naming `field`.
    """
    nodes = 0
    on_path: set[int] = set()

    def walk(item: object, depth: int) -> None:
        nonlocal nodes
        nodes += 1
        if nodes > MAX_NODES:
            raise ValidationError(
                f"has more than {MAX_NODES} values; make it smaller", field=field, path=path
            )
        if item is None or isinstance(item, (bool, float)):
            return
        if isinstance(item, int):
            check_int(item, field, path=path)
            return
        if isinstance(item, str):
            check_text(item, field, path=path)
            return
        if not isinstance(item, (list, dict)):
            raise ValidationError(
                f"holds a {type(item).__name__} value, which Lore cannot write back; "
                "use text, numbers, true/false, lists or mappings",
                field=field,
                path=path,
            )
        if depth >= MAX_DEPTH:
            raise ValidationError(
                f"is nested more than {MAX_DEPTH} levels deep; flatten it", field=field, path=path
            )
        if id(item) in on_path:
            raise ValidationError(
                "contains itself (a cycle); it can't be written out", field=field, path=path
            )
        on_path.add(id(item))
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, (list, dict)) or not (key is None or isinstance(key, (str, int, float))):
                    raise ValidationError(
                        "has a mapping key that is not text or a number", field=field, path=path
                    )
                walk(key, depth + 1)
                walk(child, depth + 1)
        else:
            for child in item:
                walk(child, depth + 1)
        on_path.discard(id(item))

    walk(value, 0)


def same_value(a: object, b: object) -> bool:
    """Exact equality for plain data: types must match (``1``, ``1.0`` and
    ``True`` differ), NaN equals NaN, mappings compare key by key."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    return a == b


def _short(value: int) -> str:
    # str() of a huge int is slow, and refused past 4,300 digits.
    if abs(value) < 10**20:
        return str(value)
    return f"of about {int(value.bit_length() * 0.30103) + 1} digits"
