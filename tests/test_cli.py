"""Every CLI command, run as a real subprocess, and its --json shape."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

import lore
from conftest import FIXTURES, ON_POSTGRES


def add(cli, title, body, *extra):
    return cli.json("add", "--title", title, "--body", body, *extra)


def test_init_is_idempotent_and_never_overwrites(cli):
    config = cli.cwd / ".lore/config.toml"
    config.write_text(config.read_text() + "\n# my edit\n")
    out = cli.json("init")
    assert out["created"] == []
    assert config.read_text().endswith("# my edit\n")
    assert "index.db" in (cli.cwd / ".lore/.gitignore").read_text()


def test_commands_find_the_project_from_a_subdirectory_and_with_project(cli, tmp_path):
    sub = cli.cwd / "src/deep"
    sub.mkdir(parents=True)
    add(cli, "Deep note", "Written from the root of the project.", "--tag", "deep")
    assert cli.json("search", "deep", cwd=sub)[0]["title"] == "Deep note"
    assert cli.json("--project", str(cli.cwd), "list", cwd=tmp_path)[0]["title"] == "Deep note"
    proc = cli("list", cwd=tmp_path, ok=False)
    assert proc.returncode == 1 and "lore init" in proc.stderr and proc.stderr.count("\n") == 1


def test_add_json_shape_file_name_and_search_result_shape(cli):
    out = add(
        cli,
        "Fix OAuth timeout",
        "Raised the refresh timeout from 5s to 15s.\n\nProvider is slow.",
        "--task",
        "jat-abc",
        "--type",
        "decision",
        "--tag",
        "auth,oauth",
        "--tag",
        "timeout",
        "--occurred-at",
        "2026-02-10T15:30:00Z",
        "--file",
        "src/auth/refresh.ts",
    )
    assert set(out) == {"id", "path", "created", "title", "type", "redacted", "note"}
    assert out["path"] == ".lore/memory/2026-02-10-jat-abc-fix-oauth-timeout.md" and out["created"]
    hits = cli.json("search", "oauth", "timeout")
    assert len(hits) == 1
    hit = hits[0]
    for key in ("path", "task_id", "section", "snippet", "score", "start_line", "end_line", "source"):
        assert key in hit
    assert hit["task_id"] == "jat-abc" and hit["source"] == "hybrid" and 0 < hit["score"] <= 1
    lines = (cli.cwd / hit["path"]).read_text().splitlines()
    assert lines[hit["start_line"] - 1].startswith("Raised the refresh timeout")
    assert hit["tags"] == ["auth", "oauth", "timeout"]


def test_add_says_when_a_file_it_names_is_not_in_the_project(cli):
    """`--file src/nope.ts` (a typo) used to be written without a word: the
    memory was anchored to nothing and `lore stale` could never flag it."""
    (cli.cwd / "src").mkdir()
    (cli.cwd / "src/db.py").write_text("x = 1\n")
    typo = cli("add", "-t", "Pool size", "-b", "The pool holds ten connections.", "--file", "src/bd.py")
    assert "nothing at src/bd.py in the project: check the path" in typo.stderr
    assert "--set files=" in typo.stderr and typo.stdout.startswith("added ")
    scoped = add(cli, "Pool", "The pool is created lazily.", "--applies-to", "file:src/pool/")
    assert "nothing at src/pool/" in scoped["note"]
    right = add(
        cli, "DB", "The db module holds one engine.", "--file", "src/db.py", "--applies-to", "file:src/"
    )
    assert right["note"] is None


def test_add_global_marks_a_committed_memory_and_refuses_a_local_one(cli):
    """003's is_global from the CLI: written to the frontmatter (shared by a team
    database, docs/postgres.md); private and session memories cannot be global."""
    out = add(cli, "Timeout policy", "Every outbound call sets a ten second timeout.", "--global")
    assert "\nis_global: true\n" in (cli.cwd / out["path"]).read_text()
    assert cli.json("search", "outbound timeout")[0]["title"] == "Timeout policy"
    bad = cli("add", "--global", "--session", "--title", "Local", "--body", "Stays here.", ok=False)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "only a committed memory can be global" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_add_reads_body_from_stdin_and_file(cli, tmp_path):
    out = cli.json("add", "--title", "From stdin", input="Body piped on standard input.\n")
    assert "Body piped" in (cli.cwd / out["path"]).read_text()
    body = tmp_path / "b.md"
    body.write_text("## Summary\n\nBody from a file, long enough.\n")
    out = cli.json("add", "--title", "From file", "--body-file", str(body))
    assert "Body from a file" in (cli.cwd / out["path"]).read_text()
    proc = cli("add", "--title", "Nothing", ok=False)
    assert proc.returncode == 2 and "no body" in proc.stderr


def test_same_occurred_at_and_content_is_idempotent(cli):
    args = ("--occurred-at", "2025-01-15T10:30:00Z", "--tag", "x")
    first = add(cli, "Dedup me", "Exactly the same body text.", *args)
    second = add(cli, "Dedup me again", "Exactly the same body text.", *args)
    assert first["created"] and not second["created"] and second["id"] == first["id"]
    assert len(list((cli.cwd / ".lore/memory").glob("*.md"))) == 1


def test_name_collision_gets_a_suffix(cli):
    a = add(cli, "Same title", "First body of the two.", "--occurred-at", "2025-01-01T00:00:00Z")
    b = add(cli, "Same title", "Second body of the two.", "--occurred-at", "2025-01-01T00:00:01Z")
    assert a["path"].endswith("2025-01-01-same-title.md") and b["path"].endswith("2025-01-01-same-title-2.md")


def test_secrets_are_redacted_and_reported(cli):
    key = "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0P9o8"
    proc = cli("add", "--title", "Deploy notes", "--body", f"Use key {key} for the deploy job.", "--json")
    out = json.loads(proc.stdout)
    assert out["redacted"] == {"openai-key": 1} and "redacted" in proc.stderr
    text = (cli.cwd / out["path"]).read_text()
    assert key not in text and "[REDACTED:openai-key]" in text


def test_list_filters_and_json_shape(cli):
    add(
        cli,
        "Use UTC",
        "Store every time in UTC.",
        "--type",
        "convention",
        "--tag",
        "time",
        "--occurred-at",
        "2025-01-01T00:00:00Z",
        "--applies-to",
        "area:storage",
    )
    add(
        cli,
        "JWT chosen",
        "We chose JWT over sessions.",
        "--type",
        "decision",
        "--tag",
        "auth",
        "--agent",
        "alice",
        "--task",
        "t-1",
        "--occurred-at",
        "2025-06-01T00:00:00Z",
    )
    add(cli, "Secret plan", "Private note for bob only.", "--agent", "bob", "--private", "--tag", "x")
    rows = cli.json("list")
    assert [r["title"] for r in rows] == ["JWT chosen", "Use UTC"]  # newest first, no private
    assert set(rows[0]) >= {"id", "path", "title", "type", "tags", "agent", "task_id", "occurred_at"}
    assert [r["title"] for r in cli.json("list", "--type", "convention")] == ["Use UTC"]
    assert [r["title"] for r in cli.json("list", "--tag", "auth")] == ["JWT chosen"]
    assert [r["title"] for r in cli.json("list", "--task", "t-1")] == ["JWT chosen"]
    assert [r["title"] for r in cli.json("list", "--scope", "area:storage")] == ["Use UTC"]
    for command in ("list", "search"):  # a scope that can match nothing is said, not "no memories"
        args = (command, "--scope", "src/db.py") + (("utc",) if command == "search" else ())
        proc = cli(*args, ok=False)
        assert (
            proc.returncode == 2
            and "must be global, file:<path> or area:<name> (e.g. file:src/db.py)" in (proc.stderr)
        )
    assert [r["title"] for r in cli.json("list", "--since", "2025-03-01")] == ["JWT chosen"]
    assert [r["title"] for r in cli.json("list", "--until", "2025-03-01")] == ["Use UTC"]
    assert [r["title"] for r in cli.json("list", "--agent", "bob", "--author", "bob")] == ["Secret plan"]
    assert cli("list", "--all-agents", ok=False).returncode == 2  # no way around privacy (issue 11)
    assert "Secret plan" not in [h["title"] for h in cli.json("search", "private", "note")]  # invisible
    assert cli.json("search", "private", "note", "--agent", "bob")[0]["title"] == "Secret plan"
    assert (cli.cwd / ".lore/local/bob").is_dir()


def test_unknown_type_and_bad_limit_are_usage_errors(cli):
    proc = cli("search", "x", "--type", "nope", ok=False)
    assert proc.returncode == 2 and "nope" in proc.stderr
    proc = cli("list", "--since", "the day after never", ok=False)
    assert proc.returncode == 2 and "since" in proc.stderr


def test_tags_to_filter_by_are_split_at_commas_as_tags_to_add_are(cli):
    """An audit: `lore add --tag time,utc` wrote two tags, but `lore list --tag
    time,utc` looked for one tag named "time,utc" and said nothing matched."""
    add(cli, "Use UTC", "Store every time in UTC.", "--tag", "time,utc")
    add(cli, "Time zones", "Convert in the UI only.", "--tag", "time")
    assert [m["title"] for m in cli.json("list", "--tag", "time,utc")] == ["Use UTC"]
    assert [m["title"] for m in cli.json("list", "--tag", "time", "--tag", "utc")] == ["Use UTC"]
    assert sorted(m["title"] for m in cli.json("list", "--tag", "time")) == ["Time zones", "Use UTC"]
    assert [h["title"] for h in cli.json("search", "UTC", "--tag", "utc, time")] == ["Use UTC"]


def test_types_and_modes_are_read_without_case_as_tags_are(cli):
    """An audit: `--tag WINDOWS` matched without case, `--type Gotcha` was refused."""
    added = cli.json("add", "--type", "Gotcha", "-t", "Flaky socket", "-b", "Retry the socket test once.")
    assert cli.json("show", added["id"])["type"] == "gotcha"
    assert [h["title"] for h in cli.json("search", "socket", "--type", "GOTCHA", "--mode", "BM25")] == [
        "Flaky socket"
    ]
    assert [m["title"] for m in cli.json("list", "--type", "Gotcha")] == ["Flaky socket"]


def test_search_limit_defaults_to_10_and_caps_at_50(cli):
    for i in range(12):
        add(cli, f"Widget note {i}", f"The widget number {i} is documented here.", "--tag", "widget")
    assert len(cli.json("search", "widget")) == 10
    assert len(cli.json("search", "widget", "--limit", "3")) == 3
    assert len(cli.json("search", "widget", "--limit", "500")) == 12


@pytest.mark.parametrize("command", [("search",), ("code",), ("history",), ("session", "search")])
def test_a_limit_below_one_names_the_option(cli, command):
    """`code` and `history` said "limit must be at least 1", naming no option, where `search` named it."""
    proc = cli(*command, "widget", "--limit", "0", ok=False)
    assert proc.returncode == 2 and "'--limit'" in proc.stderr and "0" in proc.stderr, proc.stderr


def test_show_paginates_by_characters(cli):
    out = add(cli, "Long one", "word " * 100)
    page = cli.json("show", out["id"], "--offset", "0", "--limit", "50")
    assert len(page["content"]) == 50 and page["next_offset"] == 50 and page["total_chars"] > 500
    last = cli.json("show", out["id"][:8], "--offset", str(page["total_chars"] - 10))
    assert len(last["content"]) == 10 and last["next_offset"] is None
    whole = cli("show", out["path"]).stdout
    assert whole.startswith("---\nid: " + out["id"])
    past = cli("show", out["id"][:8], "--offset", "999999999")  # printed an empty line, saying nothing
    assert (
        past.stdout.strip() == ""
        and f"past the end: the file has {page['total_chars']} characters" in past.stderr
    )
    proc = cli("show", "does-not-exist", ok=False)
    assert proc.returncode == 1 and "no memory" in proc.stderr


def test_show_refuses_paths_outside_the_project(cli, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("---\nsubject: x\n---\n")
    proc = cli("show", str(outside), ok=False)
    assert proc.returncode == 2 and "outside the project" in proc.stderr


def test_edit_runs_editor_and_reindexes(cli, tmp_path):
    out = add(cli, "Editable", "Original body text here.", "--tag", "edit")
    editor = tmp_path / "ed.py"
    editor.write_text(
        "import sys\np = sys.argv[1]\ns = open(p).read().replace('Original', 'Changed')\n"
        "open(p, 'w').write(s)\n"
    )
    cli("edit", out["id"], env={"EDITOR": f"{sys.executable} {editor}"})
    assert cli.json("search", "changed")[0]["id"] == out["id"]
    assert cli.json("search", "original", "--mode", "bm25") == []
    # An edit that breaks the file is reported, and the file is left as the user made it.
    editor.write_text(
        "import sys\nopen(sys.argv[1], 'a').write('')\n"
        "p = sys.argv[1]\ns = open(p).read().replace('subject:', 'subject: [')\nopen(p, 'w').write(s)\n"
    )
    proc = cli("edit", out["id"], env={"EDITOR": f"{sys.executable} {editor}"}, ok=False)
    assert proc.returncode == 1 and "malformed YAML" in proc.stderr
    assert "subject: [" in (cli.cwd / out["path"]).read_text()
    # It says how to get back to it, and the id the person knew still reaches the broken file.
    assert "your edit is kept" in proc.stderr and f"`lore edit {out['path']}`" in proc.stderr
    editor.write_text(
        "import sys\np = sys.argv[1]\ns = open(p).read().replace('subject: [', 'subject:')\nopen(p, 'w').write(s)\n"
    )
    for key in (out["id"], out["id"][:8]):
        assert "malformed YAML" in cli("show", key, ok=False).stderr
    cli("edit", out["id"][:8], env={"EDITOR": f"{sys.executable} {editor}"})
    assert cli.json("search", "changed")[0]["id"] == out["id"]


def test_an_editor_giving_a_memory_another_memorys_id_keeps_its_own(cli, tmp_path):
    """Two files of one id are both unreachable by it ("2 files have the id ...");
    an edit in $EDITOR did that without a word. A fresh id is the person's to give."""
    first = add(cli, "First one", "The first memory body here.")
    second = add(cli, "Second one", "The second memory body here.")
    editor = tmp_path / "ed.py"
    editor.write_text(
        "import re, sys\np = sys.argv[1]\n"
        f"s = re.sub(r'(?m)^id: .*$', 'id: {first['id']}', open(p).read())\n"
        "s = s.replace('second memory body', 'second memory body, edited')\nopen(p, 'w').write(s)\n"
    )
    proc = cli("edit", second["id"], env={"EDITOR": f"{sys.executable} {editor}"})
    assert f"keeps its id {second['id']}" in proc.stderr and first["path"] in proc.stderr
    assert cli.json("show", first["id"])["path"] == first["path"]
    shown = cli.json("show", second["id"])
    assert shown["path"] == second["path"] and "edited" in shown["content"]
    editor.write_text(
        "import re, sys\np = sys.argv[1]\n"
        "s = re.sub(r'(?m)^id: .*$', 'id: my-own-id', open(p).read())\nopen(p, 'w').write(s)\n"
    )
    cli("edit", second["id"], env={"EDITOR": f"{sys.executable} {editor}"})
    assert cli.json("show", "my-own-id")["path"] == second["path"]


