"""`lore session ...`: recorded agent sessions (start, append, end, list, show, import, compact).

Each command is a few lines over :class:`lore.service.Lore`'s session methods
(``start_session``, ``record_events``, ``record_transcript``, ``compact_session``...).
"""

from __future__ import annotations

import json
import sys

import click

from lore.errors import UsageError
from lore.interfaces.cli.common import json_option, refused_as_usage, with_lore
from lore.interfaces.cli.decoding import read_stdin
from lore.interfaces.cli.output import echo, emit_json, local_time, progress_bar, table, warn


@click.group()
def session():
    """Recorded agent sessions: the live context, compacted summaries, the raw archive.

    \b
    Examples:
      id=$(lore session start)
      lore session append "$id" --role user --content "Fix the flaky sync test"
      lore session compact "$id"
      lore session search "sync test"
    """


def _done(lore, data, as_json: bool, text: str) -> None:
    """Print the result (JSON or one line); notices go to stderr with the others."""
    if as_json:
        emit_json(data)
    else:
        echo(text)


@session.command()
@click.option("--id", "session_id", help="Session id (default: a new one, time-ordered).")
@click.option("--user", help="The user the session is with.")
@json_option
@with_lore
def start(lore, session_id, user, as_json):
    """Start a session and print its id (the previous sessions' memories are digested and cleaned)."""
    info = lore.start_session(session_id, user=user)
    _done(lore, info.to_dict(), as_json, info.id)


@session.command()
@click.argument("session_id")
@click.option(
    "--role",
    type=click.Choice(["user", "assistant", "system", "tool"]),
    default="user",
    show_default=True,
    help="Message role.",
)
@click.option("--content", help="Message text (default: stdin).")
@click.option("--tool", "tool_name", help="Append a tool call to this tool (with --args).")
@click.option("--args", "tool_args", help="The tool call's arguments, as JSON.")
@click.option("--result", help="Append a tool result (after --tool's call, or for --call-id).")
@click.option("--call-id", help="The tool call a result answers / the id of a new call.")
@click.option("--error", "is_error", is_flag=True, help="The tool result is an error.")
@click.option("--timestamp", help="When it happened (ISO 8601, default now).")
@click.option("--create", is_flag=True, help="Start the session if it does not exist.")
@json_option
@with_lore
def append(
    lore,
    session_id,
    role,
    content,
    tool_name,
    tool_args,
    result,
    call_id,
    is_error,
    timestamp,
    create,
    as_json,
):
    """Append a message (--role, --content or stdin) or a tool call/result (--tool, --args, --result)."""
    from lore.sessions import one_append

    if (
        content is None
        and not tool_name
        and result is None
        and sys.stdin is not None
        and not sys.stdin.isatty()
    ):
        content = read_stdin().rstrip("\n")  # the newline a pipe adds
    with refused_as_usage():  # a value given here that an event refuses: bad usage (exit 2)
        events = one_append(
            role=role,
            content=content,
            tool_name=tool_name,
            args=_json_arg(tool_args) if tool_args is not None else None,
            call_id=call_id,
            result=result,
            is_error=is_error,
            timestamp=timestamp,
        )
        appended = lore.record_events(session_id, events, create=create)
    ids = ", ".join(str(e.id) for e in appended.events)
    line = f"appended {ids} to {session_id} ({appended.token_count} tokens in context)"
    if appended.compaction:
        c = appended.compaction
        line += f"; compacted events {c.first_event}-{c.last_event} into {c.summary_path}"
    _done(lore, appended.to_dict(), as_json, line)


@session.command()
@click.argument("session_id")
@json_option
@with_lore
def end(lore, session_id, as_json):
    """Mark a session ended (appending to it is refused from then on)."""
    info = lore.end_session(session_id)
    count = info.event_count
    _done(lore, info.to_dict(), as_json, f"ended {info.id} ({count} event{'' if count == 1 else 's'})")


# Why a compaction did nothing, as a person reads it.
_NOT_COMPACTED = {
    "nothing-to-compact": "every event is in the protected recent tail",
    "under-soft-limit": "the live events are under the soft limit (without --if-over it compacts anyway)",
    "busy": "another process is compacting it; try again in a moment",
}


