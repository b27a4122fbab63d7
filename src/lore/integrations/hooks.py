"""Claude Code hook handlers (`lore hook EVENT`, wired by `lore install claude-code`).

Hooks must never block or break the agent: every failure is swallowed and
logged to `.lore/local/hooks.log`, and the exit code is always 0.

- SessionStart: print the recall pack for the current branch as additional context.
- PreCompact: capture the transcript (002's rules) before it is compacted.
- Stop: nothing heavy (the memory index is already fresh on every read).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def run_hook(event: str, project: str, stdin=None) -> int:
    started = time.time()
    lore = None
    try:
        payload = _payload(stdin or sys.stdin)
        from lore.service import Lore

        lore = Lore.open(payload.get("cwd") or project, agent=os.environ.get("LORE_AGENT") or "claude-code")
        message = _HANDLERS[event](lore, payload)
        _log(lore, f"ok {event}: {message} ({time.time() - started:.2f} s)")
    except Exception as err:
        if lore is not None:
            _log(lore, f"error {event}: {err}")
        else:
            print(f"lore hook {event}: {err}", file=sys.stderr)
    finally:
        if lore is not None:
            lore.close()
    return 0


def _session_start(lore, payload: dict) -> str:
    title = lore.branch_title() or "project conventions decisions gotchas"
    pack = lore.recall(title, fresh=False)
    context = pack.markdown if pack.items else ""
    if context:
        print(
            json.dumps(
                {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
            )
        )
    return f"{len(pack.items)} items, {pack.tokens_used} tokens"


def _pre_compact(lore, payload: dict) -> str:
    path = payload.get("transcript_path")
    if not path or not Path(path).is_file():
        return "no transcript"
    result = lore.capture_transcript(path)
    return f"{result['created']} captured, {result['existing']} known, {result['gotchas']} gotchas"


def _stop(lore, payload: dict) -> str:
    return "nothing to do"


_HANDLERS = {"session-start": _session_start, "pre-compact": _pre_compact, "stop": _stop}


def _payload(stream) -> dict:
    if stream.isatty():
        return {}
    raw = stream.read()
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _log(lore, line: str) -> None:
    try:
        with open(lore.project.local_dir / "hooks.log", "a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
    except OSError:
        pass
