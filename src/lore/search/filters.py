"""User-facing filters, checked and turned into the storage layer's typed filters."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from lore.errors import ArgumentError, UsageError, literal
from lore.filenames import MAX_PATH
from lore.memory.model import MEMORY_TYPES, SCOPE_RE
from lore.memory.values import clip, quoted
from lore.storage import ChunkFilter, MemoryFilter

STORAGE_TIERS = ("durable", "session", "daily", "session-summary")
ATTENTION_TIERS = ("hot", "warm", "cold")
ARCHIVE = "archive"  # the archive tier: archived daily files, and memories faded by attention
VISIBILITIES = ("shared", "private")
MAX_LIMIT = 50
# Bounds of a filter's values (every interface's): SQLite refuses a query of
# ~1,000 OR-ed values ("expression tree is too large") or a 50 kB LIKE pattern.
MAX_FILTER_VALUES = 50
MAX_NAME = 200  # a language, extension, role, type or tag
MAX_TASK_FILES = 1000  # the files a task names (recall reads each one's anchors)
When = str | datetime.date | None
"""A time filter (since, until): a date, a time or a phrase ("last week"), or a Python date or datetime."""
_MEMORY_KEYS = {
    "types",
    "type",
    "tags",
    "tag",
    "agent",
    "task",
    "scope",
    "tier",
    "since",
    "until",
    "include_archived",
    "visibility",
    "stale",
    "include_global",
}


def memory_filter(filters: dict[str, Any], *, viewer: str | None) -> MemoryFilter:
    """A storage filter from CLI/MCP/HTTP keyword filters.

    `viewer` is the acting agent (fixed per process): private memories of
    other agents are never visible, whatever the filters say. ``tier`` is a
    storage tier (durable, daily, session, session-summary), an attention
    tier as last decided (hot, warm, cold) or ``archive``; archived
    memories are left out unless asked for (``include_archived`` or
    ``tier="archive"``).
    """
    given = {k: v for k, v in filters.items() if v not in (None, (), [], "")}
    unknown = set(given) - _MEMORY_KEYS
    if unknown:
        raise UsageError(
            f"unknown filter {', '.join(sorted(unknown))}; use {', '.join(sorted(_MEMORY_KEYS))}"
        )
    types = _names(given.get("types", ()), "types") + _names(given.get("type", ()), "type")
    for kind in types:
        if kind not in MEMORY_TYPES:
            raise UsageError(f"unknown type '{kind}'; use one of: {', '.join(MEMORY_TYPES)}")
    visibility = given.get("visibility")
    if visibility is not None and visibility not in VISIBILITIES:
        raise UsageError(f"unknown visibility '{visibility}'; use shared or private (the acting agent's own)")
    stale = given.get("stale")
    if stale is not None and not isinstance(stale, bool):
        raise UsageError("stale must be true (only stale memories) or false (only fresh ones)")
    tier = given.get("tier")
    if tier and tier not in (*STORAGE_TIERS, *ATTENTION_TIERS, ARCHIVE):
        raise UsageError(
            f"unknown tier '{tier}'; use hot, warm, cold, durable, daily, session, session-summary or archive"
        )
    scope = given.get("scope")
    if scope is not None and not (
        isinstance(scope, str) and len(scope) <= MAX_PATH and SCOPE_RE.fullmatch(scope)
    ):
        shown = clip(str(scope), 80)
        hint = f" (e.g. file:{shown.strip()})" if isinstance(scope, str) and scope.strip() else ""
        raise UsageError(f"scope '{shown}' must be global, file:<path> or area:<name>{hint}")
    archived = bool(given.get("include_archived")) or tier == ARCHIVE
    since, until = _period(filters.get("since"), filters.get("until"))  # "" too: refused
    return MemoryFilter(
        types=types,
        tags=_names(given.get("tags", ()), "tags") + _names(given.get("tag", ()), "tag"),
        agent=given.get("agent"),
        task=given.get("task"),
        scope=scope,
        storage=[tier] if tier in STORAGE_TIERS else [],
        exclude_storage=[] if archived else [ARCHIVE],
        tiers=[tier] if tier in (*ATTENTION_TIERS, ARCHIVE) else [],
        exclude_tiers=[] if archived else [ARCHIVE],
        since=since,
        until=until,
        viewer=viewer,
        visibility=visibility,
        stale=stale,
        # 003: other projects' global memories (a shared database) unless asked not to.
        include_global=filters.get("include_global") is not False,
    )


def code_filter(
    languages: Iterable[str] = (),
    extensions: Iterable[str] = (),
    directories: Iterable[str] = (),
    paths: set[str] | None = None,
    roles: Iterable[str] = (),
    since: When = None,
    until: When = None,
) -> ChunkFilter:
    dirs = []
    for d in strings(directories, "directories", most=MAX_FILTER_VALUES, longest=MAX_PATH):
        if not d.strip():  # not a filter that is silently ignored
            raise UsageError("directory filter is empty; give a folder like src (or . for the whole project)")
        d = "/".join(part for part in d.strip().split("/") if part not in ("", "."))  # ./src/ is src
        if ".." in d.split("/"):
            raise UsageError(f"directory filter '{d}' leaves the project; give a path inside it")
        if d:
            dirs.append(d)
    start, stop = _period(since, until)
    return ChunkFilter(
        languages=[stored for name in _names(languages, "languages") for stored in _languages(name)],
        extensions=[x for e in _names(extensions, "extensions") for x in _extensions(e)],
        directories=dirs,
        paths=paths,
        roles=_roles(roles),
        since=start,
        until=stop,
    )


def _roles(given: Iterable[str]) -> list[str]:
    """Role filter values, each one a role files are given (a usage error else:
    a misspelt role would filter every file out and answer "no matches")."""
    names = _names(given, "roles")
    if not names:
        return names
    from lore.index.roles import ROLES

    for name in names:
        if name not in ROLES:
            raise UsageError(f"unknown role '{clip(name, 60)}'; use one of {', '.join(ROLES)}")
    return names


def _extensions(given: str) -> list[str]:
    """A `--ext` value as stored (``*.go`` and ``.go`` are ``go``); a language's
    name that is no extension of its own (``python``: MCP's `file_types`, where
    an agent writes the language) is its extensions; one naming no extension
    (``""``, ``.``) is a usage error, not a filter that is ignored."""
    from lore.index.chunker import extensions_of, language_for, language_name

    extension = given.strip().lstrip("*.")
    if not extension or "/" in extension:
        raise UsageError(f"extension filter '{clip(given, 60)}' names no extension; give one like py or ts")
    if language_for(f"x.{extension}") is None and (language := language_name(extension)) is not None:
        return extensions_of(language) or [extension]
    return [extension]


def _languages(given: str) -> list[str]:
    """The stored languages a `--lang` value selects; a usage error if it names none."""
    from lore.index.chunker import known_languages, language_family, language_name

    name = language_name(given)
    if name is None:
        raise UsageError(f"unknown language '{given}'; use one of {', '.join(known_languages())}")
    return language_family(name)


def clamp_limit(limit: int | None, default: int = 10) -> int:
    """A result limit: `default` when none is given, at most 50."""
    checked = count_limit(limit)
    return default if checked is None else min(checked, MAX_LIMIT)


def count_limit(limit: int | None) -> int | None:
    """A limit of how many to return, checked (None: no limit).

    Raises:
        UsageError: not a whole number, or below 1 (``-1`` or ``0`` would
            otherwise mean "all" to the database).
    """
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise UsageError(f"limit must be a whole number, at least 1 (got {limit!r})")
    if limit < 1:
        raise UsageError("limit must be at least 1")
    return limit


def token_budget(budget: int | None, default: int, *, field: str = "budget") -> int:
    """A token budget (recall, start, context): `default` when none is given.

    Raises:
        UsageError: the budget is not a positive number of tokens (a negative
            one would pack nothing and print ``16/-5 tokens``).
    """
    value = default if budget is None else budget
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value < float("inf"):
        raise UsageError(f"{field} must be a positive number of tokens, e.g. 2000 (got {quoted(value)})")
    return int(value)


def changed_within(days: float | None) -> float | None:
    """`--changed-within` days, checked: a number of days above 0, or None.

    Raises:
        UsageError: zero, negative or not a finite number (any of those
            would quietly select no file, or every one).
    """
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int | float) or not 0 < days < float("inf"):
        raise ArgumentError(
            f"{{0}} must be a number of days above 0, e.g. 7 (got {literal(repr(days))})",
            "changed_within_days",
        )
    return float(days)


def _names(value: Any, field: str) -> list[str]:
    """A filter's names (:func:`strings`), within the bounds every interface keeps."""
    return strings(value, field, most=MAX_FILTER_VALUES, longest=MAX_NAME)


