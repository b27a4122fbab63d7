"""A team server: `lore serve --users FILE`, per-user tokens, each acting as its
user's agent and, on PostgreSQL, as its user's database role (row-level security).

SQLite tests drive the real ASGI app in process (httpx); the PostgreSQL tests
create real roles and run a real `lore serve` subprocess (API and MCP).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from conftest import postgres_only
from lore.interfaces.web.app import build_app
from lore.interfaces.web.users import add_user
from web_helpers import Server, client, make_project

SHARED_TITLE = "Deploys need a green build"
SHARED_BODY = "Never deploy the payments service without a green build on main."


def add_users(tmp_path: Path, *people: tuple[str, str | None]) -> tuple[Path, dict[str, str]]:
    """A users file with (name, role) entries; the tokens by name."""
    path = tmp_path / "users.toml"
    return path, {name: add_user(path, name, role=role) for name, role in people}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def private_body(name: str) -> str:
    return f"{name} keeps the staging password rotation schedule in a private note."


# -- the users file ---------------------------------------------------------------------------


@pytest.mark.storage_independent
def test_users_add_prints_a_token_once_and_stores_only_its_hash_owner_only(cli, tmp_path):
    path = tmp_path / "conf" / "users.toml"
    path.parent.mkdir()
    token = cli.json("users", "add", "alice", "--role", "alice_db", "--users", str(path))["token"]
    assert len(token) >= 40
    text = path.read_text()
    assert token not in text
    import hashlib

    assert hashlib.sha256(token.encode()).hexdigest() in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cli.json("users", "list", "--users", str(path)) == [
        {"name": "alice", "agent": "alice", "role": "alice_db"}
    ]
    again = cli("users", "add", "alice", "--users", str(path), ok=False)
    assert again.returncode != 0 and "already" in again.stderr and "Traceback" not in again.stderr

    # Another agent may not act as a second role (its private memories belong to one role).
    clash = cli("users", "add", "eve", "--agent", "alice", "--role", "eve_db", "--users", str(path), ok=False)
    assert clash.returncode != 0 and "two database roles" in clash.stderr

    # Two users with one token: the token acted as whichever came last (alice's
    # private writes went to zed's folder). Refused when the file is read.
    digest = hashlib.sha256(token.encode()).hexdigest()
    with path.open("a") as handle:
        handle.write(f'\n[users.zed]\ntoken_sha256 = "{digest}"\n')
    shared = cli("users", "list", "--users", str(path), ok=False)
    assert shared.returncode != 0 and len(shared.stderr.strip().splitlines()) == 1
    assert "'alice' and 'zed' have the same token_sha256" in shared.stderr
    path.write_text(text)

    os.chmod(path, 0o644)  # readable by others: refused, as ssh refuses an open key
    served = cli("serve", "--users", str(path), "--port", "0", ok=False)
    assert served.returncode != 0
    assert "chmod 600" in served.stderr and "Traceback" not in served.stderr
    assert len(served.stderr.strip().splitlines()) == 1


# -- SQLite: tokens select agents ----------------------------------------------------------------


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_sqlite_two_tokens_act_as_two_agents_with_separate_private_memories(tmp_path, monkeypatch):
    monkeypatch.delenv("LORE_DATABASE_URL", raising=False)  # this test is about SQLite (no roles)
    root = make_project(tmp_path / "proj")
    users, tokens = add_users(tmp_path, ("alice", "ignored_role"), ("bob", None))
    app = build_app(str(root), users=str(users))
    async with client(app) as c:
        r = await c.post(
            "/api/memories",
            json={"title": SHARED_TITLE, "body": SHARED_BODY},
            headers=bearer(tokens["alice"]),
        )
        assert r.status_code == 201, r.text
        for name in ("alice", "bob"):
            r = await c.post(
                "/api/memories",
                json={"title": f"{name} private note", "body": private_body(name), "private": True},
                headers=bearer(tokens[name]),
            )
            assert r.status_code == 201, r.text
        assert (root / ".lore/local/alice").is_dir() and (root / ".lore/local/bob").is_dir()

        for name in ("alice", "bob"):
            hits = (
                await c.get(
                    "/api/search", params={"q": "staging password rotation"}, headers=bearer(tokens[name])
                )
            ).json()
            assert [h["title"] for h in hits] == [f"{name} private note"]
            listed = (await c.get("/api/memories", headers=bearer(tokens[name]))).json()
            titles = {m["title"] for m in listed["items"]}
            assert titles == {SHARED_TITLE, f"{name} private note"}, titles

        r = await c.get("/api/memories", headers=bearer("not-a-token-of-this-server-0123456789"))
        assert r.status_code == 401
        assert r.json()["error"]["message"] == "unknown token; use the token `lore users add` printed for you"
        assert (await c.get("/api/memories")).status_code == 401  # a users file means credentials always

        # The browser: the login form takes the user's own token; the session acts as that user.
        page = await c.get("/login")
        csrf = page.cookies.get("lore_csrf") or c.cookies.get("lore_csrf")
        r = await c.post("/login", data={"token": tokens["bob"], "csrf_token": csrf, "next": "/"})
        assert r.status_code == 303, r.text
        listed = (await c.get("/api/memories")).json()
        assert {m["title"] for m in listed["items"]} == {SHARED_TITLE, "bob private note"}


STEPS = [
    "rotation of the database password happens on Mondays",
    "the vault rotation token lives in the ops folder",
    "rotation alerts page the on-call engineer",
    "after rotation restart the queue workers",
    "rotation logs are kept for ninety days",
    "never skip the rotation dry run in staging",
]


# -- PostgreSQL: tokens select agents and database roles ----------------------------------------------


def make_roles(server, url: str, *names: str, grant_to: str) -> None:
    """Real roles: members of lore_user that the server's login role may SET ROLE to."""
    database = urlsplit(url).path.lstrip("/")
    server.sql(f"CREATE ROLE {grant_to} LOGIN", f'GRANT CONNECT ON DATABASE "{database}" TO {grant_to}')
    for name in names:
        server.sql(f"CREATE ROLE {name} IN ROLE lore_user", f"GRANT {name} TO {grant_to}")


