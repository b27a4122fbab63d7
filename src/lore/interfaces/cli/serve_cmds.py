"""`lore serve`: the HTTP API, the web UI and MCP on one port."""

from __future__ import annotations

import click

from lore.interfaces.cli.common import agent_of, identity_options, project_of
from lore.interfaces.cli.db_cmds import database_option, use_database


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (off loopback needs a token)."
)
@click.option(
    "--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option(
    "--token",
    envvar="LORE_TOKEN",
    help="Shared secret: bearer token for the API and MCP, login for the browser (or LORE_TOKEN).",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    help="Another host name clients use to reach the server (repeatable).",
)
@database_option
@identity_options
@click.pass_context
def serve(ctx, host, port, token, allowed_hosts, database_url=None, project_path=None, agent_name=None):
    """Serve the web UI, the JSON API (/docs) and MCP (/mcp) for this project.

    The server acts as one agent for its whole life (--agent or LORE_AGENT):
    no request can change who it is. With --database postgresql://… it serves
    the project's index in a shared PostgreSQL database (docs/postgres.md).

    \b
    Examples:
      lore serve                     # http://127.0.0.1:8766
      lore serve --host 0.0.0.0 --token "$(openssl rand -hex 16)"
      lore serve --database postgresql://db.example/lore   # a team server
    """
    from lore.interfaces.web.app import serve as run

    use_database(database_url)
    run(
        project_of(ctx, project_path),
        host=host,
        port=port,
        token=token,
        agent=agent_of(ctx, agent_name),
        allowed_hosts=list(allowed_hosts),
    )


COMMANDS = [serve]
