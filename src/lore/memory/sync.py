"""Keep the index in step with the memory files, cheaply.

Every command that reads calls :func:`sync_memories` first: a stat of each
file compared with `files` (mtime, size) finds hand edits, new files and
deletions; only files whose bytes changed are parsed again. A file that fails
to parse is recorded with its error (so it is reported, not silently
dropped) and every other file stays searchable.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import field
from pathlib import Path

from lore import secrets
from lore.errors import NotFound, UsageError, ValidationError
from lore.index.sections import chunk_body
from lore.memory.files import LOCAL_TIERS as _LOCAL_TIERS
from lore.memory.files import Location, location_of, read_memory_file, walk_memory_files
from lore.memory.links import parse_links
from lore.memory.markdown import parse
from lore.memory.model import Memory
from lore.project import Project
from lore.records import datarecord
from lore.storage import ChunkInput, FileState, MemoryRecord, Store

KIND = "memory"
# Bumped when what is indexed of a memory file changes (2: its text redacted, and
# the error patterns capture counts; 3: an ADR's summary is its decision; 4: its
# source, so memories of one session are known as such).
FORMAT = "4"

# Where a memory file lives: (visibility, storage tier, owner agent folder); see :func:`location_of`.


@datarecord
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # every broken file, new or old

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def memory_files(
    project: Project,
    problems: list[tuple[str, str]] | None = None,
    *,
    private_agents: Collection[str] | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, stat) of every memory file: memory/**, local/session/**,
    local/<agent>/** (not local/trash/). Hidden files and folders are skipped;
    entries Lore can't name and folders it can't list go to `problems`
    (see :func:`lore.memory.files.walk_memory_files`).

    Args:
        private_agents: only these agents' private folders (``local/<agent>/``);
            None: every agent's. A team server's store acting as one user's
            database role indexes that user's private memories only.
    """
    root = str(project.root) + os.sep
    tops = [str(project.memory_dir)]
    if problems is not None and project.memory_dir.exists() and not project.memory_dir.is_dir():
        rel = project.rel(project.memory_dir)  # every shared memory is missing: said, not "no memories"
        problems.append(
            (rel, f"{rel}: is a file, not a folder; move it out of the way (Lore makes the folder again)")
        )
    try:
        with os.scandir(project.local_dir) as listing:
            tops += sorted(
                e.path
                for e in listing
                if e.is_dir(follow_symlinks=False)
                and e.name not in ("trash", "cache")
                and (private_agents is None or e.name in _LOCAL_TIERS or e.name in private_agents)
            )
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as err:
        if problems is not None:
            rel = project.rel(project.local_dir)
            problems.append((rel, f"{rel}: cannot list the folder ({err.strerror}); check its permissions"))
    if project.sessions_dir.is_dir():  # summaries of compacted sessions
        try:
            with os.scandir(project.sessions_dir) as listing:
                tops += sorted(
                    os.path.join(e.path, "summaries")
                    for e in listing
                    if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
                )
        except OSError as err:
            if problems is not None:
                rel = project.rel(project.sessions_dir)
                problems.append(
                    (rel, f"{rel}: cannot list the folder ({err.strerror}); check its permissions")
                )
    for top in tops:
        yield from walk_memory_files(top, len(root), problems)


# Storage tiers (seed 001) and where their files live. `location_of` (folder →
# tier, in lore.memory.files) and `folder_of` (tier → folder) are the one place
# that maps the two.
#
#   .lore/memory/**                      durable, shared (committed)
#   .lore/memory/{daily,session}/**      daily / session, shared, when
#                                        [lifecycle] committed_tiers names them
#   .lore/local/{session,daily,archive}/ session / daily / archive, shared (local)
#   .lore/local/<agent>/**               durable, private to <agent>
#   .lore/local/<agent>/{session,daily,archive}/   the same tiers, private
#   .lore/sessions/<id>/summaries/*.md   session-summary (compacted sessions)
STORAGE_TIERS = ("durable", "daily", "session", "archive", "session-summary")
_COMMITTABLE = ("durable", "daily", "session")


def folder_of(project: Project, storage: str, *, agent: str | None = None, private: bool = False) -> Path:
    """The folder new memories of tier `storage` are written to (the inverse of
    :func:`location_of`). Daily and session memories are local unless
    ``[lifecycle] committed_tiers`` names them; archives are always local."""
    if storage not in ("durable", *_LOCAL_TIERS):
        raise UsageError(f"unknown storage tier '{storage}'; use durable, daily, session or archive")
    if private:
        if not agent:
            raise UsageError("a private memory needs an agent; pass --agent NAME (or set LORE_AGENT)")
        base = project.agent_dir(agent)
        if not base.exists():
            _refuse_secret_agent(agent)
        return base if storage == "durable" else base / storage
    if storage == "durable":
        return project.memory_dir
    if storage in committed_tiers(project):
        return project.memory_dir / storage
    return project.local_dir / storage


