"""Precise edits of a memory file's text: smaller than "rewrite the whole file".

Body operations (append, prepend, replace a section, find and replace)
change only the part of the body they name; the frontmatter keeps its own
text except ``content_hash`` (and ``updated_at``), which follow the body so
that `lore doctor` sees no stale hash. Frontmatter operations (``set`` a
field, ``relate`` to another memory) go through the :class:`Memory` model
and are written in canonical form, like every update.

These are pure functions of text; :meth:`lore.memory.repository.Memories.edit`
reads, locks, redacts, writes atomically and re-indexes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lore.errors import UsageError, ValidationError
from lore.memory.model import MAX_SUBJECT, Memory, content_hash, parse_given_time, string_list
from lore.records import datarecord

OPERATIONS = ("append", "prepend", "replace_section", "find_replace", "set", "relate")
BODY_OPERATIONS = ("append", "prepend", "replace_section", "find_replace")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
# Fields `set` may change, by the names users write (frontmatter or Lore's).
_FIELD_NAMES = {
    "title": "title",
    "subject": "title",
    "type": "type",
    "tags": "tags",
    "keywords": "tags",
    "applies_to": "applies_to",
    "confidence": "confidence",
    "files": "files",
    "labels": "labels",
    "priority": "priority",
    "risk": "risk",
    "task_type": "task_type",
    "project": "project",
    "task": "task",
    "agent": "agent",
    "source": "source",
    "occurred_at": "occurred_at",
}
# Managed by Lore: ids and hashes, and who a memory belongs to (its agent, and the
# visibility and storage its folder gives it): an agent must not re-own a memory.
_FIXED = {"id", "content_hash", "updated_at", "sector", "agent", "visibility", "storage"}


@datarecord
class Edit:
    """One edit operation and its arguments.

    ``append``/``prepend``: ``text``. ``replace_section``: ``heading`` and
    ``text`` (the new section body; the section is added at the end if it
    does not exist). ``find_replace``: ``find`` and ``text`` (``every``:
    replace all occurrences, else exactly one must exist). ``set``:
    ``field`` and ``value`` (YAML: ``[a, b]``, ``0.8``; empty removes an
    optional field). ``relate``: ``relation`` and ``value`` (the other
    memory's id, title or file name), added to the frontmatter's ``relations``.
    """

    operation: str
    text: str | None = None
    heading: str | None = None
    find: str | None = None
    every: bool = False
    field: str | None = None
    value: str | None = None
    relation: str | None = None

    def check(self) -> None:
        """Raise UsageError when the arguments don't fit the operation."""
        need = {
            "append": ("text",),
            "prepend": ("text",),
            "replace_section": ("heading", "text"),
            "find_replace": ("find", "text"),
            "set": ("field",),
            "relate": ("relation", "value"),
        }
        if self.operation not in need:
            raise UsageError(
                f"unknown edit operation '{self.operation}'; use one of: {', '.join(OPERATIONS)}"
            )
        missing = [name for name in need[self.operation] if getattr(self, name) is None]
        if missing:
            raise UsageError(f"{self.operation} needs {' and '.join(missing)}")
        if self.operation == "find_replace" and not self.find:
            raise UsageError("find_replace needs the text to find (not empty)")


# -- the file's two parts -----------------------------------------------------------------


@datarecord
class MemoryText:
    """A memory file's text cut in two: everything up to the body, and the body."""

    head: str
    body: str
    newline: str = "\n"
    bom: str = ""

    @classmethod
    def of(cls, raw: str) -> MemoryText:
        bom = "\ufeff" if raw.startswith("\ufeff") else ""
        text = raw[len(bom) :]
        newline = "\r\n" if "\r\n" in text else "\n"
        lines = text.replace("\r\n", "\n").split("\n")
        if not lines or lines[0].strip() != "---":
            raise UsageError("the file has no frontmatter; fix it first (`lore doctor`)")
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            raise UsageError("the file's frontmatter is not closed; fix it first (`lore doctor`)")
        start = end + 1
        while start < len(lines) and not lines[start].strip():
            start += 1
        return cls("\n".join(lines[:start]) + "\n", "\n".join(lines[start:]), newline, bom)

    def render(self, body: str, *, now: str | None = None) -> str:
        """The file with `body`: ``content_hash`` (if declared) and ``updated_at``
        follow it; every other frontmatter line is kept as it was."""
        head = self.head
        if content_hash(body) != content_hash(self.body) or now is not None:
            head = _set_scalar(head, "content_hash", content_hash(body), add=False)
            if now is not None:
                head = _set_scalar(head, "updated_at", now, add=True)
        if not head.endswith("\n\n") and body.strip():
            head = head.rstrip("\n") + "\n\n"
        text = head + body.strip("\n") + "\n"
        return self.bom + text.replace("\n", self.newline)


def refresh_hash(raw: str) -> str | None:
    """After a hand edit: the text with a declared ``content_hash`` that no
    longer matches the body corrected (None: nothing to change)."""
    try:
        parts = MemoryText.of(raw)
    except UsageError:
        return None
    declared = re.search(r"^content_hash\s*:\s*['\"]?([0-9a-fA-F]+)", parts.head, re.MULTILINE)
    if declared is None or declared.group(1) == content_hash(parts.body):
        return None
    return parts.bom + (
        _set_scalar(parts.head, "content_hash", content_hash(parts.body), add=False) + parts.body
    ).replace("\n", parts.newline)


def with_id(raw: str, memory_id: str) -> str | None:
    """The text with its frontmatter's one-line ``id`` set to `memory_id` (None: it has none to set)."""
    try:
        parts = MemoryText.of(raw)
    except UsageError:
        return None
    head = _set_scalar(parts.head, "id", memory_id, add=False)
    if head == parts.head:
        return None
    return parts.bom + (head + parts.body).replace("\n", parts.newline)


def _set_scalar(head: str, key: str, value: str, *, add: bool) -> str:
    """Set a top-level one-line `key: value` in the frontmatter part of `head`."""
    lines = head.split("\n")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    pattern = re.compile(rf"^{re.escape(key)}\s*:")
    for i in range(1, end):
        if pattern.match(lines[i]):
            if i + 1 < end and lines[i + 1][:1] in (" ", "\t"):
                return head  # a multi-line value: leave it to a canonical rewrite
            lines[i] = f"{key}: {value}"
            return "\n".join(lines)
    if add:
        lines.insert(end, f"{key}: {value}")
    return "\n".join(lines)


# -- body operations ------------------------------------------------------------------------


def apply_to_body(body: str, edit: Edit) -> tuple[str, str | None]:
    """The body after one body operation, and a note for the user (or None)."""
    text = (edit.text or "").strip("\n")
    if edit.operation == "append":
        if not text.strip():
            raise UsageError("nothing to append; give the text")
        joint = "\n" if _ends_with_list(body) and _LIST_ITEM.match(text) else "\n\n"
        return body.rstrip("\n") + joint + text + "\n", None
    if edit.operation == "prepend":
        if not text.strip():
            raise UsageError("nothing to prepend; give the text")
        lines = body.split("\n")
        if lines and lines[0].startswith("# "):  # keep the title line first
            rest = "\n".join(lines[1:]).lstrip("\n")
            return f"{lines[0]}\n\n{text}\n\n{rest}", None
        return f"{text}\n\n{body.lstrip(chr(10))}", None
    if edit.operation == "replace_section":
        return replace_section(body, edit.heading or "", text)
    if edit.operation == "find_replace":
        return find_replace(body, edit.find or "", edit.text or "", every=edit.every)
    raise UsageError(f"{edit.operation} is not a body operation")


def replace_section(body: str, heading: str, text: str) -> tuple[str, str | None]:
    """Replace the content under `heading` (any level, case-insensitive, with or
    without its #'s) up to the next heading of the same or a higher level; a
    missing section is added at the end as a level-2 heading."""
    wanted = _heading_text(heading)
    if not wanted:
        raise UsageError("give the section's heading, e.g. Decisions (--replace-section; over MCP, target)")
    lines = body.split("\n")
    found = None
    for index, level, title in headings(lines):
        if found is None and _heading_text(title) == wanted:
            found = (index, level)
        elif found is not None and level <= found[1]:
            end = index
            break
    else:
        end = len(lines)
    if found is None:
        section = (
            f"## {heading.lstrip('#').strip()}\n\n{text}\n" if text else f"## {heading.lstrip('#').strip()}\n"
        )
        return body.rstrip("\n") + "\n\n" + section, f"added section '{heading.lstrip('#').strip()}'"
    start = found[0] + 1
    before, after = lines[:start], lines[end:]
    middle = ["", *text.split("\n"), ""] if text else [""]
    return "\n".join(before + middle + after).rstrip("\n") + "\n", None


def find_replace(body: str, find: str, replacement: str, *, every: bool = False) -> tuple[str, str | None]:
    from lore.secrets import redact

    count = body.count(find)
    shown, _ = redact(find)  # echoed to the user: never a secret in clear
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    if count == 0:
        raise UsageError(f"'{shown}' is not in the memory's text; check it with `lore show ID`")
    if count > 1 and not every:
        raise UsageError(
            f"'{shown}' occurs {count} times; give more of the text to make it unique, or replace all (--all; over MCP, all: true)"
        )
    return body.replace(find, replacement), (f"replaced {count} occurrences" if count > 1 else None)


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of the Markdown headings outside code fences."""
    out, fence = [], None
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        match = _HEADING.match(line)
        if match:
            out.append((index, len(match.group(1)), match.group(2)))
    return out


def _heading_text(text: str) -> str:
    return " ".join(text.strip().lstrip("#").split()).casefold()


def _ends_with_list(body: str) -> bool:
    lines = body.rstrip("\n").split("\n")
    return bool(lines) and bool(_LIST_ITEM.match(lines[-1]))


# -- frontmatter operations -------------------------------------------------------------------


def set_field(memory: Memory, name: str, value: str | None, *, clean: Callable[[str], str] = str) -> None:
    """Set one frontmatter field from its text (YAML for lists and numbers;
    empty or null removes an optional field). Unknown names are kept as custom
    fields. Validation happens when the memory is written.

    Args:
        clean: applied to every string the field will hold (the caller's
            redaction), after the YAML is parsed: redacting first would let
            ``[REDACTED:kind]`` turn a word into a list.
    """
    key = name.strip()
    if not key:
        raise UsageError("give the name of the field to set, e.g. title or a field of your own")
    if key in _FIXED:
        raise UsageError(f"{key} is managed by Lore and cannot be set")
    parsed = _yaml_value(value, listed=_FIELD_NAMES.get(key) in ("tags", "files", "labels"))
    text = "" if value is None else value.strip()  # fields stored as the text given
    canonical = _FIELD_NAMES.get(key)
    if canonical is None and key not in memory.extra and (meant := _misspelt(key)) is not None:
        raise UsageError(
            f"unknown field '{key}'; did you mean '{meant}'? (`lore edit --help` lists the fields)"
        )
    if canonical is None:
        if key == "relations" and parsed is not None and not isinstance(parsed, dict | list):
            # (a later --relate could not add to it, and no link was read from it)
            raise UsageError(
                "relations must be a mapping ({supersedes: ID}) or a list; or add one with --relate R=ID"
            )
        if parsed is None:
            memory.extra.pop(key, None)
        else:
            memory.extra[key] = _clean_strings(parsed, clean)
        return
    if canonical in ("tags", "files", "labels"):
        if parsed is None:
            items = []
        else:  # what a file may hold, as reading one checks it (a nested list or a mapping is refused, not stringified)
            try:
                items = string_list(parsed if isinstance(parsed, list | dict) else str(parsed), key, None)
            except ValidationError as err:
                raise UsageError(f"{key} {err.reason}") from None
        kept = [clean(i.strip()) for i in items if i.strip()]
        if canonical == "tags" and not kept:  # as add refuses a memory without one
            raise UsageError(f"a memory needs at least one keyword; give {key}=[word, ...]")
        setattr(memory, canonical, kept)
        if canonical == "files":
            memory.check_project_paths()
    elif canonical == "title":
        title = "" if parsed is None else clean(text)
        if not 1 <= len(title) <= MAX_SUBJECT:
            raise UsageError(f"the title must be 1-{MAX_SUBJECT} characters")
        memory.title = title
    elif canonical == "type":
        from lore.memory.model import SECTOR_OF_TYPE

        memory.type = clean(str(parsed))
        memory.sector = SECTOR_OF_TYPE.get(memory.type, memory.sector)
    elif canonical == "confidence":
        try:
            memory.confidence = 1.0 if parsed is None else float(parsed)
        except (TypeError, ValueError):
            raise UsageError("confidence must be a number between 0 and 1") from None
    elif canonical == "priority":
        if parsed is not None and not isinstance(parsed, int):
            raise UsageError("priority must be a whole number")
        memory.priority = parsed
    elif canonical == "occurred_at":
        if parsed is None:
            raise UsageError("occurred_at cannot be removed; give an ISO 8601 time")
        memory.occurred_at = parse_given_time(clean(text))
    elif canonical == "applies_to":
        memory.applies_to = "global" if parsed is None else clean(text)
        memory.check_project_paths()
    else:
        setattr(memory, canonical, None if parsed is None else clean(text))


def _misspelt(key: str) -> str | None:
    """The field of Lore's that `key` is one slip away from (a letter missing,
    added, changed or two swapped: ``tpye``, ``keyword``), if any; a field of
    one's own is any other name."""
    low = key.lower()
    if len(low) < 4:
        return None
    for known in (*_FIELD_NAMES, *_FIXED, "relations", "superseded_by", "status"):
        if known != low and _one_slip(low, known) and low != known + "s":
            return known  # (a plural of a field is a name of its own: `sources`, `tasks`)
    return None


