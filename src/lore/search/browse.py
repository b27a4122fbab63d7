"""Browsing memories: one filtered, sorted page with its total, and one memory in full.

The web UI's table, the HTTP API's list and `lore list` read memories this
way. Filters are the storage layer's :class:`~lore.storage.MemoryFilter`
(built by :func:`lore.search.filters.memory_filter`, privacy included);
counting and paging happen in the store (:meth:`~lore.storage.Store.memory_page`),
so a page costs about the same on 10 or 10,000 memories. Attention tiers
(hot, warm, cold, archive) are the ones the lifecycle keeps in the index
(:mod:`lore.memory.lifecycle`, seed 001's transitions): a tier is a filter
like any other, and each row shows its memory's kept tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from lore.errors import UsageError
from lore.records import Record, datarecord
from lore.storage import MEMORY_SORTS, MemoryFilter, MemoryRecord

if TYPE_CHECKING:
    from lore.index.anchors import AnchorInfo
    from lore.memory.lifecycle import Lifecycle
    from lore.memory.repository import Memories
    from lore.search.engine import Searcher

MAX_PAGE = 200
SORTS = MEMORY_SORTS


@datarecord
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
    tier: str  # the attention tier the lifecycle keeps (hot, warm, cold, archive)
    evidence_count: int
    summary: str

    @classmethod
    def of(cls, r: MemoryRecord, tier: str, **more: Any) -> Any:
        """The row of `r` in attention `tier` (`more`: a subclass's extra fields)."""
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
            tier,
            r.evidence_count,
            r.summary,
            **more,
        )


@datarecord
class BrowseItem(MemoryRow):
    """A row of the curation table: the list row plus staleness (reasons or
    None) and attention score."""

    stale: list[str] | None = None
    attention: float = 0.0


@datarecord
class BrowsePage(Record):
    """One page of the listing and the number of memories that match in all."""

    total: int
    offset: int
    limit: int
    sort: str
    order: str
    items: list[BrowseItem] = field(default_factory=list)


@datarecord
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
    anchors: list[AnchorInfo]
    stale: list[str] | None
    attention: float
    tier: str
    access_count: int
    last_accessed: str | None
    evidence: dict[str, int]  # anchors and files named
    evidence_count: int  # observations of its fact (the file's count plus pending evidence)


class Browser:
    """Pages of memories, and single memories in full, as one agent sees them."""

    def __init__(self, memories: Memories, searcher: Searcher, lifecycle: Lifecycle):
        self.memories = memories
        self.searcher = searcher
        self.lifecycle = lifecycle
        self.store = memories.store

    def page(
        self,
        flt: MemoryFilter,
        *,
        sort: str = "occurred_at",
        descending: bool = True,
        offset: int = 0,
        limit: int = 50,
    ) -> BrowsePage:
        """One page of the memories `flt` selects (attention tiers included: ``flt.tiers``)."""
        if sort not in SORTS:
            raise UsageError(f"cannot sort by '{sort}'; use one of: {', '.join(SORTS)}")
        if offset < 0 or not 1 <= limit <= MAX_PAGE:
            raise UsageError(f"offset must be ≥ 0 and limit 1-{MAX_PAGE}")
        total, records = self.store.memory_page(
            flt, sort=sort, descending=descending, offset=offset, limit=limit
        )
        ids = [r.id for r in records]
        stale = self.store.stale_reasons(ids)
        scores = self.searcher.attention_of(records, self.store.access_stats(), stale)
        tiers = self.lifecycle.tiers_of(ids)
        items = [
            BrowseItem.of(r, tiers[r.id], stale=stale.get(r.id), attention=round(scores[r.id], 4))
            for r in records
        ]
        return BrowsePage(total, offset, limit, sort, "desc" if descending else "asc", items)

    def select(
        self,
        flt: MemoryFilter,
        *,
        sort: str = "path",
        descending: bool = False,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        """The memories the filter selects, the first `limit` (default all: a bulk
        action's selection)."""
        return self.store.memory_page(flt, sort=sort, descending=descending, limit=limit)[1]

    def tiers(self, ids: Sequence[str]) -> dict[str, str]:
        """The kept attention tier of each memory among `ids`."""
        return self.lifecycle.tiers_of(ids)

    def rows(self, records: Sequence[MemoryRecord]) -> list[dict[str, Any]]:
        """Records as `lore list --json` prints them (with their kept tiers)."""
        tiers = self.lifecycle.tiers_of([r.id for r in records])
        return [MemoryRow.of(r, tiers[r.id]).to_dict() for r in records]

    def detail(self, key: str) -> MemoryDetail:
        """One visible memory in full (reading it here is not counted as an access)."""
        from lore.index.anchors import anchors_of

        rel = self.memories.resolve(key)
        memory = self.memories.view(rel)
        records = self.store.memories(self.memories.filter(paths=[rel]), limit=1)
        stale = self.store.stale_reasons([memory.id]).get(memory.id)
        access = self.store.access_stats()
        count, last = access.get(memory.id, (0, None))
        scores = self.searcher.attention_of(records, access, {memory.id: stale} if stale else {})
        score = scores.get(memory.id, 0.0)
        tier = self.lifecycle.tiers_of([memory.id])[memory.id]
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
            tier,
            count,
            last,
            {"anchors": len(anchors), "files": len(memory.files)},
            records[0].evidence_count if records else 1,
        )