def _refuse_secret_agent(agent: str) -> None:
    """An agent's name becomes its private folder's name, lower-cased (where a
    token is no longer recognised): never a secret's."""
    secrets.refuse_as_name(
        agent, "agent name", "an agent's name names its private folder, so choose another name"
    )


def committed_tiers(project: Project) -> set[str]:
    """The storage tiers whose files are committed (``[lifecycle] committed_tiers``; durable always)."""
    value = project.setting("lifecycle", "committed_tiers", ["durable"])
    if not isinstance(value, list) or not all(v in _COMMITTABLE for v in value):
        raise ValidationError(
            f"[lifecycle] committed_tiers must be a list of {', '.join(_COMMITTABLE)}; "
            "check .lore/config.toml"
        )
    return {"durable", *value}


def is_committed(rel: str) -> bool:
    """Whether the file at `rel` is one Lore must not change without approval
    (it lives in the committed .lore/memory/ folder)."""
    return rel.startswith(".lore/memory/")


def sync_memories(
    project: Project,
    store: Store,
    *,
    force: bool = False,
    recheck_broken: bool = False,
    private_agents: Collection[str] | None = None,
) -> SyncReport:
    """Bring `store` up to date with the memory files (`private_agents`: see
    :func:`memory_files`). `recheck_broken` reads the broken files again even
    when unchanged (`lore doctor`, `lore index`): a newer Lore may say more, or
    accept them."""
    report = SyncReport()
    known = store.file_states(KIND)
    # An index written by an older format is read again, once: every file, or
    # (from format 3, which lacked only the source) the files that name a source.
    was = store.get_meta("memory_format")
    upgrade = was != FORMAT
    sources_only = upgrade and was == "3"
    force = force or (upgrade and not sources_only and bool(known))
    seen: set[str] = set()
    pending: list[tuple[str, os.stat_result, Location, bool]] = []
    unnamed: list[tuple[str, str]] = []
    for rel, st in memory_files(project, unnamed, private_agents=private_agents):
        seen.add(rel)
        state = known.get(rel)
        if (
            force
            or state is None
            or state.mtime_ns != st.st_mtime_ns
            or state.size != st.st_size
            or (recheck_broken and state.error is not None)
        ):
            pending.append((rel, st, location_of(rel), force))
        elif sources_only and _names_a_source(project.root, rel):
            pending.append((rel, st, location_of(rel), True))
    gone = [rel for rel in known if rel not in seen]
    if pending or gone:
        with store.transaction():
            for rel, st, where, again in pending:
                _sync_one(project, store, rel, st, where, known.get(rel), again, report)
            store.delete_files(gone)
            report.removed.extend(gone)
    if upgrade:
        from lore.secrets import redact

        with store.transaction():
            # Error patterns counted before their text was redacted (capture) go the same way.
            store.rewrite_error_text(lambda text: redact(text)[0])
            store.set_meta("memory_format", FORMAT)
    report.errors = sorted(store.file_errors(KIND) + unnamed)
    return report


def _names_a_source(root: Path, rel: str) -> bool:
    """Whether a memory file may hold a source (``source:``, or 003's
    ``source_work_item_id:``); an unreadable one is read again, to say why."""
    try:
        return b"source" in read_memory_file(root, rel)
    except (NotFound, ValidationError):
        return True


def index_memory(
    store: Store, project: Project, rel: str, raw: bytes, st: os.stat_result, where: Location
) -> Memory:
    """Parse and (re)index one memory file; raises ValidationError if it is broken."""
    sha = hashlib.sha256(raw).hexdigest()
    memory, body_line = load_memory(raw, rel, where)
    redacted(memory)  # a file written by hand may hold a secret: never in the index (`lore doctor` says so)
    file_id = store.put_file(rel, KIND, sha, st.st_mtime_ns, st.st_size)
    record = record_of(memory, rel, body_line)
    record.owner = owner_of(memory, where)
    store.put_memory(file_id, record)
    store.put_chunks(file_id, KIND, memory_chunks(memory, body_line))
    store.put_links(file_id, parse_links(memory.body, memory.extra.get("relations"), rel, body_line))
    if memory.files or memory.applies_to.startswith("file:") or "key files" in memory.body.lower():
        from lore.index import anchors

        anchors.record_new(store, project.root, memory)
    return memory


_TEXT_FIELDS = ("title", "body", "agent", "task", "project", "source", "risk", "task_type", "applies_to")


