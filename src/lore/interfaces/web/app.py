"""`lore serve`: the JSON API, the web UI and MCP (streamable HTTP) on one port.

One :class:`~lore.service.Lore` (opened with ``watch=True``) serves every
request, one call at a time under a lock, on a worker thread so the event
loop keeps streaming progress; the MCP tools share it (and its loaded
model). Background index jobs open a Lore of their own (:mod:`lore.jobs`).
Every request passes the :class:`Gate` first (Host, Origin, size,
credentials; see :mod:`.auth`).

A team server (``users``: `lore serve --users FILE`) serves each user with a
Lore of their own (:class:`lore.interfaces.team.TeamLores`): the Gate sets
:data:`~lore.interfaces.team.ACTING_USER` for the request from its token or
session, and every view and MCP tool uses that user's Lore.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Any

from lore.errors import LoreError, NotFound
from lore.interfaces.web import api, auth, pages, render
from lore.interfaces.web.inputs import (
    MAX_REQUEST_BYTES,
    PayloadTooLarge,
    UnsupportedMediaType,
    parse_json_object,
    parse_pairs,
    read_body,
    too_large_message,
)
from lore.interfaces.web.render import as_error, error_body, error_headers, json_response
from lore.records import to_dict

SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        b"frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    ),
]


class Backend:
    """The open Lore(s) shared by all requests and MCP tools, each used one call at a time."""

    def __init__(self, tools):
        self.tools = tools

    @property
    def lore(self):
        """The Lore acting for the current request (its user's on a team server)."""
        return self.tools.lore

    async def call(self, fn, *args, locked: bool = True, **kwargs) -> Any:
        """Run ``fn(lore, *args, **kwargs)`` on a worker thread, holding that Lore's
        lock unless `locked` is False (a view that only computes)."""
        import anyio

        lore = self.tools.lore  # chosen here, in the request's context

        def run():
            if not locked:
                return fn(lore, *args, **kwargs)
            with self.tools.serving(lore):
                return fn(lore, *args, **kwargs)

        return await anyio.to_thread.run_sync(run)


def build_app(
    project: str | None = None,
    *,
    agent: str | None = None,
    token: str | None = None,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    mcp: bool = True,
    users: str | None = None,
    web: bool = True,
):
    """The whole server as one ASGI app (run its lifespan: MCP sessions, index jobs).

    Args:
        web: serve the web UI and the JSON API; without it (`lore mcp --http`) only
            /mcp answers, behind the same Gate.
        users: a users file (:mod:`.users`): per-user tokens, each acting as its
            user's agent and, on PostgreSQL, database role (checked here, at start-up).

    Raises UsageError when `host` is off loopback and there is no token; a
    LoreError when the users file or a user's database role is not usable.
    """
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from lore.interfaces.mcp import LoreTools

    table = None
    if users is not None:
        from lore.interfaces.web.users import UserTable

        table = UserTable.load(users)
    token_env = "LORE_TOKEN" if web else "LORE_MCP_TOKEN"  # what `lore serve` / `lore mcp` read
    guard = auth.Guard.for_bind(host, token, list(allowed_hosts), table, token_env=token_env)
    guard.login_page = web
    tools = LoreTools(project, agent)
    render.SERVED_ROOTS.add(tools.own.project.root)
    if table is not None:
        from lore.interfaces.team import TeamLores
        from lore.storage import resolve_database_url

        project_ = tools.own.project
        tools.team = TeamLores(project_, table, resolve_database_url(project_))
        if tools.team.database_url is not None:  # each user's private memories are their role's rows
            tools.own.keep_to_own_private()
        tools.team.check()
    backend = Backend(tools)
    mcp_app, session_manager = _mcp_app(project, agent, tools) if mcp else (None, None)

    # One route a path, taking each of its methods: a wrong method's 405 then
    # names every method the path takes in `Allow` (a route a method named one).
    by_path: dict[str, dict[str, Any]] = {}
    for ep in api.ENDPOINTS if web else ():
        handler = (
            functools.partial(job_events, backend) if ep.stream else functools.partial(api_call, backend, ep)
        )
        by_path.setdefault(ep.path.replace("{path}", "{path:path}"), {})[ep.method] = handler
    routes: list[Any] = [
        Route(path, functools.partial(by_method, handlers), methods=list(handlers))
        for path, handlers in by_path.items()
    ]
    if web:
        routes += pages.routes(backend, guard)
        routes += [
            Route("/openapi.json", lambda request: json_response(api.openapi())),
            Mount("/static", StaticFiles(directory=str(pages.STATIC)), name="static"),
        ]

    @asynccontextmanager
    async def lifespan(app):
        try:
            if session_manager is not None:
                async with session_manager.run():
                    yield
            else:
                yield
        finally:
            for lore in tools.all_lores():
                lore.stop_index_jobs()

    from starlette.exceptions import HTTPException

    asgi = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: routing_error})
    asgi.state.backend = backend
    return Gate(asgi, guard, mcp_app, tools)


