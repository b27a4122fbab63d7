"""Health of a project: counts (stats), freshness (status) and every problem with a fix (doctor)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from lore.records import Record, datarecord

if TYPE_CHECKING:
    from datetime import datetime

    from lore.embed.runtime import EmbeddingRuntime
    from lore.index.freshness import CodeIndex
    from lore.memory.repository import Memories
    from lore.project import Project
    from lore.storage import MemoryRecord


@datarecord
class Problem(Record):
    level: str  # error | warning
    where: str  # path[:line]
    message: str


def stats(
    memories: Memories,
    embedding: EmbeddingRuntime,
    tiers_of: Callable[[list[str]], dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Counts for an overview: memories by type, tier (`tiers_of`: the attention
    tiers the lifecycle keeps) and storage, links, staleness, the last update,
    the index and its vectors. The caller brings the index up to date first."""
    from collections import Counter

    store = memories.store
    counts = store.counts()
    records = store.memories(memories.filter())
    tiers: Counter[str] = Counter({"hot": 0, "warm": 0, "cold": 0})
    if tiers_of is not None:
        tiers.update(tiers_of([r.id for r in records]).values())
    links = store.links(memories.filter())
    last = max((r.occurred_at for r in records), default=None)

    def by(
        name: str,
    ) -> dict[str, int]:  # the memories this agent may see: no count of another's private ones
        found = Counter(getattr(r, name) or "" for r in records)
        return dict(sorted(found.items(), key=lambda item: (-item[1], item[0])))

    return {
        "project": str(memories.project.root),
        "backend": store.describe(),
        "memories": len(records),
        "broken_files": len(memories.broken()),
        "chunks": counts.chunks,
        "code_files": counts.code_files,
        "code_chunks": counts.code_chunks,
        "commits": counts.commits,
        "by_type": by("type"),
        "by_visibility": by("visibility"),
        "by_storage": by("storage"),
        "by_tier": dict(tiers),
        "links": len(links),
        "broken_links": len(memories.graph.broken()) if links else 0,
        "stale": len(store.stale_reasons([r.id for r in records])) if records else 0,
        "last_memory_at": last,
        "trash": len(memories.trash_entries()),
        "index_bytes": store.size_bytes(),
        **embedding.status(store),
    }


def status(
    memories: Memories,
    code: CodeIndex,
    embedding: EmbeddingRuntime,
    *,
    notice: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """How fresh the index is: indexed commit vs HEAD, changed files, pending vectors."""
    from lore.errors import DiskFull, as_lore_error
    from lore.index import githooks
    from lore.memory.sync import SyncReport

    store = memories.store
    changes = code.changes()
    try:
        report = memories.sync()
    except Exception as err:  # a full disk: status reads the index as it stands (a read needs no space)
        problem = as_lore_error(err)
        if not isinstance(problem, DiskFull):
            raise
        report = SyncReport(errors=store.file_errors("memory"))
        if notice is not None:
            notice(f"{str(problem).split(';')[0]}: memory files changed since the last sync are not counted")
    counts = store.counts()
    return {
        "project": str(memories.project.root),
        **changes,
        "code_files": counts.code_files,
        "code_chunks": counts.code_chunks,
        "commits": counts.commits,
        # What this agent may see: neither another's private memories nor their broken files.
        "memories": store.memory_page(memories.filter(), limit=0)[0],
        "broken_memory_files": [p for p, _ in memories.seen(report).errors],
        # A git hook's update under way: "stale" right after a commit is being seen to.
        "updating": githooks.update_running(memories.project.local_dir),
        **embedding.status(store),
    }


def layout_problems(project: Project) -> list[Problem]:
    """Lore's folders that are something else (a file, a broken link): memories
    there can be neither read nor written."""
    problems = [
        Problem(
            "error",
            rel,
            f"links to {real}, outside the project: Lore neither reads nor writes memories there; "
            "make it a folder inside the project",
        )
        for rel, real in project.outside_folders()
    ]
    ignore = project.lore_dir / ".gitignore"
    if not ignore.is_file() or "local/" not in ignore.read_text(encoding="utf-8", errors="replace"):
        problems.append(
            Problem(
                "warning",
                ".lore/.gitignore",
                "is missing or no longer names local/ and index.db (a checkout of a branch from before "
                "Lore?): private memories and the index could be committed; run `lore init` to restore it",
            )
        )
    for folder in (project.memory_dir, project.local_dir):
        rel = folder.relative_to(project.root).as_posix()
        if folder.is_symlink() and not folder.exists():
            problems.append(
                Problem("error", rel, "is a link to nothing; remove it (Lore makes the folder again)")
            )
        elif folder.exists() and not folder.is_dir():
            problems.append(
                Problem(
                    "error",
                    rel,
                    "is a file, not a folder; move it out of the way (Lore makes the folder again)",
                )
            )
    return problems


# A write's temporary file (lore.atomic) younger than this may be a write in progress.
_INTERRUPTED_AFTER_SECONDS = 60


def interrupted_writes(project: Project) -> list[Problem]:
    """Temporary files of writes killed before they finished (lore.atomic names them
    ``.<name>.<random>.tmp``): nothing reads them, and in `.lore/memory/` they would be
    committed with everything else."""
    import time

    problems = []
    now = time.time()
    for folder in (project.memory_dir, project.local_dir, project.sessions_dir):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.rglob(".*.tmp")):
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > _INTERRUPTED_AFTER_SECONDS:
                problems.append(
                    Problem(
                        "warning",
                        path.relative_to(project.root).as_posix(),
                        "left by a write that was interrupted (a crash or kill); Lore never reads it: "
                        "delete it (if a memory you wrote is missing, its text is in this file)",
                    )
                )
    return problems


