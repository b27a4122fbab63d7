"""The CLI's lazy command table names every command, and only real ones."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from lore.interfaces.cli import COMMANDS, SECTIONS, cli

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip


def test_the_table_matches_the_modules_command_lists():
    found: dict[str, str] = {}
    for module in dict.fromkeys(COMMANDS.values()):
        for command in importlib.import_module(f"lore.interfaces.cli.{module}").COMMANDS:
            assert command.name not in found, f"{command.name} is defined twice"
            found[command.name] = module
    assert found == COMMANDS


def test_help_lists_every_visible_command_once_by_section_and_a_command_loads_only_its_module():
    shown = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "lore", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    sections = shown.stdout.split("\n\n")
    listed = [
        line.split()[0]
        for section in sections
        if section.split(":", 1)[0] in SECTIONS
        for line in section.splitlines()[1:]
    ]
    visible = [name for name in COMMANDS if not cli.get_command(None, name).hidden]  # type: ignore[arg-type, union-attr]
    assert sorted(listed) == sorted(visible) and len(set(listed)) == len(listed)
    assert "_cmds" not in shown.stderr  # listing the commands imports none of them
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from lore.interfaces.cli import run; sys.argv = ['lore', 'search', '--help']\n"
            "try: run()\nexcept SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.endswith('_cmds')), file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
    )
    assert "Search memories" in loaded.stdout
    assert loaded.stderr.strip() == "['lore.interfaces.cli.search_cmds']"


def test_the_json_shapes_docs_cli_md_gives_are_the_ones_printed(cli):
    """Each `JSON:` shape of docs/cli.md names the keys `--json` prints (before,
    `show` printed `redacted`, which the docs did not name)."""
    import re
    from pathlib import Path

    config = cli.cwd / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    docs = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()

    def documented(command: str) -> set[str]:
        section = docs.split(f"### `lore {command}`", 1)[1]
        shape = re.search(r"JSON: (?:a list of )?`(\{.*?\})`", section, re.S)
        assert shape, command
        top = re.sub(r"\[[^\]]*\]|\{[^{}]*\}(?=[,}])", "", shape.group(1)[1:-1])  # values, not keys
        return set(re.findall(r'"(\w+)"', top))

    added = cli.json(
        "add", "-t", "Store times in UTC", "-b", "Every timestamp is stored in UTC.", "--tag", "time"
    )
    assert set(added) == documented("add")
    assert set(cli.json("show", added["id"])) == documented("show")
    assert set(cli.json("list")[0]) == documented("list")
    assert set(cli.json("search", "timestamp UTC")[0]) == documented("search")
    assert set(cli.json("edit", added["id"], "--append", "- Also in logs.")) == documented("edit")
