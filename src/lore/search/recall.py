"""Recall on task pickup: one ranked pack of memories, files, code and past work.

The query is the task's title and description reduced to key terms. From it:

- memories: hybrid search, re-ranked by attention (relevance × recency ×
  access × confidence, stale ones halved), boosted when their scope names a
  file or area the task touches; HOT memories that apply are always offered,
  and so are the memories anchored to a file the task names (`--files`);
- likely files: code search ranked by file, fused (RRF) with the files of
  similar past commits — past work is evidence for where a change goes;
- code: the best chunks of those files;
- related past work: similar commits, and tasks of the memories found.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import TYPE_CHECKING, Any

from lore.filenames import plain_path
from lore.memory.values import clip, fold_line
from lore.records import Record, datarecord
from lore.search import attention as att
from lore.search import hybrid
from lore.search.pack import Item, check_heading, heading_text, left_out, pack, render
from lore.search.text import terms
from lore.storage import ChunkFilter, MemoryFilter, Store

if TYPE_CHECKING:
    from lore.memory.repository import Memories
    from lore.search.code import CodeHit, CommitHit
    from lore.search.engine import Searcher
    from lore.search.memories import MemoryHit
    from lore.storage import MemoryRecord

MAX_QUERY_TERMS = 64
FLOOR = 0.05  # items of less relevance are left out rather than padding the pack
RELATIVE_FLOOR = 0.2  # memories under this share of the best memory's relevance too
# Likely files whose ranking value (FileMatch.order: role-weighted evidence,
# kept in rank order) is below this are left out, and so are code chunks of
# less relevance: on six time-split sets no answer file ranked in a top 10
# scores under it (R@10 the same), and a task foreign to the repository
# ("configure kubernetes helm charts" asked of click) scores every file
# under it (0.06-0.096).
FILE_FLOOR = 0.10
# Items found by meaning alone (no word of the task in them) need this much:
# on click, the best such item for 30 nonsense tasks ("tuba kumquat nebula")
# scored 0.06-0.23, mostly under 0.19; the past commits found that way for
# 40 real tasks' top 10s scored 0.22-0.48 (median 0.27).
MEANING_FLOOR = hybrid.MEANING_FLOOR
SCOPE_BOOST = 1.5
# The relevance of a memory about a file the task names that its words did not
# find: a fair match, below what a search finds by the task's own words.
ABOUT_FILE = 0.5
SUBJECT_CHARS = 200  # a commit subject shown in a pack or a listing is cut here
HEADING_CHARS = 160  # the task and the query, as a pack's heading shows them


@datarecord
class RecallRequest:
    title: str
    description: str = ""
    task: str | None = None
    files: list[str] = field(default_factory=list)
    budget: int = 2000
    level: str | None = "auto"
    limit_per_type: int = 5
    include_memories: bool = True
    include_code: bool = True
    include_related_work: bool = True
    agent: str | None = None
    period: ChunkFilter | None = None  # since/until, when asked
    include_sessions: bool = False  # summaries of recorded sessions too

    @property
    def text(self) -> str:
        """What is searched: the task's own words (the model reads sentences best)."""
        return f"{self.title}\n{self.description}".strip()

    def query(self) -> str:
        """The key terms, echoed back as `query_used`."""
        words = terms(self.text)
        return " ".join(words[:MAX_QUERY_TERMS])


@datarecord
class RecallPack(Record):
    """003's ContextResult, plus the packing outcome."""

    query_used: str
    title: str
    budget: int
    level: str | None
    items: list[Item]
    markdown: str
    tokens_used: int
    left_out: int = 0  # items found that the budget left out (the pack's last line says so)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [{**it.data, "level": it.level} for it in self.items if it.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_used": self.query_used,
            "memories": self.of("memory"),
            "files": self.of("file"),
            "code_snippets": self.of("code"),
            "related_work_items": self.of("work"),
            "budget": self.budget,
            "level": self.level,
            "tokens_used": self.tokens_used,
            "left_out": self.left_out,
            "markdown": self.markdown,
        }


