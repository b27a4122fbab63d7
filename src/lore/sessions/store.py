"""The session store: recorded agent sessions under ``.lore/sessions/<session-id>/``.

::

    session.jsonl        the live events, one per line (append-only; see lore.sessions.log)
    metadata.json        004's metadata: id, channelId, userId, messageCount, tokenCount,
                         createdAt, updatedAt, status (+ Lore's bookkeeping)
    .owner               the owning agent again ("" shared), kept if metadata.json is damaged
    .ended               when the session ended (written by end), kept likewise
    archive/             compacted events, verbatim, gzip: 000001-000300.jsonl.gz
    summaries/           one Lore memory per compacted range: 000001-000300.md
    .lock, .compact.lock fcntl locks (appenders; one compactor at a time)

The context view (:meth:`SessionStore.context`) is the summaries of the
archived ranges followed by the live events, oldest first, cut to the hard
limit. Crossing the soft limit on append compacts proactively: everything
before the protected recent tail is summarised and archived (never deleted).

Readers take no lock. They read ``session.jsonl`` first and the archive
folder second; compaction writes the archive and summary before it rewrites
the log, so a reader never misses events: anything the log still holds at or
below the newest archived id is left out as archived.
"""

from __future__ import annotations

import builtins
import json
import os
import secrets
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from lore import atomic
from lore.errors import Conflict, LoreError, NotFound, ProviderError, UsageError, ValidationError
from lore.index.tokens import count_tokens
from lore.locking import file_lock
from lore.memory.markdown import write_atomic
from lore.memory.model import now_iso
from lore.project import Project
from lore.safe_read import read_regular
from lore.secrets import redact, refuse_as_name
from lore.sessions import archive, log
from lore.sessions import events as ev
from lore.sessions.config import SessionLimits
from lore.sessions.records import (
    AppendResult,
    CompactionResult,
    ImportResult,
    SessionContext,
    SessionEvent,
    SessionInfo,
)

if TYPE_CHECKING:
    from lore.sessions.events import RawEvent
    from lore.sessions.summary import TextSummarizer

#: ``metadata.json``: 004's fields (camelCase) and Lore's bookkeeping, as JSON
#: (counters checked on read, see :data:`_COUNTERS`).
Meta: TypeAlias = dict[str, Any]
#: Where the last import of a transcript stopped: path, head digest, offset, format.
Cursor: TypeAlias = dict[str, Any]

LOG = "session.jsonl"
META = "metadata.json"
# The owning agent again ("" for a shared session), written once: metadata.json is
# rewritten on every append, and a damaged one must not make a private session shared.
OWNER = ".owner"
ENDED = ".ended"
# The last archived event whose range 001's capture has taken in: a compaction
# archives first and captures after (another step, in the service), so a
# process killed in between leaves a range the next call captures.
CAPTURED = ".captured"
_UNKNOWN = object()  # no readable metadata and no owner file (a session of an older Lore)
STATUSES = ("active", "ended")


