"""Recall commands: recall, start, stale, verify."""

from __future__ import annotations

import click

from lore.interfaces.cli.common import from_cwd, json_option, split_commas, with_lore
from lore.interfaces.cli.decoding import read_stdin
from lore.interfaces.cli.output import echo, emit_json, is_terminal, table, warn_redacted

LEVELS = ["auto", "L1", "L2", "L3"]
BRACKETS = ["fresh", "moderate", "depleted", "critical"]


def recall_options(func):
    options = [
        click.option("--description", "-d", default="", help="Task description ('-' reads stdin)."),
        click.option("--task", help="Task id (its memories and past work count more)."),
        click.option("--files", "files", multiple=True, help="A file the task touches (repeatable)."),
        click.option("--budget", type=int, help="Token budget (default [recall] budget, 2000)."),
        click.option(
            "--level",
            type=click.Choice(LEVELS),
            default="auto",
            help="Detail: L1 one line per item, L2 summaries, L3 everything; auto fills the budget.",
        ),
        click.option(
            "--bracket",
            type=click.Choice(BRACKETS),
            help="How full the agent's context is: fresh (nothing), moderate L1, depleted L2, critical L3.",
        ),
        click.option(
            "--limit-per-type",
            type=int,
            default=5,
            show_default=True,
            help="At most N memories, code snippets and past-work items; likely files: up to 2N (10 at least).",
        ),
        click.option(
            "--since",
            help="Only memories and past work from this date on (or a phrase: 'last month').",
        ),
        click.option(
            "--until",
            help="Only memories and past work up to and including this date or period (or a phrase).",
        ),
        click.option("--no-code", is_flag=True, help="Leave out likely files and code."),
        click.option("--no-memories", is_flag=True, help="Leave out memories."),
        click.option("--no-related-work", is_flag=True, help="Leave out past commits and tasks."),
        click.option(
            "--include-sessions", is_flag=True, help="Summaries of recorded sessions too (off by default)."
        ),
        click.option(
            "--markdown",
            "as_markdown",
            is_flag=True,
            help="Print the Markdown block agents get (the default when not in a terminal).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print JSON (see docs/cli.md)."),
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
        description = read_stdin()
    result = lore.recall(
        title,
        description=description,
        task=task,
        files=from_cwd(lore.project.root, files, "--files"),
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
    elif is_terminal() and not as_markdown:
        show_pack(result, lore.project.root)
    else:
        echo(result.markdown, nl=False)


def show_pack(pack, root) -> None:
    """A recall pack for a person: titles, scores as bars, ages, citations as path:line."""
    from rich.markup import escape

    from lore.interfaces.cli.output import citation, console, relative_time, score_bar

    out = console()
    out.print(
        f"[bold]{escape(pack.title or 'recall')}[/bold]  [dim]{pack.tokens_used}/{pack.budget} tokens[/dim]"
    )
    if not pack.items:
        out.print("nothing relevant found")
    titles = {
        "memory": "Memories",
        "task": "Current task",
        "file": "Likely files",
        "code": "Code",
        "work": "Related past work",
        "area": "Recently changed",
    }
    for kind, heading in titles.items():
        mine = [it for it in pack.items if it.kind == kind]
        if not mine:
            continue
        out.print(f"\n[bold underline]{heading}[/bold underline]")
        for it in mine:
            d = it.data
            if kind == "memory":
                flag = " [red]⚠ stale[/red]" if d.get("stale") else ""
                out.print(
                    f"  [green]{score_bar(d['score'])}[/green]  [bold]{escape(d['title'])}[/bold]{flag}  "
                    f"[dim]{d['memory_type']} · {relative_time(d.get('created_at'))} · {d['id'][:8]}[/dim]"
                )
                path, _, line = d["citation"].rpartition(":")
                out.print(
                    f"      {citation(root, path, int(line) if line.isdigit() else None)}", soft_wrap=True
                )
                if d.get("supersedes"):
                    out.print(
                        f"      [dim]supersedes: {escape(', '.join(s['title'] or s['id'] for s in d['supersedes']))}[/dim]"
                    )
                if it.level in ("L2", "L3") and d.get("summary"):
                    out.print(f"      {d['summary']}", markup=False)
            elif kind == "file":
                out.print(
                    f"  [green]{score_bar(d['score'])}[/green]  {citation(root, d['path'])}  "
                    f"[dim]{escape(', '.join(d['reasons']))}[/dim]",
                    soft_wrap=True,
                )
            elif kind == "code":
                out.print(
                    f"  {citation(root, d['file_path'], d['start_line'])}  "
                    f"[bold]{escape(d.get('symbol') or '')}[/bold]",
                    soft_wrap=True,
                )
            elif kind == "work":
                when = relative_time(d.get("date")) if d.get("date") else d.get("type", "")
                out.print(f"  [yellow]{d['id'][:10]}[/yellow] {escape(d['title'])}  [dim]{when}[/dim]")
            else:
                out.print(f"  {it.text('L1').removeprefix('- ')}", markup=False)


@click.command()
@click.argument("title")
@recall_options
@with_lore
def recall(lore, title, **options):
    """Everything relevant to a task, ranked and packed into a token budget.

    \b
    Examples:
      lore recall "Fix the OAuth refresh timeout"
      lore recall "Fix rounding" --files src/billing/invoice.py --budget 1000 --json
    """
    _recall(lore, title, **options)


@click.command()
@click.argument("task", required=False)
@click.option("--title", help="The task in words (default: the task id and the branch's name).")
@click.option("--budget", type=int, help="Token budget (default [recall] start_budget, 800).")
@click.option(
    "--markdown",
    "as_markdown",
    is_flag=True,
    help="Print the Markdown block agents get (the default when not in a terminal).",
)
@json_option
@with_lore
def start(lore, task, title, budget, as_markdown, as_json):
    """What to know when starting a session: the pack agents get at session start.

    This project's memories worth reading now (gotchas, decisions, conventions;
    those about the files being changed first), the branch's task, likely files
    and the areas being changed. Prints nothing when nothing is relevant.

    \b
    Examples:
      lore start
      lore start T-7 --budget 1200
    """
    pack = lore.start(task, title=title, budget=budget)
    if as_json:
        emit_json(pack.to_dict())
    elif is_terminal() and not as_markdown:
        show_pack(pack, lore.project.root)
    else:
        echo(pack.markdown, nl=False)


@click.command()
@json_option
@with_lore
def stale(lore, as_json):
    """Memories whose anchored code changed since they were written (code is re-checked first).

    \b
    Examples:
      lore stale
      lore stale --json
    """
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
    """Mark a memory checked: re-anchor it to the current code (clears stale).

    \b
    Examples:
      lore verify 3f2a9c1e
    """
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
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable or comma-separated).")
@click.option(
    "--bundle",
    type=click.Path(exists=True, dir_okay=False),
    help="A completion bundle as JSON: summary, approach, decisions, lessons... (instead of the options).",
)
@json_option
@with_lore
def complete(
    lore, task, title, summary, approach, decisions, lessons, patterns, gotchas, tags, bundle, as_json
):
    """Write the task's memory when it is done: summary, approach, decisions, key files, lessons.

    Its files and decisions come from the task's commits (or the uncommitted work).

    \b
    Example:
      lore complete T-7 --title "Fix token refresh" --summary "Retry once on 401" --lesson "..."
    """
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
            tags=split_commas(tags),
        )
    result = lore.complete(task, title=title, bundle=data)
    warn_redacted(result.redacted)
    if as_json:
        emit_json({**result.to_dict(), "files": result.memory.files})
    else:
        n = len(result.memory.files)
        click.echo(
            f"{'wrote' if result.created else 'updated'} {result.path} ({n} file{'' if n == 1 else 's'})"
        )


COMMANDS.append(complete)
