"""A memory and its neighbourhood, packed into a budget (MCP's build_context).

The memory asked for comes first and whole when it fits; the memories
linked to it (both directions, up to `depth` hops, as the acting agent may
see them) follow as summaries, nearest first, each marked with how it is
linked ("superseded by …", "depends on …").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.memory.links import INVERSE
from lore.search.pack import Item, check_heading, heading_text, pack, render
from lore.search.recall import HEADING_CHARS, RecallPack, annotate, related_item

if TYPE_CHECKING:
    from lore.memory.graph import GraphEdge, GraphNode
    from lore.memory.repository import Memories
    from lore.search.engine import Searcher

SECTIONS = {"memory": "Memories"}


def neighbourhood(searcher: Searcher, memories: Memories, key: str, *, depth: int, budget: int) -> RecallPack:
    """The memory `key` and the memories within `depth` links of it, in `budget` tokens."""
    from lore.index.tokens import count_tokens

    graph = memories.graph.walk(key, depth)
    resolver = memories.graph.resolver()
    stale = searcher.store.stale_reasons([node.id for node in graph.nodes])
    titles = {node.id: node.title for node in graph.nodes}
    items: list[Item] = []
    for node in graph.nodes:
        record = resolver.get(node.id)
        if record is None:
            continue
        value = 10.0 if node.depth == 0 else 1.0 / node.depth
        item = related_item(searcher, memories, record, 1.0 if node.depth == 0 else value, stale)
        item.value = value
        item.data["depth"] = node.depth
        if node.depth == 0:
            item.renders["L1"] = item.renders.get("L3", item.renders["L1"])  # the memory itself, whole
        else:
            item.renders.pop("L3", None)
            links = _how_linked(node.id, graph.edges, titles, graph.nodes)
            item.data["links"] = links
            if links:
                annotate(
                    item, " (" + "; ".join(f'{link["relation"]} "{link["title"]}"' for link in links) + ")"
                )
        items.append(item)
    root_title = titles.get(graph.root, key)
    head = f"## Lore context: {heading_text(root_title, HEADING_CHARS, budget)}"
    check_heading(count_tokens(head) + 2, budget)
    chosen = pack(items, budget, "auto", count_tokens(head) + 2, SECTIONS)
    if items and not any(it is items[0] for it in chosen):  # too big whole: its summary instead
        items[0].renders["L1"] = (
            items[0].renders["L2"] if "L2" in items[0].renders else items[0].renders["L1"]
        )
        items[0]._costs.clear()
        chosen = pack(items, budget, "auto", count_tokens(head) + 2, SECTIONS)
    markdown = render(root_title, graph.root, chosen, budget, sections=SECTIONS, head=head)
    return RecallPack(graph.root, root_title, budget, "auto", chosen, markdown, count_tokens(markdown))


def _how_linked(
    node_id: str, edges: list[GraphEdge], titles: dict[str, str], nodes: list[GraphNode]
) -> list[dict[str, str]]:
    """How `node_id` is linked to the nodes nearer the root, read from its side."""
    depth = {node.id: node.depth for node in nodes}
    out = []
    for edge in edges:
        if edge.target == node_id and depth.get(edge.source, 99) < depth[node_id]:
            relation = INVERSE.get(edge.relation, f"{edge.relation}_of")
            out.append(
                {"relation": relation.replace("_", " "), "id": edge.source, "title": titles[edge.source]}
            )
        elif edge.source == node_id and depth.get(edge.target, 99) < depth[node_id]:
            out.append(
                {"relation": edge.relation.replace("_", " "), "id": edge.target, "title": titles[edge.target]}
            )
    return out
