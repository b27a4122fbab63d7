"""The MCP server: Lore's tools for agents, over stdio or streamable HTTP.

Tools: code and memory search (search_codebase, search_memories,
memory_search → memory_read), writing (add_memory, memory_write,
edit_memory: precise edits and moves), context (recall_context,
build_context: a memory and its linked neighbours), indexing (index_project,
update_index) and sessions. The whole list costs agents ≤ 1,500 tokens
(``python bench/mcp_server.py --tools-only``). Each is a few lines over :class:`lore.service.Lore`,
which stays open for the server's life: the embedding model and vector
matrices load once. Before answering, memory files are re-checked (an
inotify read; a stat scan only when something changed); code at most every
2 s, and only after inotify saw a change (:mod:`lore.index.freshness`).

Nothing may be printed to stdout in stdio mode: it is the protocol channel.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from lore.errors import LoreError, NotFound, UsageError, as_lore_error, debugging, without_server_paths
from lore.memory.model import MAX_KEYWORD_LEN, MAX_KEYWORDS, MAX_SUBJECT, MEMORY_TYPES
from lore.memory.values import clip
from lore.secrets import redact

MAX_LIMIT = 50
# The server reads keyword lists ahead once no call has come for this long (seconds).
WARM_AFTER_IDLE = 0.1
MAX_QUERY = 4_000  # characters
MAX_TEXT = 1_000_000  # characters of a memory body or task description

# Argument types: limits of Lore's own (not only the transport's), enums in the schema.
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
Title = Annotated[str, Field(max_length=MAX_SUBJECT)]
# A task's title, as a tracker or a commit gives it: any length a query may have (as `lore recall`'s).
TaskTitle = Annotated[str, Field(max_length=MAX_QUERY)]


def _tag_list(value: object) -> object:
    """ "streaming, sse" as the CLI and frontmatter take it: a list of two tags."""
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value


Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_KEYWORD_LEN)]],
    Field(max_length=MAX_KEYWORDS),
    BeforeValidator(_tag_list),
]
Paths = Annotated[list[Annotated[str, Field(max_length=4096)]], Field(max_length=1000)]
MemoryType = Literal[MEMORY_TYPES]  # type: ignore[valid-type]
# Validated like MemoryType, advertised as a plain string: the values are listed
# once in the tool list (add_memory's `type`), and a wrong one is an error naming them.
MemoryTypeName = Annotated[MemoryType, WithJsonSchema({"type": "string"})]

# Advertised bounds (see _compact): a list's size when a normal call could meet
# it; string lengths never (titles and tags are short; past a limit, the call is
# a one-line error naming it). Every bound is enforced all the same.
SAFETY_NET_ITEMS = 100


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


_ECHOED = 2000  # characters of an appended event's content, args or result a reply repeats


def _brief(event: dict[str, Any]) -> dict[str, Any]:
    """An appended event as a reply shows it: a long content, args or result
    (up to a megabyte each) stands as its size, not repeated whole."""
    out = dict(event)
    for key in ("content", "args", "result"):
        value = out.get(key)
        size = len(value) if isinstance(value, str) else len(_dump(value))
        if value is not None and size > _ECHOED:
            out[key] = f"<{size:,} characters, stored in full>"
    return out


class LoreTools:
    """The service, shared by all tool calls, one call at a time per Lore (a Lore
    holds one SQLite connection and its caches).

    A team server (`lore serve --users`) passes `team`: a call made for one of
    its users (:data:`lore.interfaces.team.ACTING_USER`) uses that user's Lore,
    under that Lore's own lock, so users do not wait for each other.
    """

    def __init__(self, project: str | None, agent: str | None = None, *, team: Any = None):
        from lore.service import Lore

        self.own = Lore.open(project or ".", agent=agent, watch=True)
        self.team = team
        self._locks: dict[int, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._calls = 0  # calls started and not answered (any user's, any interface)
        self._last_call = 0.0  # time.monotonic() when the last call started or ended
        self._counting = threading.Lock()

    def lock_of(self, lore: Any) -> threading.Lock:
        """The lock that keeps calls on `lore` one at a time."""
        with self._locks_guard:
            return self._locks.setdefault(id(lore), threading.Lock())

    @property
    def lore(self):
        """The Lore acting for the current call: its user's, else the server's own."""
        from lore.interfaces.team import ACTING_USER

        user = ACTING_USER.get()
        if user is None or self.team is None:
            return self.own
        return self.team.lore_for(user)

    def all_lores(self) -> list:
        """Every Lore opened so far (the server's own and its users')."""
        return [self.own, *(self.team.opened() if self.team is not None else [])]

    def call(self, fn, *args, **kwargs) -> str:
        """Run a service call; LoreErrors become tool errors with their one-line message."""
        from mcp.server.mcpserver.exceptions import ToolError

        with self.serving(self.lore):
            try:
                return _dump(fn(*args, **kwargs))
            except Exception as err:
                known = as_lore_error(err)
                if known is None:
                    raise
                shown = without_server_paths(str(known), [self.own.project.root])
                raise ToolError(redact(shown)[0]) from None  # a key echoed back: never a secret in clear

    @contextlib.contextmanager
    def serving(self, lore: Any) -> Iterator[None]:
        """Hold `lore`'s lock for one call (a tool's, a web request's), counted:
        the server reads ahead only while no call comes."""
        self._count(+1)
        try:
            with self.lock_of(lore):
                yield
        finally:
            self._count(-1)

    def _count(self, step: int) -> None:
        with self._counting:
            self._calls += step
            self._last_call = time.monotonic()

    def warm(self) -> None:
        """Load the model and matrices before the first call; then, in the
        background while no call comes, the keyword lists of frequent terms
        (:meth:`Lore.warm_up`), one at a time."""
        with self.lock_of(self.own):
            try:
                self.own.warm_up(lists=0)
                problem = self.own.embedding_problem()
            except LoreError:
                return
        if problem is not None:  # (the CLI says it once a command; an agent's calls say nothing)
            logging.getLogger("lore.mcp").warning("vector search off, BM25 only: %s", problem)
        threading.Thread(target=self._warm_lists, name="lore-warm-lists", daemon=True).start()

    def _warm_lists(self) -> None:
        """Read a list whenever the server has been idle for :data:`WARM_AFTER_IDLE`
        seconds: an agent thinks for seconds between its calls, and a call that
        comes meanwhile waits for one list at most (tens of milliseconds)."""
        lock = self.lock_of(self.own)
        while True:
            with self._counting:
                busy = self._calls or time.monotonic() - self._last_call < WARM_AFTER_IDLE
            if busy:
                time.sleep(WARM_AFTER_IDLE)
                continue
            with lock:
                try:
                    if not self.own.warm_up(lists=1):  # (0 too once the Lore is closed)
                        return
                except Exception as err:  # damage the next call reports, or closed under it
                    logging.getLogger("lore.mcp").debug("stopped reading keyword lists ahead: %s", err)
                    return


class _ActingLore:
    """Stands for ``tools.lore`` at each use: the Lore of the call's user."""

    def __init__(self, tools: LoreTools):
        self._tools = tools

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tools.lore, name)