def test_tag_adds_and_removes_tags_and_changes_none_when_a_key_names_nothing(cli):
    first = cli.json("add", "-t", "Invoices", "-b", "Round once.", "-k", "billing,wip")["id"]
    second = cli.json("add", "-t", "Refunds", "-b", "Refund in cents.", "-k", "wip")["id"]
    assert cli("tag", first[:8]).stdout.startswith(f"{first[:8]}  billing, wip  .lore/memory/")
    rows = cli.json("tag", first[:8], second[:8], "--add", "money, Billing", "--remove", "WIP")
    assert [(r["id"], r["tags"]) for r in rows] == [
        (first, ["billing", "money"]),
        (second, ["money", "Billing"]),
    ]
    assert {m["id"] for m in cli.json("list", "--tag", "money")} == {first, second}
    assert cli.json("list", "--tag", "wip") == []
    refused = cli("tag", first[:8], "nosuch", "--add", "late", ok=False)
    assert refused.returncode == 1 and "no memory 'nosuch'" in refused.stderr
    assert cli.json("tag", first[:8])[0]["tags"] == ["billing", "money"]


def test_rm_restore_gc(cli):
    out = add(cli, "Remove me", "This memory will be trashed.", "--tag", "trash")
    removed = cli.json("rm", out["id"])
    assert removed[0]["id"] == out["id"] and not (cli.cwd / out["path"]).exists()
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", removed[0]["deleted_at"]
    )  # UTC ...Z, as documented
    assert cli.json("search", "trashed") == []  # the only memory is gone
    listed = cli.json("restore", "--list")[0]
    assert listed["id"] == out["id"] and listed["deleted_at"] == removed[0]["deleted_at"]
    assert cli.json("gc")["purged"] == []  # within retention
    restored = cli.json("restore", out["id"][:8])
    assert restored["restored"] == out["path"] and cli.json("search", "trashed")[0]["id"] == out["id"]
    cli("rm", out["id"])
    purged = cli.json("gc", "--days", "0")["purged"]
    assert [p["id"] for p in purged] == [out["id"]] and cli.json("restore", "--list") == []


