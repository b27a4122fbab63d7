"""Turning agent output into memory candidates.

Three sources, none of which writes anything (the service decides what to keep):

- :func:`from_transcript` -- a session transcript (Claude Code JSONL, 004's
  session JSONL, Codex rollout JSONL), filtered by 002's rules: assistant
  messages only, multi-line only, stored in full, dated by the event.
- :func:`from_stdout` -- ``<chati-memory>`` / ``<lore-memory>`` blocks an
  agent without MCP printed (001's prompt-based capture).
- :func:`repeated_errors` -- error lines seen again and again in agent output
  (001's gotcha auto-capture).

The ``<chati-memory>`` / ``<lore-memory>`` block
------------------------------------------------
Seed 001 names the block ``<chati-memory>``; ``<lore-memory>`` is the same
block under Lore's name. The primary form puts the fields on the tag::

    <lore-memory type="gotcha" tags="auth,jwt" applies_to="file:src/auth.py" title="...">
    Token validation fails silently when JWT_SECRET contains special characters.
    </lore-memory>

A YAML header inside the block is accepted too (``---`` / fields / ``---``
before the body); where both give a field, the tag's attribute wins. Fields:
``type`` (one of the memory types), ``tags`` (comma-separated, or a YAML list;
``keywords`` also works), ``applies_to`` (``global``, ``file:<path>``,
``area:<name>``), ``title`` (or ``subject``), ``occurred_at`` (ISO 8601;
``created_at`` also works), ``confidence`` (0-1), ``tier`` (the storage tier:
``durable``, ``daily`` or ``session``; 001's attention tiers ``hot``/``warm``/
``cold`` are ignored) and ``private`` (``true``: only the acting agent sees it).
001's bookkeeping fields (``id``, ``agent``, ``sector``, ``access_count``,
``last_accessed``) are ignored without a problem line.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

from lore.errors import ValidationError
from lore.memory.model import MEMORY_TYPES, SCOPE_RE, TYPE_OF_SECTOR, now_iso, parse_time


@dataclass
class Candidate:
    """Something an agent said or wrote that may become a memory."""

    body: str
    occurred_at: str  # ISO 8601 UTC ("...Z")
    title: str | None = None  # None: the service derives one from the body
    type: str = "summary"
    tags: list[str] = field(default_factory=list)
    applies_to: str = "global"
    source: str | None = None  # "transcript:<session>:<uuid>", "stdout", ...
    tier: str | None = None  # storage tier the block asked for (None: the caller's default)
    private: bool = False
    confidence: float | None = None


# ---------------------------------------------------------------- transcripts

_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")


def from_transcript(path: Path) -> list[Candidate]:
    """The assistant messages of a session transcript worth keeping, oldest first.

    Applies 002's filtering rules: only assistant messages; only multi-line
    ones (the message's text parts joined with newlines and stripped must
    still contain a newline); the text is kept in full. ``occurred_at`` is the
    event's timestamp; messages without a usable one are skipped.

    Reads Claude Code transcripts (``{"type": "assistant", "message": {...},
    "timestamp", "uuid", "sessionId"}``; the events of one API message, which
    share ``message.id``, are joined), 004 session files (``{"type": "message",
    "role": "assistant", "content": "..."}``) and Codex rollouts
    (``{"type": "response_item", "payload": {"type": "message", ...}}``).
    Tool calls, tool results, thinking and malformed lines are skipped.

    Args:
        path: the JSONL file.
    """
    path = Path(path)
    messages: dict[str, dict] = {}  # key -> {"parts", "time", "source"}; insertion-ordered
    seen_uuids: set[str] = set()
    fallback_session = path.stem
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            event = json_line(line)
            if event is None:
                continue
            found = _assistant_text(event)
            if found is None:
                continue
            text, message_id = found
            uuid = event.get("uuid") if isinstance(event.get("uuid"), str) else None
            if uuid is not None:
                if uuid in seen_uuids:
                    continue  # the same event written twice
                seen_uuids.add(uuid)
            key = f"id:{message_id}" if message_id else f"line:{number}"
            entry = messages.get(key)
            if entry is None:
                session = event.get("sessionId") or event.get("session_id") or fallback_session
                source = f"transcript:{session}:{uuid or f'line{number}'}"
                entry = messages[key] = {"parts": [], "time": None, "source": source}
            if text:
                entry["parts"].append(text)
            if entry["time"] is None:
                entry["time"] = time_of(event)
    out = []
    for entry in messages.values():
        body = "\n".join(entry["parts"]).strip()
        if "\n" not in body or entry["time"] is None:
            continue
        out.append(
            Candidate(
                body=body, occurred_at=entry["time"], title=_heading_title(body), source=entry["source"]
            )
        )
    return out


def json_line(line: str) -> dict | None:
    line = line.strip()
    if not line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _assistant_text(event: dict) -> tuple[str, str | None] | None:
    """(joined text parts, message id) of an assistant event; None for anything else."""
    kind = event.get("type")
    if kind == "assistant":  # Claude Code
        message = event.get("message")
        if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
            return None
        if message.get("model") == "<synthetic>" or event.get("isApiErrorMessage"):
            return None  # Claude Code's own error notices
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        return text_of(message.get("content")), message_id
    if kind == "message" and event.get("role") == "assistant":  # 004 session
        return text_of(event.get("content")), None
    if kind == "response_item":  # Codex rollout
        payload = event.get("payload")
        if (
            isinstance(payload, dict)
            and payload.get("type") == "message"
            and payload.get("role") == "assistant"
        ):
            return text_of(payload.get("content")), None
    return None


def text_of(content) -> str:
    """The text parts of a message's content (a string, or a list of typed parts;
    Codex writes user text as ``input_text``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") in ("text", "output_text", "input_text")
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts)