def _one_slip(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def add_relation(memory: Memory, relation: str, target: str) -> str | None:
    """Add ``relation: target`` to the frontmatter's ``relations`` mapping
    (a list form is extended in its own style); a note if it was there already.
    A near miss of a known relation (``supercedes``) is refused as a typo."""
    from lore.memory.links import near_miss, relation_name, typo_message

    name, target = relation_name(relation), target.strip()
    known = near_miss(name)
    if known is not None:
        raise UsageError(typo_message(name, known))
    if not target:
        raise UsageError("give the memory to relate to (id, title or file name)")
    current = memory.extra.get("relations")
    if current is None:
        memory.extra["relations"] = {name: target}
        return None
    if isinstance(current, dict):
        existing = current.get(name)
        values = existing if isinstance(existing, list) else [] if existing is None else [existing]
        if target in values:
            return f"already {name} {target}"
        current[name] = target if not values else [*values, target]
        return None
    if isinstance(current, list):
        entry = f"{name} [[{target}]]"
        if entry in current:
            return f"already {name} {target}"
        current.append(entry)
        return None
    raise UsageError("the frontmatter's relations field is neither a mapping nor a list; fix it by hand")


def _clean_strings(value: Any, clean: Callable[[str], str]) -> Any:
    """`value` (parsed YAML) with `clean` applied to every string in it, keys
    included; lists and mappings are changed in place, each once (YAML aliases
    share them; a cycle is left for validation to refuse)."""
    seen: set[int] = set()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return clean(item)
        if not isinstance(item, (list, dict)) or id(item) in seen:
            return item
        seen.add(id(item))
        if isinstance(item, list):
            item[:] = [walk(child) for child in item]
        else:
            pairs = [(walk(k), walk(v)) for k, v in item.items()]
            item.clear()
            item.update(pairs)
        return item

    return walk(value)


def _yaml_value(value: str | None, *, listed: bool = False) -> Any:
    """`value` read as YAML (text when it is none); `listed`: a field that holds
    a list, where a bracket not closed (`[a, b`) is refused, not kept as text."""
    if value is None or not value.strip() or value.strip() in ("null", "~"):
        return None
    import yaml

    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        if listed and value.lstrip().startswith(("[", "{")):  # meant as a list: not read as text
            raise UsageError(
                f"'{value.strip()[:60]}' is not a YAML list or mapping (a bracket is not closed?); "
                "write it as [a, b] or {key: value}"
            ) from None
        return value
