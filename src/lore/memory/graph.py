"""The links between memories, both ways, as one agent may see them.

Links are stored as written (:mod:`lore.memory.links`) and resolved here,
when read, against the memories the acting agent can see: a link to another
agent's private memory looks exactly like a link to nothing, and a private
memory's links never show up as someone else's backlinks. Resolving on read
keeps links right when the target is added later, renamed or removed.

A name resolves to the memory whose id, file name, title or 8-character id
prefix it is, in that order of precedence; a path to the file at that path.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from lore.memory.links import INVERSE, SUPERSEDES, keys_of, name_key, stem_of
from lore.records import Record, datarecord
from lore.storage import LinkRecord, MemoryFilter, MemoryRecord

if TYPE_CHECKING:
    from lore.memory.repository import Memories

MAX_DEPTH = 5


@datarecord
class LinkedMemory(Record):
    """One link as seen from the memory shown: where it goes (or comes from) and why.

    ``direction`` is ``out`` (written in the memory shown) or ``in`` (a
    backlink: written in the other memory). ``relation`` reads from the
    memory shown (``supersedes`` out, ``superseded_by`` in). ``id`` is None
    when the target is not a memory the reader can see.
    """

    direction: str
    relation: str
    target: str
    id: str | None
    title: str | None
    type: str | None
    path: str | None
    line: int | None


@datarecord
class GraphNode(Record):
    id: str
    title: str
    type: str
    path: str
    depth: int


@datarecord
class GraphEdge(Record):
    source: str
    target: str
    relation: str


@datarecord
class Graph(Record):
    """The memories within `depth` links of `root`, and the links between them."""

    root: str
    depth: int
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    broken: list[LinkedMemory] = field(default_factory=list)


class Resolver:
    """Link targets → memories, among a given set of memories."""

    def __init__(self, records: Iterable[MemoryRecord]):
        self.by_path: dict[str, MemoryRecord] = {}
        levels: list[dict[str, list[MemoryRecord]]] = [defaultdict(list) for _ in range(4)]
        for record in records:
            self.by_path[record.path] = record
            levels[0][name_key(record.id)].append(record)
            levels[1][name_key(stem_of(record.path))].append(record)
            levels[2][name_key(record.title)].append(record)
            if len(record.id) > 8:
                levels[3][name_key(record.id[:8])].append(record)
        self.levels = levels

    def resolve(self, kind: str, key: str) -> list[MemoryRecord]:
        """The memories a target names (several when a name is ambiguous)."""
        if kind == "path":
            found = self.by_path.get(key)
            return [found] if found else []
        for level in self.levels:
            if key in level:
                return list(level[key])
        return []

    def get(self, memory_id: str) -> MemoryRecord | None:
        found = self.levels[0].get(name_key(memory_id))
        return found[0] if found else None


class LinkGraph:
    """Links, backlinks and walks over the memories `memories` may see."""

    def __init__(self, memories: Memories):
        self.memories = memories
        self.store = memories.store
        self._resolver: tuple[int, Resolver] | None = None

    def resolver(self, *, everyone: bool = False) -> Resolver:
        if everyone:
            return Resolver(self.store.memories(MemoryFilter(include_private=True)))
        version = self.store.vectors_version()
        if self._resolver is None or self._resolver[0] != version:
            self._resolver = (version, Resolver(self.store.memories(self.memories.filter())))
        return self._resolver[1]

    def links_of(self, memory: MemoryRecord) -> list[LinkedMemory]:
        """The links written in `memory`, resolved (unresolved ones have no id)."""
        resolver = self.resolver()
        out = []
        for link in self.store.links(self.memories.filter(paths=[memory.path])):
            if _to_itself(resolver, link):
                continue
            targets = [t for t in resolver.resolve(link.kind, link.target_key) if t.id != memory.id]
            out += [_linked("out", link.relation, link, t) for t in targets] or [
                _linked("out", link.relation, link, None)
            ]
        return out

    def backlinks_of(self, memory: MemoryRecord) -> list[LinkedMemory]:
        """The visible memories that link to `memory`, with the relation read from its side."""
        resolver = self.resolver()
        out = []
        for link in self.store.links(self.memories.filter(), target_keys=keys_of(memory)):
            if link.source_id == memory.id:
                continue
            if not any(t.id == memory.id for t in resolver.resolve(link.kind, link.target_key)):
                continue
            source = resolver.get(link.source_id)
            out.append(_linked("in", INVERSE.get(link.relation, f"{link.relation}_of"), link, source))
        return out

    def record(self, key: str) -> MemoryRecord:
        """The visible memory `key` names (id, prefix, file name or path)."""
        rel = self.memories.resolve(key)
        found = self.store.memories(self.memories.filter(paths=[rel]), limit=1)
        if not found:
            from lore.errors import ValidationError

            raise ValidationError("cannot be read; fix it first (see `lore doctor`)", path=rel)
        return found[0]

    def walk(self, key: str, depth: int = 1) -> Graph:
        """The memories within `depth` links of `key` (either direction), breadth first."""
        root = self.record(key)
        depth = max(0, min(int(depth), MAX_DEPTH))
        resolver = self.resolver()
        adjacent: dict[str, list[tuple[str, str, str]]] = defaultdict(list)  # id -> (other, src, rel)
        broken: list[LinkedMemory] = []
        for link in self.store.links(self.memories.filter()):
            targets = [t for t in resolver.resolve(link.kind, link.target_key) if t.id != link.source_id]
            if not targets and link.source_id == root.id and not _to_itself(resolver, link):
                broken.append(_linked("out", link.relation, link, None))
            for target in targets:
                adjacent[link.source_id].append((target.id, link.source_id, link.relation))
                adjacent[target.id].append((link.source_id, link.source_id, link.relation))
        graph = Graph(root.id, depth, broken=broken)
        seen = {root.id: 0}
        queue = deque([root.id])
        edges: set[tuple[str, str, str]] = set()
        while queue:
            current = queue.popleft()
            if seen[current] >= depth:
                continue
            for other, source_id, relation in adjacent.get(current, []):
                target_id = other if source_id == current else current
                edges.add((source_id, target_id, relation))
                if other not in seen:
                    seen[other] = seen[current] + 1
                    queue.append(other)
        for memory_id, level in sorted(seen.items(), key=lambda pair: pair[1]):
            record = resolver.get(memory_id)
            if record is not None:
                graph.nodes.append(GraphNode(record.id, record.title, record.type, record.path, level))
        graph.edges = [GraphEdge(*edge) for edge in sorted(edges) if edge[0] in seen and edge[1] in seen]
        return graph

    def superseded_by(self, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """For each of the memories `memory_ids` that a visible memory supersedes,
        the newest memory of the chain that supersedes it (A → B → C: C for A and B)."""
        links = self.store.links(self.memories.filter(), relations=[SUPERSEDES])
        if not links:  # the common case: no resolver to build (it reads every memory)
            return {}
        resolver = self.resolver()
        newer: dict[str, MemoryRecord] = {}
        for link in links:
            source = resolver.get(link.source_id)
            if source is None:
                continue
            for old in resolver.resolve(link.kind, link.target_key):
                if old.id != source.id:
                    newer.setdefault(old.id, source)
        out = {}
        for memory_id in memory_ids:
            current, hops = newer.get(memory_id), 0
            while current is not None and current.id in newer and hops < MAX_DEPTH:
                current, hops = newer[current.id], hops + 1
            if current is not None and current.id != memory_id:
                out[memory_id] = current
        return out

    def strong_neighbours(self, memory: MemoryRecord, relations: Sequence[str]) -> list[LinkedMemory]:
        """The memories `memory` names with one of `relations` (one hop, out)."""
        return [link for link in self.links_of(memory) if link.id and link.relation in relations]

    def broken(self) -> list[LinkRecord]:
        """Every link in a visible memory that names no visible memory (for doctor:
        a link to another agent's private memory is as broken as one to nothing)."""
        resolver = self.resolver()
        return [
            link
            for link in self.store.links(self.memories.filter())
            if not [t for t in resolver.resolve(link.kind, link.target_key) if t.id != link.source_id]
            and not _to_itself(resolver, link)
        ]

    def linking_to(self, memory: MemoryRecord) -> list[LinkRecord]:
        """Every link in any memory file (private ones too: maintenance) that
        names `memory`, for rewriting them when it is renamed."""
        resolver = self.resolver(everyone=True)
        return [
            link
            for link in self.store.links(MemoryFilter(include_private=True), target_keys=keys_of(memory))
            if link.source_id != memory.id
            and any(t.id == memory.id for t in resolver.resolve(link.kind, link.target_key))
        ]


def _to_itself(resolver: Resolver, link: LinkRecord) -> bool:
    """Whether `link` names only the memory it is written in (``[[its own
    title]]``): no link to anything else, and not a broken one either."""
    found = resolver.resolve(link.kind, link.target_key)
    return bool(found) and all(t.id == link.source_id for t in found)


def _linked(direction: str, relation: str, link: LinkRecord, other: MemoryRecord | None) -> LinkedMemory:
    return LinkedMemory(
        direction=direction,
        relation=relation,
        target=link.target if direction == "out" else link.source_path,
        id=other.id if other else None,
        title=other.title if other else None,
        type=other.type if other else None,
        path=other.path if other else None,
        line=link.line,
    )
