"""Reading memory files safely: regular files inside the project, bounded in size.

The memory folder is shared through git, so anything in it may be hostile:
a FIFO (``open`` would block every command), a symlink to ``/dev/zero``
(``read`` never ends), a symlink to a file outside the project (its content
would be indexed and served), a sparse file of many gigabytes, a folder tree
nested deeper than Python's recursion limit. Every reader of memory files
goes through this module, which turns each of those into a
:class:`~lore.errors.ValidationError` naming the file, so one bad file is
reported (``lore doctor``) while every other memory stays searchable.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from lore.errors import NotFound, ValidationError

MAX_MEMORY_BYTES = 16 * 1024 * 1024
"""Largest memory file Lore reads (frontmatter + body). A 5 MB body is fine."""

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_UNSAFE_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def read_memory_file(root: Path | str, rel: str, *, max_bytes: int = MAX_MEMORY_BYTES) -> bytes:
    """The bytes of the memory file ``rel`` (relative to the project ``root``).

    Only a regular file is read: FIFOs, devices, sockets and folders are
    refused without blocking (the file is opened non-blocking and checked
    with ``fstat`` before any read). A symlink is followed only when it
    resolves to a regular file inside the project. At most ``max_bytes + 1``
    bytes are ever read.

    Raises:
        NotFound: the file does not exist (any more).
        ValidationError: anything else; the message names the file and what to do.
    """
    root_real = os.path.realpath(root)
    full = os.path.join(root_real, rel)
    if os.path.isabs(rel) or ".." in Path(rel).parts:
        raise ValidationError("path leaves the project; give a path inside it", path=rel)
    target = _resolved_inside(root_real, full, rel)
    try:
        fd = os.open(target, _OPEN_FLAGS | _NOFOLLOW)
    except FileNotFoundError:
        raise NotFound(f"{rel}: no such memory file; run `lore list` to see what exists") from None
    except OSError as err:
        raise ValidationError(_open_problem(err), path=rel) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValidationError(_not_regular(info.st_mode), path=rel)
        if info.st_size > max_bytes:
            raise ValidationError(_too_big(info.st_size, max_bytes), path=rel)
        os.set_blocking(fd, True)
        data = _read_at_most(fd, max_bytes + 1)
    except OSError as err:
        raise ValidationError(f"cannot read ({err.strerror}); check the file", path=rel) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while we read it
        raise ValidationError(_too_big(len(data), max_bytes), path=rel)
    return data


def read_project_file(root: Path | str, rel: str, *, max_bytes: int) -> bytes:
    """:func:`read_memory_file` for any file of the project (e.g. a file a
    memory names in its Key Files): same guarantees, the caller's size limit."""
    return read_memory_file(root, rel, max_bytes=max_bytes)


def entry_stat(entry: os.DirEntry) -> os.stat_result | None:
    """The stat used to notice changes to a directory entry, without ever failing.

    Follows a symlink when it can (so edits to its target are noticed), else
    falls back to the link itself (dangling links and loops are still listed,
    so reading them reports the problem). None only when the entry vanished.
    """
    try:
        return entry.stat()
    except OSError:
        try:
            return entry.stat(follow_symlinks=False)
        except OSError:
            return None


def walk_memory_files(
    top: str, strip: int, problems: list[tuple[str, str]] | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to the root, stat) of every ``*.md`` entry under ``top``.

    ``strip`` is the length of the root prefix (with its trailing separator)
    to cut from each path. Hidden files and folders are skipped; folders are
    never followed through symlinks; the walk is iterative, so any depth is
    fine. Every ``*.md`` entry is listed whatever it is (file, FIFO, link...):
    :func:`read_memory_file` decides what may be read, so a bad entry is
    reported rather than silently ignored. Entries Lore can't even name (a
    file name that is not UTF-8, so it can't be stored or printed, or that
    holds control characters) and folders that can't be listed are appended
    to ``problems`` as (printable relative path, message), when given.
    """
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as err:
            if problems is not None:
                rel = folder[strip:].replace(os.sep, "/") or "."
                problems.append(
                    (rel, f"{rel}: cannot list the folder ({err.strerror}); check its permissions")
                )
            continue
        folders = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if is_folder:
                folders.append(entry.path)
            elif entry.name.endswith(".md"):
                rel = entry.path[strip:].replace(os.sep, "/")
                if _UNSAFE_NAME.search(rel):
                    if problems is not None:
                        shown = display_path(rel)
                        problems.append(
                            (
                                shown,
                                f"{shown}: the name is not UTF-8 text or has control characters; rename the file",
                            )
                        )
                    continue
                info = entry_stat(entry)
                if info is not None:
                    yield rel, info
        pending.extend(reversed(folders))


def display_path(rel: str) -> str:
    """`rel` printable on one line: bytes that are not UTF-8 and control
    characters shown as ``\\xNN`` escapes."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


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
        raise NotFound(f"{rel}: no such memory file; run `lore list` to see what exists") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValidationError("symlink loop; remove the link", path=rel) from None
        raise ValidationError(_open_problem(err), path=rel) from None
    if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
        raise ValidationError(
            "symlink to a file outside the project; Lore reads only files inside it. "
            "Copy the file into .lore/ or remove the link",
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
    return f"is {kind}, not a regular file; Lore reads only regular files, remove it from .lore/"


def _too_big(size: int, limit: int) -> str:
    return (
        f"is {_mib(size)}, over the {_mib(limit)} limit for a memory file; "
        "split it into smaller memories or move it out of .lore/"
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def _open_problem(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "is a symlink Lore can't follow safely; remove the link"
    if err.errno == errno.ENXIO:
        return "is a socket or device, not a regular file; remove it from .lore/"
    if isinstance(err, PermissionError):
        return "cannot be read (permission denied); check the file's owner and permissions"
    return f"cannot be read ({err.strerror or err}); check the file"
