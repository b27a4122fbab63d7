"""Writing files so that no reader ever sees half of one, and nothing is lost on failure.

Every file Lore writes (memories, config, agent configs, git hooks, session
metadata and archives, model caches) goes through here: the data is written
to a temporary file in the same folder, optionally synced, given its mode,
then renamed over the target (atomic on POSIX) — or, for :func:`write_new`,
hard-linked to a name that does not exist yet, so an existing file is never
overwritten. A failure leaves no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def temporary(
    directory: Path, data: str | bytes, *, mode: int | None = None, sync: bool = True, prefix: str = ".lore-"
) -> Path:
    """A temporary file in `directory` holding `data` (text is written as UTF-8 with \\n)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(name, mode)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def write_atomic(path: Path, data: str | bytes, *, mode: int | None = None, sync: bool = True) -> None:
    """Replace `path` with `data` atomically.

    Args:
        mode: permission bits for the file (default: what mkstemp gives, 0600,
            unless the target exists: then its mode is kept).
        sync: fsync before the rename (skip for files rewritten very often
            whose loss is harmless).
    """
    path = Path(path)
    if mode is None and path.exists():
        mode = path.stat().st_mode & 0o7777
    try:
        tmp = temporary(path.parent, data, mode=mode, sync=sync, prefix=f".{path.name[:40]}.")
    except OSError as err:
        raise naming(err, path) from err
    try:
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise naming(err, path) from err
        raise


def write_new(directory: Path, name: str, data: str | bytes, *, mode: int | None = None) -> Path:
    """Create a new file atomically, never overwriting: on a name collision the
    stem gets ``-2``, ``-3``, ... Returns the path written.

    The content goes to a temporary file first and is then hard-linked into
    place, which fails if the name exists, so concurrent writers can't clobber
    each other and readers never see a partial file.
    """
    try:
        tmp = temporary(directory, data, mode=mode)
    except OSError as err:
        raise naming(err, directory / name) from err
    try:
        return link_free(tmp, directory, name)
    except OSError as err:
        raise naming(err, directory / name) from err
    finally:
        tmp.unlink(missing_ok=True)


def naming(err: OSError, target: Path) -> OSError:
    """`err` naming `target`, the file being written, instead of the temporary
    file next to it (which no longer exists) or nothing at all."""
    if err.errno is None or isinstance(err, FileExistsError):  # link_free's own message
        return err
    return type(err)(err.errno, err.strerror, str(target))


def link_free(source: Path, directory: Path, name: str) -> Path:
    """Hard-link `source` as `name` in `directory`, or as the first free
    ``stem-N.ext`` for N up to :data:`NUMBERED`, then as ``stem-<random>.ext``
    (a thousand messages a day that start alike, "Done.", would otherwise
    probe a thousand names each, and then find none)."""
    import secrets

    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    for attempt in range(1, NUMBERED + 64):
        suffix = str(attempt) if attempt <= NUMBERED else secrets.token_hex(4)
        candidate = directory / (name if attempt == 1 else f"{stem}-{suffix}{dot}{ext}")
        try:
            os.link(source, candidate)
            return candidate
        except FileExistsError:
            continue
    raise FileExistsError(f"no free file name for {name} in {directory}")


NUMBERED = 50


def contained(top: Path | str, path: Path | str) -> bool:
    """Whether `path` (made or not yet) stays inside `top` once every symbolic
    link on the way is followed: a cloned repository may hold links where
    Lore writes (``.lore/local`` → a folder elsewhere), and nothing Lore
    writes may land outside the project through one."""
    real_top = os.path.realpath(top)
    real = os.path.realpath(path)
    return real == real_top or real.startswith(real_top.rstrip(os.sep) + os.sep)


def append_line(top: Path | str, path: Path, line: str) -> bool:
    """Append `line` to the log `path` (made if missing) when its folder stays
    inside `top` and the log itself is no symbolic link (a link to a file of
    the user's would grow it line by line); whether it was written."""
    if not contained(top, path.parent):
        return False
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:  # a link (ELOOP), or no folder: a log line is not worth failing for
        return False
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        handle.write(line.rstrip("\n") + "\n")
    return True
