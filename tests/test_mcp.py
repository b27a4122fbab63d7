"""The MCP server end to end (issue 6): a real MCP client (the official SDK)
talks to `python -m lore mcp` in a subprocess, over stdio and over streamable
HTTP, in real projects made in temp dirs.

Every project but one sets `[embedding] provider = "none"` (BM25 only, no
model load) to keep the tests fast; `test_default_model_through_mcp` checks
that the bundled default model really serves vector search through MCP.
"""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import forkserver
from conftest import CLI
from lore import __version__
from web_helpers import MCP_INITIALIZE

TOOLS = {
    "search_codebase",
    "index_project",
    "add_memory",
    "recall_context",
    "search_memories",
    "update_index",
    "memory_search",
    "memory_read",
    "memory_write",
    "edit_memory",
    "build_context",
    "session_append",
    "session_context",
}
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_CLEAN_ENV = ("LORE_PROJECT", "LORE_MCP_TOKEN", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")

AUTH_PY = '''\
"""Authentication helpers."""


def parse_oauth_token(header: str) -> str:
    """Extract the bearer token from an Authorization header."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        raise ValueError("not a bearer token")
    return token
'''

BILLING_PY = '''\
"""Billing."""


def compute_invoice_total(lines) -> float:
    """Sum price times quantity over the invoice lines."""
    return sum(line.price * line.quantity for line in lines)
'''


# ---------------------------------------------------------------- helpers


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    out.update(
        NO_COLOR="1",
        GIT_AUTHOR_NAME="Ada Tester",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Ada Tester",
        GIT_COMMITTER_EMAIL="ada@example.com",
    )
    return out


def run(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        list(args), cwd=root, env=env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def lore(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return CLI(root)(*args, ok=check, env=env(), unset=_CLEAN_ENV)


def git(root: Path, *args: str) -> str:
    return run(root, "git", "-c", "commit.gpgsign=false", *args).stdout.strip()


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_project(tmp_path: Path, *, provider: str = "none", code: bool = True) -> Path:
    """A git repository with a little code, initialised for Lore."""
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    if code:
        write(root, "src/auth.py", AUTH_PY)
        write(root, "src/billing.py", BILLING_PY)
    write(root, "README.md", "# Demo\n\nA small demo project.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add auth and billing")
    lore(root, "init")
    config = root / ".lore/config.toml"
    text = config.read_text()
    assert re.search(r'^provider = "local"$', text, re.M), "config template changed"
    config.write_text(re.sub(r'^provider = "local"$', f'provider = "{provider}"', text, count=1, flags=re.M))
    return root


@pytest.fixture
def root(tmp_path) -> Path:
    return make_project(tmp_path)


class Session:
    """A ClientSession with helpers that decode Lore's JSON tool results."""

    def __init__(self, session: ClientSession):
        self.session = session

    async def raw(self, tool: str, **arguments):
        return await self.session.call_tool(tool, arguments)

    async def ok(self, tool: str, **arguments):
        result = await self.raw(tool, **arguments)
        text = result.content[0].text
        assert not result.is_error, f"{tool}({arguments}) failed: {text}"
        return json.loads(text)

    async def error(self, tool: str, **arguments) -> str:
        result = await self.raw(tool, **arguments)
        text = " ".join(getattr(part, "text", "") for part in result.content)
        assert result.is_error, f"{tool}({arguments}) should have failed but returned: {text[:300]}"
        return text


@asynccontextmanager
async def stdio_session(
    root: Path, *, args: tuple[str, ...] = (), cwd: Path | None = None, extra_env: dict | None = None
):
    # The SDK hands the server a minimal environment: pass the test backend's database
    # on, and PYTHONPATH (a checkout run without installing it tests its own code).
    backend = {name: os.environ[name] for name in ("LORE_DATABASE_URL", "PYTHONPATH") if os.environ.get(name)}
    command, command_args = forkserver.lore_command([*args, "mcp"], backend)
    params = StdioServerParameters(
        command=command,
        args=command_args,
        cwd=str(cwd or root),
        env={**backend, **(extra_env or {})} or None,
    )
    errlog_path = (cwd or root).parent / f"server-{time.monotonic_ns()}.err"
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_):
            async with ClientSession(read, write_) as session:
                with anyio.fail_after(60):
                    await session.initialize()
                yield Session(session)


def run_async(fn):
    """anyio.run, re-raising a lone failure out of the SDK's task-group exception groups."""
    try:
        return anyio.run(fn)
    except BaseExceptionGroup as group:
        leaves = []

        def collect(exc):
            if isinstance(exc, BaseExceptionGroup):
                for inner in exc.exceptions:
                    collect(inner)
            else:
                leaves.append(exc)

        collect(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def file_text(root: Path, rel: str) -> str:
    return (root / rel).read_text("utf-8")


# ---------------------------------------------------------------- stdio: every tool


def test_tools_list_has_exactly_the_thirteen_tools(root):
    async def body():
        async with stdio_session(root) as s:
            listed = await s.session.list_tools()
            names = [t.name for t in listed.tools]
            assert sorted(names) == sorted(TOOLS) and len(names) == 13
            for tool in listed.tools:
                assert tool.description, f"{tool.name} has no description"
                assert tool.input_schema["type"] == "object"
            schema = {t.name: t.input_schema for t in listed.tools}
            assert set(schema["add_memory"]["required"]) == {"type", "title", "content"}
            assert schema["memory_search"]["properties"]["limit"]["maximum"] == 50

    run_async(body)


def test_docs_name_every_input_of_the_003_tools(root):
    """docs/integrations.md's table lists each 003 tool's inputs: an agent's
    author reads them there (before, since/until and include_archived were
    taken but not listed)."""
    from lore.interfaces.mcp import build_server

    server, tools = build_server(str(root))
    try:
        schema = {t.name: t.parameters for t in server._tool_manager.list_tools()}
    finally:
        tools.own.close()
    docs = (Path(__file__).parent.parent / "docs" / "integrations.md").read_text()
    docs = docs.replace(
        "include_code/memories/related_work", "include_code, include_memories, include_related_work"
    )
    for tool in ("search_codebase", "add_memory", "recall_context", "search_memories", "update_index"):
        row = next(line for line in docs.splitlines() if line.startswith(f"| `{tool}` |"))
        listed = {item.split()[0] for item in row.split("|")[3].split(",")}
        assert set(schema[tool]["properties"]) <= listed, (tool, set(schema[tool]["properties"]) - listed)


def test_tool_list_fits_its_token_budget_and_still_says_what_values_may_be(root):
    """Issue 6's budget (at most 1,500 cl100k tokens for the whole list as
    sent, counted as bench/mcp_server.py does), with the values an agent must choose from
    (memory types, edit operations) and the result caps still advertised."""
    bpe_openai = pytest.importorskip("bpe_openai")

    async def body():
        async with stdio_session(root) as s:
            listed = await s.session.list_tools()
            # Each tool whole, as sent: an output schema of {"result": string} once cost 560 tokens.
            sent = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
            assert len(bpe_openai.get_encoding("cl100k_base").encode(json.dumps(sent))) <= 1500
            assert all("outputSchema" not in tool for tool in sent)
            answer = await s.session.call_tool("search_memories", {"query": "anything at all"})
            assert answer.structured_content is None  # the JSON text once, not twice
            schema = {t.name: t.input_schema["properties"] for t in listed.tools}
            assert "gotcha" in schema["add_memory"]["type"]["enum"]
            assert "move" in schema["edit_memory"]["operation"]["enum"]
            assert schema["search_codebase"]["limit"]["maximum"] == 50
            assert schema["add_memory"]["tags"]["maxItems"] == 20
            # Not advertised, still enforced: a title past its length, a type not in the list.
            long_title = await s.error("add_memory", type="fact", title="x" * 201, content="body")
            assert "title" in long_title and "200" in long_title
            wrong_type = await s.error("memory_write", content="body", type="bug")
            assert "type" in wrong_type and "gotcha" in wrong_type

    run_async(body)


def test_an_argument_a_tool_does_not_take_is_refused(root):
    """`limt` (misspelt) and `types` (search_memories') did nothing: the agent believed a filter applied."""

    async def body():
        async with stdio_session(root) as s:
            misspelt = await s.error("search_memories", query="pool size", limt=1)
            assert "unknown argument 'limt'" in misspelt and "limit" in misspelt
            borrowed = await s.error("memory_search", query="pool", types=["gotcha"])
            assert "unknown argument 'types'" in borrowed
            await s.ok("search_memories", query="pool size", limit=1)  # still serving
            added = await s.ok("add_memory", type="fact", title="Log", content="Shared log for a field test.")
            for blank in ("", " "):  # wrote `'': x` into the file
                nameless = await s.error(
                    "edit_memory", id=added["id"], operation="set", target=blank, value="x"
                )
                assert "name of the field" in nameless

    run_async(body)


def test_memory_tools_return_their_documented_shapes(root):
    async def body():
        async with stdio_session(root) as s:
            added = await s.ok(
                "add_memory",
                type="decision",
                title="Store times in UTC",
                content="Every timestamp is stored in UTC.\nConvert only in the UI.",
                tags=["time", "utc"],
                applies_to="area:backend",
            )
            assert UUID4.match(added["id"])
            assert added["created"] is True
            assert added["path"].startswith(".lore/memory/") and added["path"].endswith(".md")
            assert (root / added["path"]).is_file()
            assert added["memory_type"] == "decision" and added["title"] == "Store times in UTC"
            assert added["tags"] == ["time", "utc"] and added["applies_to"] == "area:backend"
            assert "Every timestamp is stored in UTC." in file_text(root, added["path"])

            await s.ok(
                "add_memory",
                type="gotcha",
                title="Redis eviction drops sessions",
                content="Redis evicts session keys under memory pressure.\nUse volatile-lru.",
            )
            # Tags as one comma-separated string, as the CLI and frontmatter take them.
            tagged = await s.ok(
                "add_memory",
                type="fact",
                title="Server-sent events",
                content="SSE streams.",
                tags="streaming, sse",
            )
            assert tagged["tags"] == ["streaming", "sse"]

            hits = await s.ok("search_memories", query="UTC timestamps")
            assert hits and hits[0]["id"] == added["id"]
            assert {"id", "title", "type", "snippet", "score", "path"} <= set(hits[0])
            assert 0 <= hits[0]["score"] <= 1
            only_gotchas = await s.ok("search_memories", query="UTC timestamps redis", types=["gotcha"])
            assert only_gotchas and {h["type"] for h in only_gotchas} == {"gotcha"}

            found = await s.ok("memory_search", query="UTC timestamps", limit=3)
            assert found and found[0]["id"] == added["id"]
            assert set(found[0]) >= {"id", "summary", "relevance", "timestamp"}
            assert found[0]["summary"] and 0 <= found[0]["relevance"] <= 1
            assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", found[0]["timestamp"])

            page = await s.ok("memory_read", id=added["id"])
            assert page["id"] == added["id"] and page["path"] == added["path"]
            assert page["content"] == file_text(root, added["path"])
            assert page["next_offset"] is None and page["total_chars"] == len(page["content"])
            prefix = await s.ok("memory_read", id=added["id"][:8])  # id prefixes resolve too
            assert prefix["id"] == added["id"]

    run_async(body)


def test_memory_write_creates_then_updates_the_same_memory(root):
    async def body():
        async with stdio_session(root) as s:
            made = await s.ok(
                "memory_write",
                content="Deploys go through the staging cluster first.\nNever deploy to prod directly.",
                type="decision",
                title="Deploy via staging",
                tags=["deploy"],
            )
            assert made["created"] is True and UUID4.match(made["id"])
            path = root / made["path"]
            assert path.is_file() and "staging cluster" in path.read_text()

            updated = await s.ok(
                "memory_write",
                id=made["id"],
                content="Deploys go through the staging cluster first.\nProd deploys need a second reviewer.",
            )
            assert updated["id"] == made["id"] and updated["path"] == made["path"]
            text = path.read_text()
            assert "second reviewer" in text and "Never deploy to prod directly" not in text
            assert len(list((root / ".lore/memory").glob("*.md"))) == 1  # rewritten, not added
            # Fields the update did not give are kept.
            assert updated["title"] == "Deploy via staging" and updated["tags"] == ["deploy"]
            assert updated["memory_type"] == "decision", (
                "memory_write(id=..., content=...) changed the memory's type to its default"
            )
            read = await s.ok("memory_read", id=made["id"])
            assert "type: decision" in read["content"]

    run_async(body)


def test_memory_write_with_a_new_uuid_creates_that_memory(root):
    async def body():
        async with stdio_session(root) as s:
            wanted = "0b6f0b8e-4a57-4c1e-9d0a-1f2e3d4c5b6a"
            made = await s.ok(
                "memory_write",
                id=wanted,
                content="Feature flags live in LaunchDarkly.\nNever hard-code them.",
            )
            assert made["id"] == wanted and made["created"] is True
            again = await s.ok("memory_read", id=wanted)
            assert "LaunchDarkly" in again["content"]

    run_async(body)


def test_an_error_never_echoes_a_secret_it_was_given(root):
    """Tool errors go back into the agent's transcript: a key or id holding a
    token ("no memory 'ghp_…'") is redacted there, as on the CLI and the web."""
    token = "ghp_" + "Er1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R"

    async def body():
        async with stdio_session(root) as s:
            said = await s.error("memory_read", id=token)
            assert token not in said and "no memory '[REDACTED:github-token]'" in said
            said = await s.error("session_context", session_id=f"s-{token}", events=True)
            assert token not in said
            # An argument the schema refuses is echoed back (and logged) redacted too.
            key = "AKIA" + "Q7R3ZK5M2XWP9LTB"
            said = await s.error("search_memories", query="auth", limit=key)
            assert key not in said and "limit:" in said and "[REDACTED:aws-access-key]" in said
            said = await s.error("search_memories", query="auth", types=[token])
            assert token not in said and "types:" in said

    run_async(body)
    proc = subprocess.run(
        [sys.executable, "-m", "lore", "show", token], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 1 and token not in proc.stderr and "[REDACTED:github-token]" in proc.stderr


def test_another_agents_session_answers_like_a_missing_one(root, monkeypatch):
    monkeypatch.setenv("LORE_AGENT", "otheragent")
    lore(root, "session", "start", "--id", "other-s1")
    lore(root, "session", "append", "other-s1", "--content", "codename BLUEHERON")
    monkeypatch.delenv("LORE_AGENT")
    lore(root, "session", "start", "--id", "shared-s1")  # no agent: everyone's

    async def body():
        async with stdio_session(root, extra_env={"LORE_AGENT": "probe"}) as s:
            missing = await s.error("session_context", session_id="no-such-s1", events=True)
            hidden = await s.error("session_context", session_id="other-s1", events=True)
            assert "BLUEHERON" not in hidden
            assert hidden == missing.replace("no-such-s1", "other-s1")
            injected = await s.error("session_append", session_id="other-s1", content="injected by probe")
            assert "other-s1" in injected and "BLUEHERON" not in injected
            shared = await s.ok("session_append", session_id="shared-s1", content="shared note")
            assert shared["events"][0]["id"] == 1
            await s.ok("session_append", session_id="probe-s1", content="mine")

    run_async(body)
    log = (root / ".lore/sessions/other-s1/session.jsonl").read_text()
    assert "injected by probe" not in log
    assert "other-s1" not in lore(root, "session", "list", "--json").stdout
    probe_view = json.loads(lore(root, "session", "list", "--agent", "probe", "--json").stdout)
    assert {info["id"] for info in probe_view} == {"shared-s1", "probe-s1"}
    other = lore(root, "session", "show", "other-s1", check=False)
    assert other.returncode == 1 and "no session other-s1" in other.stderr


def test_session_append_stores_a_tool_call_with_its_result_or_refuses_what_it_would_drop(root):
    async def body():
        async with stdio_session(root) as s:
            both = await s.ok(
                "session_append",
                session_id="s-tools",
                tool_name="Bash",
                args={"command": "pytest"},
                result="1 failed",
                is_error=True,
            )
            call, result = both["events"]
            assert call["type"] == "tool_call" and call["args"] == {"command": "pytest"}
            assert result["type"] == "tool_result" and result["result"] == "1 failed"
            assert result["is_error"] is True and result["tool_call_id"] == call["tool_call_id"]
            mixed = await s.error("session_append", session_id="s-tools", content="hi", tool_name="Bash")
            assert "content is a message" in mixed
            assert "args goes with tool_name" in await s.error(
                "session_append", session_id="s-tools", content="hi", args={"a": 1}
            )
            assert "is_error goes with result" in await s.error(
                "session_append", session_id="s-tools", content="hi", is_error=True
            )
            # An empty message, and a result that answers no call, were stored (as the CLI refuses).
            assert "content is empty" in await s.error("session_append", session_id="s-tools", content=" ")
            assert "tool_name or tool_call_id" in await s.error(
                "session_append", session_id="s-tools", result="x"
            )
            view = await s.ok("session_context", session_id="s-tools", events=True)
            assert [e["type"] for e in view["events"]] == ["tool_call", "tool_result"]
            # Bounded: a megabyte-long tool name was stored, and a reply repeated 4 MB of args.
            too_long = await s.error("session_append", session_id="s-tools", tool_name="T" * 100_000)
            assert "toolName" in too_long and "at most 200" in too_long and len(too_long) < 300
            assert "at most 1,000,000" in await s.error(
                "session_append", session_id="s-tools", content="x" * 1_000_001
            )
            assert (
                len(await s.error("session_append", session_id="s-tools", role="r" * 100_000, content="x"))
                < 300
            )
            big = await s.ok(
                "session_append", session_id="s-tools", tool_name="Read", args={"text": "y" * 50_000}
            )
            assert big["events"][0]["args"] == "<50,011 characters, stored in full>"
            view = await s.ok("session_context", session_id="s-tools", events=True)
            assert view["events"][-1]["args"] == {"text": "y" * 50_000}

    run_async(body)


def test_memory_read_paginates_by_characters(root):
    body_text = "\n".join(f"Line {i}: café naïve — ünïcödé 🎉 text to page through." for i in range(60))

    async def body():
        async with stdio_session(root) as s:
            made = await s.ok("add_memory", type="fact", title="A long memory", content=body_text)
            whole = file_text(root, made["path"])
            assert len(whole) > 3000

            first = await s.ok("memory_read", id=made["id"], offset=0, limit=100)
            assert first["content"] == whole[:100] and first["offset"] == 0
            assert first["next_offset"] == 100 and first["total_chars"] == len(whole)
            middle = await s.ok("memory_read", id=made["id"], offset=1234, limit=321)
            assert middle["content"] == whole[1234:1555] and middle["next_offset"] == 1555

            pieces, offset, calls = [], 0, 0
            while offset is not None:
                page = await s.ok("memory_read", id=made["id"], offset=offset, limit=700)
                assert page["offset"] == offset and len(page["content"]) <= 700
                pieces.append(page["content"])
                offset = page["next_offset"]
                calls += 1
                assert calls < 100
            assert "".join(pieces) == whole
            assert calls == -(-len(whole) // 700)

            past_end = await s.ok("memory_read", id=made["id"], offset=len(whole) + 10, limit=50)
            assert past_end["content"] == "" and past_end["next_offset"] is None

    run_async(body)


def test_code_tools_index_search_recall_and_update(root):
    async def body():
        async with stdio_session(root) as s:
            indexed = await s.ok("index_project")
            assert indexed["success"] is True and indexed["files_processed"] >= 2
            assert {
                "files_processed",
                "chunks_created",
                "files_removed",
                "commits_added",
                "duration_ms",
                "errors",
                "embedded",
            } <= set(indexed)
            assert "skipped" not in indexed
            assert indexed["memories"]["errors"] == []
            again = await s.ok("index_project", incremental=True)
            assert again["files_processed"] == 0
            # Broken memory files and duplicate ids are said, as `lore index` says them.
            (root / ".lore/memory/broken.md").write_text("---\nid: [unclosed\n---\nbody\n")
            made = await s.ok("add_memory", type="decision", title="Tokens expire", content="After an hour.")
            (root / ".lore/memory/copy.md").write_text((root / made["path"]).read_text())
            problems = (await s.ok("index_project", incremental=False))["memories"]["errors"]
            assert {e["path"] for e in problems} == {".lore/memory/broken.md", ".lore/memory/copy.md"}, (
                problems
            )

            hits = await s.ok("search_codebase", query="parse oauth bearer token from header")
            assert hits and hits[0]["file_path"] == "src/auth.py"
            assert "parse_oauth_token" in (hits[0]["symbol"] or "") + hits[0]["chunk_text"]
            assert {
                "file_path",
                "symbol",
                "language",
                "start_line",
                "end_line",
                "snippet",
                "similarity",
                "chunk_text",
            } <= set(hits[0])
            assert hits[0]["language"] == "python" and 0 <= hits[0]["similarity"] <= 1
            py_only = await s.ok(
                "search_codebase",
                query="invoice total",
                file_types=["py"],
                directories=["src"],
                files_only=True,
                limit=5,
            )
            assert py_only and py_only[0]["file_path"] == "src/billing.py"
            assert len({h["file_path"] for h in py_only}) == len(py_only)
            by_role = await s.ok("search_codebase", query="invoice total", roles=["source"])
            assert by_role and {h["role"] for h in by_role} == {"source"}

            await s.ok(
                "add_memory",
                type="gotcha",
                title="OAuth tokens need the bearer scheme",
                content="parse_oauth_token rejects headers without 'Bearer'.\nClients must send it.",
                applies_to="file:src/auth.py",
            )
            pack = await s.ok(
                "recall_context",
                title="Fix oauth token parsing",
                description="bearer header handling",
                budget=1500,
            )
            assert isinstance(pack["markdown"], str) and pack["markdown"].strip()
            for key in ("memories", "files", "code_snippets", "related_work_items"):
                assert isinstance(pack[key], list), key
            assert pack["budget"] == 1500 and pack["tokens_used"] <= 1500
            assert any("OAuth tokens need the bearer scheme" in json.dumps(m) for m in pack["memories"])
            assert "OAuth tokens need the bearer scheme" in pack["markdown"]
            assert any("src/auth.py" in json.dumps(f) for f in pack["files"])
            no_code = await s.ok(
                "recall_context", title="oauth", include_code=False, include_related_work=False
            )
            assert no_code["files"] == [] and no_code["code_snippets"] == []
            # a task's title as long as a commit's subject can be (`lore recall` takes it too)
            long_title = "Fix oauth token parsing when the bearer header " + "and its scheme vary " * 10
            assert len(long_title) > 200
            pack = await s.ok("recall_context", title=long_title, budget=1500)
            assert "OAuth tokens need the bearer scheme" in pack["markdown"]

            write(
                root,
                "src/billing.py",
                BILLING_PY
                + '''

def apply_discount_coupon(total: float, percent: float) -> float:
    """Reduce the total by a coupon percentage."""
    return total * (1 - percent / 100)
''',
            )
            (root / "src/auth.py").unlink()
            result = await s.ok("update_index", files=["src/billing.py"], deleted_files=["src/auth.py"])
            assert result == {"updated": 1, "deleted": 1, "skipped": []}
            coupon = await s.ok("search_codebase", query="apply discount coupon percentage")
            assert coupon and coupon[0]["file_path"] == "src/billing.py"
            gone = await s.ok("search_codebase", query="parse oauth bearer token from header")
            assert "src/auth.py" not in [h["file_path"] for h in gone]

    run_async(body)


# ---------------------------------------------------------------- stdio: bad input


def test_bad_inputs_are_tool_errors_and_the_server_keeps_working(root):
    async def body():
        async with stdio_session(root) as s:
            message = await s.error("memory_read", id="no-such-memory")
            assert "no-such-memory" in message and "no memory" in message
            message = await s.error("memory_write", id="not-a-uuid", content="Some lasting fact here.\nMore.")
            assert "not-a-uuid" in message and "UUID" in message

            message = await s.error("add_memory", type="bogus", title="T", content="Long enough body.\nYes.")
            assert "bogus" in message and "type" in message and "decision" in message
            message = await s.error("memory_write", type="nonsense", content="Long enough body.\nYes.")
            assert "nonsense" in message

            for tool, args in (
                ("memory_search", {"query": "x"}),
                ("search_memories", {"query": "x"}),
                ("search_codebase", {"query": "x"}),
            ):
                message = await s.error(tool, limit=51, **args)
                assert "limit" in message and "50" in message, message
                message = await s.error(tool, limit=0, **args)
                assert "limit" in message, message

            message = await s.error(
                "add_memory",
                type="fact",
                title="T",
                content="Long enough body.\nYes.",
                applies_to="everywhere",
            )
            assert "applies_to" in message and "everywhere" in message
            message = await s.error("memory_write", content="Long enough body.\nYes.", applies_to="file:")
            assert "applies_to" in message
            # Code filters are checked as the CLI checks them, not answered with "no matches".
            message = await s.error("search_codebase", query="x", roles=["bogus"])
            assert "unknown role 'bogus'" in message and "source" in message, message
            message = await s.error("search_codebase", query="x", directories=["/etc"])
            assert "outside the project" in message, message
            for bad in ({"directories": ["src\u0000"]}, {"file_types": ["py\u0000"]}):
                assert "NUL" in await s.error("search_codebase", query="x", **bad)
            inside = await s.ok("search_codebase", query="x", directories=[str(root)])
            assert isinstance(inside, list)

            message = await s.error("add_memory", type="fact", title="Empty", content="")
            assert "body" in message.lower() or "content" in message.lower(), message
            message = await s.error("add_memory", type="fact", title="Missing content")
            assert "content" in message
            message = await s.error("memory_read", id="x", offset=-1)
            assert "offset" in message
            message = await s.error("recall_context", title="x", files=["../outside.py"])
            assert "outside.py" in message
            # The server's own layout is not shown: paths are relative to the project.
            assert str(root) not in message and "(<project>)" in message, message
            message = await s.error("recall_context", title="x", budget=10)
            assert "budget" in message
            message = await s.error("search_codebase", query="x", changed_within_days=-1)
            # Arguments are named as the tool calls them, not as the CLI's flags.
            assert "changed_within_days must be" in message and "above 0" in message, message
            for tool in ("search_codebase", "recall_context", "search_memories"):
                args = {"title": "x"} if tool == "recall_context" else {"query": "x"}
                message = await s.error(tool, since="2026-11-20", until="2026-11-10", **args)
                assert "since '2026-11-20'" in message and "is not before until" in message, (tool, message)
                assert "--" not in message, message
                message = await s.error(tool, until="blah", **args)
                assert "until: cannot read the time 'blah'" in message, (tool, message)
                # A blank date is refused as the CLI's --since "" is, not taken as no filter.
                for blank in ("", "  "):
                    message = await s.error(tool, since=blank, **args)
                    assert "since: it is empty" in message, (tool, message)

            # Nothing was written by the failed calls, and the server still answers.
            assert list((root / ".lore/memory").glob("*.md")) == []
            ok = await s.ok(
                "add_memory",
                type="fact",
                title="Still alive",
                content="The server survives bad calls.\nIt keeps answering.",
            )
            assert (await s.ok("memory_search", query="server survives bad calls"))[0]["id"] == ok["id"]
            listed = await s.session.list_tools()
            assert len(listed.tools) == 13

    run_async(body)


def test_oversized_arguments_are_tool_errors_and_never_touch_the_index(root):
    """A 60,000-character memory id or a thousand file types went past SQLite's
    limits ("LIKE or GLOB pattern too complex", "Expression tree is too large");
    the store took that for a damaged file, deleted the index and rebuilt it
    empty of code. Such arguments are refused, whatever the interface."""
    lore(root, "index")
    index = root / ".lore/index.db"
    if index.exists():  # SQLite: a table of our own shows the file was never replaced
        with sqlite3.connect(index) as db:
            db.execute("CREATE TABLE canary (x)")
        db.close()
    huge = "x" * 60_000

    async def body():
        async with stdio_session(root) as s:
            before = await s.ok("search_codebase", query="parse oauth token")
            assert before, "the project's code is indexed"
            for tool, args in (
                ("memory_read", {"id": huge}),
                ("build_context", {"id": huge}),
                ("edit_memory", {"id": huge, "operation": "append", "text": "More."}),
                ("search_codebase", {"query": "x", "file_types": ["py"] * 1000}),
                ("search_codebase", {"query": "x", "file_types": [huge]}),
                ("search_codebase", {"query": "x", "directories": [huge]}),
                ("search_codebase", {"query": "x", "directories": [f"d{i}" for i in range(3000)]}),
                ("recall_context", {"title": "x", "files": [f"src/f{i}.py" for i in range(3000)]}),
            ):
                message = await s.error(tool, **args)
                assert len(message) < 300 and "\n" not in message, (tool, message[:300])
                assert "index error" not in message and "rebuild" not in message, (tool, message)
            assert await s.ok("search_codebase", query="parse oauth token") == before

    run_async(body)
    if index.exists():
        with sqlite3.connect(index) as db:
            assert db.execute("SELECT name FROM sqlite_master WHERE name = 'canary'").fetchone()
        db.close()


def test_a_nul_character_in_a_path_is_a_one_line_tool_error(root):
    """A path no file system can name is refused like any other bad path (it was an
    internal error: "Error executing tool update_index", a traceback on stderr).
    A path outside the project, in update_index's batch, is one more file not
    indexed: the batch's other files are indexed all the same."""

    async def body():
        async with stdio_session(root) as s:
            for tool, args in (
                ("update_index", {"files": ["src/a\x00b.py"]}),
                ("update_index", {"files": [], "deleted_files": ["src/\x00.py"]}),
                ("recall_context", {"title": "billing", "files": ["src/billing.py\x00"]}),
            ):
                message = await s.error(tool, **args)
                assert "NUL character" in message and "\\x00" in message, (tool, message)
            result = await s.ok("update_index", files=["../out.py", "src/auth.py"])
            assert result == {
                "updated": 1,
                "deleted": 0,
                "skipped": [{"path": "../out.py", "reason": "outside the project"}],
            }, result

    run_async(body)


def test_empty_content_error_says_the_content_is_empty(root):
    """memory_write with empty (or blank) content must say the content/body is empty."""

    async def body():
        async with stdio_session(root) as s:
            for content in ("", "   \n  "):
                message = await s.error("memory_write", content=content)
                assert "body" in message.lower() or "content" in message.lower(), (
                    f"error for empty content does not mention it: {message!r}"
                )
            assert list((root / ".lore/memory").glob("*.md")) == []

    run_async(body)


# ---------------------------------------------------------------- stdio: only protocol on stdout


class RawServer:
    """`lore mcp` driven by hand-written JSON-RPC lines, keeping every stdout line."""

    def __init__(self, root: Path):
        self.err = open(root.parent / "raw-server.err", "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lore", "mcp"],
            cwd=root,
            env=env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.lines: list[str] = []
        self.queue: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            self.queue.put(line)
        self.queue.put(None)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: dict | None = None, timeout: float = 60) -> dict:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        return self.reply(rid, timeout)

    def reply(self, rid: int, timeout: float = 60) -> dict:
        """The answer to request `rid` (queue.Empty after `timeout` seconds without one)."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.queue.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "server closed stdout"
            try:
                message = json.loads(line)
            except ValueError:
                continue  # reported by the final check
            if isinstance(message, dict) and message.get("id") == rid:
                return message

    def initialize(self, rid: int = 1) -> dict:
        """The MCP handshake: initialize, then the initialized notification."""
        reply = self.request(
            rid,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> str:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(timeout=5)
            self.err.seek(0)
            stderr = self.err.read()
            self.err.close()
        return stderr


@pytest.mark.surface
def test_stdout_carries_nothing_but_protocol(root):
    server = RawServer(root)
    try:
        init = server.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "1"},
            },
        )
        assert init["result"]["serverInfo"]["name"] == "lore"
        assert init["result"]["serverInfo"]["version"] == __version__
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert len(server.request(2, "tools/list")["result"]["tools"]) == 13
        calls = [
            ("index_project", {}),
            (
                "add_memory",
                {
                    "type": "lesson",
                    "title": "Print nothing",
                    "content": "stdout is the protocol channel.\nLog to stderr.",
                },
            ),
            ("search_memories", {"query": "protocol channel"}),
            ("search_codebase", {"query": "invoice total"}),
            ("recall_context", {"title": "invoice totals"}),
            ("update_index", {"files": ["src/auth.py"]}),
            ("memory_read", {"id": "missing"}),
            ("add_memory", {"type": "bad", "title": "x", "content": "y"}),
            ("memory_search", {"query": "x", "limit": 500}),
        ]
        for n, (tool, args) in enumerate(calls, start=3):
            reply = server.request(n, "tools/call", {"name": tool, "arguments": args})
            assert "result" in reply, reply
            assert reply["result"].get("isError", False) == (n >= 9), (tool, reply)
    finally:
        stderr = server.close()
    assert server.lines, "no output at all"
    for line in server.lines:
        try:
            message = json.loads(line)
        except ValueError:
            raise AssertionError(f"non-protocol line on stdout: {line!r}") from None
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line
    assert "Traceback" not in stderr, stderr


@pytest.mark.surface
def test_calls_piped_in_before_stdin_closes_are_all_answered(root):
    """`printf '<requests>' | lore mcp`: the SDK stops at the end of input and
    dropped the calls still running (only initialize and tools/list came back)."""
    lines = [
        MCP_INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "recall_context", "arguments": {"title": "invoice totals"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "search_codebase", "arguments": {"query": "invoice"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "no_such_tool", "arguments": {}},
        },
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "lore", "mcp"],
        cwd=root,
        env=env(),
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    replies = {reply["id"]: reply for reply in map(json.loads, proc.stdout.splitlines())}
    assert sorted(replies) == [1, 2, 3, 4, 5], proc.stdout[-500:]
    assert not replies[3]["result"].get("isError") and not replies[4]["result"].get("isError")
    assert replies[5]["result"]["isError"] and proc.returncode == 0


def test_a_lone_surrogate_from_a_client_is_answered(root):
    """A JavaScript client cutting an emoji in half sends "\\ud83d"; the SDK's
    parser refused the line and answered nothing, so the client waited forever."""
    server = RawServer(root)
    try:
        server.initialize()
        added = server.request(
            2,
            "tools/call",
            {
                "name": "add_memory",
                "arguments": {
                    "type": "lesson",
                    "title": "Deploy notes \ud83d",
                    "content": "Release trains leave on Tuesdays \ud83d\ude80 and wait for no one \udc00.",
                },
            },
            timeout=30,
        )
        assert added["result"].get("isError", False) is False, added
        found = server.request(
            3,
            "tools/call",
            {"name": "search_memories", "arguments": {"query": "release trains \ud83d"}},
            timeout=30,
        )
        text = found["result"]["content"][0]["text"]
        assert "Deploy notes \ufffd" in text and "Tuesdays \U0001f680" in text, text
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr


@pytest.mark.surface
def test_a_request_the_sdk_cannot_read_is_answered_with_an_error(root):
    """`params` that is no object, or arguments nested 300 deep: the SDK's parser
    refused the line and answered nothing, so the client waited forever."""
    server = RawServer(root)
    try:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "str"})
        refused = server.reply(2, timeout=30)["error"]
        assert refused["code"] == -32601 and "params must be a JSON object" in refused["data"], refused
        deep: object = []
        for _ in range(300):
            deep = [deep]
        server.send(
            {
                "jsonrpc": "2.0",
                "id": "three",
                "method": "tools/call",
                "params": {"name": "search_memories", "arguments": {"query": "x", "deep": deep}},
            }
        )
        assert "can't be read" in server.reply("three", timeout=30)["error"]["data"]
        deeper = "[" * 5000 + "]" * 5000  # past what Python's json reads (it answered nothing)
        server.proc.stdin.write(
            f'{{"method":"tools/call","params":{{"name":"x","deep":{deeper}}},"jsonrpc":"2.0","id":4}}\n'
        )
        server.proc.stdin.flush()
        assert "can't be read" in server.reply(4, timeout=30)["error"]["data"]
        assert server.request(5, "ping", timeout=30)["result"] == {}  # and it goes on answering
        # A handler's failure was logged as a boxed, multi-line traceback.
        assert (
            "Unknown prompt"
            in server.request(6, "prompts/get", {"name": "nope"}, timeout=30)["error"]["message"]
        )
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr
    [logged] = [line for line in stderr.splitlines() if "Unknown prompt" in line]
    assert logged == "lore: error: handler for 'prompts/get' raised: ValueError: Unknown prompt: nope"


def test_nan_in_session_args_is_refused_and_session_files_stay_json(root):
    """A client may send NaN or Infinity (the SDK reads them); session.jsonl got
    `"args":{"a":NaN}`, which no JSON reader but Python's accepts."""
    server = RawServer(root)
    try:
        server.initialize()
        for n, fields in enumerate(
            (
                {"tool_name": "bash", "args": {"timeout": float("nan")}},
                {"tool_name": "bash", "args": {"limits": [1, float("inf")]}},
                {"tool_call_id": "tc_1", "result": "ok", "args": {"x": float("-inf")}, "tool_name": "t"},
            ),
            start=2,
        ):
            reply = server.request(
                n, "tools/call", {"name": "session_append", "arguments": {"session_id": "s1", **fields}}
            )
            text = reply["result"]["content"][0]["text"]
            assert reply["result"]["isError"] and "args" in text and "JSON number" in text, text
        reply = server.request(
            9,
            "tools/call",
            {
                "name": "session_append",
                "arguments": {"session_id": "s1", "tool_name": "bash", "args": {"n": 1.5}},
            },
        )
        assert not reply["result"].get("isError"), reply
    finally:
        server.close()

    def strict(constant):
        raise AssertionError(f"{constant} in session.jsonl")

    lines = (root / ".lore/sessions/s1/session.jsonl").read_text().splitlines()
    assert [json.loads(line, parse_constant=strict)["args"] for line in lines] == [{"n": 1.5}]


# ---------------------------------------------------------------- freshness while running


def test_memory_files_edited_by_hand_are_found_by_the_next_search(root):
    async def body():
        async with stdio_session(root) as s:
            made = await s.ok(
                "add_memory",
                type="convention",
                title="Logging format",
                content="Logs are JSON lines.\nOne object per line.",
            )
            assert await s.ok("search_memories", query="zanzibar") == []

            path = root / made["path"]
            path.write_text(
                path.read_text().replace("Logs are JSON lines.", "Logs are JSON lines shipped to zanzibar.")
            )
            hits = await s.ok("search_memories", query="zanzibar")
            assert [h["id"] for h in hits] == [made["id"]]

            write(
                root,
                ".lore/memory/hand-written.md",
                """\
---
id: 7d3c1f4e-2b8a-4c6d-9e0f-a1b2c3d4e5f6
subject: Quokka cache warmup
type: gotcha
keywords: [cache, warmup]
applies_to: global
occurred_at: 2026-01-15T09:30:00Z
---

The quokka cache must be warmed before the first request.
Otherwise p99 latency spikes.
""",
            )
            hits = await s.ok("search_memories", query="quokka warmup")
            assert hits and hits[0]["id"] == "7d3c1f4e-2b8a-4c6d-9e0f-a1b2c3d4e5f6"
            assert hits[0]["type"] == "gotcha"
            found = await s.ok("memory_search", query="quokka")
            assert found and found[0]["title"] == "Quokka cache warmup"

            (root / ".lore/memory/hand-written.md").unlink()
            assert await s.ok("search_memories", query="quokka warmup") == []

    run_async(body)


def test_code_changed_on_disk_is_found_within_a_few_seconds(root):
    async def body():
        async with stdio_session(root) as s:
            await s.ok("index_project")
            first = await s.ok("search_codebase", query="frobnicate widget inventory")
            assert "src/widgets.py" not in [h["file_path"] for h in first]

            write(
                root,
                "src/widgets.py",
                '''\
def frobnicate_widget_inventory(widgets):
    """Frobnicate every widget in the inventory."""
    return [w.frobnicate() for w in widgets]
''',
            )
            started = time.monotonic()
            while True:
                hits = await s.ok("search_codebase", query="frobnicate widget inventory")
                if hits and hits[0]["file_path"] == "src/widgets.py":
                    break
                assert time.monotonic() - started < 8, "new code file not found 8 s after it was written"
                await anyio.sleep(0.25)
            print(
                f"\nnew code file found by search_codebase {time.monotonic() - started:.2f} s after writing it"
            )
            assert "frobnicate_widget_inventory" in hits[0]["chunk_text"]

    run_async(body)


# ---------------------------------------------------------------- the real default model


def test_default_model_through_mcp(tmp_path):
    root = make_project(tmp_path, provider="local", code=False)

    async def body():
        async with stdio_session(root) as s:
            memories = {
                "pool": (
                    "Database pool size",
                    "The Postgres connection pool is capped at 20 connections "
                    "per worker.\nRaise it in settings.py.",
                ),
                "ui": ("Button colours", "Primary buttons use the brand teal.\nDisabled ones are grey."),
                "release": (
                    "Release process",
                    "Tag the commit, then CI publishes the wheel to PyPI.\nNever upload by hand.",
                ),
            }
            ids = {}
            for key, (title, content) in memories.items():
                ids[key] = (await s.ok("add_memory", type="fact", title=title, content=content))["id"]
            # No word in common with any memory: only vectors can answer.
            hits = await s.ok("search_memories", query="how many simultaneous DB sessions are allowed")
            assert hits and hits[0]["id"] == ids["pool"], hits
            assert hits[0]["source"] in ("vector", "hybrid", "both"), hits[0]
            found = await s.ok("memory_search", query="shipping a new version of our library")
            assert found and found[0]["id"] == ids["release"], found

    run_async(body)
    stats = json.loads(lore(root, "stats", "--json").stdout)
    assert stats["search"] == "hybrid" and stats["embedding"].startswith("local:")
    assert stats["vectors"] >= 3 and stats["embedding_problem"] is None


# ---------------------------------------------------------------- streamable HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpServer:
    def __init__(self, root: Path, *args: str):
        self.port = free_port()
        self.err = open(root.parent / f"http-{self.port}.err", "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lore", "mcp", "--http", "--port", str(self.port), *args],
            cwd=root,
            env=env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.err,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.stderr()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "HTTP server did not start"
                time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.err.close()


@pytest.fixture
def http_server(root):
    servers = []

    def start(*args: str) -> HttpServer:
        server = HttpServer(root, *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


async def http_call(url: str, headers: dict, tool: str, **arguments):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=headers, timeout=30) as client:
        async with streamable_http_client(url, http_client=client) as (read, write_):
            async with ClientSession(read, write_) as session:
                with anyio.fail_after(60):
                    await session.initialize()
                    tools = await session.list_tools()
                    result = await session.call_tool(tool, arguments)
                return [t.name for t in tools.tools], result


def post_without_sdk(url: str, headers: dict | None = None) -> tuple[int, str]:
    body = json.dumps(MCP_INITIALIZE)
    request = urllib.request.Request(
        url,
        data=body.encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_http_transport_serves_the_tools(root, http_server):
    server = http_server()
    write(
        root,
        ".lore/memory/hand.md",
        """\
---
id: 3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b
subject: Cache keys carry the schema version
type: convention
keywords: [cache, schema]
applies_to: global
occurred_at: 2026-02-01T12:00:00Z
---

Cache keys carry the schema version.
Bump it when the schema changes.
""",
    )
    names, result = run_async(
        lambda: http_call(server.url, {}, "memory_search", query="cache schema version")
    )
    assert sorted(names) == sorted(TOOLS)
    assert not result.is_error
    hits = json.loads(result.content[0].text)
    assert hits[0]["id"] == "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"

    _, bad = run_async(lambda: http_call(server.url, {}, "memory_read", id="nope"))
    assert bad.is_error and "nope" in bad.content[0].text
    assert server.proc.poll() is None


@pytest.mark.surface
def test_http_bearer_token_is_checked(root, http_server):
    server = http_server("--token", "s3cret")
    status, text = post_without_sdk(server.url)
    assert status == 401, text
    assert "Bearer" in text and "/login" not in text  # lore mcp --http has no login page
    status, _ = post_without_sdk(server.url, {"Authorization": "Bearer wrong"})
    assert status == 401
    status, _ = post_without_sdk(server.url, {"Authorization": "s3cret"})
    assert status == 401

    async def no_header():
        import httpx2

        async with httpx2.AsyncClient(timeout=10) as client:
            response = await client.get(server.url)
            return response.status_code

    assert run_async(no_header) == 401

    names, result = run_async(
        lambda: http_call(
            server.url,
            {"Authorization": "Bearer s3cret"},
            "add_memory",
            type="fact",
            title="Over HTTP",
            content="Memories can be written over HTTP.\nWith a token.",
        )
    )
    assert len(names) == 13 and not result.is_error
    made = json.loads(result.content[0].text)
    assert made["created"] is True and (root / made["path"]).is_file()


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_one_usage_line(root, port):
    """It was "internal error: OverflowError: bind(): port must be 0-65535"."""
    proc = lore(root, "mcp", "--http", "--port", port, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--port" in lines[0] and "65535" in lines[0], proc.stderr


def test_http_public_host_without_token_is_refused(root):
    port = free_port()
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "lore", "mcp", "--http", "--host", "0.0.0.0", "--port", str(port)],
        cwd=root,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "0.0.0.0" in lines[0] and "token" in lines[0].lower()
    assert "LORE_MCP_TOKEN" in lines[0]  # what `lore mcp` reads (it named `lore serve`'s LORE_TOKEN)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert time.monotonic() - started < 30
    with socket.socket() as sock:  # nothing was listening: the port is still free
        sock.bind(("127.0.0.1", port))


def test_the_server_reads_frequent_terms_keyword_lists_ahead(tmp_path):
    """After loading the model, the server reads the keyword lists of terms
    found in many chunks, in the background and one at a time under the
    calls' lock: its first queries rank from them instead of scoring those
    rows inside FTS5 (SQLite; PostgreSQL keeps its own caches)."""
    import lore
    from lore.interfaces.mcp import build_server
    from lore.storage import ChunkInput

    root = tmp_path / "p"
    project = lore.init(root)
    if type(project.store).__name__ != "SQLiteStore":
        project.close()
        pytest.skip("a SQLite index's keyword lists")
    with project.store.transaction():
        file_id = project.store.put_file("src/big.py", "code", "h", 0, 0, role="source")
        project.store.put_chunks(
            file_id,
            "code",
            [ChunkInput(f"def handler_{i}(request): return request", i, i) for i in range(1500)],
        )
    project.close()
    server, tools = build_server(str(root))
    try:
        lists = tools.own.store._records.terms
        assert not lists.holds("code_fts", "request")
        tools.warm()
        deadline = time.monotonic() + 60
        while not lists.holds("code_fts", "request") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lists.holds("code_fts", "request")
        with tools.lock_of(tools.own):
            hits = tools.own.code_search("request handler", limit=3, fresh=False)
        assert hits and lists.answered >= 1
    finally:
        with tools.lock_of(tools.own):
            tools.own.close()


def test_web_requests_count_as_calls_and_a_closed_lore_reads_nothing_ahead(tmp_path):
    """`lore serve` shares the tools: a web request counts as a call (the
    server reads ahead only while none comes), and a Lore closed under a
    server's reading ahead is not opened again by it."""
    import anyio

    import lore
    from lore.interfaces.mcp import LoreTools
    from lore.interfaces.web.app import Backend

    root = tmp_path / "p"
    lore.init(root).close()
    tools = LoreTools(str(root))
    try:
        backend = Backend(tools)

        async def request() -> int:
            return await backend.call(lambda _lore: tools._calls)

        assert anyio.run(request) == 1 and tools._calls == 0
    finally:
        tools.own.close()
    assert tools.own.warm_up(lists=1) == 0
    assert tools.own._store is None
