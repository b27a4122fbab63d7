"""The Markdown body of a 000 task memory, from the bundle and the task's changes."""

from __future__ import annotations

import re
from typing import Any

from lore.errors import ArgumentError, UsageError
from lore.memory.complete.bundle import CompletionBundle
from lore.memory.complete.changes import TaskChanges
from lore.memory.complete.decisions import strip_task_id
from lore.memory.complete.text import BULLET, capitalize, item_key
from lore.memory.model import project_relative

__all__ = ["render_body"]

MAX_KEY_FILES = 15  # changed files listed under Key Files (besides the bundle's)
MAX_APPROACH_SUBJECTS = 5


def render_body(bundle: CompletionBundle, changes: TaskChanges) -> str:
    """The Markdown body of a 000 task memory (no frontmatter).

    Sections, in 000's order: Summary and Approach (always), Decisions, Key
    Files, Lessons and Cross-Agent Intel (each left out when empty).

    Raises:
        UsageError: there is nothing to summarise (no summary in the bundle,
            no task commits, no changed files).
    """
    parts = [
        "## Summary",
        _bullets(_summary(bundle, changes)),
        "## Approach",
        _escape_headings(bundle.approach.strip()) or _approach(changes),
    ]

    decisions = _merge(bundle.decisions, changes.decisions)
    if decisions:
        parts += ["## Decisions", _bullets(decisions)]

    key_files = _key_files(bundle.files, changes)
    if key_files:
        parts += ["## Key Files", "\n".join(key_files)]

    lessons = _merge(bundle.lessons, bundle.gotchas)
    if lessons:
        parts += ["## Lessons", _bullets(lessons)]

    patterns, gotchas = _merge(bundle.patterns), _merge(bundle.gotchas)
    if patterns or gotchas:
        parts.append("## Cross-Agent Intel")
        if patterns:
            parts += ["### Patterns", _bullets(patterns)]
        if gotchas:
            parts += ["### Gotchas", _bullets(gotchas)]
    return "\n\n".join(parts) + "\n"


# A task memory's list sections, and the bundle field each one's items come from.
_KEPT_SECTIONS = {
    "## Decisions": "decisions",
    "## Lessons": "lessons",
    "### Patterns": "patterns",
    "### Gotchas": "gotchas",
}


def kept_items(body: str) -> dict[str, list[str]]:
    """The items of a task memory's Decisions, Lessons, Patterns and Gotchas
    (by bundle field), as :func:`render_body` wrote them: what a later
    completion of the task adds to rather than drops."""
    out: dict[str, list[str]] = {}
    for heading, lines in _sections(body):
        field = _KEPT_SECTIONS.get((heading or "").strip())
        if field is not None:
            out[field] = [
                "\n".join([item[0][2:], *(row.strip() for row in item[1:])]).strip() for item in _items(lines)
            ]
    return out


def merged_into(edited: str, rendered: str) -> str:
    """A task memory someone edited since ``lore complete`` wrote it, with what
    a new completion (`rendered`) adds: each list item not in it yet goes at
    the end of its section, and a section it lacks goes at the end. Nothing
    of the edited text is changed or dropped (a rewrite lost a person's notes)."""
    sections = _sections(edited)
    present = {line.strip() for line in edited.splitlines()}
    for heading, lines in _sections(rendered):
        mine = next(
            (s for s in sections if s[0] is not None and s[0].strip() == (heading or "").strip()), None
        )
        if mine is None:
            if heading is not None:
                sections.append((heading, lines))
            continue
        new = [line for item in _items(lines) if item[0].strip() not in present for line in item]
        if new:  # after the section's last item, or at its end
            body = mine[1]
            at = next((i + 1 for i in range(len(body) - 1, -1, -1) if _in_item(body, i)), None)
            if at is None:
                while body and not body[-1].strip():
                    body.pop()
                at = len(body)
            body[at:at] = new
    out: list[str] = []
    for heading, lines in sections:
        if heading is not None:
            if out and out[-1].strip():
                out.append("")
            out.append(heading)
        out.extend(lines)
    return "\n".join(out).strip() + "\n"


def _sections(text: str) -> list[tuple[str | None, list[str]]]:
    """(heading line, or None before the first; its lines) of a Markdown body, fences respected."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            sections.append((line, []))
        else:
            sections[-1][1].append(line)
    return sections


def _in_item(lines: list[str], i: int) -> bool:
    """Whether line `i` is a list item's (its ``- `` line or an indented line after one)."""
    while i >= 0 and lines[i].startswith("  ") and lines[i].strip():
        i -= 1
    return i >= 0 and lines[i].startswith("- ")


def _items(lines: list[str]) -> list[list[str]]:
    """The list items of a section's lines: a ``- `` line and the indented lines after it."""
    items: list[list[str]] = []
    for line in lines:
        if line.startswith("- "):
            items.append([line])
        elif line.startswith("  ") and line.strip() and items:
            items[-1].append(line)
    return items


