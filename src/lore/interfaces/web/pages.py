"""The web UI: HTML twins of the API's views, and the forms that change things.

Pages render the same view as their API twin (see :mod:`.api`) through a
Jinja template. Forms post URL-encoded fields named like the API's JSON
fields, carry the CSRF token, and redirect after success (so reloading
never repeats an action); a failed save re-renders the form with what was
typed and the reason, naming the field.
"""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import urlencode

import anyio

from lore.errors import Conflict, LoreError, ValidationError
from lore.interfaces.web import api, auth
from lore.interfaces.web.inputs import Param, parse_form, parse_pairs, read_body
from lore.interfaces.web.render import as_error, error_body, error_headers, html_response
from lore.memory.model import MEMORY_TYPES

STATIC = Path(__file__).parent / "static"
# The fields of the selection form that the bulk page carries along.
SELECTION_NAMES = tuple(p.name for p in api.SELECTION)


def routes(backend, guard: auth.Guard) -> list:
    from starlette.responses import RedirectResponse
    from starlette.routing import Route

    def bind(handler):
        return functools.partial(handler, backend, guard)

    out = [Route("/", lambda request: RedirectResponse("/memories", 303))]
    # Literal paths before the parametrised twins that would swallow them.
    out += [
        Route("/memories/new", bind(new_memory), methods=["GET", "POST"]),
        Route("/memories/{key}/edit", bind(edit_memory), methods=["GET", "POST"]),
        Route("/memories/{key}/delete", bind(delete_memory), methods=["POST"]),
        Route("/trash/{trash_id}/restore", bind(restore_trashed), methods=["POST"]),
        Route("/trash/{trash_id}/purge", bind(purge_trashed), methods=["POST"]),
        Route("/bulk", bind(bulk), methods=["POST"]),
        Route("/index/{kind}", bind(start_job), methods=["POST"]),
        Route("/login", bind(login), methods=["GET", "POST"]),
        Route("/logout", bind(logout), methods=["POST"]),
        Route("/docs", bind(docs)),
    ]
    for ep in api.ENDPOINTS:
        if ep.page:
            out.append(
                Route(ep.page.replace("{path}", "{path:path}"), functools.partial(twin, backend, guard, ep))
            )
    return out


# -- rendering -----------------------------------------------------------------------------


