"""Lore's exception hierarchy: one base class, one *code* per kind of failure.

Every error a user can cause derives from :class:`LoreError` and carries a
one-line message that says what went wrong *and what to do*. Each interface
maps the code once (CLI: exit status, MCP: tool error, HTTP: status):

=================  ==============  =========  ===========
class              code            CLI exit   HTTP status
=================  ==============  =========  ===========
UsageError         usage           2          400
NotFound           not_found       1          404
ValidationError    invalid         1          422
Conflict           conflict        1          409
PermissionDenied   permission      1          403
StorageError       storage         1          503
ProviderError      provider        1          502
=================  ==============  =========  ===========

:func:`as_lore_error` turns the library errors that can escape the core
(sqlite3, OS, decoding) into these, so no interface prints a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import ClassVar


class LoreError(Exception):
    """Base class for every error Lore raises on purpose."""

    code: ClassVar[str] = "error"
    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 500


class UsageError(LoreError):
    """Bad arguments (unknown type, path outside the project, empty query, ...)."""

    code = "usage"
    exit_code = 2
    http_status = 400


class ArgumentError(UsageError):
    """A usage error about arguments that each interface names its own way:
    ``--since`` on the command line, ``since`` over MCP and in Python (what
    ``str()`` gives). `template` is the message with ``{0}``, ``{1}``... where
    `names` (as Python calls them) go; user text in it is escaped with :func:`literal`."""

    def __init__(self, template: str, *names: str):
        self.template, self.names = template, names
        super().__init__(self.named(str))

    def named(self, name: Callable[[str], str]) -> str:
        """The message, each argument named by `name` (e.g. an argument -> its flag)."""
        return self.template.format(*(name(n) for n in self.names))


def literal(text: str) -> str:
    """User text as it stands in an :class:`ArgumentError` template."""
    return text.replace("{", "{{").replace("}", "}}")


class NotFound(LoreError):
    """A memory, session or other object that does not exist (or that the
    caller may not see: another agent's private memory is "not found")."""

    code = "not_found"
    http_status = 404


class ProjectNotFound(NotFound):
    """No `.lore/` directory in this folder or any parent."""


class ValidationError(LoreError):
    """A memory (file or input) breaks the format rules.

    Args:
        message: what is wrong and how to fix it.
        path: the file concerned, when there is one.
        field: the frontmatter field concerned, when there is one.
        line: 1-based line in the file, when known.
    """

    code = "invalid"
    http_status = 422

    def __init__(
        self, message: str, *, path: str | None = None, field: str | None = None, line: int | None = None
    ):
        self.path, self.field, self.line, self.reason = path, field, line, message
        where = path or ""
        if path and line:
            where = f"{path}:{line}"
        prefix = f"{where}: " if where else ""
        if field:
            prefix += f"field '{field}': "
        super().__init__(prefix + message)


class Conflict(LoreError):
    """The thing changed under us (edited on disk since it was read, an id
    that already exists)."""

    code = "conflict"
    http_status = 409


class PermissionDenied(LoreError):
    """The file system (or the database) refuses: read-only folder, wrong owner."""

    code = "permission"
    http_status = 403


class StorageError(LoreError):
    """The index or database failed in a way Lore could not repair by itself."""

    code = "storage"
    http_status = 503


class IndexCorrupt(StorageError):
    """The derived index cannot be read; it is rebuilt from the files."""


class DiskFull(StorageError):
    """The disk (or a file size limit) refused a write; nothing is damaged."""


class ProviderError(LoreError):
    """An embedding or summary provider failed (missing key, unreachable server, bad model).

    ``refused_input``: the provider answered that it will not take this request's
    content (HTTP 400, 413 or 422), which may be one text of a batch.
    """

    code = "provider"
    http_status = 502
    refused_input = False


class GitError(LoreError):
    """A git command failed, or git is not installed."""

    code = "usage"
    exit_code = 1
    http_status = 400


class ConfigError(LoreError):
    """A configuration file (ours or an agent's) is malformed or has a conflicting entry.

    Args:
        message: what is wrong and what to do.
        path: the file concerned.
    """

    code = "invalid"
    http_status = 422

    def __init__(self, message: str, *, path: object = None):
        self.path = path
        super().__init__(f"{path}: {message}" if path is not None else message)


# Database errors that say a statement is past the engine's limits (SQLite's "LIKE or
# GLOB pattern too complex", "Expression tree is too large", "too many SQL variables").
PAST_LIMITS = ("too complex", "too large", "too big", "too many", "stack overflow")


def _file_in_the_way(err: OSError) -> str | None:
    """The file that stands where a folder is needed: the path itself (a
    folder could not be made there), or for "Not a directory" the nearest of
    its parents that is a file (`.lore` a file, when `.lore/memory` is made)."""
    if not isinstance(err.filename, str) or not err.filename:
        return None
    if isinstance(err, FileExistsError):
        return err.filename if os.path.isfile(err.filename) else None
    if isinstance(err, NotADirectoryError):
        parent = os.path.dirname(err.filename)
        while parent and parent != os.path.dirname(parent):
            if os.path.isfile(parent):
                return parent
            parent = os.path.dirname(parent)
    return None


def debugging() -> bool:
    """Whether ``LORE_DEBUG`` asks for tracebacks (``0``, ``false``, ``no`` and ``off`` do not)."""
    return os.environ.get("LORE_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def as_lore_error(err: BaseException) -> LoreError | None:
    """The LoreError an unexpected library error means, or None if it is not one we know.

    Interfaces call this on anything that escapes the core, so a read-only
    folder or a locked database is one line, not a traceback.
    """
    if isinstance(err, LoreError):
        return err
    if isinstance(err, PermissionError):
        where = f" ({err.filename})" if err.filename else ""
        return PermissionDenied(
            f"permission denied{where}; check the folder's owner and permissions, or run where you can write"
        )
    if isinstance(err, OSError):
        where = f" {err.filename}:" if err.filename else ""
        writing = f" (writing {err.filename})" if err.filename else ""
        reason = err.strerror or str(err)
        if getattr(err, "errno", None) == 28:
            return DiskFull(f"the disk is full{writing}; free some space and try again")
        if getattr(err, "errno", None) == 30:
            return PermissionDenied(f"read-only file system{writing}; run where you can write")
        if getattr(err, "errno", None) == errno.ENAMETOOLONG:  # a name given: the request's fault
            name = str(err.filename or "")
            name = name if len(name) <= 60 else f"{name[:40]}…{name[-16:]}"
            return UsageError(f"a name is too long for the file system ({name}); give a shorter path")
        blocking = _file_in_the_way(err)
        if blocking is not None:
            return StorageError(
                f"{blocking} is a file where Lore needs a folder; move it out of the way "
                "(`lore doctor` lists such problems)"
            )
        return StorageError(f"file system error:{where} {reason}")
    if _from_database(err) and "binding parameter" in str(err):
        # A value of a type the database cannot hold (a dict as an agent's name): the request's fault.
        return UsageError(f"a value the index cannot take ({err}); give text or a number")
    if is_busy(err):
        return StorageError(f"the index is busy ({err}); another Lore process holds it, try again")
    if _from_database(err) and "full" in str(err):
        return DiskFull(f"the disk is full ({err}); free some space and try again")
    if getattr(err, "sqlite_errorname", None) == "SQLITE_IOERR_SHMSIZE":
        # SQLite's "disk I/O error" when the index's -shm file can't grow: no
        # damage, and rebuilding (what the general message below says) can't help.
        return DiskFull(
            "the disk is full (the index's .db-shm file could not grow); free some space and try again"
        )
    if _from_database(err) and _postgres_operational(err):
        return postgres_failure(err)
    if _from_database(err) and getattr(err, "sqlstate", None) == "42501":
        # PostgreSQL's insufficient_privilege: the role's rights, not the index, are wrong.
        reason = driver_reason(err)
        if "row-level security" in reason:
            return PermissionDenied(
                f"PostgreSQL refused a row to this database role ({reason}): this clone holds another "
                "role's private memories (a team server's clone); run Lore here as that role, or from "
                "a clone of your own (docs/postgres.md)"
            )
        if "permission denied for database" in reason and "connect" not in str(err).lower():  # CREATE on it
            return PermissionDenied(
                f"PostgreSQL refused this database role ({reason}): setting up Lore's schema needs "
                "CREATE on the database; run `lore db upgrade` as the database's owner (or an "
                "administrator runs `GRANT CREATE ON DATABASE <db> TO <role>`; docs/postgres.md)"
            )
        return PermissionDenied(
            f"PostgreSQL refused this database role ({reason}); connect as a member of lore_user "
            "(an administrator runs `GRANT lore_user TO <role>`; docs/postgres.md)"
        )
    if _from_database(err) and any(word in str(err).lower() for word in PAST_LIMITS):
        # A statement past the database's limits: the request, not the index, is at fault.
        return UsageError(
            f"the request is too large for the index ({err}); narrow it (fewer or shorter values)"
        )
    if _from_database(err):
        return StorageError(f"index error ({err}); run `lore doctor`, or `lore index --force` to rebuild")
    if isinstance(err, UnicodeError):
        return UsageError(f"text is not valid UTF-8 ({err.__class__.__name__}); give UTF-8 input")
    if isinstance(err, RecursionError):
        return ValidationError("input nested too deeply to read; simplify it")
    if isinstance(err, MemoryError):
        return StorageError("out of memory reading the input; is a file unexpectedly huge?")
    return None


def without_server_paths(message: str, roots: Iterable[Path]) -> str:
    """`message` as a server shows it to its clients: a path inside a served
    project relative to that project (``<project>`` for the folder itself),
    the home folder as ``~``. The server's own layout is not the client's
    business, and a relative path is the one a client can use."""
    for root in sorted({str(r).rstrip(os.sep) for r in roots}, key=len, reverse=True):
        if root:  # a project at "/" has no prefix to take off
            message = _path_under(root).sub(lambda m: m.group(1) or "<project>", message)
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        message = _path_under(home).sub(lambda m: "~" + (("/" + m.group(1)) if m.group(1) else ""), message)
    return message


def _path_under(root: str) -> re.Pattern[str]:
    # The folder itself, or a path below it; not a longer name that begins the
    # same (/srv/proj2, /srv/proj.bak), nor the same letters inside a longer
    # path (/mnt/srv/proj). A full stop after the folder ends the sentence, not the name;
    # a colon ends it too, as in search paths (PATH=/srv/proj/bin:/srv/proj/tools).
    start, sep, stop = r"(?<![\w.~/-])", re.escape(os.sep), r"\s'\"),;:"
    return re.compile(rf"{start}{re.escape(root.rstrip(os.sep))}(?:{sep}([^{stop}]*))?(?![\w-]|\.[\w.-])")


def unchanged(err: OSError, what: str) -> LoreError:
    """The one-line error for a file operation that failed and was undone:
    `what` could not be done, the system's reason, and that nothing changed."""
    reason = (err.strerror or str(err)).lower()
    if err.errno == 28:
        return DiskFull(f"{what} (the disk is full); nothing was changed: free some space and try again")
    kind = PermissionDenied if isinstance(err, PermissionError) or err.errno == 30 else StorageError
    return kind(
        f"{what} ({reason}); nothing was changed: check the file's and its folder's permissions "
        "and attributes (lsattr), then try again"
    )


def driver_reason(err: BaseException) -> str:
    """A database driver's error in one line: the server's own message, else
    the last line (libpq puts its hint there when a connection fails)."""
    primary = getattr(getattr(err, "diag", None), "message_primary", None)
    if primary:
        return str(primary).rstrip(".")
    lines = str(err).strip().splitlines()
    return lines[-1].strip().rstrip(".") if lines else type(err).__name__


def postgres_failure(err: BaseException) -> StorageError:
    """The one line for psycopg's OperationalError. The connection went away (a
    restart, a killed backend) or the server did not complete the statement (it
    was cancelled, a lock waited too long): nothing to rebuild either way, the
    command can be run again."""
    reason = driver_reason(err)
    state = str(getattr(err, "sqlstate", None) or "")
    if not state or state.startswith(("08", "57P")):
        return StorageError(
            f"lost the connection to PostgreSQL ({reason}); check that the server is running, and try again"
        )
    return StorageError(f"PostgreSQL did not complete the request ({reason}); try again")


def _postgres_operational(err: BaseException) -> bool:
    """psycopg's OperationalError (a lost connection, a pool that cannot get one,
    a cancelled statement), known by name: psycopg is an optional import."""
    return any(
        cls.__name__ == "OperationalError" and cls.__module__.split(".")[0] == "psycopg"
        for cls in type(err).__mro__
    )


def is_busy(err: BaseException) -> bool:
    """Whether `err` is the database saying another process holds its write lock
    (SQLite: "database is locked"; PostgreSQL: a lock waited for past
    ``lock_timeout``, SQLSTATE 55P03)."""
    return _from_database(err) and ("locked" in str(err) or getattr(err, "sqlstate", None) == "55P03")


@contextlib.contextmanager
def unless_busy() -> Iterator[None]:
    """Run bookkeeping a read does (access counts, the hourly tier pass) unless
    another process holds the index's write lock: then it is left for later."""
    try:
        yield
    except Exception as err:
        if not is_busy(err):
            raise


def _from_database(err: BaseException) -> bool:
    """An error of a database driver (sqlite3, psycopg), known by its class's module."""
    return any(cls.__module__.split(".")[0] in ("sqlite3", "psycopg") for cls in type(err).__mro__)
