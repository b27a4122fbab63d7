"""Small text rules shared by the bundle reader, decision mining and rendering."""

from __future__ import annotations

import re

__all__ = ["BULLET", "capitalize", "item_key"]

# A list item's marker: "- ", "* ", "+ ", "• ", "1. ", "2) ".
BULLET = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")


def capitalize(text: str) -> str:
    """`text` with its first character upper-cased (the rest untouched)."""
    return text[:1].upper() + text[1:]


def item_key(text: str) -> str:
    """Comparison key of a list item: case, spacing, end punctuation and a
    trailing ``(sha)`` ignored, so the same point made twice is listed once."""
    text = re.sub(r"\s*\([0-9a-f]{7,40}\)\s*$", "", text.strip())
    return " ".join(text.lower().split()).rstrip(".;:!")