def redacted(memory: Memory) -> Counter[str]:
    """Redact, in place, every text `memory` holds (title, body, task, scope,
    tags, labels, files, the other named fields and custom fields, keys
    included); returns what was found.

    Memories Lore writes are redacted with this before they are written (an
    import brings whole frontmatters); it also catches what reached a file
    another way (an editor, a merge, a hand-written file). Custom fields are
    replaced, not changed in place (a shallow copy's are its original's).
    """
    from lore.secrets import redact, redact_nested, redact_values

    found: Counter[str] = Counter()
    for name in (*_TEXT_FIELDS, "tags", "labels", "files"):
        value = getattr(memory, name)
        if value and isinstance(value, str | list):
            clean, kinds = redact(value) if isinstance(value, str) else redact_values(value)
            if kinds:
                setattr(memory, name, clean)
                found.update(kinds)
    if memory.extra:
        extra, kinds = redact_nested({k: v for k, v in memory.extra.items() if k != "relations"})
        links = memory.extra.get("relations")
        if isinstance(links, dict):  # a link's name is no config key: its target is read alone
            extra["relations"] = {}
            for name, target in links.items():
                (clean_name, in_name), (clean_target, in_target) = redact(str(name)), redact_nested(target)
                extra["relations"][clean_name] = clean_target
                kinds += in_name + in_target
        elif links is not None:
            extra["relations"], more = redact_nested(links)
            kinds += more
        if kinds:
            memory.extra = {k: extra[k] for k in memory.extra}  # in the file's order
            found.update(kinds)
    return found


def record_of(memory: Memory, rel: str, body_line: int) -> MemoryRecord:
    """The indexed fields of a parsed memory."""
    return MemoryRecord(
        id=memory.id,
        path=rel,
        title=memory.title,
        type=memory.type,
        sector=memory.sector or "semantic",
        tags=list(memory.tags),
        applies_to=memory.applies_to,
        occurred_at=memory.occurred_at,
        content_hash=memory.content_hash,
        agent=memory.agent,
        task=memory.task,
        project=memory.project,
        visibility=memory.visibility,
        storage=memory.storage,
        confidence=memory.confidence,
        files=list(memory.files),
        summary=memory.summary,
        body_line=body_line,
        evidence_count=evidence_count_of(memory.extra.get("evidence_count")),
        superseded_by=str(memory.extra["superseded_by"]) if memory.extra.get("superseded_by") else None,
        is_global=memory.extra.get("is_global") is True,  # 003: shared with every project
        source=memory.source,
    )


def evidence_count_of(value: object) -> int:
    """A frontmatter evidence_count (1 when missing or not a positive whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def load_memory(raw: bytes, rel: str, where: Location) -> tuple[Memory, int]:
    memory, body_line = parse(raw, rel)
    memory.visibility, memory.storage, folder = where
    if folder:
        memory.agent = memory.agent or folder
    memory.validate()
    return memory, body_line


def owner_of(memory: Memory, where: Location) -> str | None:
    """The agent key that may see `memory` (None: everyone): a private
    memory's folder; the agent that wrote a session memory."""
    from lore.project import agent_key

    _visibility, storage, folder = where
    name = folder or (memory.agent if storage in ("session", "session-summary") else None)
    if not name:
        return None
    try:
        return agent_key(name)
    except ValidationError:
        return str(folder) if folder else None


def split_error(path: str, error: str) -> tuple[int | None, str]:
    """(line, message) of an error recorded for `path`; errors are stored as
    users see them: `path[:line]: message`."""
    match = re.match(r"(?::(\d+))?: (.*)", error.removeprefix(path), re.S)
    if match is None:
        return None, error
    return (int(match.group(1)) if match.group(1) else None), match.group(2)


def memory_chunks(memory: Memory, body_line: int) -> list[ChunkInput]:
    keywords = " ".join(
        [*memory.tags, *memory.labels, memory.type, memory.task or "", memory.applies_to.split(":", 1)[-1]]
    )
    return [
        ChunkInput(
            text=text,
            start_line=body_line + a,
            end_line=body_line + b,
            section=section,
            title=memory.title,
            keywords=keywords,
        )
        for section, a, b, text in chunk_body(memory.body)
    ]


def _sync_one(
    project: Project,
    store: Store,
    rel: str,
    st: os.stat_result,
    where: Location,
    state: FileState | None,
    force: bool,
    report: SyncReport,
) -> None:
    """Index one changed file, or record why it can't be: a file that can't be
    read safely (FIFO, device, link out of the project, too big) or parsed,
    or holds a value that can't be indexed, is one error, never a failure of
    the whole sync."""
    raw: bytes | None = None
    try:
        raw = read_memory_file(project.root, rel)
    except NotFound:  # deleted since the walk: the next sync drops it
        return
    except ValidationError as err:
        error = str(err)
    if raw is not None:
        sha = hashlib.sha256(raw).hexdigest()
        if state is not None and state.sha256 == sha and state.error is None and not force:
            store.touch_file(state.id, st.st_mtime_ns, st.st_size)  # touched, not changed
            return
        try:
            index_memory(store, project, rel, raw, st, where)
            (report.updated if state else report.added).append(rel)
            return
        except ValidationError as err:
            error = str(err)
        except (ValueError, OverflowError, RecursionError, UnicodeError, TypeError) as err:
            # A value the parse-time guards let through: still this file's problem alone.
            reason = " ".join(str(err).split())[:120]
            error = f"{rel}: cannot be indexed ({err.__class__.__name__}: {reason}); fix the file"
    if error is not None:  # it quotes the file ("unknown type 'ghp_...'"): shown on pages, in doctor
        error = secrets.redact(error)[0]
    store.put_file(rel, KIND, sha if raw is not None else "", st.st_mtime_ns, st.st_size, error=error)
