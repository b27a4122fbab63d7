"""What only the PostgreSQL backend has: many projects and clones in one database,
row-level security with real roles, shared vectors, concurrent writers, moving
a project between backends. Each test gets a database of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import lore
from conftest import CLI, postgres_only
from lore.project import Project
from lore.storage import ChunkFilter, ChunkInput, MemoryFilter
from lore.storage.postgres import open_postgres

pytestmark = postgres_only


def url_env(url: str) -> dict[str, str]:
    return {"LORE_DATABASE_URL": url}


def make_project(root: Path, url: str, *, init: bool = True) -> CLI:
    root.mkdir(parents=True, exist_ok=True)
    runner = CLI(root)
    if init:
        runner("init", env=url_env(url))
    return runner


def add_deploys(runner: CLI, url: str) -> None:
    runner(
        "add",
        "--title",
        "Deploys",
        "--body",
        "Deploys run on Tuesdays after a green build.",
        env=url_env(url),
    )


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def sql(url: str, query: str, params: tuple | None = None) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def titles(hits: list[dict]) -> list[str]:
    return [h["title"] for h in hits]


# -- row-level security ---------------------------------------------------------------------


def test_rls_hides_private_rows_from_another_role_even_in_direct_sql(pg_database, tmp_path):
    server, url = pg_database
    suffix = uuid.uuid4().hex[:8]
    alice, bob = f"alice_{suffix}", f"bob_{suffix}"
    database = urlsplit(url).path.lstrip("/")
    for role in (alice, bob):
        server.sql(
            f"CREATE ROLE {role} LOGIN IN ROLE lore_user", f'GRANT CONNECT ON DATABASE "{database}" TO {role}'
        )
    alice_url = server.url(database, user=alice)
    bob_url = server.url(database, user=bob)

    project = make_project(tmp_path / "alice", alice_url)
    env = url_env(alice_url)
    project(
        "add", "--title", "Shared rollout rule", "--body", "Roll out behind a feature flag first.", env=env
    )
    (project.cwd / "src").mkdir()
    (project.cwd / "src/tmpdirs.py").write_text("def shared_tmp():\n    return '/tmp/shared'\n")
    project(
        "add",
        "--private",
        "--agent",
        "claude",
        "--title",
        "Alice private hunch",
        "--body",
        "The flaky test is caused by the shared tmp folder. See [[Shared rollout rule]].",
        "--file",
        "src/tmpdirs.py",
        env=env,
    )
    # Alice's own connection reads both; the application shows her private one to her agent.
    assert {r[0] for r in sql(alice_url, "SELECT title FROM lore.memories")} == {
        "Shared rollout rule",
        "Alice private hunch",
    }
    assert "Alice private hunch" in titles(
        project.json("search", "flaky test tmp folder", "--agent", "claude", env=env)
    )

    # Bob, a member of lore_user, runs SQL directly: no private row, in any table.
    assert [r[0] for r in sql(bob_url, "SELECT title FROM lore.memories")] == ["Shared rollout rule"]
    assert not sql(bob_url, "SELECT 1 FROM lore.chunks WHERE text LIKE '%flaky%'")
    assert not sql(bob_url, "SELECT 1 FROM lore.files WHERE path LIKE '.lore/local/%'")
    assert not sql(bob_url, "SELECT 1 FROM lore.clone_files WHERE path LIKE '.lore/local/%'")
    assert sql(alice_url, "SELECT count(*) FROM lore.links") == [(1,)]  # her private memory's link
    assert sql(bob_url, "SELECT count(*) FROM lore.links") == [(0,)]
    # Her private memory's code anchor (the file it names) too: the anchors table had no policy.
    assert sql(alice_url, "SELECT path FROM lore.anchors") == [("src/tmpdirs.py",)]
    assert sql(bob_url, "SELECT count(*) FROM lore.anchors") == [(0,)]
    # …and cannot change or delete it either.
    assert sql(
        bob_url,
        "WITH d AS (DELETE FROM lore.chunks WHERE owner_role <> '' RETURNING 1) SELECT count(*) FROM d",
    ) == [(0,)]
    with pytest.raises(Exception, match="row-level security"):
        sql(
            bob_url,
            "INSERT INTO lore.files(project_id, path, kind, sha256, owner_role) "
            "SELECT id, 'x.md', 'memory', 'x', %s FROM lore.projects LIMIT 1",
            (alice,),
        )
    # The superuser (the table owner) still sees everything: the private row exists.
    assert sql(url, "SELECT owner_role FROM lore.memories WHERE title = 'Alice private hunch'") == [(alice,)]


# -- many projects, clones, global memories ----------------------------------------------------


def test_global_memories_reach_other_projects_only_with_include_global(pg_database, tmp_path):
    _server, url = pg_database
    env = url_env(url)
    a = make_project(tmp_path / "alpha", url)
    b = make_project(tmp_path / "beta", url)
    a(
        "add",
        "--title",
        "Alpha local rule",
        "--body",
        "Alpha services retry three times on timeouts.",
        env=env,
    )
    memory = tmp_path / "alpha/.lore/memory/company-wide.md"
    memory.write_text(
        "---\nsubject: Company wide timeout policy\ntype: convention\noccurred_at: 2026-01-05T10:00:00Z\nis_global: true\n---\n"
        "Every outbound HTTP call sets a timeout of ten seconds.\n"
    )
    a("index", "--no-code", "--no-embed", env=env)
    hits = b.json("search", "outbound HTTP timeout policy", env=env)
    assert titles(hits) == ["Company wide timeout policy"]
    assert hits[0]["path"] == "@alpha/.lore/memory/company-wide.md"  # another project's, never a local path
    assert "Alpha local rule" not in titles(b.json("search", "retry timeouts", env=env))
    beta = open_postgres(Project.find(tmp_path / "beta"), url)
    assert beta.memories(MemoryFilter(include_global=False)) == []
    assert [m.title for m in beta.memories(MemoryFilter(include_global=True))] == [
        "Company wide timeout policy"
    ]
    assert b.json("search", "outbound HTTP timeout policy", env=env) == hits
    projects = {p["name"]: p for p in beta.projects()}
    assert projects["alpha"]["global_memories"] == 1 and projects["beta"]["current"]


def test_a_memory_is_made_global_from_the_cli_the_http_api_and_python(pg_database, tmp_path, monkeypatch):
    """003: a memory can be marked global from any interface; every one reaches the other project."""
    import anyio

    from lore.interfaces.web.app import build_app
    from test_mcp import run_async, stdio_session
    from web_helpers import client

    _server, url = pg_database
    env = url_env(url)
    monkeypatch.setenv("LORE_DATABASE_URL", url)  # the in-process API and Python calls
    alpha, beta = make_project(tmp_path / "alpha", url), make_project(tmp_path / "beta", url)
    alpha("add", "--global", "--title", "CLI rule", "--body", "Zebra crossings need a reviewer.", env=env)

    async def over_http() -> int:
        async with client(build_app(str(tmp_path / "alpha"))) as c:
            body = {"title": "API rule", "body": "Zebra stripes mark deprecated flags.", "is_global": True}
            return (await c.post("/api/memories", json=body)).status_code

    assert anyio.run(over_http) == 201
    with lore.open(tmp_path / "alpha") as handle:
        handle.add(title="Python rule", body="Zebra tests run nightly.", is_global=True)
        handle.add(title="Alpha only", body="Zebra is alpha's mascot.")
        later = handle.add(title="MCP rule", body="Zebra fixtures live in conftest.").id

    async def over_mcp() -> None:  # MCP marks an existing memory global (edit_memory's set)
        async with stdio_session(tmp_path / "alpha") as s:
            await s.ok("edit_memory", id=later, operation="set", target="is_global", value="true")

    run_async(over_mcp)
    found = beta.json("search", "zebra", env=env)
    assert sorted(titles(found)) == ["API rule", "CLI rule", "MCP rule", "Python rule"]
    assert all(hit["path"].startswith("@alpha/") for hit in found)


def test_the_tables_owner_reindexing_a_clone_leaves_its_roles_private_memories_theirs(pg_database, tmp_path):
    """The superuser's `lore index --force` in a clone holding a role's private
    memory wrote a second row under its own name: the role was then refused by
    every command in its own clone, and doctor called the file its own duplicate."""
    server, url = pg_database
    bob = f"bob_{uuid.uuid4().hex[:8]}"
    database = urlsplit(url).path.lstrip("/")
    server.sql(
        f"CREATE ROLE {bob} LOGIN IN ROLE lore_user", f'GRANT CONNECT ON DATABASE "{database}" TO {bob}'
    )
    bob_url = server.url(database, user=bob)
    project = make_project(tmp_path / "bob", bob_url)
    project(
        "add", "--title", "Shared note", "--body", "A shared note for the whole team.", env=url_env(bob_url)
    )
    project(
        "add",
        "--private",
        "--agent",
        "bob",
        "--title",
        "Bob secret",
        "--body",
        "Bob's walrus plan.",
        env=url_env(bob_url),
    )
    project("index", "--force", "--no-code", "--no-embed", env=url_env(url))  # the administrator
    counts = sql(url, "SELECT path, count(*) FROM lore.files WHERE kind = 'memory' GROUP BY path")
    assert counts and all(n == 1 for _, n in counts), counts
    assert titles(project.json("search", "walrus", "--agent", "bob", env=url_env(bob_url))) == ["Bob secret"]
    assert "duplicate" not in project("doctor", env=url_env(url), ok=False).stdout


def test_clones_share_committed_memories_and_sync_three_way(pg_database, tmp_path, git_env):
    _server, url = pg_database
    env = url_env(url)
    origin = tmp_path / "origin"
    one = make_project(origin, url)
    git(origin, "init", "-q", "-b", "main")
    one(
        "add",
        "--title",
        "Deploy on Tuesdays",
        "--body",
        "Production deploys happen on Tuesday mornings.",
        env=env,
    )
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memories")
    git(tmp_path, "clone", "-q", str(origin), "second")
    two = CLI(tmp_path / "second")
    # The clone is the same project ([project] id in the committed config): one memory, not two.
    assert titles(two.json("search", "deploy Tuesday", env=env)) == ["Deploy on Tuesdays"]
    project_ids = sql(url, "SELECT DISTINCT project_id FROM lore.memories")
    assert len(project_ids) == 1 and len(sql(url, "SELECT 1 FROM lore.memories")) == 1
    assert len(sql(url, "SELECT 1 FROM lore.clones")) == 2

    # A memory written in clone one is found in clone two before any pull.
    one(
        "add",
        "--title",
        "Freeze before holidays",
        "--body",
        "No deploys in the last week of December.",
        env=env,
    )
    assert titles(two.json("search", "holidays freeze December", env=env))[0] == "Freeze before holidays"
    # Clone two still has the old file on disk; its sync must not resurrect what one deletes.
    path = next((origin / ".lore/memory").glob("*deploy-on-tuesdays*.md"))
    path.unlink()
    assert "Deploy on Tuesdays" not in titles(one.json("search", "deploy Tuesday", env=env))
    assert "Deploy on Tuesdays" not in titles(two.json("search", "deploy Tuesday", env=env))
    # An edit in clone two (its own change) is pushed and seen by clone one.
    mine = next((tmp_path / "second/.lore/memory").glob("*deploy-on-tuesdays*.md"))
    mine.write_text(mine.read_text().replace("Tuesday mornings", "Wednesday mornings after standup"))
    two("list", env=env)  # any command syncs clone two's files first
    assert "Deploy on Tuesdays" in titles(one.json("search", "Wednesday standup", env=env))
    # Syncing again and again changes nothing: no duplicates.
    for runner in (one, two, one):
        runner("index", "--no-code", "--no-embed", env=env)
    counts = sql(url, "SELECT path, count(*) FROM lore.files WHERE kind = 'memory' GROUP BY path")
    assert counts and all(n == 1 for _, n in counts)


def test_a_dump_imported_in_one_clone_keeps_the_memories_only_another_clone_has(
    pg_database, tmp_path, git_env
):
    """The importing clone took the dump's memories without a file here for files it
    had deleted: its next command dropped them for every clone, and the clone that
    had them saw its base unchanged and never pushed them again."""
    _server, url = pg_database
    env = url_env(url)
    origin = tmp_path / "origin"
    one = make_project(origin, url)
    git(origin, "init", "-q", "-b", "main")
    one("add", "--title", "Note from one", "--body", "Written in clone one about apples.", env=env)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "memories")
    git(tmp_path, "clone", "-q", str(origin), "second")
    two = CLI(tmp_path / "second")
    two("add", "--title", "Note from two", "--body", "Written in clone two about bananas.", env=env)
    one(
        "add", "--title", "Local kiwi", "--body", "Clone one's own daily note on kiwis.", "--session", env=env
    )
    dump = origin / ".lore/local/index.jsonl.gz"
    one("db", "export", str(dump), env=env)
    imported = one("db", "import", str(dump), env=env)
    assert "drops" not in imported.stderr
    one("list", env=env)  # any command syncs clone one first
    for runner in (one, two):
        assert titles(runner.json("search", "bananas", "--mode", "bm25", env=env)) == ["Note from two"]
    # Imported in clone two, clone one's local memory has no file there: it goes (and is said).
    assert "drops it" in two("db", "import", str(dump), env=env).stderr
    two("list", env=env)
    assert titles(two.json("search", "kiwis", "--mode", "bm25", env=env)) == []
    assert titles(two.json("search", "bananas", "--mode", "bm25", env=env)) == ["Note from two"]


def test_show_says_where_a_memory_listed_from_another_clone_is(pg_database, tmp_path, git_env):
    """`lore list` in one clone lists what another clone wrote; `lore show` of it
    said "no such memory file; run `lore list`", which lists it."""
    _server, url = pg_database
    env = url_env(url)
    origin = tmp_path / "origin"
    one = make_project(origin, url)
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "lore")
    git(tmp_path, "clone", "-q", str(origin), "second")
    two = CLI(tmp_path / "second")
    added = one.json(
        "add", "--title", "Freeze in December", "--body", "No deploys in the last week.", env=env
    )
    assert added["id"] in {m["id"] for m in two.json("list", env=env)}
    shown = two("show", added["id"][:8], env=env, ok=False)
    assert shown.returncode == 1 and "its file is not in this clone" in shown.stderr
    assert "git pull" in shown.stderr
    # `db status` names the project as the database does, as `db projects` does (it gave
    # this clone's own idea of the name: here a [project] name edited in this clone only).
    config = tmp_path / "second/.lore/config.toml"
    config.write_text(config.read_text().replace("[project]\n", '[project]\nname = "my-copy"\n', 1))
    status = two.json("db", "status", env=env)["project"]
    (listed,) = [p for p in two.json("db", "projects", env=env) if p["id"] == status["id"]]
    assert status["name"] == listed["name"] != "my-copy"


def test_a_remotes_token_never_stays_in_the_shared_projects_table(pg_database, tmp_path, git_env):
    """A CI clone's remote (`https://x-access-token:ghp_…@github.com/…`) was kept as
    written in lore.projects, which every member of lore_user may read."""
    _server, url = pg_database
    env = url_env(url)
    root = tmp_path / "ci"
    runner = make_project(root, url, init=False)
    git(root, "init", "-q", "-b", "main")
    token = "ghp_" + "SuperSecretToken1234567890abcdefABCD"
    git(root, "remote", "add", "origin", f"https://x-access-token:{token}@github.com/acme/tok.git")
    runner("init", env=env)
    runner("add", "--title", "Tok", "--body", "A memory of the tokened clone.", env=env)
    rows = sql(url, "SELECT id, remote_url FROM lore.projects WHERE remote_url LIKE %s", ("%acme/tok%",))
    assert rows == [(rows[0][0], "https://github.com/acme/tok.git")]
    # A row an older Lore wrote with the token is rewritten when a clone opens it.
    sql(
        url,
        "UPDATE lore.projects SET remote_url = %s WHERE id = %s",
        (f"https://x-access-token:{token}@github.com/acme/tok.git", rows[0][0]),
    )
    runner("list", env=env)
    assert token not in str(sql(url, "SELECT remote_url FROM lore.projects"))


def test_a_copied_config_joining_another_repositorys_project_is_said(pg_database, tmp_path, git_env):
    """A repository made from a template that commits `.lore/config.toml` joined
    the template's project: it read and overwrote another team's memories, and
    nothing said so. A fork (same name, another owner) is the same project."""
    _server, url = pg_database
    env = url_env(url)
    first = tmp_path / "widgets"
    runner = make_project(first, url, init=False)
    git(first, "init", "-q", "-b", "main")
    git(first, "remote", "add", "origin", "https://github.com/acme/widgets.git")
    runner("init", env=env)
    runner("add", "--title", "Widget rule", "--body", "Widgets are blue by default.", env=env)
    for name, remote, said in (
        ("gadgets", "https://github.com/evil/gadgets.git", True),
        ("fork", "https://github.com/alice/widgets.git", False),
    ):
        other = tmp_path / name
        (other / ".lore").mkdir(parents=True)
        git(other, "init", "-q", "-b", "main")
        git(other, "remote", "add", "origin", remote)
        (other / ".lore/config.toml").write_text((first / ".lore/config.toml").read_text())
        listed = CLI(other)("list", env=env)
        assert ("is the repository github.com/acme/widgets" in listed.stderr) is said, listed.stderr


def test_serve_with_database_answers_from_the_shared_index(pg_database, tmp_path, git_env):
    """`lore serve --database URL` (a team server) reads the shared index: a memory
    another clone wrote is found through the HTTP API before this clone pulls it."""
    import json as json_
    import urllib.parse
    import urllib.request

    from web_helpers import Server

    _server, url = pg_database
    env = url_env(url)
    origin = tmp_path / "origin"
    one = make_project(origin, url)
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "start")  # the committed .lore/config.toml names the project
    git(tmp_path, "clone", "-q", str(origin), "served")
    one(
        "add",
        "--title",
        "Freeze before holidays",
        "--body",
        "No deploys in the last week of December.",
        env=env,
    )

    def search(server: Server) -> list[str]:
        query = urllib.parse.urlencode({"q": "holidays freeze December"})
        with urllib.request.urlopen(f"{server.url}/api/search?{query}", timeout=30) as response:
            return [hit["title"] for hit in json_.loads(response.read())]

    served = tmp_path / "served"
    team = Server(served, "--database", url, env={"LORE_DATABASE_URL": ""})
    try:
        assert search(team) == ["Freeze before holidays"]
    finally:
        team.stop()
    alone = Server(served, env={"LORE_DATABASE_URL": ""})  # the clone's own SQLite index: not there
    try:
        assert search(alone) == []
    finally:
        alone.stop()


def test_equal_code_is_embedded_and_stored_once_across_projects(pg_database, tmp_path):
    _server, url = pg_database
    env = url_env(url)
    code = textwrap.dedent(
        '''
        def retry_with_backoff(call, attempts=5):
            """Call `call` until it succeeds, doubling the wait each time."""
            delay = 0.1
            for _ in range(attempts):
                try:
                    return call()
                except TimeoutError:
                    time.sleep(delay)
                    delay *= 2
            raise TimeoutError("gave up")
        '''
    )
    reports = []
    for name in ("first", "second"):
        runner = make_project(tmp_path / name, url)
        (tmp_path / name / "retry.py").write_text(code)
        reports.append(runner.json("index", env=env))
    assert reports[0]["embedded"] >= 1 and reports[1]["embedded"] == 0  # the second project reuses them
    hashes = sql(url, "SELECT count(DISTINCT text_hash), count(*) FROM lore.chunks WHERE kind = 'code'")
    assert hashes[0][1] == 2 * hashes[0][0]  # a chunk row per project…
    assert sql(
        url,
        "SELECT count(*) FROM lore.embeddings e WHERE EXISTS (SELECT 1 FROM lore.chunks c "
        "WHERE c.kind = 'code' AND c.text_hash = e.text_hash)",
    ) == [(hashes[0][0],)]  # …one vector
    hits = CLI(tmp_path / "second").json("code", "retry with exponential backoff", env=env)
    assert hits[0]["file_path"] == "retry.py"
    # `lore index --reembed` in one project embeds all its texts again (shared vectors
    # included); the other project is left with every vector it needs, nothing pending.
    again = CLI(tmp_path / "first")("index", "--reembed", env=env)
    assert f"all {reports[0]['embedded']} texts re-embedded" in again.stdout
    assert CLI(tmp_path / "second").json("index", env=env)["embedded"] == 0
    assert sql(url, "SELECT count(*) FROM lore.embeddings") == [(hashes[0][0],)]


# -- search behaviour ------------------------------------------------------------------------------


def test_filtered_vector_search_is_never_short_and_matches_exact_search(pg_database, tmp_path):
    import numpy as np

    _server, url = pg_database
    project = Project.init(tmp_path / "vectors")[0]
    store = open_postgres(project, url)
    rng = np.random.default_rng(7)
    hashes, vectors = [], []
    with store.transaction():
        for i in range(400):
            folder = "rare" if i % 100 == 0 else "common"
            file_id = store.put_file(f"{folder}/m{i}.py", "code", f"sha{i}", 1, 1)
            store.put_chunks(
                file_id, "code", [ChunkInput(text=f"def f{i}(): return {i}", start_line=1, end_line=1)]
            )
    for text_hash, _ in store.pending_embeddings("test-model", 1000):
        hashes.append(text_hash)
        vectors.append(rng.standard_normal(384).astype(np.float32))
    matrix = np.stack(vectors)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    with store.transaction():
        store.put_embeddings("test-model", hashes, matrix)
    query = matrix[5]
    # Four chunks live under rare/: a filtered search for 10 returns all four, nearest first.
    found = store.vector_search("code", "test-model", query, ChunkFilter(directories=["rare"]), 10)
    assert len(found) == 4
    rare = {c.chunk_id for c in store.chunks("code", [i for i, _ in found])}
    assert {c.path for c in store.chunks("code", list(rare))} == {f"rare/m{i}.py" for i in (0, 100, 200, 300)}
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    # Unfiltered: HNSW's top 10 agree with exact search.
    top = store.vector_search("code", "test-model", query, None, 10)
    exact = np.sort(matrix @ query)[::-1][:10]
    assert np.allclose([s for _, s in top], exact, atol=1e-5)


def test_bm25_scores_equal_sqlite_fts5(pg_database, tmp_path):
    """The same memories in both backends rank alike: PostgreSQL computes FTS5's BM25."""
    from lore.memory.sync import sync_memories
    from lore.storage.sqlite import SQLiteStore

    _server, url = pg_database
    project = Project.init(tmp_path / "bm25")[0]
    texts = [
        ("Refresh tokens", "The OAuth refresh_token is rotated on every use; refresh failures log out."),
        ("Timeouts", "Outbound calls time out after ten seconds; retries back off exponentially."),
        ("Deploys", "Deploys run on Tuesdays. A deploy needs a green build and a rollback plan."),
        ("Tokens in logs", "Never log a token. Tokens are redacted by the logging filter before output."),
        ("Caching", "Responses are cached for five minutes; the cache key includes the tenant."),
    ]
    with lore.open(project.root) as handle:
        for title, body in texts:
            handle.add(title=title, body=body, type="convention")
    sqlite, pg = SQLiteStore(project.index_path), open_postgres(project, url)
    sync_memories(project, sqlite)
    sync_memories(project, pg)
    for terms in (["refresh", "token"], ["deploy", "rollback"], ["tokens", "logging", "filter"], ["tenant"]):
        a = [(c.path, round(s, 6)) for c, s in sqlite.lexical_search("memory", terms, None, 10)]
        b = [(c.path, round(s, 6)) for c, s in pg.lexical_search("memory", terms, None, 10)]
        assert a == b, terms
    sqlite.close()


