"""The MCP server: Lore's tools for agents, over stdio or streamable HTTP.

Tools follow seeds 003 (search_codebase, index_project, add_memory,
recall_context, search_memories, update_index) and 004 (memory_search →
memory_read, memory_write). Each is a few lines over :class:`lore.service.Lore`,
which stays open for the server's life: the embedding model and vector
matrices load once. Before answering, memory files are re-checked (an
inotify read; a stat scan only when something changed); code at most every
2 s (the service's ``CODE_CHECK_SECONDS`` for watching processes).

Nothing may be printed to stdout in stdio mode: it is the protocol channel.
"""

from __future__ import annotations

import json
import threading
from typing import Annotated, Any, Literal

from pydantic import Field

from lore.errors import LoreError, NotFound, as_lore_error
from lore.memory.model import MAX_KEYWORD_LEN, MAX_KEYWORDS, MAX_SUBJECT, MEMORY_TYPES

MAX_LIMIT = 50
MAX_QUERY = 4_000  # characters
MAX_TEXT = 1_000_000  # characters of a memory body or task description

# Argument types: limits of Lore's own (not only the transport's), enums in the schema.
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
Title = Annotated[str, Field(max_length=MAX_SUBJECT)]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_KEYWORD_LEN)]], Field(max_length=MAX_KEYWORDS)
]
Paths = Annotated[list[Annotated[str, Field(max_length=4096)]], Field(max_length=1000)]
MemoryType = Literal[MEMORY_TYPES]  # type: ignore[valid-type]


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class LoreTools:
    """The service, shared by all tool calls (one lock: SQLite connection + model)."""

    def __init__(self, project: str | None, agent: str | None = None):
        from lore.service import Lore

        self.lore = Lore.open(project or ".", agent=agent, watch=True)
        self.lock = threading.Lock()

    def call(self, fn, *args, **kwargs) -> str:
        """Run a service call; LoreErrors become tool errors with their one-line message."""
        from mcp.server.mcpserver.exceptions import ToolError

        with self.lock:
            try:
                return _dump(fn(*args, **kwargs))
            except Exception as err:
                known = as_lore_error(err)
                if known is None:
                    raise
                raise ToolError(str(known)) from None

    def warm(self) -> None:
        """Load the model and matrices before the first call."""
        with self.lock:
            try:
                self.lore.sync()
                self.lore.search("warm up", limit=1)
            except LoreError:
                pass


