"""The HTTP API of `lore serve`, driven in process through httpx's ASGI transport
(the real app, real projects in temp git repos, real files and SQLite).

Projects are BM25 only (`[embedding] provider = "none"`): no model load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from urllib.parse import quote, urlsplit

import anyio
import pytest

from conftest import CLI
from lore.interfaces.web.app import build_app
from web_helpers import MCP_INITIALIZE, TOKEN, add_memory, client, git, make_project

pytestmark = pytest.mark.anyio

AUTH_PY = '''\
"""Authentication helpers."""


def parse_oauth_token(header: str) -> str:
    """Extract the bearer token from an Authorization header."""
    scheme, _, token = header.partition(" ")
    return token
'''


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def root(tmp_path):
    return make_project(tmp_path / "proj", files={"src/auth.py": AUTH_PY})


def lore_json(root, *args):
    return CLI(root).json(*args)


# -- memories ----------------------------------------------------------------------------------


async def test_create_get_update_delete_restore_purge(root):
    app = build_app(str(root))
    async with client(app) as c:
        r = await c.post(
            "/api/memories",
            json={
                "title": "Store times in UTC",
                "body": "Every timestamp is stored in UTC.",
                "type": "convention",
                "tags": ["time"],
            },
        )
        assert r.status_code == 201, r.text
        created = r.json()
        assert set(created) >= {"id", "path", "created", "title", "type"} and "body" not in created
        key = created["id"]
        assert (root / created["path"]).is_file()

        got = (await c.get(f"/api/memories/{key}")).json()
        assert got["title"] == "Store times in UTC" and got["tags"] == ["time"]
        assert len(got["sha256"]) == 64 and got["tier"] in ("hot", "warm", "cold")

        r = await c.patch(
            f"/api/memories/{key}",
            json={"body": "Timestamps are UTC; convert only in the UI.", "expected_sha256": got["sha256"]},
        )
        assert r.status_code == 200, r.text
        assert "convert only in the UI" in (root / created["path"]).read_text()
        hits = (await c.get("/api/search", params={"q": "convert UI"})).json()
        assert [h["id"] for h in hits] == [key]

        r = await c.delete(f"/api/memories/{key}", headers={"Content-Type": "application/json"})
        assert r.status_code == 200 and r.json()["original"] == created["path"]
        assert not (root / created["path"]).exists()
        assert (await c.get(f"/api/memories/{key}")).status_code == 404
        trash = (await c.get("/api/trash")).json()
        assert [e["id"] for e in trash] == [key]

        r = await c.post(f"/api/trash/{key}/restore", json={})
        assert r.status_code == 200 and r.json() == {"restored": created["path"]}
        assert (await c.get(f"/api/memories/{key}")).status_code == 200

        await c.delete(f"/api/memories/{key}", headers={"Content-Type": "application/json"})
        r = await c.delete(f"/api/trash/{key}", headers={"Content-Type": "application/json"})
        assert r.status_code == 200 and r.json()["purged"][0]["id"] == key
        assert (await c.get("/api/trash")).json() == []
        assert (await c.post(f"/api/trash/{key}/restore", json={})).status_code == 404
        # The web's purge is `lore gc`: the trash past its time, then the vectors no chunk uses.
        purged = await c.post("/api/trash/purge", json={})
        assert purged.status_code == 200 and set(purged.json()) == {"purged", "vectors_removed"}


async def test_list_filters_sort_pagination_and_cli_shapes(root):
    for i in range(7):
        add_memory(
            root,
            f"Note {i}",
            f"Body of note number {i} about caching",
            tags=["cache" if i % 2 else "db"],
            type="fact" if i < 5 else "lesson",
        )
    app = build_app(str(root))
    async with client(app) as c:
        page = (await c.get("/api/memories", params={"limit": 3})).json()
        assert page["total"] == 7 and len(page["items"]) == 3 and page["offset"] == 0
        nxt = (await c.get("/api/memories", params={"limit": 3, "offset": 3})).json()
        assert not {i["id"] for i in page["items"]} & {i["id"] for i in nxt["items"]}
        lessons = (await c.get("/api/memories", params={"type": "lesson"})).json()
        assert lessons["total"] == 2 and {i["type"] for i in lessons["items"]} == {"lesson"}
        cache = (
            await c.get("/api/memories", params=[("tag", "cache"), ("sort", "title"), ("order", "asc")])
        ).json()
        assert [i["title"] for i in cache["items"]] == ["Note 1", "Note 3", "Note 5"]
        assert (await c.get("/api/memories", params={"stale": "true"})).json()["total"] == 0
        # Field names are the CLI's: the same keys as `lore list --json` (plus staleness and attention).
        cli_rows = lore_json(root, "list", "--limit", "50")
        api_rows = (await c.get("/api/memories", params={"limit": 50})).json()["items"]
        assert set(api_rows[0]) == set(cli_rows[0]) | {"stale", "attention", "tier"}
        assert {r["id"] for r in cli_rows} == {r["id"] for r in api_rows}
        cli_hits = lore_json(root, "search", "caching", "--tag", "cache")
        api_hits = (await c.get("/api/search", params={"q": "caching", "tag": "cache"})).json()
        assert api_hits == cli_hits


async def test_bad_input_is_422_naming_the_field(root):
    app = build_app(str(root))
    async with client(app) as c:
        cases = [
            ({"body": "long enough body text", "title": "x" * 201}, "title"),
            ({"body": "long enough body text", "type": "opinion"}, "type"),
            ({"body": "long enough body text", "tags": "not-a-list"}, "tags"),
            ({"body": "long enough body text", "tags": ["t" * 51]}, "tags"),
            ({"body": "long enough body text", "confidence": 2}, "confidence"),
            ({"body": "long enough body text", "colour": "red"}, "colour"),
            ({"title": "no body"}, "body"),
            ({"body": "short"}, "body"),
            ({"body": "long enough body text", "applies_to": "everywhere"}, "applies_to"),
        ]
        for payload, field in cases:
            r = await c.post("/api/memories", json=payload)
            assert r.status_code == 422, (payload, r.text)
            error = r.json()["error"]
            assert error["code"] == "invalid" and error["field"] == field, (payload, error)
            assert field in error["message"]
        for params, field in [
            ({"limit": 0}, "limit"),
            ({"sort": "colour"}, "sort"),
            ({"type": "opinion"}, "type"),
            ({"bogus": 1}, "bogus"),
            ({"stale": "maybe"}, "stale"),
        ]:
            r = await c.get("/api/memories", params=params)
            assert r.status_code == 422 and r.json()["error"]["field"] == field, (params, r.text)
        r = await c.get("/api/search")
        assert r.status_code == 422 and r.json()["error"]["field"] == "q"
        r = await c.post("/api/memories", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "usage"
        r = await c.post(
            "/api/memories", content=b"body=x", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert r.status_code == 415
        assert (await c.get("/api/memories/no-such-memory")).status_code == 404
        assert list(root.joinpath(".lore/memory").iterdir()) == []  # nothing half-written


async def test_a_time_past_the_years_a_date_holds_is_a_400_not_a_500(root):
    """`since`/`until` far in the past or future (`99999999999 days ago`, `last 9999999
    years`) overflowed date arithmetic: a 500. The calendar's own edges are "from
    the start" and "for ever" (`--until 9999-12-31`), not errors."""
    add_memory(root, "Dated", "A memory to filter by its time.")
    app = build_app(str(root))
    async with client(app) as c:
        for value in ("9999-12-31", "9999"):
            r = await c.get("/api/search", params={"q": "dated", "until": value})
            assert r.status_code == 200 and [h["title"] for h in r.json()] == ["Dated"], r.text
            r = await c.get("/api/search", params={"q": "dated", "since": value})  # nothing could match: said
            assert r.status_code == 400 and "begins after now" in r.json()["error"]["message"], r.text
        for value in (
            "99999999999 days ago",
            "last 9999999 years",
            "9999-12-31T23:59:59-14:00",  # an instant past the calendar in UTC
        ):
            for path, query in (("/api/memories", {}), ("/api/search", {"q": "dated"})):
                for name in ("since", "until"):
                    r = await c.get(path, params={**query, name: value})
                    assert r.status_code == 400, (path, name, value, r.text)
                    assert (
                        value in r.json()["error"]["message"] and "0001-9999" in r.json()["error"]["message"]
                    )
            page = await c.get("/search", params={"q": "dated", "since": value})
            assert page.status_code == 400 and "0001-9999" in page.text
        # An argument is named as the API's query names it, not as Python does.
        r = await c.get("/api/code", params={"q": "dated", "changed_within": "0"})
        message = r.json()["error"]["message"]
        assert r.status_code == 400 and message.startswith("changed_within must be"), message


