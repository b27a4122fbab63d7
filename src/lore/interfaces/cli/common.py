"""Shared option sets and the per-command service handle."""

from __future__ import annotations

import functools

import click

from lore.interfaces.cli.output import warn
from lore.memory.model import MEMORY_TYPES

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (see docs/cli.md).")


def filter_options(func):
    """The memory filters shared by search and list."""
    options = [
        click.option(
            "--type",
            "types",
            multiple=True,
            type=click.Choice(MEMORY_TYPES),
            help="Only these types (repeatable).",
        ),
        click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeatable)."),
        click.option("--agent", help="Only this agent's memories (and its private ones)."),
        click.option("--task", help="Only memories of this task id."),
        click.option("--scope", help="applies_to: global, file:<path> (prefix ok), area:<name>."),
        click.option("--tier", help="hot, warm, cold (attention) or durable, session (storage)."),
        click.option("--since", help="Occurred at or after (ISO 8601)."),
        click.option("--until", help="Occurred at or before (ISO 8601)."),
        click.option(
            "--all-agents", "include_private", is_flag=True, help="Include every agent's private memories."
        ),
        click.option("--limit", type=int, default=None, help="At most N results (default 10, max 50)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def with_lore(func):
    """Open the project for the command and report index notices/problems on stderr."""

    @functools.wraps(func)
    @click.pass_context
    def wrapper(ctx: click.Context, *args, **kwargs):
        from lore.service import Lore

        lore = Lore.open(ctx.obj.get("project") or ".")
        try:
            result = func(lore, *args, **kwargs)
        finally:
            for notice in lore.notices:
                warn(notice)
            if lore.last_sync and ctx.info_name not in ("doctor", "index"):
                for _, error in lore.last_sync.errors:
                    warn(f"skipped {error}")
            lore.close()
        return result

    return wrapper