@pytest.mark.parametrize("damage", ["empty", "not json", "missing", "elsewhere"])
def test_a_trashed_file_whose_note_is_damaged_is_said_not_hidden(cli, damage):
    """`restore --list` said "trash is empty" and doctor nothing, while the file waited in the trash."""
    out = add(cli, "Trash me", "This memory will be trashed soon.")
    cli("rm", out["id"])
    note = next((cli.cwd / ".lore/local/trash").glob("*.json"))
    if damage == "missing":
        note.unlink()
    else:
        note.write_text(
            {
                "empty": "",
                "not json": "{",
                "elsewhere": '{"id": "x", "original": "../x.md", "deleted_at": ""}',
            }[damage]
        )
    proc = cli("restore", "--list")
    assert "1 trashed file has a missing or damaged note" in proc.stderr and "trash is empty" in proc.stdout
    problems = [p for p in cli.json("doctor", ok=False) if "trash note" in p["message"]]
    assert len(problems) == 1 and problems[0]["where"] == f".lore/local/trash/{note.stem}.md"
    assert note.with_suffix(".md").is_file()


def test_hand_edits_new_files_and_deletes_are_picked_up(cli):
    out = add(cli, "Hand edited", "The cache is warmed at start-up.", "--tag", "cache")
    path = cli.cwd / out["path"]
    path.write_text(path.read_text().replace("warmed at start-up", "flushed nightly"))
    assert cli.json("search", "nightly")[0]["id"] == out["id"]
    assert cli.json("search", "warmed", "--mode", "bm25") == []
    (cli.cwd / ".lore/memory/by-hand.md").write_bytes((FIXTURES / "seeds/002-example-3.md").read_bytes())
    assert cli.json("search", "connection", "pooling")[0]["path"] == ".lore/memory/by-hand.md"
    path.unlink()
    assert out["id"] not in [h["id"] for h in cli.json("search", "nightly")]


