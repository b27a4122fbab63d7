"""Reading a file of the project safely: a regular file inside it, bounded in size.

Files Lore reads because something in the repository names them (memory
files, the code a memory's Key Files point at) may be hostile: a FIFO
(``open`` would block), a symlink to ``/dev/zero`` (``read`` never ends), a
symlink to a file outside the project (its content would be indexed and
served), a sparse file of many gigabytes. :func:`read_inside` turns each of
those into a :class:`~lore.errors.ValidationError` naming the file, without
blocking and without reading more than its limit. A bottom-level helper, so
every layer (the memory folder, code anchors) reads the same way.

What a user hands over (stdin, ``--body-file``, a completion bundle) is read
through :func:`read_stream`, which stops as soon as its limit is passed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, AnyStr

from lore.errors import NotFound, UsageError, ValidationError

MAX_INPUT_BYTES = 16 * 1024 * 1024
"""Most Lore reads from what a user hands it (stdin, --body-file, a bundle):
the size of the largest memory, far above any real input."""

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


CODE_TOO_BIG = "raise max_file_bytes in .lore/config.toml's [index] to index it, or exclude it"


def read_inside(
    root: Path | str, rel: str, *, max_bytes: int, head: bool = False, too_big: str = CODE_TOO_BIG
) -> bytes:
    """The bytes of the file ``rel`` (relative to the project ``root``).

    Only a regular file is read: FIFOs, devices, sockets and folders are
    refused without blocking (the file is opened non-blocking and checked
    with ``fstat`` before any read). A symlink is followed only when it
    resolves to a regular file inside the project. At most ``max_bytes + 1``
    bytes are ever read.

    Raises:
        NotFound: the file does not exist (any more).
        ValidationError: anything else; the message names the file and what to do.

    With `head`, a longer file is not refused: its first ``max_bytes`` are read.
    `too_big`: what to do about a larger file (a code file's advice by default).
    """
    return read_inside_at(root, rel, max_bytes=max_bytes, head=head, too_big=too_big)[0]


def read_inside_at(
    root: Path | str, rel: str, *, max_bytes: int, too_big: str, head: bool = False
) -> tuple[bytes, str]:
    """:func:`read_inside`, and the real path of what was read relative to
    the project's real root (``rel`` itself unless a link was followed)."""
    root_real = os.path.realpath(root)
    full = os.path.join(root_real, rel)
    if os.path.isabs(rel) or ".." in Path(rel).parts:
        raise ValidationError("path leaves the project; give a path inside it", path=rel)
    target = _resolved_inside(root_real, full, rel)
    real = rel if target == full else os.path.relpath(target, root_real).replace(os.sep, "/")
    try:
        fd = os.open(target, _OPEN_FLAGS | _NOFOLLOW)
    except FileNotFoundError:
        raise NotFound(f"{rel}: no such file") from None
    except OSError as err:
        raise ValidationError(_open_problem(err), path=rel) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValidationError(_not_regular(info.st_mode), path=rel)
        if info.st_size > max_bytes and not head:
            raise ValidationError(_too_big(info.st_size, max_bytes, too_big), path=rel)
        os.set_blocking(fd, True)
        data = _read_at_most(fd, max_bytes if head else max_bytes + 1)
    except OSError as err:
        raise ValidationError(f"cannot read ({err.strerror}); check the file", path=rel) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while we read it
        raise ValidationError(_too_big(len(data), max_bytes, too_big), path=rel)
    return data, real


def read_regular(path: Path | str, *, max_bytes: int, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, a file of Lore's own that may
    be a link (a config shared between projects): followed wherever it leads
    (unless `follow_links` is False: a session's files), but a FIFO, device,
    socket or folder is refused without blocking, and at most ``max_bytes + 1``
    bytes are read.

    Raises:
        NotFound: there is no file at ``path``.
        ValidationError: anything else; the message names the file and what to do.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS | (0 if follow_links else _NOFOLLOW))
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file") from None
    except OSError as err:
        raise ValidationError(_open_problem(err), path=str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValidationError(_not_regular(info.st_mode), path=str(path))
        os.set_blocking(fd, True)
        data = _read_at_most(fd, max_bytes + 1)
    except OSError as err:
        raise ValidationError(f"cannot read ({err.strerror}); check the file", path=str(path)) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ValidationError(
            f"is {_mib(len(data))}, over the {_mib(max_bytes)} limit for this file; is it the right file?",
            path=str(path),
        )
    return data


def read_stream(stream: IO[AnyStr], source: str, *, max_bytes: int = MAX_INPUT_BYTES) -> AnyStr:
    """All of ``stream`` (a file or stdin a user handed over), reading at most
    ``max_bytes + 1`` bytes (characters, for a text stream).

    ``/dev/zero``, ``/dev/urandom`` or an endless pipe would otherwise be read
    until memory runs out, and a size check after the read makes a too large
    file wait for all of it: the limit stops the read as soon as it is passed.

    Raises:
        UsageError: there is more than ``max_bytes``; the message names ``source``.
    """
    parts: list[AnyStr] = []
    size = 0
    while size <= max_bytes:
        chunk = stream.read(min(1 << 20, max_bytes + 1 - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    if size > max_bytes:
        raise UsageError(
            f"{source} is over the {max_bytes / (1024 * 1024):g} MiB limit; give a smaller input"
        )
    return parts[0][:0].join(parts) if parts else stream.read(0)


def _resolved_inside(root_real: str, full: str, rel: str) -> str:
    """The path to open: ``full`` itself, or the real path of the symlink(s)
    it goes through, refused when that leaves the project."""
    try:
        real = os.path.realpath(full, strict=True)
    except FileNotFoundError:
        if os.path.islink(full):
            raise ValidationError(
                "symlink to a file that does not exist; remove the link or restore its target", path=rel
            ) from None
        raise NotFound(f"{rel}: no such file") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValidationError("symlink loop; remove the link", path=rel) from None
        raise ValidationError(_open_problem(err), path=rel) from None
    except ValueError:  # a NUL in the name
        raise ValidationError("is not a valid file name (it holds a NUL); rename it", path=rel) from None
    if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
        raise ValidationError(
            "symlink to a file outside the project; Lore reads only files inside it: "
            "copy the file into the project or remove the link",
            path=rel,
        )
    return real


def _read_at_most(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _not_regular(mode: int) -> str:
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "not a regular file"
    )
    return f"is {kind}, not a regular file; Lore reads only regular files, remove it"


def _too_big(size: int, limit: int, advice: str) -> str:
    return f"is {_mib(size)}, over the {_mib(limit)} limit for this file; {advice}"


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def _open_problem(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "is a symlink Lore can't follow safely; remove the link"
    if err.errno == errno.ENXIO:
        return "is a socket or device, not a regular file; remove it"
    if isinstance(err, PermissionError):
        return "cannot be read (permission denied); check the file's owner and permissions"
    return f"cannot be read ({err.strerror or err}); check the file"


MAX_JSON_DEPTH = 100
"""Deepest nesting of lists and objects Lore takes in JSON it is handed (a
hook's payload, a transcript's line): no agent event comes near it, and the
code that walks what it reads (secret redaction, finiteness checks) recurses."""


def json_loads(text: str | bytes, *, depth: int = MAX_JSON_DEPTH) -> object:
    """`json.loads` for JSON Lore is handed: nesting deeper than `depth` is
    refused as ValueError like any other malformed JSON (the parser itself
    raises RecursionError at ~1,000 levels, which callers that skip a bad line
    did not catch), and half a surrogate pair (``"\\ud800"``, an emoji a
    JavaScript client cut in two) becomes U+FFFD, as a broken byte does when
    decoding: no file could store it."""
    import json

    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    value = _whole_text(value)
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > depth:
            raise ValueError(f"nested more than {depth} levels deep")
        if isinstance(item, dict):
            if any(_whole_text(key) != key for key in item):
                fixed = {_whole_text(key): child for key, child in item.items()}
                item.clear()
                item.update(fixed)  # in place, in order
            pairs: Iterable[tuple[Any, object]] = item.items()
        elif isinstance(item, list):
            pairs = enumerate(item)
        else:
            continue
        for key, child in list(pairs):
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
            else:
                item[key] = _whole_text(child)
    return value


def _whole_text(value: object) -> object:
    """`value` with any lone surrogate in it (a str) replaced by U+FFFD."""
    if not isinstance(value, str) or value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
