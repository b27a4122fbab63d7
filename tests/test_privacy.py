"""Private memories are private (issue 11): the acting agent is fixed per
process, and another agent's private or session memory is indistinguishable
from a missing one — through the Python API, the CLI and the MCP server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

import forkserver
import lore
from lore.errors import Conflict, NotFound


@pytest.fixture
def two_agents(tmp_path):
    root = tmp_path / "p"
    lore.init(root).close()
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    with lore.open(root, agent="Claude Code") as alice:
        secret = alice.add(
            title="Alice's secret plan",
            body="The launch date is the first of June, tell nobody.",
            private=True,
            tags=["launch"],
        )
        session = alice.add(
            title="Alice's session note",
            body="Tried the launch checklist twice today.",
            session=True,
            tags=["launch"],
        )
        shared = alice.add(
            title="Launch checklist", body="The launch checklist lives in docs/launch.md.", tags=["launch"]
        )
    return root, secret, session, shared


def test_python_api_hides_other_agents_memories(two_agents):
    root, secret, session, shared = two_agents
    with lore.open(root, agent="codex") as bob:
        assert {h.title for h in bob.search("launch")} == {"Launch checklist"}
        assert {r["title"] for r in bob.list()} == {"Launch checklist"}
        for key in (secret.id, secret.id[:8], secret.path, session.id, session.path):
            with pytest.raises(NotFound) as missing:
                bob.show(key)
            assert "no memory" in str(missing.value)
            with pytest.raises(NotFound):
                bob.update(key, body="Overwritten by another agent, who should not be able to.")
            with pytest.raises(NotFound):
                bob.remove(key)
        with pytest.raises(Conflict) as taken:  # an id in use can't be taken, even blind
            bob.add(title="Copycat", body="Trying to reuse an id that exists already.", id=secret.id)
        # ... and the refusal says nothing of what holds it (MCP's memory_write answered
        # "a memory with id … exists already" for another agent's private memory).
        assert "memory" not in str(taken.value) and "can't be used" in str(taken.value)
        pack = bob.recall("launch date checklist")
        assert {it.data["title"] for it in pack.items if it.kind == "memory"} <= {"Launch checklist"}
    with lore.open(root, agent="claude-code") as alice_again:  # one naming rule for the folder and the lookup
        assert {h.title for h in alice_again.search("launch")} == {
            "Alice's secret plan",
            "Alice's session note",
            "Launch checklist",
        }
        assert alice_again.show(secret.id).title == "Alice's secret plan"
    with lore.open(root) as nobody:  # no identity: shared memories only
        assert {h.title for h in nobody.search("launch")} == {"Launch checklist"}
    assert (root / secret.path).read_text().count("first of June") == 1  # untouched


def test_stats_count_only_the_memories_the_agent_may_see(two_agents):
    """`lore stats` (and /api/stats) counted every agent's private and session
    memories: another agent learnt how many there are, and of which types."""
    root, secret, session, shared = two_agents
    with lore.open(root, agent="codex") as bob:
        seen = bob.stats()
    assert (seen["memories"], seen["by_visibility"], seen["by_type"]) == (1, {"shared": 1}, {"fact": 1})
    assert seen["by_storage"] == {"durable": 1}
    with lore.open(root, agent="Claude Code") as alice:
        mine = alice.stats()
    assert mine["memories"] == 3 and mine["by_visibility"] == {"shared": 2, "private": 1}


def test_a_link_in_the_shared_folder_never_shows_a_private_memory(two_agents):
    """A symlink in .lore/memory/ to another agent's private memory (committed
    by anyone) was read as a shared memory: every agent saw it, and an edit
    replaced the link with a shared copy of the private file."""
    import os

    root, secret, session, shared = two_agents
    os.symlink(os.path.relpath(root / secret.path, root / ".lore/memory"), root / ".lore/memory/link.md")
    os.symlink(os.path.relpath(root / session.path, root / ".lore/memory"), root / ".lore/memory/s.md")
    with lore.open(root, agent="codex") as bob:
        assert {h.title for h in bob.search("launch")} == {"Launch checklist"}
        with pytest.raises(NotFound):
            bob.show(secret.id)
        broken = {p.where: p.message for p in bob.doctor() if p.level == "error"}
        assert "symlink to " + secret.path in broken[".lore/memory/link.md"], broken
        assert "remove the link" in broken[".lore/memory/s.md"], broken
    assert os.path.islink(root / ".lore/memory/link.md")
    with lore.open(root, agent="Claude Code") as alice:  # hers, once, where it is
        found = [h for h in alice.search("launch date") if h.title == "Alice's secret plan"]
        assert [h.path for h in found] == [secret.path]


def test_status_counts_and_names_only_what_the_agent_may_see(two_agents):
    """`lore status` (and /api/status) counted every agent's private memories and
    named another agent's broken private files."""
    root, secret, session, shared = two_agents
    broken = root / ".lore/local/claude-code/alice-plans-to-quit.md"
    broken.write_text("---\nid: [unclosed\n---\nbody\n")
    with lore.open(root, agent="codex") as bob:
        seen = bob.status()
        assert bob.stats()["broken_files"] == 0
    assert seen["memories"] == 1 and seen["broken_memory_files"] == [], seen
    with lore.open(root, agent="Claude Code") as alice:
        mine = alice.status()
        assert alice.stats()["broken_files"] == 1
    assert mine["memories"] == 3 and mine["broken_memory_files"] == [
        ".lore/local/claude-code/alice-plans-to-quit.md"
    ], mine