def test_broken_file_is_reported_untouched_and_others_still_searchable(cli):
    add(cli, "Healthy", "A perfectly healthy memory about caching.", "--tag", "cache")
    bad = cli.cwd / ".lore/memory/broken.md"
    raw = b"---\nsubject: [oops\noccurred_at: 2025-01-01\n---\nBody of a broken memory.\n"
    bad.write_bytes(raw)
    (cli.cwd / ".lore/memory/binary.md").write_bytes(b"\x00\x01\x02\xff" * 10)
    (cli.cwd / ".lore/memory/latin1.md").write_bytes(
        b"---\nsubject: caf\xe9\noccurred_at: 2025-01-01\n---\nbody body body\n"
    )
    proc = cli("search", "caching", "--json")
    assert json.loads(proc.stdout)[0]["title"] == "Healthy"
    assert ".lore/memory/broken.md:3" in proc.stderr and "malformed YAML" in proc.stderr
    index = cli("index", ok=False)
    assert index.returncode == 1
    assert "binary" in index.stderr and "UTF-8" in index.stderr
    doctor = cli("doctor", "--json", ok=False)
    assert doctor.returncode == 1
    problems = json.loads(doctor.stdout)
    assert {p["where"] for p in problems if p["level"] == "error"} == {
        ".lore/memory/broken.md",
        ".lore/memory/binary.md",
        ".lore/memory/latin1.md",
    }
    assert bad.read_bytes() == raw


def test_a_folder_of_broken_files_is_named_five_then_counted(cli):
    """Every command named every unreadable memory file on stderr: a folder of
    15,000 imported notes without a date printed 15,000 lines before each answer."""
    add(cli, "Healthy", "A perfectly healthy memory about caching.")
    for i in range(8):
        (cli.cwd / f".lore/memory/undated-{i}.md").write_text(
            f"---\nsubject: Note {i}\n---\nA note without a date.\n"
        )
    proc = cli("list", "--json")
    lines = proc.stderr.splitlines()
    assert len(json.loads(proc.stdout)) == 1
    assert sum("skipped .lore/memory/undated-" in line for line in lines) == 5, lines
    assert lines[-1] == "lore: skipped 3 more memory files; `lore doctor` lists them all", lines
    assert len(json.loads(cli("doctor", "--json", ok=False).stdout)) >= 8  # doctor names every one


def test_doctor_warns_about_foreign_ids_and_stale_hashes(cli):
    target = cli.cwd / ".lore/memory/mem.md"
    target.write_bytes((FIXTURES / "seeds/001-chati-memory.md").read_bytes())
    stale = cli.cwd / ".lore/memory/stale.md"
    stale.write_text((FIXTURES / "seeds/002-example-1.md").read_text())
    problems = cli.json("doctor")
    messages = " ".join(p["message"] for p in problems)
    assert all(p["level"] == "warning" for p in problems)
    assert "not a UUID v4" in messages and "content_hash" in messages


def test_doctor_warns_of_a_hand_written_time_in_the_future(cli):
    """An audit: `lore add` and edits refuse a time more than a day ahead, but a
    file written by hand with `occurred_at: 2031-...` was indexed without a
    word (it sorts first and never ages)."""
    made = cli.json("add", "--title", "Clock skew", "--body", "A body long enough to keep.")
    path = cli.cwd / made["path"]
    text = path.read_text()
    path.write_text(re.sub(r"occurred_at: \S+", "occurred_at: 2031-01-01T00:00:00Z", text))
    problems = [p for p in cli.json("doctor") if p["where"] == made["path"]]
    assert [p["level"] for p in problems] == ["warning"]
    assert "in the future" in problems[0]["message"]


