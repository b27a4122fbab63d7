"""Claude Code hook handlers (`lore hook EVENT`, wired by `lore install claude-code`).

Hooks must never block or break the agent: every failure is swallowed and
logged to `.lore/local/hooks.log`, and the exit code is always 0. An input
that can't be used (over 16 MiB, unreadable, not a JSON object) is logged as
``skipped`` with the reason, and no handler runs.

- SessionStart: the previous sessions' memories are digested into the daily
  tier and cleaned (seed 001), then the session-start pack (this project's
  memories worth reading now, the branch's task, the areas being changed) is
  printed as additional context (nothing at all when nothing is relevant);
  the rest of 001's session start (old daily memories archived, recent ones
  consolidated, tiers decided) runs after, in a process of its own that the
  agent does not wait for (`lore hook consolidate`, one run at a time).
- UserPromptSubmit, PostToolUse, Stop: record the session as it happens
  (:mod:`lore.sessions`): the new part of the transcript is imported into
  ``.lore/sessions/<session_id>/`` (idempotent, reads only what was added);
  without a transcript, the prompt or the tool call and its result come from
  the hook's own payload.
- PreCompact: capture the transcript before it is compacted (002's rules for
  its messages, 001's digest, error patterns counted), record the session,
  and compact its old part too.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

if TYPE_CHECKING:
    from lore.service import Lore
    from lore.sessions.events import RawEvent

#: What Claude Code sends a hook on stdin (JSON; keys checked where read).
Payload: TypeAlias = dict[str, Any]


def run_hook(event: str, project: str | None, stdin: TextIO | None = None) -> int:
    """Handle one hook `event` for `project` (``--project``, else Claude Code's
    ``CLAUDE_PROJECT_DIR``; None: the payload's ``cwd``, else the current
    folder). The payload's ``cwd`` never wins over a project given: a hook's
    input is the agent's, and it would record prompts in another project."""
    started = time.time()
    lore: Lore | None = None
    where = project
    try:
        payload, unusable = _payload(stdin or sys.stdin)
        from lore.service import Lore

        cwd = payload.get("cwd")
        if cwd is not None and not isinstance(cwd, str):  # then the project given, and a log line
            unusable = unusable or f"'cwd' is {type(cwd).__name__}, not a folder's path"
            cwd = None
        where = project or cwd or "."
        lore = Lore.open(where, agent=os.environ.get("LORE_AGENT") or "claude-code")
        if unusable is not None:  # logged, never handled as if it were an (empty) event
            _log(lore, f"skipped {event}: {unusable}; nothing done")
            return 0
        message = _HANDLERS[event](lore, payload)
        _log(lore, f"ok {event}: {message} ({time.time() - started:.2f} s)")
    except Exception as err:
        if lore is not None:
            _log(lore, f"error {event}: {err}")
        elif not _log_in(where, f"error {event}: {err}"):  # a broken config.toml: said where hooks say
            print(f"lore hook {event}: {err}", file=sys.stderr)
    finally:
        if lore is not None:
            lore.close()
    return 0


