"""`.lore/config.toml` with values Lore can't use: every command refuses it
in one line naming the file, the section and the key, and what to write
instead — never an internal error, never a silent fall back to a default
(docs/configuration.md). Through the real CLI."""

from __future__ import annotations

import os

import pytest

BASE = '[embedding]\nprovider = "none"\n'

# (what the config says, what the one-line error names)
BAD = [
    ("memory = 5\n", "memory must be a table"),
    ("index = []\n", "index must be a table"),
    ("[recall]\nhalf_life_days = 'x'\n", "[recall] half_life_days must be a number"),
    ("[recall]\nhalf_life_days = 0\n", "[recall] half_life_days must be a number from 0.001"),
    ("[recall]\nbudget = -5\n", "[recall] budget must be a number from 100"),
    ("[recall]\nbudget = 50\n", "[recall] budget must be a number from 100"),
    ("[recall]\nstart_budget = 1e309\n", "[recall] start_budget must be a number"),
    ("[lifecycle]\ndaily_archive_days = -1\n", "[lifecycle] daily_archive_days must be a number from 0"),
    ("[lifecycle]\ncommitted_tiers = 'daily'\n", '[lifecycle] committed_tiers must be a list of "durable"'),
    ("[index]\nmax_file_bytes = 'x'\n", "[index] max_file_bytes must be a whole number"),
    ("[index]\nmax_file_bytes = -1\n", "[index] max_file_bytes must be a whole number from 1"),
    ("[index]\ninclude = 'src/'\n", "[index] include must be a list of quoted strings"),
    ("[index]\nexclude = [1, 2]\n", "[index] exclude must be a list of quoted strings"),
    ("[index]\nhistory_commits = 'many'\n", "[index] history_commits must be a whole number"),
    ("[index]\nauto_sync = 'no'\n", "[index] auto_sync must be true or false"),
    ("[search]\nfusion = 3\n", '[search] fusion must be one of "adaptive"'),
    ("[recal]\nbudget = 100\n", "unknown section [recal]"),
    ("[recall]\nbudgt = 100\n", "unknown setting [recall] budgt; allowed: budget"),
    # [sessions] was checked only by the session commands: a hook stopped recording in silence
    ("[sessions]\nsof_limit_tokens = 5000\n", "unknown setting [sessions] sof_limit_tokens"),
    ("[sessions]\nsoft_limit_tokens = 'x'\n", "[sessions] soft_limit_tokens must be a whole number"),
    ("[sessions]\nsoft_limit_tokens = 10\n", "[sessions] needs protected_recent_tokens < soft_limit_tokens"),
    # a database_url without backend = "postgres" was ignored: a local index, silently
    ("[index]\ndatabase_url = 'postgresql://lore@db.invalid/lore'\n", 'needs [index] backend = "postgres"'),
]


def _config(cli, text: str) -> None:
    (cli.cwd / ".lore/config.toml").write_text(text + BASE)  # top-level keys first


def _one_line(proc) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_a_value_lore_cant_use_is_a_one_line_error_naming_the_key(cli):
    cli.json("add", "-t", "Keep me", "-b", "A memory that must survive a bad config.")
    for text, named in BAD:
        _config(cli, text)
        line = _one_line(cli("list", ok=False))
        assert ".lore/config.toml" in line and named in line, (text, line)
    _config(cli, "")
    assert [m["title"] for m in cli.json("list")] == ["Keep me"]


@pytest.mark.parametrize("command", [("recall", "cache"), ("start",), ("consolidate",), ("gc",), ("stats",)])
def test_every_command_refuses_it_the_same_way(cli, command):
    """The commands that read these keys (and crashed on them) say the same line."""
    _config(cli, "[recall]\nhalf_life_days = 'x'\n[memory]\ntrash_retention_days = 'thirty'\n")
    line = _one_line(cli(*command, ok=False))
    assert "[recall] half_life_days must be a number" in line, line


