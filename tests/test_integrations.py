"""Installing Lore into agents' config files: real files in a temp project."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from lore.errors import UsageError
from lore.integrations import AGENTS, INSTRUCTIONS, ConfigError, install, uninstall
from lore.integrations.agents import MD_BEGIN, MD_END, hook_command

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

PY = ["/opt/venv/bin/python", "-m", "lore"]


@pytest.fixture
def root(tmp_path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


@pytest.fixture
def codex_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def dump(data) -> str:
    return json.dumps(data, indent=2) + "\n"


# ---------------------------------------------------------------- claude-code


def test_claude_code_into_empty_project(root):
    lines = install("claude-code", root, command=PY)

    assert lines == [
        "created .mcp.json: MCP server 'lore'",
        "created .claude/settings.json: hooks SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd",
    ]
    assert (root / ".mcp.json").read_text() == dump(
        {"mcpServers": {"lore": {"command": "/opt/venv/bin/python", "args": ["-m", "lore", "mcp"]}}}
    )
    assert (root / ".claude" / "settings.json").read_text() == dump(
        {
            "hooks": {
                "SessionStart": [
                    {
                        "matcher": "",
                        "hooks": [
                            {"type": "command", "command": "/opt/venv/bin/python -m lore hook session-start"}
                        ],
                    }
                ],
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {
                                "type": "command",
                                "command": "/opt/venv/bin/python -m lore hook user-prompt-submit",
                            }
                        ]
                    }
                ],
                "PostToolUse": [
                    {
                        "matcher": "",
                        "hooks": [
                            {"type": "command", "command": "/opt/venv/bin/python -m lore hook post-tool-use"}
                        ],
                    }
                ],
                "PreCompact": [
                    {
                        "matcher": "",
                        "hooks": [
                            {"type": "command", "command": "/opt/venv/bin/python -m lore hook pre-compact"}
                        ],
                    }
                ],
                "Stop": [
                    {"hooks": [{"type": "command", "command": "/opt/venv/bin/python -m lore hook stop"}]}
                ],
                "SessionEnd": [
                    {
                        "hooks": [
                            {"type": "command", "command": "/opt/venv/bin/python -m lore hook session-end"}
                        ]
                    }
                ],
            }
        }
    )
    assert not (root / "CLAUDE.md").exists()


def test_claude_code_install_is_idempotent_and_uninstall_removes_created_files(root):
    install("claude-code", root, command=["lore"], instructions=True)
    first = snapshot(root)
    assert install("claude-code", root, command=["lore"], instructions=True) == []
    assert snapshot(root) == first

    lines = uninstall("claude-code", root)
    assert len(lines) == 3 and all(line.startswith("removed ") for line in lines)
    assert list(root.iterdir()) == []  # .claude/ went too: Lore created it
    assert uninstall("claude-code", root) == []


EXISTING_MCP = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
        },
    },
    "note": "team servers — don't touch",
}
EXISTING_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "ruff format"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
    },
    "model": "opus",
}


def test_claude_code_merges_into_existing_files_and_uninstall_restores_bytes(root):
    (root / ".mcp.json").write_text(dump(EXISTING_MCP))
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(dump(EXISTING_SETTINGS))
    (root / ".claude" / "settings.local.json").write_text('{"x": 1}\n')
    before = snapshot(root)

    lines = install("claude-code", root, command=PY)
    assert lines == [
        "updated .mcp.json: set MCP server 'lore'",
        "updated .claude/settings.json: set hooks SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd",
    ]
    mcp = json.loads((root / ".mcp.json").read_text())
    assert mcp["mcpServers"]["github"] == EXISTING_MCP["mcpServers"]["github"]
    assert list(mcp["mcpServers"]) == ["github", "lore"]
    assert mcp["note"] == EXISTING_MCP["note"]

    settings = json.loads((root / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == EXISTING_SETTINGS["permissions"]
    assert settings["model"] == "opus"
    hooks = settings["hooks"]
    assert hooks["PostToolUse"][0] == EXISTING_SETTINGS["hooks"]["PostToolUse"][0]
    assert hooks["PostToolUse"][1] == {
        "matcher": "",
        "hooks": [{"type": "command", "command": hook_command(PY, "PostToolUse")}],
    }
    # Same event: the user's group first and untouched, Lore's appended.
    assert hooks["SessionStart"][0] == EXISTING_SETTINGS["hooks"]["SessionStart"][0]
    assert hooks["SessionStart"][1] == {
        "matcher": "",
        "hooks": [{"type": "command", "command": hook_command(PY, "SessionStart")}],
    }
    assert hooks["Stop"][0] == EXISTING_SETTINGS["hooks"]["Stop"][0]
    assert hooks["Stop"][1]["hooks"][0]["command"].endswith(" hook stop")
    assert hooks["PreCompact"] == [
        {"matcher": "", "hooks": [{"type": "command", "command": hook_command(PY, "PreCompact")}]}
    ]

    after_first = snapshot(root)
    assert install("claude-code", root, command=PY) == []
    assert snapshot(root) == after_first

    assert uninstall("claude-code", root) == [
        "updated .mcp.json: removed MCP server 'lore'",
        "updated .claude/settings.json: removed hooks SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd",
    ]
    assert snapshot(root) == before


def test_new_command_updates_lore_entries_in_place(root):
    install("claude-code", root, command=["lore"])
    settings = root / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    # The user puts their own hook after Lore's and gives Lore's hook a timeout.
    data["hooks"]["SessionStart"].append({"matcher": "", "hooks": [{"type": "command", "command": "echo 2"}]})
    data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] = 30
    settings.write_text(dump(data))

    assert install("claude-code", root, command=PY) == [
        "updated .mcp.json: set MCP server 'lore'",
        "updated .claude/settings.json: set hooks SessionStart, UserPromptSubmit, PostToolUse, PreCompact, Stop, SessionEnd",
    ]
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert groups == [
        {
            "matcher": "",
            "hooks": [{"type": "command", "command": hook_command(PY, "SessionStart"), "timeout": 30}],
        },
        {"matcher": "", "hooks": [{"type": "command", "command": "echo 2"}]},
    ]
    assert json.loads((root / ".mcp.json").read_text())["mcpServers"]["lore"]["command"] == PY[0]


def test_lore_hook_inside_a_user_group_is_removed_alone(root):
    (root / ".claude").mkdir()
    mixed = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "echo bye"},
                        {"type": "command", "command": "lore hook stop"},
                    ]
                }
            ]
        }
    }
    (root / ".claude" / "settings.json").write_text(dump(mixed))
    uninstall("claude-code", root)
    assert json.loads((root / ".claude" / "settings.json").read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo bye"}]}]}
    }


def test_json_keeps_the_files_indentation(root):
    original = json.dumps({"mcpServers": {"other": {"command": "x"}}}, indent=4) + "\n"
    (root / ".mcp.json").write_text(original)
    install("claude-code", root, command=["lore"])
    assert '\n        "lore": {\n' in (root / ".mcp.json").read_text()
    uninstall("claude-code", root)
    assert (root / ".mcp.json").read_text() == original


def test_file_mode_is_kept(root):
    (root / ".mcp.json").write_text(dump({"mcpServers": {}}))
    os.chmod(root / ".mcp.json", 0o600)
    install("claude-code", root, command=["lore"])
    assert stat.S_IMODE((root / ".mcp.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("name", [".mcp.json", ".claude/settings.json"])
@pytest.mark.parametrize("text", ['{"mcpServers": {', "[1, 2]\n", '{"hooks": [], "mcpServers": []}\n'])
def test_malformed_json_is_reported_and_left_alone(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        install("claude-code", root, command=["lore"])
    assert name.split("/")[-1] in str(err.value) and "fix it" in str(err.value)
    assert snapshot(root) == {name: text.encode()}  # untouched, and nothing else written


def test_write_failure_is_a_config_error_and_leaves_no_temp_file(root, monkeypatch):
    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ConfigError, match=r"mcp.json: cannot write \(Permission denied\)"):
        install("cursor", root, command=["lore"])
    assert list((root / ".cursor").iterdir()) == []


# ---------------------------------------------------------------- cursor


def test_cursor_install_and_uninstall(root):
    assert install("cursor", root, command=["lore"]) == ["created .cursor/mcp.json: MCP server 'lore'"]
    assert json.loads((root / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"lore": {"command": "lore", "args": ["mcp"]}}
    }
    assert install("cursor", root, command=["lore"]) == []
    uninstall("cursor", root)
    assert list(root.iterdir()) == []


def test_cursor_keeps_other_servers(root):
    (root / ".cursor").mkdir()
    (root / ".cursor" / "rules").mkdir()
    original = dump({"mcpServers": {"db": {"url": "http://localhost:9000/mcp"}}})
    (root / ".cursor" / "mcp.json").write_text(original)
    install("cursor", root, command=PY, instructions=True)
    servers = json.loads((root / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers == {
        "db": {"url": "http://localhost:9000/mcp"},
        "lore": {"command": PY[0], "args": ["-m", "lore", "mcp"]},
    }
    assert MD_BEGIN in (root / "AGENTS.md").read_text()
    uninstall("cursor", root)
    assert (root / ".cursor" / "mcp.json").read_text() == original
    assert not (root / "AGENTS.md").exists()


# ---------------------------------------------------------------- codex


EXISTING_TOML = """\
# My Codex settings
model = "gpt-5.1"   # keep this comment
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "4000"]

