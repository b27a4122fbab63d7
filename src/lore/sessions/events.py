"""Session events in seed 004's shapes: checking, building, measuring, rendering.

On disk (``session.jsonl``) an event is one JSON object per line::

    {"id": 7, "type": "message", "role": "user", "content": "Hello", "timestamp": "..."}
    {"id": 8, "type": "tool_call", "toolName": "Read", "args": {"path": "..."}, "toolCallId": "tc_8", ...}
    {"id": 9, "type": "tool_result", "toolCallId": "tc_8", "result": "...", "isError": false, ...}

``id`` is the event's place in the session (1, 2, 3... never reused, so a
range like ``1-300`` names archived events for good). Optional ``sourceId``
records where an imported event came from; ``tokens`` caches its size.
Strings are redacted (:mod:`lore.secrets`) before anything is written.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeGuard

from lore.errors import UsageError, ValidationError
from lore.index.tokens import count_tokens
from lore.memory.lifecycle.clock import system_now
from lore.memory.model import now_iso, parse_given_time, parse_time
from lore.memory.values import quoted
from lore.secrets import redact, redact_nested
from lore.sessions.records import SessionEvent

EVENT_TYPES = ("message", "tool_call", "tool_result")
ROLES = ("user", "assistant", "system", "tool")
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")
MAX_NAME = 200  # characters of a tool's name, a call id, a source id
# Characters of a message, or of a tool call's args or result as JSON, appended
# live (a transcript's are read as they are; a hook's payload is cut to fit: fitted).
MAX_PAYLOAD = 1_000_000

#: An event as a line of ``session.jsonl`` holds it (004's camelCase keys). Lines
#: may come from other tools, so readers check each key where they use it.
RawEvent = dict[str, Any]


def check_session_id(session_id: object) -> str:
    """A session id that is safe as a folder name (no path separators, no leading dot)."""
    if not isinstance(session_id, str) or not SESSION_ID_RE.match(session_id):
        raise UsageError(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return session_id


def message(
    role: str, content: str, *, timestamp: str | None = None, source_id: str | None = None
) -> RawEvent:
    """A ``message`` event to append."""
    return _without_none(
        {"type": "message", "role": role, "content": content, "timestamp": timestamp, "sourceId": source_id}
    )


def tool_call(
    name: str,
    args: Any = None,
    *,
    call_id: str | None = None,
    timestamp: str | None = None,
    source_id: str | None = None,
) -> RawEvent:
    """A ``tool_call`` event to append (``call_id`` defaults to ``tc_<event id>``)."""
    return _without_none(
        {
            "type": "tool_call",
            "toolName": name,
            "args": {} if args is None else args,
            "toolCallId": call_id,
            "timestamp": timestamp,
            "sourceId": source_id,
        }
    )


def tool_result(
    call_id: str | None,
    result: Any,
    *,
    is_error: bool = False,
    timestamp: str | None = None,
    source_id: str | None = None,
) -> RawEvent:
    """A ``tool_result`` event to append."""
    event: RawEvent = {
        "type": "tool_result",
        "toolCallId": call_id,
        "result": result,
        "timestamp": timestamp,
        "sourceId": source_id,
    }
    if is_error:
        event["isError"] = True
    return _without_none(event)


def one_append(
    *,
    role: str = "user",
    content: str | None = None,
    tool_name: str | None = None,
    args: Any = None,
    call_id: str | None = None,
    result: Any = None,
    is_error: bool = False,
    timestamp: str | None = None,
) -> list[RawEvent]:
    """The events one append records (the CLI's `session append`, MCP's
    session_append): a message, or a tool call and/or its result; a result
    given with its call gets a fresh call id pairing them. A field that
    would be dropped is refused, not lost.

    Raises:
        UsageError: fields that do not make one append, named.
    """
    import secrets

    if content is not None and (tool_name or result is not None):
        raise UsageError("content is a message: give it alone, or tool_name/args and result without it")
    if args is not None and not tool_name:
        raise UsageError("args goes with tool_name (a tool call)")
    if is_error and result is None:
        raise UsageError("is_error goes with result (a tool result)")
    if result is not None and not tool_name and not call_id:
        raise UsageError(
            "a result answers a tool call: give tool_name or tool_call_id with it (--tool or --call-id)"
        )
    if content is not None and not content.strip():
        raise UsageError("content is empty; give the message's text")
    events = []
    if tool_name:
        if result is not None and not call_id:
            call_id = f"tc_{secrets.token_hex(4)}"  # links the result to the call
        events.append(tool_call(tool_name, args, call_id=call_id, timestamp=timestamp))
    if result is not None:
        events.append(tool_result(call_id, result, is_error=is_error, timestamp=timestamp))
    if content is not None:
        events.append(message(role, content, timestamp=timestamp))
    if not events:
        raise UsageError("nothing to append; give content (a message), tool_name (a tool call) or result")
    return events


def normalise(event: object, *, imported: bool = False) -> RawEvent:
    """Check an event to append and put it in its on-disk shape (without ``id``).

    Accepts 004's camelCase keys or snake_case ones (``tool_name``...). The
    timestamp is normalised to UTC ``...Z`` (now when missing); secrets in
    strings (names and ids too) are redacted. NaN and Infinity in args or results are refused;
    an `imported` event (a transcript read from a file, maybe written by an
    older Lore that let them through) keeps them as the strings "nan", "inf".

    Raises:
        ValidationError: not an object, unknown type or role, missing field.
    """
    if not isinstance(event, dict):
        raise ValidationError("a session event must be a JSON object with a 'type'")
    data = {_CAMEL.get(key, key): value for key, value in event.items()}
    kind = data.get("type")
    if kind not in EVENT_TYPES:
        raise ValidationError(
            f"unknown event type {quoted(kind, 40)}; use one of: {', '.join(EVENT_TYPES)}", field="type"
        )
    when = data.get("timestamp")
    out: dict[str, Any] = {"type": kind}
    if kind == "message":
        role, content = data.get("role"), data.get("content")
        if role not in ROLES:
            raise ValidationError(
                f"unknown role {quoted(role, 40)}; use one of: {', '.join(ROLES)}", field="role"
            )
        if not isinstance(content, str):
            raise ValidationError("a message needs 'content' (a string)", field="content")
        out.update(role=role, content=_clean(_bounded(content, "content", imported)))
    elif kind == "tool_call":
        name = data.get("toolName")
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("a tool_call needs 'toolName'", field="toolName")
        out.update(
            toolName=_clean(_name(name.strip(), "toolName", imported)),
            args=_payload(data.get("args", {}), "args", imported),
        )
        if data.get("toolCallId") is not None:
            out["toolCallId"] = _clean(_name(str(data["toolCallId"]), "toolCallId", imported))
    else:
        if "result" not in data:
            raise ValidationError("a tool_result needs 'result'", field="result")
        call_id = data.get("toolCallId")
        out.update(
            toolCallId=None if call_id is None else _clean(_name(str(call_id), "toolCallId", imported)),
            result=_payload(data["result"], "result", imported),
        )
        if data.get("isError"):
            out["isError"] = True
    if when is None:
        out["timestamp"] = now_iso()
    elif imported:  # a transcript's own times, as it wrote them
        out["timestamp"] = parse_time(when, field_name="timestamp")
    else:  # a person's: local time without an offset, never ahead, as `lore add --occurred-at`
        out["timestamp"] = parse_given_time(when, field_name="timestamp", now=system_now())
    if data.get("sourceId") is not None:
        out["sourceId"] = _clean(_name(str(data["sourceId"]), "sourceId", imported))
    out["tokens"] = count_tokens(event_text(out))
    return out


def event_text(event: RawEvent) -> str:
    """The words of an event (what is counted, searched and summarised)."""
    kind = event.get("type")
    if kind == "message":
        return str(event.get("content") or "")
    if kind == "tool_call":
        return f"{event.get('toolName', '')} {_as_text(event.get('args'))}".strip()
    return _as_text(event.get("result"))


def tokens_of(event: RawEvent) -> int:
    """The event's token count (cached in the line; counted for lines other tools wrote)."""
    cached = event.get("tokens")
    if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0:
        return cached
    return count_tokens(event_text(event))