def _session_start(lore: Lore, payload: Payload) -> str:
    started = ""
    try:  # 001: the previous sessions' memories are digested and cleaned
        report = lore.session_started(_session_id(payload), consolidating=False)
        started = f"; {report.cleaned} session memories digested and cleaned"
    except Exception as err:  # the start pack below must still reach the agent
        _log(lore, f"error session-start lifecycle: {err}")
    pack = lore.start(fresh=False)
    context = pack.markdown
    if context:
        print(
            json.dumps(
                {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
            ),
            flush=True,
        )
    # Consolidating grows with the project's memories (seconds at 10,000): the
    # agent does not wait for it. A process of its own, once at a time.
    started += "; consolidating in the background" if _detached(lore, "consolidate") else ""
    return f"{len(pack.items)} items, {pack.tokens_used} tokens{started}"


def _consolidate(lore: Lore, payload: Payload) -> str:
    """Old daily memories archived, recent ones consolidated, tiers decided
    (the part of a session start the agent does not wait for); one run at a
    time, and a start meanwhile makes it run once more."""
    from lore.index.githooks import run_coalesced

    done: list[str] = []

    def job() -> None:
        report = lore.consolidate_recent()
        done.append(
            f"{len(report.archived)} archived, {report.merged} merged, {report.tiers_moved} tiers moved"
        )

    ran = run_coalesced(lore.project.local_dir / "consolidating", job)
    return "; ".join(done) if ran else "another run is under way and will run again"


def _detached(lore: Lore, event: str, payload: Payload | None = None) -> bool:
    """Start ``lore hook EVENT`` for this project in a process of its own
    session, not waited for (its output goes to hooks.log), `payload` its input."""
    import subprocess

    try:
        child = subprocess.Popen(  # (the same agent: LORE_AGENT or claude-code, as this hook's)
            # -P: the project's own lore.py or lore/ never shadows Lore (the child runs in its folder)
            [sys.executable, "-P", "-m", "lore", "--project", str(lore.project.root), "hook", event],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        assert child.stdin is not None
        try:
            child.stdin.write(json.dumps(payload or {}).encode())
            child.stdin.close()
        except BrokenPipeError:  # it started, and ended already: its own log line says why
            pass
    except OSError as err:
        _log(lore, f"error {event}: could not start it in the background: {err}")
        return False
    return True


def _pre_compact(lore: Lore, payload: Payload) -> str:
    path = payload.get("transcript_path")
    if path is not None and not isinstance(path, str):
        return f"transcript_path is not a path (a {type(path).__name__}); nothing captured"
    if not path or not Path(path).is_file():
        return "no transcript"
    result = lore.capture_transcript(path)
    kept = sum((result.digest or {}).values())
    captured = (
        f"{result.created} captured, {result.existing} known, {result.gotchas} gotchas, "
        f"{kept} in the digest, {result.evidence} seen again"
    )
    recorded = _record(lore, payload, background=False)  # the compaction below needs it all
    session_id = _session_id(payload)
    if session_id is None:
        return f"{captured}; {recorded}"
    compaction = lore.compact_session(session_id, reason="pre-compact")
    done = (
        f"compacted events {compaction.first_event}-{compaction.last_event}"
        if compaction.compacted
        else compaction.reason
    )
    return f"{captured}; {recorded}, {done}"


def _user_prompt_submit(lore: Lore, payload: Payload) -> str:
    from lore.sessions import message
    from lore.sessions.events import fitted

    prompt = payload.get("prompt")
    fallback = [message("user", fitted(prompt))] if isinstance(prompt, str) and prompt.strip() else []
    return _record(lore, payload, fallback)


def _post_tool_use(lore: Lore, payload: Payload) -> str:
    from lore.sessions import tool_call, tool_result
    from lore.sessions.events import fitted

    name, call_id = payload.get("tool_name"), payload.get("tool_use_id")
    if not isinstance(call_id, str):
        call_id = None
    fallback: list[RawEvent] = []
    if isinstance(name, str) and name:
        # The transcript importer gives these events the same source ids: no doubles.
        fallback.append(
            tool_call(
                name,
                fitted(payload.get("tool_input")),
                call_id=call_id,
                source_id=call_id and f"tool:{call_id}",
            )
        )
        if "tool_response" in payload:
            result_id = call_id and f"result:{call_id}"
            fallback.append(tool_result(call_id, fitted(payload["tool_response"]), source_id=result_id))
    return _record(lore, payload, fallback)


def _stop(lore: Lore, payload: Payload) -> str:
    return _record(lore, payload)


def _session_end(lore: Lore, payload: Payload) -> str:
    """The session's last turns recorded, then what it said since its last
    compaction captured (the daily tier, the error counts): a session that
    never compacted reached neither. Not ended: Claude Code may resume it."""
    from lore.errors import NotFound

    said = _record(lore, payload, background=False)
    session_id = _session_id(payload)
    if session_id is not None:
        try:
            lore.capture_session(session_id)
        except NotFound:  # nothing recorded for it (no transcript)
            return said
        said += "; captured"
    return said


def _record(
    lore: Lore, payload: Payload, fallback: list[RawEvent] | None = None, *, background: bool = True
) -> str:
    """Bring the session up to date from the transcript, or from `fallback`
    events (the hook's own payload) when there is no transcript to read. A
    long backlog (Lore installed into a long conversation: 17 MB took 51 s
    while the agent waited) is recorded in a process of its own."""
    session_id = _session_id(payload)
    path = payload.get("transcript_path")
    if isinstance(path, str) and Path(path).is_file():
        backlog = lore.transcript_backlog(path, session_id) if background else 0
        if backlog > HOOK_BACKLOG:
            wanted = {"session_id": session_id, "transcript_path": path}
            if _detached(lore, "record", wanted):
                return f"{backlog / 1e6:.1f} MB of transcript to record: recording in the background"
        result = lore.record_transcript(path, session_id=session_id)
        compacted = f", {len(result.compactions)} compactions" if result.compactions else ""
        return f"session {result.session_id}: {result.appended} recorded{compacted}"
    if session_id is None or not fallback:
        return "no transcript, nothing to record"
    appended = lore.record_events(session_id, fallback, create=True)
    return f"session {session_id}: {len(appended.events)} recorded from the hook payload"


# Transcript bytes a hook records while the agent waits (about 5 s of work);
# beyond, `lore hook record` does it in the background.
HOOK_BACKLOG = 1_000_000


def _record_later(lore: Lore, payload: Payload) -> str:
    """`lore hook record`: a long transcript recorded in the background, one run
    per session at a time (a hook meanwhile makes it run once more)."""
    from lore.index.githooks import run_coalesced

    session_id = _session_id(payload)
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not Path(path).is_file():
        return "no transcript, nothing to record"
    done: list[str] = []

    def job() -> None:
        result = lore.record_transcript(path, session_id=session_id)
        done.append(f"session {result.session_id}: {result.appended} recorded")

    ran = run_coalesced(lore.project.local_dir / f"recording-{session_id or 'transcript'}", job)
    return "; ".join(done) if ran else "another run is under way and will run again"


def _session_id(payload: Payload) -> str | None:
    """Claude Code's session id, when it can name a session folder."""
    from lore.sessions.events import SESSION_ID_RE

    value = payload.get("session_id")
    return value if isinstance(value, str) and SESSION_ID_RE.match(value) else None


_HANDLERS: dict[str, Callable[[Lore, Payload], str]] = {
    "session-start": _session_start,
    "consolidate": _consolidate,  # started by session-start, in the background
    "record": _record_later,  # started by a hook whose transcript has a long backlog
    "user-prompt-submit": _user_prompt_submit,
    "post-tool-use": _post_tool_use,
    "pre-compact": _pre_compact,
    "stop": _stop,
    "session-end": _session_end,
}


def _payload(stream: TextIO | None) -> tuple[Payload, str | None]:
    """The hook's JSON, and why it can't be used when it can't: input over the
    limit (an endless or huge stdin is given up there, never read forever),
    unreadable, not JSON or not a JSON object. No input at all (a terminal,
    an empty pipe: a hook run by hand) is an empty payload."""
    from lore.errors import UsageError
    from lore.safe_read import MAX_INPUT_BYTES, json_loads, read_stream

    if stream is None:  # run with stdin closed (`<&-`): Python has no sys.stdin
        return {}, "the hook's input can't be read (no stdin)"
    if stream.isatty():
        return {}, None
    try:
        raw = read_stream(stream, "the hook's input")
    except UsageError:
        return {}, f"the hook's input is over the {MAX_INPUT_BYTES / (1024 * 1024):g} MiB limit"
    except (OSError, ValueError) as err:  # ValueError: UnicodeDecodeError, a closed stream
        return {}, f"the hook's input can't be read ({err})"
    if not raw.strip():
        return {}, None
    try:
        data = json_loads(raw)
    except ValueError as err:
        return {}, f"the hook's input is not JSON ({err})"
    if not isinstance(data, dict):
        return {}, f"the hook's input is a JSON {type(data).__name__}, not an object"
    return data, None


def _log(lore: Lore, line: str) -> None:
    _log_in(lore.project.root, line)


def _log_in(root: str | os.PathLike[str] | None, line: str) -> bool:
    """Append `line` to `root`'s ``.lore/local/hooks.log`` when `root` has a
    ``.lore/`` (its Lore could not be opened: a broken config.toml); whether it was."""
    from lore.atomic import append_line
    from lore.project import LORE_DIR
    from lore.secrets import redact

    if root is None or not (Path(root) / LORE_DIR).is_dir():
        return False
    # redacted: an error may name a transcript's path or an id the payload gave
    return append_line(
        Path(root),
        Path(root) / LORE_DIR / "local" / "hooks.log",
        f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {redact(line)[0]}",
    )