[mcp_servers.docs.env]
TOKEN = "abc"

# profiles below
[profiles.fast]
model = "gpt-5.1-mini"
"""


def test_codex_into_empty_home(root, codex_home):
    lines = install("codex", root, command=PY)
    config = codex_home / "config.toml"
    assert lines == [f"created {config}: MCP server 'lore' for {root}"]
    data = tomllib.loads(config.read_text())
    assert data == {
        "mcp_servers": {
            "lore": {
                "command": PY[0],
                "args": ["-m", "lore", "mcp"],
                "cwd": str(root),
                "env": {"LORE_PROJECT": str(root)},
            }
        }
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert install("codex", root, command=PY) == []
    uninstall("codex", root)
    assert not config.exists()


def test_codex_preserves_other_tables_and_comments(root, codex_home):
    config = codex_home / "config.toml"
    config.write_text(EXISTING_TOML)

    install("codex", root, command=["lore"])
    text = config.read_text()
    assert text.startswith(EXISTING_TOML)
    data = tomllib.loads(text)
    assert data["mcp_servers"]["docs"] == {
        "command": "docs-server",
        "args": ["--port", "4000"],
        "env": {"TOKEN": "abc"},
    }
    assert data["mcp_servers"]["lore"]["env"] == {"LORE_PROJECT": str(root)}
    assert data["profiles"] == {"fast": {"model": "gpt-5.1-mini"}}

    assert install("codex", root, command=["lore"]) == []
    assert config.read_text() == text
    assert uninstall("codex", root) == [f"updated {config}: removed MCP server 'lore'"]
    assert config.read_bytes() == EXISTING_TOML.encode()


def test_codex_refresh_keeps_the_block_where_it_is(root, codex_home):
    config = codex_home / "config.toml"
    config.write_text(EXISTING_TOML)
    install("codex", root, command=["lore"])
    config.write_text(config.read_text() + "\n[tui]\nanimations = false\n")  # the user adds more

    install("codex", root, command=PY)
    text = config.read_text()
    assert text.endswith("\n[tui]\nanimations = false\n")
    assert tomllib.loads(text)["mcp_servers"]["lore"]["command"] == PY[0]
    uninstall("codex", root)
    assert config.read_text() == EXISTING_TOML + "\n[tui]\nanimations = false\n"


def test_codex_strings_are_escaped(tmp_path, codex_home):
    odd = tmp_path / 'my "odd" \\ project'
    odd.mkdir()
    install("codex", odd, command=["C:\\Tools\\lore.exe"])
    server = tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]["lore"]
    assert server["command"] == "C:\\Tools\\lore.exe"
    assert server["cwd"] == str(odd) and server["env"]["LORE_PROJECT"] == str(odd)


def test_codex_serves_one_project_at_a_time(tmp_path, codex_home):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    install("codex", first, command=["lore"])
    lines = install("codex", second, command=["lore"])
    assert "now serves" in lines[0] and str(first) in lines[0]
    assert uninstall("codex", first)[0].startswith("left ")
    assert uninstall("codex", second) == [
        f"removed {codex_home / 'config.toml'} (it held only Lore's MCP server)"
    ]


def test_codex_refuses_a_lore_table_it_did_not_write(root, codex_home):
    config = codex_home / "config.toml"
    original = '[mcp_servers.lore]\ncommand = "something-else"\n'
    config.write_text(original)
    with pytest.raises(ConfigError, match=r"already defines \[mcp_servers.lore\]"):
        install("codex", root, command=["lore"])
    assert config.read_text() == original
    assert uninstall("codex", root) == []
    assert config.read_text() == original


@pytest.mark.parametrize(
    "text",
    [
        'model = "unterminated\n',
        "[a]\nx = 1\n[a]\nx = 2\n",
        '# lore:begin\n[mcp_servers.lore]\ncommand = "x"\n',
    ],
)
def test_codex_malformed_config_is_left_alone(root, codex_home, text):
    config = codex_home / "config.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match="config.toml"):
        install("codex", root, command=["lore"])
    assert config.read_text() == text


def test_codex_inline_mcp_servers_table_is_reported(root, codex_home):
    config = codex_home / "config.toml"
    original = 'mcp_servers = { docs = { command = "d" } }\n'
    config.write_text(original)
    with pytest.raises(ConfigError, match="inline table"):
        install("codex", root, command=["lore"])
    assert config.read_text() == original


def test_codex_default_location_is_home_dot_codex(root, tmp_path, monkeypatch):
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    install("codex", root, command=["lore"])
    assert (tmp_path / "home" / ".codex" / "config.toml").is_file()


# ---------------------------------------------------------------- instructions


def test_instructions_block_add_refresh_remove(root):
    original = "# Project rules\n\nUse tabs.\n"
    (root / "CLAUDE.md").write_text(original)

    install("claude-code", root, command=["lore"], instructions=True)
    text = (root / "CLAUDE.md").read_text()
    assert text == original + "\n" + MD_BEGIN + "\n" + INSTRUCTIONS.rstrip() + "\n" + MD_END + "\n"

    # An older block, and text the user added after it, are refreshed / kept.
    stale = text.replace(INSTRUCTIONS.rstrip(), "old words") + "\nMore rules.\n"
    (root / "CLAUDE.md").write_text(stale)
    lines = install("claude-code", root, command=["lore"], instructions=True)
    assert lines == ["updated CLAUDE.md: refreshed Lore instructions"]
    assert (root / "CLAUDE.md").read_text() == text + "\nMore rules.\n"

    uninstall("claude-code", root)
    assert (root / "CLAUDE.md").read_text() == original + "\nMore rules.\n"


def test_instructions_round_trip_restores_bytes(root):
    for original in ("no trailing newline", "ends with blank line\n\n", "crlf\r\nfile\r\n"):
        (root / "AGENTS.md").write_bytes(original.encode())
        install("cursor", root, command=["lore"], instructions=True)
        assert MD_END in (root / "AGENTS.md").read_text()
        assert install("cursor", root, command=["lore"], instructions=True) == []
        uninstall("cursor", root)
        restored = (root / "AGENTS.md").read_bytes().decode()
        assert restored.rstrip("\n") == original.rstrip("\n")
        if original.endswith("\n"):
            assert restored == original


def test_agents_md_block_kept_while_the_other_agent_uses_it(root, codex_home):
    install("codex", root, command=["lore"], instructions=True)
    install("cursor", root, command=["lore"], instructions=True)
    assert (root / "AGENTS.md").read_text().count(MD_BEGIN) == 1

    assert "kept the Lore block in AGENTS.md: cursor still uses it" in uninstall("codex", root)
    assert MD_BEGIN in (root / "AGENTS.md").read_text()
    uninstall("cursor", root)
    assert not (root / "AGENTS.md").exists()


def test_instructions_follow_a_symlink(root):
    (root / "AGENTS.md").write_text("# Shared rules\n")
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    install("claude-code", root, command=["lore"], instructions=True)
    assert (root / "CLAUDE.md").is_symlink()
    assert MD_BEGIN in (root / "AGENTS.md").read_text()


@pytest.mark.parametrize("link", ["CLAUDE.md", ".mcp.json", ".claude"])
def test_a_link_out_of_the_project_is_never_written_through(root, tmp_path, link):
    """A repository committing `CLAUDE.md -> ~/.bashrc` had the install append
    Lore's block to the user's file outside the project."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    (outside / ".claude").mkdir()
    (outside / "servers.json").write_text("{}\n")
    target = {
        "CLAUDE.md": outside / "bashrc",
        ".mcp.json": outside / "servers.json",
        ".claude": outside / ".claude",
    }
    (root / link).symlink_to(target[link])
    before, project = snapshot(outside), snapshot(root)
    with pytest.raises(ConfigError, match="leads out of the project"):
        install("claude-code", root, command=["lore"], instructions=True)
    assert snapshot(outside) == before and snapshot(root) == project  # nothing written anywhere
    uninstall("claude-code", root)  # nothing of Lore's there: nothing to do, nothing written
    assert snapshot(outside) == before


