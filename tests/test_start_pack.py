"""The session-start pack (issue 14): what `lore start` and the SessionStart
hook inject, on fixture repositories full of generic files (licence, code of
conduct, contributing guide, changelog, docs).

- nothing at all when nothing is relevant;
- this project's memories first (recent gotchas and decisions, those whose
  scope the work touches before others), never old or session chatter;
- the branch's task and the areas it changed, without generic files;
- within `[recall] start_budget`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

import lore
from test_code_index import commit, configure, git, write

GENERIC = {
    "LICENSE": "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy.\n",
    "CODE_OF_CONDUCT.md": "# Code of Conduct\n\nBe kind. Report problems to the maintainers.\n",
    "CONTRIBUTING.md": "# Contributing\n\nFork, branch, run the tests, open a pull request. Conventions matter.\n",
    "CHANGELOG.md": "# Changelog\n\n## 1.2.0\n\n- Fixed the session timeout.\n",
    "docs/index.md": "# Docs\n\nDecisions and gotchas of the project are described here.\n",
    ".github/PULL_REQUEST_TEMPLATE.md": "Describe your change.\n",
}
SOURCE = {
    "src/shop/auth.py": "def refresh_session(token):\n    '''Refresh a session token.'''\n    return token\n",
    "src/shop/billing.py": "def invoice_total(lines):\n    return sum(l.price for l in lines)\n",
    "tests/test_auth.py": "def test_refresh():\n    assert True\n",
}
GENERIC_MARKERS = (
    "LICENSE",
    "CODE_OF_CONDUCT",
    "CONTRIBUTING",
    "CHANGELOG",
    "docs/",
    "PULL_REQUEST",
    "Be kind",
)


@pytest.fixture
def shop(cli):
    """A git repository with source and generic community files, indexed, BM25 only."""
    root = cli.cwd
    git(root, "init", "-q", "-b", "main")
    configure(root)
    for rel, text in {**GENERIC, **SOURCE}.items():
        write(root, rel, text)
    commit(root, "Initial import")
    cli("index")
    return cli


def start(cli, *args, **kwargs) -> dict:
    return cli.json("start", *args, **kwargs)


def days_ago(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def add(cli, kind: str, title: str, body: str, *extra: str) -> str:
    return cli.json("add", "--type", kind, "--title", title, "--body", body, *extra)["id"]


def hook_start(cli) -> subprocess.CompletedProcess:
    payload = {
        "session_id": "s-1",
        "cwd": str(cli.cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    return subprocess.run(
        [sys.executable, "-m", "lore", "hook", "session-start"],
        cwd=cli.cwd,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_nothing_is_injected_when_nothing_is_relevant(shop):
    assert start(shop)["markdown"] == "" and start(shop)["memories"] == []
    assert shop("start").stdout == ""
    proc = hook_start(shop)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    # Only old, low-attention memories: still nothing.
    add(
        shop,
        "fact",
        "Billing started as a script",
        "Billing began as a cron script in 2019.",
        "--occurred-at",
        days_ago(900),
    )
    assert start(shop)["markdown"] == ""


def test_project_memories_first_and_never_generic_files_or_chatter(shop):
    gotcha = add(
        shop,
        "gotcha",
        "Session refresh must keep the old token valid for 30 s",
        "Clients retry with the old token; revoke it 30 s after refresh_session issues a new one.",
        "--applies-to",
        "file:src/shop/auth.py",
    )
    decision = add(shop, "decision", "Invoices are computed in cents", "Money is an integer number of cents.")
    old = add(
        shop,
        "convention",
        "Old naming rule",
        "Modules were once prefixed with shop_.",
        "--occurred-at",
        days_ago(800),
    )
    chatter = add(
        shop, "fact", "Session chatter", "I looked at the billing code for a while today.", "--session"
    )
    data = start(shop)
    ids = [m["id"] for m in data["memories"]]
    assert set(ids) == {gotcha, decision}
    assert old not in ids and chatter not in ids
    markdown = data["markdown"]
    assert markdown.startswith("## Lore: this project's memory\n\n### Project memory\n")
    assert not any(marker in markdown for marker in GENERIC_MARKERS)
    assert data["files"] == [] and data["code_snippets"] == []
    assert data["tokens_used"] <= data["budget"] == 800
    assert hook_start(shop).stdout  # the hook injects it


def test_what_the_start_pack_shows_is_not_counted_as_read(shop):
    """Five session starts counted their own picks five times: a memory nobody
    read turned WARM and never decayed. Showing it when asked is a read."""
    decision = add(shop, "decision", "Invoices are computed in cents", "Money is an integer number of cents.")
    for _ in range(5):
        assert decision in [m["id"] for m in start(shop)["memories"]]
    assert hook_start(shop).stdout
    with lore.open(shop.cwd) as project:
        assert decision not in project.store.access_stats()
        assert project.list(tier="warm") == []
    shop("show", decision[:8])
    with lore.open(shop.cwd) as project:
        assert project.store.access_stats()[decision][0] == 1


def test_access_statistics_of_some_memories_are_theirs_alone(shop):
    """Recall reads the statistics of the memories it found, not every
    memory's (a long-used project has one row per memory ever recalled)."""
    read = [add(shop, "fact", f"Fact {n}", f"Fact number {n} about the invoices.") for n in range(3)]
    for memory_id in read[:2]:
        shop("show", memory_id[:8])
    with lore.open(shop.cwd) as project:
        every = project.store.access_stats()
        some = project.store.access_stats([read[0], read[2], read[0], "no-such-memory"])
        assert some == {read[0]: every[read[0]]} and every[read[0]][0] == 1
        assert project.store.access_stats([]) == {}


