"""Turning results into responses: JSON (every record's ``to_dict()``, the
CLI's ``--json`` shapes), HTML (Jinja templates), errors (one shape for every
failure), Markdown (escaped).
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from lore.errors import (
    ArgumentError,
    LoreError,
    UsageError,
    ValidationError,
    as_lore_error,
    without_server_paths,
)
from lore.interfaces.units import file_size
from lore.secrets import redact

HERE = Path(__file__).parent
# Core field names → the names the HTTP API uses for the same input.
FIELD_NAMES = {"subject": "title", "keywords": "tags", "body": "body"}
# Service arguments the API's query names differently (web/api.py's Param dest).
QUERY_NAMES = {"changed_within_days": "changed_within"}
# The projects this process serves (build_app adds its own): error messages show
# paths inside them relative to the project, never the server's absolute layout.
SERVED_ROOTS: set[Path] = set()


def dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")


def json_response(data: Any, status: int = 200, headers: dict | None = None):
    from starlette.responses import Response

    return Response(dumps(data), status, headers=headers, media_type="application/json")


def as_error(err: BaseException) -> LoreError:
    """The LoreError an exception means; unknown ones are logged and become a generic 500.

    A client that hung up mid-request is routine (a closed tab, a curl timeout), not
    a server fault: it is not logged, and the answer goes nowhere anyway."""
    from starlette.requests import ClientDisconnect

    known = as_lore_error(err)
    if known is not None:
        return known
    if isinstance(err, ClientDisconnect):
        return UsageError("the client disconnected before its request was read")
    print(f"lore serve: internal error: {err.__class__.__name__}: {err}", file=sys.stderr)
    failure = LoreError("internal error; the server log has the details (LORE_DEBUG=1 for a traceback)")
    return failure


def error_body(err: LoreError) -> dict:
    """``{"error": {"code", "message", "field"?}}``; arguments named as the
    HTTP API's query names them (``changed_within``, not Python's name)."""
    message = (
        err.named(lambda name: QUERY_NAMES.get(name, name)) if isinstance(err, ArgumentError) else str(err)
    )
    body: dict = {"code": err.code, "message": without_server_paths(message, SERVED_ROOTS)}
    if isinstance(err, ValidationError) and err.field:
        body["field"] = FIELD_NAMES.get(err.field, err.field)
        body["message"] = f"{body['field']}: {without_server_paths(err.reason, SERVED_ROOTS)}"
    body["message"] = redact(body["message"])[0]  # a key or name echoed back: never a secret in clear
    return {"error": body}


def error_headers(err: LoreError) -> dict:
    retry = getattr(err, "retry_after", None)
    headers = {"Retry-After": str(retry)} if retry else {}
    if err.http_status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="lore"'
    return headers


# -- Markdown ---------------------------------------------------------------------


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt

    # Memory text is untrusted (agents write it, teams share it): raw HTML is
    # escaped, and markdown-it refuses javascript:/data: links by default.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.core.ruler.push("demote_headings", _demote_headings)
    return md


def _demote_headings(state) -> None:
    """A memory's `# Title` becomes <h2>: the page's own title is its only <h1>."""
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"


# Text longer than this is shown as it is written, not rendered: markdown-it
# takes ~1 µs a character of prose and up to ~15 of hostile text ("![" repeated),
# so a 5 MB body tied a CPU for over a minute on every view.
MAX_MARKDOWN_CHARS = 100_000


def markdown_html(text: str) -> str:
    """`text` as HTML (escaped, safe links); over :data:`MAX_MARKDOWN_CHARS`,
    as escaped preformatted text under a note."""
    if len(text or "") > MAX_MARKDOWN_CHARS:
        from markupsafe import escape

        return (
            f'<p class="muted">Shown as written: over {MAX_MARKDOWN_CHARS:,} characters, '
            f"too long to render.</p>\n<pre>{escape(text)}</pre>\n"
        )
    return _rendered(text or "")


@lru_cache(maxsize=64)  # a memory viewed again, a preview of the same text
def _rendered(text: str) -> str:
    return _markdown().render(text)


# -- templates ----------------------------------------------------------------------


@lru_cache(maxsize=1)
def templates():
    """The Jinja environment (autoescaping on)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    from markupsafe import Markup

    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = lambda text: Markup(markdown_html(text))
    env.filters["short_time"] = lambda when: (when or "")[:16].replace("T", " ")
    env.filters["filesize"] = file_size
    env.filters["percent"] = lambda x: "–" if x is None else f"{x * 100:.0f}%"
    env.filters["segment"] = path_segment
    env.globals["with_query"] = with_query
    return env


def path_segment(value) -> str:
    """`value` as one URL path segment: '/', '?' and '#' encoded, so text from a query
    string cannot send a form's action to another route ('../memories/x/delete?')."""
    from urllib.parse import quote

    return quote(str(value), safe="")


def with_query(query, **changes) -> str:
    """The current query string with some parameters replaced (None removes one)."""
    from urllib.parse import urlencode

    kept = [(k, v) for k, v in query.multi_items() if k not in changes and v != ""]
    kept += [(k, v) for k, v in changes.items() if v is not None]
    return "?" + urlencode(kept)


def html_response(template: str, context: dict, status: int = 200, headers: dict | None = None):
    from starlette.responses import HTMLResponse

    return HTMLResponse(templates().get_template(template).render(**context), status, headers=headers)
