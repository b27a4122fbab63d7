"""`lore serve`: the HTTP API, the web UI and MCP on one port."""

from __future__ import annotations

import click


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (off loopback needs a token)."
)
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="LORE_TOKEN",
    help="Shared secret: bearer token for the API and MCP, login for the browser (or LORE_TOKEN).",
)
@click.option(
    "--agent", envvar="LORE_AGENT", help="The agent this server acts as (sees its private memories)."
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    help="Another host name clients use to reach the server (repeatable).",
)
@click.pass_context
def serve(ctx, host, port, token, agent, allowed_hosts):
    """Serve the web UI, the JSON API (/docs) and MCP (/mcp) for this project."""
    from lore.interfaces.web.app import serve as run

    run(
        ctx.obj.get("project"),
        host=host,
        port=port,
        token=token,
        agent=agent,
        allowed_hosts=list(allowed_hosts),
    )


COMMANDS = [serve]