def test_both_sides_of_a_contradiction_waiting_for_review_are_flagged(shop):
    """A held contradiction proposal ("TIMEOUT=5" against "TIMEOUT=30") left both
    offered as facts, at full score, by the start pack and recall."""
    old = add(
        shop, "decision", "Progress timeout", "Set PROGRESS_TIMEOUT=5 seconds for the bar.", "-k", "progress"
    )
    new = shop.json(
        "add", "--type", "decision", "--title", "Progress timeout raised", "-k", "progress",
        "--body", "Set PROGRESS_TIMEOUT=30 seconds for the bar.", env={"LORE_NOW": days_ago(-1)},
    )["id"]  # fmt: skip
    plain = start(shop)["markdown"]
    assert "disputed" not in plain
    [proposal] = shop.json("consolidate")["proposals"]
    assert proposal["kind"] == "contradiction"
    flagged = [line for line in start(shop)["markdown"].splitlines() if "disputed" in line]
    assert len(flagged) == 2 and all(f"`lore review --all`: {proposal['id'][:8]}" in line for line in flagged)
    pack = shop.json("recall", "progress timeout", "--no-code")
    assert {m["id"]: m.get("disputed_by_proposal") for m in pack["memories"]} == {
        old: proposal["id"],
        new: proposal["id"],
    }


def test_a_token_in_the_branch_name_is_not_shown(shop):
    root = shop.cwd
    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    add(shop, "decision", "Invoices are computed in cents", "Money is an integer number of cents.")
    git(root, "checkout", "-q", "-b", f"fix-{token}")
    write(root, "src/shop/auth.py", SOURCE["src/shop/auth.py"] + "\n\ndef revoke(token):\n    return None\n")
    commit(root, "Revoke old tokens")
    data = start(shop)
    assert data["branch"] == "fix-[REDACTED:github-token]"
    assert token not in json.dumps(data) and token not in hook_start(shop).stdout


def test_the_branch_task_and_changed_areas_without_generic_files(shop):
    root = shop.cwd
    other = add(shop, "decision", "Invoices are computed in cents", "Money is an integer number of cents.")
    scoped = add(
        shop,
        "gotcha",
        "Session refresh must keep the old token valid",
        "Clients retry with the old token for a while.",
        "--applies-to",
        "area:shop",  # (a file scope would be anchored, and flagged stale once the branch edits it)
    )
    git(root, "checkout", "-q", "-b", "fix-session-refresh")
    write(root, "src/shop/auth.py", SOURCE["src/shop/auth.py"] + "\n\ndef revoke(token):\n    return None\n")
    write(root, "CONTRIBUTING.md", GENERIC["CONTRIBUTING.md"] + "\nMore rules.\n")
    commit(root, "Revoke old tokens after refresh")
    write(root, "src/shop/billing.py", SOURCE["src/shop/billing.py"] + "# wip\n")  # uncommitted
    data = start(shop)
    assert data["branch"] == "fix-session-refresh"
    assert data["task"][0]["ahead"] == 1 and data["task"][0]["base"] == "main"
    assert [m["id"] for m in data["memories"]][:2] == [scoped, other]  # the area being changed first
    areas = data["changed_areas"]
    assert areas == [
        {
            "folder": "src/shop",
            "files": ["auth.py", "billing.py"],
            "when": "on this branch and in the work tree",
            "level": "L1",
        }
    ]
    markdown = data["markdown"]
    assert "branch `fix-session-refresh` — 1 commit ahead of `main`" in markdown
    assert "`src/shop/`: auth.py, billing.py" in markdown
    assert not any(marker in markdown for marker in GENERIC_MARKERS)
    for item in data["files"]:
        assert not any(marker in item["path"] for marker in GENERIC_MARKERS)


