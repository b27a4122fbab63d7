"""Agent transcripts → session events (seed 004's shapes).

Reads, line by line (the JSON readers are :mod:`lore.memory.capture.parse`'s):

- **Claude Code** (``~/.claude/projects/<slug>/<session>.jsonl``): ``user`` and
  ``assistant`` lines whose ``message.content`` is a string or a list of parts;
  ``text`` parts become messages, ``tool_use`` parts tool calls, and
  ``tool_result`` parts (in user lines) tool results. Meta lines (``isMeta``,
  local-command echoes, ``<system-reminder>`` blocks), ``thinking`` parts,
  summaries (its own after ``/compact`` too) and its error notices are skipped.
- **Codex** rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``):
  ``response_item`` lines with a ``message`` (user / assistant; the injected
  environment and instruction blocks are skipped), ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` and their ``*_output``; the
  older format without the ``payload`` envelope too.
- **004 / Lore** session files: ``message``, ``tool_call``, ``tool_result`` lines.

Every event gets a ``sourceId`` that is the same each time the transcript is
read (the line's ``uuid``, a tool call's id, else the line's byte offset,
which an append-only transcript never changes), so importing twice, or a
longer version of the same transcript, adds only what is new. Only complete
lines are read: a transcript being written has its last line left for later.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.memory.capture.parse import json_line, text_of, time_of
from lore.records import datarecord
from lore.safe_read import json_loads
from lore.sessions import events as ev
from lore.sessions.events import RawEvent

HEAD_BYTES = 4096
_INJECTED = re.compile(
    r"^\s*(?:<(?:environment_context|user_instructions|permissions instructions|user_shell_command|"
    r"command-name|command-message|command-args|local-command-stdout|local-command-stderr|system-reminder)\b"
    r"|# AGENTS\.md instructions|Caveat: The messages below were generated)"
)
_CODEX = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_CODEX_ITEMS = (
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
)


@datarecord
class Transcript:
    """What one read of a transcript found."""

    format: str | None = None  # claude-code | codex | lore (None: nothing recognised)
    session_id: str | None = None  # as the transcript names it
    events: list[RawEvent] = field(default_factory=list)  # to append (not normalised yet)
    offsets: list[int] = field(default_factory=list)  # per event: where its line ends in the file
    end_offset: int = 0  # bytes of complete lines read
    head: str = ""  # digest of the file's first bytes: is it still the same file?
    unreadable: int = 0  # lines that are not JSON objects (skipped)
    lines: int = 0  # lines that are not blank


def head_digest(path: Path) -> str:
    """A digest of the first bytes: the same transcript, grown, keeps it."""
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read(HEAD_BYTES)).hexdigest()[:16]


def read_transcript(path: Path, *, offset: int = 0, whole: bool = False) -> Transcript:
    """The events of `path` from byte `offset` on: complete lines only (a last
    line without its newline is still being written, and read next time), or
    with `whole` every line, the last one too if it reads as JSON (a capture
    reads a transcript once: its last message was lost)."""
    out = Transcript(head=head_digest(path))
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    size = len(data)
    if whole and data and not data.endswith(b"\n"):
        data += b"\n"  # (a torn line is no JSON: skipped as any malformed line is)
    end = data.rfind(b"\n") + 1
    position = offset
    last_time: str | None = None
    for raw in data[:end].split(b"\n")[:-1]:
        line = json_line(raw.decode("utf-8", errors="replace"))
        key = f"@{position}"
        position += len(raw) + 1
        out.lines += bool(raw.strip())
        if line is None:
            out.unreadable += bool(raw.strip())
            continue
        kind, found, session_id = _events_of(line, key)
        if kind is None:
            continue
        out.format = out.format or kind
        out.session_id = out.session_id or session_id
        when = time_of(line) or last_time
        last_time = when
        for event in found:
            if when and "timestamp" not in event:
                event["timestamp"] = when
            out.events.append(event)
            out.offsets.append(position)
    out.end_offset = offset + min(end, size)
    return out


def peek_session_id(path: Path, *, lines: int = 50) -> str | None:
    """The session id a transcript gives in its first lines (Claude Code's
    ``sessionId``, Codex's ``session_meta``), if any."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle):
            if number >= lines:
                break
            line = json_line(raw)
            if line is not None:
                _kind, _found, session_id = _events_of(line, "")
                if session_id:
                    return session_id
    return None


def _events_of(line: dict[str, Any], key: str) -> tuple[str | None, list[RawEvent], str | None]:
    """(format, events, session id) of one transcript line."""
    kind = line.get("type")
    if kind in ("user", "assistant") and isinstance(line.get("message"), dict):
        session = line.get("sessionId") if isinstance(line.get("sessionId"), str) else None
        return "claude-code", _claude(line, key), session
    if kind in _CODEX:
        payload: dict[str, Any] = line["payload"] if isinstance(line.get("payload"), dict) else {}
        if kind == "session_meta":
            session = payload.get("id") if isinstance(payload.get("id"), str) else None
            return "codex", [], session
        return "codex", _codex(payload, key) if kind == "response_item" else [], None
    if kind in _CODEX_ITEMS:  # Codex's format before the payload envelope
        return "codex", _codex(line, key), None
    if kind in ev.EVENT_TYPES:  # 004 / Lore session lines (and old Codex messages)
        return "lore", _plain(line, key), None
    return None, [], None


def _claude(line: dict[str, Any], key: str) -> list[RawEvent]:
    if line.get("isMeta") or line.get("isApiErrorMessage") or line.get("isCompactSummary"):
        return []  # Claude Code's own notices, and its summary after /compact
    message = line["message"]
    if message.get("model") == "<synthetic>":
        return []
    role = "assistant" if line["type"] == "assistant" else "user"
    uuid = line.get("uuid") if isinstance(line.get("uuid"), str) else None
    base = f"cc:{uuid}" if uuid else key
    content = message.get("content")
    if isinstance(content, str):
        return [] if _INJECTED.match(content) else [ev.message(role, content, source_id=base)]
    out: list[RawEvent] = []
    for index, part in enumerate(content if isinstance(content, list) else []):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and part["text"].strip():
            if not _INJECTED.match(part["text"]):
                out.append(ev.message(role, part["text"], source_id=f"{base}:{index}"))
        elif kind == "tool_use" and isinstance(part.get("name"), str):
            call_id = str(part.get("id") or f"{base}:{index}")
            out.append(
                ev.tool_call(part["name"], part.get("input"), call_id=call_id, source_id=f"tool:{call_id}")
            )
        elif kind == "tool_result":
            call_id = str(part.get("tool_use_id") or "")
            result = part.get("content")
            text = result if isinstance(result, str) else text_of(result)
            out.append(
                ev.tool_result(
                    call_id or None,
                    text,
                    is_error=bool(part.get("is_error")),
                    source_id=f"result:{call_id}" if call_id else f"{base}:{index}",
                )
            )
    return out


def _codex(item: dict[str, Any], key: str) -> list[RawEvent]:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = text_of(item.get("content"))
        if role not in ("user", "assistant") or not text.strip() or _INJECTED.match(text):
            return []
        return [ev.message(role, text, source_id=key)]
    call_id = str(item.get("call_id") or item.get("id") or "")
    source = call_id or key
    if kind == "function_call":
        return [
            ev.tool_call(
                str(item.get("name") or "function"),
                _json_or_raw(item.get("arguments")),
                call_id=call_id or None,
                source_id=f"tool:{source}",
            )
        ]
    if kind == "custom_tool_call":
        return [
            ev.tool_call(
                str(item.get("name") or "tool"),
                {"input": item.get("input")},
                call_id=call_id or None,
                source_id=f"tool:{source}",
            )
        ]
    if kind == "local_shell_call":
        return [
            ev.tool_call(
                "local_shell", item.get("action"), call_id=call_id or None, source_id=f"tool:{source}"
            )
        ]
    if kind in ("function_call_output", "custom_tool_call_output"):
        result, failed = _codex_output(item.get("output"))
        return [ev.tool_result(call_id or None, result, is_error=failed, source_id=f"result:{source}")]
    return []


def _codex_output(output: object) -> tuple[object, bool]:
    """A tool's output: Codex often wraps it as JSON ``{"output": ..., "metadata": {"exit_code": N}}``."""
    if isinstance(output, dict):
        return output.get("content", output), output.get("success") is False
    if isinstance(output, str):
        decoded = _json_or_raw(output)
        if isinstance(decoded, dict) and "output" in decoded:
            meta: dict[str, Any] = decoded["metadata"] if isinstance(decoded.get("metadata"), dict) else {}
            code = meta.get("exit_code")
            return decoded["output"], isinstance(code, int) and code != 0
    return output, False


def _plain(line: dict[str, Any], key: str) -> list[RawEvent]:
    kind = line["type"]
    if kind == "message":
        text = text_of(line.get("content"))
        role = line.get("role")
        if role not in ev.ROLES or not text.strip() or _INJECTED.match(text):
            return []
        return [ev.message(role, text, source_id=key)]
    if kind == "tool_call":
        name = line.get("toolName") or line.get("tool_name")
        if not isinstance(name, str):
            return []
        call_id = line.get("toolCallId") or line.get("tool_call_id")
        return [ev.tool_call(name, line.get("args"), call_id=call_id, source_id=key)]
    call_id = line.get("toolCallId") or line.get("tool_call_id")
    return [ev.tool_result(call_id, line.get("result"), is_error=bool(line.get("isError")), source_id=key)]


def _json_or_raw(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        return json_loads(value)
    except ValueError:
        return value