def test_a_block_pasted_twice_is_kept_once_and_uninstall_removes_both(root):
    block = f"{MD_BEGIN}\nold words\n{MD_END}\n"
    (root / "CLAUDE.md").write_text(f"# Rules\n\n{block}\nMiddle rule.\n\n{block}\nLast rule.\n")
    assert install("claude-code", root, command=["lore"], instructions=True)[-1] == (
        "updated CLAUDE.md: refreshed Lore instructions"
    )
    text = (root / "CLAUDE.md").read_text()
    assert text.count(MD_BEGIN) == text.count(MD_END) == 1 and "old words" not in text
    assert "Middle rule." in text and "Last rule." in text

    (root / "CLAUDE.md").write_text(f"# Rules\n\n{block}\nMiddle rule.\n\n{block}\nLast rule.\n")
    uninstall("claude-code", root)
    assert (root / "CLAUDE.md").read_text() == "# Rules\n\nMiddle rule.\n\nLast rule.\n"


def test_partial_block_is_reported(root):
    (root / "CLAUDE.md").write_text(f"intro\n{MD_BEGIN}\nhalf a block\n")
    with pytest.raises(ConfigError, match="no '<!-- lore:end -->'"):
        install("claude-code", root, command=["lore"], instructions=True)
    assert (root / "CLAUDE.md").read_text() == f"intro\n{MD_BEGIN}\nhalf a block\n"


