"""`lore serve`: the HTTP API, the web UI and MCP on one port."""

from __future__ import annotations

import click

from lore.interfaces.cli.common import agent_of, identity_options, json_option, project_of
from lore.interfaces.cli.db_cmds import database_option, use_database
from lore.interfaces.cli.output import emit_json, table

users_option = click.option(
    "--users",
    "users_file",
    envvar="LORE_USERS",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Users file (TOML, owner-only; or LORE_USERS): per-user tokens, each acting as its user's "
    "agent and, on PostgreSQL, database role. See `lore users add`.",
)


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind (off loopback needs --token or --users).",
)
@click.option(
    "--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on."
)
@click.option(
    "--token",
    envvar="LORE_TOKEN",
    help="Shared secret: bearer token for the API and MCP, login for the browser. Prefer "
    "LORE_TOKEN: other users see a command line.",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    help="Another host name clients use to reach the server (repeatable).",
)
@users_option
@database_option
@identity_options
@click.pass_context
def serve(
    ctx,
    host,
    port,
    token,
    allowed_hosts,
    users_file=None,
    database_url=None,
    project_path=None,
    agent_name=None,
):
    """Serve the web UI, the JSON API (/docs) and MCP (/mcp) for this project.

    With --token the server acts as one agent for its whole life (--agent or
    LORE_AGENT): no request can change who it is. With --users FILE each
    person has a token of their own (`lore users add`), and their requests
    (bearer token, or the browser session their token opened) act as their
    own agent: they see shared memories and their own private ones. With
    --database postgresql://… it serves the project's index in a shared
    PostgreSQL database (docs/postgres.md) and each user's requests also run
    as their database role (SET ROLE), so row-level security applies; every
    role is checked at start-up. On SQLite, roles in the users file are ignored.

    \b
    Examples:
      lore serve                     # http://127.0.0.1:8766
      export LORE_TOKEN=$(openssl rand -hex 16); echo "$LORE_TOKEN"   # give it to clients
      lore serve --host 0.0.0.0
      lore serve --database postgresql://lore_server@db.example/lore --users ~/.config/lore/users.toml
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
        users=users_file,
    )


users_file_option = click.option(
    "--users",
    "users_file",
    envvar="LORE_USERS",
    metavar="FILE",
    required=True,
    type=click.Path(dir_okay=False),
    help="The users file of `lore serve --users` (or LORE_USERS).",
)


@click.group()
def users():
    """The users of a team server (`lore serve --users FILE`): tokens, agents, database roles.

    \b
    Examples:
      lore users add alice --role alice --users ~/.config/lore/users.toml
      lore users list --users ~/.config/lore/users.toml
    """


@users.command("add")
@click.argument("name")
@click.option("--role", default=None, help="PostgreSQL role the user's requests act as (SET ROLE).")
@click.option("--agent", "agent_name", default=None, help="Agent identity they act as (default: NAME).")
@users_file_option
@json_option
def users_add(name, role, agent_name, users_file, as_json):
    """Add a user and print their new token, once (only its SHA-256 is stored).

    \b
    Example:
      lore users add alice --role alice --users ~/.config/lore/users.toml
    The server's login role must be able to act as ROLE (GRANT ROLE TO login;
    see docs/postgres.md). Restart the server to apply.
    """
    from lore.interfaces.web.users import add_user

    token = add_user(users_file, name, agent=agent_name, role=role)
    if as_json:
        emit_json({"name": name, "token": token})
        return
    click.echo(f"Token for {name} (shown once; send it as 'Authorization: Bearer <token>'):", err=True)
    click.echo(token)


@users.command("remove")
@click.argument("name")
@users_file_option
@json_option
def users_remove(name, users_file, as_json):
    """Remove a user (their token stops working when the server restarts)."""
    from lore.interfaces.web.users import remove_user

    remove_user(users_file, name)
    if as_json:
        emit_json({"removed": name})
        return
    click.echo(f"Removed {name}.", err=True)


@users.command("list")
@users_file_option
@json_option
def users_list(users_file, as_json):
    """The users: name, agent, database role (never their tokens)."""
    from lore.interfaces.web.users import list_users

    rows = list_users(users_file)
    if as_json:
        emit_json(rows)
        return
    table(["name", "agent", "role"], [[r["name"], r["agent"], r["role"] or "-"] for r in rows])


COMMANDS = [serve, users]
