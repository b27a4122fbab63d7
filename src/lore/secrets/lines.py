"""Words in a lower-cased text and the lines that hold them, at C speed (str.find loops)."""

from __future__ import annotations

import string

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def lower(text: str) -> str:
    """Lower-cased text with the same indices (str.lower can change the length)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def occurrences(lowered: str, words: tuple[str, ...]) -> list[int]:
    """Sorted positions of every occurrence of any of `words` (C-speed str.find loops)."""
    positions: list[int] = []
    for word in words:
        i = lowered.find(word)
        while i >= 0:
            positions.append(i)
            i = lowered.find(word, i + 1)
    positions.sort()
    return positions


def line_windows(lowered: str, words: tuple[str, ...], extra_lines: int) -> list[tuple[int, int]]:
    """Merged (start, end) spans: each line holding one of `words`, plus `extra_lines` after it."""
    windows: list[tuple[int, int]] = []
    for pos in occurrences(lowered, words):
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