def _tool(server: Any, description: str) -> Callable[[Any], Any]:
    """Register a tool whose result is JSON text: an output schema of
    ``{"result": string}`` says nothing, and its structured copy sent every
    answer twice."""
    return server.tool(description=description, structured_output=False)


def build_server(project: str | None = None, *, agent: str | None = None, tools: LoreTools | None = None):
    """The MCP server and its :class:`LoreTools`; pass `tools` to share an open
    Lore and its lock with another interface (`lore serve`)."""
    _log_in_one_line()
    tools = tools or LoreTools(project, agent)
    lore: Any = _ActingLore(tools)
    from lore import __version__

    server = _server_class()(
        "lore",
        version=__version__,
        instructions=(
            "Project memory. Search before exploring: search_memories / memory_search (summaries + ids), "
            "then memory_read for detail; search_codebase for code. Write lasting knowledge only "
            "(decisions, conventions, gotchas) with memory_write or add_memory."
        ),
    )

    @_tool(
        server,
        description="Code search (meaning + words); files_only ranks files; since/until (inclusive): dates, phrases.",
    )
    def search_codebase(
        query: Query,
        file_types: list[str] | None = None,
        directories: list[str] | None = None,
        limit: Limit = 10,
        changed_within_days: float | None = None,
        since: str | None = None,
        until: str | None = None,
        files_only: bool = False,
        roles: list[str] | None = None,
    ) -> str:
        return tools.call(
            lambda: [
                h.to_dict(full=not files_only)
                for h in lore.code_search(
                    query,
                    limit=limit,
                    extensions=file_types or (),
                    directories=directories or (),
                    roles=roles or (),
                    changed_within_days=changed_within_days,
                    since=since,
                    until=until,
                    files_only=files_only,
                )
            ]
        )

    @_tool(server, description="Index code, history, memories.")
    def index_project(incremental: bool = True) -> str:
        def run():
            report = lore.reindex(force=not incremental)  # as `lore index`: a forced run repairs the index
            data = lore.index_code(force=not incremental).to_dict()
            data.pop("skipped")
            data["memories"] = {
                "added": len(report.added),
                "updated": len(report.updated),
                "removed": len(report.removed),
                "errors": [{"path": path, "error": error} for path, error in report.errors],
            }
            data["embedded"] = lore.embed()
            return data

        return tools.call(run)

    @_tool(server, description="Store lasting knowledge. applies_to: global|file:<path>|area:<name>.")
    def add_memory(
        type: MemoryType,
        title: Title,
        content: Text,
        tags: Tags | None = None,
        applies_to: str = "global",
        source_work_item_id: str | None = None,
        private: bool = False,
    ) -> str:
        return tools.call(
            lambda: lore.add(
                body=content,
                title=title,
                type=type,
                tags=tags or (),
                applies_to=applies_to,
                task=source_work_item_id,
                private=private,
            ).as_memory()
        )

    @_tool(server, description="A task's context: memories, likely files, code, past work, in budget tokens.")
    def recall_context(
        title: TaskTitle,
        description: Text = "",
        work_item_id: str | None = None,
        files: Paths | None = None,
        include_code: bool = True,
        include_memories: bool = True,
        include_related_work: bool = True,
        limit_per_type: Annotated[int, Field(ge=1, le=50)] = 5,
        budget: Annotated[int, Field(ge=100, le=32000)] | None = None,
        since: str | None = None,
        until: str | None = None,
        include_sessions: bool = False,
    ) -> str:
        return tools.call(
            lambda: lore.recall(
                title,
                include_sessions=include_sessions,
                description=description,
                task=work_item_id,
                files=files or (),
                include_code=include_code,
                include_memories=include_memories,
                include_related_work=include_related_work,
                limit_per_type=limit_per_type,
                budget=budget,
                since=since,
                until=until,
            ).to_dict()
        )

    @_tool(server, description="Search memories (hits scored 0-1); types as add_memory's.")
    def search_memories(
        query: Query,
        types: list[MemoryTypeName] | None = None,
        limit: Limit = 10,
        since: str | None = None,
        until: str | None = None,
        include_archived: bool = False,
    ) -> str:
        return tools.call(
            lambda: [
                h.to_dict()
                for h in lore.search(
                    query,
                    limit=limit,
                    types=types or (),
                    since=since,
                    until=until,
                    include_archived=include_archived,
                )
            ]
        )

    @_tool(server, description="Re-index changed/deleted files.")
    def update_index(files: Paths, deleted_files: Paths | None = None) -> str:
        return tools.call(lambda: lore.update_index(files, deleted_files or []))

    @_tool(server, description="Step 1 of search, then read: summaries and ids.")
    def memory_search(query: Query, limit: Limit = 5) -> str:
        return tools.call(
            lambda: [
                {
                    "id": h.id,
                    "summary": h.summary or h.snippet,
                    "title": h.title,
                    "relevance": h.score,
                    "timestamp": h.occurred_at,
                }
                for h in lore.search(query, limit=limit)
            ]
        )

    @_tool(server, description="Step 2: a memory's text (paged), links and backlinks.")
    def memory_read(
        id: str, offset: Annotated[int, Field(ge=0)] = 0, limit: Annotated[int, Field(ge=1, le=20000)] = 4000
    ) -> str:
        return tools.call(lambda: lore.show(id, offset=offset, limit=limit).to_dict())

    @_tool(server, description="Create a memory, or rewrite one by id.")
    def memory_write(
        content: Text,
        type: MemoryTypeName | None = None,
        tags: Tags | None = None,
        title: Title | None = None,
        id: str | None = None,
        applies_to: str | None = None,
    ) -> str:
        def run():
            if id is not None:
                try:
                    lore.resolve(id)
                except NotFound:
                    pass
                else:
                    return lore.update(
                        id, body=content, title=title, type=type, tags=tags, applies_to=applies_to
                    ).as_memory()
            return lore.add(
                body=content,
                title=title,
                type=type or "fact",
                tags=tags or (),
                applies_to=applies_to or "global",
                id=id,
            ).as_memory()

        return tools.call(run)

    @_tool(
        server,
        description="Edit a memory. append, prepend: text; replace_section: target=heading, text; "
        "find_replace: target=old, text, all; set: target=field, value; relate: target=relation, "
        "value=memory; move: value=new name.",
    )
    def edit_memory(
        id: str,
        operation: Literal["append", "prepend", "replace_section", "find_replace", "set", "relate", "move"],
        text: Text | None = None,
        target: Text | None = None,
        value: Text | None = None,
        all: bool = False,
    ) -> str:
        from lore.memory.edits import Edit

        def run():
            if operation == "move":
                if not value:
                    raise UsageError("move needs value: the new file name or folder")
                return lore.move(id, value).to_dict()
            edit = Edit(operation, text=text, every=all, value=value)
            if operation == "replace_section":
                edit.heading = target
            elif operation == "find_replace":
                edit.find = target
            elif operation == "set":
                edit.field = target
            elif operation == "relate":
                edit.relation = target
            return lore.edit(id, [edit]).to_dict()

        return tools.call(run)

    @_tool(server, description="A memory and its links (both ways, depth hops) in budget tokens.")
    def build_context(
        id: str,
        depth: Annotated[int, Field(ge=0, le=5)] = 1,
        budget: Annotated[int, Field(ge=100, le=32000)] | None = None,
    ) -> str:
        def run():
            pack = lore.context(id, depth=depth, budget=budget)
            return {
                "id": pack.query_used,
                "memories": pack.of("memory"),
                "tokens_used": pack.tokens_used,
                "markdown": pack.markdown,
            }

        return tools.call(run)

    register_session_tools(server, tools)
    for tool in server._tool_manager.list_tools():
        tool.parameters = _compact(tool.parameters)
    return server, tools