def test_instructions_text_covers_the_essentials():
    words = INSTRUCTIONS.split()
    assert len(words) <= 350
    for needle in (
        "memory_search",
        "memory_read",
        "memory_write",
        "search_codebase",
        "lore search",
        "lore code",
        "lore complete",
        "<lore-memory",
        "applies_to",
        "gotcha",
        "secrets",
    ):
        assert needle in INSTRUCTIONS


def test_the_lore_complete_the_instructions_give_runs_as_written(cli):
    """The block told agents `lore complete "<task>"`, which stops on a missing --title."""
    import re
    import shlex

    (command,) = [c for c in re.findall(r"`(lore [^`]+)`", " ".join(INSTRUCTIONS.split())) if "complete" in c]
    args = shlex.split(re.sub(r"<([^>]+)>", lambda m: m.group(1).replace(" ", "-"), command))[1:]
    proc = cli(*args, ok=False)
    assert proc.returncode == 0, f"{command}: {proc.stderr}"
    assert list((cli.cwd / ".lore/memory").glob("*task-id*.md"))


# ---------------------------------------------------------------- arguments


def test_bad_arguments(root):
    with pytest.raises(UsageError, match="unknown agent 'vim'"):
        install("vim", root, command=["lore"])
    with pytest.raises(UsageError, match="command"):
        install("cursor", root, command=[])
    with pytest.raises(UsageError, match="does not exist"):
        install("cursor", root / "missing", command=["lore"])
    assert AGENTS == ("claude-code", "codex", "cursor")


