"""The CLI as a new user and an agent meet it (issue 14): `lore init` in a
subfolder, shell completion, byte-exact uninstalls, no library warnings,
help texts that speak to users, `--files-only` order, `lore stale`
refreshing first, `lore index --reembed` saying how many, `lore stats`, and
what a terminal shows (run under a real pseudo-terminal).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import CLI
from test_code_index import commit, configure, write


def tree(root: Path, *, skip=(".lore",)) -> dict[str, tuple[bytes, int]]:
    """Every file under `root` (git's hooks too, not its objects), with bytes and mode."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir() or rel.split("/")[0] in skip:
            continue
        if rel.startswith(".git/") and not rel.startswith(".git/hooks/"):
            continue
        out[rel] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


# -- init ----------------------------------------------------------------------------------------------


def test_init_in_a_subfolder_goes_to_the_git_root_and_says_why(repo):
    sub = repo / "services/api"
    sub.mkdir(parents=True)
    cli = CLI(sub)
    out = cli("init").stdout
    assert f"{repo} is the top folder of the git repository" in out and "--here" in out
    assert f"initialised {repo / '.lore'}" in out
    assert (repo / ".lore/config.toml").is_file() and not (sub / ".lore").exists()
    again = cli.json("init")
    assert again["project"] == str(repo) and again["created"] == [] and "top folder" in again["reason"]
    here = cli.json("init", "--here")
    assert here["project"] == str(sub) and here["reason"] is None and (sub / ".lore/memory").is_dir()
    # Every file it made is listed (docs/cli.md), the private folder's .gitignore too.
    made = [".lore/", ".lore/memory/", ".lore/local/", ".lore/config.toml", ".lore/.gitignore"]
    assert sorted(here["created"]) == sorted([*made, ".lore/local/.gitignore"])
    # Commands run in the subfolder now find the nearer project.
    assert cli.json("stats")["project"] == str(sub)


def test_init_at_the_top_or_outside_git_says_nothing_about_git(tmp_path, repo):
    assert "git repository" not in CLI(repo)("init").stdout
    plain = tmp_path / "plain"
    plain.mkdir()
    out = CLI(plain)("init").stdout
    assert out.startswith(f"initialised {plain / '.lore'}") and "next:" in out


def test_init_where_dot_lore_is_a_file_names_that_file(tmp_path):
    """It said "file system error: .../.lore/memory: Not a directory"."""
    plain = tmp_path / "p1"
    plain.mkdir()
    (plain / ".lore").write_text("mine\n")
    proc = CLI(tmp_path)("init", "p1", ok=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert f"{plain / '.lore'} is a file where Lore needs a folder" in lines[0]
    assert (plain / ".lore").read_text() == "mine\n"


def test_init_refuses_a_bare_repository_and_the_git_folder(tmp_path, repo):
    """Neither holds the project's files: .lore/ made there would index git's
    own files and history without a work tree, and hooks that never run."""
    write(repo, "a.py", "a = 1\n")
    commit(repo, "first")
    bare = tmp_path / "shop.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    for where, args, says in (
        (bare, ("init",), "bare"),
        (tmp_path, ("init", str(bare)), "bare"),
        (bare / "refs", ("init", "--here"), "bare"),
        (repo / ".git", ("init",), str(repo)),
        (repo / ".git/refs", ("init", "--here"), str(repo)),
    ):
        proc = CLI(where)(*args, ok=False)
        assert proc.returncode == 2 and says in proc.stderr, (where, args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob(".lore"))


# -- completion -------------------------------------------------------------------------------------


def test_shell_completion_scripts_and_completions(cli):
    for shell, marker in (
        ("bash", "complete -o nosort -F"),
        ("zsh", "#compdef lore"),
        ("fish", "complete --no-files"),
    ):
        assert marker in cli("completion", shell).stdout
    env = {"_LORE_COMPLETE": "bash_complete", "COMP_WORDS": "lore se", "COMP_CWORD": "1"}
    found = cli(env=env).stdout.split()
    assert {"plain,search", "plain,session"} <= set(found)
    env = {"_LORE_COMPLETE": "bash_complete", "COMP_WORDS": "lore edit x --rep", "COMP_CWORD": "3"}
    assert {"plain,--replace-section", "plain,--replace"} <= set(cli(env=env).stdout.split())
    assert cli("completion", "tcsh", ok=False).returncode == 2
    script = cli.json("completion", "bash")
    assert script["shell"] == "bash" and script["script"] + "\n" == cli("completion", "bash").stdout


def test_every_command_that_prints_a_result_takes_json():
    from lore.interfaces.cli import cli as group

    servers = {"mcp", "serve"}  # they serve requests; nothing to print as JSON
    missing = [
        name
        for name, command in _commands(group)
        if name not in servers and not any("--json" in param.opts for param in command.params)
    ]
    assert missing == []


# -- uninstall: byte for byte --------------------------------------------------------------------------


def test_hooks_and_agents_uninstall_restore_every_file_byte_for_byte(repo, tmp_path):
    codex = tmp_path / "codex-home"
    codex.mkdir()
    env = {"CODEX_HOME": str(codex)}
    (codex / "config.toml").write_bytes(b'model = "o3"\r\n\r\n[mcp_servers.other]\r\ncommand = "other"\r\n')
    # The team's own files, in their own styles: 4-space JSON, CRLF, no final newline.
    write(repo, ".mcp.json", '{\n    "mcpServers": {\n        "github": {"command": "gh-mcp"}\n    }\n}\n')
    write(repo, ".claude/settings.json", '{"permissions": {"allow": ["Bash(ls)"]}}')
    (repo / "CLAUDE.md").write_bytes(b"# Team notes\r\n\r\nUse tabs.\r\n")
    (repo / "AGENTS.md").write_bytes(b"# Agents\n\nNo final newline")
    hook = repo / ".git/hooks/post-commit"
    hook.write_bytes(b"#!/bin/sh\necho team hook\n")
    hook.chmod(0o750)
    cli = CLI(repo)
    cli("init")
    before, codex_before = tree(repo), tree(codex)

    cli("hooks", "install")
    cli("install", "claude-code", "--instructions")
    cli("install", "codex", "--instructions", env=env)
    cli("install", "cursor")
    assert tree(repo) != before and tree(codex) != codex_before
    assert b"lore" in hook.read_bytes() and b"lore" in (repo / "CLAUDE.md").read_bytes()

    cli("uninstall", "cursor")
    cli("uninstall", "codex", env=env)
    cli("uninstall", "claude-code")
    cli("hooks", "uninstall")
    assert tree(repo) == before
    assert tree(codex) == codex_before


# -- no warnings, help that speaks to users -------------------------------------------------------------


def test_commands_print_no_library_warnings(repo):
    """The default (local) embedding model: its libraries must stay quiet
    (fresh interpreters: a forked run's libraries were imported by the server)."""
    write(repo, "src/app.py", "def retry_once(call):\n    return call()\n")
    commit(repo, "Add app")
    cli = CLI(repo, fresh=True)
    cli("init")
    mid = cli.json(
        "add", "--type", "gotcha", "--title", "Retry once", "--body", "The client retries once on 401."
    )["id"]
    for args in (
        ["index"],
        ["start"],
        ["start", "T-1"],
        ["search", "retry"],
        ["recall", "retry on 401"],
        ["code", "retry"],
        ["history", "app"],
        ["stats"],
        ["status"],
        ["doctor"],
        ["show", mid[:8]],
        ["graph", mid[:8]],
        ["edit", mid[:8], "--append", "Then it gives up."],
    ):
        proc = cli(*args)
        assert proc.stderr == "", f"lore {' '.join(args)} printed on stderr:\n{proc.stderr}"


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    context = click.Context(group)
    for name in group.list_commands(context):  # the CLI loads a command's module on first use
        command = group.get_command(context, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            out += _commands(command, f"{prefix}{name} ")
        elif not command.hidden:
            out.append((prefix + name, command))
    return out


def test_help_texts_speak_to_users():
    from lore.interfaces.cli import cli as root

    jargon = re.compile(r"\b00[0-4]\b|\bseed\b|\bspec\b|ContextResult|IndexResult", re.IGNORECASE)
    assert len(_commands(root)) > 40
    for name, command in _commands(root):
        texts = [command.help or "", command.short_help or ""]
        assert command.help, f"lore {name} has no help"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, f"lore {name} {param.opts[0]} has no help"
                texts.append(param.help)
        for text in texts:
            assert not jargon.search(text), f"lore {name}: {text!r}"
    shown = subprocess.run([sys.executable, "-m", "lore", "--help"], capture_output=True, text=True).stdout
    assert not jargon.search(shown)


def test_list_limit_means_at_most_n_memories(cli):
    assert "At most N memories (default: all)." in " ".join(cli("list", "--help").stdout.split())
    for i in range(3):
        cli("add", "--title", f"Memory {i}", "--body", f"Body number {i} of the test.")
    assert len(cli.json("list")) == 3 and len(cli.json("list", "--limit", "2")) == 2


# -- search results ---------------------------------------------------------------------------------------


def indexed(repo: Path) -> CLI:
    """A project made in `repo` (BM25 only), its code and history indexed."""
    cli = CLI(repo)
    cli("init")
    configure(repo)
    cli("index")
    return cli


def add_alpha_test(code_repo: CLI) -> None:
    """tests/test_alpha.py, alpha.py's test, committed and indexed."""
    write(
        code_repo.cwd,
        "tests/test_alpha.py",
        "from alpha import alpha_retry\n\ndef test_alpha():\n    assert alpha_retry(1)\n",
    )
    commit(code_repo.cwd, "Test alpha")
    code_repo("index")


@pytest.fixture
def code_repo(repo):
    for i, name in enumerate(["alpha", "beta", "gamma", "delta"]):
        body = "\n".join(f"    total += retry_budget * {j}" for j in range(i + 1))
        write(
            repo,
            f"src/{name}.py",
            f"def {name}_retry(retry_budget):\n    total = 0\n{body}\n    return total\n",
        )
    write(repo, "README.md", "# Demo\n\nRetry budgets are explained here.\n")
    commit(repo, "Add retry helpers")
    return indexed(repo)


def test_negative_budgets_and_days_and_backwards_periods_are_usage_errors(code_repo):
    def refused(*args: str, says: str) -> None:
        proc = code_repo(*args, ok=False)
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stdout)
        assert proc.stderr.count("\n") == 1 and says in proc.stderr and "Traceback" not in proc.stderr, (
            proc.stderr
        )

    refused("recall", "retry", "--budget", "-5", says="budget must be a positive number of tokens")
    refused("recall", "retry", "--budget", "0", says="budget must be a positive number of tokens")
    refused("start", "--budget", "-5", says="budget must be a positive number of tokens")
    for days in ("-1", "0", "nan", "inf"):
        refused("code", "retry", "--changed-within", days, says="--changed-within must be a number of days")
    backwards = ("--since", "2026-11-20", "--until", "2026-11-10")
    for command in ("search", "list", "code", "history", "recall"):
        args = [command] if command == "list" else [command, "retry"]
        refused(*args, *backwards, says="--since '2026-11-20' (2026-11-20T00:00:00Z) is not before --until")
    assert code_repo.json("code", "retry", "--changed-within", "1")  # the right values still work
    assert code_repo.json("recall", "retry", "--budget", "500", "--since", "last quarter")["budget"] == 500


def test_files_only_results_come_in_score_order(code_repo):
    hits = code_repo.json("code", "retry", "budget", "--files-only")
    scores = [h["similarity"] for h in hits]
    assert len(hits) >= 4 and scores == sorted(scores, reverse=True)
    assert len({h["file_path"] for h in hits}) == len(hits)


def test_past_work_whose_files_are_all_gone_says_so_instead_of_a_blank(repo):
    """Click: `lore history` printed an empty line under a commit whose only file
    was deleted since, and recall's related work ended in a bare ' — '."""
    write(repo, "docs/advanced.rst", "Pager\n=====\n\nThe pager example.\n")
    commit(repo, "Added example for pager")
    (repo / "docs/advanced.rst").unlink()
    write(repo, "src/pager.py", "def pager_example():\n    return 'pager'\n")
    commit(repo, "Move the docs away from the pager")
    cli = indexed(repo)
    out = cli("history", "added example for pager").stdout
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "Added example for pager" in line)
    assert lines[at + 1].strip() == "since removed: docs/advanced.rst", out
    assert all(line.strip() for line in lines), out
    pack = cli.json("recall", "added example for pager", "--no-code")["markdown"]
    work = [line for line in pack.splitlines() if "Added example for pager" in line]
    assert work and work[0].endswith("— since removed: docs/advanced.rst"), pack
    assert not any(line.rstrip().endswith("—") for line in pack.splitlines()), pack


