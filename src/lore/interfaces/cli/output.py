"""Printing: JSON for scripts (stable shapes, see docs/cli.md), rich for people."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def console():
    from rich.console import Console
    return Console(highlight=False, soft_wrap=False)


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


def is_tty() -> bool:
    return sys.stdout.isatty()