class SessionStore:
    """Start, append to, read, compact and import agent sessions of one project.

    Args:
        project: the project (its `[sessions]` settings give the limits and
            the summary provider).
        agent: the acting agent, when `own_only`.
        own_only: the store is one agent's view (what :class:`lore.service.Lore`
            opens): it sees and writes its own sessions and those without an
            agent; another agent's session answers like a missing one. Without
            it the store sees every session (tests, tools working on the files).
    """

    def __init__(self, project: Project, *, agent: str | None = None, own_only: bool = False):
        self.project = project
        self.agent = agent
        self.own_only = own_only
        self.root = project.sessions_dir
        table = project.settings.get("sessions") or {}
        self.limits = SessionLimits.from_settings(table)
        self._summary_settings = table.get("summary") if isinstance(table, dict) else None
        self._summarizer: TextSummarizer | None = None
        self._summarizer_loaded = False
        self.notices: builtins.list[str] = []

    # -- writing ---------------------------------------------------------------

    def start(
        self, session_id: str | None = None, *, agent: str | None = None, user: str | None = None
    ) -> SessionInfo:
        """Create a session (a new id unless one is given).

        Raises:
            Conflict: a session with that id exists.
        """
        session_id = _new_session_id() if session_id is None else ev.check_session_id(session_id)
        folder = self._writable_folder(session_id, agent)
        with file_lock(folder / ".lock"):
            if _exists(folder):
                if not self._visible(folder):
                    raise _taken(session_id)
                raise Conflict(f"session {session_id} already exists; append to it or start another id")
            meta = _new_meta(session_id, agent, user)
            self._write_meta(folder, meta)
        return self._info(folder, meta)

    def append(self, session_id: str, event: RawEvent, *, create: bool = False) -> AppendResult:
        """Append one event (004's shape; see :func:`lore.sessions.events.normalise`).

        Crossing the soft limit compacts the old part before returning.
        """
        return self.append_many(session_id, [event], create=create)

    def append_many(
        self,
        session_id: str,
        events: Iterable[RawEvent],
        *,
        create: bool = False,
        agent: str | None = None,
    ) -> AppendResult:
        """Append events in order (one write per batch). Events carrying a
        ``sourceId`` already in the session are skipped (idempotent re-sends).

        Args:
            create: start the session if it does not exist (with `agent`).

        Raises:
            NotFound: no such session and not `create`.
            ValidationError: an event is malformed (nothing is appended).
        """
        normalised = [ev.normalise(event) for event in events]
        session_id = ev.check_session_id(session_id)
        written, compactions, token_count = self._append(session_id, normalised, create=create, agent=agent)
        return AppendResult(
            session_id=session_id,
            events=[ev.to_record(e) for e in written],
            token_count=token_count,
            compaction=compactions[-1] if compactions else None,
        )

    def end(self, session_id: str) -> SessionInfo:
        """Mark the session ended (appending to it is refused from then on)."""
        folder = self._existing(session_id)
        with file_lock(folder / ".lock"):
            meta = self._state(folder, session_id)
            meta.update(status="ended", endedAt=now_iso(), updatedAt=now_iso())
            # Written first: once the session is ended anywhere, it stays ended
            # even if metadata.json is damaged later (and recounted from the files).
            atomic.write_atomic(folder / ENDED, meta["endedAt"] + "\n", sync=False)
            self._write_meta(folder, meta)
        return self._info(folder, meta)

    def import_transcript(
        self, path: str | os.PathLike[str], *, session_id: str | None = None, agent: str | None = None
    ) -> ImportResult:
        """Bring an agent transcript (Claude Code, Codex, 004) into a session.

        Idempotent: a second import appends nothing, and a longer version of
        the same transcript appends only its new events. The session is
        created when missing (its id: `session_id`, else the transcript's own
        session id, else the file name). Long transcripts compact as they go,
        as if they had been recorded live.

        Raises:
            NotFound: no file at `path`.
        """
        from lore.sessions import importers

        source = Path(path).expanduser().resolve()
        if not source.is_file():
            raise NotFound(f"no transcript at {source}; give the path of a .jsonl transcript")
        if session_id is None:
            named = importers.peek_session_id(source) or _id_from_name(source.stem)
            try:
                session_id = ev.check_session_id(named)
            except LoreError as err:  # the transcript's own id: say whose, and what to do
                raise UsageError(f"{source}: {err}; give the session an id with --session ID") from None
        else:
            session_id = ev.check_session_id(session_id)
        folder = self._folder(session_id)
        if folder.exists() or folder.is_symlink():
            self._check_files(folder)  # before its metadata is read
        cursor = self._cursor_for(folder, source)
        transcript = importers.read_transcript(source, offset=cursor["offset"] if cursor else 0)
        if cursor is None and transcript.format is None and transcript.lines > 0:
            # Lines, none of them a transcript's: refused before any session is made.
            raise UsageError(
                f"{source} is not a transcript: no Claude Code, Codex or Lore session line in it"
            )
        if cursor is None and not transcript.events and not folder.exists():
            # An empty file made an empty session named after it (an audit).
            raise UsageError(f"{source} holds no events; nothing imported (give a transcript with some)")
        fmt = transcript.format or (cursor or {}).get("format") or "lore"
        normalised = [ev.normalise(event, imported=True) for event in transcript.events]
        new_cursor = {
            "path": _cursor_path(source),
            "head": transcript.head,
            "offset": transcript.end_offset,
            "format": fmt,
        }
        written, compactions, _ = self._append(
            session_id,
            normalised,
            create=True,
            # One agent's view owns what it imports (None: shared, so the importer sees it).
            agent=agent if agent or self.own_only else (fmt if fmt != "lore" else None),
            cursor_used=cursor,
            new_cursor=new_cursor,
            offsets=transcript.offsets,
        )
        return ImportResult(
            session_id=session_id,
            transcript=str(source),
            format=fmt,
            appended=len(written),
            skipped=len(normalised) - len(written),
            compactions=compactions,
            unreadable=transcript.unreadable,
        )

    def compact(self, session_id: str, *, force: bool = True, reason: str = "manual") -> CompactionResult:
        """Summarise and archive everything before the protected recent tail.

        Args:
            force: compact even below the soft limit (False: only above it).
            reason: recorded in the result (manual, pre-compact, soft-limit).
        """
        folder = self._existing(session_id)
        return self._compact(folder, session_id, force=force, reason=reason, blocking=True)

    # -- reading ---------------------------------------------------------------

    def get(self, session_id: str) -> SessionInfo:
        """A session's metadata (repaired first if a crash left it behind the files)."""
        return self._get(self._existing(session_id), session_id)

    def _get(self, folder: Path, session_id: str) -> SessionInfo:
        with file_lock(folder / ".lock"):
            meta = self._state(folder, session_id)
        return self._info(folder, meta)

    def list(self, *, status: str | None = None, limit: int | None = None) -> builtins.list[SessionInfo]:
        """Sessions, most recently updated first."""
        if status is not None and status not in STATUSES:
            raise UsageError(f"unknown status {status!r}; use one of: {', '.join(STATUSES)}")
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            folder = self.root / name
            if not (ev.SESSION_ID_RE.match(name) and folder.is_dir() and _exists(folder)):
                continue
            try:
                self._check_files(folder)
            except UsageError as err:  # one unsound session is left out, not every one
                self._notice(str(err))
                continue
            if self._visible(folder):
                info = self._get(folder, name)
                if status is None or info.status == status:
                    out.append(info)
        out.sort(key=lambda info: (info.updated_at, info.id), reverse=True)
        return out[:limit] if limit else out

    def events(self, session_id: str, *, include_archived: bool = False) -> builtins.list[SessionEvent]:
        """The raw events on disk: the live ones, and the archived ones before them if asked."""
        folder = self._existing(session_id)
        live = log.read(folder / LOG)  # the log first, then the archive (see the module doc)
        ranges = archive.archived_ranges(folder)
        boundary = ranges[-1].last if ranges else 0
        out: builtins.list[SessionEvent] = []
        if include_archived:
            for archived in ranges:
                out += [ev.to_record(e) for e in archive.read_archive(archived.archive)]
        out += [ev.to_record(line.event) for line in live.lines if line.event["id"] > boundary]
        return out

    def uncaptured(self, session_id: str) -> builtins.list[tuple[int, int]]:
        """The archived ranges (first, last event) that 001's capture has not
        taken in yet, oldest first. A session of an older Lore, which captured
        each range as it archived it, has none: its marker starts at its last range."""
        folder = self._existing(session_id)
        ranges = archive.archived_ranges(folder)
        done = _captured_through(folder)
        if done is None:
            done = ranges[-1].last if ranges else 0
            atomic.write_atomic(folder / CAPTURED, f"{done}\n", sync=False)
        return [(r.first, r.last) for r in ranges if r.last > done]

    def mark_captured(self, session_id: str, last: int) -> None:
        """Record that the archived events up to `last` have been captured."""
        folder = self._existing(session_id)
        with file_lock(folder / ".lock"):
            if last > (_captured_through(folder) or 0):
                atomic.write_atomic(folder / CAPTURED, f"{last}\n", sync=False)

    def uncaptured_tail(self, session_id: str) -> builtins.list[RawEvent]:
        """The live events (004's on-disk shapes) that 001's capture has not taken
        in: an ended session's last part, which no compaction will archive (the
        recent part is kept live for the context view)."""
        folder = self._existing(session_id)
        ranges = archive.archived_ranges(folder)
        done = max(_captured_through(folder) or 0, ranges[-1].last if ranges else 0)
        return [line.event for line in log.read(folder / LOG).lines if line.event["id"] > done]

    def archived_events(self, session_id: str, first: int, last: int) -> builtins.list[RawEvent]:
        """The raw events (004's on-disk shapes) of the archived range `first`-`last`,
        as a compaction archived them ([] if there is no such range)."""
        folder = self._existing(session_id)
        for archived in archive.archived_ranges(folder):
            if (archived.first, archived.last) == (first, last):
                return archive.read_archive(archived.archive)
        return []

    def context(self, session_id: str, *, limit_tokens: int | None = None) -> SessionContext:
        """The live context view: summaries of archived ranges, then live events,
        oldest dropped first until it fits `limit_tokens` (default: the hard limit).
        Nothing is removed from disk."""
        folder = self._existing(session_id)
        live = log.read(folder / LOG)
        ranges = archive.archived_ranges(folder)
        boundary = ranges[-1].last if ranges else 0
        items = [self._summary_item(folder, session_id, r) for r in ranges]
        items += [ev.to_record(line.event) for line in live.lines if line.event["id"] > boundary]
        limit = limit_tokens or self.limits.hard_limit_tokens
        total = sum(item.tokens for item in items)
        dropped = 0
        while total > limit and dropped < len(items) - 1:  # the newest item always stays
            total -= items[dropped].tokens
            dropped += 1
        kept = items[dropped:]
        if total > limit:  # the newest alone is over: its text is cut to fit (the disk keeps it whole)
            kept[-1] = _cut_to(kept[-1], limit)
            total = kept[-1].tokens
        return SessionContext(
            session_id=session_id,
            events=kept,
            tokens=total,
            hard_limit_tokens=limit,
            dropped=dropped,
            summaries=sum(1 for item in kept if item.summary_of),
        )

    def path_of(self, session_id: str) -> Path:
        """The session's folder (whether or not it exists)."""
        return self._folder(session_id)

    # -- internals: appending ------------------------------------------------------

    def _append(
        self,
        session_id: str,
        events: builtins.list[RawEvent],
        *,
        create: bool,
        agent: str | None,
        cursor_used: Cursor | None = None,
        new_cursor: Cursor | None = None,
        offsets: builtins.list[int] | None = None,
    ) -> tuple[builtins.list[RawEvent], builtins.list[CompactionResult], int]:
        """Append in batches that stop at the soft limit, compacting between them."""
        # Only `create` may make the folder: a refused append leaves nothing behind.
        folder = self._writable_folder(session_id, agent) if create else self._existing(session_id)
        written: builtins.list[RawEvent] = []
        compactions: builtins.list[CompactionResult] = []
        position = 0
        token_count = 0
        while True:
            with file_lock(folder / ".lock"):
                meta = self._state(folder, session_id, create=create, agent=agent, events=events)
                fresh = self._unseen(folder, meta, events, position, cursor_used)
                batch: builtins.list[tuple[int, RawEvent]] = []
                room = self.limits.soft_limit_tokens - meta["liveTokenCount"]
                for index, event in fresh:
                    if batch and event["tokens"] > room:
                        break  # the rest goes in after the compaction this batch triggers
                    batch.append((index, event))
                    room -= event["tokens"]
                done = not batch or batch[-1][0] == fresh[-1][0]
                position = len(events) if done else batch[-1][0] + 1
                changed = bool(batch)
                if batch:
                    written += self._write_events(folder, meta, [event for _, event in batch])
                if new_cursor is not None:
                    cursor = (
                        new_cursor if done or not offsets else {**new_cursor, "offset": offsets[batch[-1][0]]}
                    )
                    changed = changed or meta.get("importCursor") != cursor
                    meta["importCursor"] = cursor
                if changed:
                    self._write_meta(folder, meta)
                token_count = meta["tokenCount"]
                over = meta["liveTokenCount"] > self.limits.soft_limit_tokens
            if over:
                result = self._compact(folder, session_id, force=False, reason="soft-limit", blocking=False)
                if result.compacted:
                    compactions.append(result)
                    refreshed = self._read_meta(folder)
                    if "tokenCount" in refreshed:
                        token_count = refreshed["tokenCount"]
            if done:
                return written, compactions, token_count

    def _unseen(
        self,
        folder: Path,
        meta: Meta,
        events: builtins.list[RawEvent],
        position: int,
        cursor_used: Cursor | None,
    ) -> builtins.list[tuple[int, RawEvent]]:
        """(index, event) of the events from `position` on whose ``sourceId`` the
        session does not have yet. Archived events are checked too unless the
        events were read from the import cursor the metadata still holds."""
        pending = list(enumerate(events[position:], position))
        if not any("sourceId" in event for _, event in pending):
            return pending
        full = cursor_used is None or meta.get("importCursor") != cursor_used
        seen = self._source_ids(folder, archived=full)
        fresh = []
        for index, event in pending:
            source = event.get("sourceId")
            if source is None or source not in seen:
                fresh.append((index, event))
                if source is not None:
                    seen.add(source)
        return fresh

    def _write_events(
        self, folder: Path, meta: Meta, events: builtins.list[RawEvent]
    ) -> builtins.list[RawEvent]:
        """Give the events their ids and append them (the session lock is held)."""
        next_id = meta["lastEventId"] + 1
        out = []
        for offset, event in enumerate(events):
            event = {"id": next_id + offset, **event}
            if event["type"] == "tool_call" and "toolCallId" not in event:
                event["toolCallId"] = f"tc_{event['id']}"
            out.append(event)
        note = log.append(folder / LOG, [ev.dumps(event) for event in out])
        if note:
            self._notice(f"session {meta['id']}: {note}")
        added = sum(e["tokens"] for e in out)
        meta.update(
            lastEventId=out[-1]["id"],
            eventCount=meta["eventCount"] + len(out),
            messageCount=meta["messageCount"] + sum(1 for e in out if e["type"] == "message"),
            liveTokenCount=meta["liveTokenCount"] + added,
            updatedAt=now_iso(),
        )
        meta["tokenCount"] = meta["liveTokenCount"] + meta["summaryTokenCount"]
        return out

    def _source_ids(self, folder: Path, *, archived: bool) -> set[str]:
        """The ``sourceId`` of every live event, and of archived ones if asked."""
        seen = {line.event["sourceId"] for line in log.read(folder / LOG).lines if "sourceId" in line.event}
        if archived:
            for archived_range in archive.archived_ranges(folder):
                seen.update(
                    e["sourceId"] for e in archive.read_archive(archived_range.archive) if "sourceId" in e
                )
        return seen

    def backlog(self, path: str | os.PathLike[str], session_id: str | None) -> int:
        """Bytes of the transcript at `path` that an import into `session_id` has
        not read yet (all of it for a session not recorded so far)."""
        source = Path(path).expanduser().resolve()
        try:
            size = source.stat().st_size
        except OSError:
            return 0
        if session_id is None:  # the transcript's own, as an import takes it
            from lore.sessions import importers

            session_id = importers.peek_session_id(source) or _id_from_name(source.stem)
        try:
            folder = self._folder(session_id)
        except LoreError:
            return size
        cursor = self._cursor_for(folder, source) if folder.is_dir() else None
        return size - int(cursor["offset"]) if cursor else size

    def _cursor_for(self, folder: Path, source: Path) -> Cursor | None:
        """Where the last import of this transcript stopped, if it is still the same file."""
        from lore.sessions.importers import head_digest

        cursor = self._read_meta(folder).get("importCursor")
        if not isinstance(cursor, dict) or cursor.get("path") != _cursor_path(source):
            return None
        try:
            if source.stat().st_size < cursor.get("offset", 0) or head_digest(source) != cursor.get("head"):
                return None
        except OSError:
            return None
        return cursor

    # -- internals: compaction --------------------------------------------------------

    def _compact(
        self, folder: Path, session_id: str, *, force: bool, reason: str, blocking: bool
    ) -> CompactionResult:
        from lore.sessions.summary import summarize

        started = time.perf_counter()
        with file_lock(folder / ".compact.lock", blocking=blocking) as held:
            if not held:
                return CompactionResult(session_id, False, "busy")
            self._restore_missing_summaries(folder, session_id)
            live_read = log.read(folder / LOG)
            ranges = archive.archived_ranges(folder)
            boundary = ranges[-1].last if ranges else 0
            live = [line for line in live_read.lines if line.event["id"] > boundary]
            if not force and sum(ev.tokens_of(line.event) for line in live) <= self.limits.soft_limit_tokens:
                return CompactionResult(session_id, False, "under-soft-limit")
            old = _old_part(live, self.limits.protected_recent_tokens)
            if not old:
                return CompactionResult(session_id, False, "nothing-to-compact")
            old_events = [line.event for line in old]
            first, last = old_events[0]["id"], old_events[-1]["id"]
            summary = summarize(
                old_events, session_id=session_id, root=self.project.root, provider=self._provider()
            )
            if summary.notice:
                self._notice(summary.notice)
            with file_lock(folder / ".lock"):
                meta = self._state(folder, session_id)
                archive_path = archive.write_archive(folder, first, last, [line.raw for line in old])
                memory = archive.summary_memory(
                    summary,
                    session_id=session_id,
                    first=first,
                    last=last,
                    occurred_at=old_events[-1].get("timestamp"),
                    archive_rel=self.project.rel(archive_path),
                    agent=meta.get("channelId"),
                )
                summary_path = archive.write_summary(folder, first, last, memory)
                log.repair_tail(folder / LOG)
                current = log.read(folder / LOG)
                log.save_rejected(folder / LOG, current.malformed)
                log.rewrite(folder / LOG, [line.raw for line in current.lines if line.event["id"] > last])
                archived_tokens = sum(ev.tokens_of(e) for e in old_events)
                summary_tokens = count_tokens(memory.body)
                meta.update(
                    archivedThrough=last,
                    archivedEventCount=meta["archivedEventCount"] + len(old),
                    compactions=meta["compactions"] + 1,
                    liveTokenCount=max(0, meta["liveTokenCount"] - archived_tokens),
                    summaryTokenCount=meta["summaryTokenCount"] + summary_tokens,
                    updatedAt=now_iso(),
                )
                meta["tokenCount"] = meta["liveTokenCount"] + meta["summaryTokenCount"]
                self._write_meta(folder, meta)
        return CompactionResult(
            session_id=session_id,
            compacted=True,
            reason=reason,
            first_event=first,
            last_event=last,
            events_archived=len(old),
            tokens_archived=archived_tokens,
            archive=self.project.rel(archive_path),
            summary_path=self.project.rel(summary_path),
            summary_tokens=summary_tokens,
            summarizer=summary.summarizer,
            notice=summary.notice,
            seconds=time.perf_counter() - started,
        )

    def _restore_missing_summaries(self, folder: Path, session_id: str) -> None:
        """Write the summary of any archived range that lacks one (a compaction
        interrupted between its archive and its summary)."""
        from lore.sessions.extractive import summarize_extractive

        for archived in archive.archived_ranges(folder):
            if archived.summary.exists():
                continue
            old = archive.read_archive(archived.archive)
            summary = summarize_extractive(old, session_id=session_id, root=self.project.root)
            memory = archive.summary_memory(
                summary,
                session_id=session_id,
                first=archived.first,
                last=archived.last,
                occurred_at=old[-1].get("timestamp") if old else None,
                archive_rel=self.project.rel(archived.archive),
                agent=self._read_meta(folder).get("channelId"),
            )
            archive.write_summary(folder, archived.first, archived.last, memory)

    def _provider(self) -> TextSummarizer | None:
        """The configured LLM summariser, None for extractive (or when misconfigured: a notice)."""
        if not self._summarizer_loaded:
            from lore.sessions.llm import load_summarizer

            try:
                self._summarizer = load_summarizer(self._summary_settings)
            except ProviderError as err:
                self._notice(f"[sessions.summary] is unusable, using the extractive summary: {err}")
                self._summarizer = None
            self._summarizer_loaded = True
        return self._summarizer

    def _summary_item(self, folder: Path, session_id: str, archived: archive.ArchivedRange) -> SessionEvent:
        memory = archive.read_summary(archived.summary)
        if memory is not None:
            text = f"Previous conversation summary (events {archived.first}-{archived.last}):\n\n{memory.body.strip()}"
            when = memory.occurred_at
        else:
            text = (
                f"Events {archived.first}-{archived.last} are archived in "
                f"{self.project.rel(archived.archive)}; their summary is missing "
                f"(`lore session compact {session_id}` writes it)."
            )
            when = ""
        return SessionEvent(
            id=None,
            type="message",
            timestamp=when,
            role="system",
            content=text,
            tokens=count_tokens(text),
            summary_of=f"{archived.first}-{archived.last}",
        )

    # -- internals: metadata ------------------------------------------------------------

    def _folder(self, session_id: str) -> Path:
        return self.root / ev.check_session_id(session_id)

    def _writable_folder(self, session_id: str, agent: str | None) -> Path:
        folder = self._folder(session_id)
        if not folder.exists():  # the id names a folder, the owner is written beside it: in clear
            refuse_as_name(session_id, "session id", "a session id names a folder, so choose another id")
            refuse_as_name(
                agent or "",
                "agent name",
                "an agent's name is written beside its sessions, so choose another name",
            )
        self.project.check_folder(folder)
        self._ensure_root()
        folder.mkdir(exist_ok=True)
        self._check_files(folder)
        return folder

    def _existing(self, session_id: str) -> Path:
        """The folder of a session this store may see (another agent's: as if missing)."""
        folder = self._folder(session_id)
        if not _exists(folder):
            raise _missing(session_id)
        self._check_files(folder)
        if not self._visible(folder):
            raise _missing(session_id)
        return folder

    def _check_files(self, folder: Path) -> None:
        """Refuse a session folder that leads out of the project, or that holds
        a symbolic link or anything but files (and its archive and summaries
        folders): Lore reads, cuts and appends to the files there, and a link
        committed in a repository's ``.lore/`` would have it read or write a
        file elsewhere (a FIFO would block it)."""
        self.project.check_folder(folder)
        folders = (archive.FOLDER, archive.SUMMARIES)
        for inner in (folder, *(folder / name for name in folders)):
            try:
                entries = list(os.scandir(inner))
            except FileNotFoundError:
                continue
            except OSError as err:
                raise UsageError(
                    f"{self.project.rel(inner)} can't be read ({err.strerror}); check it"
                ) from None
            for entry in entries:
                if inner == folder and entry.name in folders:
                    kept = entry.is_dir(follow_symlinks=False)
                else:
                    kept = entry.is_file(follow_symlinks=False)
                if entry.is_symlink() or not kept:
                    raise UsageError(
                        f"{self.project.rel(Path(entry.path))} is a symbolic link or not a "
                        f"{'folder' if entry.name in folders and inner == folder else 'file'}; remove it "
                        "(a session folder holds only what Lore writes there)"
                    )

    def _visible(self, folder: Path) -> bool:
        """Is the session in `folder` this agent's, or nobody's (shared)? The same
        rule as its summaries' (session-summary memories, owned by its agent)."""
        if not self.own_only:
            return True
        owner = self._owner(folder)
        if owner is _UNKNOWN:  # damaged metadata, no owner on record: a person's view only
            return self.agent is None
        return owner is None or (self.agent is not None and _same_agent(str(owner), self.agent))

    def _owner(self, folder: Path, meta: Meta | None = None) -> object:
        """The session's agent (None: shared), from its metadata, else from its
        owner file; ``_UNKNOWN`` when neither can be read."""
        meta = self._read_meta(folder) if meta is None else meta
        if meta:
            return meta.get("channelId")
        try:
            recorded = _small_text(folder / OWNER).strip()
        except (OSError, UnicodeDecodeError):
            return _UNKNOWN
        return recorded or None

    def _state(
        self,
        folder: Path,
        session_id: str,
        *,
        create: bool = False,
        agent: str | None = None,
        events: builtins.list[RawEvent] | None = None,
    ) -> Meta:
        """The session's metadata, checked against the files (the session lock is held).

        A crash between a write and its metadata update leaves the metadata
        behind the files; it is then recounted from them (and the import
        cursor dropped, so the next import checks every event it reads).
        """
        meta = self._read_meta(folder)
        if not meta:
            if not _exists(folder) and not create:
                raise _missing(session_id)
            if not _exists(folder):
                started = min((e["timestamp"] for e in events or [] if e.get("timestamp")), default=None)
                meta = _new_meta(session_id, agent, None, created_at=started)
                return meta
        if not self._visible(folder):
            raise _taken(session_id) if create else _missing(session_id)
        if events is not None and (meta.get("status") == "ended" or (not meta and _ended_at(folder))):
            raise Conflict(f"session {session_id} has ended; start a new session to record more")
        ranges = archive.archived_ranges(folder)
        boundary = ranges[-1].last if ranges else 0
        last = max(log.last_id(folder / LOG), boundary)
        if meta and meta.get("lastEventId") == last and meta.get("archivedThrough", 0) == boundary:
            return meta
        recounted = self._recount(folder, session_id, meta or {}, ranges)
        if meta:
            self._notice(
                f"session {session_id}: metadata was behind the files (interrupted write); recounted"
            )
        self._write_meta(folder, recounted)
        return recounted

    def _recount(
        self, folder: Path, session_id: str, old: Meta, ranges: builtins.list[archive.ArchivedRange]
    ) -> Meta:
        boundary = ranges[-1].last if ranges else 0
        live = [line.event for line in log.read(folder / LOG).lines if line.event["id"] > boundary]
        archived: builtins.list[RawEvent] = []
        for archived_range in ranges:
            archived += archive.read_archive(archived_range.archive)
        summary_tokens = 0
        for archived_range in ranges:
            memory = archive.read_summary(archived_range.summary)
            summary_tokens += count_tokens(memory.body) if memory else 0
        every = archived + live
        owner = self._owner(folder, old)
        meta = _new_meta(
            session_id,
            owner if isinstance(owner, str) else None,
            old.get("userId"),
            created_at=old.get("createdAt") or (every[0].get("timestamp") if every else None),
        )
        live_tokens = sum(ev.tokens_of(e) for e in live)
        ended_at = old.get("endedAt") if old else _ended_at(folder)
        meta.update(
            status=old.get("status", "active") if old else ("ended" if ended_at else "active"),
            endedAt=ended_at,
            messageCount=sum(1 for e in every if e.get("type") == "message"),
            eventCount=len(every),
            lastEventId=max([boundary] + [e["id"] for e in live]),
            archivedThrough=boundary,
            archivedEventCount=len(archived),
            compactions=len(ranges),
            liveTokenCount=live_tokens,
            summaryTokenCount=summary_tokens,
            tokenCount=live_tokens + summary_tokens,
        )
        return meta

    def _read_meta(self, folder: Path) -> Meta:
        try:
            meta = json.loads(_small_text(folder / META))
        except (OSError, ValueError):  # missing, a link, a FIFO, not UTF-8 or JSON
            return {}
        if not isinstance(meta, dict) or not all(isinstance(meta.get(k), int) for k in _COUNTERS):
            return {}  # unreadable: recounted from the files
        return meta

    def _write_meta(self, folder: Path, meta: Meta) -> None:
        """Replace metadata.json atomically (temp file + rename). Not fsynced: it is
        rewritten on every append, and metadata behind the files is recounted from
        them, so an fsync (milliseconds on a busy disk) would buy nothing."""
        atomic.write_atomic(folder / META, json.dumps(meta, indent=2, ensure_ascii=False) + "\n", sync=False)
        if not (folder / OWNER).exists():
            atomic.write_atomic(folder / OWNER, (meta.get("channelId") or "") + "\n", sync=False)
        if not (folder / CAPTURED).exists() and not meta.get("archivedThrough"):
            atomic.write_atomic(folder / CAPTURED, "0\n", sync=False)  # a new session: nothing archived yet

    def _ensure_root(self) -> None:
        """Create ``.lore/sessions/``, git-ignored even in projects whose
        ``.lore/.gitignore`` predates sessions (it then gets its own ``*``)."""
        if self.root.is_dir():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            ignore = (self.project.lore_dir / ".gitignore").read_text(encoding="utf-8")
        except OSError:
            ignore = ""
        if "sessions/" not in ignore.split():
            write_atomic(
                self.root / ".gitignore", "# Recorded agent sessions stay local (lore.sessions).\n*\n"
            )

    def _info(self, folder: Path, meta: Meta) -> SessionInfo:
        return SessionInfo(
            id=meta["id"],
            agent=meta.get("channelId"),
            user=meta.get("userId"),
            status=meta.get("status", "active"),
            message_count=meta["messageCount"],
            event_count=meta["eventCount"],
            token_count=meta["tokenCount"],
            live_event_count=meta["eventCount"] - meta["archivedEventCount"],
            archived_event_count=meta["archivedEventCount"],
            compactions=meta["compactions"],
            created_at=meta.get("createdAt", ""),
            updated_at=meta.get("updatedAt", ""),
            ended_at=meta.get("endedAt"),
            path=self.project.rel(folder),
        )

    def _notice(self, message: str) -> None:
        if message not in self.notices:
            self.notices.append(message)