def test_files_only_in_text_names_each_files_tests_as_json_does(code_repo):
    add_alpha_test(code_repo)
    hits = code_repo.json("code", "alpha_retry", "--files-only")
    assert hits[0]["file_path"] == "src/alpha.py" and hits[0]["tests"] == ["tests/test_alpha.py"]
    lines = code_repo("code", "alpha_retry", "--files-only").stdout.splitlines()
    alpha = next(line for line in lines if "src/alpha.py" in line)
    assert alpha.endswith("tests: tests/test_alpha.py"), lines
    assert not any("tests:" in line for line in lines if "src/beta.py" in line), lines


def test_a_code_block_cut_to_its_first_lines_says_so(repo):
    """Click: recall's L2 block of CliRunner.invoke cited lines 596-643 but
    showed 12 of them, stopping mid-docstring with nothing to say so."""
    body = "\n".join(f"    total += retry_budget * {j}" for j in range(30))
    write(repo, "src/long.py", f"def long_retry(retry_budget):\n    total = 0\n{body}\n    return total\n")
    write(repo, "src/short.py", "def short_retry(retry_budget):\n    return retry_budget\n")
    commit(repo, "Add retry helpers")
    cli = indexed(repo)
    pack = cli.json("recall", "long_retry short_retry retry_budget", "--level", "L2", "--no-memories")
    lines = pack["markdown"].splitlines()
    long_line = next(line for line in lines if line.startswith("- `src/long.py:1-33`"))
    assert long_line.endswith("— first 12 of 33 lines"), lines
    short_line = next(line for line in lines if line.startswith("- `src/short.py:1-2`"))
    assert "first" not in short_line, lines
    at = lines.index(long_line)
    assert lines[at + 1] == "```python" and lines[at + 14] == "```", lines