def test_uninstall_gives_back_a_lore_server_the_user_already_had(cli):
    """The user's own `lore` entry (another install's command) is put back byte for byte."""
    original = (
        b'{"mcpServers":{"lore":{"command":"/opt/venv/bin/lore","args":["mcp"]},"other":{"command":"x"}}}'
    )
    mcp = cli.cwd / ".mcp.json"
    mcp.write_bytes(original)
    cli("install", "claude-code")
    assert json.loads(mcp.read_text())["mcpServers"]["lore"]["command"] != "/opt/venv/bin/lore"
    cli("uninstall", "claude-code")
    assert mcp.read_bytes() == original
    assert not (cli.cwd / ".lore/local/install-originals.json").exists()


@pytest.mark.parametrize("agent, path", [("claude-code", ".mcp.json"), ("cursor", ".cursor/mcp.json")])
def test_a_server_of_the_users_own_named_lore_is_never_replaced_nor_removed(root, agent, path):
    """A wrapper the user runs as their "lore" MCP server was replaced without a
    word, and uninstalling after any other edit of the file deleted it."""
    mcp = root / path
    mcp.parent.mkdir(exist_ok=True)
    mine = {"command": "/opt/my-lore-wrapper", "args": ["--profile", "work"]}
    mcp.write_text(dump({"mcpServers": {"lore": mine, "other": {"command": "x"}}}))
    before = snapshot(root)
    with pytest.raises(ConfigError) as refused:
        install(agent, root, command=PY)
    message = str(refused.value)
    assert (
        "not Lore's" in message and "/opt/my-lore-wrapper --profile work" in message and "\n" not in message
    )
    assert snapshot(root) == before  # nothing written, not even the hooks
    assert uninstall(agent, root) == [] and snapshot(root) == before