def render(
    request, guard: auth.Guard, template: str, context: dict, status: int = 200, headers: dict | None = None
):
    """An HTML page; issues the CSRF cookie its forms need on first visit."""
    csrf = request.cookies.get(auth.CSRF_COOKIE)
    fresh = not csrf
    if fresh:
        csrf = auth.Guard.new_csrf()
    base = {
        "request": request,
        "csrf_token": csrf,
        "csrf_field": auth.CSRF_FIELD,
        "logged_in": request.state.auth == "session",
        "needs_login": not guard.open,
        "memory_types": MEMORY_TYPES,
        "path": request.url.path,
    }
    response = html_response(
        template, {**base, **context}, status, headers={"Cache-Control": "no-store", **(headers or {})}
    )
    if fresh:
        response.set_cookie(auth.CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/")
    return response


def error_page(request, guard, err: BaseException, *, title: str = "Something went wrong"):
    known = as_error(err)
    return render(
        request, guard, "error.html", {"title": title, "error": error_body(known)["error"]}, known.http_status
    )


async def twin(backend, guard, ep: api.Endpoint, request):
    """The HTML page of a GET endpoint: same arguments, same view, a template."""
    pairs = list(request.path_params.items()) + request.query_params.multi_items()
    context = {
        "data": None,
        "args": {},
        "query": request.query_params,
        "problem": None,
        # The filters in force, carried to the bulk form as they were typed.
        "selection": [(k, v) for k, v in request.query_params.multi_items() if k in SELECTION_NAMES and v],
    }
    if ep.page == "/search" and not request.query_params.get("q"):
        return render(request, guard, str(ep.template), context)  # the empty search form
    try:
        context["args"] = parse_pairs(pairs, ep.params)
    except ValidationError as err:
        context["problem"] = error_body(err)["error"]
        return render(request, guard, str(ep.template), context, err.http_status)
    try:
        context["data"] = await backend.call(ep.view, **context["args"])
        if ep.template == "memory.html":
            context["log"] = await backend.call(lambda lore: lore.memory_log(context["data"].id))
    except Exception as err:
        return error_page(request, guard, err)
    # A page renders Markdown (a memory's body can be megabytes): in a worker
    # thread, so that one long body never holds up other requests.
    return await anyio.to_thread.run_sync(lambda: render(request, guard, str(ep.template), context))


# -- forms ------------------------------------------------------------------------------------


async def form_pairs(request, guard) -> list[tuple[str, str]]:
    """The submitted form's fields, after checking its CSRF token."""
    pairs = parse_form(await read_body(request))
    given = next((v for k, v in reversed(pairs) if k == auth.CSRF_FIELD), None)
    if not auth.Guard.csrf_matches(request.cookies.get(auth.CSRF_COOKIE), given):
        raise auth.Forbidden(
            "the form's security token is missing or stale; reload the page and submit again"
        )
    return pairs


def path_arg(request, param: Param):
    """A path parameter checked like the API checks it (length, NUL and control characters)."""
    return parse_pairs([(param.name, request.path_params[param.name])], (param,))[param.target]


def redirect(url: str):
    from starlette.responses import RedirectResponse

    return RedirectResponse(url, 303)


def _memory_values(detail) -> dict:
    return {
        "title": detail.title,
        "type": detail.type,
        "tags": ", ".join(detail.tags),
        "applies_to": detail.applies_to,
        "confidence": "" if detail.confidence == 1.0 else detail.confidence,
        "body": detail.body,
        "expected_sha256": detail.sha256,
    }


async def new_memory(backend, guard, request):
    values = {"type": "fact", "applies_to": "global", "title": "", "tags": "", "body": ""}
    if request.method == "GET":
        return render(request, guard, "edit.html", {"values": values, "detail": None})
    try:
        pairs = await form_pairs(request, guard)
        values = dict(pairs)
        args = parse_pairs(pairs, api.CREATE)
        result = await backend.call(lambda lore: lore.create(**args))
        # The same content stored already: nothing was written, and the page says so.
        return redirect(f"/memories/{result.memory.id}?{'saved=1' if result.created else 'existing=1'}")
    except LoreError as err:
        return _form_error(request, guard, err, values, None)
    except Exception as err:
        return error_page(request, guard, err)


async def edit_memory(backend, guard, request):
    try:
        key = path_arg(request, api.KEY)
        detail = await backend.call(lambda lore: lore.memory_detail(key))
    except Exception as err:
        return error_page(request, guard, err)
    if request.method == "GET":
        return render(request, guard, "edit.html", {"values": _memory_values(detail), "detail": detail})
    values: dict = {}
    try:
        pairs = await form_pairs(request, guard)
        values = dict(pairs)
        args = _cleared(parse_pairs(pairs, UPDATE_FORM), values)
        await backend.call(lambda lore: lore.update_checked(key, **args))
        return redirect(f"/memories/{detail.id}?saved=1")
    except Conflict as err:
        # Keep what was typed, show what is on disk now, and offer to overwrite it.
        current = await backend.call(lambda lore: lore.memory_detail(key))
        context = {
            "values": values,
            "detail": current,
            "conflict": current,
            "error": error_body(err)["error"],
        }
        return render(request, guard, "edit.html", context, 409)
    except LoreError as err:
        return _form_error(request, guard, err, values, detail)
    except Exception as err:
        return error_page(request, guard, err)


def _form_error(request, guard, err: LoreError, values: dict, detail):
    if isinstance(err, auth.Forbidden):
        return error_page(request, guard, err, title="Not saved")
    return render(
        request,
        guard,
        "edit.html",
        {"values": values, "detail": detail, "error": error_body(err)["error"]},
        err.http_status,
    )


UPDATE_FORM: tuple[Param, ...] = tuple(p for p in api.UPDATE if p.name != "key")
# What a field of the edit form sent empty means: the user cleared it (the form
# sends every field). The form shows confidence 1.0 as an empty box.
CLEARED = {"applies_to": "global", "confidence": 1.0}


def _cleared(args: dict, values: dict) -> dict:
    """`args` with the fields the form sent empty set to their cleared value
    (an empty list, the global scope, full confidence), where "not given" would
    keep the old value and still say "Saved"; a title or body can't be emptied."""
    for param in UPDATE_FORM:
        if param.name not in values or param.target in args:
            continue
        if param.kind == "list":
            args[param.target] = []
        elif param.name in CLEARED:
            args[param.target] = CLEARED[param.name]
        elif param.name in ("title", "body"):
            raise ValidationError(
                f"can't be empty; write the memory's {'subject' if param.name == 'title' else 'text'}",
                field=param.name,
            )
    return args


async def delete_memory(backend, guard, request):
    try:
        key = path_arg(request, api.KEY)
        await form_pairs(request, guard)
        entry = await backend.call(lambda lore: lore.remove(key))
        return redirect("/memories?" + urlencode({"trashed": entry.id, "trashed_title": entry.original}))
    except Exception as err:
        return error_page(request, guard, err, title="Not deleted")


async def restore_trashed(backend, guard, request):
    try:
        trash_id = path_arg(request, api.TRASH_KEY)
        await form_pairs(request, guard)
        await backend.call(lambda lore: lore.restore(trash_id))
        return redirect(f"/memories/{trash_id}?restored=1")
    except Exception as err:
        return error_page(request, guard, err, title="Not restored")


async def purge_trashed(backend, guard, request):
    try:
        trash_id = path_arg(request, api.TRASH_KEY)
        await form_pairs(request, guard)
        await backend.call(lambda lore: lore.purge(trash_id))
        return redirect("/trash?purged=1")
    except Exception as err:
        return error_page(request, guard, err, title="Not purged")


async def bulk(backend, guard, request):
    """Preview (first post) or apply (confirmed post) a bulk action on a selection."""
    try:
        pairs = await form_pairs(request, guard)
        args = parse_pairs(pairs, api.BULK)
        result = await backend.call(lambda lore: lore.bulk(**args))
    except Exception as err:
        return error_page(request, guard, err, title="Bulk action not done")
    selection = [
        (k, v)
        for k, v in pairs
        if k in (*SELECTION_NAMES, "ids", "add_tags", "remove_tags", "new_type", "new_tier", "action")
    ]
    back = "/memories?" + urlencode([(k, v) for k, v in pairs if k in SELECTION_NAMES and v])
    return render(request, guard, "bulk.html", {"result": result, "carry": selection, "back": back})


async def start_job(backend, guard, request):
    kind = request.path_params["kind"]
    try:
        await form_pairs(request, guard)
        if kind not in ("update", "rebuild"):
            raise ValidationError("must be update or rebuild", field="kind")
        await backend.call(lambda lore: lore.start_index_job(kind))
        return redirect("/index")
    except Exception as err:
        return error_page(request, guard, err, title="Index run not started")


# -- login ------------------------------------------------------------------------------------


async def login(backend, guard, request):
    target = auth.safe_next(request.query_params.get("next"))
    if guard.open:
        return redirect(target)
    if request.method == "GET":
        return render(request, guard, "login.html", {"next": target, "error": None})
    client = request.client.host if request.client else "unknown"
    try:
        pairs = await form_pairs(request, guard)
        fields = dict(pairs)
        target = auth.safe_next(fields.get("next"))
        session = guard.login(client, fields.get("token", ""))
    except LoreError as err:
        context = {"next": target, "error": error_body(err)["error"]}
        return render(request, guard, "login.html", context, err.http_status, error_headers(err))
    response = redirect(target)
    response.set_cookie(
        auth.SESSION_COOKIE, session, max_age=auth.SESSION_SECONDS, httponly=True, samesite="strict", path="/"
    )
    return response


async def logout(backend, guard, request):
    try:
        await form_pairs(request, guard)
    except LoreError as err:
        return error_page(request, guard, err)
    guard.logout(request.cookies.get(auth.SESSION_COOKIE))
    response = redirect("/login")
    response.delete_cookie(auth.SESSION_COOKIE, path="/")
    return response


async def docs(backend, guard, request):
    return render(request, guard, "docs.html", {"endpoints": api.ENDPOINTS})
