"""Summaries of compacted events: the shared header, topic terms, and choosing the summariser.

The summariser comes from `[sessions.summary]` (see :mod:`lore.sessions.llm`):
offline extractive by default, or an LLM. When the LLM fails the extractive
summary is used instead and a notice says why, so compaction never stops on a
provider outage.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lore.errors import ProviderError
from lore.records import datarecord
from lore.search.text import STOPWORDS

if TYPE_CHECKING:
    from lore.sessions.events import RawEvent

TOPIC_TERMS = 30
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]{2,}")
_CHAT_WORDS = frozenset(
    "also really yeah yes okay oh hey thanks thank just like know think get got going one would "
    "could much many lot well good great sure let see way make made want things thing something "
    "anything everything time still even back right now new look looks looking sounds sound feel "
    "feeling glad awesome amazing love cool nice wow haha lol i'm it's that's you're i've don't "
    "can't didn't doesn't isn't we're they're there's what's let's i'll you'll".split()
)


@datarecord
class Summary:
    """A summary's Markdown body and keywords, and which summariser wrote it."""

    body: str
    keywords: list[str]
    summarizer: str  # extractive | openai-compatible | anthropic
    notice: str | None = None  # the provider failed; this is the extractive fallback


class TextSummarizer(Protocol):
    """An LLM provider: a transcript in, sectioned Markdown out."""

    name: str

    def summarize_text(self, transcript: str) -> str:
        """Raises ProviderError on any failure."""


def summarize(
    events: list[RawEvent], *, session_id: str, root: Path | None, provider: TextSummarizer | None
) -> Summary:
    """Summarise `events` with `provider` (None: extractive), falling back to extractive."""
    from lore.sessions.extractive import summarize_extractive

    if provider is None:
        return summarize_extractive(events, session_id=session_id, root=root)
    from lore.sessions.llm import transcript_chunks

    try:
        parts = [provider.summarize_text(chunk) for chunk in transcript_chunks(events, provider)]
    except ProviderError as err:
        fallback = summarize_extractive(events, session_id=session_id, root=root)
        fallback.notice = f"summary provider {provider.name} failed, used the extractive summary: {err}"
        return fallback
    words = topics(events, root=root)
    text = "\n\n".join(part.strip() for part in parts if part.strip()) or "(the provider returned nothing)"
    body = f"{header(events, session_id=session_id, terms=words)}\n\n{text}\n"
    return Summary(body=body, keywords=words[:12], summarizer=provider.name)


def header(events: list[RawEvent], *, session_id: str, terms: list[str]) -> str:
    """The opening paragraph: which events, how many of each kind, when, and the topic terms."""
    roles = Counter(e.get("role") for e in events if e.get("type") == "message")
    tools = sum(1 for e in events if e.get("type") == "tool_call")
    first, last = events[0], events[-1]
    kinds = ", ".join(
        f"{n} {what}"
        for n, what in (
            (roles.get("user", 0), "user messages"),
            (roles.get("assistant", 0), "assistant messages"),
            (tools, "tool calls"),
        )
        if n
    )
    when = f"{_day_time(first.get('timestamp'))} to {_day_time(last.get('timestamp'))}"
    line = (
        f"Session {session_id}, events {first.get('id')}-{last.get('id')} ({kinds or 'no messages'}), {when}."
    )
    return line + (f"\n\nTopics: {', '.join(terms)}." if terms else "")


def topics(events: list[RawEvent], limit: int = TOPIC_TERMS, *, root: Path | None = None) -> list[str]:
    """The range's most widespread content words (in how many events each appears).

    Messages count, and tool calls by their name and argument values (not
    their keys, nor the project root in absolute paths); tool output (file
    contents, logs) would drown the conversation and is left out.
    """
    prefix = f"{root.as_posix().rstrip('/')}/" if root is not None else None
    spread: Counter[str] = Counter()
    for event in events:
        if event.get("type") == "message":
            text = str(event.get("content") or "")
        elif event.get("type") == "tool_call":
            text = " ".join([str(event.get("toolName", "")), *_strings(event.get("args"))])
        else:
            continue
        if prefix:
            text = text.replace(prefix, "")
        words = {w.lower().strip("'-") for w in _WORD.findall(text)}
        spread.update(w for w in words if len(w) > 2 and w not in STOPWORDS and w not in _CHAT_WORDS)
    return [word for word, n in spread.most_common(limit) if n > 1 or len(events) < 3][:limit]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _day_time(value: object) -> str:
    text = str(value or "")
    return text[:16].replace("T", " ") if len(text) >= 16 else text or "?"
