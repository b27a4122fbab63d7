"""The team backend: PostgreSQL with pgvector, one database for many projects.

Selected with ``LORE_DATABASE_URL=postgresql://…`` (wins) or ``[index]
backend = "postgres"`` and ``[index] database_url``; the schema is created and
upgraded by `lore db upgrade`. See docs/postgres.md.
"""

from __future__ import annotations

from typing import Any

from lore.storage.postgres.identity import ProjectIdentity, identify
from lore.storage.postgres.store import DEFAULT_TEXT_SEARCH, PostgresStore

__all__ = ["PostgresStore", "ProjectIdentity", "identify", "open_postgres", "upgrade"]


def open_postgres(project: Any, url: str, *, role: str | None = None) -> PostgresStore:
    """The store of `project` (a :class:`lore.project.Project`) in the database at `url`,
    acting as database role `role` (``SET ROLE``) when given."""
    text_search = str(project.setting("index", "text_search", DEFAULT_TEXT_SEARCH) or DEFAULT_TEXT_SEARCH)
    return PostgresStore(
        url, identify(project.root, project.settings), text_search=text_search, acting_role=role
    )


def upgrade(url: str) -> tuple[int, int]:
    """Apply missing migrations to the database at `url`: (version before, after)."""
    from lore.storage.postgres.connection import connect
    from lore.storage.postgres.migrations import upgrade as apply

    conn = connect(url)
    try:
        return apply(conn)
    finally:
        conn.close()
