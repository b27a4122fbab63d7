"""Shared option sets and the per-command service handle."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import click

from lore.interfaces.cli.output import warn
from lore.memory.model import MEMORY_TYPES

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (see docs/cli.md).")


def from_cwd(root: os.PathLike[str] | str, given: tuple[str, ...] | list[str], what: str) -> list[str]:
    """Paths (or globs) as typed at a shell, as the project-relative ones the
    core takes: relative to the current directory like git's (from the
    project's root they are unchanged), or absolute inside the project.

    Raises:
        UsageError: a path outside the project, naming it.
    """
    from lore.atomic import contained
    from lore.errors import UsageError
    from lore.memory.values import clip

    top = os.path.realpath(root)
    here = os.path.realpath(os.getcwd())
    below = here != top and contained(top, here)  # in a folder of the project
    out = []
    for value in given:
        path = value.strip()
        if not path or (not os.path.isabs(path) and not below):
            out.append(value)  # the core reads it from the root (and refuses `..`)
            continue
        full = os.path.normpath(os.path.join(here, path))  # an absolute path stays itself
        if not contained(top, full):
            raise UsageError(
                f"{what} '{clip(value, 200)}' is outside the project ({top}); give a path inside it"
            )
        out.append(Path(os.path.relpath(full, top)).as_posix())
    return out


def split_commas(values: tuple[str, ...] | list[str]) -> list[str]:
    """--tag a --tag b,c → [a, b, c] (a tag never holds a comma: `lore add` splits there too)."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def filter_options(func=None, *, limit_help: str = "At most N results (default 10, max 50)."):
    """The memory filters shared by search and list (`limit_help`: what --limit means there)."""
    if func is None:
        return lambda f: filter_options(f, limit_help=limit_help)
    options = [
        click.option(
            "--type",
            "types",
            multiple=True,
            type=click.Choice(MEMORY_TYPES, case_sensitive=False),
            help="Only these types (repeatable).",
        ),
        click.option(
            "--tag",
            "tags",
            multiple=True,
            callback=lambda _ctx, _param, values: tuple(split_commas(values)),
            help="Only memories with this tag (repeatable or comma-separated: a memory must have every one).",
        ),
        click.option("--author", "agent", help="Only memories written by this agent."),
        click.option("--task", help="Only memories of this task id."),
        click.option(
            "--scope", help="Where it applies: global, file:<path> (a prefix matches below it), area:<name>."
        ),
        click.option(
            "--tier",
            help="hot, warm, cold, archive (attention, as kept) or durable, daily, session, session-summary "
            "(where it is stored).",
        ),
        click.option("--include-archived", is_flag=True, help="Archived memories too (left out by default)."),
        click.option(
            "--since",
            help="Occurred from this date or time on: a date or a phrase ('last week', '2 months ago').",
        ),
        click.option(
            "--until",
            help="Occurred up to and including this date, time or period ('2024-05-01': all of that day).",
        ),
        click.option("--limit", type=click.IntRange(min=1), default=None, help=limit_help),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def identity_options(func):
    """`--project` and `--agent`, accepted after the subcommand too (they win over the group's)."""
    func = click.option(
        "--agent",
        "agent_name",
        metavar="NAME",
        default=None,
        help="Act as this agent: see and write its private memories (or LORE_AGENT).",
    )(func)
    return click.option(
        "--project",
        "project_path",
        metavar="PATH",
        default=None,
        help="Project folder (default: nearest folder with .lore/, like git).",
    )(func)


def project_of(ctx: click.Context, project_path: str | None = None) -> str:
    """The project folder given (--project, LORE_PROJECT), else "." (found upward,
    like git). A folder that was named but does not exist is an error: found
    upward from it, a typo would quietly act on the project around it."""
    given = project_path or (ctx.obj or {}).get("project")
    if given and not os.path.exists(given):
        from lore.errors import UsageError

        raise UsageError(f"--project (or LORE_PROJECT) {given}: no such folder; give the project's folder")
    return given or "."


def agent_of(ctx: click.Context, agent_name: str | None = None) -> str | None:
    return agent_name or (ctx.obj or {}).get("agent") or os.environ.get("LORE_AGENT") or None


SKIPPED_SHOWN = 5  # unreadable memory files named after a command; the rest are counted


def with_lore(func):
    """Open the project for the command (as the acting agent) and report
    index notices and problems on stderr."""

    @functools.wraps(func)
    @identity_options
    @click.pass_context
    def wrapper(ctx: click.Context, *args, project_path=None, agent_name=None, **kwargs):
        from lore.service import Lore

        lore = Lore.open(project_of(ctx, project_path), agent=agent_of(ctx, agent_name))
        failed: str | None = None
        try:
            result = func(lore, *args, **kwargs)
        except Exception as err:
            failed = str(err)
            raise
        finally:
            for notice in lore.notices:
                warn(notice)
            if lore.last_sync and ctx.info_name not in ("doctor", "index"):
                # The file the command itself fails on is said once, by its error.
                errors = [e for e in lore.last_sync.errors if e[1] != failed]
                for _, error in errors[:SKIPPED_SHOWN]:
                    warn(f"skipped {error}")
                if len(errors) > SKIPPED_SHOWN:  # a folder of bad files is a summary, not a flood
                    warn(
                        f"skipped {len(errors) - SKIPPED_SHOWN:,} more memory files; `lore doctor` lists them all"
                    )
            lore.close()
        return result

    return wrapper


@contextlib.contextmanager
def refused_as_usage() -> Iterator[None]:
    """A value given on the command line that the memory format refuses
    (`lore add --id 123`, a one-word body) is bad usage (exit 2), as
    `--occurred-at tomorrow` is; a file that breaks the format stays an error."""
    from lore.errors import UsageError, ValidationError

    try:
        yield
    except ValidationError as err:
        if err.path is not None:
            raise
        raise UsageError(f"{option_of(err.field)}: {err.reason}" if err.field else str(err)) from None


def option_of(field: str) -> str:
    """The option that gives a memory's frontmatter field (``subject`` is
    ``--title``, ``keywords`` ``--tag``): what a refusal names on the command line."""
    names = {"subject": "title", "keywords": "tag", "labels": "label", "files": "file"}
    return "--" + names.get(field, field).replace("_", "-")
