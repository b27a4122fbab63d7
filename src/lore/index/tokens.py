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
from bisect import bisect_right
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


# Tokens a character outside ASCII costs, by the first code point of its block
# (cl100k's vocabulary is mostly English: a Cyrillic word is a few tokens, a
# Japanese or Hebrew letter about one, an emoji two or three). Measured with
# bench/token_scripts.py against cl100k on sentences in 14 scripts.
_WIDE_COSTS = (
    (0x0080, 0.5),  # accented Latin (on top of the word's own cost)
    (0x0250, 1.0),  # IPA, spacing modifiers, combining marks
    (0x0370, 1.0),  # Greek
    (0x0400, 0.4),  # Cyrillic (Russian's common words are a token or two; Ukrainian costs more)
    (0x0530, 1.0),  # Armenian
    (0x0590, 1.2),  # Hebrew
    (0x0600, 0.85),  # Arabic, Syriac, Thaana...
    (0x0900, 1.1),  # Indic scripts
    (0x0E00, 0.95),  # Thai, Lao, Tibetan, Georgian...
    (0x1E00, 1.5),  # Latin Extended Additional (Vietnamese)
    (0x1F00, 1.0),  # Greek Extended
    (0x2000, 1.0),  # punctuation, symbols, arrows...
    (0x3000, 1.0),  # CJK punctuation, kana, ideographs
    (0xAC00, 1.1),  # Hangul syllables
    (0xD7B0, 1.0),  # private use, compatibility forms
    (0x1F000, 3.0),  # emoji and pictographs
)
_WIDE_STARTS = [start for start, _ in _WIDE_COSTS]


def _wide_cost(piece: str) -> float:
    """What the characters of `piece` beyond ASCII add to its cost."""
    return sum(_WIDE_COSTS[bisect_right(_WIDE_STARTS, ord(ch)) - 1][1] for ch in piece if ch > "\x7f")


def _piece_cost(piece: str) -> int:
    """Tokens of one pre-tokeniser piece."""
    if not piece.isascii():
        latin = all(ch < "\u0250" for ch in piece)
        if not latin:  # its ASCII part as usual (if any), each other character by its script
            ascii_part = "".join(ch for ch in piece if ch <= "\x7f").strip()
            return max(1, round(_wide_cost(piece) + (_ascii_cost(ascii_part) if ascii_part else 0)))
        return max(1, round(_ascii_cost(piece) + _wide_cost(piece)))
    return _ascii_cost(piece)


def _ascii_cost(piece: str) -> int:
    """Tokens of one piece by its letters' and marks' counts (the rules of ASCII text)."""
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
