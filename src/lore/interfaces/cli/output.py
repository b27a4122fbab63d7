"""Printing: JSON for scripts (stable shapes, see docs/cli.md), rich for people."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

# Control characters a terminal would act on (all but tab and line feed):
# ESC starts colour, cursor and OSC sequences (OSC 52 writes the clipboard).
# And the invisible bidirectional marks, overrides and isolates, which reorder
# what a terminal shows ("Trojan Source").
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def printable(text: str) -> str:
    """`text` safe to show a person: memory files, titles and paths are anyone's
    text (a file from git, a captured transcript), so every control character
    but tab and line break is shown as a ``\\xNN`` escape instead of reaching
    the terminal raw (a CRLF line end is a line break), and a bidirectional
    override as ``\\u202e``. JSON stays exact."""
    return _UNPRINTABLE.sub(_escape, text.replace("\r\n", "\n"))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def echo(text: str = "", *, nl: bool = True) -> None:
    """click.echo for text a person reads: through :func:`printable`."""
    click.echo(printable(text), nl=nl)


def console():
    """A rich console whose printed strings go through :func:`printable`
    (the renderers' markup is ours; what it interpolates may not be)."""
    from rich.console import Console

    class Terminal(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*(printable(o) if isinstance(o, str) else o for o in objects), **kwargs)

    # Piped, a line is one record: never wrapped at the 80 columns rich assumes.
    return Terminal(highlight=False, soft_wrap=not is_terminal())


def emit_results(hits: list, as_json: bool, json_of: Callable, render: Callable) -> None:
    """Search results: a JSON list, "no matches", or render(console, hit) per hit."""
    if as_json:
        emit_json([json_of(h) for h in hits])
    elif not hits:
        click.echo("no matches")
    else:
        if all(getattr(hit, "weak", False) for hit in hits):
            click.echo("no close match: these share no word with the query, only some meaning (weak)")
        out = console()
        for hit in hits:
            render(out, hit)


def warn(message: str) -> None:
    click.echo(printable(f"lore: {message}"), err=True)


def warn_redacted(counts: dict[str, int] | None) -> None:
    """Say which secrets a write redacted (`counts`: kind → how many), if any."""
    if counts:
        from collections import Counter

        from lore.secrets import describe

        warn(f"redacted before writing: {describe(Counter(counts))}")


def table(columns: list[str], rows: list[list[str]], *, title: str | None = None) -> None:
    """Rows of plain text (a title's `[red]` is shown as written, never read as
    rich markup); columns all named "" print no header row."""
    from rich.markup import escape
    from rich.table import Table

    out = console()
    if title is None and not out.is_terminal:  # piped: a record a line, never folded at 80 columns
        plain = plain_table(columns, [[printable(cell) for cell in row] for row in rows])
        if plain is not None:
            click.echo(plain, nl=False)
            return
    grid = Table(title=title, show_edge=False, header_style="bold", pad_edge=False, show_header=any(columns))
    # Ids, types, dates (short cells of one word): never folded (`aaaa22` over `22`), from
    # the first column on, as long as every other column keeps 3 characters to fold in.
    pinned: dict[int, int] = {}
    for i, name in enumerate(columns):
        cells = [printable(row[i]) for row in rows if i < len(row)]
        if cells and all(len(c) <= 16 and " " not in c for c in cells):
            width = max(len(name), *map(len, cells))
            others = len(columns) - len(pinned) - 1
            if sum(pinned.values()) + width + 3 * len(columns) + 3 * others <= out.width:
                pinned[i] = width
    for i, name in enumerate(columns):
        if i in pinned:
            grid.add_column(name, no_wrap=True, min_width=pinned[i])
        else:
            grid.add_column(name, overflow="fold")
    for row in rows:
        grid.add_row(*(escape(printable(cell)) for cell in row))
    out.print(grid)


def plain_table(columns: list[str], rows: list[list[str]], width: int | None = None) -> str | None:
    """:func:`table`'s text without a terminal: rich's layout, each cell on
    one line (a line a record, as the rest of Lore's piped output), within
    `width` columns if given (else None: rich would fold a cell). Rich lays
    out each cell (~0.5 ms a row): 10,000 memories listed took 5 s."""
    from rich.cells import cell_len

    header = any(columns)
    lines = ([columns] if header else []) + rows
    if any("\n" in cell or "\r" in cell or "\t" in cell for line in lines for cell in line):
        return None  # (rich expands a tab; a line break folds the cell)
    widths = [max([0, *(cell_len(line[i]) for line in lines)]) for i in range(len(columns))]
    if not all(widths):
        return None  # an empty column: rich's own spacing
    if width is not None and sum(widths) + 3 * (len(widths) - 1) > width:
        return None

    def row(cells: list[str], bar: str) -> str:
        return f" {bar} ".join(
            cell + " " * (w - cell_len(cell)) for cell, w in zip(cells, widths, strict=True)
        )

    text = []
    if header:
        text += [row(columns, "┃"), "━╇━".join("━" * w for w in widths)]
    text += [row(cells, "│") for cells in rows]
    return "".join(line + "\n" for line in text)


def is_terminal() -> bool:
    """Is a person reading stdout? (Pipes and files get plain, stable text.)"""
    return sys.stdout is not None and sys.stdout.isatty()  # None: stdout was closed (`>&-`)


def relative_time(when: str | None, now: datetime | None = None) -> str:
    """'just now', '5 min ago', '3 h ago', 'yesterday', '12 days ago', '2025-03-01'
    (older: the day in local time, as ``--since``/``--until`` read a date)."""
    then = _instant(when)
    if then is None:
        return (when or "-")[:10]
    if now is None:
        now = datetime.now(UTC)
        if os.environ.get("LORE_NOW"):  # a replay: as old as its --since phrases read it
            from lore.memory.lifecycle.clock import system_now

            now = system_now()
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return local_time(when)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    # Calendar days in local time, as `--since yesterday` and `--since "3 days ago"` count them.
    days = (now.astimezone().date() - then.astimezone().date()).days
    if days <= 1:
        return "yesterday"
    if days < 60:
        return f"{days} days ago"
    return local_time(when)


def local_time(when: str | None, *, minutes: bool = False) -> str:
    """A stored UTC time as a person reads it: the local day (``2025-03-01``),
    or with `minutes` the local ``2025-03-01 14:30``; unreadable text as it is."""
    then = _instant(when)
    if then is None:
        return (when or "")[: 16 if minutes else 10]
    try:
        local = then.astimezone()
    except (OverflowError, ValueError):  # the edge of the calendar: UTC it stays
        local = then
    return f"{local.year:04d}-{local:%m-%d}" + (f" {local:%H:%M}" if minutes else "")


def _instant(when: str | None) -> datetime | None:
    """An ISO 8601 time (naive: UTC, as stored) as an aware datetime; None if unreadable."""
    try:
        then = datetime.fromisoformat((when or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return then if then.tzinfo is not None else then.replace(tzinfo=UTC)


def citation(root: Path, path: str, line: int | None = None) -> str:
    """``path:line`` as rich markup: cyan, and a hyperlink to the file for
    terminals that support them (others show the text, which many open on click)."""
    from rich.markup import escape

    shown = f"{path}:{line}" if line else path
    return f"[cyan][link={(root / path).as_uri()}]{escape(shown)}[/link][/cyan]"


def score_bar(score: float, width: int = 8) -> str:
    """A score 0-1 as a bar and a percentage: ``██████░░ 74%``."""
    score = max(0.0, min(1.0, float(score)))
    filled = round(score * width)
    return "█" * filled + "░" * (width - filled) + f" {round(score * 100):>3}%"


@contextmanager
def progress_bar(label: str, *, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr; yields ``advance(done, total)``.

    The one progress helper of the CLI (index, reembed, import, consolidate):
    drawn only when stderr is a terminal and `enabled` (pass ``not as_json``),
    so pipes, files, CI logs and agents see nothing; a ``total`` of 0 shows a
    spinner until the total is known. Clears itself when done.
    """
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
        yield lambda done, total: bar.update(task, completed=done, total=total or None)