def test_doctor_tells_a_copy_of_a_memory_from_two_memories_sharing_an_id(cli):
    """Two files with one id: a copy (a `lore mv` cut short, a `cp`) is fixed by
    deleting one; two different memories need a new id for one of them."""
    mid = cli.json("add", "-t", "Use UTC everywhere", "-b", "Store timestamps in UTC.")["id"]
    [original] = (cli.cwd / ".lore/memory").glob("*utc*.md")
    copy = cli.cwd / ".lore/memory/moved.md"
    copy.write_bytes(original.read_bytes())
    [problem] = [p for p in cli.json("doctor", ok=False) if "also used" in p["message"]]
    assert problem["level"] == "error" and problem["where"] == ".lore/memory/moved.md"
    assert problem["message"].endswith("both hold the same memory: delete one (`rm .lore/memory/moved.md`)")
    copy.write_bytes(original.read_bytes().replace(b"Store timestamps in UTC.", b"Store dates as ISO 8601."))
    [problem] = [p for p in cli.json("doctor", ok=False) if "also used" in p["message"]]
    assert f"id {mid} is also used by" in problem["message"]
    assert problem["message"].endswith("give one of them a new id (e.g. `uuidgen`)")
    # `lore index` says so too, and fails (it exited 0 saying nothing).
    proc = cli("index", "--no-embed", ok=False)
    assert proc.returncode == 1 and f"moved.md: id {mid} is also used by" in proc.stderr
    [error] = cli.json("index", "--no-embed", ok=False)["errors"]
    assert error["path"] == ".lore/memory/moved.md" and "give one of them a new id" in error["error"]


def test_doctor_names_a_hand_written_path_outside_the_project(cli):
    """`lore add` refuses `file:../../etc/passwd`; written by hand it was indexed without a word."""
    (cli.cwd / ".lore/memory/outside.md").write_text(
        "---\nid: 6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f\nsubject: System files\ntype: fact\nkeywords: [system]\n"
        "occurred_at: 2026-01-01T00:00:00Z\napplies_to: file:../../etc/passwd\n---\nSystem files.\n"
    )
    [warning] = [p for p in cli.json("doctor") if "inside the project" in p["message"]]
    assert warning["level"] == "warning" and warning["where"] == ".lore/memory/outside.md"
    assert warning["message"].startswith(
        "field 'applies_to': '../../etc/passwd' is not a path inside the project"
    )


def test_doctor_and_index_say_what_this_lore_finds_in_an_unchanged_broken_file(cli):
    """A broken file's error was kept from the run that first read it: a newer
    Lore's clearer message (or its accepting the file) stayed hidden until the
    file changed."""
    rel = ".lore/memory/broken.md"
    (cli.cwd / rel).write_text("---\nsubject: Half\ntype: fact\n---\nNo date.\n")

    def said_by_an_older_lore() -> None:
        with lore.open(cli.cwd) as project:
            state = project.store.file_states("memory")[rel]
            with project.store.transaction():
                project.store.put_file(
                    rel, "memory", state.sha256, state.mtime_ns, state.size, error="older words"
                )

    def kept() -> str:
        with lore.open(cli.cwd) as project:
            return project.store.file_states("memory")[rel].error or ""

    cli("list")
    said_by_an_older_lore()
    assert "older words" in cli("list", ok=False).stderr  # a plain read keeps what is known
    [problem] = [p for p in cli.json("doctor", ok=False) if p["where"].startswith(rel)]
    assert "occurred_at" in problem["message"] and "occurred_at" in kept()
    said_by_an_older_lore()
    cli("index", "--no-code", "--no-embed", ok=False)
    assert "occurred_at" in kept()


def test_doctor_names_temporary_files_of_interrupted_writes(cli):
    # `lore add` killed between writing its temporary file and linking it into place
    # (kill -9, a crash) leaves `.lore-<random>.tmp` in .lore/memory/: untracked, so
    # `git add -A` committed it, and nothing ever said so.
    from lore import atomic

    text = "---\nsubject: Half written\n---\n\nThe memory of an add that was killed.\n"
    left = [
        atomic.temporary(cli.cwd / ".lore/memory", text),
        atomic.temporary(cli.cwd / ".lore/local/daily", text, prefix=".2026-01-01-note.md."),
        # a session's compaction killed mid-write (its log, its metadata, an archive part)
        atomic.temporary(cli.cwd / ".lore/sessions/s1", "{}", prefix=".metadata.json."),
        atomic.temporary(cli.cwd / ".lore/sessions/s1/archive", "x", prefix=".000249-000263.jsonl.gz."),
    ]
    fresh = atomic.temporary(cli.cwd / ".lore/memory", text)  # a write that may still be going on
    for path in left:
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    problems = cli.json("doctor")
    assert sorted(p["where"] for p in problems) == sorted(p.relative_to(cli.cwd).as_posix() for p in left)
    assert all(p["level"] == "warning" and "interrupted" in p["message"] for p in problems)
    assert all(path.exists() for path in (*left, fresh))  # reported, never deleted


def test_doctor_names_markdown_files_lore_does_not_read(cli):
    """A memory saved as NOTES.MD (Windows) or auth.markdown was neither indexed
    nor reported: gone without a word. Editor leftovers are not Markdown."""
    text = "---\nsubject: Upper\noccurred_at: 2026-01-01\n---\n\nSaved with an upper-case extension.\n"
    (cli.cwd / ".lore/memory/NOTES.MD").write_text(text)
    (cli.cwd / ".lore/memory/auth").mkdir()
    (cli.cwd / ".lore/memory/auth/tokens.markdown").write_text(text)
    for other in ("notes.md~", ".notes.md.swp", "notes.md.orig", "README.txt"):
        (cli.cwd / ".lore/memory" / other).write_text(text)
    problems = {p["where"]: p for p in cli.json("doctor")}
    assert sorted(problems) == [".lore/memory/NOTES.MD", ".lore/memory/auth/tokens.markdown"]
    assert "rename it to tokens.md" in problems[".lore/memory/auth/tokens.markdown"]["message"]
    assert all(p["level"] == "warning" for p in problems.values())