def _summary(bundle: CompletionBundle, changes: TaskChanges) -> list[str]:
    items = _merge(bundle.summary)
    if items:
        return items
    if changes.commits:
        return _merge([capitalize(strip_task_id(c.subject, changes.task)) for c in reversed(changes.commits)])
    if changes.files:
        shown = ", ".join(f"`{p}`" for p in changes.files[:5])
        more = f" and {len(changes.files) - 5} more" if len(changes.files) > 5 else ""
        return [f"Changed {shown}{more} (uncommitted)"]
    raise ArgumentError(
        "nothing to summarise: no summary was given and no commits or changes were found "
        'for the task; give {0} (or a "summary" in the bundle)',
        "summary",
    )


def _approach(changes: TaskChanges) -> str:
    commits = list(reversed(changes.commits))
    touched = f" touching {_plural(len(changes.files), 'file')}" if changes.files else ""
    if commits:
        subjects = [capitalize(strip_task_id(c.subject, changes.task)) for c in commits]
        listed = "; ".join(subjects[:MAX_APPROACH_SUBJECTS])
        if len(subjects) > MAX_APPROACH_SUBJECTS:
            listed += f"; and {len(subjects) - MAX_APPROACH_SUBJECTS} more"
        span = commits[0].sha[:7] if len(commits) == 1 else f"{commits[0].sha[:7]}..{commits[-1].sha[:7]}"
        return f"Work in {_plural(len(commits), 'commit')} ({span}){touched}: {listed}."
    if changes.files:
        return (
            f"Uncommitted changes to {_plural(len(changes.files), 'file')} "
            "(not yet committed when this memory was written)."
        )
    return "No commits mention this task and the work tree had no changes."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _merge(*groups: list[str]) -> list[str]:
    """Items of all groups in order, blank and repeated ones (see :func:`item_key`) dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for group in groups:
        for item in group:
            key = item_key(item)
            if key and key not in seen:
                seen.add(key)
                out.append(item.strip())
    return out


def _bullets(items: list[str]) -> str:
    lines = []
    for item in items:
        rows = [row.strip() for row in item.strip().splitlines() if row.strip()]
        rows[0] = BULLET.sub("", rows[0], count=1)
        lines.append("- " + rows[0])
        lines.extend("  " + row for row in rows[1:])
    return "\n".join(lines)


def _escape_headings(text: str) -> str:
    """Keep free text from opening sections of its own: ``# x`` lines become ``\\# x``."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            line = "\\" + line
        out.append(line)
    return "\n".join(out).strip()


def _key_files(entries: list[str], changes: TaskChanges) -> list[str]:
    known = {path: (line, note) for path, line, note in changes.key_files}
    lines: list[str] = []
    named: set[str] = set()
    for entry in entries:
        parsed = _parse_file_entry(entry, known)
        if parsed is None:
            lines.append("- " + " ".join(entry.split()))
            continue
        path, line, note = parsed
        if not project_relative(path):  # the memory is committed: a path of one machine means nothing
            raise UsageError(
                f"Key Files entry '{path[:200]}' is not a path inside the project; "
                "give it relative to the project root (e.g. src/app.py)"
            )
        if path in named:
            continue
        named.add(path)
        git_line, git_note = known.get(path, (None, ""))
        lines.append(_file_line(path, line if line is not None else git_line, note or git_note))
    rest = [(p, line, note) for p, line, note in changes.key_files if p not in named]
    for path, line, note in rest[:MAX_KEY_FILES]:
        lines.append(_file_line(path, line, note))
    if len(rest) > MAX_KEY_FILES:
        lines.append(f"- …and {_plural(len(rest) - MAX_KEY_FILES, 'more changed file')}")
    return lines


def _file_line(path: str, line: int | None, note: str) -> str:
    ref = f"`{path}:{line}`" if line else f"`{path}`"
    return f"- {ref} - {note}" if note else f"- {ref}"


_REF = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+)(?:[-–]\d+)?)?:?$")


def _parse_file_entry(entry: str, known: dict[str, Any]) -> tuple[str, int | None, str] | None:
    """``path``, ``path:45``, ``path:45 - note``, ``\\`path:45\\` — note``, ``path (note)``.

    Returns None when the entry does not start with something path-like.
    """
    text = BULLET.sub("", " ".join(entry.split()), count=1)
    if text.startswith("`") and "`" in text[1:]:
        end = text.index("`", 1)
        ref, rest = text[1:end], text[end + 1 :]
    else:
        ref, _, rest = text.partition(" ")
    match = _REF.match(ref.strip().rstrip(",;"))
    if not match:
        return None
    path = match.group("path").removeprefix("./")
    if path not in known and "/" not in path and "." not in path:
        return None  # a sentence, not a file reference
    note = rest.strip().lstrip("-—–:").strip()
    if note.startswith("(") and note.endswith(")"):
        note = note[1:-1].strip()
    line = int(match.group("line")) if match.group("line") else None
    return path, line, note