def test_index_doctor_and_warnings_never_name_another_agents_private_files(two_agents):
    """A review: `lore index --json`, doctor and the warning after every command
    named another agent's broken private file (its name says what it is
    about), and doctor's other checks (keywords, stale, links) named their
    private and session memories; only `status` had been fixed."""
    import subprocess

    from conftest import CLI

    root, secret, session, shared = two_agents
    broken = ".lore/local/claude-code/alice-plans-to-quit.md"
    (root / broken).write_text("---\nid: [unclosed\n---\nbody\n")
    for path in (secret.path, session.path):  # no keywords: a doctor warning names the file
        text = (root / path).read_text()
        (root / path).write_text(text.replace("keywords:", "x_keywords:"))
    # Not memories, but named by other checks: an interrupted write's file, a .mdown, a link.
    stale = root / ".lore/local/claude-code/.layoffs-list.md.k3j2.tmp"
    stale.write_text("draft")
    os.utime(stale, (1_600_000_000, 1_600_000_000))
    (root / ".lore/local/claude-code/fire-the-ceo.mdown").write_text("# draft\n")
    os.symlink(root.parent, root / ".lore/local/claude-code/hr-complaints")
    with lore.open(root, agent="codex") as bob:
        report = bob.reindex(force=True)
        assert all(broken not in p and "claude-code" not in p for p, _ in report.errors), report.errors
        named = [p.where + " " + p.message for p in bob.doctor()]
        assert not [
            line for line in named if "claude-code" in line or secret.path in line or session.path in line
        ], named
        assert any("in other agents' private memories not shown" in line for line in named), named
    cli = CLI(root)
    for args in (("index", "--json"), ("doctor",), ("list",)):
        proc: subprocess.CompletedProcess = cli("--agent", "codex", *args, ok=False)
        assert "alice-plans-to-quit" not in proc.stdout + proc.stderr, (args, proc.stdout, proc.stderr)
    with lore.open(root, agent="Claude Code") as alice:  # hers: named to her
        assert broken in [p for p, _ in alice.reindex().errors]
        hers = [p.where for p in alice.doctor()]
        assert broken in hers and ".lore/local/claude-code/fire-the-ceo.mdown" in hers, hers


