"""Which encoding a code file's bytes are text in, or that they are no text.

UTF-8 first, as nearly every file is. A file with a byte-order mark is read
in the encoding the mark names (UTF-16 is full of NUL bytes, and was taken
for binary). A file that declares its encoding on one of its first two
lines (``# -*- coding: latin-1 -*-``, Python's PEP 263 and Emacs's and
Vim's forms; ``<?xml ... encoding="..."?>``) is read in it. A file that is
neither but reads as a legacy single-byte text (Windows-1252, a superset
of Latin-1 for what matters here: an older Java or PHP code base's accented
comments) is read so: it was skipped as "binary (not UTF-8)" when more than
2% of its bytes were accented letters, and shown with U+FFFD in their place
below that. A file that holds UTF-8 with a few stray bytes stays UTF-8.
"""

from __future__ import annotations

import codecs
import re

# The share of a head's bytes that may be invalid UTF-8 in a file still read
# as UTF-8 (a Latin-1 "café" pasted into a UTF-8 file), and the share of
# bytes above 127 a legacy single-byte text may have (accented prose, not a blob).
_BAD_BYTES = 0.02
_HIGH_BYTES = 0.3
_LEGACY = "cp1252"
_DECLARED = re.compile(
    rb"^[ \t\f]*(?:#|//|/\*|--|;|%|<!--|\").*?coding[:=][ \t]*(?P<name>[-\w.]+)"
    rb"|<\?xml[^>]*\bencoding=[\"'](?P<xml>[-\w.]+)[\"']"
)
# Controls no text holds (tab, line feed, form feed, carriage return and escape are fine).
_ASCII = bytes(range(128))
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def text_encoding(data: bytes, *, whole: bool = True) -> str | None:
    """The encoding `data` is text in, or None for no text. `whole`: `data` is
    the whole file, not its head (whose last character may be cut)."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\0" in data:
        return None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=whole)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    declared = _declared(data)
    if declared is not None and _decodes(data, declared, whole):
        return declared
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    if len(text) - len(text.encode("ascii", "ignore")) - bad > bad:  # mostly UTF-8: a few stray bytes
        return "utf-8" if bad <= _BAD_BYTES * len(data) else None
    if _legacy(data):
        return _LEGACY
    return "utf-8" if bad <= _BAD_BYTES * len(data) else None


def decode_text(data: bytes) -> str:
    """`data` (a file :func:`text_encoding` finds text) as text; bytes its
    encoding cannot read become U+FFFD."""
    return data.decode(text_encoding(data) or "utf-8", errors="replace")


def _declared(data: bytes) -> str | None:
    """The encoding the first two lines declare, if Python knows it."""
    for line in data.split(b"\n", 2)[:2]:
        found = _DECLARED.search(line[:300])
        if found is not None:
            name = (found["name"] or found["xml"]).decode("ascii")
            try:
                return codecs.lookup(name).name
            except LookupError:
                return None
    return None


def _decodes(data: bytes, encoding: str, whole: bool) -> bool:
    try:
        codecs.getincrementaldecoder(encoding)().decode(data, final=whole)
    except (UnicodeDecodeError, LookupError):
        return False
    return True


def _legacy(data: bytes) -> bool:
    """Whether `data` reads as text in a single-byte encoding: few bytes above
    127, and none that is a control character there."""
    high = len(data.translate(None, _ASCII))  # (the ASCII bytes deleted)
    if high > _HIGH_BYTES * len(data):
        return False
    return _CONTROLS.search(data.decode(_LEGACY, "replace")) is None