def recall(
    searcher: Searcher,
    memories: Memories,
    request: RecallRequest,
    *,
    include_memories: bool = True,
    include_code: bool = True,
    include_related_work: bool = True,
) -> RecallPack:
    """The recall pack for `request`: memories, likely files, code and past work, packed.

    Items below :data:`FLOOR` relevance are left out rather than padding the pack.
    """
    # Files first: their keyword passes run while the task's embedding (and
    # then the vector passes that can be done ahead) is made on the worker
    # thread; a memory search needs its vectors before its keyword pass.
    searched = {
        "code": include_code,
        "commit": include_code or include_related_work,
        "memory": include_memories,
    }
    searcher.prefetch(request.text, [kind for kind, wanted in searched.items() if wanted])
    files = file_items(searcher, request) if include_code else []
    commits = []
    if include_code or include_related_work:
        commits = [
            c
            for c in searcher.history(request.text, limit=20, flt=request.period)
            if c.relevance >= _floor(c.source) and not _memories_only(c)
        ]
    items: list[Item] = []
    tasks: dict[str, Item] = {}
    if include_memories:
        hits, found = memory_part(searcher, memories, request)
        items += found
        done = [h for h in hits[: request.limit_per_type] if h.task_id] if include_related_work else []
        files_of = _files_of(memories.store, [h.id for h in done])
        for hit in done:
            if hit.task_id is not None and hit.task_id not in tasks:
                tasks[hit.task_id] = task_item(
                    hit.task_id, hit.title, hit.score, hit.occurred_at, files_of.get(hit.id, [])
                )
    items += files
    if include_related_work:
        work = [work_item(c) for c in commits] + list(tasks.values())
        items += sorted(work, key=lambda it: -it.value)[: request.limit_per_type]
    return build(request, items)


def memory_part(
    searcher: Searcher, memories: Memories, request: RecallRequest
) -> tuple[list[MemoryHit], list[Item]]:
    """The memories found by the task's words and meaning, and the items recall
    offers: those, the HOT memories that apply and the memories about a file it
    names, with the memories their strong links lead to."""
    from lore.search.filters import clamp_limit
    from lore.storage import ChunkFilter

    # Unflagged hits: attention applies the stale penalty itself.
    period = request.period or ChunkFilter()
    hits = searcher.memories(
        request.text,
        recallable(memories, request, since=period.since, until=period.until),
        clamp_limit(max(20, request.limit_per_type * 4)),
        flag_stale=False,
    )
    hits = [h for h in hits if h.score >= _floor(h.source)]
    if hits:  # what matches far less than the best match pads the pack (0.07 beside 0.86)
        best = max(h.score for h in hits)
        hits = [h for h in hits if h.score >= RELATIVE_FLOOR * best]
    stale = searcher.store.stale_reasons()
    hot = hot_memories(searcher, memories, request, exclude={h.id for h in hits})
    about = anchored_to(searcher.store, request.files)
    hot += file_memories(searcher, memories, request, about - {h.id for h in [*hits, *hot]})
    shown = [h.id for h in [*hits, *hot]]
    access = searcher.store.access_stats(shown)
    tiers = {mid: state.tier for mid, state in searcher.store.tier_states(shown).items()}
    found = memory_items(hits, access, stale, request, searcher.half_life, hot, tiers, about)
    for item in found:  # the whole body only for the memories kept (read, parsed, redacted)
        with_body(item, memories.shown_body(item.data["path"]))
    linked = follow_relations(found, searcher, memories, stale, request.limit_per_type, period)
    return hits, flag_disputed(searcher.store, linked)


