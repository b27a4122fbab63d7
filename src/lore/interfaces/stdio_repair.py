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
wrong: the SDK answers that with an error carrying the request's id.
"""

from __future__ import annotations

import json
import os
import re
import threading

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
    try:
        request = json.loads(line)
    except (ValueError, RecursionError):
        return line  # no id to answer
    if not isinstance(request, dict):
        return line
    request_id, method = request.get("id"), request.get("method")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not isinstance(method, str):
        return line
    params = request.get("params")
    reason = (
        "params must be a JSON object" if not isinstance(params, dict | None) else "its input can't be read"
    )
    refused = {"jsonrpc": "2.0", "id": request_id, "method": f"{method[:100]} refused: {reason}"}
    return json.dumps(refused).encode() + b"\n"


def repair_stdin() -> None:
    """Put a pipe in place of fd 0 that carries stdin's lines repaired.

    A daemon thread copies the lines; at the end of input it closes the pipe,
    so the server sees the end of input as before. ``sys.stdin`` keeps fd 0,
    so whatever reads it (the SDK) now reads the repaired lines.
    """
    source = os.fdopen(os.dup(0), "rb")
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    sink = os.fdopen(write_end, "wb")

    def copy() -> None:
        try:
            with source, sink:
                for line in source:
                    sink.write(answerable(repair_lone_surrogates(line)))
                    sink.flush()
        except (OSError, ValueError):  # the server closed its end: nothing left to deliver
            pass

    threading.Thread(target=copy, name="lore-stdin", daemon=True).start()
