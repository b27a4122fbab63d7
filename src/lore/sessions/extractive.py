"""The offline summariser: sentences picked from the events, never invented.

It keeps what a later session needs and what 001's digest lists: decisions
("we decided / chose / will use..."), work done, things learned, errors with
what fixed them (an error line followed later by a fix), user corrections
("no, use X", "actually...", "don't...", "prefer..."), the files mentioned or
touched by tools, and what is still open. Each kept sentence carries the id
of its event (``[e42]``) so it can be found in the archive.

The Markdown is sectioned (Decided / Done / Learned / Errors and fixes /
Corrections / Files / Open; empty sections are left out), bounded (a few
items per section, each clipped), and opens with the range, dates and the
range's most distinctive terms, so a search for what was discussed finds it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from lore.memory.capture.cues import CORRECTION, DECISION, DONE, FIXED, LEARNED, OPEN, sentences
from lore.memory.capture.digest import error_events
from lore.memory.capture.errors import error_lines
from lore.memory.capture.parse import normalise_error
from lore.memory.values import clip
from lore.sessions.events import RawEvent, event_text
from lore.sessions.summary import Summary, header, topics

MAX_ITEMS = 8
MAX_FILES = 20
MAX_ITEM_CHARS = 240
FIX_WINDOW = 40  # events after an error in which its fix is looked for

_PATH = re.compile(
    r"(?<![\w/.:@-])(?:~?/|\.{1,2}/)?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8}\b"
    r"|(?<![\w/.@-])[\w-]+\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|"
    r"md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|sh|sql|html|css|scss|vue|svelte|lock|env)\b"
)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_PATH_ARGS = ("file_path", "path", "notebook_path", "filePath", "filename", "target_file")
_EDIT_TOOLS = re.compile(r"edit|write|patch|create|replace|insert|rename|move|delete|notebookedit", re.I)


def summarize_extractive(events: list[RawEvent], *, session_id: str, root: Path | None = None) -> Summary:
    """Summarise `events` (on-disk dicts, oldest first) without any model.

    Args:
        session_id: named in the header.
        root: the project root; absolute paths under it are shown relative.
    """
    sentences = list(_sentences(events))
    decided = _pick([s for s in sentences if DECISION.search(s.text)], latest=True)
    done = _pick([s for s in sentences if s.role == "assistant" and DONE.search(s.text)], latest=True)
    learned = _pick([s for s in sentences if LEARNED.search(s.text) and not DECISION.search(s.text)])
    corrections = _pick(
        _whole_messages(events, [s for s in sentences if s.role == "user" and CORRECTION.search(s.text)])
    )
    errors, unresolved = _errors_and_fixes(events, sentences)
    files = _files(events, root)
    open_items = _pick(
        [s for s in sentences if OPEN.search(s.text) and s.role in ("user", "assistant")], latest=True
    )
    open_lines = [f"unresolved: `{e}`" for e in unresolved[:3]] + [_item(s) for s in open_items]

    words = topics(events, root=root)
    sections = [
        ("Decided", [_item(s) for s in decided]),
        ("Done", [_item(s) for s in done]),
        ("Learned", [_item(s) for s in learned]),
        ("Errors and fixes", errors),
        ("Corrections", [_item(s) for s in corrections]),
        ("Files", files),
        ("Open", open_lines[:MAX_ITEMS]),
    ]
    body = [header(events, session_id=session_id, terms=words)]
    for title, items in sections:
        if items:
            body.append(f"## {title}\n\n" + "\n".join(f"- {item}" for item in items))
    return Summary(body="\n\n".join(body) + "\n", keywords=words[:12], summarizer="extractive")


class _Sentence:
    __slots__ = ("event_id", "index", "role", "text")

    def __init__(self, event_id: int, index: int, role: str, text: str):
        self.event_id, self.index, self.role, self.text = event_id, index, role, text


def _sentences(events: list[RawEvent]) -> Iterator[_Sentence]:
    """Sentences of the messages (tool output is searched for errors and files only)."""
    for index, event in enumerate(events):
        if event.get("type") != "message" or event.get("role") not in ("user", "assistant"):
            continue
        for text in sentences(str(event.get("content") or "")):
            yield _Sentence(event.get("id", 0), index, event["role"], text)


def _whole_messages(events: list[RawEvent], found: list[_Sentence]) -> list[_Sentence]:
    """The messages the sentences come from, whole (a correction's second
    sentence, "Use X instead.", is usually the point)."""
    out: dict[int, _Sentence] = {}
    for sentence in found:
        if sentence.index not in out:
            text = " ".join(str(events[sentence.index].get("content") or "").split())
            out[sentence.index] = _Sentence(sentence.event_id, sentence.index, sentence.role, text)
    return list(out.values())


def _pick(items: list[_Sentence], *, latest: bool = False) -> list[_Sentence]:
    """At most MAX_ITEMS distinct sentences: the latest ones, or spread over the range."""
    seen: set[str] = set()
    unique = []
    for item in reversed(items) if latest else items:
        key = item.text.lower()
        if key not in seen:
            seen.add(key)
            unique.append(item)
    if latest:
        return sorted(unique[:MAX_ITEMS], key=lambda s: s.index)
    if len(unique) <= MAX_ITEMS:
        return unique
    step = (len(unique) - 1) / (MAX_ITEMS - 1)
    return [unique[round(i * step)] for i in range(MAX_ITEMS)]


def _item(sentence: _Sentence) -> str:
    prefix = "user: " if sentence.role == "user" else ""
    return f"{_clip(prefix + sentence.text)} [e{sentence.event_id}]"


def _clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    return clip(text, limit)


def _errors_and_fixes(events: list[RawEvent], sentences: list[_Sentence]) -> tuple[list[str], list[str]]:
    """``error → fix`` items (most frequent errors first) and errors never followed by a fix
    (within FIX_WINDOW events of any of their occurrences: an error seen early and
    again just before its fix is fixed)."""
    seen: dict[str, list[tuple[int, str]]] = {}  # pattern -> (event index, the line as seen), in order
    counts: Counter[str] = Counter()
    reports = error_events(events)  # not a command, nor a file a tool showed
    for index, event in enumerate(events):
        if not reports[index]:
            continue
        for line in error_lines(event_text(event)):
            pattern = normalise_error(line)
            counts[pattern] += 1
            seen.setdefault(pattern, []).append((index, line))
    fixes_by_index: dict[int, list[_Sentence]] = {}
    for sentence in sentences:
        if FIXED.search(sentence.text):
            fixes_by_index.setdefault(sentence.index, []).append(sentence)
    items: list[str] = []
    unresolved: list[str] = []
    for pattern, _ in counts.most_common():
        # Cited from the first occurrence a fix follows; never fixed: from its first.
        fixed = (o for o in seen[pattern] if _first_after(fixes_by_index, o[0], len(events)) is not None)
        index, line = next(fixed, seen[pattern][0])
        fix = _first_after(fixes_by_index, index, len(events))
        times = f" ({counts[pattern]}×)" if counts[pattern] > 1 else ""
        error = _clip(line, 160)
        where = f"e{events[index].get('id', 0)}"
        if fix is None:
            unresolved.append(f"{error}{times} [{where}]")
        elif len(items) < MAX_ITEMS:
            items.append(f"`{error}`{times} → {_clip(fix.text, 160)} [{where}→e{fix.event_id}]")
    return items, unresolved


def _first_after(fixes_by_index: dict[int, list[_Sentence]], index: int, total: int) -> _Sentence | None:
    for later in range(index + 1, min(total, index + 1 + FIX_WINDOW)):
        if later in fixes_by_index:
            return fixes_by_index[later][0]
    return None


def _files(events: list[RawEvent], root: Path | None) -> list[str]:
    """Paths mentioned or touched, most mentioned first; ``(edited)`` when a tool wrote them."""
    counts: Counter[str] = Counter()
    edited: set[str] = set()
    relative = _relativiser(root)
    for event in events:
        found: list[str] = []
        if event.get("type") == "tool_call":
            args = event.get("args")
            if isinstance(args, dict):
                found += [v for k, v in args.items() if k in _PATH_ARGS and isinstance(v, str)]
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            found += _PATCH_FILE.findall(text.replace("\\n", "\n"))
            found += _PATH.findall(text)
            if _EDIT_TOOLS.search(str(event.get("toolName", ""))):
                edited.update(relative(p) for p in found)
        else:
            found += _PATH.findall(event_text(event))
        for path in found:
            counts[relative(path)] += 1
    out = []
    for path, _ in counts.most_common(MAX_FILES):
        out.append(f"`{path}`" + (" (edited)" if path in edited else ""))
    return out


def _relativiser(root: Path | None) -> Callable[[str], str]:
    prefix = f"{root.as_posix().rstrip('/')}/" if root is not None else None

    def relative(path: str) -> str:
        path = path.strip().strip("'\"`")
        if prefix and path.startswith(prefix):
            return path[len(prefix) :]
        return path

    return relative
