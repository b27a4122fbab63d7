"""Printing: JSON for scripts (stable shapes, see docs/cli.md), rich for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def emit_results(hits: list, as_json: bool, json_of: Callable, render: Callable) -> None:
    """Search results: a JSON list, "no matches", or render(console, hit) per hit."""
    if as_json:
        emit_json([json_of(h) for h in hits])
    elif not hits:
        click.echo("no matches")
    else:
        out = console()
        for hit in hits:
            render(out, hit)


def warn(message: str) -> None:
    click.echo(f"lore: {message}", err=True)


def table(columns: list[str], rows: list[list[str]], *, title: str | None = None) -> None:
    from rich.table import Table

    grid = Table(title=title, show_edge=False, header_style="bold", pad_edge=False)
    for name in columns:
        grid.add_column(name, overflow="fold")
    for row in rows:
        grid.add_row(*row)
    console().print(grid)


@contextmanager
def progress_bar(label: str, *, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (only on a terminal); yields advance(done, total)."""
    if not enabled or not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        f"[bold]{label}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)