def is_event(event: object) -> TypeGuard[RawEvent]:
    """Whether a parsed line is an event this store wrote (an id and a known type)."""
    return (
        isinstance(event, dict)
        and event.get("type") in EVENT_TYPES
        and isinstance(event.get("id"), int)
        and not isinstance(event.get("id"), bool)
        and event["id"] > 0
    )


def to_record(event: RawEvent) -> SessionEvent:
    """The public record of an on-disk event."""
    return SessionEvent(
        id=event.get("id"),
        type=event["type"],
        timestamp=str(event.get("timestamp") or ""),
        role=event.get("role"),
        content=event.get("content"),
        tool_name=event.get("toolName"),
        args=event.get("args"),
        tool_call_id=event.get("toolCallId"),
        result=event.get("result"),
        is_error=bool(event.get("isError", False)),
        source_id=event.get("sourceId"),
        tokens=tokens_of(event),
    )


def render_event(event: SessionEvent) -> str:
    """One event as a line of text: ``[7] user: Hello`` (summaries: ``[summary 1-300] ...``)."""
    label = f"[summary {event.summary_of}]" if event.summary_of else f"[{event.id}]"
    if event.type == "message":
        return f"{label} {event.role}: {event.content}"
    if event.type == "tool_call":
        return f"{label} tool call {event.tool_name} ({event.tool_call_id}): {_as_text(event.args)}"
    flag = " error" if event.is_error else ""
    return f"{label} tool result{flag} ({event.tool_call_id}): {_as_text(event.result)}"


