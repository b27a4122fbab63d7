"""The HTTP API: one table of endpoints, each a few lines over :class:`lore.service.Lore`.

An :class:`Endpoint` names its method and path, its parameters (with their
limits) and a *view*: a function of the open Lore and the parsed arguments
that returns a core result. The same view serves the JSON API and, where an
endpoint has an HTML twin (``page``), the web page: one view, two
renderers. The OpenAPI document is generated from this table too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lore.filenames import MAX_PATH
from lore.index.roles import ROLES
from lore.interfaces.web.inputs import MAX_BODY_TEXT, Param
from lore.memory.curation import BULK_ACTIONS
from lore.memory.model import MAX_KEYWORD_LEN, MAX_KEYWORDS, MAX_SUBJECT, MEMORY_TYPES
from lore.memory.repository import MOVABLE_TIERS
from lore.search.browse import MAX_PAGE, SORTS
from lore.search.filters import MAX_FILTER_VALUES, MAX_TASK_FILES
from lore.search.pack import BRACKETS

MODES = ("hybrid", "bm25", "vector")
TIERS = ("hot", "warm", "cold", "archive", "durable", "daily", "session", "session-summary")
LEVELS = ("auto", "L1", "L2", "L3")
MAX_PATHS = 10_000


@dataclass(frozen=True)
class Endpoint:
    """One API operation.

    Args:
        view: ``view(lore, **arguments)`` → a core result (JSON: its records' ``to_dict()``).
        params: query, path (named ``{x}`` in `path`) and body parameters.
        page: path of the HTML twin rendering `template` with the same view.
        stream: a handler of its own (server-sent events) instead of a view.
        locked: the view reads or writes the project, so it holds the project's
            lock; a view that only computes (preview) does not keep others waiting.
    """

    method: str
    path: str
    summary: str
    view: Callable[..., Any] | None
    params: tuple[Param, ...] = ()
    status: int = 200
    tag: str = "memories"
    page: str | None = None
    template: str | None = None
    stream: bool = False
    locked: bool = True

    @property
    def has_body(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH")

    def path_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if "{" + p.name + "}" in self.path)

    def other_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if "{" + p.name + "}" not in self.path)


# -- parameter sets -------------------------------------------------------------------

KEY = Param("key", required=True, max_len=300, description="Memory id, id prefix or file name.")
FILTERS = (
    Param(
        "type", "list", "Only these types.", dest="types", choices=MEMORY_TYPES, max_items=len(MEMORY_TYPES)
    ),
    Param(
        "tag",
        "list",
        "Only memories with every one of these tags.",
        dest="tags",
        max_len=MAX_KEYWORD_LEN,
        max_items=MAX_KEYWORDS,
    ),
    Param("agent", description="Only this agent's memories.", max_len=100),
    Param("task", description="Only memories of this task id.", max_len=200),
    Param("scope", description="applies_to: global, file:<path> (prefix), area:<name>.", max_len=500),
    Param(
        "tier",
        description="Attention tier (hot, warm, cold, archive) or storage (durable, daily, session, session-summary).",
        choices=TIERS,
    ),
    Param(
        "since", description="Occurred at or after (a date or a phrase: 2024-05-01, last week).", max_len=40
    ),
    Param("until", description="Occurred up to and including this date or period (or a phrase).", max_len=40),
)
ARCHIVED = Param("include_archived", "bool", "Archived memories too (left out unless asked for).")
# Commit dates, for code (files changed then), history and recall (the CLI's --since/--until).
PERIOD = (
    Param(
        "since", description="Changed at or after (a date or a phrase: 2024-05-01, last month).", max_len=40
    ),
    Param("until", description="Changed up to and including this date or period (or a phrase).", max_len=40),
)
SELECTION = (
    *FILTERS,
    Param("visibility", description="shared or private (this agent's own).", choices=("shared", "private")),
    Param("stale", "bool", "Only stale (true) or only fresh (false) memories."),
    ARCHIVED,
)
BROWSE = (
    *SELECTION,
    Param("sort", description="Column to sort by.", choices=tuple(SORTS), default="occurred_at"),
    Param("order", description="asc or desc.", choices=("asc", "desc"), default="desc"),
    Param("offset", "int", "Skip this many.", minimum=0, maximum=10_000_000, default=0),
    Param("limit", "int", f"Page size (1-{MAX_PAGE}).", minimum=1, maximum=MAX_PAGE, default=50),
)
QUERY = Param("q", required=True, max_len=2000, description="What to look for.")
MODE = Param("mode", description="hybrid (default when a model is available), bm25 or vector.", choices=MODES)
LIMIT = Param("limit", "int", "At most this many (1-50).", minimum=1, maximum=50, default=10)
SEARCH = (QUERY, MODE, LIMIT, *FILTERS, ARCHIVED)
RECALL = (
    Param("title", required=True, max_len=2000, description="The task's title."),
    Param("description", max_len=20_000, description="The task's description."),
    Param("task", max_len=200, description="Task id."),
    Param("files", "list", "Files the task touches.", max_len=MAX_PATH, max_items=MAX_TASK_FILES),
    Param("budget", "int", "Token budget.", minimum=100, maximum=32_000),
    Param("level", description="Detail level.", choices=LEVELS, default="auto"),
    Param(
        "bracket", description="How full the agent's context is (sets the level).", choices=tuple(BRACKETS)
    ),
    Param("limit_per_type", "int", "Items per kind.", minimum=1, maximum=20, default=5),
    *PERIOD,
    Param("include_memories", "bool", default=True),
    Param("include_code", "bool", default=True),
    Param("include_related_work", "bool", default=True),
    Param("include_sessions", "bool", "Summaries of recorded sessions too."),
)
CODE = (
    QUERY,
    Param("lang", "list", "Languages.", dest="languages", max_len=40, max_items=20),
    Param("ext", "list", "File extensions.", dest="extensions", max_len=20, max_items=MAX_FILTER_VALUES),
    Param(
        "dir",
        "list",
        "Directory prefixes or globs.",
        dest="directories",
        max_len=MAX_PATH,
        max_items=MAX_FILTER_VALUES,
    ),
    Param("role", "list", "File roles.", dest="roles", choices=ROLES, max_items=len(ROLES)),
    Param(
        "changed_within",
        "float",
        "Only files changed in the last N days.",
        dest="changed_within_days",
        minimum=0,
        maximum=100_000,
    ),
    *PERIOD,
    Param("files_only", "bool", "Rank files (best chunk per file)."),
    MODE,
    LIMIT,
    Param("full", "bool", "Include each chunk's whole text."),
)
MEMORY_FIELDS = (
    Param("title", max_len=MAX_SUBJECT, description="One-line subject (default: from the body)."),
    Param("type", choices=MEMORY_TYPES, description="Memory type."),
    Param("tags", "list", "Keywords.", max_len=MAX_KEYWORD_LEN, max_items=MAX_KEYWORDS),
    Param("applies_to", max_len=500, description="global, file:<path> or area:<name>."),
    Param("files", "list", "Files the memory is about.", max_len=MAX_PATH, max_items=1000),
    Param("labels", "list", "Task labels.", max_len=100, max_items=50),
    Param("confidence", "float", "0-1.", minimum=0, maximum=1),
)
CREATE = (
    Param("body", required=True, max_len=MAX_BODY_TEXT, description="The memory's Markdown text."),
    *MEMORY_FIELDS,
    Param("task", max_len=200, description="Task id it came from."),
    Param("occurred_at", max_len=40, description="When it happened (ISO 8601; default now)."),
    Param("private", "bool", "Only visible to the server's agent."),
    Param("session", "bool", "Session tier (not committed)."),
    Param("is_global", "bool", "Shared with every project of a team database (PostgreSQL)."),
)
UPDATE = (
    KEY,
    Param("body", max_len=MAX_BODY_TEXT, description="New Markdown text."),
    *MEMORY_FIELDS,
    Param(
        "expected_sha256",
        max_len=64,
        description="SHA-256 of the file as you read it (GET's sha256): a later change on disk is a 409.",
    ),
)
BULK = (
    Param("action", required=True, choices=BULK_ACTIONS, description="What to do to the selection."),
    *SELECTION,
    Param("ids", "list", "Narrow the selection to these memory ids.", max_len=128, max_items=10_000),
    Param("add_tags", "list", "retag: tags to add.", max_len=MAX_KEYWORD_LEN, max_items=MAX_KEYWORDS),
    Param("remove_tags", "list", "retag: tags to remove.", max_len=MAX_KEYWORD_LEN, max_items=MAX_KEYWORDS),
    Param("new_type", choices=MEMORY_TYPES, description="set_type: the new type."),
    Param("new_tier", choices=MOVABLE_TIERS, description="set_tier: the new storage tier."),
    Param("apply", "bool", "false (default): preview; true: do it (needs confirm)."),
    Param("confirm", max_len=64, description="The preview's digest."),
)
UPDATE_INDEX = (
    Param("files", "list", "Changed files (003).", max_len=MAX_PATH, max_items=MAX_PATHS),
    Param("deleted_files", "list", "Deleted files (003).", max_len=MAX_PATH, max_items=MAX_PATHS),
    Param("project_id", max_len=200, description="Accepted for 003's hook script; ignored."),
    Param("full", "bool", "Index everything (incremental) instead of the given files."),
    Param("rebuild", "bool", "Re-read and re-chunk every file."),
)
JOB = Param("job_id", required=True, max_len=40, description="Job id from POST /update-index.")
TRASH_KEY = Param("trash_id", required=True, max_len=300, description="Trashed memory id or trash file name.")


# -- views ------------------------------------------------------------------------------


def browse(lore, *, order: str = "desc", **args):
    return lore.browse(descending=order == "desc", **args)


def search(lore, *, q: str, **args):
    return lore.search(q, **args)


def code(lore, *, q: str, full: bool = False, **args):
    return [hit.to_dict(full=full) for hit in lore.code_search(q, **args)]


def update_index(lore, *, files=(), deleted_files=(), project_id=None, full=False, rebuild=False):
    if rebuild:
        kind = "rebuild"
    elif full or not (files or deleted_files):
        kind = "update"
    else:
        kind = "files"
    job = lore.start_index_job(
        kind, files=files if kind == "files" else (), deleted_files=deleted_files if kind == "files" else ()
    )
    return {
        "job_id": job.id,
        "status_url": f"/api/jobs/{job.id}",
        "events_url": f"/api/jobs/{job.id}/events",
        "job": job.to_dict(),
    }


def jobs(lore):
    return {"jobs": lore.index_jobs()}


def preview(lore, *, body: str):
    from lore.interfaces.web.render import markdown_html

    return {"html": markdown_html(body)}


def trash_list(lore):
    return lore.trash_entries()


def purge(lore, *, days=None):
    return lore.collect_garbage(retention_days=days)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET",
        "/api/memories",
        "List memories: filters, sort, pagination.",
        browse,
        BROWSE,
        page="/memories",
        template="memories.html",
    ),
    Endpoint(
        "POST",
        "/api/memories",
        "Create a memory (validated, indexed and embedded at once).",
        lambda lore, **a: lore.create(**a),
        CREATE,
        status=201,
    ),
    Endpoint(
        "POST",
        "/api/memories/bulk",
        "Preview or apply a bulk action on a filtered selection.",
        lambda lore, **a: lore.bulk(**a),
        BULK,
    ),
    Endpoint(
        "GET",
        "/api/memories/{key}",
        "One memory: fields, body, file sha256, anchors, staleness, attention.",
        lambda lore, key: lore.memory_detail(key),
        (KEY,),
        page="/memories/{key}",
        template="memory.html",
    ),
    Endpoint(
        "PATCH",
        "/api/memories/{key}",
        "Update a memory; 409 if its file changed since expected_sha256.",
        lambda lore, key, **a: lore.update_checked(key, **a),
        UPDATE,
    ),
    Endpoint(
        "DELETE",
        "/api/memories/{key}",
        "Soft delete: move to the trash.",
        lambda lore, key: lore.remove(key),
        (KEY,),
    ),
    Endpoint(
        "GET",
        "/api/memories/{key}/history",
        "Git log of the memory's file.",
        lambda lore, key, limit: lore.memory_log(key, limit=limit),
        (KEY, Param("limit", "int", minimum=1, maximum=200, default=20)),
    ),
    Endpoint(
        "POST",
        "/api/memories/{key}/verify",
        "Mark checked: re-anchor to the current code (clears stale).",
        lambda lore, key: lore.verify(key),
        (KEY,),
    ),
    Endpoint(
        "GET",
        "/api/trash",
        "Trashed memories.",
        trash_list,
        (),
        tag="trash",
        page="/trash",
        template="trash.html",
    ),
    Endpoint(
        "POST",
        "/api/trash/purge",
        "Purge trash entries older than the retention period (or `days`).",
        purge,
        (Param("days", "float", minimum=0, maximum=100_000),),
        tag="trash",
    ),
    Endpoint(
        "POST",
        "/api/trash/{trash_id}/restore",
        "Restore a trashed memory.",
        lambda lore, trash_id: {"restored": lore.restore(trash_id)},
        (TRASH_KEY,),
        tag="trash",
    ),
    Endpoint(
        "DELETE",
        "/api/trash/{trash_id}",
        "Purge one trash entry now.",
        lambda lore, trash_id: {"purged": [lore.purge(trash_id)]},
        (TRASH_KEY,),
        tag="trash",
    ),
    Endpoint(
        "GET",
        "/api/search",
        "Search memories (the CLI's `lore search`).",
        search,
        SEARCH,
        tag="search",
        page="/search",
        template="search.html",
    ),
    Endpoint(
        "GET",
        "/api/recall",
        "Recall pack for a task (the CLI's `lore recall`).",
        lambda lore, title, **a: lore.recall(title, **a),
        RECALL,
        tag="search",
    ),
    Endpoint("GET", "/api/code", "Code search (the CLI's `lore code`).", code, CODE, tag="search"),
    Endpoint(
        "GET",
        "/api/history",
        "Past work: commits (the CLI's `lore history`).",
        lambda lore, q, **a: lore.history(q, **a),
        (QUERY, LIMIT, MODE, *PERIOD),
        tag="search",
    ),
    Endpoint(
        "GET",
        "/api/stale",
        "Memories whose anchored code changed.",
        lambda lore: lore.stale(),
        (),
        tag="index",
    ),
    Endpoint(
        "GET",
        "/api/files/{path}",
        "An indexed code file's text (anchors link here).",
        lambda lore, path: lore.code_file(path),
        (Param("path", required=True, max_len=MAX_PATH),),
        tag="index",
        page="/files/{path}",
        template="file.html",
    ),
    Endpoint(
        "GET",
        "/api/index",
        "Index dashboard: sources, failures, embeddings, jobs.",
        lambda lore: lore.index_overview(),
        (),
        tag="index",
        page="/index",
        template="index.html",
    ),
    Endpoint(
        "GET",
        "/api/status",
        "Index freshness (the CLI's `lore status`).",
        lambda lore: lore.status(),
        (),
        tag="index",
    ),
    Endpoint(
        "GET",
        "/api/stats",
        "Counts and sizes (the CLI's `lore stats`).",
        lambda lore: lore.stats(),
        (),
        tag="index",
    ),
    Endpoint(
        "GET",
        "/api/doctor",
        "Every problem with a fix (the CLI's `lore doctor`).",
        lambda lore: lore.doctor_apart(),
        (),
        tag="index",
        locked=False,  # in a Lore of its own: the server's other requests go on
    ),
    Endpoint(
        "POST",
        "/update-index",
        "003's update_index: changed files, or a full run. 202 + job id.",
        update_index,
        UPDATE_INDEX,
        status=202,
        tag="index",
    ),
    Endpoint(
        "POST",
        "/api/update-index",
        "Same as POST /update-index.",
        update_index,
        UPDATE_INDEX,
        status=202,
        tag="index",
    ),
    Endpoint("GET", "/api/jobs", "Index jobs, newest first.", jobs, (), tag="index"),
    Endpoint(
        "GET",
        "/api/jobs/{job_id}",
        "One index job: state, progress per phase, failed files, result.",
        lambda lore, job_id: lore.index_job(job_id),
        (JOB,),
        tag="index",
    ),
    Endpoint(
        "GET",
        "/api/jobs/{job_id}/events",
        "Server-sent events: the job's JSON on each change, until it ends.",
        None,
        (JOB,),
        tag="index",
        stream=True,
    ),
    Endpoint(
        "POST",
        "/api/preview",
        "Render Markdown as the memory page does (HTML escaped).",
        preview,
        (Param("body", required=True, max_len=MAX_BODY_TEXT),),
        tag="memories",
        locked=False,
    ),
)


def openapi(endpoints: tuple[Endpoint, ...] = ENDPOINTS) -> dict:
    """The OpenAPI 3.1 document of the API, from the endpoint table."""
    from lore import __version__

    error = {
        "description": "Error",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    paths: dict = {}
    for ep in endpoints:
        operation: dict = {"summary": ep.summary, "tags": [ep.tag], "operationId": _operation_id(ep)}
        parameters = [
            {"name": p.name, "in": "path", "required": True, "schema": p.schema()} for p in ep.path_params()
        ]
        if ep.has_body:
            body = ep.other_params()
            operation["requestBody"] = {
                "required": any(p.required for p in body),
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {p.name: p.schema() for p in body},
                            "required": [p.name for p in body if p.required],
                        }
                    }
                },
            }
        else:
            parameters += [
                {"name": p.name, "in": "query", "required": p.required, "schema": p.schema()}
                for p in ep.other_params()
            ]
        if parameters:
            operation["parameters"] = parameters
        media = "text/event-stream" if ep.stream else "application/json"
        operation["responses"] = {
            str(ep.status): {"description": "OK", "content": {media: {}}},
            **(
                {"200": {"description": "Stored already: nothing created", "content": {media: {}}}}
                if ep.status == 201
                else {}
            ),
            "4XX": error,
            "5XX": error,
        }
        paths.setdefault(ep.path, {})[ep.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Lore",
            "version": __version__,
            "description": "Project memory for AI coding agents. JSON field names are the CLI's `--json`.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                                "field": {"type": "string"},
                            },
                            "required": ["code", "message"],
                        }
                    },
                }
            },
        },
        "security": [{"bearer": []}],
    }


def _operation_id(ep: Endpoint) -> str:
    words = [w for w in ep.path.replace("{", "").replace("}", "").split("/") if w and w != "api"]
    return ep.method.lower() + "_" + "_".join(w.replace("-", "_") for w in words)
