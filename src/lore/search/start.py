"""The session-start pack: what an agent should know before its first prompt.

Injected by the SessionStart hook and printed by `lore start`, it must earn
its tokens, so it holds only what is specific to this project and this
moment, in this order:

1. **The current task**: the branch (and task id) and how far it is ahead of
   the default branch.
2. **Memories**: the project's own memories, scored by attention (recency,
   use, confidence, staleness) × what kind of knowledge they are (gotchas,
   warnings and decisions first) × whether their scope applies (a memory
   about a file being changed counts more, one about an untouched file
   less); memories matching the branch's task by search join them. Session
   captures are left out, superseded memories give way to their successors,
   and nothing under :data:`MIN_SCORE` goes in.
3. **Likely files** for the branch's task, never of a generic role
   (community files such as CONTRIBUTING or the licence, docs, changelogs,
   generated or vendored code).
4. **Recently changed areas**: folders of files changed on the branch or in
   the work tree (on the default branch: by the last week's commits),
   generic roles left out.

When there is no memory worth showing and no task, the pack is empty and
nothing is injected. ``[recall] start_budget`` caps its size (default
:data:`DEFAULT_BUDGET` tokens).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import field
from typing import TYPE_CHECKING, Any

from lore.index.roles import file_role
from lore.records import datarecord
from lore.search import attention as att
from lore.search.pack import Item, pack, render
from lore.search.recall import FLOOR, RecallPack, file_item, flag_disputed, follow_relations
from lore.storage import ChunkFilter

if TYPE_CHECKING:
    from lore.memory.repository import Memories
    from lore.search.engine import Searcher

DEFAULT_BUDGET = 800
MIN_SCORE = 0.3  # attention × kind × scope below this is not worth a session's tokens
MAX_MEMORIES = 8
MAX_FILES = 3
MAX_AREAS = 4
GENERIC_ROLES = ("community", "docs", "changelog", "generated", "vendored")
# The agents' own settings (`lore install` writes them): setup, not an area of the project.
AGENT_SETTINGS = frozenset(
    (".mcp.json", ".claude/settings.json", ".claude/settings.local.json", ".cursor/mcp.json")
)
SECTIONS = {
    "memory": "Project memory",
    "task": "Current task",
    "file": "Likely files for the task",
    "area": "Recently changed",
}
HEAD = "## Lore: this project's memory"
# What kind of knowledge is worth reading before any prompt (gotchas first).
KIND_WEIGHT = {
    "gotcha": 1.0,
    "warning": 1.0,
    "decision": 1.0,
    "convention": 0.95,
    "preference": 0.9,
    "pattern": 0.9,
    "architecture": 0.85,
    "lesson": 0.8,
    "fact": 0.7,
    "summary": 0.6,
}
SCOPE_APPLIES, SCOPE_ELSEWHERE = 1.5, 0.4


@datarecord
class StartRequest:
    """The moment a session starts: the task, the branch's work, the budget.

    ``title`` is the task in words (task id and branch name), "" when there is
    none; ``changed`` the files changed on the branch / in the work tree, or
    recently on the default branch (``recent`` says which).
    """

    budget: int = DEFAULT_BUDGET
    task: str | None = None
    title: str = ""
    branch: str | None = None
    base: str | None = None
    ahead: int = 0
    changed: list[str] = field(default_factory=list)
    recent: bool = False
    named: bool = False  # `title` was given in words (`lore start --title`), not made from the branch


@datarecord
class StartPack(RecallPack):
    """The session-start pack: a recall pack with the task and the areas changed."""

    branch: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "branch": self.branch,
            "task": [{**it.data, "level": it.level} for it in self.items if it.kind == "task"],
            "changed_areas": self.of("area"),
        }


def start_pack(searcher: Searcher, memories: Memories, request: StartRequest) -> StartPack:
    """The session-start pack for `request` (empty when nothing is relevant)."""
    changed = [
        p
        for p in request.changed
        if not p.startswith(".lore/") and p not in AGENT_SETTINGS and file_role(p) not in GENERIC_ROLES
    ]
    items = start_memories(searcher, memories, request, changed)
    task = task_item(request) if request.title or request.branch and request.base else None
    if task is None and not items:
        return StartPack(
            _query(request), request.title, request.budget, "auto", [], "", 0, branch=request.branch
        )
    if task is not None:
        items.append(task)
    if request.title:
        items += likely_files(searcher, request.title)
    items += area_items(changed, request)
    return build(request, items)


def start_memories(
    searcher: Searcher, memories: Memories, request: StartRequest, changed: list[str]
) -> list[Item]:
    """The memories worth reading at session start, best first (see the module doc)."""
    from lore.search.memories import hit_of_record
    from lore.search.recall import _applies, _memory_item

    store = searcher.store
    # Never recalled: raw session notes, session summaries, archives (by folder or faded, seed 001).
    worth = {"exclude_storage": ["session", "session-summary", "archive"], "exclude_tiers": ["archive"]}
    records = store.memories(memories.filter(**worth))
    if not records:
        return []
    access, stale = store.access_stats(), store.stale_reasons()
    attention = searcher.attention_of(records, access, stale)
    text = request.title.lower()
    touched = set(changed)
    base: dict[str, float] = {}
    for record in records:
        scope = 1.0
        if record.applies_to != "global":
            scope = SCOPE_APPLIES if _applies(record.applies_to, touched, text) else SCOPE_ELSEWHERE
        base[record.id] = attention[record.id] * KIND_WEIGHT.get(record.type, 0.7) * scope
    task: dict[str, float] = {}
    if request.title.strip():
        flt = memories.filter(**worth)
        for hit in searcher.memories(request.title, flt, 10, flag_stale=False):
            if hit.score < FLOOR or hit.id not in base:
                continue
            count, last = access.get(hit.id, (0, None))
            task[hit.id] = att.attention(
                hit.score,
                occurred_at=hit.occurred_at,
                last_accessed=last,
                access_count=count,
                confidence=hit.confidence,
                stale=hit.id in stale,
                half_life_days=searcher.half_life,
            )
    by_id = {record.id: record for record in records}
    # Worth it on its own merits or for the task; ranked by both (the task's first among equals).
    wanted = [mid for mid in base if max(base[mid], task.get(mid, 0.0)) >= MIN_SCORE]
    wanted.sort(key=lambda mid: -(base[mid] + task.get(mid, 0.0)))
    items = []
    for mid in wanted[: MAX_MEMORIES * 2]:
        record = by_id[mid]
        score = min(1.0, max(base[mid], task.get(mid, 0.0)))
        hit = hit_of_record(record, store.first_chunk(record.path), score, "start")
        item = _memory_item(hit, score, stale.get(mid))  # no body: L1/L2 only
        item.value = base[mid] + task.get(mid, 0.0)
        items.append(item)
    kept = flag_disputed(store, follow_relations(items, searcher, memories, stale, limit=3))
    for item in kept:  # summaries, never whole bodies, at session start
        item.renders.pop("L3", None)
    return kept[:MAX_MEMORIES]


def task_item(request: StartRequest) -> Item:
    """The current task: branch, task id, commits ahead of the default branch."""
    parts = []
    if request.branch:
        parts.append(f"branch `{request.branch}`")
    if request.task:
        parts.append(f"task `{request.task}`")
    line = "- " + ", ".join(parts) if parts else f"- {request.title}"
    if parts and request.named and request.title:
        line += f": {request.title}"
    if request.base and request.ahead:
        line += f" — {request.ahead} commit{'s' if request.ahead != 1 else ''} ahead of `{request.base}`"
    data = {
        "branch": request.branch,
        "task": request.task,
        "title": request.title,
        "base": request.base,
        "ahead": request.ahead,
    }
    return Item("task", "task", 10.0, {"L1": line}, data)


def likely_files(searcher: Searcher, title: str) -> list[Item]:
    """The files the branch's task most likely touches (no generic roles)."""
    hits = searcher.code(
        title, ChunkFilter(exclude_roles=list(GENERIC_ROLES)), MAX_FILES * 2, files_only=True
    )
    from lore.search.recall import _reasons

    return [
        file_item(h.file_path, 0.5 * h.similarity, _reasons(h, title), h.role, h.tests)
        for h in hits[:MAX_FILES]
        if h.similarity >= 2 * FLOOR and (h.role or "source") not in GENERIC_ROLES
    ]


