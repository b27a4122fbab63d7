"""Agent-facing commands: mcp, install/uninstall, hook, capture."""

from __future__ import annotations

import os
import sys

import click

from lore.interfaces.cli.common import json_option, with_lore
from lore.interfaces.cli.decoding import read_text
from lore.interfaces.cli.output import emit_json


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option(
    "--token", envvar="LORE_MCP_TOKEN", help="Bearer token clients must send (required off loopback)."
)
@click.option("--agent", help="Agent name (sees its private memories).")
@click.pass_context
def mcp(ctx, use_http, host, port, token, agent):
    """Run the MCP server (stdio by default)."""
    from lore.interfaces import mcp as server

    project = ctx.obj.get("project")
    if use_http:
        server.serve_http(project, host=host, port=port, token=token, agent=agent)
    else:
        server.serve_stdio(project, agent=agent)


def _lore_command() -> list[str]:
    """How agents should start Lore: this interpreter, so the venv needn't be on PATH."""
    return [sys.executable, "-m", "lore"]


@click.command()
@click.argument("agent", type=click.Choice(["claude-code", "codex", "cursor"]))
@click.option("--instructions", is_flag=True, help="Also add Lore's usage block to CLAUDE.md / AGENTS.md.")
@json_option
@with_lore
def install(lore, agent, instructions, as_json):
    """Register Lore's MCP server (and hooks, for Claude Code) with an agent."""
    from lore.integrations import install as do_install

    changes = do_install(agent, lore.project.root, command=_lore_command(), instructions=instructions)
    if as_json:
        emit_json({"agent": agent, "changes": changes})
    else:
        click.echo("\n".join(changes) if changes else f"Lore is already installed for {agent}")


@click.command()
@click.argument("agent", type=click.Choice(["claude-code", "codex", "cursor"]))
@json_option
@with_lore
def uninstall(lore, agent, as_json):
    """Remove exactly what `lore install` added."""
    from lore.integrations import uninstall as do_uninstall

    changes = do_uninstall(agent, lore.project.root)
    if as_json:
        emit_json({"agent": agent, "changes": changes})
    else:
        click.echo("\n".join(changes) if changes else f"Lore was not installed for {agent}")


@click.command(hidden=True)
@click.argument("event", type=click.Choice(["session-start", "pre-compact", "stop"]))
@click.pass_context
def hook(ctx, event):
    """Claude Code hook entry point: reads the hook's JSON on stdin. Never fails the agent."""
    from lore.integrations.hooks import run_hook

    sys.exit(run_hook(event, ctx.obj.get("project") or os.environ.get("CLAUDE_PROJECT_DIR") or "."))


@click.command()
@click.option(
    "--transcript",
    type=click.Path(exists=True, dir_okay=False),
    help="Agent transcript (JSONL) to capture (002's rules: multi-line assistant messages).",
)
@click.option(
    "--from-stdout",
    "stdout_file",
    type=click.File("rb"),
    help="Agent output with <lore-memory> blocks ('-' = stdin).",
)
@click.option("--agent", help="Agent name recorded on the memories.")
@json_option
@with_lore
def capture(lore, transcript, stdout_file, agent, as_json):
    """Turn an agent's session into memories (deduplicated, idempotent)."""
    if not transcript and not stdout_file:
        from lore.errors import UsageError

        raise UsageError("give --transcript PATH or --from-stdout FILE")
    result = (
        lore.capture_transcript(transcript, agent=agent)
        if transcript
        else lore.capture_stdout(
            read_text(stdout_file, f"--from-stdout {getattr(stdout_file, 'name', '-')}"),
            agent=agent,
            source=getattr(stdout_file, "name", "stdout"),
        )
    )
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"captured {result['created']} new, {result['existing']} already known"
        + (f", {result['gotchas']} gotchas" if result.get("gotchas") else "")
    )
    for problem in result.get("problems", []):
        click.echo(f"lore: {problem}", err=True)


COMMANDS = [mcp, install, uninstall, hook, capture]