def test_uninstall_says_it_restored_the_original(cli):
    original = b'{"mcpServers":{"other":{"command":"x"}}}'
    mcp = cli.cwd / ".mcp.json"
    mcp.write_bytes(original)
    cli("install", "claude-code")
    lines = cli("uninstall", "claude-code").stdout
    assert "restored .mcp.json as it was before Lore" in lines and "removed .mcp.json" not in lines
    assert mcp.read_bytes() == original


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_config_that_is_no_regular_file_is_refused_without_hanging(cli, kind):
    """A repository can commit `.mcp.json -> /dev/zero`: `lore install` read it
    forever (and a FIFO blocked it). Now one line names the file; nothing is written."""
    mcp = cli.cwd / ".mcp.json"
    if kind == "fifo":
        os.mkfifo(mcp)
    else:
        mcp.symlink_to("/dev/zero")
    result = cli("install", "claude-code", ok=False)
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if "not on PATH" not in line]
    assert len(errors) == 1 and ".mcp.json" in errors[0] and "not a regular file" in errors[0], errors
    assert not (cli.cwd / ".claude").exists()
    assert mcp.is_fifo() if kind == "fifo" else os.readlink(mcp) == "/dev/zero"


# ---------------------------------------------------------------- found by an audit (stop 47)


@pytest.fixture
def project(root) -> Path:
    """A Lore project: install remembers the files' original bytes in it."""
    (root / ".lore" / "local").mkdir(parents=True)
    return root


def test_a_file_edited_after_a_merged_uninstall_is_never_rolled_back(project):
    """Uninstall merged Lore out of an edited file but kept its first original;
    install and uninstall again then "restored" that copy: the server the user
    had added in between was gone."""
    config = project / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(dump({"mcpServers": {"other": {"command": "other"}}}))
    install("cursor", project, command=["lore"])
    doc = json.loads(config.read_text())
    doc["mcpServers"]["userX"] = {"command": "x"}
    config.write_text(dump(doc))
    uninstall("cursor", project)
    install("cursor", project, command=["lore"])
    uninstall("cursor", project)
    assert set(json.loads(config.read_text())["mcpServers"]) == {"other", "userX"}


def test_codex_taken_out_of_two_projects_is_gone(tmp_path, codex_home):
    """The second project's original of Codex's one config held the first's block:
    restored, it left Lore registered for a project it had been taken out of."""
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        (folder / ".lore" / "local").mkdir(parents=True)
    (codex_home / "config.toml").write_text('model = "o3"\n')
    install("codex", first, command=["lore"])
    install("codex", second, command=["lore"])
    uninstall("codex", first)
    uninstall("codex", second)
    assert (codex_home / "config.toml").read_text() == 'model = "o3"\n'


def test_the_claude_md_linked_to_agents_md_keeps_its_block_while_claude_code_is_installed(project):
    (project / "AGENTS.md").write_text("# Shared rules\n")
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    install("claude-code", project, command=["lore"], instructions=True)
    install("cursor", project, command=["lore"], instructions=True)
    assert "kept the Lore block in AGENTS.md: claude-code still uses it" in uninstall("cursor", project)
    assert MD_BEGIN in (project / "CLAUDE.md").read_text()