def strings(
    value: Any, field: str = "value", *, most: int | None = None, longest: int | None = None
) -> list[str]:
    """A list of names given as a list, or as one name (``"go"`` is ``["go"]``, never its letters).

    `most` and `longest` bound how many names and how long each may be: a
    filter of thousands of values, or of one huge one, is past what the
    index's query limits allow (on every interface, not only the HTTP API's).

    Raises:
        UsageError: `value` is neither (a number, bytes), or is over a bound, named as `field`.
    """
    if isinstance(value, str):
        names = [value]
    elif value is None:
        return []
    elif not isinstance(value, Iterable) or isinstance(value, bytes | dict):
        raise UsageError(f"{field} must be a name or a list of names (got {type(value).__name__})")
    else:
        names = [str(v) for v in value]
    if most is not None and len(names) > most:
        raise UsageError(f"{field}: {len(names)} values, at most {most} are taken; narrow the filter")
    if longest is not None and any(len(name) > longest for name in names):
        raise UsageError(f"{field}: a value of over {longest} characters; give a shorter one")
    for name in names:  # no name or path holds one (the OS can't name it; the index would drop it)
        if "\x00" in name:
            shown = clip(name.replace("\x00", "\\x00"), 120)
            raise UsageError(f"{field}: '{shown}' contains a NUL character; remove it")
    return names


def _period(since: When, until: When) -> tuple[str | None, str | None]:
    """``since``/``until`` as ISO times; a period that ends before it begins is
    refused (it would silently match nothing). The time phrases are imported
    only for a period given: most commands have none."""
    start, stop = _when(since, "since"), _when(until, "until", end=True)
    if start is not None:
        from lore.search.timephrase import check_order

        check_order(since, start, until, stop)
    return start, stop


def _when(value: When, name: str, *, end: bool = False) -> str | None:
    """An ISO time from a date, a time or a phrase ("last week", "2 months ago");
    a :class:`datetime.date` or :class:`datetime.datetime` from Python as it is written.
    None is no filter; a blank value is an error (as the CLI's ``--since ""``),
    not a filter silently left out."""
    if isinstance(value, datetime.date):
        value = value.isoformat()
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError(f"{{0}}: give a date or a phrase, not {type(value).__name__}", name)
    if not value.strip():
        raise ArgumentError(
            "{0}: it is empty; give a date or a phrase (2024-05-01, last week) or leave it out", name
        )
    from lore.search.timephrase import read_when

    return read_when(value, name, end=end)