def test_a_likely_file_names_at_most_three_of_its_matching_symbols(repo):
    """Gin: `render/json.go — code match (JSON, IndentedJSON, SecureJSON, JsonpJSON,
    AsciiJSON, PureJSON, JSON.Render, ...)`: a chunk of many small units named them all."""
    names = ["render_json", "render_xml", "render_yaml", "render_toml", "render_text", "render_html"]
    write(repo, "src/render.py", "".join(f"def {n}(value):\n    return value\n\n\n" for n in names))
    commit(repo, "Add renderers")
    cli = indexed(repo)
    hits = cli.json("code", "render json xml yaml")
    assert hits[0]["symbol"] == ", ".join(names), hits  # one chunk holds them all
    pack = cli.json("recall", "render json xml yaml", "--no-memories")
    files = [f for f in pack["files"] if f["path"] == "src/render.py"]
    assert files[0]["reasons"][0] == "code match (render_json, render_xml, render_yaml, …)", files
    assert "render_toml" not in next(
        line for line in pack["markdown"].splitlines() if "`src/render.py` —" in line
    )
    # The names the task mentions come first (zod's util.ts named toZod 10th of 16).
    pack = cli.json("recall", "the html renderer", "--no-memories")
    files = [f for f in pack["files"] if f["path"] == "src/render.py"]
    assert files[0]["reasons"][0] == "code match (render_html, render_json, render_xml, …)", files