_COUNTERS = (
    "lastEventId",
    "eventCount",
    "messageCount",
    "tokenCount",
    "liveTokenCount",
    "summaryTokenCount",
    "archivedEventCount",
    "archivedThrough",
    "compactions",
)


def _captured_through(folder: Path) -> int | None:
    """The session's capture marker (:data:`CAPTURED`); None when it has none
    (an older Lore's session), 0 when it is damaged (capture is idempotent:
    taking a range in twice counts nothing twice)."""
    try:
        return int(_small_text(folder / CAPTURED).strip() or 0)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return 0


def _cut_to(item: SessionEvent, limit: int) -> SessionEvent:
    """`item` with its text (a message's content, a call's arguments, a result)
    cut so that it counts at most `limit` tokens, saying so at the cut."""
    import dataclasses

    field = "content" if item.type == "message" else "args" if item.type == "tool_call" else "result"
    value = getattr(item, field)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    note = f" … [cut to fit the view's {limit:,} tokens; the whole event is kept on disk]"
    room = max(0, limit - count_tokens(note) - 8)  # what the label and the field around it take
    keep = len(text)
    while keep and count_tokens(text[:keep]) > room:
        keep = min(keep - 1, keep * room // max(1, count_tokens(text[:keep])))
    shown = text[:keep] + note
    tokens = count_tokens(shown) + (count_tokens(item.tool_name or "") if item.type == "tool_call" else 0)
    cut = dataclasses.replace(item, tokens=tokens)
    setattr(cut, field, shown)
    return cut


def _new_meta(session_id: str, agent: str | None, user: str | None, *, created_at: str | None = None) -> Meta:
    now = now_iso()
    meta: Meta = {
        "id": session_id,
        "channelId": agent,
        "userId": redact(user)[0] if user else user,
        "status": "active",
        "messageCount": 0,
        "tokenCount": 0,
        "createdAt": created_at or now,
        "updatedAt": now,
        "endedAt": None,
    }
    meta.update({name: 0 for name in _COUNTERS if name not in meta})
    return meta


_SMALL_FILE = 1 << 20  # metadata.json and the marker files are a few hundred bytes


def _small_text(path: Path) -> str:
    """A small file of a session folder as text (:func:`~lore.safe_read.read_regular`:
    never through a link, never a FIFO or device, at most :data:`_SMALL_FILE` bytes).

    Raises:
        OSError: missing (FileNotFoundError), a link, not a regular file, too large.
        UnicodeDecodeError: not UTF-8.
    """
    try:
        data = read_regular(path, max_bytes=_SMALL_FILE, follow_links=False)
    except NotFound:
        raise FileNotFoundError(path) from None
    except ValidationError as err:  # the callers treat it as unreadable
        raise OSError(str(err)) from None
    return data.decode("utf-8")


def _ended_at(folder: Path) -> str | None:
    """When the session ended, from its `.ended` file (None: not ended, or unreadable)."""
    try:
        text = _small_text(folder / ENDED).strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def _missing(session_id: str) -> NotFound:
    return NotFound(
        f"no session {session_id}; see `lore session list`, or start one with `lore session start`"
    )


def _taken(session_id: str) -> Conflict:
    """Starting (or creating on append) an id another agent's session holds: the
    id can't be used, and nothing of that session is shown. The same answer for
    every agent, whatever the session holds."""
    return Conflict(f"session id {session_id} can't be used; start a session with another id")


def _exists(folder: Path) -> bool:
    return (folder / META).exists() or (folder / LOG).exists()


def _old_part(live: list[log.LogLine], protected_tokens: int) -> list[log.LogLine]:
    """The live events before the protected recent tail (the newest event is always
    protected; a tool result stays with the call before it)."""
    cut, used = len(live), 0
    for index in range(len(live) - 1, -1, -1):
        cost = ev.tokens_of(live[index].event)
        if cut < len(live) and used + cost > protected_tokens:
            break
        used += cost
        cut = index
    while 0 < cut < len(live) and live[cut].event["type"] == "tool_result":
        cut -= 1  # keep the call its result answers
    return live[:cut]


def _new_session_id() -> str:
    """``20260301-101500-a1b2c3``: sorts by start time, unique enough across processes."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _id_from_name(stem: str) -> str:
    """A session id from a transcript's file name: accents folded (``séance`` →
    ``seance``), other characters an id can't hold turned to ``-``."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    cleaned = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "-" for ch in folded)
    return cleaned.strip("._-")[:128] or _new_session_id()


def _cursor_path(source: Path) -> str:
    """The transcript's path as an import cursor keeps it: redacted like every
    text a session holds (the head digest tells two files of one redacted name apart)."""
    return redact(str(source))[0]


def _same_agent(recorded: str, acting: str) -> bool:
    """Whether the agent a session records is the acting one, as every other
    rule reads agents (``Claude Code``, ``claude-code`` and ``claude_code`` are one)."""
    from lore.errors import ValidationError
    from lore.project import agent_key

    try:
        return agent_key(recorded) == agent_key(acting)
    except ValidationError:
        return recorded == acting
