"""`lore import PATH`: existing knowledge brought in as memories.

Reads a file or a folder (:mod:`.sources` recognises each file's layout),
turns each into memories and writes them through
:class:`~lore.memory.repository.Memories` (secrets redacted, privacy kept):

- dates: the frontmatter's (any seed's name for it), an ADR's ``Date:``
  line, else the date git first saw the file, else its modification time;
- titles: the frontmatter's, the section heading, the first ``# H1``, else the
  file name; keywords: the frontmatter's, else derived from the text;
- ids: the file's own when it has a valid one, else one derived from the
  file's path (in the project when it lies inside, else relative to PATH)
  and section, so importing again finds the same memories: **a second
  import changes nothing**;
- ``--dry-run`` lists what would be created and writes nothing;
- a file that can't be read or parsed is reported in one line and skipped.

Each imported memory records where it came from (``imported_from``).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.atomic import contained
from lore.errors import NotFound, UsageError, ValidationError
from lore.memory import markdown, sync
from lore.memory.files import location_of
from lore.memory.importer.sources import Source, discover, read_text, section_type
from lore.memory.model import (
    ID_RE,
    MEMORY_TYPES,
    SECTORS,
    TASK_TYPES,
    Frontmatter,
    Memory,
    ahead,
    derive_keywords,
    derive_title,
    from_frontmatter,
    parse_time,
)
from lore.memory.values import quoted
from lore.records import Record, datarecord
from lore.storage import MemoryFilter

if TYPE_CHECKING:
    from lore.memory.lifecycle import Lifecycle

_DATE_LINE = re.compile(r"^\s*(?:\*\*)?date(?:\*\*)?\s*:\s*\**\s*(\d{4}-\d{2}-\d{2}[^\s*]*)", re.I | re.M)
_STATUS = re.compile(
    r"^#{1,3}\s*status\s*\n+\s*(?:[-*]\s*)?(\w[\w -]*)|^\s*status\s*:\s*(\w[\w -]*)", re.I | re.M
)
_SUPERSEDED_BY = re.compile(r"superseded by\s*\[?([^\]\n)]+)", re.I)
_ADR_PREFIX = re.compile(r"^(?:adr[-\s]*)?\d{1,5}\s*[-.:)]?\s*", re.I)
_DATE_KEYS = ("occurred_at", "created_at", "createdAt", "completed", "date")


@datarecord
class ImportItem(Record):
    """One memory an import created, found already there, or (dry run) would create."""

    source: str  # file (relative to the path imported) and section: "AGENTS.md#testing"
    layout: str  # note | instructions | adr | chati
    status: str  # created | exists | changed (at its source since it was imported) | would-create
    id: str
    title: str
    type: str
    tier: str
    path: str | None = None  # the memory file (None in a dry run)


@datarecord
class ImportReport(Record):
    """What `lore import` did (or would do)."""

    path: str
    dry_run: bool
    items: list[ImportItem] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per file skipped

    @property
    def created(self) -> int:
        return sum(item.status in ("created", "would-create") for item in self.items)

    @property
    def existing(self) -> int:
        return sum(item.status == "exists" for item in self.items)

    @property
    def changed(self) -> int:
        return sum(item.status == "changed" for item in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "created": self.created,
            "existing": self.existing,
            "changed": self.changed,
        }


@datarecord
class _Planned:
    memory: Memory
    item: ImportItem
    private_agent: str | None = None
    source: Source | None = None


def import_path(
    lifecycle: Lifecycle, named: Path, *, dry_run: bool = False, tier: str = "durable"
) -> ImportReport:
    """Import `named` (a file or folder). See the module doc."""
    project = lifecycle.project
    if tier not in ("durable", "daily", "session"):
        raise UsageError(f"unknown tier '{tier}'; use durable, daily or session")
    path = Path(os.path.expanduser(str(named)))
    if not path.exists():
        raise NotFound(f"nothing at {named}; give a Markdown file or a folder of notes")
    real = path.resolve()
    if real == project.lore_dir.resolve() or project.lore_dir.resolve() in real.parents:
        raise UsageError(f"{named} is Lore's own folder; import notes from elsewhere")
    written = Path(os.path.abspath(path))  # as named, links not followed
    inside = written == project.root.absolute() or project.root.absolute() in written.parents
    if inside and not contained(project.root, path):
        # A file of the project that is a link out of it (a cloned repository's
        # AGENTS.md -> ~/.aws/credentials) would copy that file into a committed memory.
        raise UsageError(
            f"{named} is a link to {real}, outside the project; import that file by its own path if you mean it"
        )
    report = ImportReport(str(named), dry_run)
    sources, report.problems = discover(path, project.root)
    with lifecycle.memories.batch():
        plans: list[_Planned] = []
        for source in sources:
            try:
                plans += _plan(source, tier, lifecycle)
            except (ValueError, ValidationError, OSError) as err:
                says_where = isinstance(err, ValidationError) and bool(err.path)  # "file:line: ..." itself
                report.problems.append(f"skipped {'' if says_where else source.rel + ': '}{_one_line(err)}")
        _link_between(plans)
        for plan in plans:
            try:
                item = _write(lifecycle, plan, dry_run)
            except (ValidationError, OSError) as err:
                report.problems.append(f"skipped {plan.item.source}: {_one_line(err)}")
                continue
            report.items.append(item)
            if item.status == "changed":
                report.problems.append(
                    f"{item.source} changed since it was imported; {item.path} keeps its text: "
                    f"bring the change over (`lore edit {item.id[:8]}`), or `lore rm {item.id[:8]}` "
                    "and import again"
                )
    if not dry_run:
        lifecycle.advance([item.id for item in report.items if item.status == "created"])
    return _shown(report)


def _shown(report: ImportReport) -> ImportReport:
    """The report as it may be shown: a note's file name or a problem's text
    can hold a token ("notes-ghp_….md"), and the report reaches terminals,
    agents' transcripts and JSON readers."""
    from lore import secrets

    report.path = secrets.redact(report.path)[0]
    report.problems = secrets.redact_values(report.problems)[0]
    for item in report.items:
        item.source = secrets.redact(item.source)[0]
    return report


