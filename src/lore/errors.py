"""Lore's exception hierarchy.

Every error a user can cause derives from :class:`LoreError` and carries a
message that says what went wrong *and what to do*. Interfaces turn them into
one-line messages (CLI, exit code 1) or error results (MCP, HTTP).
"""

from __future__ import annotations


class LoreError(Exception):
    """Base class for every error Lore raises on purpose."""

    exit_code = 1


class ProjectNotFound(LoreError):
    """No `.lore/` directory in this folder or any parent."""


class ValidationError(LoreError):
    """A memory (file or input) breaks the format rules.

    Args:
        message: what is wrong and how to fix it.
        path: the file concerned, when there is one.
        field: the frontmatter field concerned, when there is one.
        line: 1-based line in the file, when known.
    """

    def __init__(self, message: str, *, path: str | None = None,
                 field: str | None = None, line: int | None = None):
        self.path, self.field, self.line, self.reason = path, field, line, message
        where = path or ""
        if path and line:
            where = f"{path}:{line}"
        prefix = f"{where}: " if where else ""
        if field:
            prefix += f"field '{field}': "
        super().__init__(prefix + message)


class NotFound(LoreError):
    """A memory id or path that does not exist."""


class UsageError(LoreError):
    """Bad arguments (unknown type, path outside the project, ...)."""

    exit_code = 2


class IndexCorrupt(LoreError):
    """The derived index cannot be read; it is rebuilt from the files."""


class ProviderError(LoreError):
    """An embedding provider failed (missing key, unreachable server, bad model)."""
