"""Jupyter notebooks as code: the source of their cells, chunked in the
kernel's language (Markdown cells as Markdown), cited at the lines of the
``.ipynb`` file that hold it.

A notebook is JSON, and most of its bytes are outputs (images in base64,
tables): chunked as text, search would find the JSON's punctuation and a
PNG's letters, and the code's words would be split across escaped strings.
Here each run of consecutive cells of one kind is joined (code cells that
define a function and call it are one module to the chunker, and tiny cells
merge into chunks of a useful size) and chunked as a file of its language;
each chunk's lines are mapped back to the notebook's lines. nbformat writes
a cell's ``source`` as a list of strings, one line of the file each: a
citation ``analysis.ipynb:42`` opens on the line holding that code. A file
written another way (a source given as one string) is cited at the line
of its ``"source"`` key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore.index.chunker import CodeChunk

# A cell's `"source":` key on a line of its own (a key, not text in a string: those quotes are escaped).
_SOURCE_KEY = re.compile(r'\s*"source"\s*:')


def notebook_runs(text: str) -> list[tuple[str, str, list[int]]] | None:
    """The notebook's runs of cells as (language, text, the file's 1-based
    line of each of the text's lines), in order; None when `text` is not a
    notebook (not JSON, no list of cells)."""
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    code_language = _kernel_language(notebook.get("metadata"))
    lines = text.split("\n")
    keys = [row for row, line in enumerate(lines) if _SOURCE_KEY.match(line)]
    aligned = len(keys) == sum(1 for cell in cells if isinstance(cell, dict) and "source" in cell)
    runs: list[tuple[str, list[str], list[int]]] = []  # (language, lines, their rows in the file)
    key = 0
    for cell in cells:
        if not isinstance(cell, dict) or "source" not in cell:
            continue
        source = cell["source"]
        row = keys[key] if aligned else 0
        key += 1
        parts = source if isinstance(source, list) else [source]
        if not all(isinstance(part, str) for part in parts) or not "".join(parts).strip():
            continue
        body = "".join(parts).rstrip().split("\n")
        rows = _rows(parts, row, lines)[: len(body)] if aligned else [1] * len(body)
        kind = cell.get("cell_type")
        language = code_language if kind == "code" else "markdown" if kind == "markdown" else "text"
        if runs and runs[-1][0] == language:  # a blank line between two cells of a run
            runs[-1][1].extend(["", *body])
            runs[-1][2].extend([runs[-1][2][-1], *rows])
        else:
            runs.append((language, body, rows))
    return [(language, "\n".join(body), rows) for language, body, rows in runs]


def _rows(parts: list[str], key_row: int, lines: list[str]) -> list[int]:
    """The file's 1-based line of each line of ``"".join(parts)``: the line
    after the key for the first part, and so on, when the file holds each
    part on its own line (checked); else the key's line for all."""
    count = len("".join(parts).split("\n"))
    start = key_row + 1  # 0-based row of the first part
    for offset, part in enumerate(parts):
        row = start + offset
        try:
            held = json.loads(lines[row].strip().rstrip(","))
        except (IndexError, ValueError):
            return [key_row + 1] * count
        if held != part:
            return [key_row + 1] * count
    rows: list[int] = []
    for offset, part in enumerate(parts):
        rows += [start + offset + 1] * (part.count("\n") + (0 if part.endswith("\n") else 1))
    return (rows + [rows[-1] if rows else key_row + 1] * count)[:count]


def _kernel_language(metadata: Any) -> str:
    """The language of the notebook's code cells as the chunker names it
    (Python when the notebook does not say; "text" for one it does not know)."""
    from lore.index.chunker import language_name

    named = None
    if isinstance(metadata, dict):
        for field, key in (("kernelspec", "language"), ("language_info", "name")):
            value = metadata.get(field)
            if isinstance(value, dict) and isinstance(value.get(key), str):
                named = value[key]
                break
    return (language_name(named) or "text") if named else "python"


def chunk_notebook(text: str, chunk: Any) -> list[CodeChunk] | None:
    """The chunks of a notebook, cut by `chunk(text, language)` run by run
    and numbered by the notebook's lines; None when `text` is not a notebook."""
    from lore.index.chunker import CodeChunk

    runs = notebook_runs(text)
    if runs is None:
        return None
    out: list[CodeChunk] = []
    for language, body, rows in runs:
        for piece in chunk(body, language):
            first = rows[min(piece.start_line, len(rows)) - 1]
            last = rows[min(piece.end_line, len(rows)) - 1]
            out.append(
                CodeChunk(
                    text=piece.text,
                    start_line=first,
                    end_line=max(first, last),
                    symbol=piece.symbol,
                    kind=piece.kind,
                    language=piece.language,
                )
            )
    return out


# A line holding one JSON string and nothing else (a comma after it): how nbformat writes a source line.
_STRING_LINE = re.compile(r'(?P<indent>\s*)(?P<string>"(?:[^"\\]|\\.)*")(?P<comma>,?)\s*')


_LONGEST = 20_000  # longer: an output's base64 (a plot), no source line


def mask_strings(text: str, mask: Callable[[str], str]) -> str:
    """`text` (a notebook's JSON) with each line that holds a single string
    rewritten as `mask` makes of its decoded value: a secret written in a
    cell hides behind JSON's escapes (``\\n"`` after it) from rules that
    read the file as it is."""
    out = []
    for line in text.split("\n"):
        found = _STRING_LINE.fullmatch(line.rstrip("\r")) if len(line) <= _LONGEST else None
        if found is not None:
            try:
                value = json.loads(found["string"])
            except ValueError:
                value = None
            if isinstance(value, str) and (masked := mask(value)) != value:
                line = f"{found['indent']}{json.dumps(masked)}{found['comma']}"
        out.append(line)
    return "\n".join(out)