def file_items(searcher: Searcher, request: RecallRequest) -> list[Item]:
    """The files the task names, the likely files (over the floors) and their best code."""
    from lore.storage import ChunkFilter

    files = searcher.code(
        request.text,
        ChunkFilter(),
        max(10, request.limit_per_type * 2),
        files_only=True,
        period=request.period,
    )
    indexed = searcher.store.code_files(list(request.files), ChunkFilter()) if request.files else {}
    items = [
        file_item(
            path,
            1.0,
            ["named by the task" if path in indexed else "named by the task, not in the index"],
            indexed.get(path),
            searcher.tests_of(path),
        )
        for path in request.files
    ]
    # The floors hold against the ranking's value (what a task foreign to
    # the project scores low on): a file found by meaning alone needs to
    # clear the meaning floor too.
    files = [h for h in files if h.order >= FILE_FLOOR and (h.worded or h.order >= MEANING_FLOOR)]
    items += [
        file_item(h.file_path, h.similarity, _reasons(h, request.text), h.role, h.tests, value=h.order)
        for h in files
        if h.file_path not in request.files
    ]
    return items + [code_item(h) for h in code_chunks(files, request.limit_per_type)]


def _floor(source: str, floor: float = FLOOR) -> float:
    """The relevance an item found by `source` (vector: by meaning alone) needs to be packed."""
    return max(floor, MEANING_FLOOR) if source == "vector" else floor


def recallable(memories: Memories, request: RecallRequest, **conditions: Any) -> MemoryFilter:
    """What recall may offer: never archived memories; session summaries only when asked."""
    skipped = ["archive"] if request.include_sessions else ["archive", "session-summary"]
    return memories.filter(exclude_storage=skipped, exclude_tiers=["archive"], **conditions)


def hot_memories(
    searcher: Searcher, memories: Memories, request: RecallRequest, exclude: set[str]
) -> list[MemoryHit]:
    """HOT memories (001: pre-loaded; the tier kept by the lifecycle) whose scope the task touches."""
    from lore.search.memories import hit_of_record

    flt = recallable(memories, request, scoped_only=True)
    flt.tiers = ["hot"]
    records = searcher.store.memories(flt)
    text = f"{request.title} {request.description}".lower()
    touched = set(request.files)
    hot = []
    for record in records:
        if record.id in exclude:
            continue
        if _applies(record.applies_to, touched, text):
            hot.append(hit_of_record(record, searcher.store.first_chunk(record.path), 1.0, "hot"))
    return hot


def anchored_to(store: Store, files: list[str]) -> set[str]:
    """The memories anchored to any of `files` (their `files`, a `file:` scope,
    a Key Files line)."""
    return {a.memory_id for path in files for a in store.anchors(path=plain_path(path))}


def file_memories(
    searcher: Searcher, memories: Memories, request: RecallRequest, ids: set[str]
) -> list[MemoryHit]:
    """The memories `ids` (anchored to a file the task names, not found by its
    words), newest first, at most ``limit_per_type``; relevance
    :data:`ABOUT_FILE`, before the scope boost every such memory gets."""
    from lore.search.memories import hit_of_record

    if not ids:
        return []
    flt = recallable(memories, request)
    flt.ids = sorted(ids)
    records = sorted(searcher.store.memories(flt), key=lambda r: r.occurred_at, reverse=True)
    first = searcher.store.first_chunk
    return [hit_of_record(r, first(r.path), ABOUT_FILE, "file") for r in records[: request.limit_per_type]]


def memory_items(
    hits: list[MemoryHit],
    access: dict[str, tuple[int, str]],
    stale: dict[str, list[str]],
    request: RecallRequest,
    half_life: float,
    hot: list[MemoryHit],
    tiers: dict[str, str] | None = None,
    about: set[str] | frozenset[str] = frozenset(),
) -> list[Item]:
    """Items for memories found by search (plus HOT ones that apply, and those
    `about` a file the task names: boosted like a scope the task touches)."""
    touched = {plain_path(f) for f in request.files}
    text = f"{request.title} {request.description}".lower()
    items = []
    for hit in [*hits, *hot]:
        count, last = access.get(hit.id, (0, None))
        # About a file the task names: at least as relevant as one the words did not find.
        relevance = max(hit.score, ABOUT_FILE) if hit.id in about else hit.score
        hit.score = relevance  # (what the item says, and what reads and links are judged by)
        score = att.attention(
            relevance,
            occurred_at=hit.occurred_at,
            last_accessed=last,
            access_count=count,
            confidence=getattr(hit, "confidence", 1.0),
            stale=hit.id in stale,
            half_life_days=half_life,
        )
        if hit.id in about or _applies(hit.applies_to, touched, text):
            score = min(1.0, score * SCOPE_BOOST)
        items.append(_memory_item(hit, score, stale.get(hit.id), (tiers or {}).get(hit.id, "cold")))
    unique: dict[str, Item] = {}
    for item in sorted(items, key=lambda it: -it.value):
        unique.setdefault(item.key, item)
    return list(unique.values())[: request.limit_per_type + len(hot)]