def test_doctor_names_a_linked_folder_whose_memories_lore_does_not_read(cli, tmp_path):
    """Lore follows no linked folder (inside the project or out of it): its memories
    were neither listed nor reported. A folder named x.md holding memories is read."""
    (cli.cwd / "src/notes").mkdir(parents=True)
    (cli.cwd / ".lore/memory/linked").symlink_to(tmp_path, target_is_directory=True)
    (cli.cwd / ".lore/memory/inside").symlink_to(cli.cwd / "src/notes", target_is_directory=True)
    (cli.cwd / ".lore/memory/topic.md").mkdir()
    (cli.cwd / ".lore/memory/.obsidian").mkdir()
    (cli.cwd / ".lore/memory/.obsidian/plugins").symlink_to(tmp_path, target_is_directory=True)
    (cli.cwd / ".lore/local").mkdir(exist_ok=True)
    (cli.cwd / ".lore/local/cache").symlink_to(tmp_path, target_is_directory=True)
    problems = {p["where"]: p["message"] for p in cli.json("doctor")}
    assert "Lore follows no linked folders" in problems[".lore/memory/linked"]
    assert "Lore follows no linked folders" in problems[".lore/memory/inside"]
    assert not {".lore/memory/topic.md", ".lore/memory/.obsidian/plugins", ".lore/local/cache"} & set(
        problems
    )


def test_the_file_a_command_fails_on_is_said_once(cli):
    (cli.cwd / ".lore/memory/broken.md").write_text("---\nsubject: [broken\n---\nbody\n")
    proc = cli("show", "broken.md", ok=False)
    assert proc.returncode == 1 and proc.stderr.count("malformed YAML") == 1, proc.stderr
    assert "lore: skipped .lore/memory/broken.md" in cli("list").stderr  # another command still says it


def test_a_secret_in_a_hand_written_memory_is_kept_out_of_the_index_and_reported(cli):
    """A file written by hand (or in an editor) is indexed redacted, and `doctor` says what to do."""
    token, password = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4", "hunter2" + "secret"
    hand = cli.cwd / ".lore/memory/hand.md"
    hand.write_text(
        "---\nid: 6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f\n"
        f"subject: Deploy with {token}\ntype: fact\nkeywords: [deploy, {token}]\n"
        "occurred_at: 2026-01-01T00:00:00Z\n---\n"
        f"Connect to postgres://deploy:{password}@db.internal/prod before the deploy.\n"
    )
    raw = hand.read_bytes()
    shown = cli("search", "deploy", "--json").stdout + cli("recall", "deploy", "--json").stdout
    assert "deploy" in shown.lower() and token not in shown and password not in shown
    with lore.open(cli.cwd) as project:
        texts = [c.text + c.title for c, _ in project.store.lexical_search("memory", ["deploy"], None, 10)]
    assert texts and not any(token in t or password in t for t in texts)
    problems = cli.json("doctor")
    [warning] = [p for p in problems if "in clear" in p["message"]]
    assert warning["where"] == ".lore/memory/hand.md" and "github-token" in warning["message"]
    assert hand.read_bytes() == raw  # the user's file is theirs to fix
    # Everything that shows the memory reads it redacted, the file kept as it is.
    pack = cli("recall", "connect to postgres before the deploy", "--no-code", "--level", "L3").stdout
    assert "postgres://deploy:" in pack and password not in pack
    shown = cli("show", "hand")
    assert "postgres://deploy:" in shown.stdout and token not in shown.stdout and password not in shown.stdout
    assert "hand.md holds 2 github-token, 1 url-password in clear (shown redacted)" in shown.stderr
    assert cli.json("show", "hand")["redacted"] == "2 github-token, 1 url-password"
    tags = cli("tag", "hand").stdout + cli("tag", "hand", "--json").stdout  # tags were shown in clear
    assert "deploy" in tags and "[REDACTED:github-token]" in tags and token not in tags
    with lore.open(cli.cwd) as project:
        detail = str(project.browser.detail("hand").to_dict())
    assert "postgres://deploy:" in detail and password not in detail and token not in detail
    assert hand.read_bytes() == raw


def test_a_secret_in_a_hand_written_file_name_is_reported_and_never_printed(cli):
    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    (cli.cwd / f".lore/memory/deploy-{token}.md").write_text(
        "---\nid: 6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f\nsubject: Deploy\ntype: fact\n"
        "occurred_at: 2026-01-01T00:00:00Z\n---\nDeploy from main.\n"
    )
    out = cli("doctor", "--json", ok=False).stdout
    assert token not in out
    # not indexed: the index would keep the name in clear (its paths, listings, results)
    [error] = [p for p in json.loads(out) if "looks like a secret" in p["message"]]
    assert error["where"] == ".lore/memory/deploy-[REDACTED:github-token].md"
    assert "(1 github-token), so the file is not indexed; rename it (git mv)" in error["message"]
    assert token not in cli("list", "--json").stdout


def test_a_secret_in_a_custom_field_of_a_hand_written_memory_is_reported(cli):
    """Every field the file holds is checked, not only the ones Lore indexes."""
    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    (cli.cwd / ".lore/memory/hand.md").write_text(
        "---\nid: 6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f\nsubject: Deploy\ntype: fact\nkeywords: [deploy]\n"
        f"occurred_at: 2026-01-01T00:00:00Z\ndeploy:\n  token: {token}\n---\nDeploy from main.\n"
    )
    [warning] = [p for p in cli.json("doctor") if "in clear" in p["message"]]
    assert warning["where"] == ".lore/memory/hand.md" and "github-token" in warning["message"]