# -- planning -------------------------------------------------------------------------------


def _plan(source: Source, tier: str, lifecycle: Lifecycle) -> list[_Planned]:
    text = read_text(source)
    meta, body = _frontmatter(text, source.rel)
    if source.kind == "instructions":
        return _sections(source, body, tier, lifecycle)
    memory = _memory(source, meta, body, lifecycle)
    if source.kind == "adr":
        _as_adr(memory, meta, body)
    target_tier, private_agent = tier, None
    if source.kind == "chati":
        target_tier = source.tier or "durable"
        if source.scope and source.scope != "shared":
            private_agent = source.scope
    return [_planned(source, memory, target_tier, private_agent, source.rel)]


def _sections(source: Source, body: str, tier: str, lifecycle: Lifecycle) -> list[_Planned]:
    from lore.index.sections import section_id, split_sections
    from lore.memory.capture.instructions import MD_BEGIN, MD_END
    from lore.secrets import redact

    body = re.sub(re.escape(MD_BEGIN) + r".*?" + re.escape(MD_END), "", body, flags=re.S)
    when = _file_date(source.path, lifecycle)
    name = source.path.name
    out = []
    seen: dict[str, int] = {}
    for section in split_sections(body):
        lines = section.text.split("\n")
        heading = lines[0].lstrip("#").strip() if lines[0].startswith("#") else ""
        content = "\n".join(lines[1:] if heading else lines).strip()
        if len(content) < 10:
            continue
        title = f"{heading} ({name})" if heading else f"{name}: {derive_title(content)}"
        key = section.section
        clean_heading, found = redact(heading)
        if found:  # the slug lower-cases the heading: a token in it would no longer be recognised
            key = section_id(clean_heading)
        seen[key] = seen.get(key, 0) + 1
        anchor = key if seen[key] == 1 else f"{key}-{seen[key]}"
        memory = Memory(
            title=title[:200],
            body=content + "\n",
            type=section_type(heading or content[:80]),
            occurred_at=when,
            id=_derived_id(f"{source.rel}#{anchor}"),
            labels=["imported", markdown.slugify(name)],
        )
        out.append(_planned(source, memory, tier, None, f"{source.rel}#{anchor}"))
    return out