def area_items(changed: list[str], request: StartRequest) -> list[Item]:
    """Folders of changed files, most changed first: one line each."""
    folders: dict[str, list[str]] = defaultdict(list)
    for path in changed:
        folders[posixpath.dirname(path) or "."].append(posixpath.basename(path))
    ranked = sorted(folders.items(), key=lambda pair: (-len(pair[1]), pair[0]))[:MAX_AREAS]
    when = "in the last week" if request.recent else "on this branch and in the work tree"
    items = []
    for rank, (folder, names) in enumerate(ranked):
        shown = ", ".join(sorted(names)[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
        where = "the top folder" if folder == "." else f"`{folder}/`"
        items.append(
            Item(
                "area",
                folder,
                0.2 - 0.01 * rank,
                {"L1": f"- {where}: {shown}"},
                {"folder": folder, "files": sorted(names), "when": when},
            )
        )
    return items


def build(request: StartRequest, items: list[Item]) -> StartPack:
    from lore.index.tokens import count_tokens

    chosen = pack(items, request.budget, "auto", count_tokens(HEAD) + 2, SECTIONS)
    if not any(it.kind in ("memory", "task") for it in chosen):
        return StartPack(
            _query(request), request.title, request.budget, "auto", [], "", 0, branch=request.branch
        )
    markdown = render(request.title, request.title, chosen, request.budget, sections=SECTIONS, head=HEAD)
    return StartPack(
        _query(request),
        request.title,
        request.budget,
        "auto",
        chosen,
        markdown,
        count_tokens(markdown),
        branch=request.branch,
    )


def _query(request: StartRequest) -> str:
    """The task's key terms, as recall reports its query."""
    from lore.search.text import terms

    return " ".join(terms(request.title))
