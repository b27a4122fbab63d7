"""Offline token counting.

Budgets and chunk sizes are in tokens of a modern BPE vocabulary (cl100k-like).
tiktoken downloads its vocabulary at run time, so Lore estimates instead: text
is split the way BPE pre-tokenisers split it (words with their leading space,
digit runs, punctuation runs, whitespace), and each piece is charged by length.
The per-piece costs were calibrated against cl100k_base on prose, Markdown and
code (tests/test_recall.py checks it stays within 10% against the real tokenizer,
from the `bpe-openai` package).
"""

from __future__ import annotations

import re
from functools import lru_cache

_SHORT = 6  # a letter run up to this long is one token
_WORD_PIECE = 4  # longer ones cost a token per this many more letters
_PUNCT_SHORT = 2  # a punctuation run up to this long is one token
_PUNCT_PIECE = 2  # longer ones cost a token per this many more characters
_SPACE_RUN = 32  # a whitespace run up to this long is one token
_SPACE_PIECE = 16  # longer ones cost a token per this many characters

# cl100k's pre-tokeniser, restated for `re` (no \p{L}): a letter run with one
# optional leading non-letter (" foo", ".foo", "_foo"), up to three digits, a
# punctuation run with trailing newlines, newline runs, other whitespace.
_PIECES = re.compile(
    r"(?:[^\r\n\w]|_)?[^\W\d_]+"
    r"|\d{1,3}"
    r"| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
)


_OPENERS = frozenset("[\\")  # regex classes and escapes: "[abc", "\\d"
_CAMEL = re.compile(r"[a-z][A-Z]")
_CAMEL_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[^\W\d_]")


class _PieceCosts(dict[str, int]):
    """Cost of each distinct piece seen (words, whitespace and punctuation runs
    repeat endlessly): a dict lookup in C instead of the rules of
    :func:`_piece_cost`, for most pieces. Bounded."""

    def __missing__(self, piece: str) -> int:
        cost = _piece_cost(piece)
        if len(self) < 100_000:
            self[piece] = cost
        return cost


_PIECE_COSTS = _PieceCosts()


# Where a text can be cut with no piece straddling the cut: after a newline
# whose line goes on to something other than whitespace. Every piece there
# ends at the newline (the whitespace run, or the punctuation run that takes
# it, ends at its last newline) and the next piece starts on the new line
# whatever came before it, so a text's count is the sum of its segments'
# (checked on the standard library and by tests/test_recall.py's property).
_CUT = re.compile(r"(?<=\n)(?=[ \t]*[^\s])")


class _SegmentCosts(dict[str, int]):
    """Tokens of each segment (a line, or lines) counted before: a pack
    renders an item at several levels, which share their lines, and is then
    counted whole. Bounded: emptied when its segments take about
    :data:`_SEGMENTS_MAX` bytes (their characters and what an entry costs:
    a million one-character lines are no small cache)."""

    size = 0

    def __missing__(self, segment: str) -> int:
        cost = _counted(segment)
        self.size += len(segment) + _ENTRY_BYTES
        if self.size > _SEGMENTS_MAX:
            self.clear()
            self.size = len(segment) + _ENTRY_BYTES
        self[segment] = cost
        return cost


_SEGMENTS_MAX = 8_000_000
_ENTRY_BYTES = 120  # a str's header, an int and the dict's slot, about
_SEGMENTS = _SegmentCosts()


@lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Estimate the BPE token count of `text` (within ~10% of cl100k).

    Cached, and by line: recall counts the same snippets and memories at
    several detail levels, and the pack they make, call after call."""
    if "\n" not in text:
        return _counted(text)
    return sum(map(_SEGMENTS.__getitem__, _CUT.split(text)))


def _counted(text: str) -> int:
    """Tokens of `text`, piece by piece (no cut, no cache of its own)."""
    return sum(map(_PIECE_COSTS.__getitem__, _PIECES.findall(text)))


def _piece_cost(piece: str) -> int:
    """Tokens of one pre-tokeniser piece."""
    total = 0
    n = len(piece)
    if piece[0] in _OPENERS and n > 1:
        # The vocabulary rarely glues these to letters.
        total += 1
        piece, n = piece[1:], n - 1
    if piece[-1].isalpha():
        if n > 4 and not piece.isupper() and _CAMEL.search(piece):
            # camelCase: each part is (about) a word of its own.
            total += sum(
                1 if len(p) <= _SHORT else 1 + (len(p) - _SHORT) // _WORD_PIECE
                for p in _CAMEL_PARTS.findall(piece)
            )
        elif piece.isupper() and n > 3:
            # CONSTANT_NAMES are rare in the vocabulary: ~3 letters a token.
            total += 1 + (n - 3) // 3
        else:
            # Common words are one token; long identifiers and rare words
            # split into pieces of a few characters.
            total += 1 if n <= _SHORT else 1 + (n - _SHORT) // _WORD_PIECE
    elif piece.isspace():
        # Indentation and blank lines are a token; a long run is several (cl100k:
        # ~16 tabs a token), or 100 KB of them passed for one token.
        total += 1 if n <= _SPACE_RUN else 1 + n // _SPACE_PIECE
    elif piece[-1].isdigit():
        total += 1
    else:
        # A punctuation run (" ====", "}}}}"), its leading space free as a word's is:
        # charged as one token, " " + 300,000 braces made a one-token chunk of 300 KB.
        n -= piece[0] == " "
        total += 1 if n <= _PUNCT_SHORT else 1 + (n - _PUNCT_SHORT) // _PUNCT_PIECE
    return total
