"""A team server's users, each served by a Lore of their own (`lore serve --users`).

A request authenticated with a user's token runs with :data:`ACTING_USER`
set to that user (a context variable, so it follows the request into worker
threads and MCP tool calls and never leaks into another request).
:class:`TeamLores` gives each user a :class:`~lore.service.Lore`, created on
their first request and kept: it acts as the user's agent and, on
PostgreSQL, as the user's database role (its connections ``SET ROLE``), so
row-level security decides what it can read even if the application erred.
On SQLite there are no roles: the user's agent alone separates private
memories.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lore.interfaces.web.users import User, UserTable
    from lore.project import Project
    from lore.service import Lore

ACTING_USER: ContextVar[User | None] = ContextVar("lore_acting_user", default=None)


class TeamLores:
    """One Lore per user of the server, made lazily.

    Args:
        project: the served project.
        users: the users file's entries.
        database_url: the shared database (None: SQLite, roles are ignored).
    """

    def __init__(self, project: Project, users: UserTable, database_url: str | None):
        self.project = project
        self.users = users
        self.database_url = database_url
        self._lores: dict[str, Lore] = {}
        self._lock = threading.Lock()

    def check(self) -> None:
        """At start-up: on PostgreSQL every user has a role the server can act as
        (StorageError/UsageError, one line, naming the first that fails)."""
        if self.database_url is None:
            return
        from lore.errors import UsageError
        from lore.storage import check_database_role

        for user in self.users.users:
            if not user.role:
                raise UsageError(
                    f"user '{user.name}' in {self.users.path} has no database role; a team server on "
                    "PostgreSQL acts as each user's role (`lore users add NAME --role ROLE`)"
                )
        for role in self.users.roles():
            check_database_role(self.database_url, role)

    def lore_for(self, user: User) -> Lore:
        """The Lore acting for `user` (their agent; their role on PostgreSQL)."""
        with self._lock:
            found = self._lores.get(user.name)
            if found is None:
                from lore.service import Lore

                found = Lore(
                    self.project,
                    agent=user.agent,
                    watch=True,
                    database_url=self.database_url,
                    database_role=user.role if self.database_url else None,
                )
                self._lores[user.name] = found
            return found

    def opened(self) -> list[Lore]:
        with self._lock:
            return list(self._lores.values())
