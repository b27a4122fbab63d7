"""Stdin for the MCP stdio server, repaired so that every request is answered.

A client written in JavaScript can send a string that holds half of a
surrogate pair (an emoji cut in two); JSON.stringify writes it as ``\\ud83d``.
Python's json accepts that, but the SDK's parser refuses the whole line, and
the SDK then answers nothing: the client waits for a reply that never comes.
Each line is therefore passed through a pipe that turns every unpaired
surrogate escape into U+FFFD (as a decoder does with a broken byte), so the
request is answered like any other. A request the SDK's parser would still
refuse (``params`` that is not an object, arguments nested past what it
reads) becomes a request for a method no server has, named for what was
wrong: the SDK answers that with an error carrying the request's id. So is
a line nested too deep for Python's json (its id read without recursion),
and a line over 16 MiB, which is read past, never held whole.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import IO

from lore.safe_read import MAX_INPUT_BYTES

MAX_LINE = MAX_INPUT_BYTES  # a longer line is read past in pieces and refused (a memory is at most 1 MB)
_KEPT = 1 << 16  # of a longer line, the bytes kept from its start and its end
# The id as the object's last member (or last but "jsonrpc"), at the end of a line.
_LAST_ID = re.compile(
    rb'"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,1000}")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
)

# A run of backslashes, then u and a surrogate code unit (D800-DFFF). The
# escape is real only when the run is odd: "\\\\ud800" is a backslash, then text.
_SURROGATE_ESCAPE = re.compile(rb"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")
_REPLACEMENT = rb"\ufffd"


def repair_lone_surrogates(line: bytes) -> bytes:
    """`line` (JSON text) with each unpaired ``\\uD8xx``-``\\uDFxx`` escape replaced by ``\\ufffd``.

    A high surrogate directly followed by a low one is a pair and stays as it is.
    """
    if b"\\u" not in line:
        return line
    lone: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None  # a high surrogate's escape, awaiting its low half
    for match in _SURROGATE_ESCAPE.finditer(line):
        if len(match.group(1)) % 2 == 0:
            continue
        start, end = match.end(1) - 1, match.end()
        high = match.group(2)[1:2] in b"89abAB"
        if pending is not None:
            if not high and start == pending[1]:
                pending = None
                continue
            lone.append(pending)
            pending = None
        if high:
            pending = (start, end)
        else:
            lone.append((start, end))
    if pending is not None:
        lone.append(pending)
    if not lone:
        return line
    out, last = [], 0
    for start, end in lone:
        out += [line[last:start], _REPLACEMENT]
        last = end
    out.append(line[last:])
    return b"".join(out)


def answerable(line: bytes) -> bytes:
    """`line` if the SDK's parser takes it; else, for a request (an id and a
    method), a request it answers with an error for that id ("Method not
    found", the data naming what was wrong); anything else as it was."""
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line
    except Exception:  # what the SDK would drop without an answer
        pass
    reason = "its input can't be read"
    try:
        request = json.loads(line)
    except RecursionError:  # nested past what json reads: its top level, read without recursion
        request = top_level_members(line)
    except ValueError:
        return line  # no id to answer
    if not isinstance(request, dict):
        return line
    if not isinstance(request.get("params"), dict | None):
        reason = "params must be a JSON object"
    return _refused(request, reason) or line


def _refused(request: dict[str, object], reason: str) -> bytes | None:
    """A request for a method no server has, named for `reason`, with the id of
    `request` (None when it has no id or method to answer)."""
    request_id, method = request.get("id"), request.get("method")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not isinstance(method, str):
        return None
    refused = {"jsonrpc": "2.0", "id": request_id, "method": f"{method[:100]} refused: {reason}"}
    return json.dumps(refused).encode() + b"\n"


# A JSON string, a structural character, or a run of anything else (a number, a literal).
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*+"|[{}\[\]:,]|[^\s{}\[\]:,"]++')
_MEMBER_SIZE = 1000  # longer ids and method names are no request's


