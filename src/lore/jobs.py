"""Index runs in the background, with progress a dashboard can watch.

`lore serve` answers `POST /update-index` at once (202 and a job id) and
does the work here: one worker thread runs the queued jobs in order, each
with its *own* :class:`~lore.service.Lore` (SQLite connections belong to one
thread; WAL lets the server keep reading meanwhile). A job records, per
phase (memories, code and history, embeddings), how far it got, the files
that failed and why, and its result. Requests that arrive while a job of the
same kind waits in the queue are merged into it, so a burst of git hooks
costs one run.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import StorageError, UsageError, as_lore_error, without_server_paths
from lore.memory.model import now_iso
from lore.memory.values import quoted
from lore.records import Record, datarecord, internal

if TYPE_CHECKING:
    from lore.service import Lore

JOB_KINDS = ("files", "update", "rebuild")
MAX_QUEUED = 20
KEEP_FINISHED = 50


@datarecord
class JobPhase(Record):
    """One step of a run: ``done`` of ``total`` units (files, chunks)."""

    name: str
    state: str = "pending"  # pending | running | done
    done: int = 0
    total: int | None = None


@datarecord
class IndexJob(Record):
    """A background index run (003's update_index, or a full update / rebuild).

    ``kind``: ``files`` (just ``files`` and ``deleted_files``), ``update``
    (everything, incremental) or ``rebuild`` (re-read and re-chunk every file).
    """

    id: str
    kind: str
    state: str = "queued"  # queued | running | done | failed
    files: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    created_at: str = field(default_factory=now_iso)
    started_at: str | None = None
    finished_at: str | None = None
    phases: list[JobPhase] = field(default_factory=list)
    failed_files: list[dict[str, str]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: str | None = None
    version: int = internal(default=0)  # bumped on every change (for watchers)

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def phase(self, name: str) -> JobPhase:
        return next(p for p in self.phases if p.name == name)


# How a job reports progress: (job, phase, done, total, state).
JobProgress = Callable[[IndexJob, str, int, int | None, str], None]


class JobRunner:
    """Runs index jobs one at a time on a worker thread.

    Args:
        open_lore: makes a fresh Lore for the project (called on the worker thread).
        roots: the served projects: a job's error shows paths relative to them
            (:func:`~lore.errors.without_server_paths`), as the server's error bodies do.
    """

    def __init__(self, open_lore: Callable[[], Lore], *, roots: Sequence[Path] = ()):
        self._open_lore = open_lore
        self._roots = list(roots)
        self._jobs: OrderedDict[str, IndexJob] = OrderedDict()
        self._queue: list[str] = []
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False

    # -- asking ----------------------------------------------------------------

    def submit(self, kind: str, files: Sequence[str] = (), deleted_files: Sequence[str] = ()) -> IndexJob:
        """Queue a run (or merge into a queued one of the same kind); returns its job."""
        if kind not in JOB_KINDS:
            raise UsageError(f"unknown index job kind {quoted(kind)}; use one of {', '.join(JOB_KINDS)}")
        with self._lock:
            if self._closing:
                raise StorageError("the server is shutting down; try again when it is back")
            for job_id in self._queue:
                queued = self._jobs[job_id]
                if queued.kind == kind:
                    _merge(queued.files, files)
                    _merge(queued.deleted_files, deleted_files)
                    queued.version += 1
                    return queued
            if len(self._queue) >= MAX_QUEUED:
                raise StorageError(f"{MAX_QUEUED} index jobs are already waiting; try again shortly")
            job = IndexJob(uuid.uuid4().hex[:12], kind, files=list(files), deleted_files=list(deleted_files))
            job.phases = [JobPhase(name) for name in _PHASES[kind]]
            self._jobs[job.id] = job
            self._queue.append(job.id)
            self._forget_old()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="lore-index-jobs", daemon=True)
                self._thread.start()
            self._lock.notify_all()
            return job

    def get(self, job_id: str) -> IndexJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def jobs(self) -> list[IndexJob]:
        """Every job still remembered, newest first."""
        with self._lock:
            return list(reversed(self._jobs.values()))

    def current(self) -> IndexJob | None:
        """The running job, else the next queued one, else None."""
        with self._lock:
            active = [j for j in self._jobs.values() if not j.finished]
            return next((j for j in active if j.state == "running"), active[0] if active else None)

    def close(self, timeout: float = 10.0) -> None:
        """Stop taking jobs and wait (bounded) for the running one to finish."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    # -- working ---------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._lock.wait()
                if self._closing:
                    for job_id in self._queue:
                        self._finish(self._jobs[job_id], error="cancelled: the server stopped")
                    self._queue.clear()
                    return
                job = self._jobs[self._queue.pop(0)]
                job.state, job.started_at = "running", now_iso()
                self._changed(job)
            try:
                lore = self._open_lore()
                try:
                    result = _run(job, lore, self._progress)
                finally:
                    lore.close()
            except Exception as err:
                known = as_lore_error(err)
                message = str(known) if known else f"internal error: {err.__class__.__name__}: {err}"
                message = without_server_paths(message, self._roots)
                with self._lock:
                    self._finish(job, error=message)
                continue
            with self._lock:
                self._finish(job, result=result)

    def _progress(self, job: IndexJob, phase: str, done: int, total: int | None, state: str) -> None:
        with self._lock:
            step = job.phase(phase)
            step.done, step.total, step.state = done, total, state
            self._changed(job)

    def _finish(
        self, job: IndexJob, *, result: dict[str, Any] | None = None, error: str | None = None
    ) -> None:
        job.state = "failed" if error else "done"
        job.result, job.error, job.finished_at = result, error, now_iso()
        self._changed(job)

    def _changed(self, job: IndexJob) -> None:
        job.version += 1
        self._lock.notify_all()

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished]
        for job_id in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self._jobs[job_id]


_PHASES = {
    "files": ("code",),
    "update": ("memories", "code", "embeddings"),
    "rebuild": ("memories", "code", "embeddings"),
}


def _run(job: IndexJob, lore: Lore, progress: JobProgress) -> dict[str, Any]:
    """Do one job with `lore` (a Lore of its own); returns its result."""

    def step(phase: str) -> Callable[[int, int], None]:
        progress(job, phase, 0, None, "running")
        return lambda done, total: progress(job, phase, done, total, "running")

    def done(phase: str, count: int) -> None:
        progress(job, phase, count, count, "done")

    if job.kind == "files":
        step("code")
        result = lore.update_index(job.files, job.deleted_files)
        done("code", len(job.files) + len(job.deleted_files))
        return result
    force = job.kind == "rebuild"
    step("memories")
    report = lore.reindex(force=force)  # as this agent may see it: no other agent's private files
    job.failed_files.extend({"path": path, "error": error} for path, error in report.errors)
    done("memories", len(report.added) + len(report.updated) + len(report.removed))
    code = lore.index_code(force=force, progress=step("code"))
    job.failed_files.extend(_split_error(e) for e in code.errors)
    done("code", code.files_processed)
    advance = step("embeddings")
    embedded = lore.embed(progress=advance)  # vectors are keyed by content: unchanged text keeps its own
    done("embeddings", embedded)
    return {
        "memories": {"added": report.added, "updated": report.updated, "removed": report.removed},
        "code": code.to_dict(),
        "embedded": embedded,
    }


def _split_error(error: str) -> dict[str, str]:
    path, _, message = error.partition(": ")
    return {"path": path, "error": message or error}


def _merge(into: list[str], more: Sequence[str]) -> None:
    for path in more:
        if path not in into:
            into.append(path)