# Markdown a person may save by another name (Windows' NOTES.MD, an editor's .markdown): never read.
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")


def unread_markdown(project: Project) -> list[Problem]:
    """Markdown files in the memory folders whose name does not end in `.md`
    (`NOTES.MD`, `auth.markdown`): Lore reads only `*.md`, so such a memory was
    neither indexed nor reported anywhere; likewise the memories under a link
    to a folder (Lore follows none)."""
    problems = []
    for folder in (project.memory_dir, project.local_dir):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for here, dirs, files in os.walk(folder):  # links to folders are listed, never entered
            top = here == str(folder)
            dirs[:] = [d for d in dirs if not d.startswith(".") and not (top and d in _LORES_OWN)]
            for name in sorted(dirs):
                path = os.path.join(here, name)
                if os.path.islink(path):
                    rel = os.path.relpath(path, project.root).replace(os.sep, "/")
                    problems.append(
                        Problem(
                            "warning",
                            rel,
                            f"not read: a link to the folder {os.path.realpath(path)}; Lore follows no "
                            "linked folders: move the memories here",
                        )
                    )
            for name in sorted(files):
                if (
                    name.startswith(".")
                    or name.endswith(".md")
                    or not name.lower().endswith(_MARKDOWN_SUFFIXES)
                ):
                    continue
                path = os.path.join(here, name)
                if not os.path.isfile(path):
                    continue
                rel = os.path.relpath(path, project.root).replace(os.sep, "/")
                stem = name.rsplit(".", 1)[0]
                problems.append(
                    Problem(
                        "warning",
                        rel,
                        f"not read: Lore reads only files ending in .md; rename it to {stem}.md",
                    )
                )
    return problems


# Folders of .lore/local/ that hold no memories to read (the trash, caches).
_LORES_OWN = frozenset({"trash", "cache"})


def duplicate_ids(records: list[MemoryRecord], shown: Collection[str] | None = None) -> list[Problem]:
    """The memories (in path order) whose id an earlier one has already: two copies
    of one memory (a copied file, a `lore mv` cut short), or two memories sharing
    an id; each an error saying which to delete or renumber. An earlier one not
    in `shown` (another agent's private memory) is not named."""
    problems: list[Problem] = []
    seen: dict[str, MemoryRecord] = {}
    for record in records:
        first = seen.setdefault(record.id, record)
        if first is not record:
            if shown is not None and first.path not in shown:
                other, fix = (
                    "a memory in another agent's private folder",
                    "give this one a new id (e.g. `uuidgen`)",
                )
            else:
                other = first.path
                fix = (
                    f"both hold the same memory: delete one (`rm {record.path}`)"
                    if first.content_hash == record.content_hash
                    else "give one of them a new id (e.g. `uuidgen`)"
                )
            problems.append(Problem("error", record.path, f"id {record.id} is also used by {other}; {fix}"))
    return problems