def register_session_tools(server, tools: LoreTools) -> None:
    """session_append / session_context: an agent records its session and reads
    back the context view (summaries of compacted parts, then recent events)."""
    lore: Any = _ActingLore(tools)

    @_tool(
        server,
        description="Record a session event (made on first use): role+content, tool_name+args, "
        "or result+is_error; tool_call_id pairs call and result.",
    )
    def session_append(
        session_id: str,
        role: str = "assistant",
        content: str | None = None,
        tool_name: str | None = None,
        args: dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        result: str | None = None,
        is_error: bool = False,
    ) -> str:
        from lore.sessions import one_append

        def run():
            events = one_append(
                role=role,
                content=content,
                tool_name=tool_name,
                args=args,
                call_id=tool_call_id,
                result=result,
                is_error=is_error,
            )
            seen = set(lore.notices)
            done = lore.record_events(session_id, events, create=True).to_dict()
            done["events"] = [_brief(event) for event in done["events"]]
            return {**done, "notices": [n for n in lore.notices if n not in seen]}

        return tools.call(run)

    @_tool(
        server,
        description="Session context: compacted parts' summaries, then recent events, in limit_tokens.",
    )
    def session_context(
        session_id: str, limit_tokens: Annotated[int, Field(ge=100)] | None = None, events: bool = False
    ) -> str:
        def run():
            view = lore.session_context(session_id, limit_tokens=limit_tokens)
            data = view.to_dict()
            if not events:
                data.pop("events")
                data["text"] = view.render()
            return data

        return tools.call(run)