def test_repair_recounts_drifted_bm25_statistics_and_keeps_the_rows(pg_database, tmp_path):
    """`lore index --force` on PostgreSQL: BM25 statistics that drifted from the
    chunks are recounted, so scores are what they were; nothing is dropped."""
    from lore.memory.sync import sync_memories

    _server, url = pg_database
    project = Project.init(tmp_path / "repair")[0]
    with lore.open(project.root) as handle:
        handle.add(title="Deploys", body="Deploys run on Tuesdays after a green build.", type="convention")
        handle.add(title="Rollbacks", body="A deploy without a rollback plan waits.", type="convention")
        handle.add(title="Caching", body="Responses are cached for five minutes.", type="convention")
    pg = open_postgres(project, url)
    sync_memories(project, pg)

    def scores() -> list[tuple[str, float]]:
        return [(c.path, round(s, 6)) for c, s in pg.lexical_search("memory", ["deploy"], None, 10)]

    before, memories = scores(), len(pg.memories())
    assert len(before) == 2
    assert pg.repair() is False  # nothing drifted
    sql(url, "UPDATE lore.chunk_stats SET docs = docs + 1000, tokens = tokens * 7")
    assert scores() != before
    assert pg.repair() is True
    assert scores() == before
    assert len(pg.memories()) == memories
    assert pg.repair() is False


