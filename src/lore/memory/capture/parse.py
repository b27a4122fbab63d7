"""Turning agent output into memory candidates.

Three sources, none of which writes anything (the service decides what to keep):

- :func:`from_transcript` -- a session transcript (Claude Code JSONL, 004's
  session JSONL, Codex rollout JSONL), filtered by 002's rules: assistant
  messages only, multi-line only, stored in full, dated by the event.
- :func:`from_stdout` -- ``<chati-memory>`` / ``<lore-memory>`` blocks an
  agent without MCP printed (001's prompt-based capture).
- :func:`distinct_errors` (and :func:`repeated_errors`) -- errors seen again
  and again in agent output, each once however many lines report it (001's
  gotcha auto-capture).

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
``cold`` are ignored), ``storage`` (``session``: the session tier; ``durable``)
and ``private`` (``true``: only the acting agent sees it, in its local folder).
001's bookkeeping fields (``id``, ``agent``, ``sector``, ``access_count``,
``last_accessed``) are ignored without a problem line.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import field
from datetime import UTC
from pathlib import Path
from typing import Any, TypedDict

from lore import secrets
from lore.errors import ValidationError
from lore.memory.lifecycle.clock import system_now
from lore.memory.model import MEMORY_TYPES, SCOPE_RE, TYPE_OF_SECTOR, Frontmatter, ahead, now_iso, parse_time
from lore.memory.values import quoted
from lore.records import datarecord
from lore.safe_read import json_loads


@datarecord
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
    private: bool = False  # the acting agent's private folder (.lore/local/<agent>/)
    confidence: float | None = None
    line: int | None = field(default=None, compare=False)  # where a block opens (problems name it)

    @property
    def session(self) -> bool | None:
        """The session tier asked for (None: the capture's default)."""
        return True if self.tier == "session" else None


# ---------------------------------------------------------------- transcripts

_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")


class _Message(TypedDict):
    """One assistant message of a transcript, gathered from its events."""

    parts: list[str]
    time: str | None
    source: str


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
    messages: dict[str, _Message] = {}  # insertion-ordered
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
                # The transcript's own ids are its text: one shaped like a token is redacted as any is.
                source = secrets.redact(f"transcript:{session}:{uuid or f'line{number}'}")[0]
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


def json_line(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line:
        return None
    try:
        event = json_loads(line)
    except ValueError:  # not JSON, or nested past what is read: a line skipped like any bad one
        return None
    return event if isinstance(event, dict) else None


def _assistant_text(event: dict[str, Any]) -> tuple[str, str | None] | None:
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


def text_of(content: object) -> str:
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


def time_of(event: dict[str, Any]) -> str | None:
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
    "storage": "storage",
}
_IGNORED = {"id", "agent", "sector", "access_count", "last_accessed", "evidence_count"}
_STORAGE_TIERS = ("durable", "daily", "session")
_ATTENTION_TIERS = ("hot", "warm", "cold", "archive")
_YES = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
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
            candidate.line = line
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
    header: Frontmatter = {}
    if body.startswith("---"):
        header, body = _header(body)
    if not body:
        raise _BlockProblem("empty body")
    fields: dict[str, Any] = {}  # plain YAML values, or the attributes' text
    for origin in (header, attrs):  # the tag's attributes win
        for name, value in origin.items():
            canonical = _FIELDS.get(str(name))
            if canonical is None:
                if str(name) not in _IGNORED:
                    notes.append(
                        f"ignored unknown field {quoted(name)} (known: type, tags, applies_to, title, "
                        "occurred_at, confidence, tier, storage, private)"
                    )
            else:
                fields[canonical] = value
    kind = _one_string(fields.get("type", "summary"), "type").strip().lower()
    kind = TYPE_OF_SECTOR.get(kind, kind)  # 001 writes the sector in `type` (procedural, ...)
    if kind not in MEMORY_TYPES:
        raise _BlockProblem(f"unknown type {quoted(kind)}; use one of: {', '.join(MEMORY_TYPES)}")
    scope = _one_string(fields.get("applies_to", "global"), "applies_to").strip()
    if not SCOPE_RE.match(scope):
        raise _BlockProblem(f"applies_to {quoted(scope)} must be global, file:<path> or area:<name>")
    tags = _tags(fields.get("tags", []))
    title = _one_string(fields["title"], "title").strip() if "title" in fields else None
    when = fields.get("occurred_at")
    if when is not None:
        try:
            occurred = parse_time(when)
        except ValidationError:
            raise _BlockProblem(
                f"occurred_at {quoted(when)} is not an ISO 8601 time, e.g. 2026-02-10T15:30:00Z"
            ) from None
        if ahead(occurred, system_now()):
            raise _BlockProblem(
                f"occurred_at {quoted(when)} is in the future; give when it happened (at most a day ahead)"
            )
    else:
        occurred = fallback or now_iso()
    private = _flag(fields.get("private", False), "private")
    storage = _one_string(fields.get("storage", "durable"), "storage").strip().lower()
    if storage not in ("durable", "session"):
        raise _BlockProblem(f"storage {quoted(storage)} must be durable or session")
    tier = _one_string(fields.get("tier", ""), "tier").strip().lower() or None
    if tier in _ATTENTION_TIERS:
        tier = None  # 001's attention tier: decided by Lore, not by the block
    elif tier is not None and tier not in _STORAGE_TIERS:
        raise _BlockProblem(f"tier {quoted(tier)} must be one of: {', '.join(_STORAGE_TIERS)}")
    if _is_instructions_example(body):
        return None, notes
    return Candidate(
        body=body,
        occurred_at=occurred,
        title=title or None,
        type=kind,
        tags=tags,
        applies_to=scope,
        source=source,
        tier=tier or ("session" if storage == "session" else None),
        private=private,
        confidence=_confidence(fields.get("confidence")),
    ), notes


def _confidence(value: object) -> float | None:
    if value is None or value == "":
        return None
    if not isinstance(value, (str, bytes, int, float)):  # what float() would refuse
        raise _bad_confidence(value)
    try:
        number = float(value)
    except ValueError:
        raise _bad_confidence(value) from None
    if not 0 <= number <= 1:
        raise _bad_confidence(value)
    return number


def _bad_confidence(value: object) -> _BlockProblem:
    return _BlockProblem(f"confidence {quoted(value)} must be a number between 0 and 1")


def _attributes(text: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _ATTR.match(text, pos)
        if match is None:
            rest = text[pos:].strip()
            raise _BlockProblem(
                f'cannot read the tag\'s attributes at {quoted(rest, 30)}; write them as name="value"'
            )
        name = match.group(1)
        if name in attrs:
            raise _BlockProblem(f"attribute {quoted(name)} given twice")
        attrs[name] = match.group(2) if match.group(2) is not None else match.group(3)
        pos = match.end()
    return attrs


def _header(body: str) -> tuple[Frontmatter, str]:
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


def _one_string(value: object, name: str) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise _BlockProblem(f"{quoted(name)} must be a single value")


def _flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    flag = _YES.get(_one_string(value, name).strip().lower())
    if flag is None:
        raise _BlockProblem(f"{quoted(name)} must be true or false")
    return flag


def _tags(value: object) -> list[str]:
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
# Lines that mention an error but are not one: source pointers, bare locations, summaries.
_NOT_AN_ERROR = re.compile(
    r"^>\s"  # pytest: the source line that raised
    r"|^\S+:\d+: [\w.]+$"  # pytest: path:line: SomeError (the error is reported above)
    r"|due to (?:\d+ )?previous errors?|aborting due to|could not compile"
    # Code that names an error (a file shown by cat, sed -n or grep -n, with or without
    # its line numbers): `raise ValueError(`, `except KeyError:`, `class UsageError(...)`.
    r"|^(?:[\w./-]+[:-]\d+[:-])?\s*(?:\d+\s*(?:\u2192|\||:|\t)\s*)?\}?\s*"
    r"(?:raise|except|from\s+\S+\s+import|import|class|def|catch|throw|with\s+pytest\.raises)\b"
    r"|\bthrows\s+[\w.]+(?:Exception|Error)\b|\bcatch\s*\(\s*[\w.]+(?:Exception|Error)\b"
)
# Lines that continue the error reported just above them.
_CONTINUATION = re.compile(r"Caused by:|Suppressed:|\.\.\. \d+ more")
# The marker repeated on every line of one report ("npm ERR!", pytest's "E").
_MARKER = re.compile(r"^(?:npm ERR!|E(?=\s{3}))")
# The exception and its message: what two reports of the same error share.
_CORE = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b:\s\S.*")
_NORMALISE = (
    (re.compile(r"^E\s{3,}"), ""),  # pytest's marker of an error's lines
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


@datarecord
class RepeatedError:
    """One distinct error seen again and again: its normalised text, how many
    times it occurred, and the index of the line where it last did."""

    pattern: str
    count: int
    last_line: int


def repeated_errors(text_or_lines: str | Iterable[str], threshold: int = 3) -> list[tuple[str, int]]:
    """Error patterns that recur in agent output (001's gotcha auto-capture):
    ``(pattern, count)`` of :func:`distinct_errors`, most frequent first."""
    return [(e.pattern, e.count) for e in distinct_errors(text_or_lines, threshold=threshold)]


def distinct_errors(
    text_or_lines: str | Iterable[str], threshold: int = 3, *, root: str | None = None
) -> list[RepeatedError]:
    """The distinct errors that recur in agent output, each once.

    Finds error lines (``...Error:``, ``...Exception``, ``error[E...]``, ``FAILED``,
    ``npm ERR!``, ``fatal:``, a Python traceback's final line, ...), normalises
    them (numbers, line numbers, hex addresses, hashes, UUIDs, timestamps and
    temp dirs become placeholders) and counts the patterns.

    One error is counted once, however many lines report it: the lines that
    follow an error line and belong to it, up to a blank line (indented stack
    frames and source excerpts, ``Caused by:``, more ``npm ERR!`` lines, pytest's ``E`` lines),
    source pointers (pytest's ``>`` lines), bare ``path:line: SomeError``
    locations and summaries (``aborting due to previous error``, ``could not
    compile``) are not errors of their own; and lines that report the same
    exception (``E   ValueError: x``, the traceback's ``ValueError: x``, ``FAILED
    test - ValueError: x``) are one error, counted as often as its most
    frequent report.

    Args:
        text_or_lines: the output, as one string or as lines.
        threshold: how many times an error must occur to be reported.
        root: the project's folder; paths under it are written relative to it.

    Returns:
        The errors seen at least `threshold` times, most frequent first (ties
        in order of first appearance).
    """
    lines = text_or_lines.splitlines() if isinstance(text_or_lines, str) else list(text_or_lines)
    counts: Counter[str] = Counter()
    last: dict[str, int] = {}
    for index, line in error_reports(lines, root=root):
        pattern = normalise_error(line)
        counts[pattern] += 1
        last[pattern] = index
    return _merge_reports(counts, last, threshold)


_CHAINED = re.compile(r"^(?:During handling of the above exception|The above exception was the direct cause)")


def error_reports(lines: Sequence[str], *, root: str | None = None) -> list[tuple[int, str]]:
    """Where errors are reported in agent output, once each: (line index, the line
    without colours, paths under `root` made relative).

    A traceback is reported by its final line (a chained one by its last
    exception only: the cause was reported with it); any other error line
    (:data:`ERROR_LINE`) is a report, unless it is not an error of its own
    (a source pointer, a bare ``path:line: SomeError`` location, a compiler's
    summary) or continues the report above it (indented lines, ``Caused by:``,
    more lines with the same ``npm ERR!`` / pytest ``E`` marker) up to a blank line.
    """
    prefix = root.rstrip("/\\") + "/" if root else None
    found: list[tuple[int, str]] = []
    in_traceback = chained = False
    block: str | None = None  # the marker of the error being reported ("" when it has none)
    for index, raw in enumerate(lines):
        line = _ANSI.sub("", str(raw)).rstrip()
        if prefix:
            line = line.replace(prefix, "")
        if _CHAINED.match(line.strip()):
            chained, block = True, None  # the exception reported last caused the next one
            continue
        if TRACEBACK.match(line):
            in_traceback, block = True, None  # the header itself says nothing; its last line does
            continue
        if in_traceback:
            if not line or line[:1].isspace() or line.startswith("^"):
                continue  # the stack frames
            in_traceback = False
            if chained and found:
                found.pop()
            chained = False
            found.append((index, line.strip()))
            continue
        if block is not None and line and _continues(line, block):
            continue  # a blank line ends a report
        block = None
        if _NOT_AN_ERROR.search(line) or not ERROR_LINE.search(line):
            continue
        found.append((index, line.strip()))
        marker = _MARKER.match(line)
        block = marker.group(0) if marker else ""
    return found


def _continues(line: str, marker: str) -> bool:
    """Does `line` belong to the error reported just above it (marked `marker`)?"""
    return bool(line[:1].isspace() or _CONTINUATION.match(line) or (marker and line.startswith(marker)))


def _merge_reports(counts: Counter[str], last: dict[str, int], threshold: int) -> list[RepeatedError]:
    """One entry per error: patterns that name the same exception and message are
    reports of one error (the most frequent, then the first, stands for them)."""
    groups: dict[str, list[str]] = {}
    for pattern in counts:  # first appearance order
        core = _CORE.search(pattern)
        groups.setdefault(core.group(0) if core else pattern, []).append(pattern)
    found = []
    for members in groups.values():
        best = max(members, key=lambda p: counts[p])  # max keeps the first of equals
        count = counts[best]
        if count >= threshold:
            found.append(RepeatedError(best, count, max(last[p] for p in members)))
    found.sort(key=lambda e: -e.count)  # stable: first appearance breaks ties
    return found


def normalise_error(line: str) -> str:
    for pattern, replacement in _NORMALISE:
        line = pattern.sub(replacement, line)
    line = line.strip()
    return line if len(line) <= MAX_PATTERN else line[: MAX_PATTERN - 1] + "…"