def test_doctor_counts_and_never_names_a_duplicate_id_in_another_agents_private_folder(two_agents):
    """An audit: doctor checked duplicate ids among the memories the agent sees
    only, so two copies of one private memory went uncounted among the problems
    not shown, and a shared memory reusing a private one's id went unsaid."""
    root, secret, session, shared = two_agents
    text = (root / secret.path).read_text()
    (root / ".lore/local/claude-code/plan-copy.md").write_text(text)
    with lore.open(root, agent="codex") as bob:
        bob.reindex()
        said = [(p.where, p.message) for p in bob.doctor()]
    assert not [s for s in said if "plan" in s[0] + s[1] or "claude-code" in s[1]], said
    hidden = (".lore/local/", "1 problem in other agents' private memories not shown")
    assert hidden in [(w, m.split(" (")[0]) for w, m in said], said
    (root / ".lore/memory/reused.md").write_text(text.replace("Alice's secret plan", "Reused"))
    with lore.open(root, agent="codex") as bob:
        bob.reindex()
        said = [(p.where, p.message) for p in bob.doctor()]
    assert not [s for s in said if "plan" in s[0] + s[1] or "claude-code" in s[1]], said
    mine = [m for w, m in said if w == ".lore/memory/reused.md"]
    assert mine == [
        f"id {secret.id} is also used by a memory in another agent's private folder; "
        "give this one a new id (e.g. `uuidgen`)"
    ], said
    with lore.open(root, agent="Claude Code") as alice:  # hers are named to her
        alice.reindex()
        hers = [p.where for p in alice.doctor() if "is also used by" in p.message]
    assert sorted(hers) == [".lore/local/claude-code/plan-copy.md", ".lore/memory/reused.md"], hers


def test_cli_hides_other_agents_memories(two_agents):
    import subprocess

    from conftest import CLI

    root, secret, session, shared = two_agents

    def lore_cli(*args: str) -> subprocess.CompletedProcess:
        return CLI(root)(*args, ok=False)

    for key in (secret.id, secret.path, session.id):
        proc = lore_cli("--agent", "codex", "show", key)
        assert proc.returncode == 1 and "no memory" in proc.stderr and "first of June" not in proc.stdout
        proc = lore_cli("show", key, "--agent", "codex")  # the option after the subcommand too
        assert proc.returncode == 1
    hits = json.loads(lore_cli("search", "launch", "--json", "--agent", "codex").stdout)
    assert [h["title"] for h in hits] == ["Launch checklist"]
    assert lore_cli("search", "launch", "--all-agents").returncode == 2
    mine = json.loads(lore_cli("list", "--json", "--agent", "Claude Code").stdout)
    assert {r["title"] for r in mine} == {"Alice's secret plan", "Alice's session note", "Launch checklist"}