def _memory(source: Source, meta: Frontmatter, body: str, lifecycle: Lifecycle) -> Memory:
    meta = dict(meta)
    kind = meta.get("type")
    if isinstance(kind, str) and kind not in (*MEMORY_TYPES, *SECTORS, *TASK_TYPES):
        meta.pop("type")  # e.g. 004's own types: kept as a label
        meta.setdefault("labels", [])
        if isinstance(meta["labels"], list):
            meta["labels"].append(kind)
    if not any(meta.get(k) is not None for k in _DATE_KEYS):
        meta["occurred_at"] = _adr_date(body) if source.kind == "adr" else None
        if meta["occurred_at"] is None:
            meta["occurred_at"] = _file_date(source.path, lifecycle)
    if not body.strip():
        raise ValueError("no text to remember")
    memory = from_frontmatter(meta, body.strip() + "\n", path=source.rel)
    if ahead(memory.occurred_at, datetime.now(UTC)):  # as `lore add` refuses it
        raise ValidationError(
            f"{quoted(memory.occurred_at)} is in the future; give when it happened (at most a day ahead)",
            field="occurred_at",
        )
    memory.title = memory.title or source.path.stem
    if "id" not in meta or not isinstance(meta.get("id"), str) or not ID_RE.match(str(meta["id"])):
        memory.id = _derived_id(source.rel)
    return memory


def _as_adr(memory: Memory, meta: Frontmatter, body: str) -> None:
    memory.type, memory.sector = "decision", "episodic"
    memory.title = _ADR_PREFIX.sub("", memory.title).strip() or memory.title
    status_match = _STATUS.search(body)
    status = (status_match.group(1) or status_match.group(2)).strip().lower() if status_match else ""
    # dict.fromkeys: a memory file of an imported ADR (another project's .lore/memory) has them already
    memory.labels = list(dict.fromkeys([*memory.labels, "adr", *([status.split()[0]] if status else [])]))
    if status.startswith("proposed"):
        memory.confidence = min(memory.confidence, 0.7)
    if status.startswith(("superseded", "deprecated", "rejected")):
        by = _SUPERSEDED_BY.search(body)
        memory.extra["superseded_by"] = by.group(1).strip() if by else status


def _planned(source: Source, memory: Memory, tier: str, private_agent: str | None, key: str) -> _Planned:
    memory.extra["imported_from"] = key
    sync.redacted(memory)  # every field the file will hold: a frontmatter brings any
    memory.extra["imported_hash"] = memory.content_hash  # to tell a change at the source from one here
    memory.tags = memory.tags or derive_keywords(memory.title, memory.body)
    memory.check_project_paths()  # files / file: scope name the project's files, as `lore add` asks
    memory.validate()
    item = ImportItem(key, source.kind, "would-create", memory.id, memory.title, memory.type, tier)
    return _Planned(memory, item, private_agent, source)


# -- writing --------------------------------------------------------------------------------------


def _write(lifecycle: Lifecycle, plan: _Planned, dry_run: bool) -> ImportItem:
    memories = lifecycle.memories
    item = plan.item
    known = _existing(lifecycle, plan.memory)
    if known is not None:
        _refuse_another_memorys_id(lifecycle, plan, *known)
        changed = _changed_at_source(lifecycle, plan, *known)
        item.status, item.id, item.path = "changed" if changed else "exists", known[0], known[1]
        item.tier = location_of(known[1])[1]  # where it is, not where this import would put it
        return item
    if dry_run:
        return item
    folder = sync.folder_of(
        lifecycle.project, item.tier, agent=plan.private_agent, private=plan.private_agent is not None
    )
    result = memories.put(plan.memory, folder)
    item.status = "created" if result.created else "exists"
    item.id, item.path = result.id, result.path
    return item


def _refuse_another_memorys_id(lifecycle: Lifecycle, plan: _Planned, memory_id: str, path: str) -> None:
    """A memory found by the id the source gives is this source imported before
    (or the same text); any other memory with that id is not it: the note is
    skipped, saying so, instead of being reported as there already."""
    if memory_id != plan.memory.id:
        return  # found by its text
    try:
        there = lifecycle.memories.load(path)
    except (ValidationError, OSError):
        return
    if there.extra.get("imported_from") == plan.item.source or there.content_hash == plan.memory.content_hash:
        return
    raise ValidationError(
        f"its id {memory_id} is another memory's ({path}); remove the id from its frontmatter "
        "to import it as a new memory"
    )


