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

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeAlias

from lore.errors import NotFound, ValidationError
from lore.filenames import display_path, unsafe_name
from lore.safe_read import read_inside_at

# (visibility, storage tier, owner agent folder): what a memory file's folder makes it.
Location: TypeAlias = tuple[str, str, str | None]
LOCAL_TIERS = ("session", "daily", "archive")

MAX_MEMORY_BYTES = 16 * 1024 * 1024
"""Largest memory file Lore reads (frontmatter + body). A 5 MB body is fine."""


def read_memory_file(root: Path | str, rel: str, *, max_bytes: int = MAX_MEMORY_BYTES) -> bytes:
    """The bytes of the memory file ``rel`` (relative to the project ``root``).

    Only a regular file is read (see :func:`lore.safe_read.read_inside`):
    FIFOs, devices, sockets and folders are refused without blocking; a
    symlink is followed only when it resolves to a regular file inside the
    project; at most ``max_bytes + 1`` bytes are ever read.

    Raises:
        NotFound: the file does not exist (any more).
        ValidationError: anything else; the message names the file and what to do.
    """
    try:
        data, real = read_inside_at(
            root,
            rel,
            max_bytes=max_bytes,
            too_big="split it into several memories, or move it out of the project",
        )
    except NotFound:
        raise NotFound(f"{rel}: no such memory file; run `lore list` to see what exists") from None
    if real != rel and real.startswith(".lore/") and location_of(real) != location_of(rel):
        # A link to a memory in another of Lore's folders: in .lore/memory/ to an agent's
        # private one, it would be read (and rewritten) as shared. A link to a note kept
        # with the code is read as the memory its folder makes it.
        raise ValidationError(
            f"symlink to {real}, a memory kept in another of Lore's folders (it would be "
            "read here as another visibility); remove the link",
            path=rel,
        )
    return data


def location_of(rel: str) -> Location:
    """(visibility, storage tier, owner agent folder) implied by where a memory file lives."""
    parts = rel.split("/")
    if parts[:2] == [".lore", "sessions"] and len(parts) == 5 and parts[3] == "summaries":
        return ("shared", "session-summary", None)
    if parts[:2] == [".lore", "local"] and len(parts) > 3:
        if parts[2] in LOCAL_TIERS:
            return ("shared", parts[2], None)
        tier = parts[3] if len(parts) > 4 and parts[3] in LOCAL_TIERS else "durable"
        return ("private", tier, parts[2])
    if parts[:2] == [".lore", "memory"] and len(parts) > 3 and parts[2] in ("daily", "session"):
        return ("shared", parts[2], None)
    return ("shared", "durable", None)


def entry_stat(entry: os.DirEntry[str]) -> os.stat_result | None:
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
                if unsafe_name(rel):
                    if problems is not None:
                        shown = display_path(rel)
                        problems.append(
                            (
                                shown,
                                f"{shown}: the name is not UTF-8 text or has control characters; rename the file",
                            )
                        )
                    continue
                if _secret_in_name(rel, problems):
                    continue
                info = entry_stat(entry)
                if info is not None:
                    yield rel, info
        pending.extend(reversed(folders))


def _secret_in_name(rel: str, problems: list[tuple[str, str]] | None) -> bool:
    """Whether the file's path holds what looks like a secret: indexed, listed
    and shown, the name would carry it in clear (said in `problems`, redacted)."""
    from lore.secrets import describe, redact_name

    shown, found = redact_name(rel)
    if found and problems is not None:
        problems.append(
            (
                shown,
                f"{shown}: the name holds what looks like a secret ({describe(found)}), so the file is "
                "not indexed; rename it (git mv) and rotate the secret",
            )
        )
    return bool(found)