def sql(url: str, query: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query).fetchall()


def http(method: str, url: str, token: str, body: dict | None = None) -> tuple[int, object]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Content-Type": "application/json", **bearer(token)},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def mcp_call(url: str, token: str, tool: str, **arguments) -> tuple[list[str], str]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=bearer(token), timeout=60) as http_client:
        async with streamable_http_client(url, http_client=http_client) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(90):
                    await session.initialize()
                    tools = await session.list_tools()
                    result = await session.call_tool(tool, arguments)
    return sorted(t.name for t in tools.tools), result.content[0].text


@postgres_only
def test_team_server_acts_as_each_users_database_role(pg_database, tmp_path):
    server, url = pg_database
    suffix = uuid.uuid4().hex[:8]
    alice, bob, login = f"alice_{suffix}", f"bob_{suffix}", f"lore_server_{suffix}"
    make_roles(server, url, alice, bob, grant_to=login)
    server_url = server.url(urlsplit(url).path.lstrip("/"), user=login)  # not a superuser
    root = make_project(tmp_path / "proj")
    users, tokens = add_users(tmp_path, ("alice", alice), ("bob", bob))

    # The shared token acts as the server's login role, beside the users' tokens.
    shared = "shared-" + uuid.uuid4().hex
    team = Server(
        root,
        "--database",
        server_url,
        "--users",
        str(users),
        env={"LORE_DATABASE_URL": "", "LORE_TOKEN": shared},
    )
    try:
        api = f"{team.url}/api"
        status, _ = http(
            "POST", f"{api}/memories", tokens["alice"], {"title": SHARED_TITLE, "body": SHARED_BODY}
        )
        assert status == 201
        for name in ("alice", "bob"):
            status, body = http(
                "POST",
                f"{api}/memories",
                tokens[name],
                {"title": f"{name} private note", "body": private_body(name), "private": True},
            )
            assert status == 201, body
        # The server's own Lore indexed every agent's private folder under the login
        # role: the shared token got 403 once a user had a private memory, and so did
        # that user once the login role's row for their file came first.
        status, listed = http("GET", f"{api}/memories", shared)
        assert status == 200 and [m["title"] for m in listed["items"]] == [SHARED_TITLE], listed

        for name in ("alice", "bob"):
            status, hits = http("GET", f"{api}/search?q=staging+password+rotation", tokens[name])
            assert status == 200 and [h["title"] for h in hits] == [f"{name} private note"], hits
            status, listed = http("GET", f"{api}/memories", tokens[name])
            assert {m["title"] for m in listed["items"]} == {SHARED_TITLE, f"{name} private note"}

        status, body = http("GET", f"{api}/memories", "wrong-token-0123456789abcdef")
        assert status == 401 and body["error"]["message"].startswith("unknown token")

        # MCP: the same tools for everyone, each call acting as its token's user.
        baseline = None
        for name in ("alice", "bob"):
            names, text = anyio.run(
                lambda n=name: mcp_call(
                    f"{team.url}/mcp", tokens[n], "search_memories", query="staging password rotation"
                )
            )
            baseline = baseline or names
            assert names == baseline and "search_memories" in names
            found = [h["title"] for h in json.loads(text)]
            assert found == [f"{name} private note"], found
        _, added = anyio.run(
            lambda: mcp_call(
                f"{team.url}/mcp",
                tokens["bob"],
                "add_memory",
                type="fact",
                title="bob mcp secret",
                content="Bob's MCP note about the rotation schedule.",
                private=True,
            )
        )
        assert "bob mcp secret" in added
    finally:
        team.stop()

    # Each private row is owned by its user's role; no copy of Alice's exists under Bob's
    # role (Bob's store never indexed her private folder), and Bob's role, reading the
    # tables directly, sees no row of hers: RLS, not only the application, keeps them apart.
    owners = sql(url, "SELECT title, owner_role FROM lore.memories ORDER BY title")
    assert owners == [
        (SHARED_TITLE, ""),
        ("alice private note", alice),
        ("bob mcp secret", bob),
        ("bob private note", bob),
    ], owners
    as_bob = server.url(urlsplit(url).path.lstrip("/"), user=login)
    import psycopg

    with psycopg.connect(as_bob, autocommit=True) as conn:
        conn.execute(f"SET ROLE {bob}")
        seen = {r[0] for r in conn.execute("SELECT title FROM lore.memories").fetchall()}
    assert seen == {SHARED_TITLE, "bob private note", "bob mcp secret"}