_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]+)\]\((?P<target>[^)\s#]+\.md)(?:#[^)\s]*)?\)")


def _link_between(plans: list[_Planned]) -> None:
    """Links between the files of one import (an ADR's "Superseded by [3. Use
    Postgres](0003-use-postgres.md)") name the memories those files become, by
    id: relative to the folder imported, they named nothing once the memories
    lived in `.lore/memory/`. An ADR's `superseded_by` becomes that id too."""
    one_each: dict[Path, list[str]] = {}
    for plan in plans:
        if plan.source is not None:
            one_each.setdefault(plan.source.path, []).append(plan.memory.id)
    ids = {path: found[0] for path, found in one_each.items() if len(found) == 1}  # sections: a file is many
    for plan in plans:
        if plan.source is None:
            continue
        folder = plan.source.path.parent

        def by_id(match: re.Match[str], folder: Path = folder, own: str = plan.memory.id) -> str:
            target = ids.get(Path(os.path.normpath(folder / match.group("target"))))
            if target is None or target == own:
                return match.group(0)
            return f"[[{target}|{match.group('text')}]]"

        memory = plan.memory
        body = _outside_code(memory.body, lambda text: _LINK.sub(by_id, text))
        successor = memory.extra.get("superseded_by")
        if isinstance(successor, str):
            named = re.search(r"superseded by\s*\[\[([^|\]]+)\|", body, re.I)
            if named:
                memory.extra["superseded_by"] = named.group(1)
        if body != memory.body:
            memory.body = body


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """`text` with `change` applied to what is not inside a fenced code block."""
    parts = re.split(r"(^```.*?^```[^\n]*$)", text, flags=re.M | re.S)
    return "".join(part if i % 2 else change(part) for i, part in enumerate(parts))


def _changed_at_source(lifecycle: Lifecycle, plan: _Planned, memory_id: str, path: str) -> bool:
    """Has the source changed since it was imported as the memory found (its
    text is neither what was imported nor what the memory holds now)? An
    import never overwrites a memory, which may have been edited since: the
    person brings the change over."""
    if memory_id != plan.memory.id:
        return False  # found by its text: the same
    try:
        there = lifecycle.memories.load(path)
    except (ValidationError, OSError):
        return False
    if there.extra.get("imported_from") != plan.item.source:
        return False
    now = str(plan.memory.extra.get("imported_hash") or plan.memory.content_hash)
    # The text as it was imported (older imports did not say: the memory's own).
    imported = str(there.extra.get("imported_hash") or there.content_hash)
    return now not in (imported, there.content_hash)


def _existing(lifecycle: Lifecycle, memory: Memory) -> tuple[str, str] | None:
    store = lifecycle.store
    for flt in (
        MemoryFilter(ids=[memory.id], include_private=True),
        MemoryFilter(content_hash=memory.content_hash, include_private=True),
    ):
        for record in store.memories(flt, limit=5):
            if flt.ids or record.occurred_at == memory.occurred_at:
                return record.id, record.path
    return None


# -- helpers ---------------------------------------------------------------------------------------


def _frontmatter(text: str, rel: str) -> tuple[Frontmatter, str]:
    """(fields, body): a leading ``---`` YAML block, if there is one (read as memory files are)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta, end = markdown.frontmatter_of(lines, rel)
    return meta, "\n".join(lines[end + 1 :]).strip() + "\n"


def _adr_date(body: str) -> str | None:
    found = _DATE_LINE.search(body)
    if not found:
        return None
    try:
        return parse_time(found.group(1))
    except ValidationError:
        return None


def _file_date(path: Path, lifecycle: Lifecycle) -> str:
    """When git first saw the file, else its modification time."""
    try:
        out = subprocess.run(
            ["git", "log", "--follow", "--format=%aI", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=20,
        )
        dates = out.stdout.split() if out.returncode == 0 else []
        if dates:
            return parse_time(dates[-1])
    except (OSError, subprocess.SubprocessError, ValidationError):
        pass
    return parse_time(datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).replace(microsecond=0))


def _derived_id(key: str) -> str:
    """A UUID v4-shaped id fixed by the source: importing again finds the same memory."""
    digest = hashlib.sha256(f"lore-import:{key}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())


__all__ = ["ImportItem", "ImportReport", "import_path"]