def time_of(event: dict) -> str | None:
    value = event.get("timestamp")
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        from datetime import datetime

        seconds = value / 1000 if value > 1e11 else value  # epoch ms or s
        try:
            return parse_time(datetime.fromtimestamp(seconds, tz=UTC))
        except (OverflowError, OSError, ValueError):
            return None
    try:
        return parse_time(value)
    except ValidationError:
        return None


def _heading_title(body: str) -> str | None:
    match = _HEADING.match(body.split("\n", 1)[0].strip())
    return match.group(1).strip() if match else None


# ---------------------------------------------------------------- <lore-memory> blocks

_OPEN = re.compile(r"<(?P<tag>lore-memory|chati-memory)(?=[\s>/])")
_ATTR = re.compile(r"""\s*([A-Za-z_][\w-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_FIELDS = {
    "type": "type",
    "tags": "tags",
    "keywords": "tags",
    "applies_to": "applies_to",
    "title": "title",
    "subject": "title",
    "occurred_at": "occurred_at",
    "created_at": "occurred_at",
    "confidence": "confidence",
    "tier": "tier",
    "private": "private",
}
_IGNORED = {"id", "agent", "sector", "access_count", "last_accessed", "evidence_count"}
_STORAGE_TIERS = ("durable", "daily", "session")
_ATTENTION_TIERS = ("hot", "warm", "cold", "archive")
_EXAMPLE = re.compile(r"<lore-memory.*?</lore-memory>", re.DOTALL)


def from_stdout(
    text: str, *, default_time: str | None = None, source: str = "stdout"
) -> tuple[list[Candidate], list[str]]:
    """Parse the ``<chati-memory>`` / ``<lore-memory>`` blocks an agent printed.

    Args:
        text: the agent's output (ANSI colour codes are ignored).
        default_time: ``occurred_at`` for blocks that don't give one; else now.
        source: recorded on each candidate, e.g. ``"stdout:run-42.log"``.

    Returns:
        The candidates, and one line per problem (``line N: what is wrong``).
        A malformed block (unclosed, bad field value, empty body) is skipped;
        the others still parse. Unknown fields are ignored with a problem line.
    """
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    fallback = parse_time(default_time, field_name="default_time") if default_time else None
    candidates: list[Candidate] = []
    problems: list[str] = []
    pos = 0
    while True:
        opening = _OPEN.search(text, pos)
        if opening is None:
            break
        line = text.count("\n", 0, opening.start()) + 1
        tag = opening.group("tag")
        tag_end = _tag_end(text, opening.end())
        if tag_end is None:
            problems.append(f"line {line}: <{tag}> tag is not closed with '>'; skipped")
            pos = opening.end()
            continue
        attrs_text = text[opening.end() : tag_end]
        if attrs_text.rstrip().endswith("/"):
            problems.append(f"line {line}: <{tag}/> has no body; skipped")
            pos = tag_end + 1
            continue
        next_open = _OPEN.search(text, tag_end + 1)
        closing = f"</{tag}>"
        close = text.find(closing, tag_end + 1)
        if close == -1 or (next_open is not None and next_open.start() < close):
            problems.append(f"line {line}: <{tag}> block has no {closing}; skipped")
            pos = next_open.start() if next_open else len(text)
            continue
        pos = close + len(closing)
        try:
            candidate, notes = _block(attrs_text, text[tag_end + 1 : close], fallback, source)
        except _BlockProblem as err:
            problems.append(f"line {line}: {err}; skipped")
            continue
        problems.extend(f"line {line}: {note}" for note in notes)
        if candidate is not None:
            candidates.append(candidate)
        else:
            problems.append(f"line {line}: the example block from Lore's instructions; skipped")
    return candidates, problems


class _BlockProblem(Exception):
    """A memory block that cannot become a candidate."""


def _tag_end(text: str, start: int) -> int | None:
    """Index of the '>' ending the opening tag (quotes respected), or None."""
    quote = None
    for index in range(start, len(text)):
        ch = text[index]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == ">":
            return index
        elif ch == "<" or (ch == "\n" and text.startswith("\n\n", index)):
            return None
    return None


def _block(
    attrs_text: str, inner: str, fallback: str | None, source: str
) -> tuple[Candidate | None, list[str]]:
    notes: list[str] = []
    attrs = _attributes(attrs_text)
    body = textwrap.dedent(inner.strip("\n")).strip()
    header: dict = {}
    if body.startswith("---"):
        header, body = _header(body)
    if not body:
        raise _BlockProblem("empty body")
    fields: dict = {}
    for origin in (header, attrs):  # the tag's attributes win
        for name, value in origin.items():
            canonical = _FIELDS.get(str(name))
            if canonical is None:
                if str(name) not in _IGNORED:
                    notes.append(
                        f"ignored unknown field '{name}' (known: type, tags, applies_to, title, "
                        "occurred_at, confidence, tier, private)"
                    )
            else:
                fields[canonical] = value
    kind = _one_string(fields.get("type", "summary"), "type").strip().lower()
    kind = TYPE_OF_SECTOR.get(kind, kind)  # 001 writes the sector in `type` (procedural, ...)
    if kind not in MEMORY_TYPES:
        raise _BlockProblem(f"unknown type '{kind}'; use one of: {', '.join(MEMORY_TYPES)}")
    scope = _one_string(fields.get("applies_to", "global"), "applies_to").strip()
    if not SCOPE_RE.match(scope):
        raise _BlockProblem(f"applies_to '{scope}' must be global, file:<path> or area:<name>")
    tags = _tags(fields.get("tags", []))
    title = _one_string(fields["title"], "title").strip() if "title" in fields else None
    when = fields.get("occurred_at")
    if when is not None:
        try:
            occurred = parse_time(when)
        except ValidationError:
            raise _BlockProblem(
                f"occurred_at '{when}' is not an ISO 8601 time, e.g. 2026-02-10T15:30:00Z"
            ) from None
    else:
        occurred = fallback or now_iso()
    if _is_instructions_example(body):
        return None, notes
    tier = _one_string(fields.get("tier", ""), "tier").strip().lower() or None
    if tier in _ATTENTION_TIERS:
        tier = None  # 001's attention tier: decided by Lore, not by the block
    elif tier is not None and tier not in _STORAGE_TIERS:
        raise _BlockProblem(f"tier '{tier}' must be one of: {', '.join(_STORAGE_TIERS)}")
    return Candidate(
        body=body,
        occurred_at=occurred,
        title=title or None,
        type=kind,
        tags=tags,
        applies_to=scope,
        source=source,
        tier=tier,
        private=_flag(fields.get("private", False)),
        confidence=_confidence(fields.get("confidence")),
    ), notes


def _flag(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0", ""):
        return False
    raise _BlockProblem(f"private must be true or false, not '{value}'")


def _confidence(value) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _BlockProblem(f"confidence '{value}' must be a number between 0 and 1") from None
    if not 0 <= number <= 1:
        raise _BlockProblem(f"confidence '{value}' must be a number between 0 and 1")
    return number


def _attributes(text: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _ATTR.match(text, pos)
        if match is None:
            rest = text[pos:].strip()
            raise _BlockProblem(
                f"cannot read the tag's attributes at '{rest[:30]}'; write them as name=\"value\""
            )
        name = match.group(1)
        if name in attrs:
            raise _BlockProblem(f"attribute '{name}' given twice")
        attrs[name] = match.group(2) if match.group(2) is not None else match.group(3)
        pos = match.end()
    return attrs


def _header(body: str) -> tuple[dict, str]:
    """Split a ``---`` YAML header off the body."""
    import yaml

    lines = body.split("\n")
    if lines[0].strip() != "---":
        return {}, body
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise _BlockProblem("header starts with '---' but has no closing '---'") from None
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise _BlockProblem(f"malformed YAML header ({problem})") from None
    if not isinstance(meta, dict):
        raise _BlockProblem("the header must be 'field: value' lines")
    return meta, "\n".join(lines[end + 1 :]).strip()


def _one_string(value, name: str) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise _BlockProblem(f"'{name}' must be a single value")


def _tags(value) -> list[str]:
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        items = [str(v) for v in value]
    else:
        raise _BlockProblem("'tags' must be comma-separated words or a list")
    out: list[str] = []
    for item in (i.strip() for i in items):
        if item and item.lower() not in (o.lower() for o in out):
            out.append(item)
    return out


def _is_instructions_example(body: str) -> bool:
    """Whether `body` is the sample block in Lore's own agent instructions."""
    from lore.memory.capture.instructions import INSTRUCTIONS

    sample = _EXAMPLE.search(INSTRUCTIONS)
    if sample is None:
        return False
    inner = sample.group(0).split(">", 1)[1].rsplit("<", 1)[0].strip()
    return body.strip() == inner


# ---------------------------------------------------------------- repeated errors

ERROR_LINE = re.compile(
    r"[A-Z]\w*(?:Error|Exception)\b"  # ValueError, NullPointerException
    r"|\bException\b"
    r"|\b(?:error|Error|ERROR)(?:\[E\d+\])?:"  # error: / Error: / error[E0382]:
    r"|\bFAILED\b|\bERROR\b"
    r"|npm ERR!"
    r"|^\s*fatal:"
    r"|\bpanicked at\b"
)
TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_NORMALISE = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), "<hex>"),  # hashes
    (re.compile(r"(?<=[/\\])tmp[\w.-]{4,}"), "<tmp>"),
    (re.compile(r"(?<![A-Za-z\d])\d+(?:\.\d+)*"), "<n>"),  # not codes like E0382, py3
    (re.compile(r"\s+"), " "),
)
MAX_PATTERN = 300


