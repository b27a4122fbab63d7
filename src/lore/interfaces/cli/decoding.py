"""Text from the command line: arguments, stdin and files must be UTF-8.

Python hands undecodable argument bytes over as lone surrogates
(``surrogateescape``), which fail much later and far away (writing a file,
binding an SQLite parameter, tokenising a query). Here they are refused where
they come in, with a one-line usage error naming the argument, the stream or
the file and the offending byte. Paths are left alone: a folder whose name is
not UTF-8 is still a folder.
"""

from __future__ import annotations

import re
import sys
from typing import IO, Any

import click

from lore.errors import UsageError
from lore.safe_read import read_stream

_SURROGATE = re.compile("[\ud800-\udfff]")


class Utf8Text(click.types.StringParamType):
    """click's plain string, refusing text that was not valid UTF-8."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        value = super().convert(value, param, ctx)
        if isinstance(value, str):
            bad = _SURROGATE.search(value)
            if bad:
                self.fail(
                    f"is not valid UTF-8 text ({_describe(bad.group(), bad.start())}); give UTF-8", param, ctx
                )
        return value


UTF8_TEXT = Utf8Text()


def require_utf8_text(command: click.Command) -> None:
    """Give every plain-text parameter of `command` and its subcommands the
    UTF-8 check (path and file parameters keep their own types)."""
    for param in command.params:
        if type(param.type) is click.types.StringParamType:
            param.type = UTF8_TEXT
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            require_utf8_text(sub)


def decode_input(raw: bytes, source: str) -> str:
    """`raw` as text (a leading BOM dropped), or a :class:`UsageError` saying
    where the first byte that is not UTF-8 is."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise UsageError(
            f"{source} is not valid UTF-8 (byte 0x{raw[err.start]:02x} at line {line}, column {column}); "
            "give UTF-8 text"
        ) from None


def read_text(stream: IO[Any], source: str) -> str:
    """All of `stream` as text, at most 16 MiB (:func:`lore.safe_read.read_stream`:
    /dev/zero or an endless pipe is refused, not read forever): binary streams
    are decoded strictly as UTF-8; text streams (stdin replaced by a test or an
    embedding program) are read as they are, then checked."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return decode_input(read_stream(buffer, source), source)
    data = read_stream(stream, source)
    if isinstance(data, bytes):
        return decode_input(data, source)
    bad = _SURROGATE.search(data)
    if bad:
        raise UsageError(
            f"{source} is not valid UTF-8 ({_describe(bad.group(), bad.start())}); give UTF-8 text"
        )
    return data


def read_stdin() -> str:
    """Standard input as text (see :func:`read_text`)."""
    return read_text(sys.stdin, "standard input")


def _describe(char: str, position: int) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for one undecodable byte
        return f"byte 0x{code - 0xDC00:02x} at character {position + 1}"
    return f"lone surrogate U+{code:04X} at character {position + 1}"