def doctor(memories: Memories) -> list[Problem]:
    """Every problem with the files and the index, each with what to do."""
    import copy
    from datetime import UTC, datetime

    from lore.errors import DiskFull, ValidationError, as_lore_error, is_busy
    from lore.memory.model import UUID4_RE
    from lore.memory.sync import SyncReport, redacted, split_error
    from lore.secrets import describe, redact
    from lore.storage import MemoryFilter

    now = datetime.now(UTC)
    store = memories.store
    problems: list[Problem] = layout_problems(memories.project)
    problems += interrupted_writes(memories.project)
    problems += [
        Problem(
            "warning",
            path,
            "its trash note is missing or damaged, so `lore restore` can't put it back; "
            "move it back by hand (e.g. into .lore/memory/) or delete it",
        )
        for path in memories.unrestorable()
    ]
    problems += unread_markdown(memories.project)
    try:
        report = memories.sync(recheck_broken=True)  # what this Lore says of them now
    except Exception as err:  # busy, or a full disk: the files' latest changes are not read; say so, go on
        if not is_busy(err) and not isinstance(as_lore_error(err), DiskFull):
            raise
        problems.append(
            Problem("warning", store.describe(), f"memory files not read again: {as_lore_error(err)}")
        )
        report = memories.seen(SyncReport(errors=store.file_errors("memory")))
    laid_out = {p.where for p in problems}
    for path, error in report.errors:
        if path in laid_out:
            continue  # a folder that is a file: said once, above
        line, message = split_error(path, error)
        problems.append(Problem("error", path, f"line {line}: {message}" if line else message))
    records = store.memories(memories.filter(), order="path")  # never another agent's private ones
    # An id shared with another agent's private memory is a problem too: counted
    # among those not shown when the private one is the later, unnamed otherwise.
    everyone = store.memories(MemoryFilter(include_private=True), order="path")
    problems += duplicate_ids(everyone, shown={record.path for record in records})
    for record in records:
        path, mid = record.path, record.id
        if not UUID4_RE.match(mid):
            problems.append(
                Problem(
                    "warning",
                    path,
                    f"id '{mid}' is not a UUID v4 (what Lore writes); fine to keep",
                )
            )
        if not record.tags:
            problems.append(
                Problem(
                    "warning", path, "no keywords; add `keywords: [...]` so search and recall can find it"
                )
            )
        if _ahead(record.occurred_at, now):  # written by hand: `lore add` and edits refuse it
            problems.append(
                Problem(
                    "warning",
                    path,
                    f"occurred_at {record.occurred_at} is in the future: it sorts first and never ages; "
                    "give when it happened",
                )
            )
        try:
            memory = memories.load(path)
        except ValidationError as err:  # unreadable since it was indexed (a chmod keeps its time)
            if path not in laid_out and all(p.where != path for p in problems):
                problems.append(Problem("error", path, err.reason))
            continue
        except Exception:
            continue
        try:  # written by hand: `lore add` and edits refuse such a path
            memory.check_project_paths()
        except ValidationError as err:
            problems.append(
                Problem("warning", path, f"field '{err.field}': {err.reason}; nothing outside it is read")
            )
        found = redacted(copy.copy(memory))  # what the index keeps instead
        if found:
            problems.append(
                Problem(
                    "warning",
                    path,
                    f"holds {describe(found)} in clear; the index keeps it redacted, but the file is "
                    f"committed with it: remove it (`lore edit {mid[:8]}`) and rotate the secret",
                )
            )
        if memory.declared_hash and memory.declared_hash != memory.content_hash:
            problems.append(
                Problem(
                    "warning",
                    path,
                    f"content_hash {memory.declared_hash} does not match the "
                    f"body ({memory.content_hash}); it was edited by hand — harmless, "
                    "`lore edit` rewrites it",
                )
            )
    for link in memories.graph.broken():
        where = f"{link.source_path}:{link.line}" if link.line else link.source_path
        written = f"[[{link.target}]]" if link.kind == "name" else f"({link.target})"
        via = "" if link.relation == "links_to" else f" ({link.relation})"
        problems.append(
            Problem(
                "warning",
                where,
                f"link {written}{via} names no memory; correct the title, id or file name "
                "(`lore search` finds it) or remove the link",
            )
        )
    problems += misspelt_relations(memories)
    for memory_id, reasons in store.stale_reasons().items():
        paths = store.memory_paths(memory_id)
        problems.append(
            Problem(
                "warning",
                paths[0] if paths else memory_id,
                f"stale: {'; '.join(reasons)}; check it, then `lore verify {memory_id[:8]}`",
            )
        )
    try:
        ok = store.check()
    except Exception as err:  # busy or read-only: not checked, and no damage found
        known = as_lore_error(err)
        if known is None:
            raise
        problems.append(Problem("warning", store.describe(), f"index not checked: {known}"))
    else:
        if ok != "ok":
            problems.append(
                Problem("error", store.describe(), f"index check failed ({ok}); run `lore index --force`")
            )
    # A file named by hand may hold a secret: every line names it redacted.
    return [Problem(p.level, redact(p.where)[0], p.message) for p in _seen_by(memories, problems)]