def test_an_index_from_before_memory_redaction_is_read_again(cli):
    """Memory chunks indexed in clear by an older Lore (older memory format)
    are re-read once, so the secret leaves the index without any file changing."""
    from lore.memory import sync

    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    hand = cli.cwd / ".lore/memory/hand.md"
    hand.write_text(
        "---\nid: 6f1c2d3e-4a5b-4c6d-8e7f-8a9b0c1d2e3f\nsubject: Deploy token\ntype: fact\n"
        f"keywords: [deploy]\noccurred_at: 2026-01-01T00:00:00Z\n---\nThe deploy uses {token} today.\n"
    )
    cli("index")
    raw, st, rel = hand.read_bytes(), hand.stat(), ".lore/memory/hand.md"
    with lore.open(cli.cwd) as project:  # what the previous format kept: the text as written
        store = project.store
        memory, body_line = sync.load_memory(raw, rel, sync.location_of(rel))
        with store.transaction():
            store.delete_files([rel])
            file_id = store.put_file(rel, sync.KIND, "old", st.st_mtime_ns, st.st_size)
            store.put_memory(file_id, sync.record_of(memory, rel, body_line))
            store.put_chunks(file_id, sync.KIND, sync.memory_chunks(memory, body_line))
            store.set_meta("memory_format", "1")
        assert any(token in c.text for c, _ in store.lexical_search("memory", ["deploy"], None, 5))
    [hit] = cli.json("search", "deploy")
    assert token not in json.dumps(hit) and "REDACTED" in json.dumps(hit)


def test_a_file_in_place_of_a_lore_folder_is_reported_with_what_to_do(cli):
    memory_dir = cli.cwd / ".lore/memory"
    memory_dir.rmdir()
    memory_dir.write_text("not a folder")
    doctor = cli("doctor", "--json", ok=False)
    assert doctor.returncode == 1
    [problem] = [p for p in json.loads(doctor.stdout) if p["where"] == ".lore/memory"]
    assert problem["level"] == "error" and "is a file, not a folder" in problem["message"]
    add = cli("add", "-t", "Blocked", "-b", "A body that cannot be written.", ok=False)
    assert add.returncode != 0 and "is a file where Lore needs a folder" in add.stderr
    assert "Traceback" not in add.stderr and memory_dir.read_text() == "not a folder"


@pytest.mark.skipif(ON_POSTGRES, reason="the SQLite index file of the project")
@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_a_folder_in_place_of_the_index_is_named_not_rebuilt_over(cli, suffix):
    # A folder named like the WAL or shared-memory file was "index error (unable to open
    # database file); run `lore doctor`, or `lore index --force`", and both failed the same.
    index = cli.cwd / ".lore/index.db"
    for other in ("", "-wal", "-shm"):
        Path(f"{index}{other}").unlink(missing_ok=True)
    folder = Path(f"{index}{suffix}")
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    for command in ("list", "index", "doctor"):
        proc = cli(command, ok=False)
        assert proc.returncode == 1 and proc.stderr.strip() == (
            f"lore: error: {folder} is a folder, not Lore's index; move it out of the way "
            "(the index is rebuilt from the files)"
        )
    assert (folder / "keep.txt").read_text() == "mine"


