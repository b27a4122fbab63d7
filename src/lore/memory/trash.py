"""Soft delete: removed memories wait in `.lore/local/trash/` until `lore gc`.

Each removed file is moved (atomic rename) next to a small JSON note saying
where it came from and when, so `lore restore` can put it back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lore.errors import NotFound, ValidationError, unchanged
from lore.memory.markdown import move_new, write_atomic
from lore.memory.model import format_time, parse_time
from lore.project import Project
from lore.records import Record, datarecord, internal


@datarecord
class TrashEntry(Record):
    id: str
    original: str  # path relative to the project root
    deleted_at: str
    file: Path = internal()  # the trashed Markdown file

    @property
    def trash_path(self) -> str:
        return self.file.name

    def to_dict(self) -> dict[str, Any]:
        data = {**super().to_dict(), "trash_path": self.trash_path}
        try:  # notes written before deletion times were `...Z` say `+00:00`
            data["deleted_at"] = parse_time(self.deleted_at, field_name="deleted_at")
        except ValidationError:
            pass
        return data


def trash(project: Project, rel: str, memory_id: str) -> TrashEntry:
    from lore.memory.lifecycle.clock import system_now

    now = system_now()  # (LORE_NOW in a replay, as the lifecycle and `gc` read time)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")  # a name unique on disk
    name = f"{stamp}-{Path(rel).name}"
    target = project.trash_dir / name
    note = {"id": memory_id, "original": rel, "deleted_at": format_time(now.replace(microsecond=0))}
    project.check_folder(project.trash_dir)
    try:
        write_atomic(target.with_suffix(".json"), json.dumps(note, indent=2) + "\n")
        try:
            os.replace(project.root / rel, target)
        except OSError:  # the file stays where it was: a note for it would restore nothing
            target.with_suffix(".json").unlink(missing_ok=True)
            raise
    except OSError as err:
        raise unchanged(err, f"{rel} can't be moved to the trash") from None
    return TrashEntry(memory_id, rel, note["deleted_at"], target)


def entries(project: Project) -> list[TrashEntry]:
    out: list[TrashEntry] = []
    if not project.trash_dir.is_dir():
        return out
    for note in sorted(project.trash_dir.glob("*.json")):
        entry = _entry(note)
        if entry is not None and entry.file.is_file():  # no file: a purge cut short, deleted by hand
            out.append(entry)
    return out


def unrestorable(project: Project) -> list[str]:
    """Trashed memory files (project paths) whose note is missing or damaged:
    `lore restore` cannot know where they came from, so it does not list them."""
    if not project.trash_dir.is_dir():
        return []
    return [
        project.rel(file)
        for file in sorted(project.trash_dir.glob("*.md"))
        if file.is_file() and _entry(file.with_suffix(".json")) is None
    ]


def _entry(note: Path) -> TrashEntry | None:
    """The entry a note describes; None for a note that is missing, unreadable or
    not as Lore writes them (edited, damaged: restoring it would put a file anywhere)."""
    try:
        data = json.loads(note.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    memory_id, original, deleted_at = (data.get(name, "") for name in ("id", "original", "deleted_at"))
    if not all(isinstance(v, str) for v in (memory_id, original, deleted_at)) or not _memory_place(original):
        return None
    return TrashEntry(memory_id, original, deleted_at, note.with_suffix(".md"))


def _memory_place(rel: str) -> bool:
    """Whether `rel` is a place a memory file lives: under `.lore/memory/`,
    `.lore/local/` (not its trash) or `.lore/sessions/`, without `..`."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\\" in rel or len(parts) < 3:
        return False
    return parts[:2] in ([".lore", "memory"], [".lore", "sessions"]) or (
        parts[:2] == [".lore", "local"] and parts[2] != "trash"
    )


def find(project: Project, key: str, *, visible: Callable[[str], bool] | None = None) -> TrashEntry:
    """The newest trash entry whose id, id prefix or file name matches `key`
    (and whose original place `visible` accepts)."""
    matches = [
        e
        for e in entries(project)
        if (visible is None or visible(e.original))
        and (
            key in (e.id, e.file.name, e.file.stem)
            or (len(key) >= 4 and e.id.startswith(key))
            or Path(e.original).name == key
            or e.original == key
        )
    ]
    if not matches:
        raise NotFound(f"nothing in the trash matches '{key}'; see `lore restore --list`")
    return matches[-1]


def restore(project: Project, entry: TrashEntry) -> str:
    """Move a trashed file back; never overwrites a file now at its old path."""
    original = project.root / entry.original
    project.check_folder(original.parent)
    try:
        target = move_new(entry.file, original.parent, original.name)
    except OSError as err:
        raise unchanged(err, f"{entry.file.name} can't be restored to {entry.original}") from None
    entry.file.with_suffix(".json").unlink(missing_ok=True)
    return project.rel(target)


def purge_entry(entry: TrashEntry) -> None:
    """Delete one trash entry now (its file and its note)."""
    entry.file.unlink(missing_ok=True)
    entry.file.with_suffix(".json").unlink(missing_ok=True)


def purge(
    project: Project,
    retention_days: float,
    now: datetime | None = None,
    *,
    visible: Callable[[str], bool] | None = None,
) -> list[TrashEntry]:
    """Delete trash entries older than the retention period (those whose
    original place `visible` accepts)."""
    from lore.memory.lifecycle.clock import system_now

    cutoff = (now or system_now()) - timedelta(days=retention_days)
    purged = []
    for entry in entries(project):
        if visible is not None and not visible(entry.original):
            continue
        try:
            deleted = datetime.fromisoformat(entry.deleted_at)
        except ValueError:
            continue
        if deleted <= cutoff:
            purge_entry(entry)
            purged.append(entry)
    return purged
