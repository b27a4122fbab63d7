"""Recorded agent sessions (seed 004's session memory) and their compaction.

A session lives in ``.lore/sessions/<session-id>/`` (git-ignored): the live
events in ``session.jsonl``, ``metadata.json``, compacted raw events in
``archive/`` and one summary memory per compacted range in ``summaries/``.
:class:`SessionStore` is the API; the CLI (``lore session ...``), the MCP
tools and the Claude Code hooks go through it.

    from lore.sessions import SessionStore, message
    store = SessionStore(project)                      # lore.open(".").sessions
    info = store.start(agent="my-agent")
    store.append(info.id, message("user", "Use pnpm, not npm"))
    print(store.context(info.id).render())
"""

from __future__ import annotations

from lore.sessions.events import message, one_append, tool_call, tool_result
from lore.sessions.records import (
    AppendResult,
    CompactionResult,
    ImportResult,
    SessionContext,
    SessionEvent,
    SessionInfo,
)
from lore.sessions.store import SessionStore

__all__ = [
    "AppendResult",
    "CompactionResult",
    "ImportResult",
    "SessionContext",
    "SessionEvent",
    "SessionInfo",
    "SessionStore",
    "message",
    "one_append",
    "tool_call",
    "tool_result",
]
