"""Chunking of memory bodies (seed 000): by section, ~500 tokens, ~50 overlap.

Chunks never span sections; a section shorter than the target stays whole;
frontmatter is not chunked (its fields go to the `memories` table).
"""

from __future__ import annotations

import re

from lore.index.tokens import count_tokens
from lore.records import datarecord

MAX_TOKENS = 500
OVERLAP_TOKENS = 50
_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$")
# 000's section ids; other headings get a slug of their own.
_KNOWN = {
    "summary": "summary",
    "approach": "approach",
    "decisions": "decisions",
    "key_files": "key_files",
    "lessons": "lessons",
    "cross_agent_intel": "cross_agent_intel",
}


@datarecord
class Section:
    section: str  # section id, e.g. "key_files"; "body" before any heading
    start: int  # 0-based line index in the body, inclusive
    end: int  # exclusive
    text: str


def section_id(heading: str) -> str:
    key = re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")
    return _KNOWN.get(key, key or "body")


def split_sections(body: str) -> list[Section]:
    """Cut a body at its level-1/2 headings (code fences respected)."""
    lines = body.split("\n")
    cuts: list[tuple[int, str]] = [(0, "body")]
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            cuts.append((i, section_id(match.group(2))))
    sections = []
    for (start, name), (end, _) in zip(cuts, cuts[1:] + [(len(lines), "")]):
        text = "\n".join(lines[start:end]).strip()
        # A heading alone (e.g. 001's "# Title" line) carries no content of its own.
        if text and not (end - start == 1 and _HEADING.match(lines[start])):
            sections.append(Section(name, start, end, text))
    return sections


def windows(
    lines: list[str], max_tokens: int = MAX_TOKENS, overlap: int = OVERLAP_TOKENS
) -> list[tuple[int, int]]:
    """Split lines into [start, end) windows of at most ~max_tokens, each
    starting ~overlap tokens before the previous one ended."""
    costs = [count_tokens(line) + 1 for line in lines]
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(lines):
        end, used = start, 0
        while end < len(lines) and (used + costs[end] <= max_tokens or end == start):
            used += costs[end]
            end += 1
        spans.append((start, end))
        if end >= len(lines):
            break
        back, carried = end, 0
        while back - 1 > start and carried + costs[back - 1] <= overlap:
            back -= 1
            carried += costs[back]
        start = back
    return spans


def chunk_body(
    body: str, max_tokens: int = MAX_TOKENS, overlap: int = OVERLAP_TOKENS
) -> list[tuple[str, int, int, str]]:
    """(section id, first line, last line, text) per chunk; lines are 0-based
    body lines, inclusive."""
    out = []
    lines = body.split("\n")
    for sec in split_sections(body):
        if count_tokens(sec.text) <= max_tokens:
            out.append((sec.section, sec.start, _last(lines, sec.start, sec.end), sec.text))
            continue
        part = lines[sec.start : sec.end]
        for a, b in windows(part, max_tokens, overlap):
            text = "\n".join(part[a:b]).strip()
            if text:
                out.append((sec.section, sec.start + a, _last(lines, sec.start + a, sec.start + b), text))
    return out


def _last(lines: list[str], start: int, end: int) -> int:
    """Last non-blank line index in [start, end)."""
    last = end - 1
    while last > start and not lines[last].strip():
        last -= 1
    return last