def test_a_file_the_task_names_comes_with_its_tests(code_repo):
    """Gin: `lore recall "handle proxies" --files context.go` listed context.go
    'named by the task' without context_test.go, which search results name."""
    add_alpha_test(code_repo)
    pack = code_repo.json("recall", "retry budgets", "--files", "src/alpha.py", "--no-memories")
    named = [f for f in pack["files"] if f["path"] == "src/alpha.py"]
    assert named[0]["reasons"] == ["named by the task"] and named[0]["tests"] == ["tests/test_alpha.py"], (
        named
    )
    assert "- `src/alpha.py` — named by the task; tests: `tests/test_alpha.py`" in pack["markdown"]


def test_stale_rechecks_the_code_before_answering(code_repo):
    root = code_repo.cwd
    mid = code_repo.json(
        "add",
        "--title",
        "Alpha retry sums the budget",
        "--body",
        "alpha_retry adds the budget once.",
        "--applies-to",
        "file:src/alpha.py",
    )["id"]
    assert code_repo.json("stale") == []
    write(root, "src/alpha.py", "def alpha_retry(retry_budget):\n    return 2 * retry_budget\n")
    stale = code_repo.json("stale")  # no `lore index` in between
    assert [row["id"] for row in stale] == [mid] and "src/alpha.py" in stale[0]["reasons"][0]