async def test_size_limits_413_and_field_limit(root):
    app = build_app(str(root))
    async with client(app) as c:
        r = await c.post(
            "/api/memories",
            content=b"{" + b" " * (7 * 1024 * 1024) + b"}",
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"

        async def chunks():  # no Content-Length: counted as it streams
            for _ in range(7):
                yield b" " * (1024 * 1024)

        r = await c.post("/api/memories", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        r = await c.post("/api/memories", json={"body": "x" * (5 * 1024 * 1024 + 1)})
        assert r.status_code == 422 and r.json()["error"]["field"] == "body"
        r = await c.get("/api/search", params={"q": "q" * 2001})
        assert r.status_code == 422 and r.json()["error"]["field"] == "q"


async def test_conflicting_edit_is_409_and_file_kept(root):
    key = add_memory(root, "Retry policy", "Retry three times with backoff.")
    app = build_app(str(root))
    async with client(app) as c:
        got = (await c.get(f"/api/memories/{key}")).json()
        path = root / got["path"]
        path.write_text(path.read_text().replace("three times", "five times"))  # edited by hand meanwhile
        r = await c.patch(
            f"/api/memories/{key}", json={"body": "Never retry.", "expected_sha256": got["sha256"]}
        )
        assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
        assert "five times" in path.read_text() and "Never retry" not in path.read_text()
        fresh = (await c.get(f"/api/memories/{key}")).json()
        r = await c.patch(
            f"/api/memories/{key}", json={"body": "Never retry.", "expected_sha256": fresh["sha256"]}
        )
        assert r.status_code == 200 and "Never retry." in path.read_text()


async def test_a_relation_typo_in_a_body_is_a_400_and_nothing_written(root):
    key = add_memory(root, "Retry policy", "Retry three times with backoff.")
    app = build_app(str(root))
    async with client(app) as c:
        typo = "Retry once.\n\n## Relations\n- superseeds [[Retry policy]]"
        r = await c.post("/api/memories", json={"title": "New retry policy", "body": typo})
        assert r.status_code == 400 and r.json()["error"]["code"] == "usage"
        assert "did you mean supersedes?" in r.json()["error"]["message"]
        got = (await c.get(f"/api/memories/{key}")).json()
        r = await c.patch(f"/api/memories/{key}", json={"body": typo.replace("Retry policy", "Elsewhere")})
        assert r.status_code == 400 and "'superseeds'" in r.json()["error"]["message"]
        assert (await c.get(f"/api/memories/{key}")).json()["sha256"] == got["sha256"]
        assert len((await c.get("/api/memories")).json()["items"]) == 1


async def test_an_update_keeps_files_and_scope_inside_the_project_as_create_does(root):
    """PATCH (and the edit form, MCP memory_write on an id) wrote `/etc/passwd` into a
    committed memory's `files` where POST answers 422: the same check now applies."""
    key = add_memory(root, "Retry policy", "Retry three times with backoff.")
    app = build_app(str(root))
    async with client(app) as c:
        got = (await c.get(f"/api/memories/{key}")).json()
        for change, field in (
            ({"files": ["/etc/passwd"]}, "files"),
            ({"files": ["src/auth.py", "../../outside.py"]}, "files"),
            ({"applies_to": "file:../../etc/passwd"}, "applies_to"),
            ({"title": "Kept out", "applies_to": "file:/etc/passwd"}, "applies_to"),
        ):
            r = await c.patch(f"/api/memories/{key}", json=change)
            assert r.status_code == 422, (change, r.text)
            assert (
                r.json()["error"]["field"] == field and "inside the project" in r.json()["error"]["message"]
            )
        assert (await c.get(f"/api/memories/{key}")).json()["sha256"] == got["sha256"]  # nothing written
        r = await c.patch(
            f"/api/memories/{key}", json={"files": ["src/auth.py"], "applies_to": "file:src/auth.py"}
        )
        assert r.status_code == 200, r.text
        now = (await c.get(f"/api/memories/{key}")).json()
        assert now["files"] == ["src/auth.py"] and now["applies_to"] == "file:src/auth.py"
        r = await c.patch(f"/api/memories/{key}", json={"files": ["src/auth.py", "src/db.py"] * 250})
        assert r.status_code == 200, r.text
        assert (await c.get(f"/api/memories/{key}")).json()["files"] == [
            "src/auth.py",
            "src/db.py",
        ]  # each once


async def test_error_messages_do_not_show_the_servers_folders(root):
    """A client sees paths relative to the project, not where the server keeps it:
    the messages used to carry the project's absolute path (and the home folder's)."""
    key = add_memory(root, "Retry policy", "Retry three times with backoff.")
    app = build_app(str(root))
    async with client(app) as c:
        answers = [
            await c.patch(f"/api/memories/{key}", json={"files": ["/etc/passwd"]}),
            await c.get("/api/files/" + quote(str(root.parent / "outside.py"), safe="")),
        ]
    for r in answers:
        message = r.json()["error"]["message"]
        assert r.status_code in (400, 422) and "the project" in message, r.text
        assert str(root) not in message and os.path.expanduser("~") + os.sep not in message, message
    assert "outside the project (<project>)" in answers[1].json()["error"]["message"]


async def test_another_agents_private_memory_is_missing(root):
    secret = add_memory(
        root, "Bob's plan", "Bob's private plan for the rewrite.", agent="bob", private=True, tags=["plan"]
    )
    own = add_memory(
        root, "Alice's note", "Alice's private note on caching.", agent="alice", private=True, tags=["plan"]
    )
    app = build_app(str(root), agent="alice")
    async with client(app) as c:
        missing = (await c.get("/api/memories/00000000-0000-4000-8000-000000000000")).json()["error"]
        hidden = (await c.get(f"/api/memories/{secret}")).json()["error"]
        assert hidden["code"] == missing["code"] == "not_found"
        assert hidden["message"].replace(secret, "K") == missing["message"].replace(
            "00000000-0000-4000-8000-000000000000", "K"
        )
        assert (await c.get(f"/api/memories/{own}")).status_code == 200
        for params in ({}, {"agent": "bob"}, {"visibility": "private"}, {"tag": "plan"}):
            ids = {i["id"] for i in (await c.get("/api/memories", params=params)).json()["items"]}
            assert secret not in ids, params
        for params in ({"q": "private plan rewrite"}, {"q": "private plan rewrite", "agent": "bob"}):
            assert secret not in {h["id"] for h in (await c.get("/api/search", params=params)).json()}
        assert (
            await c.patch(f"/api/memories/{secret}", json={"body": "overwritten by alice"})
        ).status_code == 404
        assert (
            await c.delete(f"/api/memories/{secret}", headers={"Content-Type": "application/json"})
        ).status_code == 404
        preview = (await c.post("/api/memories/bulk", json={"action": "delete", "tag": ["plan"]})).json()
        assert [i["id"] for i in preview["items"]] == [own]
    assert "Bob's private plan" in next((root / ".lore/local/bob").glob("*.md")).read_text()


async def test_bulk_retag_previews_a_token_as_the_marker_it_writes(root):
    """The preview said `+ghp_…` (the token echoed back) while the files got
    `[REDACTED:github-token]`: it shows what is written."""
    token = "ghp_" + "Bk1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R"
    add_memory(root, "Flaky test", "This test is flaky on CI.", tags=["flaky"])
    app = build_app(str(root))
    async with client(app) as c:
        ask = {"action": "retag", "tag": ["flaky"], "add_tags": [f"{token}"]}
        preview = (await c.post("/api/memories/bulk", json=ask)).json()
        assert [i["change"] for i in preview["items"]] == ["+[REDACTED:github-token]"]
        done = await c.post("/api/memories/bulk", json={**ask, "apply": True, "confirm": preview["digest"]})
        assert token not in done.text and done.json()["applied"]
        [memory] = (await c.get("/api/memories", params={"tag": "flaky"})).json()["items"]
    assert "[REDACTED:github-token]" in memory["tags"] and token not in (root / memory["path"]).read_text()


async def test_bulk_preview_confirm_and_restore(root):
    ids = [
        add_memory(root, f"Flaky test {i}", f"Test number {i} is flaky on CI.", tags=["flaky"])
        for i in range(3)
    ]
    keep = add_memory(root, "Stable test", "This one is stable.", tags=["stable"])
    app = build_app(str(root))
    async with client(app) as c:
        preview = (
            await c.post(
                "/api/memories/bulk",
                json={"action": "retag", "tag": ["flaky"], "add_tags": ["ci"], "remove_tags": ["flaky"]},
            )
        ).json()
        assert (
            preview["applied"] is False
            and preview["total"] == 3
            and {i["change"] for i in preview["items"]} == {"+ci, −flaky"}
        )
        r = await c.post("/api/memories/bulk", json={"action": "retag", "ids": [], "add_tags": ["z"]})
        assert r.status_code == 400 and "ids is empty" in r.text  # not "every memory"
        r = await c.post(
            "/api/memories/bulk",
            json={
                "action": "retag",
                "tag": ["flaky"],
                "add_tags": ["ci"],
                "remove_tags": ["flaky"],
                "apply": True,
                "confirm": "0" * 16,
            },
        )
        assert r.status_code == 409
        done = (
            await c.post(
                "/api/memories/bulk",
                json={
                    "action": "retag",
                    "tag": ["flaky"],
                    "add_tags": ["ci"],
                    "remove_tags": ["flaky"],
                    "apply": True,
                    "confirm": preview["digest"],
                },
            )
        ).json()
        assert done["applied"] and not done["errors"]
        assert (await c.get("/api/memories", params={"tag": "ci"})).json()["total"] == 3
        delete = (await c.post("/api/memories/bulk", json={"action": "delete", "tag": ["ci"]})).json()
        add_memory(root, "Another flaky", "Added after the preview was shown.", tags=["ci"])
        r = await c.post(
            "/api/memories/bulk",
            json={"action": "delete", "tag": ["ci"], "apply": True, "confirm": delete["digest"]},
        )
        assert r.status_code == 409  # the selection changed since the preview
        delete = (
            await c.post("/api/memories/bulk", json={"action": "delete", "tag": ["ci"], "ids": ids})
        ).json()
        assert delete["total"] == 3
        await c.post(
            "/api/memories/bulk",
            json={"action": "delete", "tag": ["ci"], "ids": ids, "apply": True, "confirm": delete["digest"]},
        )
        assert {i["id"] for i in (await c.get("/api/memories")).json()["items"]} >= {keep}
        assert not {i["id"] for i in (await c.get("/api/memories")).json()["items"]} & set(ids)
        restore = (await c.post("/api/memories/bulk", json={"action": "restore", "tag": ["ci"]})).json()
        assert sorted(i["id"] for i in restore["items"]) == sorted(ids)
        await c.post(
            "/api/memories/bulk",
            json={"action": "restore", "tag": ["ci"], "apply": True, "confirm": restore["digest"]},
        )
        assert (await c.get("/api/memories", params={"tag": "ci"})).json()["total"] == 4
        r = await c.post("/api/memories/bulk", json={"action": "set_type"})
        assert r.status_code == 400


# -- index -------------------------------------------------------------------------------------


async def wait_job(c, job_id, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = (await c.get(f"/api/jobs/{job_id}")).json()
        if job["state"] in ("done", "failed"):
            return job
        await anyio.sleep(0.05)
    raise AssertionError("job did not finish")


async def test_update_index_on_a_real_git_repo(root):
    app = build_app(str(root))
    async with client(app) as c:
        r = await c.post("/update-index", json={"project_id": "demo"})  # 003's hook with no files: a full run
        assert r.status_code == 202
        job = await wait_job(c, r.json()["job_id"])
        assert job["state"] == "done" and [p["state"] for p in job["phases"]] == ["done"] * 3
        assert (await c.get("/api/code", params={"q": "oauth token header"})).json()[0][
            "file_path"
        ] == "src/auth.py"

        (root / "src/billing.py").write_text(
            'def compute_invoice_total(lines):\n    """Sum invoice lines."""\n    return sum(lines)\n'
        )
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "Add invoice totals")
        r = await c.post("/update-index", json={"files": ["src/billing.py"], "deleted_files": []})
        assert r.status_code == 202 and r.json()["status_url"] == f"/api/jobs/{r.json()['job_id']}"
        job = await wait_job(c, r.json()["job_id"])
        assert job["kind"] == "files" and job["result"] == {"updated": 1, "deleted": 0, "skipped": []}
        hits = (await c.get("/api/code", params={"q": "invoice total", "files_only": "true"})).json()
        assert hits[0]["file_path"] == "src/billing.py"

        (root / "src/billing.py").unlink()
        r = await c.post("/update-index", json={"files": [], "deleted_files": ["src/billing.py"]})
        job = await wait_job(c, r.json()["job_id"])
        assert job["result"] == {"updated": 0, "deleted": 1, "skipped": []}
        assert all(
            h["file_path"] != "src/billing.py"
            for h in (await c.get("/api/code", params={"q": "invoice total"})).json()
        )

        # Server-sent events: the job's JSON until it ends.
        r = await c.post("/api/update-index", json={"full": True})
        events = []
        async with c.stream("GET", r.json()["events_url"]) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
        assert events[-1]["state"] == "done" and events[-1]["id"] == r.json()["job_id"]

        # A path outside the project is never read, and does not fail the batch it came in.
        r = await c.post("/update-index", json={"files": ["../outside.py", "src/billing.py"]})
        job = await wait_job(c, r.json()["job_id"])
        assert job["state"] == "done" and job["result"]["skipped"] == [
            {"path": "../outside.py", "reason": "outside the project"},
            {"path": "src/billing.py", "reason": "no such file"},
        ]
        assert (await c.get("/api/jobs/nope")).status_code == 404
        assert len((await c.get("/api/jobs")).json()["jobs"]) == 5

        overview = (await c.get("/api/index")).json()
        names = {s["name"]: s for s in overview["sources"]}
        assert (
            names["code"]["files"] == 1 and names["history"]["files"] == 2 and names["memories"]["files"] == 0
        )
        assert overview["up_to_date"] is True and overview["index_bytes"] > 0 and overview["job"] is None


async def test_an_error_never_echoes_a_secret_it_was_given(root):
    token = "ghp_" + "We1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R"
    app = build_app(str(root))
    async with client(app) as c:
        r = await c.get(f"/api/memories/{token}")
        page = await c.get(f"/memories/{token}")
    assert r.status_code == 404 and token not in r.text and "[REDACTED:github-token]" in r.text
    assert token not in page.text


async def test_a_memorys_git_history_shows_commit_subjects_redacted(root):
    """The memory's history is read from git at each request; a token in a commit
    subject is redacted as `lore history` and the history index redact it."""
    token = "ghp_" + "Hs1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R"
    add_memory(root, "Deploy steps", "Deploy with the pipeline, then run the smoke tests.")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"Deploy notes, pushed with {token}")
    app = build_app(str(root))
    async with client(app) as c:
        key = (await c.get("/api/memories")).json()["items"][0]["id"]
        log = (await c.get(f"/api/memories/{key}/history")).json()
        page = (await c.get(f"/memories/{key}")).text
    assert [e["subject"] for e in log] == ["Deploy notes, pushed with [REDACTED:github-token]"]
    assert token not in page


async def test_search_recall_code_history_stats_doctor(root):
    add_memory(
        root, "OAuth tokens", "Parse the bearer token with parse_oauth_token in src/auth.py.", tags=["auth"]
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Remember how tokens are parsed")
    lore_json(root, "index", "--no-embed")
    app = build_app(str(root))
    async with client(app) as c:
        assert (await c.get("/api/recall", params={"title": "fix the oauth token parsing"})).json()[
            "memories"
        ]
        assert (await c.get("/api/history", params={"q": "tokens parsed"})).json()[0][
            "subject"
        ] == "Remember how tokens are parsed"
        assert (
            "def parse_oauth_token"
            in (await c.get("/api/code", params={"q": "bearer token", "full": "true"})).json()[0][
                "chunk_text"
            ]
        )
        stats = (await c.get("/api/stats")).json()
        assert stats == {**lore_json(root, "stats"), "index_bytes": stats["index_bytes"]}
        assert (await c.get("/api/doctor")).json() == []
        assert (await c.get("/api/status")).json()["up_to_date"] is True
        assert (await c.get("/api/stale")).json() == []
        key = (await c.get("/api/memories")).json()["items"][0]["id"]
        log = (await c.get(f"/api/memories/{key}/history")).json()
        assert [e["subject"] for e in log] == ["Remember how tokens are parsed"]
        verified = (await c.post(f"/api/memories/{key}/verify", json={})).json()
        assert verified["id"] == key
        assert (await c.get("/api/files/src/auth.py")).json()["text"] == AUTH_PY
        assert (await c.get("/api/files/.lore/config.toml")).status_code == 404  # not an indexed code file
        assert (await c.get("/api/files/../../etc/passwd")).status_code in (400, 404)
        preview = (
            await c.post(
                "/api/preview", json={"body": "# Hi\n<script>alert(1)</script> [x](javascript:alert(1))"}
            )
        ).json()
        assert (
            "<h2>Hi</h2>" in preview["html"]
            and "<script>" not in preview["html"]
            and 'href="javascript' not in preview["html"]
        )
        doc = (await c.get("/openapi.json")).json()
        assert doc["openapi"].startswith("3.") and "/update-index" in doc["paths"]
        assert (
            doc["paths"]["/api/memories"]["post"]["requestBody"]["content"]["application/json"]["schema"][
                "properties"
            ]["title"]["maxLength"]
            == 200
        )
        docs = await c.get("/docs")
        assert docs.status_code == 200 and "/api/memories/bulk" in docs.text


# -- security ------------------------------------------------------------------------------------


async def test_token_auth_401_and_rate_limit(root):
    app = build_app(str(root), token=TOKEN)
    async with client(app) as c:
        r = await c.get("/api/memories")
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert (
            await c.get("/api/memories", headers={"Authorization": "Bearer wrong-token"})
        ).status_code == 401
        assert (
            await c.get("/api/memories", headers={"Authorization": b"Bearer \xff\xfe"})
        ).status_code == 401
        assert (
            await c.get("/api/memories", headers={"Authorization": "Basic dXNlcjpwYXNz"})
        ).status_code == 401
        assert (await c.get("/api/memories", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200
        page = await c.get("/memories", headers={"Accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"] == "/login?next=/memories"
        assert (await c.post("/mcp", json={})).status_code == 401
        for _ in range(7):
            await c.get("/api/memories", headers={"Authorization": "Bearer wrong-token"})
        r = await c.get("/api/memories", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    other = build_app(str(root), token=TOKEN)
    async with client(other, client_ip="127.0.0.2") as c:  # failures are counted per client
        assert (await c.get("/api/memories", headers={"Authorization": f"Bearer {TOKEN}"})).status_code == 200


async def test_login_session_cookie_and_csrf(root):
    key = add_memory(root, "Cookie test", "A memory to delete through a form.")
    app = build_app(str(root), token=TOKEN)
    async with client(app) as c:
        login = await c.get("/login")
        csrf = c.cookies["lore_csrf"]
        assert login.status_code == 200 and f'value="{csrf}"' in login.text
        r = await c.post("/login", data={"token": "wrong", "csrf_token": csrf, "next": "/memories"})
        assert r.status_code == 401 and "wrong token" in r.text
        r = await c.post("/login", data={"token": TOKEN, "csrf_token": "forged", "next": "/memories"})
        assert r.status_code == 403
        r = await c.post("/login", data={"token": TOKEN, "csrf_token": csrf, "next": "//evil.example/"})
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"].lower()
        assert "lore_session=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
        assert (await c.get("/memories")).status_code == 200
        r = await c.post(f"/memories/{key}/delete", data={})
        assert r.status_code == 403 and (await c.get(f"/api/memories/{key}")).status_code == 200
        r = await c.delete(f"/api/memories/{key}")  # cookie-authenticated API call without the CSRF header
        assert r.status_code == 403
        r = await c.post(f"/memories/{key}/delete", data={"csrf_token": csrf})
        assert r.status_code == 303 and (await c.get(f"/api/memories/{key}")).status_code == 404
        r = await c.post(f"/api/trash/{key}/restore", json={}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200
        r = await c.post("/logout", data={"csrf_token": csrf})
        assert r.status_code == 303
        assert (await c.get("/api/memories")).status_code == 401


async def test_too_many_failed_logins_on_the_page_say_when_to_retry(root):
    """After 10 wrong tokens the login page answered 429 without the Retry-After the
    API sends (and docs/web.md promises)."""
    app = build_app(str(root), token=TOKEN)
    async with client(app) as c:
        await c.get("/login")
        form = {"token": "wrong", "csrf_token": c.cookies["lore_csrf"], "next": "/"}
        statuses = [(await c.post("/login", data=form)).status_code for _ in range(10)]
        assert statuses == [401] * 10
        r = await c.post("/login", data=form)
        assert r.status_code == 429 and "too many failed attempts" in r.text
        assert 0 < int(r.headers["retry-after"]) <= 61


async def test_host_origin_and_open_mode_csrf(root):
    key = add_memory(root, "Host test", "A memory used by the Host header test.")
    app = build_app(str(root))
    async with client(app) as c:
        r = await c.get("/api/memories", headers={"Host": "evil.example:8766"})
        assert r.status_code == 421 and r.json()["error"]["code"] == "bad_host"
        r = await c.delete(f"/api/memories/{key}", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        r = await c.post(f"/api/trash/{key}/restore")  # no JSON content type, no CSRF header
        assert r.status_code == 403
        r = await c.post(f"/memories/{key}/delete", data={"csrf_token": "guess"})
        assert r.status_code == 403 and (await c.get(f"/api/memories/{key}")).status_code == 200
        page = await c.get("/memories")
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
        assert page.headers["x-frame-options"] == "DENY"


async def test_another_site_cannot_make_a_browser_read_the_api_and_refusals_carry_the_headers(root):
    """Reads of the API have effects (recall counts each memory's use): a page on
    another site (or another port of this host) may not make a browser send them.
    Programs send no Sec-Fetch-Site; the page itself sends "same-origin"."""
    key = add_memory(root, "Alert runbook", "Page the on-call engineer when the alert fires.")
    app = build_app(str(root))
    async with client(app) as c:
        before = (await c.get(f"/api/memories/{key}")).json()["access_count"]
        for headers in (
            {"Origin": "http://evil.example"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
        ):
            r = await c.get("/api/recall", params={"title": "alert"}, headers=headers)
            assert r.status_code == 403, headers
            assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
        assert (await c.get(f"/api/memories/{key}")).json()["access_count"] == before
        r = await c.get("/api/recall", params={"title": "alert"}, headers={"Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 200
        r = await c.get("/api/memories", headers={"Host": "evil.example:8766"})
        assert r.status_code == 421 and "content-security-policy" in r.headers
        page = await c.get("/memories", headers={"Sec-Fetch-Site": "cross-site"})  # a link to a page is fine
        assert page.status_code == 200


async def test_the_undo_button_of_a_crafted_link_only_restores_from_the_trash(root):
    """The list page's "Moved … to the trash. Undo" banner comes from the query string:
    a link with `trashed=../memories/<id>/delete?` made its Undo button (carrying the
    page's own CSRF token) post to /memories/<id>/delete, so a click deleted a memory."""
    from urllib.parse import urljoin

    key = add_memory(root, "Undo target", "A memory a crafted Undo link must not delete.")
    app = build_app(str(root))
    async with client(app) as c:
        for trashed in (f"../memories/{key}/delete?", "../index/rebuild#", "../logout?x="):
            page = await c.get("/memories", params={"trashed": trashed, "trashed_title": "x"})
            undo = page.text.split('role="status"', 1)[1]  # the banner's form
            action = undo.split('action="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
            target = urljoin(str(page.url), action)  # as a browser resolves it
            assert urlsplit(target).path.startswith("/trash/"), target
            assert urlsplit(target).path.endswith("/restore"), target
            r = await c.post(target, data={"csrf_token": c.cookies["lore_csrf"]})
            assert r.status_code == 404, r.text
        assert (await c.get(f"/api/memories/{key}")).status_code == 200
        assert (await c.get("/api/jobs")).json()["jobs"] == []


async def submit_edit(c, key: str, fields: dict):
    """Submit the memory's edit form as the page does: its CSRF token, the file's
    SHA-256 as the page was opened on, and `fields`."""
    page = (await c.get(f"/memories/{key}/edit")).text
    sha = page.split('name="expected_sha256" value="', 1)[1].split('"', 1)[0]
    form = {"csrf_token": c.cookies["lore_csrf"], "expected_sha256": sha, **fields}
    return await c.post(f"/memories/{key}/edit", data=form)


async def test_clearing_the_tags_field_of_the_edit_form_removes_the_tags(root):
    """The edit form said "Saved" when its Tags field was emptied, and kept the tags:
    an empty field read as "not given"."""
    key = add_memory(root, "Tagged memory", "A memory whose tags the form clears.", tags=("alpha", "beta"))
    app = build_app(str(root))
    async with client(app) as c:
        form = {
            "title": "Tagged memory",
            "type": "fact",
            "tags": "",
            "applies_to": "global",
            "confidence": "",
            "body": "A memory whose tags the form clears.",
        }
        r = await submit_edit(c, key, form)
        assert r.status_code == 303, r.text
        shown = (await c.get(f"/api/memories/{key}")).json()
        assert shown["tags"] == [] and shown["title"] == "Tagged memory"


async def test_every_field_the_edit_form_empties_is_cleared_or_refused(root):
    """Emptying Applies to or Confidence kept the old value and still said "Saved";
    emptying the title did the same. Now a scope becomes global, a confidence
    full (the form shows 1.0 as an empty box), and a title can't be emptied."""
    import lore

    with lore.open(root) as project:
        key = project.add(
            title="Scoped memory",
            body="A memory about one file, held with some doubt.",
            tags=["alpha"],
            applies_to="file:src/app.py",
            confidence=0.5,
        ).memory.id
    app = build_app(str(root))
    async with client(app) as c:

        async def post(**changes):
            form = {
                "title": "Scoped memory",
                "type": "fact",
                "tags": "alpha",
                "applies_to": "file:src/app.py",
                "confidence": "0.5",
                "body": "A memory about one file, held with some doubt.",
            }
            return await submit_edit(c, key, {**form, **changes})

        refused = await post(title="", applies_to="")
        assert refused.status_code == 422 and "can&#39;t be empty" in refused.text, refused.text
        shown = (await c.get(f"/api/memories/{key}")).json()
        assert (shown["title"], shown["applies_to"]) == (
            "Scoped memory",
            "file:src/app.py",
        )  # nothing half-done
        r = await post(applies_to="", confidence="")
        assert r.status_code == 303, r.text
        shown = (await c.get(f"/api/memories/{key}")).json()
        assert (shown["applies_to"], shown["confidence"], shown["tags"]) == ("global", 1.0, ["alpha"])


async def test_half_a_surrogate_pair_in_json_is_a_422_naming_the_field(root):
    """Preview answered 400 naming Python's UnicodeEncodeError, and a bad
    occurred_at showed its value as ''."""
    app = build_app(str(root))
    headers = {"Content-Type": "application/json", "X-Lore-CSRF": "1"}
    async with client(app) as c:
        for route, body, field in (
            ("/api/preview", b'{"body": "cut \\ud83d"}', "body"),
            (
                "/api/memories",
                b'{"body": "A body that is long enough.", "occurred_at": "\\ud800"}',
                "occurred_at",
            ),
            ("/api/memories", b'{"body": "A body that is long enough.", "tags": ["ok", "\\udc00"]}', "tags"),
        ):
            r = await c.post(route, content=body, headers=headers)
            error = r.json()["error"]
            assert r.status_code == 422 and error["field"] == field, r.text
            assert "surrogate" in error["message"] and "Unicode" not in error["message"], r.text
        assert (await c.get("/api/memories")).json()["items"] == []  # nothing written


async def test_a_long_body_is_shown_as_written_not_rendered(root):
    """Markdown costs ~1 µs a character of prose and ~15 of hostile text: a
    2 MB body of "![" held a CPU for 30 s on every view and preview."""
    from lore.interfaces.web.render import MAX_MARKDOWN_CHARS

    app = build_app(str(root))
    headers = {"Content-Type": "application/json", "X-Lore-CSRF": "1"}
    body = "![<b>x</b>" * (MAX_MARKDOWN_CHARS // 5)
    async with client(app) as c:
        r = await c.post("/api/preview", json={"body": body}, headers=headers)
        html = r.json()["html"]
        assert r.status_code == 200 and "Shown as written" in html and "<pre>" in html, html[:200]
        assert "<b>" not in html and "&lt;b&gt;" in html
        r = await c.post("/api/preview", json={"body": "**bold**"}, headers=headers)
        assert "<strong>bold</strong>" in r.json()["html"]


async def test_preview_does_not_wait_for_the_projects_lock(root):
    """Preview only renders text, but it held the project's lock: a large body
    (seconds of Markdown) kept every other request of the server waiting."""
    import asyncio

    app = build_app(str(root))
    headers = {"Content-Type": "application/json", "X-Lore-CSRF": "1"}
    lock = app.tools.lock_of(app.tools.lore)
    async with client(app) as c:
        lock.acquire()  # another request at work on the project
        try:
            r = await asyncio.wait_for(
                c.post("/api/preview", content=b'{"body": "**bold**"}', headers=headers), timeout=10
            )
            assert r.status_code == 200 and "<strong>bold</strong>" in r.json()["html"], r.text
            with pytest.raises(TimeoutError):  # a view that reads the project does wait
                await asyncio.wait_for(c.get("/api/memories"), timeout=0.5)
        finally:
            lock.release()


async def test_doctor_does_not_hold_up_the_server(root):
    """/api/doctor read every memory file holding the project's lock: at 10,000
    memories every other request (and /mcp) waited 6.5 s. It runs in a Lore of
    its own, and finds what the CLI finds."""
    import asyncio

    (root / ".lore/memory/broken.md").write_text("---\nid: [unclosed\n---\nbody\n")
    app = build_app(str(root))
    lock = app.tools.lock_of(app.tools.lore)
    async with client(app) as c:
        lock.acquire()  # another request at work on the project
        try:
            r = await asyncio.wait_for(c.get("/api/doctor"), timeout=60)
        finally:
            lock.release()
        assert r.status_code == 200, r.text
        cli = CLI(root)("doctor", "--json", ok=False)  # (exit 1: an error found)
        assert r.json() == json.loads(cli.stdout) and any(
            p["where"] == ".lore/memory/broken.md" for p in r.json()
        )


async def test_page_routes_check_their_path_like_the_api(root):
    """/memories/%00/edit answered "no memory '\\x00'" (the NUL in the page) where
    /memories/%00 and the API answer the 422 that names the field."""
    app = build_app(str(root))
    async with client(app) as c:
        page = await c.get("/memories/%00/edit")
        assert page.status_code == 422 and "key: must not contain NUL" in page.text, page.text
        assert "\x00" not in page.text
        form = {"csrf_token": c.cookies["lore_csrf"]}
        for route in ("/memories/%00/delete", "/trash/%00/restore", "/trash/%00/purge"):
            r = await c.post(route, data=form)
            assert r.status_code == 422 and "must not contain NUL" in r.text and "\x00" not in r.text, (
                route,
                r.text,
            )


async def test_off_loopback_needs_token_and_accepts_any_host(root):
    from lore.errors import UsageError

    with pytest.raises(UsageError, match="token"):
        build_app(str(root), host="0.0.0.0")
    app = build_app(str(root), host="0.0.0.0", token=TOKEN)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with client(app, host="192.0.2.10:8766", headers=headers) as c:
        assert (await c.get("/api/memories")).status_code == 200
        init = MCP_INITIALIZE
        r = await c.post("/mcp", json=init, headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 200, r.text
        assert "lore" in r.text
    named = build_app(str(root), host="10.1.2.3", token=TOKEN, allowed_hosts=["lore.internal"])
    async with client(named, host="lore.internal", headers=headers) as c:
        assert (await c.get("/api/memories")).status_code == 200
        assert (await c.get("/api/memories", headers={"Host": "other.example"})).status_code == 421


async def test_a_token_no_authorization_header_can_carry_is_refused_at_start(root):
    """A passphrase or an accented token started a server whose API and MCP answered
    401 to every call with it (the header is 'Bearer <one ASCII word>'), then 429."""
    from lore.errors import UsageError

    for token in ("correct horse battery staple", "pässwörd-0123456789abc", "tab\ttoken-0123456789"):
        for host in ("0.0.0.0", "127.0.0.1"):
            with pytest.raises(UsageError, match="without spaces"):
                build_app(str(root), host=host, token=token)
    token = "Sx9!-_.~:+/=@#%^&*()[]{}<>?,;|"
    app = build_app(str(root), host="0.0.0.0", token=token)
    async with client(app, headers={"Authorization": f"Bearer {token}"}) as c:
        assert (await c.get("/api/memories")).status_code == 200


async def test_allow_host_star_needs_a_token(root):
    """`--allow-host '*'` answers any Host: on a token-less server a DNS-rebinding page
    could then read and write memories, so it is refused; with a token it is the
    token's to protect, as on a wildcard address."""
    from lore.errors import UsageError

    with pytest.raises(UsageError, match=r"--allow-host '\*'.*token"):
        build_app(str(root), allowed_hosts=["*"])
    app = build_app(str(root), token=TOKEN, allowed_hosts=["*"])
    async with client(app, host="rebound.example:8766") as c:
        assert (await c.get("/api/memories")).status_code == 401
        r = await c.get("/api/memories", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200


async def test_file_view_masks_secrets_as_code_search_does(tmp_path):
    config = (
        'GITHUB_TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"\nDB = "postgres://u:hunter2secret@h/db"\n'
    )
    root = make_project(tmp_path / "proj", files={"src/config.py": config})
    lore_json(root, "index", "--no-embed")
    app = build_app(str(root))
    async with client(app) as c:
        r = await c.get("/api/files/src/config.py")
        assert r.status_code == 200, r.text
        text = r.json()["text"]
        page = (await c.get("/files/src/config.py")).text
        for shown in (text, page):
            assert "ghp_A1b2C3d4" not in shown and "hunter2secret" not in shown
            assert "[REDACTED:github-token]" in shown
        assert text.count("\n") == config.count("\n")  # line anchors still point at the same lines


async def test_file_view_masks_a_prose_files_secrets_as_its_chunks_are(tmp_path):
    """README.md, notes.txt and a YAML file were shown with `mask_code`, which
    leaves "the staging password is ..." alone; their chunks had the memory rules."""
    prose = "The staging password is Zq8xL2pR9vT4mKw7\npassword: Zq8!xL2#pR9vT4mK\n"
    files = {"README.md": prose, "notes.txt": prose, "conf.yaml": "password: Zq8!xL2#pR9vT4mK\n"}
    root = make_project(tmp_path / "proj", files=files)
    lore_json(root, "index", "--no-embed")
    app = build_app(str(root))
    async with client(app) as c:
        found = (await c.get("/api/code", params={"q": "staging password"})).text
        assert "Zq8" not in found
        for path in files:
            for shown in (
                (await c.get(f"/api/files/{path}")).json()["text"],
                (await c.get(f"/files/{path}")).text,
            ):
                assert "Zq8" not in shown and "[REDACTED:password]" in shown, (path, shown[:200])


async def test_open_mode_delete_and_patch_need_csrf_like_post(root):
    key = add_memory(root, "CSRF delete test", "A memory a cross-site DELETE must not remove.")
    app = build_app(str(root))
    async with client(app) as c:
        for headers in ({}, {"Sec-Fetch-Site": "cross-site"}):
            r = await c.delete(f"/api/memories/{key}", headers=headers)
            assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
            r = await c.patch(f"/api/memories/{key}", headers=headers)
            assert r.status_code == 403
        assert (await c.get(f"/api/memories/{key}")).status_code == 200
        json_type = {"Content-Type": "application/json"}
        assert (await c.delete(f"/api/memories/{key}", headers=json_type)).status_code == 200
        assert (await c.delete(f"/api/trash/{key}")).status_code == 403
        assert [e["id"] for e in (await c.get("/api/trash")).json()] == [key]
        assert (await c.delete(f"/api/trash/{key}", headers=json_type)).status_code == 200


async def test_unknown_routes_and_wrong_methods_under_api_are_json_errors(root):
    app = build_app(str(root))
    async with client(app) as c:
        for path in ("/api/nonexistent", "/api/memories/..%2F..%2Fetc%2Fpasswd", "/api/memories/a/b/c"):
            r = await c.get(path)
            assert r.status_code == 404 and r.headers["content-type"] == "application/json", (path, r.text)
            assert r.json()["error"]["code"] == "not_found" and r.json()["error"]["message"]
        r = await c.put("/api/memories", json={})
        assert r.status_code == 405 and r.headers["content-type"] == "application/json", r.text
        assert r.json()["error"]["code"] == "method_not_allowed"
        # Allow names every method the path takes (it named only the first route's GET, HEAD).
        assert set(r.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}, r.headers["allow"]
        assert "POST" in r.json()["error"]["message"]
        r = await c.put("/api/memories/abc")
        assert set(r.headers["allow"].split(", ")) >= {"GET", "PATCH", "DELETE"}, r.headers["allow"]
        r = await c.get("/update-index")
        assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
        assert (await c.get("/no-such-page")).status_code == 404  # pages keep their own answer


async def test_client_disconnect_is_not_logged_as_an_internal_error(root, capfd):
    app = build_app(str(root))
    sent: list[dict] = []

    async def receive():
        return {"type": "http.disconnect"}  # the client hung up before sending its body

    async def send(message):
        sent.append(message)

    async with app.app.router.lifespan_context(app.app):
        for path, kind in (("/api/memories", b"application/json"), ("/memories/new", b"text/plain")):
            scope = {
                "type": "http",
                "http_version": "1.1",
                "method": "POST",
                "scheme": "http",
                "path": path,
                "raw_path": path.encode(),
                "query_string": b"",
                "root_path": "",
                "headers": [
                    (b"host", b"127.0.0.1:8766"),
                    (b"content-type", kind),
                    (b"content-length", b"50"),
                ],
                "client": ("127.0.0.1", 50000),
                "server": ("127.0.0.1", 8766),
            }
            await app(scope, receive, send)
    assert sent and "internal error" not in capfd.readouterr().err


# -- starting the server ------------------------------------------------------------------------


@pytest.mark.surface
async def test_port_in_use_is_one_line_error_before_any_banner(root):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        for command in (["serve"], ["mcp", "--http"]):
            proc = subprocess.run(
                [sys.executable, "-m", "lore", *command, "--port", str(port)],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 1, proc.stderr
            assert proc.stderr.splitlines() == [
                f"lore: error: port {port} on 127.0.0.1 is in use; "
                "stop the server holding it, or choose another with --port"
            ]


def _answer(url: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.mark.surface
async def test_port_zero_shows_the_real_port_and_mcp_http_serves_only_mcp(root):
    import re

    init = json.dumps(MCP_INITIALIZE).encode()
    mcp_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for command, name, suffix in ((["serve"], "lore serve", "/"), (["mcp", "--http"], "lore mcp", "/mcp")):
        proc = subprocess.Popen(
            [sys.executable, "-m", "lore", *command, "--port", "0"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            found = re.search(r"http://127\.0\.0\.1:(\d+)(\S*) ", line)
            assert line.startswith(f"{name}: ") and found and found[2] == suffix, line
            base = f"http://127.0.0.1:{found[1]}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    status, text = _answer(f"{base}/mcp", init, mcp_headers)
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the server did not answer on the port it printed"
                    time.sleep(0.1)
            assert status == 200 and "lore" in text
            web_status = 200 if name == "lore serve" else 404
            assert _answer(f"{base}/api/memories")[0] == web_status
            assert _answer(f"{base}/memories")[0] == web_status
        finally:
            proc.terminate()
            proc.wait(10)
            proc.stderr.close()  # type: ignore[union-attr]


@pytest.mark.skipif(os.environ.get("LORE_TEST_BACKEND") == "postgres", reason="the SQLite index file")
async def test_a_failed_jobs_error_does_not_show_the_servers_folders(root):
    """Error bodies were made project-relative, but a background job's error
    (GET /api/jobs/{id}, its events, the dashboard) still carried the absolute path."""
    app = build_app(str(root))
    async with client(app) as c:
        assert (await c.get("/api/memories")).status_code == 200
        index = root / ".lore" / "index.db"
        index.rename(root.parent / "index.db.moved")
        index.mkdir()  # the job's own Lore opens the index afresh, and fails
        r = await c.post("/update-index", json={"files": ["src/auth.py"]})
        job = await wait_job(c, r.json()["job_id"])
        listed = (await c.get("/api/jobs")).json()["jobs"][0]
    assert job["state"] == "failed" and ".lore/index.db is a folder" in job["error"], job
    assert str(root) not in job["error"] and str(root) not in json.dumps(listed), job["error"]


async def test_a_forwarded_for_header_does_not_reset_the_failure_count(root):
    """uvicorn took the client's address from X-Forwarded-For when the connection came
    from 127.0.0.1, so a caller on this machine changing that header at each try was a
    new client each time: wrong tokens were never throttled."""
    from web_helpers import Server

    server = Server(root, env={"LORE_TOKEN": TOKEN})
    try:
        answers = [
            _answer(
                f"{server.url}/api/memories",
                headers={"Authorization": f"Bearer wrong-{n}", "X-Forwarded-For": f"198.51.100.{n}"},
            )
            for n in range(12)
        ]
        assert [status for status, _ in answers[:10]] == [401] * 10
        assert [status for status, _ in answers[10:]] == [429, 429], answers[10:]
    finally:
        server.stop()


async def test_search_code_history_recall_take_the_clis_filters_with_the_same_results(root):
    """What `lore search/code/history/recall` filter by, the API filters by too
    (`include_archived`; `role`, `since`, `until`; `bracket`, `include_sessions`),
    with the same results: before, each of these was a 422 "unknown parameter"."""
    (root / "docs").mkdir()
    (root / "docs" / "auth.md").write_text("# Auth\n\nThe bearer token is parsed by parse_oauth_token.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Document how the bearer token is parsed")
    archive = root / ".lore" / "local" / "archive"
    archive.mkdir(parents=True)
    add_memory(root, "Bearer tokens", "The bearer token is the header's second word.", tags=["auth"])
    archived = root / ".lore" / "memory"
    moved = next(archived.glob("*.md"))
    moved.rename(archive / moved.name)
    lore_json(root, "index", "--no-embed")
    app = build_app(str(root))
    cases = [
        (
            "/api/search",
            {"q": "bearer token", "include_archived": "true"},
            ["search", "bearer token", "--include-archived"],
        ),
        ("/api/code", {"q": "bearer token", "role": "docs"}, ["code", "bearer token", "--role", "docs"]),
        (
            "/api/code",
            {"q": "bearer token", "since": "2000-01-01", "until": "2001-01-01"},
            ["code", "bearer token", "--since", "2000-01-01", "--until", "2001-01-01"],
        ),
        (
            "/api/history",
            {"q": "bearer token", "since": "yesterday"},
            ["history", "bearer token", "--since", "yesterday"],
        ),
        (
            "/api/history",
            {"q": "bearer token", "until": "2001-01-01"},
            ["history", "bearer token", "--until", "2001-01-01"],
        ),
    ]
    async with client(app) as c:
        for path, params, argv in cases:
            r = await c.get(path, params=params)
            assert r.status_code == 200, (path, params, r.text)
            assert r.json() == lore_json(root, *argv), (path, params)
        assert [h["title"] for h in (await c.get("/api/search", params=cases[0][1])).json()] == [
            "Bearer tokens"
        ]
        assert (await c.get("/api/search", params={"q": "bearer token"})).json() == []
        assert {h["role"] for h in (await c.get("/api/code", params=cases[1][1])).json()} == {"docs"}
        assert (await c.get("/api/code", params=cases[2][1])).json() == []
        assert (await c.get("/api/history", params=cases[4][1])).json() == []
        recall = {
            "title": "parse the bearer token",
            "bracket": "depleted",
            "since": "yesterday",
            "include_sessions": "true",
        }
        r = await c.get("/api/recall", params=recall)
        assert r.status_code == 200, r.text
        cli = lore_json(
            root,
            "recall",
            "parse the bearer token",
            "--bracket",
            "depleted",
            "--since",
            "yesterday",
            "--include-sessions",
        )
        assert r.json() == cli and r.json()["level"] == "L2"
        r = await c.get("/api/code", params={"q": "x", "role": "nonsense"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "role"


async def test_creating_a_memory_stored_already_is_a_200_not_a_201(root):
    """`lore add` of the same content writes nothing and says which memory has it;
    the API said 201 Created all the same."""
    memory = {
        "title": "Store times in UTC",
        "body": "Every timestamp is stored in UTC.",
        "type": "convention",
    }
    app = build_app(str(root))
    async with client(app) as c:
        first = await c.post("/api/memories", json=memory)
        again = await c.post("/api/memories", json=memory)
        doc = (await c.get("/openapi.json")).json()
    assert first.status_code == 201 and first.json()["created"] is True
    assert again.status_code == 200, again.text
    assert again.json()["created"] is False and again.json()["id"] == first.json()["id"]
    assert len(list((root / ".lore" / "memory").glob("*.md"))) == 1
    assert set(doc["paths"]["/api/memories"]["post"]["responses"]) >= {"200", "201"}


async def test_a_memory_page_renders_its_markdown_off_the_event_loop(root, monkeypatch):
    """A memory page rendered its Markdown in the request handler, on the event
    loop: a 2.8 MB body kept every other request (even /static/app.css) waiting
    22 s behind it. The loop runs in this thread; rendering must not."""
    import threading

    from lore.interfaces.web import render as web_render

    key = add_memory(root, "A long list", "".join(f"- item {i} with *emphasis*\n" for i in range(2_000)))
    threads: list[threading.Thread] = []
    real = web_render.markdown_html

    def recording(text: str) -> str:
        threads.append(threading.current_thread())
        return real(text)

    monkeypatch.setattr(web_render, "markdown_html", recording)
    app = build_app(str(root))
    async with client(app) as c:
        page = await c.get(f"/memories/{key}")
        assert page.status_code == 200 and "item 1999" in page.text
        listing = await c.get("/memories")
        assert listing.status_code == 200
    assert threads and threading.current_thread() not in threads


async def test_a_code_anchor_links_to_its_file_whatever_the_name(tmp_path):
    """`<a href="/files/src/a?b#c%20d.py">` asked for /files/src/a and got a 404."""
    weird = "src/a?b#c%20d.py"
    root = make_project(tmp_path / "proj", files={weird: "def odd():\n    return 1\n"})
    lore_json(root, "index", "--no-embed")
    import lore

    with lore.open(root) as project:
        key = project.add(title="Weird anchors", body="The odd helper returns one.", files=[weird]).memory.id
    app = build_app(str(root))
    async with client(app) as c:
        page = (await c.get(f"/memories/{key}")).text
        assert 'href="/files/src/a%3Fb%23c%2520d.py"' in page, page[page.find("/files/") - 40 :][:200]
        assert (await c.get("/files/src/a%3Fb%23c%2520d.py")).status_code == 200


async def test_small_mistakes_get_the_status_that_says_what_to_do(root):
    """Each answered a status that misled: a deleted code file 503 (storage), a
    bulk apply without confirm 409 ("the selection changed"), an empty
    expected_sha256 409 ("changed on disk"), a bulk id prefix selected nothing."""
    key = add_memory(root, "Flaky test", "Test number one is flaky on CI.", tags=["flaky"])
    CLI(root).json("index")
    app = build_app(str(root))
    async with client(app) as c:
        assert (await c.get("/api/files/src/auth.py")).status_code == 200
        (root / "src/auth.py").unlink()
        r = await c.get("/api/files/src/auth.py")
        assert r.status_code == 404 and "lore index" in r.json()["error"]["message"], r.text
        asked = {"action": "retag", "add_tags": ["ci"], "ids": [key[:8]]}
        preview = (await c.post("/api/memories/bulk", json=asked)).json()
        assert preview["total"] == 1, preview
        r = await c.post("/api/memories/bulk", json={**asked, "apply": True})
        assert r.status_code == 400 and "confirm" in r.json()["error"]["message"], r.text
        r = await c.post("/api/memories/bulk", json={**asked, "ids": ["ffffffff"]})
        assert r.status_code == 404 and "ffffffff" in r.json()["error"]["message"], r.text
        r = await c.patch(f"/api/memories/{key}", json={"expected_sha256": "", "title": "Flaky test again"})
        assert r.status_code == 400 and "expected_sha256" in r.json()["error"]["message"], r.text
        sha = (await c.get(f"/api/memories/{key}")).json()["sha256"]
        r = await c.patch(
            f"/api/memories/{key}", json={"expected_sha256": sha.upper(), "title": "Flaky again"}
        )
        assert r.status_code == 200, r.text