def test_the_agent_settings_lore_installs_are_not_a_changed_area(shop):
    """Right after `lore install`, every session's pack said "Recently changed: the
    top folder: .mcp.json; `.claude/`: settings.json" (Lore's own, uncommitted setup)."""
    add(shop, "decision", "Invoices are computed in cents", "Money is an integer number of cents.")
    shop("install", "claude-code")
    shop("install", "cursor")
    write(shop.cwd, "src/shop/billing.py", SOURCE["src/shop/billing.py"] + "# wip\n")
    data = start(shop)
    areas = {a["folder"]: a["files"] for a in data["changed_areas"]}
    assert "billing.py" in areas["src/shop"]
    assert not {"", ".", ".claude", ".cursor"} & set(areas), areas
    assert ".mcp.json" not in data["markdown"] and "settings.json" not in data["markdown"]


def test_the_start_budget_setting_caps_the_pack(shop):
    for i in range(12):
        add(
            shop,
            "gotcha",
            f"Gotcha number {i} about the shop",
            f"Detail {i}: " + "careful with this part. " * 12,
        )
    wide = start(shop)
    assert wide["budget"] == 800 and 200 < wide["tokens_used"] <= 800
    config = shop.cwd / ".lore/config.toml"
    text = config.read_text()
    assert re.search(r"^start_budget = 800$", text, flags=re.M)  # the default, written by init
    config.write_text(re.sub(r"^start_budget = 800$", "start_budget = 150", text, flags=re.M))
    narrow = start(shop)
    assert narrow["budget"] == 150 and 0 < narrow["tokens_used"] <= 150
    assert len(narrow["memories"]) < len(wide["memories"])
    assert start(shop, "--budget", "400")["budget"] == 400


def test_superseded_memories_give_way_at_session_start(shop):
    old = add(shop, "decision", "Tokens live 1 hour", "Access tokens expire after one hour.")
    new = add(
        shop,
        "decision",
        "Tokens live 15 minutes",
        "Access tokens expire after 15 minutes.\n\n## Relations\n- supersedes [[Tokens live 1 hour]]",
    )
    data = start(shop)
    ids = [m["id"] for m in data["memories"]]
    assert new in ids and old not in ids
    assert 'supersedes "Tokens live 1 hour"' in data["markdown"]


def test_a_title_given_in_words_is_shown_with_the_branch(shop):
    """`lore start --title T` named the task only in JSON: the pack said "branch `main`"."""
    markdown = start(shop, "--title", "Fix refund rounding")["markdown"]
    assert "- branch `main`: Fix refund rounding" in markdown
    markdown = start(shop, "T-7", "--title", "Fix refund rounding")["markdown"]
    assert "- branch `main`, task `T-7`: Fix refund rounding" in markdown
    assert (
        "branch `main`, task `T-7`\n" in start(shop, "T-7")["markdown"]
    )  # a title made from them: not repeated


def test_the_branch_changes_are_found_beside_a_file_named_head(shop):
    """A file named like a revision (HEAD) must not make git's diff ambiguous."""
    root = shop.cwd
    write(root, "HEAD", "not a revision\n")
    commit(root, "Add a file named HEAD")
    git(root, "checkout", "-q", "-b", "fix-session-refresh")
    write(root, "src/shop/auth.py", SOURCE["src/shop/auth.py"] + "\n\ndef revoke(token):\n    return None\n")
    commit(root, "Revoke old tokens after refresh")
    areas = start(shop)["changed_areas"]
    assert [(a["folder"], a["files"]) for a in areas] == [("src/shop", ["auth.py"])]