@postgres_only
def test_each_users_connections_run_as_their_role_only(pg_database, tmp_path):
    """In process: requests for Bob, interleaved with Alice's, never borrow a
    connection acting as Alice (a pool per role; SET ROLE once per connection)."""
    from lore.storage.postgres.connection import close, pool

    server, url = pg_database
    suffix = uuid.uuid4().hex[:8]
    alice, bob, login = f"alice_{suffix}", f"bob_{suffix}", f"lore_server_{suffix}"
    make_roles(server, url, alice, bob, grant_to=login)
    server_url = server.url(urlsplit(url).path.lstrip("/"), user=login)
    root = make_project(tmp_path / "proj")
    users, tokens = add_users(tmp_path, ("alice", alice), ("bob", bob))
    os.environ["LORE_DATABASE_URL"], previous = server_url, os.environ.get("LORE_DATABASE_URL")
    try:
        app = build_app(str(root), users=str(users))

        statuses = []

        async def post(c, body, token):
            statuses.append((await c.post("/api/memories", json=body, headers=bearer(token))).status_code)

        async def run():
            async with client(app) as c:
                async with anyio.create_task_group() as group:
                    for i in range(6):
                        for name in ("alice", "bob"):
                            body = {
                                "title": f"{name} note {i}",
                                "body": f"{name}: {STEPS[i]}",
                                "private": True,
                            }
                            group.start_soon(post, c, body, tokens[name])
                hits = (
                    await c.get(
                        "/api/search", params={"q": "rotation", "limit": 50}, headers=bearer(tokens["bob"])
                    )
                ).json()
                return {h["title"] for h in hits}

        assert anyio.run(run) == {f"bob note {i}" for i in range(6)}
        assert statuses == [201] * 12
        team = app.tools.team
        for user in team.users.users:
            store = team.lore_for(user).store
            assert store._one("SELECT current_user, session_user") == (user.role, login)
            with pool(server_url, user.role).connection() as conn:
                assert conn.execute("SELECT current_user").fetchone() == (user.role,)
    finally:
        os.environ["LORE_DATABASE_URL"] = previous or ""
        close(server_url)  # every role's pool of the server's login


@postgres_only
def test_a_role_the_server_cannot_assume_is_a_one_line_error_at_start_up(pg_database, tmp_path, cli):
    server, url = pg_database
    suffix = uuid.uuid4().hex[:8]
    alice, login = f"alice_{suffix}", f"lore_server_{suffix}"
    make_roles(server, url, alice, grant_to=login)
    server.sql(f"CREATE ROLE carol_{suffix} IN ROLE lore_user")  # exists, but not granted to the server
    server_url = server.url(urlsplit(url).path.lstrip("/"), user=login)
    root = make_project(tmp_path / "proj")
    for missing in (f"carol_{suffix}", f"nobody_{suffix}"):
        users = tmp_path / f"{missing}.toml"
        add_user(users, "alice", role=alice)
        add_user(users, "carol", role=missing)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "lore",
                "serve",
                "--port",
                "0",
                "--database",
                server_url,
                "--users",
                str(users),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "LORE_DATABASE_URL": ""},
        )
        assert result.returncode != 0
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert (
            f"cannot act as database role '{missing}'" in lines[0]
            and f"GRANT {missing} TO {login}" in lines[0]
        )