def _ahead(stored: str, now: datetime) -> bool:
    """A memory's time more than a day after `now` (False for one that cannot be read)."""
    from lore.memory.model import ahead

    try:
        return ahead(stored, now)
    except ValueError:
        return False


def _seen_by(memories: Memories, problems: list[Problem]) -> list[Problem]:
    """`problems` without those naming a file of another agent's private
    folder (a memory, a temporary file, a link, a `.mdown`) or a session
    memory another agent wrote: a file's name says what it is about. How many
    were left out is said (each agent sees its own with `--agent`). Problems
    elsewhere (folders, the index, the trash, the cache) are kept."""

    def whose(where: str) -> str | None:
        path, _, line = where.rpartition(":")
        path = path if line.isdigit() else where
        parts = path.split("/")
        if parts[:2] == [".lore", "local"]:
            return path if len(parts) >= 4 and parts[2] not in _LORE_LOCAL else None
        return path if parts[0] == ".lore" and path.lower().endswith((".md", ".markdown")) else None

    named = {path for p in problems if (path := whose(p.where))}
    seen = memories.visible_paths(named)
    shown = [p for p in problems if (path := whose(p.where)) is None or path in seen]
    if len(shown) < len(problems):
        hidden = len(problems) - len(shown)
        shown.append(
            Problem(
                "warning",
                ".lore/local/",
                f"{hidden} problem{'' if hidden == 1 else 's'} in other agents' private memories not shown "
                "(an agent sees its own: `lore --agent NAME doctor`)",
            )
        )
    return shown


# Folders of .lore/local/ that are Lore's own, not an agent's.
_LORE_LOCAL = frozenset({"trash", "cache"})


def misspelt_relations(memories: Memories) -> list[Problem]:
    """Relation names written by hand that are near misses of a known relation
    (``supercedes``): stored as custom relations, so Lore does not act on them."""
    from lore.memory.links import near_miss, typo_advice

    problems: list[Problem] = []
    seen: set[tuple[str, str, int | None]] = set()
    for link in memories.store.links(memories.filter()):
        known = near_miss(link.relation)
        if known is None or (link.source_path, link.relation, link.line) in seen:
            continue
        seen.add((link.source_path, link.relation, link.line))
        where = f"{link.source_path}:{link.line}" if link.line else link.source_path
        problems.append(
            Problem(
                "warning",
                where,
                f"relation '{link.relation}' looks like a typo: {typo_advice(link.relation, known)} "
                "Lore acts only on the relations it knows (a custom name further from them is fine)",
            )
        )
    return problems