def test_index_reembed_re_embeds_everything_and_says_how_many(code_repo):
    root = code_repo.cwd
    configure(root, provider="local")
    first = code_repo.json("index")
    assert first["embedded"] > 0 and first["model"].startswith("local:")
    assert code_repo.json("index")["embedded"] == 0
    proc = code_repo("index", "--reembed")
    count = int(re.search(r"all (\d+) texts re-embedded with local:", proc.stdout).group(1))
    assert count == first["embedded"]


def test_stats_is_a_compact_overview(cli):
    a = cli.json(
        "add", "--type", "decision", "--title", "Use UTC", "--body", "Times are UTC. See [[Nothing]]."
    )
    cli.json(
        "add", "--type", "gotcha", "--title", "Cron drift", "--body", f"Cron drifts; see [[{a['id'][:8]}]]."
    )
    data = cli.json("stats")
    assert data["memories"] == 2 and data["by_type"] == {"decision": 1, "gotcha": 1}
    assert data["by_tier"] == {"hot": 0, "warm": 0, "cold": 2}  # kept tiers: a new memory is cold (001)
    assert data["links"] == 2 and data["broken_links"] == 1 and data["stale"] == 0
    assert data["last_memory_at"]
    lines = cli("stats").stdout.splitlines()
    assert [line.split()[0] for line in lines[:5]] == ["memories", "tiers", "links", "stale", "last"]
    assert (
        "2  (" in lines[0]
        and "decision 1" in lines[0]
        and "gotcha 1" in lines[0]
        and "cold 2" in lines[1]
        and "(1 broken)" in lines[2]
    )
    assert lines[4].endswith("just now")


# -- what a terminal shows ---------------------------------------------------------------------------------


def in_terminal(cwd: Path, *args: str) -> str:
    """Run lore with its stdout on a real pseudo-terminal; return what it printed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lore", *args],
        cwd=cwd,
        stdout=follower,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "160", "TERM": "xterm"},
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr.read()
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.surface
def test_search_recall_and_show_in_a_terminal(code_repo):
    root = code_repo.cwd
    a = code_repo.json(
        "add",
        "--type",
        "decision",
        "--title",
        "Retry budgets are per call",
        "--body",
        "Each call gets its own retry budget; never share one.",
    )
    code_repo.json(
        "add",
        "--type",
        "gotcha",
        "--title",
        "Budget zero means no retry",
        "--body",
        f"A retry budget of 0 disables retries. Related: [[{a['id'][:8]}]].",
    )
    out = in_terminal(root, "search", "retry", "budget")
    assert "Retry budgets are per call" in out and re.search(r"[█░]{8}\s+\d+%", out)
    assert "just now" in out and re.search(r"\.lore/memory/[\w.-]+\.md:\d+", out)
    out = in_terminal(root, "recall", "retry budget per call")
    assert "Memories" in out and re.search(r"[█░]{8}\s+\d+%", out) and "src/" in out
    assert "## Lore recall" not in out  # people get the view, agents (pipes) the Markdown
    out = in_terminal(root, "show", a["id"][:8])
    assert "← linked from: Budget zero means no retry" in out
    piped = code_repo("show", a["id"][:8]).stdout
    assert "linked from" not in piped  # the file's text only, when piped


def test_a_config_holding_a_credential_is_never_copied(cli):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    config = {"mcpServers": {"github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": token}}}}
    (cli.cwd / ".mcp.json").write_text(json.dumps(config, indent=2) + "\n")
    cli("install", "claude-code")
    originals = cli.cwd / ".lore/local/install-originals.json"
    assert token not in originals.read_text()  # the settings file it created is remembered, not this one
    assert stat.S_IMODE(originals.stat().st_mode) == 0o600
    cli("uninstall", "claude-code")
    assert json.loads((cli.cwd / ".mcp.json").read_text()) == config  # merged back out, same content
    assert not originals.exists()


def stderr_in_terminal(cwd: Path, *args: str) -> tuple[str, str]:
    """Run lore with its stderr on a real pseudo-terminal (stdout piped); return (stdout, stderr)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lore", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.wait(timeout=60)
    os.close(leader)
    assert proc.returncode == 0
    return out, b"".join(chunks).decode(errors="replace")


