"""Keep the index in step with the memory files, cheaply.

Every command that reads calls :func:`sync_memories` first: a stat of each
file compared with `files` (mtime, size) finds hand edits, new files and
deletions; only files whose bytes changed are parsed again. A file that fails
to parse is recorded with its error (so it is reported, not silently
dropped) and every other file stays searchable.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from lore.errors import ValidationError
from lore.index.sections import chunk_body
from lore.index.store import ChunkRow, SQLiteIndex
from lore.memory.markdown import parse
from lore.memory.model import Memory
from lore.project import Project

KIND = "memory"


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)   # every broken file, new or old

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def memory_files(project: Project) -> Iterator[tuple[str, str, str, str | None]]:
    """(relative path, visibility, storage, owner agent) of every memory file:
    memory/**, local/session/**, local/<agent>/** (not local/trash/)."""
    tops = [project.memory_dir]
    if project.local_dir.is_dir():
        tops += [Path(e.path) for e in sorted(os.scandir(project.local_dir), key=lambda e: e.name)
                 if e.is_dir(follow_symlinks=False) and e.name != "trash"]
    for top in tops:
        for rel in _walk(project, top):
            yield (rel, *location_of(rel))


def location_of(rel: str) -> tuple[str, str, str | None]:
    """(visibility, storage, owner agent) implied by where a memory file lives."""
    parts = rel.split("/")
    if parts[:2] == [".lore", "local"] and len(parts) > 3:
        if parts[2] == "session":
            return ("shared", "session", None)
        return ("private", "durable", parts[2])
    return ("shared", "durable", None)


def sync_memories(project: Project, index: SQLiteIndex, *, force: bool = False) -> SyncReport:
    report = SyncReport()
    known = index.file_states(KIND)
    seen: set[str] = set()
    pending: list[tuple[str, os.stat_result, tuple]] = []
    for rel, *where in memory_files(project):
        seen.add(rel)
        try:
            st = os.stat(project.root / rel)
        except FileNotFoundError:        # deleted while we walked
            seen.discard(rel)
            continue
        state = known.get(rel)
        if force or state is None or state.mtime_ns != st.st_mtime_ns or state.size != st.st_size:
            pending.append((rel, st, tuple(where)))
    gone = [rel for rel in known if rel not in seen]
    if pending or gone:
        with index.write():
            for rel, st, where in pending:
                _sync_one(project, index, rel, st, where, known.get(rel), force, report)
            index.delete_files(gone)
            report.removed.extend(gone)
    report.errors = index.file_errors(KIND)
    return report


def index_memory(index: SQLiteIndex, project: Project, rel: str, raw: bytes,
                 st: os.stat_result, where: tuple) -> Memory:
    """Parse and (re)index one memory file; raises ValidationError if it is broken."""
    sha = hashlib.sha256(raw).hexdigest()
    memory, body_line = load_memory(raw, rel, where)
    file_id = index.put_file(rel, KIND, sha, st.st_mtime_ns, st.st_size)
    index.put_memory(file_id, memory, body_line)
    index.put_chunks(file_id, KIND, memory_chunks(memory, body_line))
    return memory


def load_memory(raw: bytes, rel: str, where: tuple) -> tuple[Memory, int]:
    memory, body_line = parse(raw, rel)
    memory.visibility, memory.storage, owner = where
    if owner:
        memory.agent = owner
    memory.validate()
    return memory, body_line


def memory_chunks(memory: Memory, body_line: int) -> list[ChunkRow]:
    keywords = " ".join([*memory.tags, *memory.labels, memory.type, memory.task or "",
                         memory.applies_to.split(":", 1)[-1]])
    return [ChunkRow(text=text, start_line=body_line + a, end_line=body_line + b, section=section,
                     title=memory.title, keywords=keywords)
            for section, a, b, text in chunk_body(memory.body)]


def _sync_one(project, index, rel, st, where, state, force, report) -> None:
    try:
        raw = (project.root / rel).read_bytes()
    except OSError as err:
        raw = None
        error = f"{rel}: cannot read ({err.strerror}); check permissions"
    if raw is not None:
        sha = hashlib.sha256(raw).hexdigest()
        if state is not None and state.sha256 == sha and state.error is None and not force:
            index.touch_file(state.id, st.st_mtime_ns, st.st_size)   # touched, not changed
            return
        try:
            index_memory(index, project, rel, raw, st, where)
            (report.updated if state else report.added).append(rel)
            return
        except ValidationError as err:
            error = str(err)
    index.put_file(rel, KIND, sha if raw is not None else "", st.st_mtime_ns, st.st_size, error=error)


def _walk(project: Project, top: Path) -> Iterator[str]:
    root = str(project.root) + os.sep
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".md") and not name.startswith("."):
                yield (dirpath + os.sep + name)[len(root):].replace(os.sep, "/")


def tags_of(row) -> list[str]:
    return json.loads(row["tags"])
