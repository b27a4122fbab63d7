"""Packing recall items into a token budget, at progressive detail levels.

Every item renders at L1 (~50 tokens: what and where), L2 (~200: a summary,
key decisions or a code snippet) or L3 (everything). With ``level="auto"``
the packer first fits as many items as it can at L1, most valuable first,
then upgrades them to L2 and L3 in the same order while the budget allows.
Seed 001's context brackets choose a fixed level instead.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from lore.errors import UsageError
from lore.index.tokens import count_tokens
from lore.records import datarecord

LEVELS = ("L1", "L2", "L3")
BRACKETS = {"fresh": None, "moderate": "L1", "depleted": "L2", "critical": "L3"}
SECTIONS = {"memory": "Memories", "file": "Likely files", "code": "Code", "work": "Related past work"}


@datarecord
class Item:
    kind: str  # memory | file | code | work
    key: str
    value: float  # packing priority (higher first)
    renders: dict[str, str]  # level -> Markdown (L1 always; L2/L3 optional)
    data: dict[str, Any] = field(default_factory=dict)  # the item's JSON shape (per kind)
    level: str | None = None
    _costs: dict[str, int] = field(default_factory=dict, repr=False)  # level -> tokens

    def text(self, level: str) -> str:
        """The richest rendering at or below `level`."""
        for candidate in reversed(LEVELS[: LEVELS.index(level) + 1]):
            if candidate in self.renders:
                return self.renders[candidate]
        return self.renders["L1"]

    def cost(self, level: str) -> int:
        if level not in self._costs:
            self._costs[level] = count_tokens(self.text(level)) + 1
        return self._costs[level]


def resolve_level(level: str | None, bracket: str | None) -> str | None:
    """The level to use: a bracket maps to one (fresh → nothing); default auto."""
    if bracket:
        if bracket not in BRACKETS:
            raise UsageError(f"unknown bracket '{bracket}'; use {', '.join(BRACKETS)}")
        return BRACKETS[bracket]
    level = level or "auto"
    if level != "auto" and level not in LEVELS:
        raise UsageError(f"unknown level '{level}'; use auto, L1, L2 or L3")
    return level


def heading_text(text: str, chars: int, budget: int) -> str:
    """`text` as a pack's heading shows it: at most `chars` characters and a
    third of `budget` tokens, an ellipsis marking a cut (160 characters of
    Japanese are ~160 tokens: a title filled a budget of 100 alone)."""
    from lore.memory.values import clip

    shown = clip(text, chars)
    most = max(8, budget // 3)
    while len(shown) > 8 and count_tokens(shown) > most:
        shown = clip(text, len(shown) * 4 // 5)
    return shown


def check_heading(tokens: int, budget: int) -> None:
    """Refuse a budget that cannot hold even a pack's heading of `tokens`: the
    pack would go over it, saying so (``17/10 tokens``).

    Raises:
        UsageError: one line naming the budget and the heading's size.
    """
    if tokens > budget:
        raise UsageError(
            f"a budget of {budget} tokens cannot hold even the pack's heading "
            f"({tokens} tokens); give a larger budget, e.g. 2000"
        )


def pack(
    items: list[Item],
    budget: int,
    level: str | None,
    header_tokens: int,
    sections: dict[str, str] | None = None,
) -> list[Item]:
    """Choose items and their levels so the rendered pack never exceeds `budget` tokens.

    `sections`: item kind → section title, in the order rendered (default :data:`SECTIONS`).
    """
    if level is None or budget <= header_tokens:
        return []
    # Each section's heading costs tokens too; charge it when its first item goes in.
    section_cost = {
        kind: count_tokens(f"\n### {title}\n") + 1 for kind, title in (sections or SECTIONS).items()
    }
    ordered = sorted(items, key=lambda it: -it.value)
    used = header_tokens
    chosen: list[Item] = []
    first = "L1" if level == "auto" else level
    for item in ordered:
        extra = 0 if any(c.kind == item.kind for c in chosen) else section_cost[item.kind]
        cost = item.cost(first) + extra
        if used + cost <= budget:
            item.level = first
            chosen.append(item)
            used += cost
    if level == "auto":
        for target in ("L2", "L3"):
            for item in chosen:
                if target not in item.renders:
                    continue
                delta = item.cost(target) - item.cost(item.level or "L1")
                if delta > 0 and used + delta <= budget:
                    used += delta
                    item.level = target
    return chosen


def render(
    title: str,
    query_used: str,
    chosen: list[Item],
    budget: int,
    *,
    used: int | None = None,
    sections: dict[str, str] | None = None,
    head: str | None = None,
    left: int = 0,
) -> str:
    """The Markdown block injected into an agent's prompt (`head` replaces the
    recall heading; `sections` as in :func:`pack`; `left`: items the budget
    left out, said on a last line)."""
    if head is None:
        head = f"## Lore recall: {title}\n_query: {query_used}_"
        if used is not None:
            head += f" · {used}/{budget} tokens"
    parts = [head]
    for kind, section in (sections or SECTIONS).items():
        mine = [it for it in chosen if it.kind == kind]
        if mine:
            parts.append(f"\n### {section}")
            parts.extend(it.text(it.level or "L1") for it in mine)
    if left:
        parts.append(left_out(left))
    return "\n".join(parts) + "\n"


def left_out(count: int) -> str:
    """The last line of a pack whose budget left `count` items out."""
    many = count > 1
    return f"\n_{count} more item{'s' if many else ''} did not fit the budget: raise --budget to see {'them' if many else 'it'}_"