@pytest.mark.surface
def test_progress_shows_on_a_terminal_only(code_repo, tmp_path):
    root = code_repo.cwd
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "assistant",
                "uuid": "u1",
                "sessionId": "s-1",
                "timestamp": "2026-03-01T10:00:00Z",
                "message": {"id": "m1", "role": "assistant", "content": "Line one.\nLine two."},
            }
        )
        + "\n"
    )
    for args, label in [
        (("index", "--force"), "indexing files"),
        (("capture", "--transcript", str(transcript)), "capturing"),
        (("session", "import", str(transcript)), "importing"),
        (("session", "compact", "s-1"), "compacting"),
    ]:
        _, drawn = stderr_in_terminal(root, *args)
        assert label in drawn, (args, drawn)
        piped = code_repo(*args)
        assert label not in piped.stderr and label not in piped.stdout


@pytest.mark.storage_independent
def test_sizes_read_the_same_in_every_interface():
    from lore.interfaces.units import file_size

    assert [file_size(n) for n in (None, 0, 812, 1024, 32_400_000, 1_700_000_000, 5 * 2**40)] == [
        "0 B",
        "0 B",
        "812 B",
        "1.0 KiB",
        "30.9 MiB",
        "1.6 GiB",
        "5120.0 GiB",
    ]


def test_tables_show_brackets_in_titles_as_written(cli):
    """A title is text, never rich markup: `[/x]` used to crash `lore list`
    (MarkupError) and `[embedding]` vanished from it."""
    cli("add", "--title", "Close [/x] tag here", "--body", "An unbalanced closing tag in the title.")
    cli(
        "add",
        "--title",
        "Set [embedding] provider",
        "--body",
        "Configure [embedding] provider in the config.",
    )
    out = cli("list").stdout
    assert "Close [/x] tag here" in out and "Set [embedding] provider" in out
    status = cli("status").stdout.splitlines()
    assert status[0].split()[0] == "index"  # no empty header row above the rows


def test_a_project_folder_that_does_not_exist_is_named_so(cli):
    """`--project` naming no folder said "no .lore/ folder in … run `lore init`";
    and inside a project a typo was looked up upward, so the command quietly
    acted on the project around it (exit 0)."""
    for args, env in (
        (("--project", str(cli.cwd / "typo"), "status"), None),
        (("list", "--project", str(cli.cwd / "typo")), None),
        (("list",), {"LORE_PROJECT": str(cli.cwd / "typo")}),
    ):
        proc = cli(*args, env=env, ok=False)
        assert proc.returncode == 2 and "typo: no such folder" in proc.stderr, proc.stderr
        assert proc.stdout == ""
    bare = cli("--project", str(cli.cwd.parent), "list", ok=False)  # a folder, but no project
    assert bare.returncode == 1 and "no .lore/ folder" in bare.stderr and "lore init" in bare.stderr


def test_a_limit_above_the_most_returned_says_it_was_lowered(cli):
    """`--limit 80` returns at most 50 (MCP refuses more): said on stderr, not silently."""
    for i in range(3):
        cli("add", "--title", f"Widget note {i}", "--body", "widgets are cached", "--type", "lesson")
    for *command, flag in (["search", "widget", "--limit"], ["recall", "widget cache", "--limit-per-type"]):
        proc = cli(*command, flag, "80")
        assert "a limit is at most 50; 80 was lowered to 50" in proc.stderr, command
        assert "lowered" not in cli(*command, flag, "50").stderr


