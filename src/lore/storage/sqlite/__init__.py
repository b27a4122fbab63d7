"""The default backend: SQLite with FTS5 in `.lore/index.db`, vectors searched exactly with numpy."""

from lore.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