def follow_relations(
    items: list[Item],
    searcher: Searcher,
    memories: Memories,
    stale: dict[str, list[str]],
    limit: int,
    period: ChunkFilter | None = None,
) -> list[Item]:
    """Memory items after following strong relations one hop.

    A memory superseded by another (visible) one is replaced by the newest
    memory of its chain, which is marked "supersedes …" and keeps the better
    score; the best `limit` memories bring in the memories they depend on,
    implement or contradict, at a lower score, marked with the relation.
    """
    from lore.memory.links import STRONG, SUPERSEDES

    if not items:
        return items
    from lore.memory.model import parse_time

    graph = memories.graph
    since, until = (period.since, period.until) if period is not None else (None, None)

    def within(record: MemoryRecord) -> bool:  # the period asked for (--since/--until)
        when = parse_time(record.occurred_at)
        return (since is None or when >= since) and (until is None or when <= until)

    # A memory superseded later than the period asked for is what was known then: it stays.
    newer = {key: r for key, r in graph.superseded_by([it.key for it in items]).items() if within(r)}
    out: dict[str, Item] = {}
    for item in sorted(items, key=lambda it: -it.value):
        replacement = newer.get(item.key)
        if replacement is None:
            out.setdefault(item.key, item)
            continue
        target = out.get(replacement.id) or next((it for it in items if it.key == replacement.id), None)
        if target is None:
            target = related_item(searcher, memories, replacement, item.value, stale)
        target.value = max(target.value, item.value)
        gone = target.data.setdefault("supersedes", [])
        gone.append({"id": item.key, "title": item.data.get("title")})
        annotate(target, f' (supersedes "{item.data.get("title")}")')
        out[replacement.id] = target
    relations = [r for r in STRONG if r != SUPERSEDES]
    linking = {link.source_id for link in graph.store.links(memories.filter(), relations=relations)}
    best = [
        it
        for it in sorted(out.values(), key=lambda it: -it.value)[:limit]
        if it.key in linking and float(it.data.get("relevance", 1.0) or 0.0) >= FOLLOW_FLOOR
    ]
    extra: dict[str, Item] = {}
    if best:  # the resolver reads every visible memory: only when there are links to follow
        resolver = graph.resolver()
        for item in best:
            record = resolver.get(item.key)
            for link in graph.strong_neighbours(record, relations) if record else []:
                neighbour = resolver.get(link.id) if link.id else None
                if (
                    neighbour is None
                    or neighbour.id in extra
                    or neighbour.id in newer
                    or not within(neighbour)
                ):
                    continue
                title = item.data.get("title")
                if link.relation == CONTRADICTS:  # two memories that disagree: both say so
                    annotate(item, f' ⚠ contradicts "{neighbour.title}"')
                    if neighbour.id in out:
                        annotate(out[neighbour.id], f' ⚠ contradicted by "{title}"')
                        continue
                if neighbour.id in out:
                    continue
                added = related_item(searcher, memories, neighbour, 0.6 * item.value, stale)
                added.data["via"] = {"relation": link.relation, "id": item.key}
                annotate(added, f' ({_REACHED.get(link.relation, link.relation)} "{title}")')
                extra[neighbour.id] = added
    return sorted([*out.values(), *extra.values()], key=lambda it: -it.value)


CONTRADICTS = "contradicts"
# How a memory a link reached stands to the memory that names it.
_REACHED = {"depends_on": "a dependency of", "implements": "implemented by", CONTRADICTS: "⚠ contradicted by"}
# Links are followed from the memories that match the task this well (a filler's
# links brought its partner into unrelated packs).
FOLLOW_FLOOR = 0.3


