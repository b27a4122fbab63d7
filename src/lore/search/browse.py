"""Browsing memories: one filtered, sorted page with its total, and one memory in full.

The web UI's table, the HTTP API's list and `lore list` read memories this
way. Filters are the storage layer's :class:`~lore.storage.MemoryFilter`
(built by :func:`lore.search.filters.memory_filter`, privacy included);
counting and paging happen in the store (:meth:`~lore.storage.Store.memory_page`),
so a page costs about the same on 10 or 10,000 memories. An attention tier
(hot, warm, cold) depends on access statistics and staleness, so it is
applied here, after scoring every match once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lore.errors import UsageError
from lore.records import Record
from lore.search.attention import tier as tier_of
from lore.storage import MEMORY_SORTS, MemoryFilter, MemoryRecord

if TYPE_CHECKING:
    from lore.memory.repository import Memories
    from lore.search.engine import Searcher

MAX_PAGE = 200
SORTS = MEMORY_SORTS


@dataclass
class MemoryRow(Record):
    """A memory as `lore list --json` prints it."""

    id: str
    path: str
    title: str
    type: str
    sector: str
    tags: list[str]
    applies_to: str
    agent: str | None
    task_id: str | None
    occurred_at: str
    visibility: str
    storage: str
    summary: str

    @classmethod
    def of(cls, r: MemoryRecord, **more: Any) -> Any:
        """The row of `r` (`more`: a subclass's extra fields)."""
        return cls(
            r.id,
            r.path,
            r.title,
            r.type,
            r.sector,
            list(r.tags),
            r.applies_to,
            r.agent,
            r.task,
            r.occurred_at,
            r.visibility,
            r.storage,
            r.summary,
            **more,
        )


@dataclass
class BrowseItem(MemoryRow):
    """A row of the curation table: the list row plus staleness (reasons or
    None), attention score and tier."""

    stale: list[str] | None = None
    attention: float = 0.0
    tier: str = "cold"


@dataclass
class BrowsePage(Record):
    """One page of the listing and the number of memories that match in all."""

    total: int
    offset: int
    limit: int
    sort: str
    order: str
    items: list[BrowseItem] = field(default_factory=list)


@dataclass
class MemoryDetail(Record):
    """Everything the memory page shows: the parsed memory, its file's version
    (``sha256``, for conflict-checked saves), code anchors, staleness,
    attention and access statistics."""

    id: str
    path: str
    title: str
    type: str
    sector: str
    tags: list[str]
    applies_to: str
    occurred_at: str
    updated_at: str | None
    agent: str | None
    task: str | None
    visibility: str
    storage: str
    confidence: float
    files: list[str]
    frontmatter: dict[str, Any]
    body: str
    sha256: str
    anchors: list[dict[str, Any]]
    stale: list[str] | None
    attention: float
    tier: str
    access_count: int
    last_accessed: str | None
    evidence: dict[str, int]


class Browser:
    """Pages of memories, and single memories in full, as one agent sees them."""

    def __init__(self, memories: Memories, searcher: Searcher):
        self.memories = memories
        self.searcher = searcher
        self.store = memories.store

    def page(
        self,
        flt: MemoryFilter,
        tier: str | None = None,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int = 50,
    ) -> BrowsePage:
        """One page of the memories `flt` (and the attention `tier`, if given) select."""
        if sort not in SORTS:
            raise UsageError(f"cannot sort by '{sort}'; use one of: {', '.join(SORTS)}")
        if offset < 0 or not 1 <= limit <= MAX_PAGE:
            raise UsageError(f"offset must be ≥ 0 and limit 1-{MAX_PAGE}")
        access = self.store.access_stats()
        if tier:
            paths, scores, stale = self._in_tier(flt, tier, sort, descending, access)
            total, records = len(paths), self._records(flt, paths[offset : offset + limit])
        else:
            total, records = self.store.memory_page(
                flt, sort=sort, descending=descending, offset=offset, limit=limit
            )
            stale = self.store.stale_reasons([r.id for r in records])
            scores = self.searcher.attention_of(records, access, stale)
        items = [
            BrowseItem.of(
                r, stale=stale.get(r.id), attention=round(scores[r.id], 4), tier=tier_of(scores[r.id])
            )
            for r in records
        ]
        return BrowsePage(total, offset, limit, sort, "desc" if descending else "asc", items)

    def select(
        self,
        flt: MemoryFilter,
        tier: str | None = None,
        *,
        sort: str = "path",
        descending: bool = False,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        """The memories the filter (and tier) selects, the first `limit` (default all:
        a bulk action's selection)."""
        if tier:
            paths = self._in_tier(flt, tier, sort, descending, self.store.access_stats())[0]
            return self._records(flt, paths[:limit])
        return self.store.memory_page(flt, sort=sort, descending=descending, limit=limit)[1]

    def tiers(self, ids: Sequence[str]) -> dict[str, str]:
        """The attention tier of each visible memory among `ids` (scored together)."""
        stamps = self.store.memory_stamps(replace(self.memories.filter(), ids=list(ids)))
        return {mid: tier_of(score) for mid, score in self.searcher.attention_of(stamps).items()}

    def _in_tier(
        self, flt: MemoryFilter, tier: str, sort: str, descending: bool, access: dict[str, tuple[int, str]]
    ) -> tuple[list[str], dict[str, float], dict[str, list[str]]]:
        """The paths of the matches whose attention falls in `tier`, in order. Every
        match is scored from its stamp (no text read), the access and staleness maps
        read once for all of them."""
        stamps = self.store.memory_stamps(flt, sort=sort, descending=descending)
        stale = self.store.stale_reasons()
        scores = self.searcher.attention_of(stamps, access, stale)
        return [s.path for s in stamps if tier_of(scores[s.id]) == tier], scores, stale

    def _records(self, flt: MemoryFilter, paths: list[str]) -> list[MemoryRecord]:
        """The records at `paths` (still passing `flt`), in that order."""
        if not paths:
            return []
        found = {r.path: r for r in self.store.memories(replace(flt, paths=paths))}
        return [found[p] for p in paths if p in found]

    def detail(self, key: str) -> MemoryDetail:
        """One visible memory in full (reading it here is not counted as an access)."""
        from lore.index.anchors import anchors_of

        rel = self.memories.resolve(key)
        memory = self.memories.load(rel)
        records = self.store.memories(self.memories.filter(paths=[rel]), limit=1)
        stale = self.store.stale_reasons([memory.id]).get(memory.id)
        access = self.store.access_stats()
        count, last = access.get(memory.id, (0, None))
        scores = self.searcher.attention_of(records, access, {memory.id: stale} if stale else {})
        score = scores.get(memory.id, 0.0)
        anchors = anchors_of(self.store, memory.id)
        return MemoryDetail(
            memory.id,
            rel,
            memory.title,
            memory.type,
            memory.sector or "",
            list(memory.tags),
            memory.applies_to,
            memory.occurred_at,
            memory.updated_at,
            memory.agent,
            memory.task,
            memory.visibility,
            memory.storage,
            memory.confidence,
            list(memory.files),
            memory.frontmatter(),
            memory.body,
            self.memories.version(rel),
            anchors,
            stale,
            round(score, 4),
            tier_of(score),
            count,
            last,
            {"anchors": len(anchors), "files": len(memory.files)},
        )


def rows(records: Sequence[MemoryRecord]) -> list[dict[str, Any]]:
    """Records as `lore list --json` prints them."""
    return [MemoryRow.of(r).to_dict() for r in records]
