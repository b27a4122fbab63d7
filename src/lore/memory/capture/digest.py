"""The session digest (seed 001's PreCompact capture): what a session showed, classified.

001's table, and how each class is recognised in the messages (offline, by
the cues of :mod:`lore.memory.capture.cues`):

===================  ===========================================  ==============
class                recognised by                                stored as
===================  ===========================================  ==============
decision             "we decided / chose / will use ...", any     ``decision``
                     speaker
error pattern        an error in a tool result or message         counted in the
                     (:mod:`lore.memory.capture.errors`)          index → gotcha
resolution           an error, then within 40 events a message    ``lesson``
                     saying it is fixed / passes / works now
user correction      a user message: "no, use X", "actually",     ``preference``
                     "don't ...", "I prefer ..."
validated pattern    the agent states how the project does        ``pattern``
                     things ("this project uses ...", "we
                     always ..."), or the user confirms what it
                     just said ("yes, exactly", "perfect")
===================  ===========================================  ==============

Every item carries its evidence: the ids of the messages it comes from (a
transcript's own message ids where it has them — Claude Code's ``uuid``,
Codex's call ids — else the event's position).
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path
from typing import Any, TypeAlias

from lore.memory.capture import cues, errors
from lore.memory.values import clip
from lore.records import Record, datarecord
from lore.secrets import redact

CLASSES = ("decision", "error_pattern", "resolution", "correction", "validated_pattern")
MEMORY_TYPE = {
    "decision": "decision",
    "error_pattern": "gotcha",
    "resolution": "lesson",
    "correction": "preference",
    "validated_pattern": "pattern",
}
MAX_PER_CLASS = 20
MAX_CHARS = 500
FIX_WINDOW = 40

#: An event in 004's shape (a line of ``session.jsonl``): free-form JSON, checked where read.
Event: TypeAlias = dict[str, Any]
#: A user or assistant message: (its index among the events, the event, its text).
_Message: TypeAlias = tuple[int, Event, str]


@datarecord
class DigestItem(Record):
    """One thing the digest keeps, with the messages it comes from."""

    kind: str  # one of CLASSES
    text: str
    evidence: list[str]  # message ids
    occurred_at: str
    signature: str | None = None  # error patterns: the normalised error


@datarecord
class Digest(Record):
    """A session's digest, by class."""

    session_id: str | None
    items: list[DigestItem] = field(default_factory=list)

    def of(self, kind: str) -> list[DigestItem]:
        return [item for item in self.items if item.kind == kind]

    def counts(self) -> dict[str, int]:
        return {kind: len(self.of(kind)) for kind in CLASSES}


def message_id(event: Event, index: int) -> str:
    """The id a digest cites for an event: the transcript's own, else its position
    (also for an id holding a secret: ids key evidence and error counts in the
    index, and two redacted ids would be one)."""
    for key in ("sourceId", "id"):
        value = event.get(key)
        if value not in (None, ""):
            if redact(str(value))[1]:
                break
            return str(value)
    return f"#{index + 1}"


def digest(events: list[Event], *, session_id: str | None, root: Path | None = None) -> Digest:
    """Classify a session's events (004's shapes, oldest first) into 001's digest."""
    messages = [
        (index, event, event_text(event))
        for index, event in enumerate(events)
        if event.get("type") == "message" and event.get("role") in ("user", "assistant")
    ]
    out = Digest(session_id)
    out.items += _decisions(events, messages)
    errors_found = _errors(events, root)
    out.items += errors_found
    out.items += _resolutions(events, messages, errors_found)
    out.items += _corrections(events, messages)
    out.items += _validated(events, messages)
    out.items = _once(out.items)
    return out


def _once(items: list[DigestItem]) -> list[DigestItem]:
    """One item per sentence: a sentence two classes recognise ("we decided to always
    ...": a decision and a validated pattern) is one observation, kept in its first
    class with the messages both cite; as two it would count twice as evidence."""
    kept: dict[str, DigestItem] = {}
    out: list[DigestItem] = []
    for item in items:
        if item.kind == "error_pattern":  # counted apart, by signature
            out.append(item)
            continue
        key = " ".join(item.text.lower().split())
        first = kept.get(key)
        if first is None:
            kept[key] = item
            out.append(item)
        else:
            first.evidence += [ref for ref in item.evidence if ref not in first.evidence]
    return out


def _decisions(events: list[Event], messages: list[_Message]) -> list[DigestItem]:
    items: dict[str, DigestItem] = {}
    for index, _event, text in messages:
        for sentence in cues.sentences(text):
            if cues.DECISION.search(sentence):
                _keep(items, "decision", sentence, events, index)
    return _limited(items)


def _corrections(events: list[Event], messages: list[_Message]) -> list[DigestItem]:
    items: dict[str, DigestItem] = {}
    for index, event, text in messages:
        if event.get("role") == "user" and any(cues.CORRECTION.search(s) for s in cues.sentences(text)):
            _keep(items, "correction", " ".join(text.split()), events, index)
    return _limited(items)


def _validated(events: list[Event], messages: list[_Message]) -> list[DigestItem]:
    items: dict[str, DigestItem] = {}
    previous: _Message | None = None
    for index, event, text in messages:
        if event.get("role") == "assistant":
            for sentence in cues.sentences(text):
                if cues.CONVENTION.search(sentence):
                    _keep(items, "validated_pattern", sentence, events, index)
            previous = (index, event, text)
            continue
        if previous is not None and cues.CONFIRMATION.search(text.strip()):
            said = next((s for s in cues.sentences(previous[2]) if len(s.split()) >= 4), None)
            if said:
                _keep(items, "validated_pattern", said, events, previous[0], also=index)
        previous = None
    return _limited(items)


