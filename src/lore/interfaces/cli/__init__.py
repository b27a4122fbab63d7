"""The `lore` command line: argument parsing and printing over :class:`lore.service.Lore`.

Commands are grouped by concern in sibling modules; each is a few lines
that call the service and hand the result to :mod:`.output`. A command's
module is imported when that command runs (agents call the CLI from hooks:
start-up time matters), so :data:`COMMANDS` names each command's module;
`tests/test_cli_commands.py` checks it against the modules' own lists.
"""

from __future__ import annotations

import importlib
import re
import sys

import click

from lore import __version__
from lore.errors import ArgumentError, as_lore_error, debugging
from lore.interfaces.cli.decoding import require_utf8_text

#: Every command, in the order `lore --help` lists them, and its module.
COMMANDS: dict[str, str] = {
    **dict.fromkeys(["init", "index", "stats", "doctor", "completion"], "index_cmds"),
    **dict.fromkeys(
        ["add", "list", "show", "edit", "mv", "graph", "tag", "rm", "restore", "gc"], "memory_cmds"
    ),
    "search": "search_cmds",
    **dict.fromkeys(["code", "history", "update-index", "status"], "code_cmds"),
    **dict.fromkeys(["recall", "start", "stale", "verify", "complete"], "recall_cmds"),
    "hooks": "hooks_cmds",
    **dict.fromkeys(["mcp", "install", "uninstall", "hook", "capture"], "agent_cmds"),
    "session": "session_cmds",
    **dict.fromkeys(["consolidate", "review", "import"], "lifecycle_cmds"),
    **dict.fromkeys(["serve", "users"], "serve_cmds"),
    "db": "db_cmds",
}


#: How `lore --help` lists the commands: by what a user is doing, each with a
#: summary that fits a line (a command's own help can then say more; `lore
#: --help` imports none of the commands' modules).
SECTIONS: dict[str, dict[str, str]] = {
    "Set up and check": {
        "init": "Create .lore/ for this project",
        "index": "Index memories, code and git history",
        "status": "How fresh the index is",
        "stats": "Memories by type and tier, links, index coverage",
        "doctor": "Check every memory file and the index",
        "hooks": "Git hooks that keep the index fresh",
        "completion": "Shell completion for bash, zsh or fish",
    },
    "Memories": {
        "add": "Add a memory",
        "list": "List memories, newest first",
        "show": "Show a memory",
        "edit": "Edit a memory ($EDITOR, or precise edits)",
        "mv": "Rename or move a memory file",
        "tag": "Add or remove tags",
        "graph": "The memories linked to a memory",
        "rm": "Move memories to the trash",
        "restore": "Bring back trashed memories",
        "gc": "Purge old trash",
    },
    "Search and recall": {
        "search": "Search memories",
        "code": "Search the codebase",
        "history": "Search past work (commits)",
        "recall": "Everything relevant to a task, in one pack",
        "start": "What to know when a session starts",
    },
    "Agents and sessions": {
        "mcp": "Run the MCP server for agents",
        "install": "Register Lore with an agent",
        "uninstall": "Remove what `lore install` added",
        "session": "Recorded agent sessions",
        "capture": "Turn an agent's output into memories",
        "complete": "Write a finished task's memory",
    },
    "Keeping memory true": {
        "stale": "Memories whose code changed since",
        "verify": "Mark a memory checked against the code",
        "consolidate": "Merge duplicates, propose promotions",
        "review": "Apply or reject proposed changes",
        "import": "Import notes, AGENTS.md, ADRs",
        "update-index": "Re-index just these files",
    },
    "Team and web": {
        "serve": "Web UI, JSON API and MCP over HTTP",
        "users": "The users of a team server",
        "db": "The index database (PostgreSQL for teams)",
    },
}


