"""Moving, removing, restoring and editing a memory when something is wrong:
destinations `lore mv` can't use are refused with what the user typed, a
write that fails half-way is undone (no trash record, no second copy), a
restore never gives two files one id, edits redact every part they write,
and what a person's terminal shows never carries raw control characters.
All through the CLI, as a real subprocess.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

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


def test_a_failed_mv_leaves_no_copy(memory):
    cli, key, path, before = memory
    (path.parent / "ops").mkdir()
    with immovable(path):
        proc = cli("mv", key[:8], "ops/moved", ok=False)
    assert path.read_bytes() == before and list((path.parent / "ops").iterdir()) == []
    assert [m["id"] for m in cli.json("list")] == [key]
    assert cli.json("show", key[:8])["path"] == f".lore/memory/{path.name}"
    assert proc.returncode == 1 and "nothing was changed" in one_line(proc)


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


def test_set_parses_the_value_then_redacts_it(memory):
    cli, key, path, _ = memory
    cli("edit", key[:8], "--set", f"mycustom={TOKEN}", "--set", f"tags=[a, {TOKEN}]")
    cli("edit", key[:8], "--set", f"nested={{k: [x, {TOKEN}]}}", "--set", "count=3")
    front = frontmatter(path)
    assert front["mycustom"] == "[REDACTED:github-token]"  # a word stays a word
    assert front["keywords"] == ["a", "[REDACTED:github-token]"]  # a list stays a list
    assert front["nested"] == {"k": ["x", "[REDACTED:github-token]"]} and front["count"] == 3
    assert TOKEN not in path.read_text()


# -- what a terminal shows --------------------------------------------------------------------------------


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