class _OneLine(logging.Formatter):
    """A log record as one line on stderr: an exception as its type and message
    (the SDK logged a handler's failure as a multi-line traceback, drawn in boxes)."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [record.getMessage()]
        error = record.exc_info[1] if record.exc_info else None
        while error is not None and len(parts) < 6:  # the exception, then what caused it
            if isinstance(error, BaseExceptionGroup) and error.exceptions:
                error = error.exceptions[0]  # a task group's: what went wrong inside
                continue
            part = f"{type(error).__name__}: {error}"
            if part != parts[-1]:
                parts.append(part)
            error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
        return redact(f"lore: {record.levelname.lower()}: {' '.join(': '.join(parts).split())}")[0]


def _log_in_one_line() -> None:
    """Warnings and errors only, one line each, on stderr; LORE_DEBUG=1 keeps
    everything, tracebacks included. Installed before the SDK's own set-up,
    which then leaves the root logger as it is; a program that set up logging
    itself (a host embedding the server, a test) keeps its own."""
    import sys

    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    if debugging():
        root.setLevel(logging.DEBUG)
    else:
        handler.setFormatter(_OneLine())
        root.setLevel(logging.WARNING)
    root.addHandler(handler)


def _server_class():
    """MCPServer, with argument errors as one short line per field (not a validation dump)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    class LoreMCPServer(MCPServer):
        calls_started = calls_answered = 0  # tool calls begun, and returned or failed: see serve_stdio

        async def call_tool(self, name, arguments, *args, **kwargs):
            self.calls_started += 1
            try:
                self._known_arguments(name, arguments)
                return await super().call_tool(name, arguments, *args, **kwargs)
            except ToolError as err:
                if isinstance(err.__cause__, ValidationError):
                    # A value echoed back is shown (and logged) redacted: never a secret in clear.
                    raise ToolError(redact(f"{name}: {argument_problems(err.__cause__)}")[0]) from None
                raise
            finally:
                self.calls_answered += 1

        def _known_arguments(self, name, arguments) -> None:
            """An argument the tool does not take is refused: a misspelt `limt` or a
            filter another tool has (`types`) did nothing, and the agent believed it had."""
            tool = self._tool_manager.get_tool(name)
            if tool is None or not isinstance(arguments, dict):
                return
            known = tool.parameters.get("properties", {})
            unknown = [key for key in arguments if key not in known]
            if unknown:
                names = ", ".join(sorted(known))
                raise ToolError(
                    redact(f"{name}: unknown argument '{clip(str(unknown[0]), 40)}'; it takes {names}")[0]
                )

    return LoreMCPServer