# -- moving between backends ------------------------------------------------------------------------


def test_export_import_between_sqlite_and_postgres_gives_identical_results(pg_database, tmp_path, git_env):
    _server, url = pg_database
    root = tmp_path / "moving"
    runner = make_project(root, url, init=False)
    sqlite_env = {"LORE_DATABASE_URL": ""}
    runner("init", env=sqlite_env)
    git(root, "init", "-q", "-b", "main")
    (root / "billing.py").write_text(
        'def charge(customer, amount):\n    """Charge a customer\'s card; retries on network errors."""\n'
        "    return gateway.charge(customer.card, amount)\n\n\ndef refund(payment):\n"
        '    """Refund a payment in full."""\n    return gateway.refund(payment.id)\n'
    )
    (root / "auth.py").write_text(
        'def rotate_refresh_token(session):\n    """Issue a new refresh token and revoke the old one."""\n'
        "    session.token = new_token()\n    return session\n"
    )
    for title, body in (
        ("Charges retry", "Card charges retry three times on network errors, then fail loudly."),
        ("Refresh token rotation", "Refresh tokens rotate on every use; the old one is revoked."),
        ("Refund policy", "Refunds are always full; partial refunds go through support."),
    ):
        runner("add", "--title", title, "--body", body, "--type", "decision", env=sqlite_env)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Billing and auth with their decisions")
    runner("index", env=sqlite_env)

    queries = ["card charge network errors", "rotate refresh token", "refunds"]

    def results(env: dict[str, str]) -> list:
        out = []
        for q in queries:
            out.append([(h["path"], h["score"]) for h in runner.json("search", q, env=env)])
            out.append([(h["file_path"], h["start_line"]) for h in runner.json("code", q, env=env)])
            out.append([h["sha"] for h in runner.json("history", q, env=env)])
        return out

    on_sqlite = results(sqlite_env)
    assert all(on_sqlite[::3])
    dump = tmp_path / "index.jsonl.gz"
    exported = runner.json("db", "export", str(dump), env=sqlite_env)
    assert exported["vectors"] >= 6 and oct(dump.stat().st_mode & 0o777) == "0o600"
    imported = runner.json("db", "import", str(dump), env=url_env(url))
    assert imported["files"] == exported["files"] and imported["vectors"] == exported["vectors"]
    assert results(url_env(url)) == on_sqlite
    # Nothing was embedded again after the move.
    assert runner.json("index", env=url_env(url))["embedded"] == 0

    # And back: PostgreSQL → a fresh SQLite index.
    back = tmp_path / "back.jsonl.gz"
    runner("db", "export", str(back), env=url_env(url))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root / '.lore/index.db'}{suffix}").unlink(missing_ok=True)
    runner("db", "import", str(back), env=sqlite_env)
    assert results(sqlite_env) == on_sqlite


