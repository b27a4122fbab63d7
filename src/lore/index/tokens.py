"""Offline token counting.

Budgets and chunk sizes are in tokens of a modern BPE vocabulary (cl100k-like).
tiktoken downloads its vocabulary at run time, so Lore estimates instead: text
is split the way BPE pre-tokenisers split it (words with their leading space,
digit runs, punctuation runs, whitespace), and each piece is charged by length.
The per-piece costs were calibrated against cl100k_base on prose, Markdown and
code (see tests/test_tokens.py, which checks the estimate stays within 10%).
"""

from __future__ import annotations

import re

_SHORT = 6
_WORD_PIECE = 4
_PUNCT_PIECE = 3

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


def count_tokens(text: str) -> int:
    """Estimate the BPE token count of `text` (within ~10% of cl100k)."""
    total = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        n = len(piece)
        if n <= _SHORT:
            total += 1
            continue
        if piece[-1].isalpha():
            # Common words are one token; long identifiers and rare words
            # split into pieces of a few characters.
            total += 1 + (n - _SHORT) // _WORD_PIECE
        elif piece[0].isspace():
            total += 1
        else:
            total += 1 + (n - _SHORT) // _PUNCT_PIECE
    return total