def test_the_written_defaults_and_documented_keys_are_accepted(cli):
    _config(
        cli,
        "[project]\nid = 'p1'\nname = 'shop'\n[memory]\ntrash_retention_days = 0\n"
        "[index]\ninclude = []\nexclude = ['vendor/']\nmax_file_bytes = 1000000\nhistory_commits = 0\n"
        "auto_sync = false\nbackend = 'sqlite'\n[search]\nfusion = 'rrf'\n"
        "[recall]\nbudget = 2000\nstart_budget = 800.5\nhalf_life_days = 0.5\n"
        "[lifecycle]\ncommitted_tiers = ['daily']\ndaily_archive_days = 0\n"
        "[sessions]\nsoft_limit_tokens = 100000\n",
    )
    assert cli.json("list") == []
    assert cli.json("gc") == {"purged": [], "vectors_removed": 0}


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder"])
def test_a_config_that_is_no_regular_file_is_refused_without_hanging(cli, kind):
    """`.lore/config.toml` is committed, so a repository can make it a link to
    /dev/zero: every command (and Claude Code's hooks) then read it forever.
    A FIFO blocked them, and a folder was a bare 'file system error'."""
    config = cli.cwd / ".lore/config.toml"
    config.unlink()
    if kind == "dev-zero":
        config.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(config)
    else:
        config.mkdir()
    line = _one_line(cli("list", ok=False))
    assert ".lore/config.toml" in line and "not a regular file" in line, line
    assert config.is_symlink() or config.exists()


def test_a_config_linked_to_a_shared_file_is_read(cli, tmp_path):
    """A link to a config shared between projects is followed, as before."""
    shared = tmp_path / "shared.toml"
    shared.write_text("[recall]\nbudget = 'x'\n" + BASE)
    config = cli.cwd / ".lore/config.toml"
    config.unlink()
    config.symlink_to(shared)
    assert "[recall] budget must be a number" in _one_line(cli("list", ok=False))
    shared.write_text(BASE)
    assert cli.json("list") == []


def test_a_link_to_nothing_is_refused_and_a_byte_order_mark_is_read(cli):
    """A config.toml linked to a missing file meant defaults, in silence; one a
    Windows editor saved with a byte order mark was 'invalid TOML' at line 1."""
    config = cli.cwd / ".lore/config.toml"
    config.unlink()
    config.symlink_to("/nonexistent/shared.toml")
    line = _one_line(cli("list", ok=False))
    assert ".lore/config.toml" in line and "/nonexistent/shared.toml, which does not exist" in line, line
    config.unlink()
    config.write_bytes(b"\xef\xbb\xbf" + ("[recall]\nbudget = 'x'\n" + BASE).encode())
    assert "[recall] budget must be a number" in _one_line(cli("list", ok=False))
    config.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    assert cli.json("list") == []


def test_lore_debug_0_is_off(cli):
    _config(cli, "[recall]\nbudget = 'x'\n")
    for value in ("0", "false", "off"):
        _one_line(cli("list", ok=False, env={"LORE_DEBUG": value}))
    assert "Traceback" in cli("list", ok=False, env={"LORE_DEBUG": "1"}).stderr


def test_doctor_says_why_vector_search_is_off(cli):
    """A provider that cannot load was said by every search command, not by doctor."""
    (cli.cwd / ".lore/config.toml").write_text('[embedding]\nprovider = "nonexistent"\n')
    problems = cli.json("doctor")
    assert [p for p in problems if "vector search off, BM25 only" in p["message"]], problems
    (cli.cwd / ".lore/config.toml").write_text(BASE)  # asked for: no problem
    assert not [p for p in cli.json("doctor") if "vector search off" in p["message"]]


def test_a_relative_cache_folder_is_not_used(monkeypatch, tmp_path):
    """LORE_CACHE_DIR=relative/dir put 22 MB of model files into the folder a
    command ran in (a project's work tree most often)."""
    from lore.embed._files import cache_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("LORE_CACHE_DIR", "relative/dir")
    assert cache_dir() == tmp_path / ".cache/lore"
    monkeypatch.setenv("XDG_CACHE_HOME", "also/relative")
    assert cache_dir() == tmp_path / ".cache/lore"
    monkeypatch.setenv("LORE_CACHE_DIR", str(tmp_path / "abs"))
    assert cache_dir() == tmp_path / "abs"


@pytest.mark.parametrize(
    "command", [("status",), ("code", "x"), ("doctor",), ("add", "-t", "T", "-b", "Body text.")]
)
def test_a_lore_now_lore_cannot_read_is_refused_by_every_command(cli, command):
    """LORE_NOW=garbage was refused by the commands that read the lifecycle's
    clock, and silently ignored by the others (status, code, add, doctor)."""
    proc = cli(*command, ok=False, env={"LORE_NOW": "garbage"})
    assert proc.returncode == 2 and "LORE_NOW='garbage' is not an ISO 8601 time" in proc.stderr, proc.stderr
    assert not list((cli.cwd / ".lore/memory").glob("*.md"))
