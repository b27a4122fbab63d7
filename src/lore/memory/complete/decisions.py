"""Decisions stated in commit messages ("Chose X rather than Y", "Decision: ...").

A task memory's Decisions section lists what the agent's bundle says, then
what the task's commit messages state; this module finds the latter.
"""

from __future__ import annotations

import re

from lore.index.gitrepo import Commit
from lore.memory.complete.text import BULLET, capitalize, item_key

__all__ = ["MAX_DECISIONS", "mine_decisions", "strip_task_id"]

MAX_DECISIONS = 8  # mined from commit messages
MAX_DECISION_CHARS = 300


_DECISION_START = re.compile(
    r"^(?:decision\b|decided\b|(?:we|i)\s+(?:decided|chose|opted|went with)\b|chose\b|choose\b"
    r"|opted\b|went with\b|prefer\b|prefers\b|preferred\b)",
    re.IGNORECASE,
)
_DECISION_ANYWHERE = re.compile(r"\s(?:instead of|rather than)\s|\bbecause\b", re.IGNORECASE)
_DECISION_LABEL = re.compile(r"^(?:decision|decided|rationale)\s*:\s*", re.IGNORECASE)
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*:\s*\S")
_TRAILER_KEYS = {
    "cc",
    "fixes",
    "closes",
    "close",
    "resolves",
    "refs",
    "ref",
    "see-also",
    "change-id",
    "bug",
    "issue",
    "issues",
    "task",
    "link",
    "part-of",
    "related",
    "git-svn-id",
    "signed-off",
    "on-behalf-of",
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`\"'])")


def mine_decisions(commits: list[Commit], task: str = "", limit: int = MAX_DECISIONS) -> list[str]:
    """Decisions stated in commit messages, oldest commit first, deduplicated.

    A subject line or body item (a bullet or paragraph, wrapped lines joined)
    counts when it starts with Decision:/Decided/Chose/We chose/Prefer/... or
    contains " instead of ", " rather than " or "because". Trailers
    (Signed-off-by, Co-authored-by, Refs, ...) are skipped. Each result ends
    with the commit's short sha.
    """
    found: list[str] = []
    seen: set[str] = set()
    for commit in reversed(commits):
        candidates = [strip_task_id(commit.subject, task)] + _message_items(commit.body)
        for item in candidates:
            text = _decision_text(item)
            if not text:
                continue
            key = item_key(text)
            if key in seen:
                continue
            seen.add(key)
            found.append(f"{text} ({commit.sha[:7]})")
            if len(found) >= limit:
                return found
    return found


def _message_items(body: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            items.append(" ".join(current))
            current.clear()

    in_bullet = False
    for raw in body.splitlines():
        line = raw.strip()
        if not line or _is_trailer(line):
            flush()  # trailers are never part of an item
        elif BULLET.match(line) or _DECISION_LABEL.match(line):
            flush()
            current.append(line)
            in_bullet = bool(BULLET.match(line))
        elif in_bullet and current and raw[:1] not in (" ", "\t"):
            flush()  # an unindented line after a bullet starts a new item
            current.append(line)
            in_bullet = False
        else:
            current.append(line)
    flush()
    return items


def _is_trailer(line: str) -> bool:
    match = _TRAILER.match(line)
    if not match:
        return False
    key = match.group(1).lower()
    return key.endswith("-by") or key in _TRAILER_KEYS


def _decision_text(item: str) -> str | None:
    text = " ".join(BULLET.sub("", item.strip(), count=1).split())
    labelled = bool(_DECISION_LABEL.match(text))
    text = _DECISION_LABEL.sub("", text)
    if not text or not (labelled or _DECISION_START.match(text) or _DECISION_ANYWHERE.search(text)):
        return None
    if len(text) > MAX_DECISION_CHARS:
        sentences = _SENTENCE.split(text)
        hits = [
            i
            for i, s in enumerate(sentences)
            if labelled or _DECISION_START.match(s) or _DECISION_ANYWHERE.search(s)
        ]
        start = hits[0] if hits else 0
        text = sentences[start]
        if start + 1 < len(sentences) and len(text) + 1 + len(sentences[start + 1]) <= MAX_DECISION_CHARS:
            text += " " + sentences[start + 1]
        if len(text) > MAX_DECISION_CHARS:
            text = text[: MAX_DECISION_CHARS - 1].rstrip() + "…"
    return capitalize(text.rstrip().removesuffix("."))


def strip_task_id(subject: str, task: str) -> str:
    """A commit subject without its task-id tag: ``[jat-abc] Fix x`` / ``jat-abc: Fix x`` /
    ``Fix x (jat-abc)`` -> ``Fix x``."""
    if not task:
        return subject.strip()
    tid = re.escape(task)
    text = re.sub(
        rf"^\s*(?:\[{tid}\]|\({tid}\)|{tid}(?![\w-]))\s*[:\-–—]?\s*", "", subject, flags=re.IGNORECASE
    )
    text = re.sub(rf"\s*(?:\[{tid}\]|\({tid}\))\s*$", "", text, flags=re.IGNORECASE)
    return text.strip() or subject.strip()