class _LazyGroup(click.Group):
    """A group that imports a command's module only when the command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        widest = max(len(name) for commands in SECTIONS.values() for name in commands)
        for title, commands in SECTIONS.items():
            with formatter.section(title):
                formatter.write_dl([(name.ljust(widest), summary) for name, summary in commands.items()])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module = importlib.import_module(f"lore.interfaces.cli.{COMMANDS[cmd_name]}")
            for command in module.COMMANDS:
                require_utf8_text(command)
                self.add_command(command)
        return self.commands.get(cmd_name)


@click.group(
    cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.option(
    "--project",
    "project_path",
    metavar="PATH",
    type=click.Path(),
    envvar="LORE_PROJECT",
    help="Project folder (default: nearest folder with .lore/, like git).",
)
@click.option(
    "--agent",
    "agent_name",
    metavar="NAME",
    envvar="LORE_AGENT",
    help="Act as this agent: see and write its private memories.",
)
@click.version_option(__version__, prog_name="lore")
@click.pass_context
def cli(ctx: click.Context, project_path: str | None, agent_name: str | None) -> None:
    """Lore: project memory for AI coding agents.

    Memories are Markdown files in .lore/memory/ (committed); the index in
    .lore/index.db is derived from them and rebuilt whenever needed.
    """
    ctx.obj = {"project": project_path, "agent": agent_name}


require_utf8_text(cli)


def main(argv: list[str] | None = None) -> int:
    """Entry point: every failure becomes one line on stderr and an exit status
    (:mod:`lore.errors` maps them); ``LORE_DEBUG=1`` shows the traceback instead."""
    try:
        # Without standalone mode, click returns the code of ctx.exit()/Exit.
        code = cli.main(args=argv, prog_name="lore", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.NoArgsIsHelpError as err:
        err.show()  # `lore` alone: the help text
        return 2
    except click.UsageError as err:
        where = err.ctx.command_path if err.ctx is not None else "lore"
        _error(f"{where}: error: {_hinted(err.format_message(), where, err.ctx)} (see '{where} --help')")
        return 2
    except click.ClickException as err:
        _error(f"lore: error: {err.format_message()}")
        return 1
    except click.Abort as err:
        if isinstance(err.__cause__, KeyboardInterrupt):  # Ctrl-C, as click reports it
            click.echo("lore: interrupted", err=True)
            return 130
        click.echo("lore: aborted", err=True)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        click.echo("lore: interrupted", err=True)
        return 130
    except Exception as err:
        if debugging():
            raise
        if isinstance(err, OSError) and _writing_output(err):
            # Not "the disk is full": what the command did is done (a memory
            # written stays written); only showing it failed.
            _error(
                f"lore: error: could not write the output ({err.strerror or err}); "
                "the command itself was done: check where its output goes"
            )
            return 1
        known = as_lore_error(err)
        if known is None:
            _error(
                f"lore: internal error: {err.__class__.__name__}: {err} "
                "(set LORE_DEBUG=1 for the traceback, and please report it)"
            )
            return 1
        message = known.named(_flag) if isinstance(known, ArgumentError) else str(known)
        _error(f"lore: error: {message}")
        return known.exit_code


def _hinted(message: str, where: str, ctx: click.Context | None) -> str:
    """A usage error with what was probably meant: a command name mistyped
    (`lore recal`), or `--json` given before the command name."""
    if where == "lore" and message.startswith("No such option '--json'"):
        return "--json goes after the command name: `lore status --json`, `lore list --json`"
    unknown = re.match(r"No such command '([^']{1,60})'", message)
    if (
        unknown is not None
        and "mean" not in message
        and ctx is not None
        and isinstance(ctx.command, click.Group)
    ):
        import difflib

        names = ctx.command.list_commands(ctx)
        close = difflib.get_close_matches(unknown.group(1), names, n=1, cutoff=0.6)
        if close:
            return f"{message.rstrip('.')}; did you mean '{close[0]}'?"
    return message


def _writing_output(err: BaseException) -> bool:
    """Was `err` raised while writing the command's output (click's echo, rich's console)?"""
    tb = err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if (code.co_name == "echo" and "click" in code.co_filename) or (
            code.co_name in ("print", "_write_buffer") and "rich" in code.co_filename
        ):
            return True
        tb = tb.tb_next
    return False


# Service arguments whose flag is not the argument's own name in --kebab-case.
_FLAGS = {"changed_within_days": "--changed-within"}


def _flag(argument: str) -> str:
    """The command-line flag of a service argument (since -> --since)."""
    return _FLAGS.get(argument, "--" + argument.replace("_", "-"))


def _error(message: str) -> None:
    """One line on stderr, whatever the message holds (user text included:
    its control characters are shown as escapes, never sent to the terminal,
    and a secret in it is redacted: a key or name echoed back reaches terminals,
    logs and agents' transcripts)."""
    from lore.interfaces.cli.output import printable
    from lore.secrets import redact

    click.echo(printable(" ".join(redact(message)[0].split())), err=True)


def run() -> None:
    sys.exit(main())