@session.command(name="list")
@click.option("--status", type=click.Choice(["active", "ended"]), help="Only sessions in this state.")
@click.option("--limit", type=click.IntRange(min=1), help="At most N sessions.")
@json_option
@with_lore
def list_(lore, status, limit, as_json):
    """Sessions, most recently updated first."""
    sessions = lore.session_list(status=status, limit=limit)
    if as_json:
        emit_json([info.to_dict() for info in sessions])
        return
    if not sessions:
        # An agent's sessions (Claude Code's hooks record as claude-code) are its own.
        hint = (
            "" if lore.agent else "; an agent's own are listed with --agent NAME (Claude Code's: claude-code)"
        )
        click.echo(f"no sessions{hint}")
        return
    table(
        ["id", "agent", "status", "events", "archived", "tokens", "updated"],
        [
            [
                s.id,
                s.agent or "",
                s.status,
                str(s.event_count),
                str(s.archived_event_count),
                str(s.token_count),
                local_time(s.updated_at, minutes=True),
            ]
            for s in sessions
        ],
    )


@session.command()
@click.argument("session_id")
@click.option("--all", "include_archived", is_flag=True, help="Every raw event, archived ones too.")
@click.option("--limit-tokens", type=click.IntRange(min=1), help="Cut the context view to N tokens.")
@json_option
@with_lore
def show(lore, session_id, include_archived, limit_tokens, as_json):
    """The context view (summaries, then live events); --all for the raw events on disk."""
    if include_archived:
        events = lore.session_events(session_id, include_archived=True)
        if as_json:
            emit_json([e.to_dict() for e in events])
        else:
            from lore.sessions.events import render_event

            echo("\n\n".join(render_event(e) for e in events) or "no events")
        return
    view = lore.session_context(session_id, limit_tokens=limit_tokens)
    if as_json:
        emit_json(view.to_dict())
        return
    note = f", {view.dropped} oldest left out (hard limit {view.hard_limit_tokens})" if view.dropped else ""
    warn(
        f"session {session_id}: {len(view.events)} items, {view.tokens} tokens, {view.summaries} summaries{note}"
    )
    echo(view.render() or "no events")  # a transcript's text: no control character reaches the terminal


@session.command(name="import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--session", "session_id", help="Session id (default: the transcript's own).")
@json_option
@with_lore
def import_(lore, path, session_id, as_json):
    """Import a Claude Code or Codex transcript (JSONL) into a session; idempotent."""
    with progress_bar("importing", enabled=not as_json):
        result = lore.record_transcript(path, session_id=session_id)
    line = (
        f"{result.format} transcript → session {result.session_id}: {result.appended} new events, "
        f"{result.skipped} already there"
        + (f", {len(result.compactions)} compactions" if result.compactions else "")
    )
    if result.unreadable:
        from lore.interfaces.cli.output import warn

        warn(f"{result.unreadable} line(s) of {path} are not JSON objects and were left out")
    _done(lore, result.to_dict(), as_json, line)


@session.command()
@click.argument("session_id")
@click.option("--if-over", is_flag=True, help="Only when the live events exceed the soft limit.")
@json_option
@with_lore
def compact(lore, session_id, if_over, as_json):
    """Summarise and archive everything before the protected recent tail."""
    with progress_bar("compacting", enabled=not as_json):
        result = lore.compact_session(session_id, force=not if_over)
    line = (
        f"compacted events {result.first_event}-{result.last_event} ({result.tokens_archived} tokens) "
        f"into {result.summary_path} ({result.summary_tokens} tokens, {result.summarizer}); "
        f"raw events in {result.archive}"
        if result.compacted
        else f"nothing compacted: {_NOT_COMPACTED.get(result.reason, result.reason)}"
    )
    _done(lore, result.to_dict(), as_json, line)


@session.command(name="search")
@click.argument("query", nargs=-1, required=True)
@click.option("--session", "session_id", help="Only this session's summaries.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most N results (default 10, max 50)."
)
@json_option
@with_lore
def search_(lore, query, session_id, limit, as_json):
    """Search the summaries of compacted sessions (yours and unowned ones)."""
    from lore.interfaces.cli.output import emit_results

    hits = lore.session_search(" ".join(query), limit=limit, session=session_id)
    emit_results(hits, as_json, lambda h: h.to_dict(), _render_hit)


def _render_hit(out, hit) -> None:
    from rich.markup import escape

    out.print(
        f"[bold]{escape(hit.title)}[/bold]  [dim]{hit.score:.2f} · {local_time(hit.occurred_at, minutes=True)}[/dim]"
    )
    out.print(f"  [cyan]{escape(hit.path)}:{hit.start_line}[/cyan]  [dim]{escape(hit.section or '')}[/dim]")
    out.print(f"  {hit.snippet}", markup=False)


def _json_arg(text: str):
    try:
        return json.loads(text)
    except ValueError as err:
        raise UsageError(f'--args must be JSON, e.g. \'{{"path": "src/app.py"}}\' ({err})') from None


COMMANDS = [session]
