"""Recall commands: recall, start, stale, verify."""

from __future__ import annotations

import sys

import click

from lore.interfaces.cli.common import json_option, with_lore
from lore.interfaces.cli.output import emit_json, table

LEVELS = ["auto", "L1", "L2", "L3"]
BRACKETS = ["fresh", "moderate", "depleted", "critical"]


def recall_options(func):
    options = [
        click.option("--description", "-d", default="", help="Task description ('-' reads stdin)."),
        click.option("--task", help="Task id."),
        click.option("--files", "files", multiple=True, help="Files the task touches (repeatable)."),
        click.option("--budget", type=int, help="Token budget (default [recall] budget, 2000)."),
        click.option("--level", type=click.Choice(LEVELS), default="auto", help="Detail level."),
        click.option("--bracket", type=click.Choice(BRACKETS), help="Context bracket (001): sets the level."),
        click.option("--limit-per-type", type=int, default=5, show_default=True),
        click.option("--since", help="Only memories and past work since (date or phrase: 'last month')."),
        click.option("--until", help="Only memories and past work before (date or phrase)."),
        click.option("--no-code", is_flag=True),
        click.option("--no-memories", is_flag=True),
        click.option("--no-related-work", is_flag=True),
        click.option(
            "--include-sessions", is_flag=True, help="Summaries of recorded sessions too (off by default)."
        ),
        click.option("--markdown", "as_markdown", is_flag=True, help="Print the Markdown block (default)."),
        click.option("--json", "as_json", is_flag=True, help="Print 003's ContextResult as JSON."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _recall(
    lore,
    title,
    description,
    task,
    files,
    budget,
    level,
    bracket,
    limit_per_type,
    since,
    until,
    no_code,
    no_memories,
    no_related_work,
    include_sessions,
    as_markdown,
    as_json,
):
    if description == "-":
        description = sys.stdin.read()
    result = lore.recall(
        title,
        description=description,
        task=task,
        files=files,
        budget=budget,
        level=level,
        bracket=bracket,
        limit_per_type=limit_per_type,
        include_code=not no_code,
        include_memories=not no_memories,
        include_related_work=not no_related_work,
        since=since,
        until=until,
        include_sessions=include_sessions,
    )
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.markdown, nl=False)


@click.command()
@click.argument("title")
@recall_options
@with_lore
def recall(lore, title, **options):
    """Everything relevant to a task, ranked and packed into a token budget."""
    _recall(lore, title, **options)


@click.command()
@click.argument("task")
@click.option("--title", help="Task title (default: the task id and current branch).")
@recall_options
@with_lore
def start(lore, task, title, **options):
    """Print the recall pack for a task being picked up (seed 000's /start step)."""
    title = title or lore.branch_title(task)
    options["task"] = options.get("task") or task
    _recall(lore, title, **options)


@click.command()
@json_option
@with_lore
def stale(lore, as_json):
    """Memories whose anchored code changed since they were written."""
    rows = lore.stale()
    if as_json:
        emit_json(rows)
    elif not rows:
        click.echo("no stale memories")
    else:
        table(["id", "title", "why"], [[r["id"][:8], r["title"], "; ".join(r["reasons"])] for r in rows])


@click.command()
@click.argument("key")
@json_option
@with_lore
def verify(lore, key, as_json):
    """Mark a memory checked: re-anchor it to the current code (clears stale)."""
    result = lore.verify(key)
    if as_json:
        emit_json(result)
    else:
        click.echo(f"verified {result['id']}: {result['anchored']} anchor(s) to current code")


COMMANDS = [recall, start, stale, verify]


@click.command()
@click.argument("task")
@click.option("--title", "-t", required=True, help="The task's title.")
@click.option("--summary", multiple=True, help="What was accomplished (repeatable: one bullet each).")
@click.option("--approach", default="", help="How the work was done.")
@click.option("--decision", "decisions", multiple=True, help="A decision and why (repeatable).")
@click.option("--lesson", "lessons", multiple=True, help="A non-obvious lesson (repeatable).")
@click.option("--pattern", "patterns", multiple=True, help="A pattern for other agents (repeatable).")
@click.option("--gotcha", "gotchas", multiple=True, help="A gotcha for other agents (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable).")
@click.option(
    "--bundle",
    type=click.Path(exists=True, dir_okay=False),
    help="000's CompletionBundle as JSON (instead of the options above).",
)
@json_option
@with_lore
def complete(
    lore, task, title, summary, approach, decisions, lessons, patterns, gotchas, tags, bundle, as_json
):
    """Write the task's memory (000's sections; files and decisions from its commits)."""
    from pathlib import Path

    from lore.memory.complete import CompletionBundle, load_bundle

    if bundle:
        data = load_bundle(Path(bundle))
    else:
        data = CompletionBundle(
            summary=list(summary),
            approach=approach,
            decisions=list(decisions),
            lessons=list(lessons),
            patterns=list(patterns),
            gotchas=list(gotchas),
            tags=[t for v in tags for t in v.split(",") if t.strip()],
        )
    result = lore.complete(task, title=title, bundle=data)
    if as_json:
        emit_json({**result.to_dict(), "files": result.memory.files})
    else:
        click.echo(
            f"{'wrote' if result.created else 'updated'} {result.path} ({len(result.memory.files)} files)"
        )


COMMANDS.append(complete)
