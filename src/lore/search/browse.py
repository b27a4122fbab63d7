"""Browsing memories: one filtered, sorted page of the listing, and its total.

The web UI's table and the HTTP API's list read memories this way. The
filters are :class:`~lore.search.filters.MemoryFilter`'s (the same as
search, list and recall, privacy included) plus what a person curating
needs: visibility, stale only, a sort column, an offset. Counting and
paging happen in SQL, so a page costs the same on 10 or 10,000 memories.

The two queries below read ``memories``/``files``/``anchors`` directly (as
:mod:`lore.index.anchors` does); they belong behind the storage interface
when it exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from lore.errors import UsageError
from lore.index.store import SQLiteIndex
from lore.records import Record
from lore.search.filters import MemoryFilter

MAX_PAGE = 200
# Sortable columns (name → SQL); ties are broken by row id so pages are stable.
SORTS = {
    "occurred_at": "m.occurred_at",
    "title": "m.title COLLATE NOCASE",
    "type": "m.type",
    "agent": "coalesce(m.agent, '')",
    "path": "f.path",
    "confidence": "m.confidence",
}
VISIBILITIES = ("shared", "private")
_STALE = "m.id IN (SELECT memory_id FROM anchors WHERE stale_reason IS NOT NULL)"


@dataclass
class BrowseQuery:
    """Which page of which memories, in what order."""

    filter: MemoryFilter
    visibility: str | None = None
    stale: bool | None = None
    sort: str = "occurred_at"
    descending: bool = True
    offset: int = 0
    limit: int = 50

    def __post_init__(self):
        if self.sort not in SORTS:
            raise UsageError(f"cannot sort by '{self.sort}'; use one of: {', '.join(SORTS)}")
        if self.visibility not in (None, *VISIBILITIES):
            raise UsageError(f"unknown visibility '{self.visibility}'; use shared or private")
        if self.offset < 0 or not 1 <= self.limit <= MAX_PAGE:
            raise UsageError(f"offset must be ≥ 0 and limit 1-{MAX_PAGE}")

    def where(self) -> tuple[str, tuple]:
        where, params = self.filter.sql()
        clauses = [where] if where else []
        if self.visibility:
            clauses.append("m.visibility = ?")
            params += (self.visibility,)
        if self.stale is not None:
            clauses.append(_STALE if self.stale else f"NOT {_STALE}")
        return " AND ".join(clauses), params


@dataclass
class BrowsePage(Record):
    """One page of the listing: ``items`` are :func:`memory_row` dicts plus
    ``stale`` (reasons or null), ``attention`` and ``tier``."""

    total: int
    offset: int
    limit: int
    sort: str
    order: str
    items: list[dict] = field(default_factory=list)


def count(index: SQLiteIndex, query: BrowseQuery) -> int:
    where, params = query.where()
    sql = "SELECT count(*) FROM memories m"  # every memory row has its file row (foreign key)
    return index.db.execute(f"{sql} WHERE {where}" if where else sql, params).fetchone()[0]


def page(index: SQLiteIndex, query: BrowseQuery, *, everything: bool = False) -> list:
    """The query's rows (all of them with ``everything``: tiers are filtered after scoring).

    The page is chosen over narrow rows first (ids in sort order, through the
    column's index where there is one) and only its rows are read whole, so a
    deep offset costs an index walk, not a sort of every memory's text.
    """
    where, params = query.where()
    join = " JOIN files f ON f.id = m.file_id" if query.sort == "path" else ""
    direction = "DESC" if query.descending else "ASC"
    order = f"{SORTS[query.sort]} {direction}, m.file_id {direction}"
    chosen = f"SELECT m.file_id FROM memories m{join} {'WHERE ' + where if where else ''} ORDER BY {order}"
    if not everything:
        chosen += f" LIMIT {int(query.limit)} OFFSET {int(query.offset)}"
    sql = (
        "SELECT m.*, f.path FROM memories m JOIN files f ON f.id = m.file_id "
        f"WHERE m.file_id IN ({chosen}) ORDER BY {order}"
    )
    return index.db.execute(sql, params).fetchall()


def memory_row(r) -> dict:
    """A memory index row as `lore list --json` prints it."""
    return {
        "id": r["id"],
        "path": r["path"],
        "title": r["title"],
        "type": r["type"],
        "sector": r["sector"],
        "tags": json.loads(r["tags"]),
        "appliesTo": r["applies_to"],
        "agent": r["agent"],
        "taskId": r["task"],
        "occurredAt": r["occurred_at"],
        "visibility": r["visibility"],
        "storage": r["storage"],
        "summary": r["summary"],
    }