def test_output_that_cannot_be_written_is_named_as_such(cli):
    """`lore add >/dev/full` said "the disk is full" though the memory was
    written (a retry then hit "exists"); `lore list >&-` was an internal error."""
    lore_cmd = [sys.executable, "-m", "lore"]
    with open(os.devnull if not os.path.exists("/dev/full") else "/dev/full", "w") as full:
        proc = subprocess.run(
            [*lore_cmd, "add", "--body", "Written while stdout is full"],
            cwd=cli.cwd,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    if os.path.exists("/dev/full"):
        assert proc.returncode == 1 and "could not write the output" in proc.stderr
        assert "the command itself was done" in proc.stderr and "disk is full" not in proc.stderr
    assert [m["title"] for m in cli.json("list")] == ["Written while stdout is full"]
    closed = subprocess.run(
        ["sh", "-c", 'exec "$0" -m lore list >&-', sys.executable],
        cwd=cli.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert closed.returncode == 0 and "internal error" not in closed.stderr, closed.stderr


def test_a_mistyped_command_or_a_json_before_it_says_what_was_meant(cli):
    """`lore recal` said only "No such command"; `lore --json status` said
    "Did you mean '--version'?"."""
    typo = cli("recal", "x", ok=False)
    assert typo.returncode == 2 and "did you mean 'recall'?" in typo.stderr
    assert "did you mean" not in cli("zzzz", ok=False).stderr
    early = cli("--json", "status", ok=False)
    assert early.returncode == 2 and "--json goes after the command name" in early.stderr
    assert "--version" not in early.stderr and len(early.stderr.strip().splitlines()) == 1


def test_a_dir_filter_naming_no_folder_says_so(code_repo):
    """`lore code foo --dir nonexistent/` printed "no matches", as if the code held none."""
    proc = code_repo("code", "session", "--dir", "nonexistent/")
    assert "no folder nonexistent/ in the project" in proc.stderr
    assert "no folder" not in code_repo("code", "session", "--dir", "src").stderr
    # A file names itself (docs/cli.md): filtered, and not said to be no folder.
    named = code_repo("code", "retry", "--dir", "src/alpha.py", "--json")
    assert "no folder" not in named.stderr
    assert {h["file_path"] for h in json.loads(named.stdout)} == {"src/alpha.py"}
    empty = code_repo("update-index", ok=False)  # nothing named: not "updated 0, deleted 0"
    assert empty.returncode == 2 and "--files" in empty.stderr


# (A backslash ending a cell rich shows doubled, its markup escape's: the plain table shows it once.)
_CELL = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\\"),
    max_size=14,
)


@given(
    columns=st.lists(
        st.sampled_from(["", "id", "type", "title", "tags", "when", "é漢"]), min_size=1, max_size=5
    ),
    data=st.data(),
)
def test_a_plain_table_is_what_rich_prints_without_a_terminal(columns, data):
    """Without a terminal a table is laid out directly (rich took 5 s for
    10,000 memories); whenever it does, it is what rich prints, to the byte."""
    import io

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from lore.interfaces.cli.output import plain_table, printable

    rows = data.draw(st.lists(st.lists(_CELL, min_size=len(columns), max_size=len(columns)), max_size=6))
    rows = [[printable(cell) for cell in row] for row in rows]
    fast = plain_table(columns, rows, 80)
    if fast is None:
        return  # a cell rich would fold: rich lays it out
    buffer = io.StringIO()
    grid = Table(show_edge=False, header_style="bold", pad_edge=False, show_header=any(columns))
    for name in columns:
        grid.add_column(name, overflow="fold")
    for row in rows:
        grid.add_row(*(escape(cell) for cell in row))
    Console(file=buffer, highlight=False, soft_wrap=True, width=80).print(grid)
    assert fast == buffer.getvalue()


def _example_argv(line: str) -> list[str] | None:
    """The `lore` arguments of one example line, or None when it runs no lore
    (`id=$(lore session start)` names its command in a subshell: taken too)."""
    import shlex

    line = line.split("  #", maxsplit=1)[0].strip()
    line = re.sub(r"^\w+=\$\((.*)\)$", r"\1", line)  # id=$(lore session start)
    line = line.split("|")[-1]  # `codex exec ... | lore capture --stdin`
    line = re.split(r"\s[<>]\s?", line)[0]  # redirections
    words = shlex.split(line)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # LORE_X=... lore ...
        words.pop(0)
    return words[1:] if words[:1] == ["lore"] else None


def test_every_command_help_shows_examples_that_parse():
    """docs/cli.md promises examples in each command's help: every command shows
    some (a group's subcommands in the group's help, or their own), and every
    example shown parses (its command, options and arguments exist)."""
    from lore.interfaces.cli import cli as root

    def parse(argv: list[str]) -> None:
        context = root.make_context("lore", list(argv), resilient_parsing=False)
        command: click.Command = root
        while isinstance(command, click.Group):
            with warnings.catch_warnings():  # click 8.2 deprecates protected_args; 8.1 needs it
                warnings.simplefilter("ignore", DeprecationWarning)
                rest = [*context.protected_args, *context.args]
            name, sub, rest = command.resolve_command(context, rest)
            assert sub is not None, argv
            try:
                command, context = sub, sub.make_context(name or "", rest, parent=context)
            except click.BadParameter as error:  # an example's file need not exist here
                assert "does not exist" in str(error), (argv, error)
                return

    tops = {name.split()[0] for name, _ in _commands(root)}
    shown: set[str] = set()
    for name, command in _commands(root):
        help_text = command.help or ""
        parent = root.get_command(click.Context(root), name.split()[0])
        if " " in name and isinstance(parent, click.Group):
            help_text += parent.help or ""
        if "Example" not in help_text:
            continue
        shown.add(name.split()[0])
        block = help_text.split("Example", 1)[1].splitlines()[1:]
        for line in (raw.strip() for raw in block):
            argv = _example_argv(line) if line.startswith(("lore ", "id=", "LORE_", "codex ")) else None
            if argv:
                parse(argv)
    assert tops - shown <= {"mcp-hook", "hook"} and len(shown) > 30, sorted(tops - shown)


def test_small_things_a_new_user_met(cli):
    """Each of these once told a user less than the truth: a fifth tag left out
    of `lore list` without a sign, an option user told to fix "the bundle",
    an import of a daily memory reported as durable, `no matches` from a
    history search where there is no git history at all, and a refused value
    given on the command line exiting 1 like a failure rather than 2."""
    cli("add", "-t", "Many tags", "-b", "A memory with five tags on it.", "--tag", "a1,b2,c3,d4,e5")
    assert "a1, b2, c3, d4, +1" in cli("list").stdout
    proc = cli("complete", "T-1", "-t", "Did it", ok=False)
    assert proc.returncode == 2 and "give --summary" in proc.stderr and "the bundle has" not in proc.stderr
    (cli.cwd / "AGENTS.md").write_text("# Agents\n\n## Testing\n\nRun pytest with -q before every commit.\n")
    cli("import", "AGENTS.md", "--tier", "daily")
    (item,) = cli.json("import", "AGENTS.md")["items"]
    assert (item["status"], item["tier"]) == ("exists", "daily")
    history = cli("history", "session timeout")
    assert "is not in a git repository: there is no past work to search" in history.stderr
    refused = cli("add", "-t", "Good title", "-b", "A body long enough to keep.", "--id", "123", ok=False)
    assert refused.returncode == 2 and "--id: " in refused.stderr


@pytest.mark.skipif(not shutil.which("script"), reason="needs script (util-linux) for a terminal")
def test_a_narrow_terminal_never_folds_ids_or_paths(cli):
    """An audit: at 40 columns `lore list` folded ids (`aaaa22` over `22`) and
    `lore search` split a `path:line` citation over two lines, so neither could
    be copied or clicked."""
    import shlex

    made = cli.json(
        "add", "--title", "A long title " * 6, "--body", "Store every timestamp in UTC.", "--tag", "time"
    )
    env = {**os.environ, "COLUMNS": "40", "LORE_WARM": "0", "NO_COLOR": "1", "TERM": "xterm"}

    def terminal(*args: str) -> str:
        command = shlex.join([sys.executable, "-P", "-m", "lore", *args])
        out = subprocess.run(
            ["script", "-qec", command, "/dev/null"],
            cwd=cli.cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\", "", out.stdout)

    assert made["id"][:8] in terminal("list")
    assert f"{made['path']}:" in terminal("search", "timestamp UTC")