def build_server(project: str | None = None, *, agent: str | None = None, tools: LoreTools | None = None):
    """The MCP server and its :class:`LoreTools`; pass `tools` to share an open
    Lore and its lock with another interface (`lore serve`)."""
    tools = tools or LoreTools(project, agent)
    lore = tools.lore
    server = _server_class()(
        "lore",
        instructions=(
            "Project memory. Search before exploring: search_memories / memory_search (summaries + ids), "
            "then memory_read for detail; search_codebase for code. Write lasting knowledge only "
            "(decisions, conventions, gotchas) with memory_write or add_memory."
        ),
    )

    @server.tool(
        description="Semantic + keyword code search. Returns chunks with file_path, lines, "
        "symbol, language, similarity 0-1; files_only ranks files (code + similar past commits). "
        "since/until: dates or phrases ('last week')."
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
    ) -> str:
        return tools.call(
            lambda: [
                h.to_dict(full=not files_only)
                for h in lore.code_search(
                    query,
                    limit=limit,
                    extensions=file_types or (),
                    directories=directories or (),
                    changed_within_days=changed_within_days,
                    since=since,
                    until=until,
                    files_only=files_only,
                )
            ]
        )

    @server.tool(
        description="Index the project's code, history and memories (incremental unless "
        "incremental=false). Returns IndexResult."
    )
    def index_project(incremental: bool = True) -> str:
        def run():
            lore.sync(force=not incremental)
            data = lore.index_code(force=not incremental).to_dict()
            data.pop("skipped")
            data["embedded"] = lore.embed()
            return data

        return tools.call(run)

    @server.tool(
        description=f"Store a lasting memory. type: {', '.join(MEMORY_TYPES)}. "
        "applies_to: global | file:<path> | area:<name>."
    )
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

    @server.tool(
        description="Context for a task: ranked memories, likely files, code, related past "
        "work, packed into budget tokens. Returns markdown + structured lists."
    )
    def recall_context(
        title: Title,
        description: Text = "",
        work_item_id: str | None = None,
        files: Paths | None = None,
        include_code: bool = True,
        include_memories: bool = True,
        include_related_work: bool = True,
        limit_per_type: Annotated[int, Field(ge=1, le=20)] = 5,
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

    @server.tool(
        description="Search memories (session summaries included); filter by types. Returns memories "
        "with id, title, type, snippet, score 0-1. Archived ones only with include_archived."
    )
    def search_memories(
        query: Query,
        types: list[MemoryType] | None = None,
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

    @server.tool(description="Re-index changed/deleted files (for hooks). Returns {updated, deleted}.")
    def update_index(files: Paths, deleted_files: Paths | None = None) -> str:
        return tools.call(lambda: lore.update_index(files, deleted_files or []))

    @server.tool(description="Step 1 of search→read: summaries, ids, relevance, timestamp.")
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

    @server.tool(description="Step 2: a memory's full text, paginated by characters (offset, limit).")
    def memory_read(
        id: str, offset: Annotated[int, Field(ge=0)] = 0, limit: Annotated[int, Field(ge=1, le=20000)] = 4000
    ) -> str:
        return tools.call(lambda: lore.show(id, offset=offset, limit=limit).to_dict())

    @server.tool(
        description="Create a memory, or update one when id is given. Lasting knowledge "
        "only, never transient state or secrets."
    )
    def memory_write(
        content: Text,
        type: MemoryType | None = None,
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

    register_session_tools(server, tools)
    for tool in server._tool_manager.list_tools():
        tool.parameters = _compact(tool.parameters)
    return server, tools


def register_session_tools(server, tools: LoreTools) -> None:
    """session_append / session_context: an agent records its session and reads
    back the context view (summaries of compacted parts, then recent events)."""
    lore = tools.lore

    @server.tool(
        description="Record one event of your session (created on first use): a message (role, content), "
        "a tool call (tool_name, args, tool_call_id) or a tool result (result, tool_call_id, is_error). "
        "Crossing the soft limit compacts old events into a summary. Returns the event ids and tokens."
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
        from lore.errors import UsageError
        from lore.sessions import message, tool_call, tool_result

        def run():
            if tool_name:
                event = tool_call(tool_name, args, call_id=tool_call_id)
            elif result is not None:
                event = tool_result(tool_call_id, result, is_error=is_error)
            elif content is not None:
                event = message(role, content)
            else:
                raise UsageError(
                    "give content (a message), tool_name (a tool call) or result (a tool result)"
                )
            seen = set(lore.notices)
            done = lore.record_events(session_id, [event], create=True)
            return {**done.to_dict(), "notices": [n for n in lore.notices if n not in seen]}

        return tools.call(run)

    @server.tool(
        description="Your session's context view: summaries of compacted parts, then the recent events, "
        "oldest first, within limit_tokens (default: the hard limit). Returns text (or events=true)."
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


def _server_class():
    """MCPServer, with argument errors as one short line per field (not a validation dump)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    class LoreMCPServer(MCPServer):
        async def call_tool(self, name, arguments, *args, **kwargs):  # type: ignore[override]
            try:
                return await super().call_tool(name, arguments, *args, **kwargs)
            except ToolError as err:
                if isinstance(err.__cause__, ValidationError):
                    raise ToolError(f"{name}: {argument_problems(err.__cause__)}") from None
                raise

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
            message += f" (got {str(given)[:40]!r})"
        parts.append(f"{field}: {message}")
    return "; ".join(parts)


def _compact(schema):
    """The advertised input schema without what costs an agent tokens and says
    nothing: per-field titles and `anyOf [X, null]` around optional fields
    (arguments are still validated against the full signature)."""
    if isinstance(schema, list):
        return [_compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _compact(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        out.pop("anyOf")
        out.update(next(o for o in options if o != {"type": "null"}))
    if out.get("default", 0) is None:
        out.pop("default")
    return out


def serve_stdio(project: str | None, *, agent: str | None = None) -> None:
    server, tools = build_server(project, agent=agent)
    tools.warm()
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
    """Streamable HTTP at /mcp, behind the same gate as `lore serve` (one HTTP
    security layer: Host checks, bearer token required off loopback, malformed
    Authorization → 401, body limits, rate limits on failures)."""
    from lore.interfaces.web.app import serve

    serve(project, host=host, port=port, token=token, agent=agent, allowed_hosts=allowed_hosts or [])