def test_a_memory_folder_linked_outside_the_project_is_never_written(cli, tmp_path):
    """A cloned repository may carry `.lore/memory` as a link elsewhere: Lore
    must not write there (reads skip it too), and doctor says what to do."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    memory_dir = cli.cwd / ".lore/memory"
    memory_dir.rmdir()
    memory_dir.symlink_to(elsewhere)
    add = cli("add", "-t", "Where to", "-b", "This body must not leave the project.", ok=False)
    assert add.returncode != 0 and "outside the project" in add.stderr and "Traceback" not in add.stderr
    assert list(elsewhere.iterdir()) == []
    doctor = cli("doctor", "--json", ok=False)
    [problem] = [p for p in json.loads(doctor.stdout) if p["where"] == ".lore/memory"]
    assert problem["level"] == "error" and "outside the project" in problem["message"]


@pytest.mark.parametrize(
    "option, value",
    [("--file", "../secrets.txt"), ("--file", "/etc/hostname"), ("--applies-to", "file:/tmp/x.py")],
)
def test_paths_outside_the_project_are_refused_in_a_new_memory(cli, option, value):
    proc = cli(
        "add", "-t", "Pointing out", "-b", "A memory that names a file elsewhere.", option, value, ok=False
    )
    assert proc.returncode != 0 and "not a path inside the project" in proc.stderr
    assert not list((cli.cwd / ".lore/memory").glob("*.md"))


def test_an_edit_cannot_point_a_memory_outside_the_project(cli):
    added = cli.json("add", "-t", "Edited", "-b", "A memory whose scope is edited later.")
    path = cli.cwd / added["path"]
    before = path.read_bytes()
    for setting in ("applies_to=file:../../etc/passwd", "files=[/etc/hostname]"):
        proc = cli("edit", added["id"][:8], "--set", setting, ok=False)
        assert proc.returncode != 0 and "not a path inside the project" in proc.stderr
    assert path.read_bytes() == before


def test_a_memory_is_never_anchored_to_lores_own_folder(cli):
    """Anchoring to another agent's private file told whether it exists (`lore
    verify` anchored 1 or 0): Lore's folder is refused as a memory's file, and a
    hand-written one is not anchored."""
    private = cli.cwd / ".lore/local/bob/2026-12-01-bob-secret.md"
    private.parent.mkdir(parents=True)
    private.write_text("---\nsubject: Bob's\n---\nprivate\n")
    proc = cli(
        "add", "-t", "Pointing in", "-b", "Names a file of Lore's.", "--file", ".lore/local/x.md", ok=False
    )
    assert proc.returncode == 2 and "is in .lore/, Lore's own folder" in proc.stderr
    added = cli.json("add", "-t", "Hand anchored", "-b", "Its files are written by hand below.")
    path = cli.cwd / added["path"]
    path.write_text(
        path.read_text().replace("---\n\n", "files: [.lore/local/bob/2026-12-01-bob-secret.md]\n---\n\n", 1)
    )
    assert cli.json("verify", added["id"][:8])["anchored"] == 0


def test_a_misspelt_field_or_an_unclosed_list_is_refused_not_kept(cli):
    """`--set tpye=decision` wrote a field `tpye` and left `type` as it was;
    `--set keywords=[a,b` stored the keywords '[a' and 'b'."""
    added = cli.json("add", "-t", "Slips", "-b", "A memory edited with slips of the keyboard.")
    path = cli.cwd / added["path"]
    before = path.read_bytes()
    for setting, says in (
        ("tpye=decision", "did you mean 'type'"),
        ("titel=Slips", "did you mean 'title'"),
        ("keyword=[a, b]", "did you mean 'keywords'"),  # a field's singular is a slip; its plural, a name
        ("keywords=[a,b", "not a YAML list or mapping"),
    ):
        proc = cli("edit", added["id"][:8], "--set", setting, ok=False)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert path.read_bytes() == before
    cli("edit", added["id"][:8], "--set", "owner=ops team", "--set", "sources=[a, b]")  # fields of one's own
    cli("edit", added["id"][:8], "--set", "title=[Draft] auth flow")  # text that starts with a bracket
    text = path.read_text()
    assert "owner: ops team" in text and "[Draft] auth flow" in text


@pytest.mark.parametrize("field", ["agent", "visibility", "storage", "id"])
def test_an_edit_cannot_re_own_a_memory(cli, field):
    """Who a memory belongs to is Lore's to say (the writing agent, the folder):
    an agent setting `agent` or `visibility` would forge authorship or claim a shared file."""
    added = cli.json("add", "-t", "Owned", "-b", "A memory whose owner stays as written.")
    path = cli.cwd / added["path"]
    before = path.read_bytes()
    proc = cli("edit", added["id"][:8], "--set", f"{field}=otheragent", ok=False)
    assert proc.returncode != 0 and "managed by Lore" in proc.stderr
    assert path.read_bytes() == before


def test_relations_name_other_memories_by_full_id(cli):
    """An id prefix in a relation is written as the full id (a prefix would name
    nothing once more memories exist); a memory never relates to or supersedes itself."""
    first = cli.json("add", "-t", "First", "-b", "The first memory of the pair.")
    second = cli.json("add", "-t", "Second", "-b", "The second memory of the pair.")
    path = cli.cwd / first["path"]
    cli("edit", first["id"][:8], "--relate", f"depends_on={second['id'][:5]}")
    assert f"depends_on: {second['id']}" in path.read_text()
    before = path.read_bytes()
    for option, value in (
        ("--relate", f"supersedes={first['id'][:4]}"),
        ("--set", f"superseded_by={first['id']}"),
    ):
        proc = cli("edit", first["id"][:8], option, value, ok=False)
        assert proc.returncode != 0 and "cannot name itself" in proc.stderr
    assert path.read_bytes() == before
    assert first["id"] in {m["id"] for m in cli.json("list")}


def test_an_absolute_path_inside_the_project_is_kept_relative(cli):
    source = cli.cwd / "src" / "app.py"
    added = cli.json(
        "add",
        "-t",
        "Inside",
        "-b",
        "A memory about the app module here.",
        "--file",
        str(source),
        "--applies-to",
        f"file:{source}",
    )
    content = cli.json("show", added["id"][:8])["content"]
    assert "applies_to: file:src/app.py" in content and "- src/app.py" in content
    assert str(cli.cwd) not in content


def test_stats_json_shape(cli):
    add(cli, "One", "The first memory body.", "--type", "lesson")
    data = cli.json("stats")
    assert data["memories"] == 1 and data["by_type"] == {"lesson": 1} and data["search"] in ("bm25", "hybrid")
    assert data["index_bytes"] > 0 and data["broken_files"] == 0


@pytest.mark.skipif(
    ON_POSTGRES,
    reason="damages .lore/index.db to test the SQLite backend's rebuild; PostgreSQL has no such file",
)
def test_corrupt_index_is_rebuilt_with_a_notice(cli):
    add(cli, "Survivor", "This memory survives index corruption.", "--tag", "x")
    index = cli.cwd / ".lore/index.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    proc = cli("search", "survives", "--json")
    assert json.loads(proc.stdout)[0]["title"] == "Survivor"
    assert "rebuilding" in proc.stderr


def test_index_force_rebuilds_and_deleted_index_comes_back(cli):
    add(cli, "Rebuilt", "The index is derived from these files.")
    assert cli.json("index", "--force")["updated"]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{cli.cwd / '.lore/index.db'}{suffix}").unlink(missing_ok=True)
    assert cli.json("search", "derived")[0]["title"] == "Rebuilt"


def test_help_and_version(cli):
    assert "search" in cli("--help").stdout
    assert cli("--version").stdout.startswith("lore, version")
    proc = cli("frobnicate", ok=False)
    assert proc.returncode == 2


def test_a_secret_in_a_rejected_value_is_redacted_before_the_message_cuts_it(cli):
    """The value was cut to 60 characters, then redacted: the cut token no
    longer looked like one and 32 of its 36 characters reached stderr."""
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"[:36]
    proc = cli(
        "session",
        "append",
        "sec",
        "--content",
        "x",
        "--timestamp",
        f"2026-01-01T00:00:00Z {token}",
        "--create",
        ok=False,
    )
    assert proc.returncode != 0 and "[REDACTED:github-token]" in proc.stderr
    assert token[:12] not in proc.stderr