def test_the_originals_file_is_never_written_through_a_link(project, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (project / ".lore/local/install-originals.json").symlink_to(victim)
    with pytest.raises(ConfigError, match="install-originals.json.*link"):
        install("cursor", project, command=["lore"])
    assert victim.read_text() == "precious\n"


def test_options_given_to_lore_in_its_entry_are_kept(root):
    (root / ".mcp.json").write_text(
        dump({"mcpServers": {"lore": {"command": "lore", "args": ["--agent", "reviewer", "mcp"]}}})
    )
    install("claude-code", root, command=PY)
    server = json.loads((root / ".mcp.json").read_text())["mcpServers"]["lore"]
    assert server == {"command": PY[0], "args": ["-m", "lore", "--agent", "reviewer", "mcp"]}
    install("claude-code", root, command=["lore"])  # and again, another way of running lore
    assert json.loads((root / ".mcp.json").read_text())["mcpServers"]["lore"]["args"] == [
        "--agent",
        "reviewer",
        "mcp",
    ]


@pytest.mark.parametrize("entry", ["x", 5, ["lore", "mcp"], {"command": "x", "args": "str"}])
def test_a_lore_entry_of_another_shape_is_one_line_naming_the_file(root, entry):
    (root / ".mcp.json").write_text(dump({"mcpServers": {"lore": entry}}))
    with pytest.raises(ConfigError, match=r"\.mcp\.json.*is not Lore's") as raised:
        install("claude-code", root, command=["lore"])
    assert "\n" not in str(raised.value) and "x s t r" not in str(raised.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": 1e400}', "too large to write back"),
        ('{"a": NaN}', "holds NaN"),
        ('{"dup": 1, "dup": 2}', 'gives the key "dup" twice'),
    ],
)
def test_json_that_would_not_be_written_back_the_same_is_left_alone(root, text, said):
    """Rewritten, 1e400 became Infinity (which Node's JSON.parse rejects) and a key
    given twice lost one of its values."""
    (root / ".claude").mkdir()
    (root / ".claude/settings.json").write_text(text)
    with pytest.raises(ConfigError, match=said):
        install("claude-code", root, command=["lore"])
    assert (root / ".claude/settings.json").read_text() == text


def test_a_crlf_instructions_file_keeps_its_line_ends(project):
    (project / "CLAUDE.md").write_bytes(b"# Rules\r\nBe brief here.")
    install("claude-code", project, command=["lore"], instructions=True)
    with (project / "CLAUDE.md").open("ab") as handle:
        handle.write(b"\r\nMore rules.\r\n")
    uninstall("claude-code", project)
    data = (project / "CLAUDE.md").read_bytes()
    assert b"More rules." in data and b"\n" not in data.replace(b"\r\n", b"")


def test_folders_that_were_there_before_install_stay_after_uninstall(project):
    (project / ".claude").mkdir()
    (project / ".cursor").mkdir()
    install("claude-code", project, command=["lore"])
    install("cursor", project, command=["lore"])
    uninstall("claude-code", project)
    uninstall("cursor", project)
    assert (project / ".claude").is_dir() and (project / ".cursor").is_dir()
    assert not (project / ".mcp.json").exists()


def test_an_install_that_cannot_write_one_file_changes_none(project, monkeypatch):
    """.mcp.json was rewritten, then .claude/settings.json could not be: the
    command failed with the first file changed and no original remembered."""
    before = dump({"mcpServers": {"x": {"command": "x"}}})
    (project / ".mcp.json").write_text(before)
    real = os.replace

    def refuse_settings(src, dst):
        if str(dst).endswith("settings.json"):
            raise PermissionError(1, "Operation not permitted")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", refuse_settings)
    with pytest.raises(ConfigError, match="settings.json: cannot write.*nothing was changed"):
        install("claude-code", project, command=["lore"])
    assert (project / ".mcp.json").read_text() == before


@pytest.mark.parametrize(
    "server",
    [
        {"command": "x", "headers": {"x-api-key": "k_live_0123456789abcdefABCDEF"}},
        {"command": "x", "args": ["--key", "Zx9Qp2Lm7Rt4Vb8Nc1Kd3Fg"]},
    ],
)
def test_a_config_holding_a_credential_the_detector_misses_is_never_copied(project, server):
    (project / ".mcp.json").write_text(dump({"mcpServers": {"x": server}}))
    install("claude-code", project, command=["lore"])
    # A file's bytes are remembered under its path (install-originals.json): not this one's.
    originals = project / ".lore/local/install-originals.json"
    assert not originals.exists() or str(project / ".mcp.json") not in originals.read_text()


def test_what_changed_after_an_install_is_never_undone_by_a_later_uninstall(root, codex_home):
    """Lore kept the bytes a config held before its first install; after the
    user took Lore's part out by hand and added a server (or deleted the
    file), the next install kept those old bytes and the uninstall after it
    "restored" them: the new server was lost, the deleted file came back."""
    (root / ".lore" / "local").mkdir(parents=True)  # where a project keeps the originals
    servers = root / ".cursor" / "mcp.json"
    servers.parent.mkdir()
    servers.write_text(dump({"mcpServers": {"a": {"command": "a-server"}}}))
    install("cursor", root, command=["lore"])
    mine = dump({"mcpServers": {"a": {"command": "a-server"}, "b": {"command": "b-server"}}})
    servers.write_text(mine)  # Lore's part out by hand, a server of the user's in
    install("cursor", root, command=["lore"])
    uninstall("cursor", root)
    assert json.loads(servers.read_text()) == json.loads(mine)
    install("cursor", root, command=["lore"])
    servers.unlink()  # the user drops the file altogether
    install("cursor", root, command=["lore"])
    uninstall("cursor", root)
    assert not servers.exists()
    config = codex_home / "config.toml"
    config.write_text('model = "o3"\n')
    install("codex", root, command=["lore"])
    config.write_text('model = "o3"\n\n[mcp_servers.linear]\ncommand = "linear-mcp"\n')
    install("codex", root, command=["lore"])
    uninstall("codex", root)
    assert tomllib.loads(config.read_text()) == {
        "model": "o3",
        "mcp_servers": {"linear": {"command": "linear-mcp"}},
    }


