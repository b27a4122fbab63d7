"""The completion bundle: what an agent says about its finished task (000's CompletionBundle).

Read from the JSON file the agent writes; camelCase (JAT) and snake_case keys
alike, unknown keys ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.errors import UsageError
from lore.memory.complete.text import BULLET
from lore.records import datarecord
from lore.safe_read import read_stream

__all__ = ["CompletionBundle", "load_bundle"]


@datarecord
class CompletionBundle:
    """What the agent says about its finished task (000's CompletionBundle).

    Attributes:
        summary: what was accomplished, one bullet per item.
        approach: how the work was done (free Markdown).
        decisions, lessons: one item each.
        patterns, gotchas: ``crossAgentIntel.patterns`` / ``.gotchas``.
        files: ``crossAgentIntel.files``: key files the agent names, each
            ``path``, ``path:line`` or ``path:line - note``.
        tags, labels, priority, task_type, risk: frontmatter hints for the caller.
        task, agent: ``taskId`` / ``agentName`` when the bundle carries them.
    """

    summary: list[str] = field(default_factory=list)
    approach: str = ""
    decisions: list[str] = field(default_factory=list)
    lessons: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    gotchas: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    priority: int | None = None
    task_type: str | None = None
    risk: str | None = None
    task: str | None = None
    agent: str | None = None


# JSON key (any spelling) -> bundle attribute. Keys not listed (quality,
# humanActions, suggestedTasks, ...) are ignored: JAT bundles carry more than
# a memory needs.
_BUNDLE_KEYS = {
    "summary": "summary",
    "approach": "approach",
    "decisions": "decisions",
    "lessons": "lessons",
    "patterns": "patterns",
    "gotchas": "gotchas",
    "files": "files",
    "key_files": "files",
    "keyfiles": "files",
    "tags": "tags",
    "labels": "labels",
    "priority": "priority",
    "type": "task_type",
    "task_type": "task_type",
    "tasktype": "task_type",
    "risk": "risk",
    "risk_level": "risk",
    "risklevel": "risk",
    "task": "task",
    "task_id": "task",
    "taskid": "task",
    "agent": "agent",
    "agent_name": "agent",
    "agentname": "agent",
}
_INTEL_KEYS = ("crossagentintel", "cross_agent_intel")
_LIST_FIELDS = ("summary", "decisions", "lessons", "patterns", "gotchas", "files", "tags", "labels")


def load_bundle(path: Path) -> CompletionBundle:
    """Read a completion bundle from a JSON file.

    Keys may be camelCase (JAT's ``crossAgentIntel``, ``riskLevel``) or
    snake_case; ``patterns``/``gotchas``/``files`` may sit inside
    ``crossAgentIntel`` or at the top level. ``summary`` may be a list or a
    string (split into bullets by lines). Unknown keys are ignored.

    Raises:
        UsageError: the file is unreadable, not JSON, or a key has the wrong
            type; the message names the file and the key.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:  # bounded: --bundle /dev/zero is refused, not read forever
            raw = read_stream(handle, f"completion bundle {path}").decode("utf-8-sig")
    except FileNotFoundError:
        raise UsageError(
            f"completion bundle {path} does not exist; pass the JSON file written by the agent"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read completion bundle {path}: {err}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise UsageError(
            f"{path}: not valid JSON ({err.msg} at line {err.lineno} column "
            f"{err.colno}); fix the completion bundle"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}: a completion bundle must be a JSON object "
            '(e.g. {"summary": [...], "approach": "..."})'
        )

    values: dict[str, tuple[str, object]] = {}  # attribute -> (key as written, value)
    more: list[tuple[str, str, object]] = []  # (attribute, key, value) of other keys of a list's attribute
    for key, value in data.items():
        folded = str(key).lower()
        if folded in _INTEL_KEYS:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise UsageError(
                    f"{path}: key '{key}' must be an object with files, patterns and gotchas lists"
                )
            for inner, item in value.items():
                attr = {"files": "files", "patterns": "patterns", "gotchas": "gotchas"}.get(
                    str(inner).lower()
                )
                if attr:
                    values[attr] = (f"{key}.{inner}", item)
        elif folded in _BUNDLE_KEYS or _snake(str(key)) in _BUNDLE_KEYS:
            attr = _BUNDLE_KEYS.get(folded) or _BUNDLE_KEYS[_snake(str(key))]
            if attr in values and attr in _LIST_FIELDS:  # files and key_files both: both lists count
                more.append((attr, str(key), value))
            values.setdefault(attr, (str(key), value))  # crossAgentIntel wins over top level

    bundle = CompletionBundle()
    for attr, (key, value) in values.items():
        if value is None:
            continue
        if attr == "summary":
            bundle.summary = _summary_items(value, path, key)
        elif attr == "approach":
            bundle.approach = _approach_text(value, path, key)
        elif attr in _LIST_FIELDS:
            items = _items_of(value, path, key)
            for also, other, extra in more:
                if also == attr and extra is not None:
                    items += _items_of(extra, path, other)
            setattr(bundle, attr, list(dict.fromkeys(items)))
        elif attr == "priority":
            bundle.priority = _priority(value, path, key)
        else:
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise UsageError(f"{path}: key '{key}' must be a string")
            setattr(bundle, attr, str(value).strip() or None)
    return bundle


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _items_of(value: object, path: Path, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise UsageError(f"{path}: key '{key}' must be a list of strings")
    items = []
    for item in value:
        if isinstance(item, dict) and key.lower().endswith("files"):
            item = _file_entry_from_object(item, path, key)
        if not isinstance(item, (str, int, float)) or isinstance(item, bool):
            raise UsageError(f"{path}: key '{key}' must be a list of strings (found {type(item).__name__})")
        text = str(item).strip()
        if text:
            items.append(text)
    return items


def _file_entry_from_object(item: dict[str, Any], path: Path, key: str) -> str:
    """``{"path": "a.py", "line": 3, "note": "..."}`` -> ``a.py:3 - ...``."""
    name = item.get("path") or item.get("file")
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{path}: key '{key}': a file object needs a 'path' string")
    line = item.get("line")
    note = item.get("note") or item.get("description") or item.get("why") or ""
    ref = f"{name.strip()}:{line}" if isinstance(line, int) and not isinstance(line, bool) else name.strip()
    return f"{ref} - {note}" if isinstance(note, str) and note.strip() else ref


def _summary_items(value: object, path: Path, key: str) -> list[str]:
    if isinstance(value, str):
        return _split_bullets(value)
    return _items_of(value, path, key)


def _approach_text(value: object, path: Path, key: str) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n\n".join(v.strip() for v in value if v.strip())
    if not isinstance(value, str):
        raise UsageError(f"{path}: key '{key}' must be a string")
    return value.strip()


def _priority(value: object, path: Path, key: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"{path}: key '{key}' must be a whole number (0-4)")
    return value


def _split_bullets(text: str) -> list[str]:
    """One item per line; if the text is a bulleted list, lines without a
    bullet continue the item above (wrapped text)."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    bulleted = any(BULLET.match(line.strip()) for line in lines)
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if bulleted and items and not BULLET.match(stripped):
            items[-1] += " " + stripped
        else:
            items.append(BULLET.sub("", stripped, count=1))
    return [item for item in items if item]