def related_item(
    searcher: Searcher, memories: Memories, record: MemoryRecord, score: float, stale: dict[str, list[str]]
) -> Item:
    """A memory item for a memory reached by a link rather than by search."""
    from lore.search.memories import hit_of_record

    hit = hit_of_record(record, searcher.store.first_chunk(record.path), score, "relation")
    return with_body(_memory_item(hit, score, stale.get(record.id)), memories.shown_body(record.path))


def flag_disputed(store: Store, items: list[Item]) -> list[Item]:
    """`items` with the memories an open or held contradiction proposal names
    flagged: both sides of "TIMEOUT=5" and "TIMEOUT=30" were offered as facts."""
    disputed = {
        mid: proposal
        for proposal in store.proposals(["open", "held"])
        if proposal.kind == "contradiction"
        for mid in proposal.memory_ids
    }
    for item in items:
        proposal = disputed.get(item.key) if item.kind == "memory" else None
        if proposal is not None:
            review = "lore review" + (" --all" if proposal.status == "held" else "")
            annotate(item, f" ⚠ disputed (`{review}`: {proposal.id[:8]})")
            item.data["disputed_by_proposal"] = proposal.id
    return items


def annotate(item: Item, note: str) -> None:
    """Add `note` after a memory item's title, at every level."""
    head = f"**{item.data.get('title')}**"
    item.renders = {level: text.replace(head, head + note, 1) for level, text in item.renders.items()}
    item._costs.clear()


_REASON_NAMES = 3  # symbols named in a file's "code match (...)"


def _reasons(hit: CodeHit, query: str = "") -> list[str]:
    """Why a file is offered: its code matched, similar past commits touched it."""
    reasons = []
    if hit.source != "history":
        names = (hit.symbol or "").split(", ")  # a chunk of several small units names them all
        wanted = [t for t in terms(query) if len(t) > 2]
        # The names the task mentions first: zod's util.ts chunk of 16 named toZod 10th.
        names.sort(key=lambda name: not any(t in name.lower() for t in wanted))
        shown = ", ".join(names[:_REASON_NAMES]) + (", …" if len(names) > _REASON_NAMES else "")
        where = shown if hit.symbol else f"lines {hit.start_line}-{hit.end_line}"  # a unit with no name
        reasons.append(f"code match ({where})")
    if hit.commits:
        reasons.append(f"{hit.commits} similar past commit{'s' if hit.commits > 1 else ''}")
    return reasons or ["code match"]


def file_item(
    path: str,
    score: float,
    reasons: list[str],
    role: str | None = None,
    tests: list[str] | None = None,
    *,
    value: float | None = None,
) -> Item:
    """A likely file: shown with its relevance (`score`), packed by `value`
    (the likely files' ranking, :attr:`~lore.search.files.FileMatch.order`)."""
    label = f" [{role}]" if role and role != "source" else ""
    line = f"- `{path}`{label} — {', '.join(reasons)}"
    if tests:
        line += f"; tests: {', '.join(f'`{t}`' for t in tests[:2])}"
    return Item(
        "file",
        path,
        0.9 * (score if value is None else value),
        {"L1": line},
        {
            "path": path,
            "score": round(score, 4),
            "role": role or "source",
            "reasons": reasons,
            "tests": list(tests or []),
        },
    )


_SHORT_LINES = 12  # of a code block at level L2


def code_chunks(files: list[CodeHit], limit: int) -> list[CodeHit]:
    """The `limit` most relevant chunks of the top `limit` files (a file
    holding the answer shows its few best chunks, not one and then other
    files' weaker ones), none under :data:`FILE_FLOOR` (:data:`MEANING_FLOOR`
    for a chunk found by meaning alone)."""
    chunks = [c for h in files[:limit] for c in (h.chunks or [h]) if c.symbol or c.snippet]
    chunks.sort(key=lambda c: -c.similarity)
    return [c for c in chunks if c.similarity >= _floor(c.source, FILE_FLOOR)][:limit]


