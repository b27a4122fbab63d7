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
        click.option("--agent", help="Agent asking (sees its private memories)."),
        click.option("--limit-per-type", type=int, default=5, show_default=True),
        click.option("--no-code", is_flag=True), click.option("--no-memories", is_flag=True),
        click.option("--no-related-work", is_flag=True),
        click.option("--markdown", "as_markdown", is_flag=True, help="Print the Markdown block (default)."),
        click.option("--json", "as_json", is_flag=True, help="Print 003's ContextResult as JSON."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _recall(lore, title, description, task, files, budget, level, bracket, agent, limit_per_type,
            no_code, no_memories, no_related_work, as_markdown, as_json):
    if description == "-":
        description = sys.stdin.read()
    result = lore.recall(title, description=description, task=task, files=files, budget=budget,
                         level=level, bracket=bracket, agent=agent, limit_per_type=limit_per_type,
                         include_code=not no_code, include_memories=not no_memories,
                         include_related_work=not no_related_work)
    if as_json:
        emit_json(result.to_json())
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
    if not title:
        from lore.index import gitrepo
        branch = gitrepo.current_branch(lore.project.root) if gitrepo.repo_root(lore.project.root) else None
        title = " ".join(filter(None, [task, (branch or "").replace("-", " ").replace("/", " ")]))
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
