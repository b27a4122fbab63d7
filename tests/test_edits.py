"""Precise edits (issue 14): every operation through the CLI and through MCP
(the SDK's real client over stdio), atomic and re-indexed at once (no stale
content_hash warning), redacted like any write; `lore mv`; adding content
that is already stored returns the existing memory; a real name collision is
reported with the name chosen.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest

from conftest import ON_POSTGRES
from test_mcp import make_project, run_async, stdio_session

HAND_WRITTEN = """\
---
id: mem-2026-02-12-001
subject: Deploy checklist
type: convention
keywords: [deploy]   # a comment Lore keeps
occurred_at: 2026-02-12T09:00:00Z
content_hash: 0000000000000000
---

# Deploy checklist

Run the migrations first.

## Steps

- tag the release
- deploy to staging

## Rollback

Re-deploy the previous tag.
"""


@pytest.fixture
def mem(cli):
    """A project with one hand-written memory file (frontmatter in its own style)."""
    path = cli.cwd / ".lore/memory/deploy.md"
    path.write_text(HAND_WRITTEN)
    return cli, path


def front(text: str) -> str:
    return text.split("\n---\n", 1)[0]


def body(text: str) -> str:
    return text.split("\n---\n", 1)[1]


def no_hash_warning(cli) -> None:
    assert "content_hash" not in cli("doctor", ok=False).stdout


def no_temp_files(root: Path) -> None:
    assert [p.name for p in (root / ".lore").rglob(".lore-*")] == []


# -- CLI ------------------------------------------------------------------------------------------


def test_append_keeps_the_frontmatter_text_and_fixes_only_the_hash(mem):
    cli, path = mem
    out = cli.json("edit", "mem-2026-02-12-001", "--append", "- check the dashboards")
    assert out["operations"] == ["append"] and out["path"] == ".lore/memory/deploy.md"
    text = path.read_text()
    assert text.endswith("Re-deploy the previous tag.\n\n- check the dashboards\n")
    old, new = front(HAND_WRITTEN).splitlines(), front(text).splitlines()
    changed = [line for line in new if line not in old]
    assert [line.split(":")[0] for line in changed] == ["content_hash", "updated_at"]
    assert "keywords: [deploy]   # a comment Lore keeps" in text
    no_hash_warning(cli)
    no_temp_files(cli.cwd)
    # Re-indexed at once: the new text is found straight away.
    assert cli.json("search", "dashboards")[0]["id"] == "mem-2026-02-12-001"


def test_a_file_with_crlf_line_ends_keeps_them_through_every_kind_of_edit(mem):
    """`--set` on a file saved on Windows rewrote every line to LF: its git diff
    showed the whole file changed."""
    cli, path = mem
    path.write_bytes(HAND_WRITTEN.replace("\n", "\r\n").encode())
    key = "mem-2026-02-12-001"
    for edit in (
        ["--set", "type=decision"],
        ["--append", "- check the dashboards"],
        ["--set", "tags=[deploy,ops]"],
    ):
        cli("edit", key, *edit)
        raw = path.read_bytes()
        assert raw.count(b"\r\n") == raw.count(b"\n"), edit  # every line still CRLF
    assert cli.json("show", key)["content"].count("check the dashboards") == 1
    no_hash_warning(cli)


def test_append_to_a_list_continues_it(mem):
    cli, path = mem
    cli("edit", "mem-2026-02-12-001", "--replace-section", "Rollback", "--body", "- re-deploy the tag")
    cli("edit", "mem-2026-02-12-001", "--append", "- tell the team")
    assert body(path.read_text()).endswith("## Rollback\n\n- re-deploy the tag\n- tell the team\n")


def test_prepend_goes_after_the_title_line(mem):
    cli, path = mem
    cli("edit", "mem-2026-02-12-001", "--prepend", "**Read this first.**")
    assert "# Deploy checklist\n\n**Read this first.**\n\nRun the migrations first." in path.read_text()
    no_hash_warning(cli)


def test_replace_section_replaces_only_that_section_or_adds_it(mem):
    cli, path = mem
    cli("edit", "mem-2026-02-12-001", "--replace-section", "## steps", "--body", "1. tag\n2. deploy")
    text = path.read_text()
    assert "## Steps\n\n1. tag\n2. deploy\n\n## Rollback\n\nRe-deploy the previous tag." in text
    assert "deploy to staging" not in text
    out = cli.json(
        "edit", "mem-2026-02-12-001", "--replace-section", "Owners", "--body", "The platform team."
    )
    assert out["notes"] == ["added section 'Owners'"]
    assert path.read_text().endswith("## Owners\n\nThe platform team.\n")
    no_hash_warning(cli)


def test_find_replace_must_match_once_unless_all(mem):
    cli, path = mem
    before = path.read_bytes()
    proc = cli("edit", "mem-2026-02-12-001", "--find", "deploy", "--replace", "ship", ok=False)
    assert proc.returncode == 2 and "occurs 2 times" in proc.stderr and "--all" in proc.stderr
    proc = cli("edit", "mem-2026-02-12-001", "--find", "nowhere", "--replace", "x", ok=False)
    assert proc.returncode == 2 and "is not in the memory's text" in proc.stderr
    assert path.read_bytes() == before  # nothing written on an error
    cli("edit", "mem-2026-02-12-001", "--find", "previous tag", "--replace", "last good tag")
    assert "Re-deploy the last good tag." in path.read_text()
    out = cli.json("edit", "mem-2026-02-12-001", "--find", "deploy", "--replace", "ship", "--all")
    assert out["notes"] == ["replaced 2 occurrences"]
    no_hash_warning(cli)


def test_set_changes_frontmatter_fields_and_refuses_bad_values(mem):
    cli, path = mem
    cli("edit", "mem-2026-02-12-001", "--set", "type=decision", "--set", "tags=[deploy, release]")
    cli("edit", "mem-2026-02-12-001", "--set", "confidence=0.8", "--set", "owner=platform")
    shown = cli.json("list")[0]
    assert shown["type"] == "decision" and shown["tags"] == ["deploy", "release"]
    text = path.read_text()
    assert "confidence: 0.8" in text and "owner: platform" in text
    before = path.read_bytes()
    proc = cli("edit", "mem-2026-02-12-001", "--set", "type=nonsense", ok=False)
    assert proc.returncode == 2 and "unknown type 'nonsense'" in proc.stderr
    proc = cli("edit", "mem-2026-02-12-001", "--set", "id=x", ok=False)
    assert proc.returncode == 2 and "managed by Lore" in proc.stderr
    # A nested list or mapping is refused as reading the file would refuse it (it was stored as Python text).
    for value in (
        "tags=[a, [b, c]]",
        "files=[a.py, {x: y}]",
        "labels=[true, {k: v}]",
        "tags={a: 1}",
        "files={a: 1}",
    ):
        proc = cli("edit", "mem-2026-02-12-001", "--set", value, ok=False)
        assert proc.returncode == 2 and "must be a list of strings" in proc.stderr, (value, proc.stderr)
    # No keyword left (add refuses that), relations no link can be read from or added to: refused.
    for value, said in (("keywords=", "at least one keyword"), ("tags=[]", "at least one keyword")):
        proc = cli("edit", "mem-2026-02-12-001", "--set", value, ok=False)
        assert proc.returncode == 2 and said in proc.stderr, (value, proc.stderr)
    proc = cli("edit", "mem-2026-02-12-001", "--set", "relations=garbage", ok=False)
    assert proc.returncode == 2 and "relations must be a mapping" in proc.stderr, proc.stderr
    assert path.read_bytes() == before
    cli("edit", "mem-2026-02-12-001", "--set", "owner=")
    assert "owner:" not in path.read_text()
    no_hash_warning(cli)


def test_edits_are_redacted_like_any_write(mem):
    cli, path = mem
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    proc = cli("edit", "mem-2026-02-12-001", "--append", f"The deploy token is {key}.")
    assert "redacted" in proc.stderr
    assert key not in path.read_text()
    if ON_POSTGRES:  # the index is a database: all it holds of the project, as `lore db export` writes it
        dump = cli.cwd.parent / "index.jsonl.gz"
        cli("db", "export", str(dump))
        assert "mem-2026-02-12-001" in gzip.decompress(dump.read_bytes()).decode()
        assert key not in gzip.decompress(dump.read_bytes()).decode()
    else:
        assert key not in (cli.cwd / ".lore/index.db").read_bytes().decode("latin-1")


def test_an_edit_that_completes_a_secret_is_redacted(mem):
    """A replacement or a custom field is a secret only with what stands
    before it ("password: TODO" → the value; `db_password=...`)."""
    cli, path = mem
    cli("edit", "mem-2026-02-12-001", "--append", "Staging DB password: TODO (ask ops).")
    proc = cli("edit", "mem-2026-02-12-001", "--find", "TODO", "--replace", "Tr0bBzVun0Ry&3")
    assert "redacted" in proc.stderr
    proc = cli("edit", "mem-2026-02-12-001", "--set", "db_password=Qz9dOfWYj6nc!x8")
    assert "redacted" in proc.stderr
    cli("edit", "mem-2026-02-12-001", "--set", "pin_password=839201746512")  # YAML reads a number
    text = path.read_text()
    assert "Tr0bBzVun0Ry" not in text and "Qz9dOfWYj6nc" not in text and "839201746512" not in text
    assert "db_password:" in text and "Staging DB password: [REDACTED" in text
    no_hash_warning(cli)


def test_a_password_written_by_hand_replaced_by_another_is_redacted(mem):
    cli, path = mem
    path.write_text(path.read_text().replace("Run the migrations first.", "Staging db password: OldSecr3t!x"))
    cli("edit", "mem-2026-02-12-001", "--find", "OldSecr3t!x", "--replace", "NewSecr3t!y")
    assert "NewSecr3t" not in path.read_text()


def test_an_edit_that_adds_no_secret_changes_only_what_it_names(mem):
    """Redacting the whole memory at every edit re-rendered a hand-written
    frontmatter and rewrote its old text: an edit changes what it names."""
    cli, path = mem
    path.write_text(
        path.read_text().replace("Run the migrations first.", "The staging password is hunter2x9.")
    )
    before = path.read_text()
    cli("edit", "mem-2026-02-12-001", "--append", "Argon2 later.")
    after = path.read_text()
    assert "keywords: [deploy]   # a comment Lore keeps" in after
    assert "The staging password is hunter2x9." in after  # the user's to fix (`lore doctor` says so)
    assert after.split("---", 2)[2].rstrip().endswith("Argon2 later.")
    kept = [line for line in before.splitlines() if not line.startswith(("content_hash:", "updated_at:"))]
    assert all(line in after.splitlines() for line in kept)


def test_expect_sha256_refuses_a_changed_file(mem):
    cli, path = mem
    stale = hashlib.sha256(path.read_bytes()).hexdigest()
    cli("edit", "mem-2026-02-12-001", "--append", "One more line.")
    proc = cli("edit", "mem-2026-02-12-001", "--append", "Another.", "--expect-sha256", stale, ok=False)
    assert proc.returncode == 1 and "changed on disk" in proc.stderr
    fresh = hashlib.sha256(path.read_bytes()).hexdigest()
    cli("edit", "mem-2026-02-12-001", "--append", "Another.", "--expect-sha256", fresh)


def test_edit_without_options_runs_the_editor_then_reindexes(mem, tmp_path):
    import sys

    cli, path = mem
    script = tmp_path / "ed.py"
    script.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('Run the migrations first.', 'Run migrations, then smoke tests.'))\n"
    )
    out = cli("edit", "mem-2026-02-12-001", env={"EDITOR": f"{sys.executable} {script}"}).stdout
    assert out.startswith("saved .lore/memory/deploy.md")
    text = path.read_text()
    assert "smoke tests" in text and "keywords: [deploy]   # a comment Lore keeps" in text
    no_hash_warning(cli)
    assert cli.json("search", "smoke tests")[0]["id"] == "mem-2026-02-12-001"


def test_a_secret_typed_in_the_editor_is_redacted_when_lore_edit_saves(mem, tmp_path):
    """`lore edit` in $EDITOR is a write through Lore, like `--append`: what the
    person typed is redacted before the file is kept (and the index sees it)."""
    import sys

    cli, path = mem
    key = "ghp_" + "Ed1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R"
    script = tmp_path / "ed.py"
    script.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        f"p.write_text(p.read_text() + '\\nThe deploy token is {key}, password: Hunter2x!q\\n')\n"
    )
    proc = cli("edit", "mem-2026-02-12-001", env={"EDITOR": f"{sys.executable} {script}"})
    assert "redacted before writing: 1 github-token, 1 password" in proc.stderr
    text = path.read_text()
    assert key not in text and "Hunter2x!q" not in text and "is [REDACTED:github-token]" in text
    assert cli.json("show", "mem-2026-02-12-001")["id"] == "mem-2026-02-12-001"
    no_hash_warning(cli)
    if not ON_POSTGRES:
        assert key not in (cli.cwd / ".lore/index.db").read_bytes().decode("latin-1")


def test_refused_values_name_the_option_given_and_are_usage_errors(mem):
    """An audit: `lore edit ID --set type=bogus` exited 1 where `lore add --type
    bogus` exits 2; `lore add --title <300 letters>` named the field 'subject';
    an editor that is not there said "file system error", and one that failed
    exited 2 as if the command line were wrong."""
    cli, path = mem
    before = path.read_text()
    bad = cli("edit", "mem-2026-02-12-001", "--set", "type=bogus", ok=False)
    assert bad.returncode == 2 and bad.stderr.startswith("lore: error: --set type: unknown type 'bogus'")
    long = cli("add", "--title", "w" * 300, "--body", "A body long enough to keep.", ok=False)
    assert long.returncode == 2 and "--title: must be 1-200 characters" in long.stderr
    missing = cli("edit", "mem-2026-02-12-001", env={"EDITOR": "no-such-editor-here"}, ok=False)
    assert missing.returncode == 1 and "set $VISUAL or $EDITOR" in missing.stderr
    failing = cli("edit", "mem-2026-02-12-001", env={"EDITOR": "false"}, ok=False)
    assert failing.returncode == 1 and "exited with 1" in failing.stderr
    assert path.read_text() == before


def test_mv_renames_without_overwriting(mem):
    cli, path = mem
    (cli.cwd / ".lore/memory/taken.md").write_text(HAND_WRITTEN.replace("mem-2026-02-12-001", "mem-2"))
    proc = cli("mv", "mem-2026-02-12-001", "taken", ok=False)
    assert proc.returncode == 1 and "exists already" in proc.stderr and path.exists()
    out = cli.json("mv", "mem-2026-02-12-001", "ops/deploy-checklist.md")
    assert out["path"] == ".lore/memory/ops/deploy-checklist.md" and not path.exists()
    assert cli.json("show", "mem-2026-02-12-001")["path"] == ".lore/memory/ops/deploy-checklist.md"
    proc = cli("mv", "mem-2026-02-12-001", "../../outside.md", ok=False)
    assert proc.returncode == 2 and "not a memory location" in proc.stderr
    # A name a Windows checkout of the project could not hold (the file is shared through git).
    # Reserved device names and a dot or space ending a part too (NUL.md was moved to).
    for name in (
        "~/\\..\\..\\x.md",
        "a:b.md",
        "what?.md",
        "x|y",
        "NUL.md",
        "aux/",
        "com1.md",
        "x./",
        "y /z.md",
    ):
        proc = cli("mv", "mem-2026-02-12-001", name, ok=False)
        assert proc.returncode == 2 and "Windows" in proc.stderr, (name, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    assert cli.json("show", "mem-2026-02-12-001")["path"] == ".lore/memory/ops/deploy-checklist.md"


def test_a_move_leaves_no_empty_folders_behind(mem):
    cli, path = mem
    cli("mv", "mem-2026-02-12-001", "a/b/c/d/")
    assert (cli.cwd / ".lore/memory/a/b/c/d").is_dir()
    (cli.cwd / ".lore/memory/a/keep.txt").write_text("not Lore's")
    cli("mv", "mem-2026-02-12-001", "ops/")
    assert not (cli.cwd / ".lore/memory/a/b").exists()  # emptied by the move
    assert (cli.cwd / ".lore/memory/a/keep.txt").exists() and (cli.cwd / ".lore/memory").is_dir()


def test_a_move_that_changes_who_sees_a_memory_or_whether_git_keeps_it_says_so(mem):
    """`lore --agent A mv ID .lore/local/A/x.md` made a shared memory private, out
    of git, without a word."""
    cli, path = mem
    key = "mem-2026-02-12-001"
    private = cli("--agent", "alice", "mv", key, ".lore/local/alice/deploy.md")
    assert "now private to alice" in private.stderr and "it leaves git (.lore/local/)" in private.stderr
    shared = cli.json("--agent", "alice", "mv", key, ".lore/memory/deploy.md")
    assert shared["notes"] == ["now shared with every agent", "git now tracks it (commit it)"]
    assert cli.json("mv", key, "ops/deploy.md")["notes"] == []  # same place, other folder


# -- duplicates and name collisions -------------------------------------------------------------------


def test_adding_stored_content_returns_the_existing_memory(cli):
    first = cli.json("add", "--title", "Use UTC", "--body", "Every timestamp is stored in UTC.")
    again = cli("add", "--title", "Use UTC please", "--body", "Every timestamp is stored in UTC.\n")
    assert again.stdout.startswith(f"exists {first['id']}")
    assert "the same content is already stored as" in again.stderr and first["path"] in again.stderr
    data = cli.json("add", "--body", "Every timestamp is stored in UTC.")
    assert data["created"] is False and data["id"] == first["id"] and "already stored" in data["note"]
    assert len(list((cli.cwd / ".lore/memory").glob("*.md"))) == 1


def test_a_real_name_collision_is_reported_with_the_name_chosen(cli):
    first = cli.json("add", "--title", "Use UTC", "--body", "Every timestamp is stored in UTC.")
    second = cli("add", "--title", "Use UTC", "--body", "Display times in the user's zone.")
    name = Path(first["path"]).name
    assert f"another memory is named {name}" in second.stderr
    assert re.search(rf"written as {name[:-3]}-2\.md", second.stderr)
    assert second.stdout.startswith("added ")


# -- MCP ------------------------------------------------------------------------------------------------


def test_every_edit_operation_through_mcp(tmp_path):
    root = make_project(tmp_path, code=False)
    (root / ".lore/memory/deploy.md").write_text(HAND_WRITTEN)
    path = root / ".lore/memory/deploy.md"

    async def run():
        async with stdio_session(root) as s:
            mid = "mem-2026-02-12-001"
            await s.ok("edit_memory", id=mid, operation="replace_section", target="Rollback", text="Revert.")
            out = await s.ok("edit_memory", id=mid, operation="append", text="- check dashboards")
            assert out["operations"] == ["append"]
            await s.ok("edit_memory", id=mid, operation="prepend", text="Read first.")
            await s.ok("edit_memory", id=mid, operation="find_replace", target="staging", text="preprod")
            await s.ok("edit_memory", id=mid, operation="set", target="type", value="decision")
            other = await s.ok(
                "add_memory", type="fact", title="Release calendar", content="Releases go out on Tuesdays."
            )
            await s.ok(
                "edit_memory", id=mid, operation="relate", target="depends_on", value="Release calendar"
            )
            text = path.read_text()
            assert "- check dashboards" in text and "Read first." in text and "Revert." in text
            assert "preprod" in text and "type: decision" in text and "depends_on: Release calendar" in text
            read = await s.ok("memory_read", id=other["id"])
            assert [(b["relation"], b["id"]) for b in read["backlinks"]] == [("required_by", mid)]
            moved = await s.ok("edit_memory", id=mid, operation="move", value="ops/")
            assert (
                moved["path"] == ".lore/memory/ops/deploy.md"
                and moved["moved_from"] == ".lore/memory/deploy.md"
            )
            error = await s.error("edit_memory", id=mid, operation="find_replace", target="nowhere", text="x")
            assert "is not in the memory's text" in error
            error = await s.error("edit_memory", id=mid, operation="set")
            assert "set needs field" in error
            context = await s.ok("build_context", id=other["id"], budget=1000)
            assert [m["id"] for m in context["memories"]] == [other["id"], mid]
            assert context["tokens_used"] <= 1000 and "Release calendar" in context["markdown"]
            dup = await s.ok("add_memory", type="fact", title="Again", content="Releases go out on Tuesdays.")
            assert dup["created"] is False and dup["id"] == other["id"] and dup["note"]

    run_async(run)
    assert "content_hash" not in json.dumps(
        [p for p in json.loads(_lore_json(root, "doctor")) if "content_hash" in p["message"]]
    )


def test_a_relation_typo_is_refused_through_mcp(tmp_path):
    root = make_project(tmp_path, code=False)
    (root / ".lore/memory/deploy.md").write_text(HAND_WRITTEN)
    path = root / ".lore/memory/deploy.md"
    before = path.read_bytes()

    async def run():
        async with stdio_session(root) as s:
            mid = "mem-2026-02-12-001"
            await s.ok(
                "add_memory", type="fact", title="Release calendar", content="Releases go out on Tuesdays."
            )
            error = await s.error(
                "edit_memory", id=mid, operation="relate", target="depend_on", value="Release calendar"
            )
            assert "relation 'depend_on' is not one Lore knows: did you mean depends_on?" in error
            assert path.read_bytes() == before
            await s.ok("edit_memory", id=mid, operation="relate", target="blocks", value="Release calendar")
            assert "blocks: Release calendar" in path.read_text()

    run_async(run)


def _lore_json(root: Path, *args: str) -> str:
    from test_mcp import lore

    return lore(root, *args, "--json", check=False).stdout


def test_relate_to_no_memory_is_kept_but_said(mem):
    """`--relate supersedes=zzzz` wrote a broken link without a word; it is kept
    (the memory may come later) and a note says so. A title that resolves says nothing."""
    cli, path = mem
    proc = cli("edit", "mem-2026-02-12-001", "--relate", "supersedes=zzzz")
    assert "'zzzz' names no memory you can see" in proc.stderr and "lore doctor" in proc.stderr
    assert "zzzz" in path.read_text()
    cli("add", "--title", "Release calendar", "--body", "Releases go out on Tuesdays.")
    out = cli.json("edit", "mem-2026-02-12-001", "--relate", "depends_on=Release calendar")
    assert out["notes"] == []


def test_a_move_stopped_part_way_is_finished_by_running_it_again(cli):
    """`lore mv` moved the file, then rewrote the links to it one file at a time:
    killed between, the links left named the old file, and running it again was
    refused (the file had moved). The links now go first, the file last."""
    import os
    import signal
    import subprocess
    import sys
    import time

    memory = cli.cwd / ".lore/memory"
    config = cli.cwd / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    (memory / "target.md").write_text(HAND_WRITTEN.replace("mem-2026-02-12-001", "mem-target"))
    for i in range(150):
        (memory / f"note-{i:03}.md").write_text(
            HAND_WRITTEN.replace("mem-2026-02-12-001", f"mem-note-{i:03}")
            + f"\nNote {i}: see [the target](target.md) for details.\n"
        )
    cli("index")
    env = {k: v for k, v in os.environ.items() if k != "LORE_PROJECT"} | {"LORE_WARM": "0"}
    mover = subprocess.Popen(
        [sys.executable, "-m", "lore", "mv", "mem-target", "renamed.md"],
        cwd=cli.cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    notes = sorted(memory.glob("note-*.md"))
    while mover.poll() is None and time.monotonic() < deadline:
        if any("(renamed.md)" in note.read_text() for note in notes[::10]):
            mover.send_signal(signal.SIGKILL)  # part-way through the links
            break
        time.sleep(0.005)
    mover.wait(60)
    if (memory / "target.md").exists():  # stopped before the file moved: run it again
        cli("mv", "mem-target", "renamed.md")
    assert (memory / "renamed.md").exists() and not (memory / "target.md").exists()
    assert not [p for p in cli.json("doctor") if "names no memory" in p["message"]]
    assert all("(renamed.md)" in note.read_text() for note in notes)


def test_a_move_that_fails_puts_the_links_back(cli):
    """The links go first: a move that then fails (a file where its folder
    should be) left them naming a file that was never written."""
    memory = cli.cwd / ".lore/memory"
    (memory / "target.md").write_text(HAND_WRITTEN.replace("mem-2026-02-12-001", "mem-target"))
    (memory / "linker.md").write_text(
        HAND_WRITTEN.replace("mem-2026-02-12-001", "mem-linker") + "\nSee [the target](target.md).\n"
    )
    (memory / "sub").write_text("a file where a folder is wanted\n")
    proc = cli("mv", "mem-target", "sub/", ok=False)
    assert proc.returncode != 0 and (memory / "target.md").exists()
    linker = (memory / "linker.md").read_text()
    assert "[the target](target.md)" in linker and "sub/" not in linker, linker
    assert not [p for p in cli.json("doctor") if "names no memory" in p["message"]]