def test_mcp_identity_is_fixed_at_start_not_a_tool_argument(two_agents):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root, secret, session, shared = two_agents

    async def run():
        command, args = forkserver.lore_command(["mcp", "--agent", "codex"])
        params = StdioServerParameters(command=command, args=args, cwd=str(root))
        with open(root.parent / "mcp.err", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert all("agent" not in (t.input_schema.get("properties") or {}) for t in tools.values())
                read_back = await s.call_tool("memory_read", {"id": secret.id})
                assert read_back.is_error and "no memory" in read_back.content[0].text
                found = await s.call_tool("memory_search", {"query": "launch date"})
                assert "secret plan" not in found.content[0].text
                overwrite = await s.call_tool(
                    "memory_write", {"id": secret.id, "content": "Overwritten.\nBy another agent."}
                )
                assert overwrite.is_error
                written = await s.call_tool(
                    "memory_write", {"content": "Codex notes the launch too.\nShared."}
                )
                assert not written.is_error and "content" not in json.loads(written.content[0].text)

    anyio.run(run)
    assert "first of June" in (root / secret.path).read_text()


@pytest.mark.storage_independent
def test_server_messages_show_paths_relative_to_the_project(tmp_path):
    from lore.errors import without_server_paths

    root = tmp_path / "proj"
    shown = without_server_paths(
        f"cannot read {root}/.lore/memory/a.md; {root} is the project, {root}2/x is another; "
        f"'{root}/src/a b.py' (quoted)",
        [root],
    )
    assert shown == (
        "cannot read .lore/memory/a.md; <project> is the project, "
        f"{root}2/x is another; 'src/a b.py' (quoted)"
    )
    assert without_server_paths("cannot read /etc/x (a b)", [Path("/")]) == "cannot read /etc/x (a b)"


@pytest.mark.storage_independent
def test_server_messages_scrub_a_folder_that_ends_a_sentence_and_only_whole_paths(tmp_path):
    """The project's folder before a full stop stayed absolute (the lookahead took
    '.' for part of a longer name), and the project's path inside a longer one
    (a mount, a backup) lost its head: '/mnt/srv/proj/a.md' became '/mnta.md'."""
    from lore.errors import without_server_paths

    root = tmp_path / "proj"
    assert without_server_paths(f"no memory in {root}.", [root]) == "no memory in <project>."
    assert without_server_paths(f"see {root}/a.md.", [root]) == "see a.md."
    untouched = f"{root}.bak, {root}-2/x and /mnt{root}/a.md"
    assert without_server_paths(untouched, [root]) == untouched
    # A colon-joined list (a search path) is a list of paths, each scrubbed.
    joined = f"PYTHONPATH={root}/src:{root}/vendor:{tmp_path}/home/lib"
    assert without_server_paths(joined, [root]) == f"PYTHONPATH=src:vendor:{tmp_path}/home/lib"


def test_an_agent_name_that_looks_like_a_secret_names_no_folder(tmp_path):
    """The agent's name becomes its private folder's name, lower-cased, where a
    token is no longer recognised: `--agent ghp_…` made `.lore/local/ghp-…/`."""
    import subprocess

    root = tmp_path / "p"
    lore.init(root).close()
    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lore",
            "--agent",
            token,
            "add",
            "--private",
            "-t",
            "Mine",
            "-b",
            "A private note.",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "looks like a secret (1 github-token)" in proc.stderr, proc.stderr
    assert token not in proc.stderr and "Traceback" not in proc.stderr
    written = [p.name for p in (root / ".lore").rglob("*")]
    assert not [name for name in written if token.lower()[4:12] in name.lower()]
    with lore.open(root, agent="Claude Code") as alice:  # an ordinary name still gets its folder
        assert alice.add(title="Mine", body="A private note.", private=True).path.startswith(
            ".lore/local/claude-code/"
        )


def test_a_redacted_secret_gives_a_memory_no_keywords(cli):
    """Keywords derived from a redacted text were "redacted", "aws", "access", "key":
    the marker's words, not what the memory is about."""
    added = cli.json(
        "add",
        "--title",
        "Upload test credentials",
        "--body",
        "Uploads use AKIAIOSFODNN7EXAMPLE with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY from staging, "
        "staging only.",
    )
    assert added["redacted"] == {"aws-access-key": 1, "aws-secret-key": 1}
    (listed,) = [m for m in cli.json("list") if m["id"] == added["id"]]
    assert not {"redacted", "aws", "access", "secret"} & set(listed["tags"]), listed["tags"]
    assert {"upload", "credentials", "staging"} <= set(listed["tags"]), listed["tags"]


def test_a_session_belongs_to_its_agent_however_the_agent_is_spelt(two_agents):
    """An audit: `--agent "Claude Code"` started a session that `--agent
    claude-code` could not see ("no session"), where private memories treat
    the two as one agent. Another agent still cannot see it."""
    root, *_ = two_agents
    with lore.open(root, agent="Claude Code") as alice:
        alice.start_session("cc1")
    for spelling in ("claude-code", "claude_code", "CLAUDE CODE"):
        with lore.open(root, agent=spelling) as same:
            assert same.session_info("cc1").id == "cc1"
    with lore.open(root, agent="codex") as bob, pytest.raises(NotFound):
        bob.session_info("cc1")


def test_expired_private_trash_is_purged_by_a_persons_gc_and_not_listed(two_agents, monkeypatch):
    """An audit: `lore gc` without an agent never purged an agent's private
    trash, so an agent that never ran gc kept it forever; and `rm` and `gc`
    read the system clock where the lifecycle reads LORE_NOW."""
    root, secret, session, shared = two_agents
    monkeypatch.setenv("LORE_NOW", "2026-03-01T12:00:00Z")
    with lore.open(root, agent="Claude Code") as alice:
        alice.remove(secret.id)
        (entry,) = [e for e in alice.trash_entries() if e.id == secret.id]
        assert entry.deleted_at.startswith("2026-03-01")
    monkeypatch.setenv("LORE_NOW", "2026-04-15T12:00:00Z")  # past the 30 days kept
    with lore.open(root, agent="codex") as bob:
        assert all(e.id != secret.id for e in bob.gc())
    with lore.open(root, agent="Claude Code") as alice:
        assert [e.id for e in alice.trash_entries()] == [secret.id]  # bob's gc left it
    with lore.open(root) as person:
        purged = person.gc()
        assert all(e.id != secret.id and "alice" not in e.original for e in purged), purged
    with lore.open(root, agent="Claude Code") as alice:
        assert alice.trash_entries() == []
