"""`lore serve`: the JSON HTTP API, the web UI and MCP over streamable HTTP, on one port.

Modules: :mod:`.app` (assembly, the request gate, API handlers), :mod:`.api`
(the endpoint table and its views, OpenAPI), :mod:`.pages` (HTML twins and
forms), :mod:`.auth` (token, sessions, CSRF, rate limits, Host checks),
:mod:`.inputs` (parameters and size limits), :mod:`.render` (JSON, HTML,
errors, Markdown). Templates and the small script live beside them.
"""

from __future__ import annotations

__all__ = ["build_app", "serve"]


def build_app(*args, **kwargs):
    from lore.interfaces.web.app import build_app as build

    return build(*args, **kwargs)


def serve(*args, **kwargs) -> None:
    from lore.interfaces.web.app import serve as run

    run(*args, **kwargs)
