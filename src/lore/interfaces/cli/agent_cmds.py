"""Agent-facing commands: mcp, install/uninstall, hook, capture."""

from __future__ import annotations

import os
import sys

import click

from lore.interfaces.cli.common import agent_of, identity_options, json_option, project_of, with_lore
from lore.interfaces.cli.decoding import read_text
from lore.interfaces.cli.output import emit_json, progress_bar, warn


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --http.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on with --http.",
)
@click.option(
    "--token",
    envvar="LORE_MCP_TOKEN",
    help="Bearer token clients must send (required off loopback). Prefer LORE_MCP_TOKEN: "
    "other users see a command line.",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    help="Another host name clients use to reach the server (repeatable).",
)
@identity_options
@click.pass_context
def mcp(ctx, use_http, host, port, token, allowed_hosts, project_path, agent_name):
    """Run the MCP server for agents (stdio by default). Its agent identity is fixed at start.

    \b
    Examples:
      lore mcp                       # what agents' configs run (see `lore install`)
      lore --agent codex mcp --http --port 8765
    """
    from lore.interfaces import mcp as server

    project, agent = project_of(ctx, project_path), agent_of(ctx, agent_name)
    if use_http:
        server.serve_http(
            project, host=host, port=port, token=token, agent=agent, allowed_hosts=list(allowed_hosts)
        )
    else:
        server.serve_stdio(project, agent=agent)


# Agents whose config Lore writes into the project (committed with the code).
_PROJECT_FILES = ("claude-code", "cursor")


def _lore_command(agent: str) -> list[str]:
    """How the agent should start Lore. Files committed with the project get the
    command name (`lore`), never this machine's virtualenv path; a user-level
    config (Codex) gets this interpreter, so it works without PATH set up."""
    if agent in _PROJECT_FILES:
        return ["lore"]
    return [sys.executable, "-P", "-m", "lore"]  # -P: never a lore.py of the project it runs in


@click.command()
@click.argument("agent", type=click.Choice(["claude-code", "codex", "cursor"]))
@click.option("--instructions", is_flag=True, help="Also add Lore's usage block to CLAUDE.md / AGENTS.md.")
@json_option
@with_lore
def install(lore, agent, instructions, as_json):
    """Register Lore's MCP server (and hooks, for Claude Code) with an agent.

    \b
    Examples:
      lore install claude-code
      lore install codex --instructions
    """
    import shutil

    from lore.integrations import install as do_install

    command = _lore_command(agent)
    changes = do_install(agent, lore.project.root, command=command, instructions=instructions)
    if command == ["lore"] and not shutil.which("lore"):
        warn(
            "`lore` is not on PATH here; the agent needs it there to start Lore (activate the virtualenv, "
            "or install with pipx)"
        )
    if as_json:
        emit_json({"agent": agent, "changes": changes})
    else:
        click.echo("\n".join(changes) if changes else f"Lore is already installed for {agent}")


@click.command()
@click.argument("agent", type=click.Choice(["claude-code", "codex", "cursor"]))
@json_option
@with_lore
def uninstall(lore, agent, as_json):
    """Remove exactly what `lore install` added.

    \b
    Examples:
      lore uninstall cursor
    """
    from lore.integrations import uninstall as do_uninstall

    changes = do_uninstall(agent, lore.project.root)
    if as_json:
        emit_json({"agent": agent, "changes": changes})
    else:
        click.echo("\n".join(changes) if changes else f"Lore was not installed for {agent}")


@click.command(hidden=True)
@click.argument(
    "event",
    type=click.Choice(
        [
            "session-start",
            "user-prompt-submit",
            "post-tool-use",
            "pre-compact",
            "stop",
            "session-end",
            "consolidate",
            "record",
        ]
    ),
)
@click.pass_context
def hook(ctx, event):
    """Claude Code hook entry point: reads the hook's JSON on stdin. Never fails the agent."""
    from lore.integrations.hooks import run_hook

    sys.exit(run_hook(event, ctx.obj.get("project") or os.environ.get("CLAUDE_PROJECT_DIR") or None))


@click.command()
@click.option(
    "--transcript",
    type=click.Path(exists=True, dir_okay=False),
    help="Agent transcript (JSONL) to capture: its multi-line assistant messages, its digest, its errors.",
)
@click.option(
    "--from-stdout",
    "stdout_file",
    type=click.File("rb"),
    help="Agent output with <chati-memory> / <lore-memory> blocks ('-' = stdin).",
)
@click.option("--stdin", "from_stdin", is_flag=True, help="Read agent output from stdin (a pipe).")
@click.option(
    "--tier",
    type=click.Choice(["durable", "daily", "session"]),
    default="durable",
    show_default=True,
    help="Tier of printed blocks that name none.",
)
@click.option("--private", is_flag=True, help="Printed blocks are private to the acting --agent.")
@json_option
@with_lore
def capture(lore, transcript, stdout_file, from_stdin, tier, private, as_json):
    """Turn an agent's session or output into memories (deduplicated, idempotent).

    \b
    Examples:
      lore capture --transcript ~/.claude/projects/myproj/3b1f.jsonl
      codex exec "fix the login bug" | lore capture --stdin
    """
    from lore.errors import UsageError

    if from_stdin:
        if stdout_file is not None or transcript:
            raise UsageError(
                "--stdin reads agent output; don't combine it with --transcript or --from-stdout"
            )
        stdout_file = sys.stdin.buffer
    if not transcript and stdout_file is None:
        raise UsageError("give --transcript PATH, --from-stdout FILE or --stdin")
    source = getattr(stdout_file, "name", "stdout")
    if not isinstance(source, str):
        source = "stdin"
    label = "standard input" if from_stdin or source == "<stdin>" else f"--from-stdout {source}"
    text = "" if transcript else read_text(stdout_file, label)
    with progress_bar("capturing", enabled=not as_json):
        result = (
            lore.capture_transcript(transcript)
            if transcript
            else lore.capture_stdout(text, source=source, tier=tier, private=private)
        )
    if as_json:
        emit_json(result.to_dict())
    else:
        _report_capture(result)
    if result.problems:  # blocks left out: a pipeline (`agent | lore capture --stdin`) must notice
        raise click.exceptions.Exit(1)


def _report_capture(result) -> None:
    line = f"captured {result.created} new, {result.existing} already known"
    if result.evidence:
        line += f", {result.evidence} seen again"
    if result.gotchas:
        line += f", {result.gotchas} gotchas"
    if result.digest and any(result.digest.values()):
        kept = ", ".join(f"{n} {kind.replace('_', ' ')}s" for kind, n in result.digest.items() if n)
        line += f"; digest: {kept}"
    click.echo(line)
    for problem in result.problems:
        click.echo(f"lore: {problem}", err=True)


COMMANDS = [mcp, install, uninstall, hook, capture]