def top_level_members(line: bytes) -> dict[str, object]:
    """The members of the JSON object `line` whose values are strings, numbers
    or literals, read at any depth without recursion (nested values are
    skipped); {} when `line` is not an object."""
    out: dict[str, object] = {}
    depth, key, after_colon = 0, None, False
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
            if depth == 1 and token == b"[":
                return {}
        elif token in (b"}", b"]"):
            depth -= 1
        elif depth != 1:
            continue
        elif token == b":":
            after_colon = True
        elif token == b",":
            key, after_colon = None, False
        elif not after_colon:
            key = _scalar(token) if token.startswith(b'"') else None
        elif isinstance(key, str) and len(token) <= _MEMBER_SIZE:
            value = _scalar(token)
            if value is not _NOT_JSON:
                out[key] = value  # the last of a repeated key, as json and the SDK read it
    return out


_NOT_JSON = object()


def _scalar(token: bytes) -> object:
    try:
        return json.loads(token)
    except ValueError:
        return _NOT_JSON


MAX_WAIT = 600.0  # seconds the end of input waits, at most, for the calls sent before it
_REPLY_TIME = 0.3  # seconds for the server to write a reply after its call returned
_NEVER_BEGUN = 1.0  # seconds idle after which a call not yet begun never will (sent before initialize)


def _wait_for_answers(probe: int, sent: int, calls: Callable[[], tuple[int, int]]) -> None:
    """Return once the server has read every line (`probe`: the pipe's read end)
    and no call runs, and either all `sent` tool calls are answered or none has
    begun for a while (the SDK refused the rest before calling a tool); then
    leave it a moment to write the last reply."""
    import fcntl
    import termios
    import time

    deadline = time.monotonic() + MAX_WAIT
    idle_since = None
    while time.monotonic() < deadline:
        unread = int.from_bytes(fcntl.ioctl(probe, termios.FIONREAD, b"\0\0\0\0"), "little")
        started, answered = calls()
        if unread or started > answered:
            idle_since = None
        elif answered >= sent:
            break
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > _NEVER_BEGUN:
            break
        time.sleep(0.02)
    time.sleep(_REPLY_TIME)


def bounded_lines(source: IO[bytes], limit: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of `source`; a line over `limit` bytes is never held whole:
    it is read past and stands as a request refused for its size (or as
    nothing, when neither its start nor its end names its id and method)."""
    while line := source.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        head, tail = line[:_KEPT], line[-_KEPT:]
        while more := source.readline(limit):
            tail = (tail + more)[-_KEPT:]
            if more.endswith(b"\n"):
                break
        members = top_level_members(head)  # a client writes id and method first...
        last = _LAST_ID.search(tail)  # ... or the id last (the TypeScript SDK)
        if "id" not in members and last is not None:
            members["id"] = _scalar(last.group(1))
        yield _refused(members, f"the request is over {limit / (1 << 20):g} MiB") or b""


def repair_stdin(calls: Callable[[], tuple[int, int]] | None = None) -> None:
    """Put a pipe in place of fd 0 that carries stdin's lines repaired.

    A daemon thread copies the lines; at the end of input it closes the pipe,
    so the server sees the end of input as before. ``sys.stdin`` keeps fd 0,
    so whatever reads it (the SDK) now reads the repaired lines.

    Args:
        calls: how many tool calls the server has begun and answered so far.
            Given, the end of input is passed on only once every tool call
            sent has been answered (see :func:`_wait_for_answers`): the SDK
            stops at the end of input and drops what is still running, so
            calls piped in before stdin closed (``printf '…' | lore mcp``)
            went unanswered.
    """
    source = os.fdopen(os.dup(0), "rb")
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    probe = os.dup(read_end)  # the SDK moves fd 0 away; this one says what it has not read
    os.close(read_end)
    sink = os.fdopen(write_end, "wb")

    def copy() -> None:
        sent = 0
        try:
            with source, sink:
                for line in bounded_lines(source):
                    line = answerable(repair_lone_surrogates(line))
                    sent += top_level_members(line[:_KEPT]).get("method") == "tools/call"
                    sink.write(line)
                    sink.flush()
                if calls is not None:
                    _wait_for_answers(probe, sent, calls)
        except (OSError, ValueError):  # the server closed its end: nothing left to deliver
            pass
        finally:
            os.close(probe)

    threading.Thread(target=copy, name="lore-stdin", daemon=True).start()
