"""The public records of the session store (one ``to_dict()`` shape each, snake_case).

On disk the events and ``metadata.json`` keep seed 004's camelCase names
(``toolName``, ``messageCount``...); these records are what the CLI, MCP and
Python API hand out.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from lore.records import Record, datarecord


@datarecord
class SessionEvent(Record):
    """One event: a message, a tool call or a tool result (004's shapes).

    In a context view, a summary of archived events is a ``system`` message
    with ``id`` None and ``summary_of`` naming the range it stands for.
    """

    id: int | None
    type: str  # message | tool_call | tool_result
    timestamp: str
    role: str | None = None  # message: user | assistant | system | tool
    content: str | None = None  # message
    tool_name: str | None = None  # tool_call
    args: Any = None  # tool_call
    tool_call_id: str | None = None  # tool_call (its id) and tool_result (the call it answers)
    result: Any = None  # tool_result
    is_error: bool = False  # tool_result
    source_id: str | None = None  # where an imported event came from (dedup key)
    tokens: int = 0
    summary_of: str | None = None  # "1-300": the archived range a summary stands for


@datarecord
class SessionInfo(Record):
    """A session's metadata (``metadata.json``, in snake_case)."""

    id: str
    agent: str | None  # 004's channelId: which agent or tool writes the session
    user: str | None  # 004's userId
    status: str  # active | ended
    message_count: int  # message events ever appended (archived ones included)
    event_count: int  # events ever appended
    token_count: int  # the live context view: summaries + live events, before the hard limit
    live_event_count: int  # events not archived yet
    archived_event_count: int
    compactions: int
    created_at: str
    updated_at: str
    ended_at: str | None
    path: str  # the session folder, relative to the project root


@datarecord
class SessionContext(Record):
    """What an agent's context should hold now: summaries of the archived part,
    then the live events, oldest first, within the hard limit."""

    session_id: str
    events: list[SessionEvent]
    tokens: int
    hard_limit_tokens: int
    dropped: int  # oldest items left out because of the hard limit (still on disk)
    summaries: int  # summaries among `events`

    def render(self) -> str:
        """The view as plain text, one item per paragraph (for prompts and `lore session show`)."""
        from lore.sessions.events import render_event

        return "\n\n".join(render_event(event) for event in self.events)


@datarecord
class CompactionResult(Record):
    """What one compaction did (``compacted`` False: nothing old enough to compact)."""

    session_id: str
    compacted: bool
    reason: str  # soft-limit | manual | pre-compact | nothing-to-compact | under-soft-limit | busy
    first_event: int | None = None
    last_event: int | None = None
    events_archived: int = 0
    tokens_archived: int = 0
    archive: str | None = None  # relative to the project root
    summary_path: str | None = None  # relative to the project root
    summary_tokens: int = 0
    summarizer: str | None = None  # extractive | openai-compatible | anthropic
    notice: str | None = None  # e.g. the LLM provider failed and the extractive one was used
    seconds: float = 0.0


@datarecord
class AppendResult(Record):
    """The events appended (with their ids) and the compaction they triggered, if any."""

    session_id: str
    events: list[SessionEvent]
    token_count: int
    compaction: CompactionResult | None = None


@datarecord
class ImportResult(Record):
    """A transcript brought into a session (idempotent: ``appended`` 0 the second time)."""

    session_id: str
    transcript: str
    format: str  # claude-code | codex | lore
    appended: int
    skipped: int  # events already in the session
    compactions: list[CompactionResult] = field(default_factory=list)
    unreadable: int = 0  # lines of this read that were not JSON objects, left out