def code_item(hit: CodeHit) -> Item:
    where = f"{hit.file_path}:{hit.start_line}-{hit.end_line}"
    l1 = f"- `{where}` {hit.symbol or ''} ({hit.language}, {hit.similarity:.2f})".replace("  ", " ")
    lang = hit.language if hit.language not in (None, "text", "lines") else ""
    body = hit.chunk_text.rstrip()
    lines = body.splitlines()
    short = "\n".join(lines[:_SHORT_LINES])
    # A cut block says so: its citation names more lines than it shows.
    cut = f" — first {_SHORT_LINES} of {len(lines)} lines" if len(lines) > _SHORT_LINES else ""
    fence = _fence(body)
    return Item(
        "code",
        where,
        0.8 * hit.similarity,
        {
            "L1": l1,
            "L2": f"{l1}{cut}\n{fence}{lang}\n{short}\n{fence}",
            "L3": f"{l1}\n{fence}{lang}\n{body}\n{fence}",
        },
        {**hit.to_dict(full=True), "citation": where},
    )


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text` (a Markdown
    chunk's own ```go block would otherwise close the block it is shown in)."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    return "`" * (longest + 1)


def commit_files(commit: CommitHit, lead: str, most: int = 5) -> str:
    """`lead` and the commit's files as named today (at most `most`); those all
    gone, the files it changed that no longer exist; nothing when it changed none."""
    files, note, gone = commit.files, "", ""
    if not files and commit.gone_files:
        files, note = commit.gone_files, "since removed: "
    elif commit.gone_files:  # some of its files are gone: said, not silently left out
        gone = f" (+{len(commit.gone_files)} since removed)"
    if not files:
        return ""
    return lead + note + ", ".join(files[:most]) + (" …" if len(files) > most else "") + gone


def _memories_only(commit: CommitHit) -> bool:
    """A commit that changed memory files and nothing else: found by the words
    of the memories it holds, it would repeat them in the pack as past work."""
    paths = [*commit.files, *commit.gone_files]
    return bool(paths) and all(path.startswith(".lore/") for path in paths)


def work_item(commit: CommitHit) -> Item:
    subject = clip(commit.subject, SUBJECT_CHARS)  # git makes a message without a blank line one subject
    l1 = f"- `{commit.sha[:10]}` {subject} ({commit.date[:10]}){commit_files(commit, ' — ')}"
    return Item(
        "work",
        commit.sha,
        0.7 * commit.relevance,
        {"L1": l1},
        {
            "id": commit.sha,
            "title": subject,
            "type": "commit",
            "status": "done",
            "relevance": round(commit.relevance, 4),
            "date": commit.date,
            "files": commit.files,
        },
    )


def task_item(task: str, title: str, score: float, date: str = "", files: list[str] | None = None) -> Item:
    return Item(
        "work",
        f"task:{task}",
        0.7 * score,
        {"L1": f"- task `{task}`: {title}"},
        {
            "id": task,
            "title": title,
            "type": "task",
            "status": "done",
            "relevance": round(score, 4),
            "date": date,  # the task memory's, as a commit's is its own (one shape for both)
            "files": list(files or []),
        },
    )


def _files_of(store: Store, memory_ids: list[str]) -> dict[str, list[str]]:
    """{memory id: the files it names} of these (already visible) memories."""
    if not memory_ids:
        return {}
    found = store.memories(MemoryFilter(ids=memory_ids, include_private=True), limit=len(memory_ids))
    return {record.id: list(record.files) for record in found}


def _costs_at_most_the_least(chosen: list[Item], roomy: list[Item]) -> bool:
    """Whether packing `roomy` instead of `chosen` (to make room for the line
    saying what was left out) gives up at most the least valuable of the
    items chosen, never another (the top memory for two lesser ones)."""
    kept, before = {it.key for it in roomy}, {it.key for it in chosen}
    if not kept <= before or len(kept) < len(before) - 1 or (before and not kept):
        return False  # (never the pack's only item: the line would be all it says)
    return not chosen or len(kept) == len(before) or min(chosen, key=lambda it: it.value).key not in kept


def build(request: RecallRequest, items: list[Item]) -> RecallPack:
    from lore.index.tokens import count_tokens

    query = request.query()
    # The heading names the task and the terms searched; a whole ticket pasted
    # as the title would otherwise fill the budget before any item.
    title = heading_text(fold_line(request.title), HEADING_CHARS, request.budget)
    shown = heading_text(query, HEADING_CHARS, request.budget)
    header = render(title, shown, [], request.budget, used=request.budget)
    check_heading(count_tokens(header), request.budget)
    start = count_tokens(header) + 2
    chosen = pack(items, request.budget, request.level, start)
    left = len(items) - len(chosen) if request.level is not None else 0
    said = 0  # the items the pack's last line says were left out
    if left:  # the pack says what the budget left out: room is made for that line
        room = count_tokens(left_out(left + 1)) + 1
        fits = start + room <= request.budget
        roomy = pack(items, request.budget - room, request.level, start) if fits else []
        if fits and _costs_at_most_the_least(chosen, roomy):
            chosen = roomy
            said = left = len(items) - len(roomy)
        else:  # the line would cost more: the first choice stands (the count is in the JSON)
            chosen = pack(items, request.budget, request.level, start)
    # The header states the tokens used, which changes the count: the body is
    # counted once, the one-line header until its number is stable.
    head = render(title, shown, [], request.budget).rstrip("\n")
    rest = count_tokens(render(title, shown, chosen, request.budget, left=said)[len(head) :])
    used = count_tokens(head) + rest
    for _ in range(3):
        total = count_tokens(render(title, shown, [], request.budget, used=used).rstrip("\n")) + rest
        if total == used:
            break
        used = total
    markdown = render(title, shown, chosen, request.budget, used=used, left=said)
    # The count is exact when no piece can straddle the seam: the heading ends
    # in a word ("tokens") and the rest starts a line (no word runs on over a
    # newline). Else count the whole pack again, and say that figure.
    seam = len(render(title, shown, [], request.budget, used=used).rstrip("\n"))
    clean = markdown[seam - 1 : seam].isalpha() and markdown[seam : seam + 1] == "\n"
    exact = used if clean else count_tokens(markdown)
    if exact != used:
        markdown = render(title, shown, chosen, request.budget, used=exact, left=said)
    return RecallPack(query, request.title, request.budget, request.level, chosen, markdown, exact, left)


def _memory_item(hit: MemoryHit, score: float, stale: list[str] | None, tier: str = "cold") -> Item:
    flag = " ⚠ stale" if stale else ""
    tags = ", ".join(hit.tags[:5])
    l1 = f"- [{hit.type}] **{hit.title}**{flag} — `lore show {hit.id[:8]}` · {score:.2f}" + (
        f" · {tags}" if tags else ""
    )
    summary = hit.summary or hit.snippet
    l2 = f"{l1}\n  {summary}" + (f"\n  stale: {'; '.join(stale)}" if stale else "")
    renders = {"L1": l1, "L2": l2}
    data = {
        "id": hit.id,
        "title": hit.title,
        "memory_type": hit.type,
        "path": hit.path,
        "citation": f"{hit.path}:{hit.start_line}",
        "tags": hit.tags,
        "score": round(score, 4),
        "relevance": hit.score,
        "applies_to": hit.applies_to,
        "source_work_item_id": hit.task_id,
        "created_at": hit.occurred_at,
        "created_by_agent": hit.agent,
        "summary": summary,
        "stale": stale or None,
        "tier": tier,
    }
    return Item("memory", hit.id, score, renders, data)


def with_body(item: Item, body: str) -> Item:
    """`item` (a memory's) with an L3 rendering: its line, then its whole body
    quoted, so the memory's own headings stay inside its item."""
    if body.strip():
        lines = body.strip().splitlines()
        item.renders["L3"] = item.renders["L1"] + "\n" + "\n".join(("  > " + line).rstrip() for line in lines)
    return item


def _applies(scope: str, touched: set[str], text: str) -> bool:
    if scope.startswith("file:"):
        path = plain_path(scope[5:])
        return any(t == path or t.startswith(path.rstrip("/") + "/") for t in touched) or path.lower() in text
    if scope.startswith("area:"):
        area = scope[5:].lower()
        return area in text or any(area in t.lower() for t in touched)
    return False