def test_hooks_that_only_look_like_lores_are_left_as_written(root):
    """A hook of another tool named like Lore (`npx @acme/lore-notify hook
    stop`) was rewritten to Lore's, and a user's own way of running Lore's
    hook (an environment prefix, a timeout) lost its prefix; uninstall then
    removed both."""
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = [
        {"hooks": [{"type": "command", "command": "npx @acme/lore-notify hook stop"}]},
        {
            "hooks": [
                {
                    "type": "command",
                    "command": "LORE_AGENT=reviewer /opt/lore/bin/lore hook stop",
                    "timeout": 30,
                }
            ]
        },
    ]
    settings.write_text(dump({"hooks": {"Stop": theirs}}))
    install("claude-code", root, command=["lore"])
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["Stop"] == theirs  # the user's own run of Lore's hook stands for Lore's
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == hook_command(["lore"], "SessionStart")
    data = json.loads(settings.read_text())
    settings.write_text(dump({**data, "model": "opus"}))  # edited since: uninstall merges
    uninstall("claude-code", root)
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": theirs}, "model": "opus"}


def test_an_empty_config_is_filled_and_a_read_only_one_is_left_alone(root):
    """`touch .cursor/mcp.json` was refused as invalid JSON; a 0444 config (its
    owner's way of saying "do not change") was replaced anyway."""
    servers = root / ".cursor" / "mcp.json"
    servers.parent.mkdir()
    servers.touch()
    install("cursor", root, command=["lore"])
    assert json.loads(servers.read_text()) == {"mcpServers": {"lore": {"command": "lore", "args": ["mcp"]}}}
    uninstall("cursor", root)
    settings = root / ".mcp.json"
    settings.write_text(dump({"mcpServers": {"db": {"command": "uvx"}}}))
    settings.chmod(0o444)
    before = settings.read_bytes()
    with pytest.raises(ConfigError, match="read-only"):
        install("claude-code", root, command=["lore"])
    assert settings.read_bytes() == before and not (root / ".claude").exists()


def test_codex_config_with_windows_line_ends_keeps_them(root, codex_home):
    """A CRLF config.toml got LF line ends mixed in before Lore's table."""
    config = codex_home / "config.toml"
    config.write_bytes(b'model = "o3"\r\n[mcp_servers.a]\r\ncommand = "a"')
    install("codex", root, command=["lore"])
    data = config.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"") and tomllib.loads(data.decode())["model"] == "o3"


def test_after_a_changed_config_uninstall_merges_however_many_installs_follow(root):
    """Once an install found the config changed since Lore wrote it, a later
    install took a file already holding Lore's hooks for the original, and the
    uninstall after "restored" it: four of Lore's hooks stayed."""
    (root / ".lore" / "local").mkdir(parents=True)
    settings = root / ".claude" / "settings.json"
    install("claude-code", root, command=["lore"])
    settings.unlink()
    install("claude-code", root, command=["lore"])  # changed since (deleted): merge from now on
    data = json.loads(settings.read_text())
    del data["hooks"]["Stop"]
    settings.write_text(dump(data))  # one hook taken out by hand
    install("claude-code", root, command=["lore"])
    uninstall("claude-code", root)
    assert not settings.exists() or "lore hook" not in settings.read_text()


def test_lores_hook_before_the_users_own_run_of_it_is_not_kept_twice(root):
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir()
    own = {"type": "command", "command": "LORE_AGENT=reviewer lore hook stop", "timeout": 30}
    settings.write_text(
        dump({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "lore hook stop"}, own]}]}})
    )
    install("claude-code", root, command=["lore"])
    assert json.loads(settings.read_text())["hooks"]["Stop"] == [{"hooks": [own]}]