# -- the database: upgrades, status, concurrency ---------------------------------------------------------


def test_db_upgrade_runs_concurrently_and_status_reports_each_source(database_backend, tmp_path, git_env):
    server = database_backend
    name = f"fresh_{uuid.uuid4().hex[:8]}"
    server.sql(f'CREATE DATABASE "{name}"')
    url = server.url(name)
    try:
        # A role that may connect but not create: told what it lacks (it was told to join
        # lore_user, which it may already be in, and which does not give CREATE).
        outsider = f"nocreate_{uuid.uuid4().hex[:8]}"
        server.sql(f"CREATE ROLE {outsider} LOGIN", f'GRANT CONNECT ON DATABASE "{name}" TO {outsider}')
        refused = subprocess.run(
            [sys.executable, "-m", "lore", "db", "upgrade", "--database", server.url(name, user=outsider)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "needs CREATE on the database" in refused.stderr and "lore_user" not in refused.stderr
        # Outside any clone: the database named by --database, or by LORE_DATABASE_URL as docs/postgres.md sets it.
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "lore", "db", "upgrade", *given, "--json"],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **env},
            )
            for given, env in ((["--database", url], {}), ([], {"LORE_DATABASE_URL": url}))
        ]
        reports = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
        assert all(p.returncode == 0 for p in procs)
        assert sorted(r["from_version"] for r in reports) == [0, reports[0]["schema_version"]]
        root = tmp_path / "status"
        runner = make_project(root, url)
        git(root, "init", "-q", "-b", "main")
        (root / "main.py").write_text("print('hello')\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "first")
        runner(
            "add", "--title", "Hello", "--body", "The program greets the world politely.", env=url_env(url)
        )
        runner("index", "--no-embed", env=url_env(url))
        status = runner.json("db", "status", env=url_env(url))
        sources = {s["kind"]: s for s in status["clones"][0]["sources"]}
        assert {k: s["status"] for k, s in sources.items()} == {
            "code": "completed",
            "commit": "completed",
            "memory": "completed",
        }
        assert sources["code"]["last_commit_hash"] == git(root, "rev-parse", "HEAD").strip()
        assert all(s["last_indexed_at"].endswith("Z") for s in sources.values())  # UTC, as every time
        assert status["clones"][0]["last_seen_at"].endswith("Z")
        assert status["schema_version"] == status["schema_version_expected"]
        assert status["server"]["shared_buffers_bytes"] >= 128 * 2**10
        assert 0 < status["server"]["chunks_bytes"] < status["server"]["shared_buffers_bytes"]
        assert "shared_buffers" not in runner("db", "status", env=url_env(url)).stdout
    finally:
        from lore.storage.postgres.connection import close

        close(url)
        server.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


WRITER = textwrap.dedent(
    """
    import sys, lore
    root, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with lore.open(root) as project:
        for i in range(count):
            project.add(title=f"Note {worker}-{i}", body=f"Written by worker {worker}, number {i}.",
                        tags=["load"])
            if i % 3 == 0:
                project.index_code()
        project.index_code()
        project.embed()
    """
)


def test_eight_processes_write_two_projects_nothing_lost_no_duplicates(pg_database, tmp_path, git_env):
    _server, url = pg_database
    clones = []
    for name in ("red", "blue"):
        origin = tmp_path / name
        make_project(origin, url)
        git(origin, "init", "-q", "-b", "main")
        for i in range(6):
            (origin / f"mod{i}.py").write_text(
                f"def handler_{i}(event):\n    return event.get('{name}{i}')\n"
            )
        git(origin, "add", "-A")
        git(origin, "commit", "-qm", f"{name} code")
        git(tmp_path, "clone", "-q", str(origin), f"{name}-2")
        clones += [origin, tmp_path / f"{name}-2"]
    per_worker = 5
    env = {**os.environ, "LORE_DATABASE_URL": url, "LORE_AGENT": ""}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(clones[w % 4]), str(w), str(per_worker)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    # Each project holds exactly the notes of its four writers (two per clone), once.
    for name, workers in (("red", (0, 1, 4, 5)), ("blue", (2, 3, 6, 7))):
        for clone in (tmp_path / name, tmp_path / f"{name}-2"):
            store = open_postgres(Project.find(clone), url)
            got = sorted(m.title for m in store.memories(MemoryFilter()))
            assert got == sorted(f"Note {w}-{i}" for w in workers for i in range(per_worker))
    assert sql(
        url, "SELECT count(*) FROM (SELECT 1 FROM lore.chunks GROUP BY file_id, ord HAVING count(*) > 1) d"
    ) == [(0,)]
    # BM25 statistics kept by triggers agree with the rows.
    assert sql(
        url,
        "SELECT count(*) FROM lore.chunk_stats s WHERE s.docs <> (SELECT count(*) FROM lore.chunks c "
        "WHERE c.project_id = s.project_id AND coalesce(c.clone_id, 0) = s.clone_key AND c.kind = s.kind)",
    ) == [(0,)]
    assert sql(
        url,
        "SELECT count(*) FROM lore.chunks c WHERE NOT EXISTS (SELECT 1 FROM lore.embeddings e "
        "WHERE e.text_hash = c.text_hash)",
    ) == [(0,)]


def test_a_memory_too_large_for_one_tsvector_is_indexed_and_found(pg_database, tmp_path):
    """PostgreSQL refuses a tsvector over 1 MiB, and a memory of one section is
    one chunk: its lexical text is cut to fit, so the sync (and with it every
    read of the project) no longer fails; its first words are found."""
    _server, url = pg_database
    project = Project.init(tmp_path / "huge")[0]
    words = [f"w{i:x}q" for i in range(250_000)]  # unique words: the largest tsvector per byte
    (project.memory_dir / "huge.md").write_text(
        "---\ntitle: Huge\noccurred_at: 2026-02-10T15:30:00Z\n---\n" + " ".join(words) + "\n"
    )
    with lore.open(project.root) as handle:
        handle.add(title="Small", body="A small memory beside it.", type="convention")
    pg = open_postgres(project, url)
    from lore.memory.sync import sync_memories

    sync_memories(project, pg)
    assert {m.title for m in pg.memories()} == {"Huge", "Small"}
    assert [c.title for c, _ in pg.lexical_search("memory", [words[10]], None, 5)] == ["Huge"]
    assert [c.title for c, _ in pg.lexical_search("memory", ["beside"], None, 5)] == ["Small"]
    pg.close()


def test_a_lookup_with_a_nul_character_finds_nothing_rather_than_failing(pg_database, tmp_path):
    """PostgreSQL text cannot hold NUL: an id or path with one (MCP and the
    HTTP API pass them through) finds nothing, as on SQLite, and a filter
    value with one is a usage error on both (no name holds one), instead of
    an 'index error' that sends the user to rebuild the index."""
    from lore.errors import NotFound

    project = lore.init(tmp_path / "nul")
    try:
        added = project.add(title="Deploys", body="Deploys run on Tuesdays after a green build.", type="fact")
        for key in ("\x00", added.id[:8] + "\x00"):
            with pytest.raises(NotFound):
                project.show(key)
        with pytest.raises(lore.UsageError, match="NUL"):
            project.code_search("deploy", extensions=["py\x00"], directories=["src\x00"])
        with pytest.raises(lore.UsageError, match="NUL"):
            project.list(tags=["a\x00"])
        assert [h.title for h in project.search("deploys tuesdays")] == ["Deploys"]
    finally:
        project.close()


def test_a_connection_lost_mid_command_is_one_line_to_try_again(pg_database, tmp_path):
    """The server drops the connection in the middle of a sync's transaction (a
    restart, a killed backend): the command fails in one line, 'lost the
    connection … try again', not an 'index error' sending the user to rebuild,
    with no pool warnings; once the server is fine the next command works and
    the memory is there."""
    _server, url = pg_database
    runner = make_project(tmp_path / "lost", url)
    runner(
        "add", "--title", "Before", "--body", "Deploys run on Tuesdays after a green build.", env=url_env(url)
    )
    sql(
        url,
        "CREATE FUNCTION public.drop_connection() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NULL; END $$",
    )
    sql(
        url,
        "CREATE TRIGGER drop_connection BEFORE INSERT ON lore.chunks "
        "FOR EACH STATEMENT EXECUTE FUNCTION public.drop_connection()",
    )
    memory = tmp_path / "lost" / ".lore" / "memory" / "rollbacks.md"
    memory.write_text(
        "---\ntitle: Rollbacks\noccurred_at: 2026-02-10T15:30:00Z\n---\nA rollback plan first.\n"
    )
    failed = runner("index", ok=False, env=url_env(url))
    assert failed.returncode != 0
    assert failed.stderr.startswith("lore: error: lost the connection to PostgreSQL (terminating connection")
    assert failed.stderr.rstrip().endswith("try again") and failed.stderr.count("\n") == 1, failed.stderr
    sql(url, "DROP TRIGGER drop_connection ON lore.chunks")
    found = runner.json("search", "rollback plan", env=url_env(url))
    assert "Rollbacks" in titles(found)


def test_a_role_without_rights_is_told_which_grant_it_needs(pg_database, tmp_path):
    """A role that is not a member of lore_user, or one meeting another role's
    private rows in a shared clone, gets one line naming the cause, not an
    'index error' that sends the user to rebuild the index."""
    server, url = pg_database
    suffix = uuid.uuid4().hex[:8]
    database = urlsplit(url).path.lstrip("/")
    outsider, alice, bob = f"outsider_{suffix}", f"alice_{suffix}", f"bob_{suffix}"
    server.sql(f"CREATE ROLE {outsider} LOGIN", f'GRANT CONNECT ON DATABASE "{database}" TO {outsider}')
    for role in (alice, bob):
        server.sql(
            f"CREATE ROLE {role} LOGIN IN ROLE lore_user", f'GRANT CONNECT ON DATABASE "{database}" TO {role}'
        )
    runner = make_project(tmp_path / "proj", url)
    refused = runner("search", "deploy", ok=False, env=url_env(server.url(database, user=outsider)))
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1, refused.stderr
    assert "GRANT lore_user TO" in refused.stderr and "index --force" not in refused.stderr

    alice_env = url_env(server.url(database, user=alice))
    runner(
        "--agent",
        "alice",
        "add",
        "--private",
        "--title",
        "Alice hunch",
        "--body",
        "The flaky test shares a tmp folder.",
        env=alice_env,
    )
    refused = runner("search", "flaky", ok=False, env=url_env(server.url(database, user=bob)))
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1, refused.stderr
    assert "another role's private memories" in refused.stderr and "index --force" not in refused.stderr
    assert "Alice hunch" in titles(runner.json("--agent", "alice", "search", "flaky", env=alice_env))


def test_a_password_given_as_a_url_parameter_is_never_shown(pg_database, tmp_path):
    """libpq also reads a password from ``?password=``: `lore db status` printed it,
    a team server's /api/stats showed it to every user, and config.toml holding
    it drew no warning (the ``user:pw@`` form was masked and warned of)."""
    _, url = pg_database
    secret = "Sup3rS3cretPw"  # the socket's trust login ignores it
    with_password = f"{url}{'&' if '?' in url else '?'}password={secret}"
    runner = make_project(tmp_path / "proj", url)
    shown = runner("db", "status", "--database", with_password)
    assert secret not in shown.stdout + shown.stderr and "password=***" in shown.stdout
    assert secret not in json.dumps(runner.json("stats", env=url_env(with_password)))
    config = runner.cwd / ".lore/config.toml"
    config.write_text(
        config.read_text().replace(
            "[index]\n", f'[index]\nbackend = "postgres"\ndatabase_url = "{with_password}"\n', 1
        )
    )
    listed = runner("list", env={"LORE_DATABASE_URL": ""})
    assert "holds a password in clear" in listed.stderr and secret not in listed.stderr


def test_a_role_revoked_while_its_pool_is_open_is_named_as_the_cause(pg_database):
    """A team server's user whose role was revoked meanwhile: their requests
    waited for a connection, then said "lost the connection to PostgreSQL";
    only the server's log said why."""
    from lore.errors import StorageError
    from lore.storage.postgres.connection import close, pool

    server, url = pg_database
    database = urlsplit(url).path.lstrip("/")
    suffix = uuid.uuid4().hex[:8]
    login, alice = f"login_{suffix}", f"alice_{suffix}"
    server.sql(
        f"CREATE ROLE {login} LOGIN",
        f'GRANT CONNECT ON DATABASE "{database}" TO {login}',
        f"CREATE ROLE {alice} IN ROLE lore_user",
        f"GRANT {alice} TO {login}",
    )
    login_url = server.url(database, user=login)
    try:
        lending = pool(login_url, alice)
        with lending.connection() as conn:
            assert conn.execute("SELECT current_user").fetchone() == (alice,)
        server.sql(
            f"REVOKE {alice} FROM {login}",
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{login}'",
        )
        with pytest.raises(StorageError, match=f'permission denied to set role "{alice}"'):
            with lending.connection(timeout=1):
                pass
    finally:
        close(login_url)


def test_a_statement_the_server_cancels_is_one_line_to_try_again(pg_database, tmp_path):
    """A statement cancelled by the server (a lock held too long, a statement
    timeout) is said as such, in one line, not as a lost connection nor an
    index to rebuild; the next command works."""
    import psycopg

    _server, url = pg_database
    runner = make_project(tmp_path / "slow", url)
    add_deploys(runner, url)
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE lore.chunks IN ACCESS EXCLUSIVE MODE")
        slow = runner("search", "deploys", ok=False, env={**url_env(url), "PGOPTIONS": "-c lock_timeout=300"})
    assert slow.returncode != 0 and slow.stderr.count("\n") == 1, slow.stderr
    assert slow.stderr.startswith("lore: error: PostgreSQL did not complete the request (canceling statement")
    assert "lost the connection" not in slow.stderr and "index --force" not in slow.stderr
    assert "Deploys" in titles(runner.json("search", "deploys", env=url_env(url)))


def test_a_statement_waits_for_a_lock_30_s_unless_a_limit_was_set(pg_database, monkeypatch):
    """Lore set no lock_timeout: a command (a team server's request) waited as
    long as another session held a table lock. It now waits 30 s, as SQLite's
    busy timeout; a limit the role, the database or PGOPTIONS set is kept."""
    from lore.storage.postgres import connection

    _server, url = pg_database
    for options, expected in ((None, "30s"), ("-c lock_timeout=300", "300ms")):
        connection.close(url)
        if options is None:
            monkeypatch.delenv("PGOPTIONS", raising=False)
        else:
            monkeypatch.setenv("PGOPTIONS", options)
        with connection.pool(url).connection() as conn:
            assert conn.execute("SHOW lock_timeout").fetchone()[0] == expected
        conn = connection.connect(url)
        try:
            assert conn.execute("SHOW lock_timeout").fetchone()[0] == expected
        finally:
            conn.close()
    connection.close(url)


def test_a_process_connects_once_to_open_its_pool(pg_database):
    """Lore connected to fail fast with the server's own reason, closed that
    connection and let the pool open another: two server processes,
    authentications and rounds of settings per command. The checked
    connection is now the pool's first."""
    import time

    from lore.storage.postgres import connection

    server, url = pg_database
    name = urlsplit(url).path.lstrip("/")

    def sessions() -> int:  # counted by the server when a session ends; read from another database
        return sql(
            server.url("postgres"), "SELECT sessions FROM pg_stat_database WHERE datname = %s", (name,)
        )[0][0]

    before = sessions()
    with connection.pool(url).connection() as conn:
        assert conn.execute("SELECT current_setting('search_path')").fetchone()[0].startswith("lore")
    connection.close(url)
    deadline = time.monotonic() + 10
    while sessions() == before:
        assert time.monotonic() < deadline, "the closed session was never counted"
        time.sleep(0.05)
    time.sleep(0.5)  # a second session, had there been one, is counted by now
    assert sessions() - before == 1


def test_connections_the_server_closed_while_idle_are_replaced_not_lent(pg_database, tmp_path, monkeypatch):
    """After a server restart (here: every backend terminated) a long-running
    process (a team server) answers its next request: the pool's dead
    connections are replaced instead of failing one request each."""
    import time

    _server, url = pg_database
    monkeypatch.setenv("LORE_DATABASE_URL", url)
    project = lore.init(tmp_path / "restart")
    try:
        project.add(title="Deploys", body="Deploys run on Tuesdays after a green build.", type="fact")
        assert [h.title for h in project.search("deploys tuesdays")] == ["Deploys"]
        pids = [
            r[0]
            for r in sql(
                url,
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
        ]
        assert pids
        sql(url, "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
        deadline = time.monotonic() + 10
        while sql(url, "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for _ in range(3):  # each read borrows a pooled connection
            assert [h.title for h in project.search("deploys tuesdays")] == ["Deploys"]
    finally:
        project.close()


def test_an_index_run_killed_midway_is_not_shown_as_indexing_for_ever(pg_database, tmp_path):
    """`lore index` marks a source 'indexing' (for other sessions) and 'completed'
    at commit; a process killed in between left 'indexing' until that source
    next changed. `lore db status` tells a running writer (it holds the clone's
    lock) from one that is gone."""
    import signal
    import time

    _server, url = pg_database
    runner = make_project(tmp_path / "killed", url)
    add_deploys(runner, url)

    def memory_status() -> dict:
        clones = runner.json("db", "status", env=url_env(url))["clones"]
        return next(s for c in clones for s in c["sources"] if s["kind"] == "memory")

    sql(
        url,
        "CREATE FUNCTION public.stall() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$",
    )
    sql(
        url,
        "CREATE TRIGGER stall BEFORE INSERT ON lore.chunks FOR EACH STATEMENT EXECUTE FUNCTION public.stall()",
    )
    memory = tmp_path / "killed" / ".lore" / "memory" / "rollbacks.md"
    memory.write_text(
        "---\ntitle: Rollbacks\noccurred_at: 2026-02-10T15:30:00Z\n---\nA rollback plan first.\n"
    )
    indexing = subprocess.Popen(
        [sys.executable, "-m", "lore", "index"],
        cwd=tmp_path / "killed",
        env={**os.environ, **url_env(url)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not sql(url, "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO chunks%%'"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert memory_status()["status"] == "indexing"  # its writer is at work
    finally:
        indexing.send_signal(signal.SIGKILL)
        indexing.wait()
    sql(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'INSERT INTO chunks%%'")
    deadline = time.monotonic() + 10
    while sql(url, "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO chunks%%'"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    memory.unlink()  # so the next `lore index` changes nothing and leaves the status as it is
    sql(url, "DROP TRIGGER stall ON lore.chunks")
    runner("index", env=url_env(url))
    status = memory_status()
    assert status["status"] == "failed" and status["error_message"].startswith("interrupted"), status


def test_a_frequent_term_scores_candidates_but_adds_none(pg_database, tmp_path, monkeypatch):
    """As on SQLite, a term in most chunks no longer makes every search score
    most of the index: rows the rarer terms find rank and score as the full OR
    would, and a short answer is filled from the full OR."""
    from lore.storage.postgres import search as pg_search

    _server, url = pg_database
    project = Project.init(tmp_path / "scale")[0]
    store = open_postgres(project, url)
    with store.transaction():
        for i in range(60):
            text = "handler request " + ("checkout basket " if i % 10 == 0 else "") + f"item{i}"
            file_id = store.put_file(f"src/m{i}.py", "code", f"sha{i}", 1, 1)
            store.put_chunks(file_id, "code", [ChunkInput(text=text, start_line=1, end_line=1)])
    sql(url, "ANALYZE lore.chunks")
    exact = store.lexical_search("code", ["handler", "checkout"], None, 10)
    assert len(exact) == 10  # 60 chunks are below FREQUENT_MIN_DOCS: every term brings candidates
    monkeypatch.setattr(pg_search, "FREQUENT_MIN_DOCS", 20)  # now "handler" (in all 60) is frequent
    fresh = open_postgres(project, url)
    plan = fresh._candidate_terms("code", fresh._term_queries(["handler", "checkout"]), 60)
    assert (plan.matching, plan.frequent, plan.estimated_df) == ([1], {0}, {})
    counted = fresh.lexical_search("code", ["handler", "checkout"], None, 6)
    assert [(c.path, round(s, 9)) for c, s in counted] == [(c.path, round(s, 9)) for c, s in exact[:6]]
    assert all("checkout" in c.text for c, _ in counted)
    filled = fresh.lexical_search("code", ["handler", "checkout"], None, 10)  # 6 candidates: short
    assert [c.path for c, _ in filled] == [c.path for c, _ in exact]
    # Beyond EXACT_LEXICAL_DOCS the frequent term's document frequency is the planner's estimate.
    monkeypatch.setattr(pg_search, "EXACT_LEXICAL_DOCS", 0)
    monkeypatch.setattr(pg_search, "COMMON_TERM_ROWS", 30)
    scaled = open_postgres(project, url)
    assert scaled._candidate_terms("code", scaled._term_queries(["handler", "checkout"]), 60).estimated_df
    pruned = scaled.lexical_search("code", ["handler", "checkout"], None, 6)
    assert [c.path for c, _ in pruned] == [c.path for c, _ in exact[:6]]
    # Every term frequent: the rarest alone finds candidates, and the search still answers.
    only_common = scaled.lexical_search("code", ["handler", "request"], None, 5)
    assert len(only_common) == 5


def test_a_local_server_restarts_with_settings_read_only_at_start():
    """The benchmarks size shared_buffers like a production server: configure
    sets it and restarts the server, which then serves and stops cleanly."""
    import psycopg

    from lore.storage.postgres.local_server import start

    server = start()
    folder = server.folder
    try:
        server.configure(shared_buffers="48MB")
        with psycopg.connect(server.url()) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "48MB"
    finally:
        server.stop()
    assert not folder.exists()


def test_upgraded_hnsw_indexes_use_the_denser_graph(pg_database):
    """Migration 5 rebuilds every HNSW index with Lore's m and ef_construction."""
    import psycopg

    from lore.storage.postgres.migrations import HNSW_DIMENSIONS, HNSW_EF_CONSTRUCTION, HNSW_M

    _server, url = pg_database
    with psycopg.connect(url) as conn:
        options = dict(
            conn.execute(
                "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'lore' AND c.relname LIKE 'embeddings_hnsw_%'"
            ).fetchall()
        )
    assert set(options) == {f"embeddings_hnsw_{dim}" for dim in HNSW_DIMENSIONS}
    for reloptions in options.values():
        assert sorted(reloptions) == sorted([f"m={HNSW_M}", f"ef_construction={HNSW_EF_CONSTRUCTION}"])