def repeated_errors(text_or_lines: str | Iterable[str], threshold: int = 3) -> list[tuple[str, int]]:
    """Error patterns that recur in agent output (001's gotcha auto-capture).

    Finds error lines (``...Error:``, ``...Exception``, ``error[E...]``, ``FAILED``,
    ``npm ERR!``, ``fatal:``, a Python traceback's final line, ...), normalises
    them (numbers, line numbers, hex addresses, hashes, UUIDs, timestamps and
    temp dirs become placeholders) and counts the patterns.

    Args:
        text_or_lines: the output, as one string or as lines.
        threshold: how many times a pattern must occur to be reported.

    Returns:
        ``(pattern, count)`` for patterns seen at least `threshold` times,
        most frequent first (ties in order of first appearance).
    """
    lines = text_or_lines.splitlines() if isinstance(text_or_lines, str) else list(text_or_lines)
    counts: Counter[str] = Counter()
    in_traceback = False
    for raw in lines:
        line = _ANSI.sub("", str(raw)).rstrip()
        if TRACEBACK.match(line):
            in_traceback = True  # the header itself says nothing; its last line does
            continue
        if in_traceback:
            if not line or line[:1].isspace():
                continue  # the stack frames
            in_traceback = False
            counts[normalise_error(line)] += 1
            continue
        if ERROR_LINE.search(line):
            counts[normalise_error(line)] += 1
    ranked = [(pattern, n) for pattern, n in counts.items() if pattern and n >= threshold]
    ranked.sort(key=lambda item: -item[1])  # stable: first appearance breaks ties
    return ranked


def normalise_error(line: str) -> str:
    for pattern, replacement in _NORMALISE:
        line = pattern.sub(replacement, line)
    line = line.strip()
    return line if len(line) <= MAX_PATTERN else line[: MAX_PATTERN - 1] + "…"