def argument_problems(err) -> str:
    """'limit: must be at most 50; type: must be one of decision, pattern, …' from a pydantic error."""
    parts = []
    for problem in err.errors()[:5]:
        field = ".".join(str(p) for p in problem.get("loc", ()) if not isinstance(p, int)) or "arguments"
        ctx = problem.get("ctx") or {}
        kind = problem.get("type", "")
        if kind == "less_than_equal":
            message = f"must be at most {ctx.get('le')}"
        elif kind == "greater_than_equal":
            message = f"must be at least {ctx.get('ge')}"
        elif kind in ("string_too_long", "too_long"):
            message = f"is too long (at most {ctx.get('max_length')})"
        elif kind in ("string_too_short", "too_short"):
            message = (
                "must not be empty"
                if ctx.get("min_length") == 1
                else f"is too short ({ctx.get('min_length')})"
            )
        elif kind == "literal_error":
            message = f"must be one of {ctx.get('expected', '').replace(chr(39), '')}"
        elif kind == "missing":
            message = "is required"
        else:
            message = str(problem.get("msg", "is not valid")).lower()
        given = problem.get("input")
        if isinstance(given, (str, int, float)) and kind not in ("missing", "string_too_long"):
            # Redacted before it is clipped: a clipped secret no longer looks like one.
            message += f" (got {redact(str(given))[0][:40]!r})"
        parts.append(f"{field}: {message}")
    return "; ".join(parts)


def _compact(schema):
    """The advertised input schema without what costs an agent tokens and says
    little: per-field titles, `anyOf [X, null]` around optional fields,
    defaults (an argument left out gets the server's default; one given is
    used whatever the default), numeric bounds other than a result limit's
    maximum, string lengths, and list sizes no normal call meets. Arguments
    are still validated against the full signature: a call past a bound is a
    one-line error naming it. Enums stay: they say what a value may be."""
    if isinstance(schema, list):
        return [_compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _compact(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    for name, prop in (out.get("properties") or {}).items():
        for bound in ("minimum", "maximum") if name != "limit" else ("minimum",):
            prop.pop(bound, None)
        prop.pop("default", None)
        if prop.get("additionalProperties") is True:
            prop.pop("additionalProperties")  # JSON Schema's default
    out.pop("minLength", None)
    out.pop("maxLength", None)
    if out.get("maxItems", 0) >= SAFETY_NET_ITEMS:
        out.pop("maxItems")
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        out.pop("anyOf")
        out.update(next(o for o in options if o != {"type": "null"}))
    return out


def serve_stdio(project: str | None, *, agent: str | None = None) -> None:
    from lore.interfaces.stdio_repair import repair_stdin

    server, tools = build_server(project, agent=agent)
    tools.warm()
    repair_stdin(calls=lambda: (server.calls_started, server.calls_answered))
    server.run("stdio")


def serve_http(
    project: str | None,
    *,
    host: str,
    port: int,
    token: str | None,
    agent: str | None = None,
    allowed_hosts: list[str] | None = None,
) -> None:
    """Streamable HTTP at /mcp only (no web UI or JSON API: that is `lore serve`),
    behind the same gate as `lore serve` (one HTTP security layer: Host checks,
    bearer token required off loopback, malformed Authorization → 401, body
    limits, rate limits on failures)."""
    from lore.interfaces.web.app import serve

    serve(
        project, host=host, port=port, token=token, agent=agent, allowed_hosts=allowed_hosts or [], web=False
    )