def error_events(events: list[Event]) -> list[bool]:
    """Which events may report an error that happened, by position: tool
    results and what the user says (a pasted traceback). Not a tool call (a
    command that mentions "error" is not an error), not the assistant's own
    words (it quotes what a tool said, or muses on what might go wrong), and
    not what a tool that shows content returned, unless that tool itself
    failed: a file read, a search, an edit's snippet (the ``except
    ValueError:`` in a file is code), and a shell command that only shows
    files or history (a `cat` of a troubleshooting page, a `git log` of "fix
    TimeoutError")."""
    calls = {event.get("toolCallId"): event for event in events if event.get("type") == "tool_call"}

    def shows_content(result: Event) -> bool:
        call = calls.get(result.get("toolCallId")) or {}
        return bool(_CONTENT_TOOL.search(str(call.get("toolName") or ""))) or _viewing(call.get("args"))

    return [
        (bool(event.get("isError")) or not shows_content(event))
        if event.get("type") == "tool_result"
        else event.get("type") != "tool_call" and event.get("role") not in ("assistant", "system")
        for event in events
    ]


def _viewing(args: object) -> bool:
    """Whether a shell tool's command only shows files or history: every step of
    it (`cd src && cat a.py | head`) is a viewer (:data:`_VIEWERS`)."""
    command = args.get("command") or args.get("cmd") if isinstance(args, dict) else None
    if isinstance(command, list):  # Codex: ["bash", "-lc", "cat x"]
        command = command[-1] if command else None
    if not isinstance(command, str) or not command.strip():
        return False
    if _LOG_FILE.search(command):  # an app's log shows errors that happened, where they are read
        return False
    steps = [step.split() for step in re.split(r"&&|\|\||[;|\n]", command) if step.strip()]
    return bool(steps) and all(_VIEWERS.match(" ".join(words)) for words in steps)


_LOG_FILE = re.compile(r"\.log\b|(?:^|[\s/])logs?/|journalctl|docker\s+logs|kubectl\s+logs")


# Shell commands that show what is there: a file's text, a folder, history.
_VIEWERS = re.compile(
    r"(?:\w+=\S*\s+)*(?:cat|head|tail|less|more|bat|nl|wc|ls|tree|find|grep|egrep|rg|ag|sed\s+-n|awk|cd|pwd|echo"
    r"|git\s+(?:log|show|diff|blame|grep|status))\b"
)


# Tools whose results show a file's or a page's content (Claude Code's Read, Grep,
# Edit...; Codex's, Cursor's and Gemini's read_file, grep_search, edit_file...; an MCP
# server's mcp__x__read_file), not the output of something that ran.
_CONTENT_TOOL = re.compile(
    r"(?:^|__)(?:read\w*|view\w*|notebook\w*|grep\w*|glob|ls|list_dir\w*|\w*search\w*|web_?fetch"
    r"|edit\w*|multi_?edit|write(?:_file)?|create_file|str_replace\w*)$",
    re.I,
)


def _errors(events: list[Event], root: Path | None) -> list[DigestItem]:
    """One item per distinct error, citing every event it occurred in."""
    items: dict[str, DigestItem] = {}
    reports = error_events(events)
    for index, event in enumerate(events):
        if not reports[index]:
            continue
        for sig, example in errors.occurrences(event_text(event), root):
            item = items.get(sig)
            if item is None:
                items[sig] = DigestItem(
                    "error_pattern", example, [message_id(event, index)], _time(event), signature=sig
                )
            elif message_id(event, index) not in item.evidence:
                item.evidence.append(message_id(event, index))
    return list(items.values())


def _resolutions(events: list[Event], messages: list[_Message], found: list[DigestItem]) -> list[DigestItem]:
    """An error, then a message saying it is fixed (within FIX_WINDOW events of
    the error's latest occurrence before it): the error and the fix."""
    fixes = [(index, s) for index, _, text in messages for s in cues.sentences(text) if cues.FIXED.search(s)]
    position = {message_id(e, i): i for i, e in enumerate(events)}
    items: dict[str, DigestItem] = {}
    for error in found:
        seen = sorted(position.get(ref, 0) for ref in error.evidence)
        fix = next(
            (
                (max(p for p in seen if p < i), i, s)
                for i, s in fixes
                if any(p < i <= p + FIX_WINDOW for p in seen)
            ),
            None,
        )
        if fix is None:
            continue
        last, index, sentence = fix
        text = f"`{errors.as_reported(error.text)}` → {sentence}"
        _keep(items, "resolution", text, events, last, also=index)
    return _limited(items)


def _keep(
    items: dict[str, DigestItem],
    kind: str,
    text: str,
    events: list[Event],
    index: int,
    also: int | None = None,
) -> None:
    text = clip(text.strip(), MAX_CHARS)
    key = " ".join(text.lower().split())
    if len(text) < 12:
        return
    ids = [message_id(events[index], index)]
    if also is not None:
        ids.append(message_id(events[also], also))
    if key in items:
        items[key].evidence += [i for i in ids if i not in items[key].evidence]
    else:
        items[key] = DigestItem(kind, text, ids, _time(events[index]))


def _limited(items: dict[str, DigestItem]) -> list[DigestItem]:
    return list(items.values())[:MAX_PER_CLASS]


def event_text(event: Event) -> str:
    """The event's words: a message's text parts, a tool result's or call's strings."""
    from lore.memory.capture.parse import text_of

    if event.get("type") == "message":
        return text_of(event.get("content"))
    return "\n".join(_strings(event.get("result", event.get("args"))))


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _time(event: Event) -> str:
    from lore.memory.capture.parse import time_of

    return time_of(event) or ""
