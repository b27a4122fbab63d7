"""What `.lore/config.toml` may hold, checked when it is read.

Every section and key Lore reads is declared here with its type and range;
a value of the wrong type, out of range, or a name Lore does not know (a
typo would otherwise fall back to the default in silence) is refused with
one line naming the section, the key and what to write instead, before any
command uses it. ``[embedding]`` and ``[sessions]`` must be tables; their
keys depend on the provider and are checked where they are read
(:mod:`lore.embed.config`, :mod:`lore.sessions.config`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from lore.errors import ValidationError


class Key(NamedTuple):
    """One accepted key: what it holds (``number``, ``whole``, ``bool``,
    ``text``, ``texts``: a list of text), its bounds or choices."""

    kind: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None


_DAYS = 100_000
SECTIONS: dict[str, dict[str, Key | None] | None] = {
    "project": {"id": Key("text"), "name": Key("text")},
    "memory": {"trash_retention_days": Key("number", 0, _DAYS)},
    "index": {
        "include": Key("texts"),
        "exclude": Key("texts"),
        "max_file_bytes": Key("whole", 1, 2**40),
        "history_commits": Key("whole", 0, 10**9),
        "auto_sync": Key("bool"),
        "backend": Key("text", choices=("sqlite", "postgres")),
        "database_url": Key("text"),
        "text_search": Key("text"),
    },
    "embedding": None,  # checked by the provider (lore.embed.config)
    "search": {
        "fusion": Key("text", choices=("adaptive", "rrf", "weighted")),
        "files_fusion": Key("text", choices=("adaptive", "rrf", "weighted")),
    },
    "recall": {
        "budget": Key("number", 100, 10**7),  # as MCP; a pack's heading alone can take 50
        "start_budget": Key("number", 1, 10**7),
        "half_life_days": Key("number", 0.001, _DAYS),
    },
    "lifecycle": {
        "committed_tiers": Key("texts", choices=("durable", "daily", "session")),
        "daily_archive_days": Key("number", 0, _DAYS),
    },
    "sessions": {  # (their order is checked below)
        "soft_limit_tokens": Key("whole", 1, 10**12),
        "hard_limit_tokens": Key("whole", 1, 10**12),
        "protected_recent_tokens": Key("whole", 1, 10**12),
        "summary": None,  # a table of its own, checked where it is read (lore.sessions.summary)
    },
}
# [sessions]' defaults (lore.sessions.config reads the table with them), in the order they must keep.
SESSION_LIMITS = {
    "protected_recent_tokens": 20_000,
    "soft_limit_tokens": 100_000,
    "hard_limit_tokens": 150_000,
}

_WHAT = {
    "number": "a number",
    "whole": "a whole number",
    "bool": "true or false",
    "text": "a quoted string",
    "texts": "a list of quoted strings",
}


def check(settings: dict[str, Any], path: str) -> dict[str, Any]:
    """Return `settings` (parsed TOML) if every section and key is one Lore
    reads, with a value it can use; raise ValidationError naming `path`, the
    section and the key otherwise."""
    for section, value in settings.items():
        if section not in SECTIONS:
            raise ValidationError(
                f"unknown section [{section}]; Lore reads {', '.join(f'[{s}]' for s in SECTIONS)} "
                "(docs/configuration.md): fix the name or remove it",
                path=path,
            )
        if not isinstance(value, dict):
            raise ValidationError(
                f"{section} must be a table ([{section}] on its own line, then its keys), "
                f"not {_shown(value)}",
                path=path,
            )
        keys = SECTIONS[section]
        if keys is None:
            continue
        for name, item in value.items():
            if name in keys and keys[name] is None:
                continue  # checked where it is read
            key = keys.get(name)
            if key is None:
                raise ValidationError(
                    f"unknown setting [{section}] {name}; allowed: {', '.join(sorted(keys))} "
                    "(docs/configuration.md): fix the name or remove it",
                    path=path,
                )
            problem = _problem(key, item)
            if problem:
                raise ValidationError(
                    f"[{section}] {name} must be {problem} (got {_shown(item)}); "
                    "fix it or remove the line to use the default",
                    path=path,
                )
        if section == "sessions":
            limits = {**SESSION_LIMITS, **{k: v for k, v in value.items() if k in SESSION_LIMITS}}
            if (
                not limits["protected_recent_tokens"]
                < limits["soft_limit_tokens"]
                <= limits["hard_limit_tokens"]
            ):
                raise ValidationError(
                    "[sessions] needs protected_recent_tokens < soft_limit_tokens <= hard_limit_tokens "
                    f"(here {limits['protected_recent_tokens']}, {limits['soft_limit_tokens']}, "
                    f"{limits['hard_limit_tokens']}); fix them or remove the lines to use the defaults",
                    path=path,
                )
    return settings


def _problem(key: Key, value: Any) -> str | None:
    """What `value` should be instead, or None when it fits `key`."""
    kind = key.kind
    if kind == "bool":
        return None if isinstance(value, bool) else _WHAT[kind]
    if kind in ("number", "whole"):
        low, high = key.minimum or 0, key.maximum or math.inf
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if kind == "whole" and isinstance(value, float):
            number = False
        return None if number and math.isfinite(value) and low <= value <= high else _range(key, _WHAT[kind])
    if kind == "text":
        if not isinstance(value, str):
            return _choices(key, _WHAT[kind])
        return None if key.choices is None or value in key.choices else _choices(key, _WHAT[kind])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return _choices(key, _WHAT[kind])
    return None if key.choices is None or set(value) <= set(key.choices) else _choices(key, _WHAT[kind])


def _range(key: Key, what: str) -> str:
    low, high = (f"{v:g}" if isinstance(v, float) else str(v) for v in (key.minimum, key.maximum))
    return f"{what} from {low} to {high}"


def _choices(key: Key, what: str) -> str:
    if key.choices is None:
        return what
    listed = ", ".join(f'"{c}"' for c in key.choices)
    return f"one of {listed}" if key.kind == "text" else f"a list of {listed}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["SECTIONS", "check"]