def dumps(event: RawEvent) -> bytes:
    """The event as one line of ``session.jsonl`` (no newline inside, UTF-8)."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_CAMEL = {
    "tool_name": "toolName",
    "tool_call_id": "toolCallId",
    "is_error": "isError",
    "source_id": "sourceId",
}


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _payload(value: Any, field: str, imported: bool) -> Any:
    """A tool call's args or result as stored: plain JSON (see :func:`normalise`
    for NaN), every string redacted."""
    value = _json_value(_finite(value) if imported else value, field)
    if not imported and not isinstance(value, str):
        _bounded(json.dumps(value, ensure_ascii=False), field, imported)
    return _clean(_bounded(value, field, imported) if isinstance(value, str) else value)


def _bounded(text: str, field: str, imported: bool) -> str:
    """`text`, unless a live append's is over :data:`MAX_PAYLOAD` characters."""
    if not imported and len(text) > MAX_PAYLOAD:
        raise ValidationError(
            f"is too long ({len(text):,} characters; at most {MAX_PAYLOAD:,}); record a summary of it",
            field=field,
        )
    return text


def _name(text: str, field: str, imported: bool) -> str:
    """A tool name or an id; a transcript's longer one is kept apart from others by a digest."""
    if len(text) <= MAX_NAME:
        return text
    if imported:  # read, not typed: shortened, never refused (one line would stop every import)
        import hashlib

        # redacted before the cut: a cut token is no longer found, and part of it would be kept
        return f"{_clean(text)[: MAX_NAME - 17]}#{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    raise ValidationError(f"is too long ({len(text):,} characters; at most {MAX_NAME})", field=field)


def fitted(value: Any) -> Any:
    """`value` (a message, a tool's args or result), or, when it is over
    :data:`MAX_PAYLOAD` characters, its text cut there and marked: what a hook
    records from its payload (a transcript's would be stored whole; refusing
    it would lose the call and its result)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_PAYLOAD:
        return value
    marker = f" … [cut: {len(text):,} characters]"
    # Redacted before the cut: a token the cut goes through is no longer found whole.
    text = redact(text)[0]
    return text[: MAX_PAYLOAD - len(marker)] + marker


def _json_value(value: Any, field: str) -> Any:
    """`value` if it is plain JSON; NaN, Infinity (JSON has neither: the line would
    not be JSON) or a non-JSON object is refused, naming the field."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError(f"{value} is not a JSON number; send it as a string", field=field)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"keys must be strings (got {key!r:.40})", field=field)
            _json_value(item, field)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _json_value(item, field)
    elif not isinstance(value, (str, int, float, bool, type(None))):
        raise ValidationError(f"a {type(value).__name__} is not a JSON value", field=field)
    return value


def _finite(value: Any) -> Any:
    """`value` with NaN and the infinities as strings (JSON has none of them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _clean(value: Any) -> Any:
    """`value` with every string redacted, keys too (secrets never reach the session files)."""
    return redact_nested(value)[0]


def _without_none(event: RawEvent) -> RawEvent:
    return {k: v for k, v in event.items() if v is not None}
