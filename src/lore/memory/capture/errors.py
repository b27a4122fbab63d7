"""Errors in agent output as countable patterns (seed 001's gotcha auto-capture).

One *occurrence* is one error in one event (a tool result, a message) or one
error report in printed output; the same error reported several ways in one
event (pytest's ``E   ValueError: x`` and its ``FAILED ... - ValueError: x``
summary, the lines of a traceback, a chained traceback) is one occurrence
of one error. Its *signature* is what stays the same from one occurrence to
the next:

- a traceback stands for its final exception (a chained one: the last);
- a line naming an exception with a message is reduced to ``Type: message``
  (so the same failure says the same thing wherever it was printed);
- paths are removed (``<path>``), then numbers, line numbers, hex addresses,
  hashes, UUIDs, timestamps and temp dirs become placeholders
  (:func:`lore.memory.capture.parse.normalise_error`).

The example kept with each occurrence is the line as printed, with paths
inside the project made relative to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from lore.memory.capture.parse import MAX_PATTERN, error_reports, normalise_error

_EXCEPTION = re.compile(
    r"\b(?P<name>[A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)*(?:Error|Exception|Warning|Fault))\b"
    r":\s*(?P<message>\S.*)$"
)
_PATH = re.compile(
    r"(?:[A-Za-z]:\\|~/|\.{1,2}/|/)?(?:[\w.@-]+[/\\])+[\w.@-]+"  # a/b, /abs/x.py, C:\x\y
)
_PYTEST_PREFIX = re.compile(r"^E\s{2,}")
# A pytest node id (tests/test_x.py::test_y[param]).
_TEST_ID = re.compile(r"[\w./\\-]+\.py::[\w\[\]:.-]+")
_WORD = re.compile(r"[A-Za-z_]\w{2,}")
_GENERIC = frozenset(
    "assert assertion assertionerror error failed fail false true none null nil undefined not and "
    "the where with expected got actual equal equals returned result value".split()
)


def error_lines(text: str) -> list[str]:
    """The error reports in `text`, one line each (:func:`~lore.memory.capture.parse.error_reports`):
    a traceback's final exception (a chained one: its last), every other error
    line that is an error of its own."""
    return [line for _, line in error_reports(text.splitlines())]


def relative(line: str, root: Path | None) -> str:
    """`line` with absolute paths inside the project made relative to it."""
    if root is None:
        return line
    for prefix in {str(root), str(root.resolve())}:
        line = line.replace(prefix.rstrip("/") + "/", "")
    return line


def as_reported(line: str) -> str:
    """An example line without pytest's ``E   `` prefix: the error as its program reported it."""
    return _PYTEST_PREFIX.sub("", line.strip())


def signature(line: str, root: Path | None = None) -> str:
    """The normalised form of an error line: what makes two reports the same error.

    A message with nothing of its own once numbers are placeholders
    (``AssertionError: assert <n> == <n>``) would make one error of every
    failed comparison: it names its test when the line does (pytest's
    ``FAILED tests/x.py::test_y - ...``), else it is no error of its own ("")."""
    text = _PYTEST_PREFIX.sub("", relative(line, root).strip())
    match = _EXCEPTION.search(text)
    if match and len(match.group("message").strip()) >= 3:
        core = f"{match.group('name')}: {match.group('message').strip()}"
        if not _says_something(normalise_error(_PATH.sub("<path>", match.group("message")))):
            test = _TEST_ID.search(text[: match.start()])
            return normalise_error(f"{test.group(0)}: {core}") if test else ""
        text = core
    text = _PATH.sub("<path>", text)
    return normalise_error(text)


def _says_something(message: str) -> bool:
    """Does a normalised message hold a word of its own (not a placeholder,
    an operator or a word every failed check uses)?"""
    return any(word.lower() not in _GENERIC for word in _WORD.findall(re.sub(r"<\w+>", " ", message)))


def occurrences(text: str, root: Path | None = None, *, distinct: bool = True) -> Iterator[tuple[str, str]]:
    """(signature, example) of the errors reported in `text`, in order, with
    any secret in them redacted.

    Args:
        distinct: one per distinct error (the text is one event); False:
            every report (printed output, where each report is an occurrence).
    """
    from lore.secrets import redact

    seen: set[str] = set()
    for report in error_lines(text):
        # Redacted first: the pattern and its example are kept in the index and
        # in a gotcha's frontmatter, and a connection error often holds its URL.
        line = redact(report)[0]
        sig = signature(line, root)
        if not sig or (distinct and sig in seen):
            continue
        seen.add(sig)
        example = relative(line, root)
        yield sig, example if len(example) <= MAX_PATTERN else example[: MAX_PATTERN - 1] + "…"