def _mcp_app(project, agent, tools):
    """MCP's streamable HTTP app over the shared tools; its Host checks are ours (the Gate)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from lore.interfaces.mcp import build_server

    server, _ = build_server(project, agent=agent, tools=tools)
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return app, server.session_manager


class Gate:
    """Checks every request before the app sees it: Host, Origin (unsafe
    methods), declared size, credentials. Adds security headers to the
    app's responses; routes /mcp to the MCP app."""

    def __init__(self, app, guard: auth.Guard, mcp_app, tools):
        self.app, self.guard, self.mcp_app, self.tools = app, guard, mcp_app, tools

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets
        from starlette.datastructures import Headers
        from starlette.requests import cookie_parser

        headers = Headers(scope=scope)
        path = scope["path"]
        is_mcp = path == "/mcp" or path.startswith("/mcp/")
        send = _secured(send)  # refusals too
        try:
            self.guard.check_host(headers.get("host"))
            if scope["method"] in auth.UNSAFE_METHODS or _programmatic(path):
                # Reads of the API have effects too (recall counts each memory's use),
                # and cost: another site's page may not make a browser send them.
                self.guard.check_origin(headers.get("origin"), headers.get("host"))
                if _programmatic(path):
                    self.guard.check_fetch_site(headers.get("sec-fetch-site"))
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
                raise PayloadTooLarge(too_large_message(int(declared), MAX_REQUEST_BYTES))
            state = scope.setdefault("state", {})
            state["auth"], state["user"] = None, None
            if not _public(path):
                raw = next((v for k, v in scope["headers"] if k == b"authorization"), None)
                cookies = cookie_parser(headers.get("cookie", ""))
                client = (scope.get("client") or ("unknown",))[0]
                state["auth"], state["user"] = self.guard.authenticate(
                    client, raw, cookies.get(auth.SESSION_COOKIE)
                )
                if is_mcp and state["auth"] == "session":
                    raise auth.Unauthorized("MCP needs 'Authorization: Bearer <token>'")
        except LoreError as err:
            await _refuse(err, scope, receive, send, path)
            return
        from lore.interfaces.team import ACTING_USER

        acting = ACTING_USER.set(state["user"])
        try:
            await self._serve(scope, receive, send, is_mcp)
        finally:
            ACTING_USER.reset(acting)

    async def _serve(self, scope, receive, send, is_mcp: bool) -> None:
        if is_mcp and self.mcp_app is not None:
            await self.mcp_app(scope, receive, send)
            return

        started = time.perf_counter()

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                took = f"app;dur={(time.perf_counter() - started) * 1000:.2f}".encode()
                message["headers"] = [*message.get("headers", []), (b"server-timing", took)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _secured(send):
    """`send` with the security headers added to the response's start."""

    async def secured(message):
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return secured


def _programmatic(path: str) -> bool:
    """The API, MCP and the API's schema: called by programs and the page's
    own scripts, never loaded by another site."""
    return path.startswith(("/api/", "/mcp", "/openapi")) or path == "/api"


def _public(path: str) -> bool:
    return path in ("/login", "/favicon.ico") or path.startswith("/static/")


async def _refuse(err: LoreError, scope, receive, send, path: str) -> None:
    from starlette.responses import RedirectResponse

    wants_page = (
        scope["method"] == "GET"
        and not path.startswith(("/api/", "/mcp", "/openapi"))
        and "text/html" in dict(scope["headers"]).get(b"accept", b"").decode("latin-1")
    )
    if isinstance(err, auth.Unauthorized) and wants_page:
        from urllib.parse import quote

        target = path + ("?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else "")
        response: Any = RedirectResponse(f"/login?next={quote(target)}", 303)
    else:
        response = json_response(error_body(err), err.http_status, error_headers(err))
    await response(scope, receive, send)


# -- API handlers --------------------------------------------------------------------------


async def by_method(handlers: dict[str, Any], request):
    """The handler of the request's method (HEAD: GET's, as Starlette answers it)."""
    method = "GET" if request.method == "HEAD" else request.method
    return await handlers[method](request)


async def api_call(backend: Backend, ep: api.Endpoint, request):
    """Parse, check CSRF for unsafe methods, call the view, answer JSON."""
    try:
        args = await arguments(request, ep)
        check_api_csrf(request, ep)
        result = await backend.call(ep.view, locked=ep.locked, **args)
        # The same content stored already: nothing was created, the existing memory is answered.
        status = 200 if ep.status == 201 and getattr(result, "created", True) is False else ep.status
        return json_response(to_dict(result), status)
    except Exception as err:
        return error_response(err)


async def arguments(request, ep: api.Endpoint) -> dict:
    """The endpoint's arguments: path parameters, then the query string or JSON body."""
    args = parse_pairs(list(request.path_params.items()), ep.path_params())
    if ep.has_body:
        raw = await read_body(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if raw.strip() and kind != "application/json":
            raise UnsupportedMediaType("send the body as JSON with 'Content-Type: application/json'")
        args.update(parse_json_object(raw, ep.other_params()))
    else:
        args.update(parse_pairs(request.query_params.multi_items(), ep.other_params(), strict=True))
    return args


def check_api_csrf(request, ep: api.Endpoint) -> None:
    """Unsafe API calls by a browser need the CSRF header; see :mod:`.auth`."""
    if request.method not in auth.UNSAFE_METHODS or request.state.auth == "token":
        return
    if auth.Guard.csrf_matches(request.cookies.get(auth.CSRF_COOKIE), request.headers.get(auth.CSRF_HEADER)):
        return
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.state.auth == "open" and kind == "application/json":
        return  # a cross-site page cannot send it without a CORS preflight
    # DELETE, PUT and PATCH are held to the same rule as POST: the documented one, and not
    # only the browser's preflight (a bodiless DELETE deletes as surely as a POST).
    raise auth.Forbidden(
        "missing CSRF token: send X-CSRF-Token (browser) or 'Authorization: Bearer <token>'"
        + (" or 'Content-Type: application/json'" if request.state.auth == "open" else "")
    )


class MethodNotAllowed(LoreError):
    """An API path called with a method it does not have (`405`, with `Allow`)."""

    code = "method_not_allowed"
    http_status = 405


def routing_error(request, exc):
    """Starlette's own 404 (no route matched) and 405 (wrong method) as the API's
    JSON error under /api/, where clients parse every answer as JSON; pages and
    static files keep Starlette's plain text."""
    from starlette.responses import PlainTextResponse

    path = request.url.path
    if not (path.startswith("/api/") or path in ("/api", "/update-index")):
        return PlainTextResponse(exc.detail, exc.status_code, headers=exc.headers)
    err: LoreError
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        err = MethodNotAllowed(f"{request.method} is not allowed on {path}; allowed: {allowed}")
    elif exc.status_code == 404:
        err = NotFound(f"no API endpoint matches {request.method} {path}; see /docs")
    else:
        err = LoreError(str(exc.detail))
    return json_response(error_body(err), exc.status_code, {**error_headers(err), **(exc.headers or {})})


def error_response(err: BaseException):
    known = as_error(err)
    return json_response(error_body(known), known.http_status, error_headers(known))


async def job_events(backend: Backend, request):
    """Server-sent events: the job's JSON whenever it changes, until it finishes."""
    import anyio
    from starlette.responses import StreamingResponse

    try:
        args = parse_pairs(list(request.path_params.items()), (api.JOB,))
        job = backend.lore.index_job(args["job_id"])  # the job list has its own lock
    except Exception as err:
        return error_response(err)

    async def stream():
        seen, quiet = -1, 0.0
        while True:
            if job.version != seen:
                seen, quiet = job.version, 0.0
                yield b"event: job\ndata: " + json_bytes(job.to_dict()) + b"\n\n"
                if job.finished:
                    return
            elif quiet > 15:
                quiet = 0.0
                yield b": keep-alive\n\n"
            await anyio.sleep(0.2)
            quiet += 0.2

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def json_bytes(data) -> bytes:
    from lore.interfaces.web.render import dumps

    return dumps(data)


def serve(
    project: str | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8766,
    token: str | None = None,
    agent: str | None = None,
    allowed_hosts: Sequence[str] = (),
    users: str | None = None,
    web: bool = True,
) -> None:
    """Run the server until interrupted (`web=False`: `lore mcp --http`, only /mcp).

    Raises LoreError when the port cannot be bound, before anything is printed."""
    import logging

    import uvicorn

    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every session at INFO
    app = build_app(
        project, agent=agent, token=token, host=host, allowed_hosts=allowed_hosts, users=users, web=web
    )
    sock = bind(host, port)
    team = app.tools.team
    if team is None or token:
        app.tools.warm()  # a team server's own Lore serves only the shared token
    print(banner(app, host, sock.getsockname()[1], token, web), file=sys.stderr, flush=True)
    # proxy_headers=False: the client is the connection's peer. uvicorn's default trusts
    # X-Forwarded-For from 127.0.0.1, so a caller on this machine could name a new
    # client at each try and never be throttled (auth.Guard counts failures per client).
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3, proxy_headers=False
    )
    uvicorn.Server(config).run(sockets=[sock])


def bind(host: str, port: int):
    """The listening socket, bound here (as uvicorn would) so that a port in use is
    a one-line error before the banner, and `--port 0` shows the port it got."""
    import errno
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise LoreError(
                f"port {port} on {host} is in use; stop the server holding it, or choose another with --port"
            ) from None
        raise LoreError(f"cannot listen on {host} port {port}: {err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


def banner(app: Gate, host: str, port: int, token: str | None, web: bool) -> str:
    """The start-up line: project, address (the bound port), who requests act as."""
    shown = f"[{host}]" if ":" in host else host
    team = app.tools.team
    own = app.tools.own
    acting = f"agent {own.agent}" if own.agent else "no agent (shared memories only)"
    if team is not None:
        roles = " and database role" if team.database_url else ""
        acting = f"{len(team.users.users)} users (each as their own agent{roles})" + (
            f"; the shared token as {acting}" if token else ""
        )
    required = ", token required" if token or team else ""
    if not web:
        return f"lore mcp: {own.project.root} at http://{shown}:{port}/mcp as {acting}" + (
            " (token required)" if required else ""
        )
    return (
        f"lore serve: {own.project.root} at http://{shown}:{port}/ as {acting} "
        f"(API docs /docs, MCP /mcp{required})"
    )
