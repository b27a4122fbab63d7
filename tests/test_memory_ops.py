"""Moving, removing, restoring and editing a memory when something is wrong:
destinations `lore mv` can't use are refused with what the user typed, a
write that fails half-way is undone (no trash record, no second copy; a
failed restore or tier move leaves the memory where it was, once), a
restore never gives two files one id, edits redact every part they write,
and what a person's terminal shows never carries raw control characters.
All through the CLI, as a real subprocess (bulk ``set_tier``, which has no
command, through the Python API); the failures are real (file attributes,
file size limits, links), nothing of Lore's is mocked.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import lore
from conftest import ON_POSTGRES
from test_cli_experience import in_terminal

TOKEN = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"


@pytest.fixture
def memory(cli):
    """A project with one memory: (cli, its id, its file, the file's bytes)."""
    out = cli.json("add", "-t", "Keep me visible", "-b", "Important memory content here.")
    path = cli.cwd / out["path"]
    return cli, out["id"], path, path.read_bytes()


def one_line(proc) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def frontmatter(path: Path) -> dict:
    return yaml.safe_load(path.read_text().split("\n---\n", 1)[0].removeprefix("---\n"))


# -- lore mv: destinations it can't use ------------------------------------------------------------


@pytest.mark.parametrize("name", ["bad\nname", "bad\tname", "bad\x1b[2Jname"])
def test_mv_refuses_a_name_with_control_characters(memory, name):
    cli, key, path, before = memory
    proc = cli("mv", key[:8], name, ok=False)
    assert proc.returncode == 2 and "without control characters" in one_line(proc)
    assert "\x1b" not in proc.stderr  # what was typed is shown escaped, not sent to the terminal
    assert path.read_bytes() == before and [p.name for p in path.parent.iterdir()] == [path.name]
    assert cli.json("show", key[:8])["path"] == f".lore/memory/{path.name}"


@pytest.mark.parametrize(
    ("destination", "said"),
    [
        ("../../../tmp/x.md", "'../../../tmp/x.md' leads outside the project"),
        (".", "'.' is not a file name"),
        ("..", "'..' is not a file name"),
        ("./", "'./' is not a file name"),
        ("notes/..", "'notes/..' is not a file name"),
        ("../../elsewhere.md", "'../../elsewhere.md' is not a memory location"),
    ],
)
def test_mv_errors_quote_the_destination_as_typed(memory, destination, said):
    cli, key, path, before = memory
    proc = cli("mv", key[:8], destination, ok=False)
    assert proc.returncode == 2 and said in one_line(proc)
    assert path.read_bytes() == before and len(cli.json("list")) == 1


@pytest.mark.parametrize("destination", [".lore/memory/ops/", "ops/", "ops"])
def test_mv_to_a_folder_moves_the_file_into_it(memory, destination):
    """A destination ending in / is a folder, and so is one that exists
    (`.lore/memory/ops/` used to rename the memory to ops.md)."""
    cli, key, path, before = memory
    if destination == "ops":
        (path.parent / "ops").mkdir()
    cli("mv", key[:8], destination)
    moved = path.parent / "ops" / path.name
    assert moved.read_bytes() == before and not path.exists()
    assert cli.json("show", key[:8])["path"] == f".lore/memory/ops/{path.name}"


def test_mv_redacts_a_secret_in_the_new_name_and_folder(memory):
    """A file name is committed and indexed like the text: `lore mv` (and MCP's
    edit_memory move) wrote a token given in the destination into it in clear."""
    cli, key, path, before = memory
    aws = "AKIA" + "Q7ZK4M2P9X3N8W5R"
    proc = cli("mv", key[:8], f"keys-{aws}/deploy-{TOKEN}.md")
    assert "redacted before writing: 1 aws-access-key, 1 github-token" in proc.stderr
    moved = path.parent / "keys-redacted-aws-access-key" / "deploy-redacted-github-token.md"
    assert moved.read_bytes() == before and TOKEN not in proc.stdout + proc.stderr
    assert (
        cli.json("show", key[:8])["path"]
        == ".lore/memory/keys-redacted-aws-access-key/deploy-redacted-github-token.md"
    )
    if not ON_POSTGRES:
        index = (cli.cwd / ".lore/index.db").read_bytes().decode("latin-1")
        assert TOKEN not in index and aws not in index
    # A name the scanner took for a file name ("….md") went through whole.
    password = "hunter2" + "hunter2"
    proc = cli("mv", key[:8], f"password={password}.md")
    assert "redacted before writing: 1 password" in proc.stderr and password not in proc.stdout + proc.stderr
    assert cli.json("show", key[:8])["path"].endswith("/password=redacted-password.md")
    # A token with dots, a key with slashes, a name given without its extension.
    jwt = (
        "eyJhbGciOiJIUzI1NiJ9."
        + "eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    )
    for name, kind in ((jwt, "jwt"), (f"notes.password={password}", "password")):
        proc = cli("mv", key[:8], name)
        shown = cli.json("show", key[:8])["path"]
        assert f"redacted-{kind}" in shown and name not in shown and password not in proc.stdout + proc.stderr


# -- a failed rm or mv changes nothing -------------------------------------------------------------------


@contextlib.contextmanager
def immovable(path: Path) -> Iterator[None]:
    """While the block runs, renaming or removing `path` really fails: its
    folder is read-only, or, for root (which file modes don't stop), the file
    is immutable (chattr +i). Skips when neither holds on this file system."""
    if os.geteuid() != 0:
        mode = path.parent.stat().st_mode & 0o7777
        path.parent.chmod(0o555)

        def undo() -> None:
            path.parent.chmod(mode)

    else:
        chattr = shutil.which("chattr")
        made = chattr and subprocess.run([chattr, "+i", str(path)], capture_output=True, text=True)
        if not made or made.returncode != 0:
            why = made.stderr.strip() if made else "no chattr command"
            pytest.skip(f"as root only an immutable file fails a rename, and chattr +i failed here: {why}")

        def undo() -> None:
            subprocess.run([str(chattr), "-i", str(path)], check=True)

    try:
        probe = path.with_name(".probe.md")
        try:
            os.rename(path, probe)
        except OSError:
            pass  # the failure the test needs
        else:
            os.rename(probe, path)
            pytest.skip("this file system lets the file be renamed anyway: no way to fail the write here")
        yield
    finally:
        undo()


def test_a_failed_rm_leaves_no_trash_record(memory):
    cli, key, path, before = memory
    with immovable(path):
        proc = cli("rm", key[:8], ok=False)
    assert path.read_bytes() == before and cli.json("restore", "--list") == []
    assert list((cli.cwd / ".lore/local/trash").glob("*")) == []
    assert proc.returncode == 1 and "nothing was changed" in one_line(proc)
    cli("rm", key[:8])  # once the file can move, the same command works
    assert cli.json("restore", "--list")[0]["id"] == key


def test_rm_of_several_moves_none_when_one_names_no_memory(memory):
    """`lore rm A typo B` trashed A, then stopped at the typo with only its
    error: A was gone without a word and B stayed. Now nothing moves, and a
    key given twice (an id and its file) trashes the memory once."""
    cli, key, path, before = memory
    other = cli.cwd / cli.json("add", "-t", "Second one", "-b", "Another memory content here.")["path"]
    proc = cli("rm", key[:8], "nosuch", other.name, ok=False)
    assert proc.returncode == 1 and "no memory 'nosuch'" in one_line(proc)
    assert path.read_bytes() == before and other.exists() and cli.json("restore", "--list") == []
    trashed = cli.json("rm", key[:8], f".lore/memory/{path.name}", other.name)
    assert sorted(e["original"] for e in trashed) == sorted(f".lore/memory/{p.name}" for p in (path, other))


def test_a_failed_mv_leaves_no_copy(memory):
    cli, key, path, before = memory
    (path.parent / "ops").mkdir()
    with immovable(path):
        proc = cli("mv", key[:8], "ops/moved", ok=False)
    assert path.read_bytes() == before and list((path.parent / "ops").iterdir()) == []
    assert [m["id"] for m in cli.json("list")] == [key]
    assert cli.json("show", key[:8])["path"] == f".lore/memory/{path.name}"
    assert proc.returncode == 1 and "nothing was changed" in one_line(proc)


@contextlib.contextmanager
def undeletable(folder: Path) -> Iterator[None]:
    """While the block runs, no file can be removed from `folder`, while files
    elsewhere can still be linked to its files: the folder is read-only, or,
    for root, append-only (chattr +a). A move out of it then fails after its
    new name was made, the step that must be undone. Skips when neither holds."""
    probe = folder / ".probe"
    probe.write_text("probe\n")
    if os.geteuid() != 0:
        mode = folder.stat().st_mode & 0o7777
        folder.chmod(0o555)

        def undo() -> None:
            folder.chmod(mode)

    else:
        chattr = shutil.which("chattr")
        made = chattr and subprocess.run([chattr, "+a", str(folder)], capture_output=True, text=True)
        if not made or made.returncode != 0:
            probe.unlink()
            why = made.stderr.strip() if made else "no chattr command"
            pytest.skip(
                f"as root only an append-only folder keeps its files, and chattr +a failed here: {why}"
            )

        def undo() -> None:
            subprocess.run([str(chattr), "-a", str(folder)], check=True)

    try:
        try:
            probe.unlink()
        except OSError:
            pass  # the failure the test needs
        else:
            pytest.skip("this file system lets a file be removed anyway: no way to fail the move here")
        yield
    finally:
        undo()
        probe.unlink(missing_ok=True)


def memory_files(cli) -> list[str]:
    """Every Markdown file under .lore/ (the trash too), as project paths."""
    return sorted(str(p.relative_to(cli.cwd)) for p in (cli.cwd / ".lore").rglob("*.md"))


def path_name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def consistent(cli, key: str, rel: str, before: bytes) -> None:
    """The memory `key` is at `rel` only, with the bytes it had, and the index agrees."""
    assert (cli.cwd / rel).read_bytes() == before
    assert [rel] == [p for p in memory_files(cli) if "/trash/" not in p]
    assert [(m["id"], m["path"]) for m in cli.json("list", "--include-archived")] == [(key, rel)]
    assert cli.json("show", key[:8])["path"] == rel
    assert cli.json("doctor") == []


def test_a_failed_restore_leaves_the_memory_in_the_trash(memory):
    """The file is linked back to its place, then can't leave the trash: the
    link made goes again (one file, one id), the trash note stays, so the
    same restore works once the trash folder can change."""
    cli, key, path, before = memory
    rel = str(path.relative_to(cli.cwd))
    cli("rm", key[:8])
    trash = cli.cwd / ".lore/local/trash"
    note = next(trash.glob("*.json"))
    noted, listed = note.read_bytes(), cli.json("restore", "--list")
    with undeletable(trash):
        proc = cli("restore", key[:8], ok=False)
    assert proc.returncode == 1 and "can't be restored" in one_line(proc)
    assert "nothing was changed" in proc.stderr
    assert memory_files(cli) == [str(note.with_suffix(".md").relative_to(cli.cwd))]
    assert note.with_suffix(".md").read_bytes() == before and note.read_bytes() == noted
    assert cli.json("restore", "--list") == listed
    assert cli.json("list") == [] and cli.json("doctor") == []
    assert cli("show", key[:8], ok=False).returncode == 1
    assert cli.json("restore", key[:8])["restored"] == rel  # the way out: the same command
    consistent(cli, key, rel, before)
    assert cli.json("restore", "--list") == [] and list(trash.iterdir()) == []


@pytest.mark.parametrize(
    ("start", "destination"),
    [
        (".lore/local/session", ".lore/memory/promoted.md"),  # promotion: session to durable
        (".lore/memory", ".lore/local/daily/demoted.md"),  # demotion: durable to daily
    ],
)
def test_a_failed_move_between_tiers_leaves_one_file(cli, start, destination):
    """`lore mv` across tiers writes the new file, then can't remove the old
    one: the new file goes again and the memory stays where it was."""
    flags = ["--session"] if "session" in start else []
    out = cli.json("add", *flags, "-t", "Tier mover", "-b", "A memory that changes tier.")
    key, rel = out["id"], out["path"]
    assert rel.startswith(start + "/")
    before = (cli.cwd / rel).read_bytes()
    with undeletable(cli.cwd / start):
        proc = cli("mv", key[:8], destination, ok=False)
    assert proc.returncode == 1 and "can't be moved" in one_line(proc)
    assert "nothing was changed" in proc.stderr
    consistent(cli, key, rel, before)
    assert cli.json("mv", key[:8], destination)["path"] == destination  # the way out: the same command
    assert [m["path"] for m in cli.json("list")] == [destination]


def test_a_failed_tier_change_leaves_one_file(cli):
    """A bulk ``set_tier`` (web UI, JSON API) links the file into the new
    tier's folder, then can't remove it from the old one: the link goes
    again and the memory keeps its tier; the error is reported per memory."""
    out = cli.json("add", "-t", "Tier mover", "-b", "A memory that changes tier.", "-k", "move")
    key, rel = out["id"], out["path"]
    before = (cli.cwd / rel).read_bytes()
    with undeletable(cli.cwd / ".lore/memory"), lore.open(cli.cwd) as project:
        preview = project.bulk("set_tier", new_tier="session", tag="move")
        done = project.bulk("set_tier", new_tier="session", tag="move", apply=True, confirm=preview.digest)
    assert done.applied and [e["path"] for e in done.errors] == [rel]
    assert "\n" not in done.errors[0]["error"] and "permission denied" in done.errors[0]["error"]
    assert list((cli.cwd / ".lore/local/session").glob("*.md")) == []
    consistent(cli, key, rel, before)
    with lore.open(cli.cwd) as project:  # the way out: the same action
        preview = project.bulk("set_tier", new_tier="session", tag="move")
        done = project.bulk("set_tier", new_tier="session", tag="move", apply=True, confirm=preview.digest)
    assert done.applied and not done.errors
    moved = f".lore/local/session/{path_name(rel)}"
    consistent(cli, key, moved, before)


def test_a_failed_archive_leaves_the_daily_memory(cli):
    """Archiving an old daily memory (at `lore consolidate` and session start)
    links it into the archive, then can't remove it from the daily folder: the
    link goes again, the memory stays a daily one, and the next pass archives it."""
    out = cli.json(
        "add", "-t", "Old daily", "-b", "A daily memory past its time.", "--occurred-at", "2020-01-02"
    )
    key = out["id"]
    rel = cli.json("mv", key[:8], ".lore/local/daily/old-daily.md")["path"]
    before = (cli.cwd / rel).read_bytes()
    with undeletable(cli.cwd / ".lore/local/daily"):
        cli("consolidate")
    consistent(cli, key, rel, before)
    assert (
        not (cli.cwd / ".lore/local/archive").exists()
        or list((cli.cwd / ".lore/local/archive").iterdir()) == []
    )
    cli("consolidate")
    consistent(cli, key, f".lore/local/archive/{path_name(rel)}", before)


UNUSABLE_FOLDERS = {
    "a file": lambda path: path.write_text("not a folder\n"),
    "a dangling link": lambda path: path.symlink_to("nowhere"),
    "a link loop": lambda path: path.symlink_to(path.name),
}


@pytest.mark.parametrize("what", UNUSABLE_FOLDERS)
def test_restore_into_an_unusable_folder_keeps_the_trash_entry(cli, what):
    """The memory's old folder is now something else: restore says so in one
    line and the trash keeps the file and its note."""
    out = cli.json("add", "-t", "In ops", "-b", "A memory inside the ops folder.")
    key = out["id"]
    rel = cli.json("mv", key[:8], "ops/in-ops.md")["path"]
    before = (cli.cwd / rel).read_bytes()
    cli("rm", key[:8])
    listed = cli.json("restore", "--list")
    folder = cli.cwd / ".lore/memory/ops"
    folder.rmdir()
    UNUSABLE_FOLDERS[what](folder)
    proc = cli("restore", key[:8], ok=False)
    assert proc.returncode == 1 and "can't be restored" in one_line(proc)
    assert cli.json("restore", "--list") == listed and cli.json("list") == []
    assert [p for p in memory_files(cli) if "/trash/" not in p] == []
    folder.unlink()
    cli("restore", key[:8])
    consistent(cli, key, rel, before)


@pytest.mark.parametrize("destination", [".lore/memory/loop/x.md", ".lore/local/daily/x.md"])
def test_mv_through_a_link_loop_is_a_one_line_error(memory, destination):
    """A folder on the way that is a symlink loop: a file system error in one
    line (before Python 3.13 checking the path raised RuntimeError, an
    internal error), and the memory stays where it was."""
    cli, key, path, before = memory
    loop = cli.cwd / destination.rsplit("/", 1)[0]
    loop.symlink_to(loop.name)
    proc = cli("mv", key[:8], destination, ok=False)
    assert proc.returncode == 1 and "file system error" in one_line(proc)
    assert "internal error" not in proc.stderr
    loop.unlink()
    consistent(cli, key, str(path.relative_to(cli.cwd)), before)


_LIMITED = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv.pop(1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv[0] = "lore"
runpy.run_module("lore", run_name="__main__", alter_sys=True)
"""


def test_mv_whose_new_file_cannot_be_written_changes_nothing(cli):
    """The disk refuses the copy `lore mv` writes (files may not grow past
    100 kB, the memory is 300 kB; the index only reads): one line, no
    partial or temporary file, the memory where it was."""
    body = "A big memory.\n\n" + "lorem ipsum dolor sit amet " * 12_000
    out = cli.json("add", "-t", "Big one", "--body-file", "-", input=body)
    key, rel = out["id"], out["path"]
    before = (cli.cwd / rel).read_bytes()
    assert len(before) > 300_000
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _LIMITED, "100000", "mv", key[:8], ".lore/local/daily/big.md"],
        cwd=cli.cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert proc.returncode == 1 and "file too large" in one_line(proc).lower()
    assert [p.name for p in (cli.cwd / ".lore/local/daily").iterdir()] == []  # no temporary file left
    consistent(cli, key, rel, before)


# -- one id, one file ---------------------------------------------------------------------------------


def test_restore_refuses_a_copy_of_a_live_memory(cli):
    uid = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    cli("add", "--id", uid, "-t", "first", "-b", "first memory body text")
    cli("rm", "aaaaaaaa")
    cli("add", "--id", uid, "-t", "third", "-b", "third memory body text")
    cli("rm", "aaaaaaaa")
    assert cli.json("restore", "aaaaaaaa")["restored"].endswith("third.md")
    proc = cli("restore", "aaaaaaaa", ok=False)
    assert proc.returncode == 1 and f"a memory with id {uid} exists already" in one_line(proc)
    assert "lore rm aaaaaaaa" in proc.stderr
    assert [p.name for p in (cli.cwd / ".lore/memory").glob("*.md")] == [
        Path(cli.json("show", uid)["path"]).name
    ]
    assert [e["original"] for e in cli.json("restore", "--list")][0].endswith("first.md")
    assert cli.json("show", uid)["title"] == "third"


def test_a_trash_note_whose_file_is_gone_is_not_offered(cli):
    """`lore gc` killed between deleting a trashed file and its note (or the file
    deleted by hand) left the note: `restore --list` offered it, and restoring it
    (the newest copy of the id) failed with advice about permissions and lsattr,
    though an older copy of the memory was still in the trash."""
    uid = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    cli("add", "--id", uid, "-t", "first", "-b", "first memory body text")
    cli("rm", "aaaaaaaa")
    cli("add", "--id", uid, "-t", "second", "-b", "second memory body text")
    cli("rm", "aaaaaaaa")
    newest = max((cli.cwd / ".lore/local/trash").glob("*second.md"))
    newest.unlink()  # what the interrupted purge left: the note alone
    listed = cli.json("restore", "--list")
    assert len(listed) == 1 and listed[0]["original"].endswith("first.md")
    assert cli.json("restore", "aaaaaaaa")["restored"].endswith("first.md")
    assert cli.json("show", uid)["title"] == "first"


def test_a_trash_note_lore_did_not_write_is_left_alone(cli, tmp_path):
    """A damaged or edited note (not an object, fields of the wrong type, an
    original outside Lore's memory folders) is skipped like an unreadable one:
    listing, restoring and purging the rest go on, and nothing is moved out of
    the project."""
    ids = [cli.json("add", "-t", f"gone {n}", "-b", f"removed memory number {n}")["id"] for n in (1, 2, 3)]
    for key in ids:
        cli("rm", key)
    notes = sorted((cli.cwd / ".lore/local/trash").glob("*.json"))
    notes[0].write_text("[]")
    notes[1].write_text('{"id": 5, "original": null, "deleted_at": 3}')
    escaping = {"id": ids[2], "original": "../escaped.md", "deleted_at": "2020-01-01T00:00:00+00:00"}
    notes[2].write_text(json.dumps(escaping))
    extra = notes[2].with_name("extra.json")
    extra.write_text(json.dumps({**escaping, "original": "/tmp/escaped-abs.md"}))
    assert cli.json("restore", "--list") == []
    assert cli.json("gc", "--days", "0") == {"purged": [], "vectors_removed": 0}
    proc = cli("restore", ids[2][:8], ok=False)
    assert proc.returncode == 1 and "nothing in the trash matches" in one_line(proc)
    assert not (cli.cwd.parent / "escaped.md").exists() and not Path("/tmp/escaped-abs.md").exists()
    assert all(note.exists() for note in notes)


def test_a_whole_id_in_two_files_is_never_ambiguous(cli):
    uid = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    path = cli.cwd / cli.json("add", "--id", uid, "-t", "third", "-b", "third memory body text")["path"]
    shutil.copy(path, path.with_name("copy.md"))
    for key in (uid, "aaaaaaaa"):
        proc = cli("show", key, ok=False)
        assert proc.returncode == 1 and f"2 files have the id {uid}" in one_line(proc)
        assert "give more of the id" not in proc.stderr
    cli("rm", ".lore/memory/copy.md")  # the way out the message gives
    assert cli.json("show", uid)["path"] == f".lore/memory/{path.name}"


def test_an_ambiguous_prefix_lists_the_ids_it_matches(cli):
    """An audit: `lore show aaaa` said "matches 2 memories (paths…)": no ids to
    give more of, and "…" though both were listed."""
    made = [
        cli.json(
            "add",
            "--id",
            f"aaaa{n}aaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
            "-t",
            f"memory {n}",
            "-b",
            f"a body text number {n}",
        )
        for n in (1, 2)
    ]
    proc = cli("show", "aaaa", ok=False)
    assert proc.returncode == 2 and "give more of the id" in one_line(proc)
    assert all(m["id"][:12] in proc.stderr for m in made) and "…" not in proc.stderr


# -- edits redact what they write ------------------------------------------------------------------------


def test_edit_redacts_section_headings_and_relation_names(memory):
    cli, key, path, _ = memory
    proc = cli("edit", key[:8], "--replace-section", f"Creds {TOKEN}", "--body", "text here long")
    assert TOKEN not in proc.stderr and "added section 'Creds [REDACTED:github-token]'" in proc.stderr
    assert "## Creds [REDACTED:github-token]" in path.read_text()
    other = cli.json("add", "-t", "Other", "-b", "Another memory to relate this one to.")["id"]
    proc = cli("edit", key[:8], "--relate", f"rel_{TOKEN}={other[:8]}")
    assert "redacted before writing: 1 github-token" in proc.stderr
    proc = cli("edit", key[:8], "--find", TOKEN, "--replace", "x", ok=False)
    assert proc.returncode == 2 and TOKEN not in proc.stderr
    assert TOKEN.casefold() not in path.read_text().casefold()
    if not ON_POSTGRES:
        assert TOKEN.casefold() not in (cli.cwd / ".lore/index.db").read_bytes().decode("latin-1").casefold()


def test_a_relation_named_like_a_secret_keeps_its_target(memory):
    """A relation's name is no config key: `rotates_token: <id>` read as the
    line it is written as made the other memory's id a token, and the link broke."""
    cli, key, path, _ = memory
    other = cli.json("add", "-t", "Token rotation", "-b", "Rotate the deploy token monthly.")["id"]
    proc = cli("edit", key[:8], "--relate", f"rotates_token={other[:8]}")
    assert "redacted" not in proc.stderr
    assert frontmatter(path)["relations"] == {"rotates_token": other}


def test_set_parses_the_value_then_redacts_it(memory):
    cli, key, path, _ = memory
    cli("edit", key[:8], "--set", f"mycustom={TOKEN}", "--set", f"tags=[a, {TOKEN}]")
    cli("edit", key[:8], "--set", f"nested={{k: [x, {TOKEN}]}}", "--set", "count=3")
    front = frontmatter(path)
    assert front["mycustom"] == "[REDACTED:github-token]"  # a word stays a word
    assert front["keywords"] == ["a", "[REDACTED:github-token]"]  # a list stays a list
    assert front["nested"] == {"k": ["x", "[REDACTED:github-token]"]} and front["count"] == 3
    assert TOKEN not in path.read_text()


def test_custom_fields_a_caller_adds_are_redacted(project):
    """Fields Lore's own writers put in the frontmatter (a capture's session id,
    an error's signature) are redacted like the named ones."""
    token = "ghp_" + "Cf5Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
    added = project.memories.add(
        body="A memory written with custom fields.", extra={"session_id": token, "refs": [f"cc:{token}"]}
    )
    path = project.project.root / added.path
    assert frontmatter(path)["session_id"] == "[REDACTED:github-token]"
    assert token not in path.read_text() and added.redacted == {"github-token": 2}


# -- what a terminal shows --------------------------------------------------------------------------------


@pytest.mark.surface
def test_terminal_output_escapes_control_characters_and_json_stays_exact(cli):
    body = "body \x1b[2J and \x1b]52;c;aGVsbG8=\x07 osc"
    out = cli.json("add", "-t", "escape body", "-b", body)
    for args in (("search", "escape body"), ("show", out["id"][:8]), ("recall", "escape body")):
        shown = in_terminal(cli.cwd, *args)
        assert "\x1b[2J" not in shown and "\x1b]52" not in shown and "\x07" not in shown, args
        assert "body \\x1b[2J and \\x1b]52;c;aGVsbG8=\\x07 osc" in shown, args
    piped = cli("show", out["id"][:8]).stdout
    assert "\x1b" not in piped and "\\x1b[2J" in piped
    assert body in cli.json("show", out["id"][:8])["content"]
    assert cli.json("search", "escape body")[0]["id"] == out["id"]
    # A right-to-left override reorders what follows it on screen: shown as its escape.
    title = "Invoice \u202egnp.exe\u202c totals"
    cli.json("add", "-t", title, "-b", "A title that a terminal would show reversed.")
    listed = cli("list").stdout
    assert "\u202e" not in listed and "Invoice \\u202egnp.exe\\u202c totals" in listed
    assert title in [m["title"] for m in cli.json("list")]


def test_an_edit_the_disk_refuses_names_the_memory_not_a_temporary_file(cli):
    """A write that fails names the file being written: the error named the
    temporary file beside it (gone by then: `permission denied
    (.lore/memory/.name.md.x1y2.tmp)`), or nothing (`file system error: File too large`)."""
    out = cli.json("add", "-t", "Grows", "-b", "A memory that an edit makes too big for the disk.")
    key, rel = out["id"], out["path"]
    before = (cli.cwd / rel).read_bytes()
    big = "lorem ipsum dolor sit amet " * 4_500  # 121 kB: one argument (at most 128 kB)
    for args in (["edit", key[:8], "--append", big], ["add", "-t", "Too big", "-b", big]):
        proc = subprocess.run(
            [sys.executable, "-P", "-c", _LIMITED, "100000", *args],
            cwd=cli.cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=120,
        )
        assert proc.returncode == 1 and ".tmp" not in proc.stderr, proc.stderr
        written = rel if args[0] == "edit" else ".lore/memory/"
        assert f"{cli.cwd / written}" in one_line(proc) and "file too large" in proc.stderr.lower()
    consistent(cli, key, rel, before)


# -- a merge that leaves conflict markers in a memory ----------------------------------------------


def test_conflict_markers_a_merge_leaves_are_named_as_such(cli, git_env):
    """Two branches edit one memory; `git merge` leaves <<<<<<< ======= >>>>>>>
    in its frontmatter (content_hash differs) and body. Every command names the
    conflict at its first marker line, instead of a YAML error ("could not find
    expected ':'") that does not say what happened; once resolved, the memory
    is back. Markers quoted in a fenced code block are a memory's text."""

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=cli.cwd, check=True, capture_output=True)

    key = cli.json("add", "-t", "Timeouts", "-b", "Requests time out after 30 s.")["id"]
    quoted = cli.json(
        "add",
        "-t",
        "Merging memories",
        "-b",
        "A conflict looks like:\n\n```\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n```",
    )
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "memories")
    git("checkout", "-qb", "other")
    cli("edit", key[:8], "--find", "30 s", "--replace", "10 s")
    git("commit", "-qam", "10 s")
    git("checkout", "-q", "main")
    cli("edit", key[:8], "--find", "30 s", "--replace", "5 s")
    git("commit", "-qam", "5 s")
    assert subprocess.run(["git", "merge", "other"], cwd=cli.cwd, capture_output=True).returncode == 1
    path = next((cli.cwd / ".lore/memory").glob("*timeouts.md"))
    first = path.read_text().split("\n").index("<<<<<<< HEAD") + 1
    proc = cli("show", key[:8], ok=False)
    error = proc.stderr.splitlines()[-1]  # after the warning that the file is skipped
    assert proc.returncode == 1 and f"{path.name}:{first}: unresolved merge conflict" in error
    doctor = cli("doctor", ok=False).stdout + cli("doctor", ok=False).stderr
    assert "unresolved merge conflict" in doctor and "Merging memories" not in doctor
    assert cli.json("show", quoted["id"][:8])["title"] == "Merging memories"
    git("checkout", "--theirs", str(path))
    assert cli.json("show", key[:8])["content"].endswith("Requests time out after 10 s.\n")


def test_a_memory_file_name_the_project_also_has_outside_lore_is_the_memory(cli):
    """`lore show README.md` / `lore rm README.md` found the project's own
    README.md first and refused it ("not a memory file"), so the memory (or a
    stray broken README.md in .lore/memory/) could not be named by its file
    name. A bare name now means the memory; a path (./README.md) still the file."""
    (cli.cwd / "README.md").write_text("# The project\n")
    (cli.cwd / "AGENTS.md").write_text("# Agents\n")
    memory = cli.cwd / ".lore/memory/AGENTS.md"
    memory.write_text(
        "---\nid: agents-notes\nsubject: Agent notes\noccurred_at: 2026-01-01\n---\nHow agents work here.\n"
    )
    stray = cli.cwd / ".lore/memory/README.md"
    stray.write_text("# Team memory\n\nOne file per memory, please.\n")
    assert cli.json("show", "AGENTS.md")["title"] == "Agent notes"
    assert "no YAML frontmatter" in cli("show", "README.md", ok=False).stderr
    proc = cli("show", "./README.md", ok=False)
    assert proc.returncode == 2 and "is not a memory file" in proc.stderr.splitlines()[-1]
    assert [e["original"] for e in cli.json("rm", "README.md")] == [".lore/memory/README.md"]
    assert not stray.exists() and (cli.cwd / "README.md").exists()


def test_two_memories_given_one_file_name_on_two_branches_are_both_kept_by_the_advice(cli, git_env):
    """Same title, same day, on two branches: one file name, two ids; the merge
    is an add/add conflict where "keep the right text" would lose a memory."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=cli.cwd, capture_output=True, text=True)

    git("init", "-q", "-b", "main")
    git("commit", "-q", "--allow-empty", "-m", "start")
    git("checkout", "-qb", "other")
    theirs = cli.json("add", "-t", "Flaky test", "-b", "The timeout test is flaky under load.")
    git("add", "-A")
    git("commit", "-qm", "theirs")
    git("checkout", "-q", "main")
    ours = cli.json("add", "-t", "Flaky test", "-b", "Rerun the timeout test once before digging.")
    git("add", "-A")
    git("commit", "-qm", "ours")
    assert ours["path"] == theirs["path"] and git("merge", "other").returncode == 1
    proc = cli("doctor", ok=False)
    problem = next(line for line in proc.stdout.splitlines() if ours["path"] in line)
    assert "two memories written on two branches under one file name" in problem
    assert ours["id"] in problem and theirs["id"] in problem and "keep both" in problem


def test_tag_and_complete_say_what_they_redacted(memory):
    """Both redacted, as every write does, without saying so (add and edit did)."""
    cli, key, path, _ = memory
    proc = cli("tag", key[:8], "--add", "AKIAIOSFODNN7EXAMPLE")
    assert "redacted before writing: 1 aws-access-key" in proc.stderr
    assert "AKIAIOSFODNN7EXAMPLE" not in path.read_text() and "AKIAIOSFODNN7EXAMPLE" not in proc.stdout
    proc = cli("complete", "T-1", "-t", "Rotate the key", "--summary", f"Rotated {TOKEN} for good")
    assert "redacted before writing: 1 github-token" in proc.stderr and TOKEN not in proc.stderr
    written = next(cli.cwd.glob(".lore/memory/*rotate-the-key*.md"))
    assert TOKEN not in written.read_text()


def test_a_body_given_twice_is_a_usage_error(memory, tmp_path):
    """`--body` won and `--body-file` was dropped without a word."""
    cli = memory[0]
    other = tmp_path / "body.md"
    other.write_text("The body from the file, long enough.")
    proc = cli(
        "add",
        "-t",
        "Twice",
        "-b",
        "The body from the flag, long enough.",
        "--body-file",
        str(other),
        ok=False,
    )
    assert proc.returncode == 2 and "not both" in proc.stderr
    assert not list(cli.cwd.glob(".lore/memory/*twice*.md"))


def test_a_memory_folder_that_is_a_file_is_said_by_every_read_and_once_by_doctor(cli):
    """`lore list` said "no memories" (exit 0) though every shared memory was missing."""
    add = cli.cwd / ".lore/memory"
    shutil.rmtree(add)
    add.write_text("not a folder\n")
    for args in (("list",), ("search", "anything"), ("recall", "anything at all")):
        proc = cli(*args)
        assert ".lore/memory: is a file, not a folder" in proc.stderr, (args, proc.stderr)
    proc = cli("doctor", ok=False)
    assert proc.returncode == 1 and proc.stdout.count("is a file, not a folder") == 1, proc.stdout
    assert add.read_text() == "not a folder\n"


def test_a_broken_memory_files_error_never_shows_a_secret_it_quotes(cli):
    """ "unknown type 'ghp_...'" was stored as written, and shown by `lore index`,
    `lore doctor`, /index and /api/doctor."""
    memory = cli.cwd / ".lore/memory"
    for name, line in (
        ("bad-type.md", f"type: {TOKEN}"),
        ("bad-alias.md", f"subject: *{TOKEN}"),
        ("bad-tag.md", "subject: !AKIA4Q7ZP2LMX9RT3KVB x"),
    ):
        (memory / name).write_text(f"---\n{line}\noccurred_at: 2024-01-01\n---\n\nA body long enough.\n")
    shown = (
        cli("index", ok=False).stderr
        + cli("doctor", ok=False).stdout
        + json.dumps(cli.json("doctor", ok=False))
    )
    assert "bad-type.md" in shown and "bad-tag.md" in shown
    assert TOKEN not in shown and "AKIA4Q7ZP2LMX9RT3KVB" not in shown


def test_a_name_too_long_for_the_file_system_is_a_usage_error(tmp_path):
    """ENAMETOOLONG was a storage error ("file system error", 503 over HTTP):
    the request's fault, said as one."""
    import lore
    from lore.errors import UsageError

    with lore.init(tmp_path / "p") as project:
        added = project.add(title="A memory to move", body="Its body is long enough.")
        for call in (
            lambda: project.move(added.id, "y" * 300 + ".md"),
            lambda: project.show("z" * 300 + ".md"),
        ):
            with pytest.raises(UsageError, match="too long for the file system"):
                call()


def test_gc_removes_the_vectors_no_chunk_uses_and_gives_the_space_back(tmp_path):
    """Vectors of chunks gone (a branch visited, files rewritten) were kept for
    ever: 37% of a large index's vectors belonged to nothing, and neither gc nor
    `index --force` removed them."""
    import numpy as np

    import lore

    with lore.init(tmp_path / "proj") as project:
        store = project.store
        model = "test-model"
        store.put_embeddings(model, ["orphan-hash-1", "orphan-hash-2"], np.ones((2, 4), dtype=np.float32))
        project.add(title="A memory", body="Something worth keeping in the index.")
        before = store.counts()
        from conftest import ON_POSTGRES

        # A shared PostgreSQL database keeps them: every project's and role's (docs/cli.md).
        assert project.prune_vectors() == (0 if ON_POSTGRES else 2)
        assert project.prune_vectors() == 0
        assert store.counts().chunks == before.chunks
