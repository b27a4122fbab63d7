"""Task memories at completion time (seed 000's `/jat:complete` step).

When an agent finishes a task, two things describe the work: the agent's
*completion bundle* (summary, approach, decisions, lessons, cross-agent intel)
and *git* (the task's commits, the files they changed, the decisions their
messages state). This module reads both and renders the Markdown body of a
000-style task memory, with 000's sections and source mapping:

=====================  =========================================================
section                generated from
=====================  =========================================================
``## Summary``         bundle summary; else the task's commit subjects
``## Approach``        bundle approach; else a one-line account of the commits
``## Decisions``       bundle decisions, then decisions mined from commit messages
``## Key Files``       bundle ``crossAgentIntel.files``, then the git diff
``## Lessons``         bundle lessons and ``crossAgentIntel.gotchas``
``## Cross-Agent Intel``  ``### Patterns`` and ``### Gotchas``
=====================  =========================================================

A task's commits are those reachable from HEAD whose message mentions the task
id as a whole word (``jat-abc``, ``[jat-abc]``, ``jat-abc:``; not ``jat-abcd``
or the child task ``jat-abc.1``). When there are none, the uncommitted work
tree (staged, unstaged and untracked) is taken as the task's work.

Frontmatter (task, agent, files, tags, ...) is the caller's job; this module
only produces the body and the facts to fill it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from lore.errors import UsageError
from lore.index.gitrepo import (
    _LOG_FIELDS,
    _LOG_FORMAT,
    Commit,
    _git,
    _path,
    _records,
    _text,
    head,
    repo_root,
    worktree_changes,
)

__all__ = [
    "CompletionBundle",
    "TaskChanges",
    "load_bundle",
    "mine_decisions",
    "render_body",
    "strip_task_id",
    "task_changes",
]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
MAX_DECISIONS = 8  # mined from commit messages
MAX_DECISION_CHARS = 300
MAX_KEY_FILES = 15  # changed files listed under Key Files (besides the bundle's)
MAX_APPROACH_SUBJECTS = 5


# -- the completion bundle ----------------------------------------------------


@dataclass
class CompletionBundle:
    """What the agent says about its finished task (000's CompletionBundle).

    Attributes:
        summary: what was accomplished, one bullet per item.
        approach: how the work was done (free Markdown).
        decisions, lessons: one item each.
        patterns, gotchas: ``crossAgentIntel.patterns`` / ``.gotchas``.
        files: ``crossAgentIntel.files``: key files the agent names, each
            ``path``, ``path:line`` or ``path:line - note``.
        tags, labels, priority, task_type, risk: frontmatter hints for the caller.
        task, agent: ``taskId`` / ``agentName`` when the bundle carries them.
    """

    summary: list[str] = field(default_factory=list)
    approach: str = ""
    decisions: list[str] = field(default_factory=list)
    lessons: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    gotchas: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    priority: int | None = None
    task_type: str | None = None
    risk: str | None = None
    task: str | None = None
    agent: str | None = None


# JSON key (any spelling) -> bundle attribute. Keys not listed (quality,
# humanActions, suggestedTasks, ...) are ignored: JAT bundles carry more than
# a memory needs.
_BUNDLE_KEYS = {
    "summary": "summary",
    "approach": "approach",
    "decisions": "decisions",
    "lessons": "lessons",
    "patterns": "patterns",
    "gotchas": "gotchas",
    "files": "files",
    "key_files": "files",
    "keyfiles": "files",
    "tags": "tags",
    "labels": "labels",
    "priority": "priority",
    "type": "task_type",
    "task_type": "task_type",
    "tasktype": "task_type",
    "risk": "risk",
    "risk_level": "risk",
    "risklevel": "risk",
    "task": "task",
    "task_id": "task",
    "taskid": "task",
    "agent": "agent",
    "agent_name": "agent",
    "agentname": "agent",
}
_INTEL_KEYS = ("crossagentintel", "cross_agent_intel")
_LIST_FIELDS = ("summary", "decisions", "lessons", "patterns", "gotchas", "files", "tags", "labels")


def load_bundle(path: Path) -> CompletionBundle:
    """Read a completion bundle from a JSON file.

    Keys may be camelCase (JAT's ``crossAgentIntel``, ``riskLevel``) or
    snake_case; ``patterns``/``gotchas``/``files`` may sit inside
    ``crossAgentIntel`` or at the top level. ``summary`` may be a list or a
    string (split into bullets by lines). Unknown keys are ignored.

    Raises:
        UsageError: the file is unreadable, not JSON, or a key has the wrong
            type; the message names the file and the key.
    """
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(
            f"completion bundle {path} does not exist; pass the JSON file written by the agent"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read completion bundle {path}: {err}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise UsageError(
            f"{path}: not valid JSON ({err.msg} at line {err.lineno} column "
            f"{err.colno}); fix the completion bundle"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}: a completion bundle must be a JSON object "
            '(e.g. {"summary": [...], "approach": "..."})'
        )

    values: dict[str, tuple[str, object]] = {}  # attribute -> (key as written, value)
    for key, value in data.items():
        folded = str(key).lower()
        if folded in _INTEL_KEYS:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise UsageError(
                    f"{path}: key '{key}' must be an object with files, patterns and gotchas lists"
                )
            for inner, item in value.items():
                attr = {"files": "files", "patterns": "patterns", "gotchas": "gotchas"}.get(
                    str(inner).lower()
                )
                if attr:
                    values[attr] = (f"{key}.{inner}", item)
        elif folded in _BUNDLE_KEYS or _snake(str(key)) in _BUNDLE_KEYS:
            attr = _BUNDLE_KEYS.get(folded) or _BUNDLE_KEYS[_snake(str(key))]
            values.setdefault(attr, (str(key), value))  # crossAgentIntel wins over top level

    bundle = CompletionBundle()
    for attr, (key, value) in values.items():
        if value is None:
            continue
        if attr == "summary":
            bundle.summary = _summary_items(value, path, key)
        elif attr == "approach":
            bundle.approach = _approach_text(value, path, key)
        elif attr in _LIST_FIELDS:
            setattr(bundle, attr, _items_of(value, path, key))
        elif attr == "priority":
            bundle.priority = _priority(value, path, key)
        else:
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise UsageError(f"{path}: key '{key}' must be a string")
            setattr(bundle, attr, str(value).strip() or None)
    return bundle


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _items_of(value: object, path: Path, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise UsageError(f"{path}: key '{key}' must be a list of strings")
    items = []
    for item in value:
        if isinstance(item, dict) and key.lower().endswith("files"):
            item = _file_entry_from_object(item, path, key)
        if not isinstance(item, (str, int, float)) or isinstance(item, bool):
            raise UsageError(f"{path}: key '{key}' must be a list of strings (found {type(item).__name__})")
        text = str(item).strip()
        if text:
            items.append(text)
    return items


def _file_entry_from_object(item: dict, path: Path, key: str) -> str:
    """``{"path": "a.py", "line": 3, "note": "..."}`` -> ``a.py:3 - ...``."""
    name = item.get("path") or item.get("file")
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{path}: key '{key}': a file object needs a 'path' string")
    line = item.get("line")
    note = item.get("note") or item.get("description") or item.get("why") or ""
    ref = f"{name.strip()}:{line}" if isinstance(line, int) and not isinstance(line, bool) else name.strip()
    return f"{ref} - {note}" if isinstance(note, str) and note.strip() else ref


def _summary_items(value: object, path: Path, key: str) -> list[str]:
    if isinstance(value, str):
        return _split_bullets(value)
    return _items_of(value, path, key)


def _approach_text(value: object, path: Path, key: str) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n\n".join(v.strip() for v in value if v.strip())
    if not isinstance(value, str):
        raise UsageError(f"{path}: key '{key}' must be a string")
    return value.strip()


def _priority(value: object, path: Path, key: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"{path}: key '{key}' must be a whole number (0-4)")
    return value


_BULLET = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")


def _split_bullets(text: str) -> list[str]:
    """One item per line; if the text is a bulleted list, lines without a
    bullet continue the item above (wrapped text)."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    bulleted = any(_BULLET.match(line.strip()) for line in lines)
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if bulleted and items and not _BULLET.match(stripped):
            items[-1] += " " + stripped
        else:
            items.append(_BULLET.sub("", stripped, count=1))
    return [item for item in items if item]


# -- the task's changes in git ------------------------------------------------


@dataclass
class TaskChanges:
    """What git knows about a task's work.

    Attributes:
        commits: the task's commits, newest first (empty when the work is
            uncommitted or nothing was found).
        files: changed files (posix, relative to the repository root) that
            still exist after the task, most changed lines first.
        key_files: ``(path, line, note)`` per file in `files`' order: the first
            changed line in the new version (None for binary or mode-only
            changes) and a short note such as ``+12 −3 lines in `def foo()```.
        decisions: decisions stated in the commit messages, each ending with
            the commit's short sha, e.g. ``Chose X rather than Y (a1b2c3d)``.
        task: the task id asked for.
    """

    commits: list[Commit] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    key_files: list[tuple[str, int | None, str]] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    task: str = ""


def task_changes(root: Path, task: str, *, max_commits: int = 200) -> TaskChanges:
    """Find a task's commits (or, without any, the uncommitted work) and summarise them.

    Args:
        root: any folder inside the work tree.
        task: the task id, e.g. ``jat-abc``; matched as a whole word,
            case-insensitively, in commit subjects and bodies.
        max_commits: consider at most this many (newest) task commits.

    Returns an empty :class:`TaskChanges` when `root` is not in a git work
    tree, so a memory can still be written from the bundle alone. Runs a
    fixed handful of git processes (never one per commit or per file).

    Raises:
        UsageError: `task` is empty.
        GitError: git failed unexpectedly.
    """
    task = (task or "").strip()
    if not task:
        raise UsageError("no task id given; pass the task's id, e.g. jat-abc")
    top = repo_root(Path(root))
    if top is None:
        return TaskChanges(task=task)
    found = _task_commits(top, task, max_commits)
    if found:
        # A merge's first-parent diff repeats its branch's commits; use merges
        # only when the task has nothing else (e.g. only "Merge jat-abc" names it).
        plain = [c for c in found if not c.is_merge] or found
        stats = _commit_stats(top, [c.sha for c in reversed(plain)])
        files = _by_churn(stats)
    else:
        stats, files = _worktree_stats(top)
    key_files = [
        (p, stats[p].first if p in stats else None, stats[p].note() if p in stats else "changed")
        for p in files
    ]
    return TaskChanges(
        commits=found, files=files, key_files=key_files, decisions=mine_decisions(found, task), task=task
    )


def _task_pattern(task: str) -> re.Pattern[str]:
    # Whole word: not inside a longer id (jat-abcd, xjat-abc, jat-abc-2) and not
    # a child task (jat-abc.1); "jat-abc." at the end of a sentence still counts.
    return re.compile(rf"(?<![\w-]){re.escape(task)}(?![\w-]|\.\w)", re.IGNORECASE)


def _task_commits(root: Path, task: str, max_commits: int) -> list[Commit]:
    if max_commits <= 0 or head(root) is None:
        return []
    # git narrows to messages containing the id anywhere (fixed string, so no
    # regex escaping issues); the whole-word test is done here.
    result = _git(
        root,
        "log",
        "-z",
        "--name-only",
        "--diff-merges=first-parent",
        "--find-renames",
        "--encoding=UTF-8",
        "--no-show-signature",
        "--regexp-ignore-case",
        "--fixed-strings",
        f"--grep={task}",
        f"--format={_LOG_FORMAT}",
        "HEAD",
        "--",
    )
    pattern = _task_pattern(task)
    found: list[Commit] = []
    for fields, files in _records(iter(result.stdout.split(b"\0")), len(_LOG_FIELDS)):
        sha, parents, author, email, date, subject, body = (_text(f) for f in fields)
        if not pattern.search(f"{subject}\n{body}"):
            continue
        found.append(
            Commit(
                sha=sha,
                parents=tuple(parents.split()),
                author=author,
                email=email,
                date=date,
                subject=subject,
                body=body.rstrip(),
                files=tuple(_path(f) for f in files),
            )
        )
        if len(found) >= max_commits:
            break
    return found


@dataclass
class _FileStat:
    added: int = 0
    removed: int = 0
    first: int | None = None  # first changed line in the new version
    context: str = ""  # git's function context for that hunk
    new: bool = False
    binary: bool = False
    renamed_from: str | None = None

    @property
    def churn(self) -> int:
        return self.added + self.removed

    def note(self) -> str:
        counts = [f"+{self.added}"] if self.added or not self.removed else []
        counts += [f"−{self.removed}"] if self.removed else []
        lines = " ".join(counts) + (" line" if self.churn == 1 else " lines")
        if self.binary and not self.churn:
            text = "new binary file" if self.new else "binary file changed"
        elif self.new:
            text = f"new file, {lines}"
        elif self.churn:
            text = lines
        else:
            text = "mode changed"
        if self.renamed_from:
            text = f"renamed from {self.renamed_from}, {text}"
        if self.context:
            text += f" in `{self.context}`"
        return text


@dataclass
class _FileDiff:
    path: str
    old_path: str
    status: str = "M"  # A, M, D, R (C counts as A)
    hunks: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    binary: bool = False


_DIFF_OPTIONS = (
    "-p",
    "-U0",
    "--inter-hunk-context=0",
    "--find-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


def _commit_stats(root: Path, shas_oldest_first: list[str]) -> dict[str, _FileStat]:
    result = _git(
        root,
        "log",
        "--no-walk=unsorted",
        "--root",
        "--diff-merges=first-parent",
        "--no-show-signature",
        *_DIFF_OPTIONS,
        "--format=%x00%H",
        *shas_oldest_first,
        "--",
    )
    stats: dict[str, _FileStat] = {}
    for diff in _parse_patch(result.stdout.decode("utf-8", "surrogateescape")):
        _apply(stats, diff)
    return stats


def _apply(stats: dict[str, _FileStat], diff: _FileDiff) -> None:
    """Fold one file's diff (commits applied oldest first) into the running stats."""
    if diff.status == "D":
        stats.pop(diff.path, None)
        return
    if diff.status == "R":
        stat = stats.pop(diff.old_path, None)
        if stat is None:
            stat = _FileStat(renamed_from=diff.old_path)
    elif diff.status == "A":
        stat = _FileStat(new=True)
    else:
        stat = stats.get(diff.path) or _FileStat()
    stats[diff.path] = stat
    stat.binary = stat.binary or diff.binary
    for _old_start, old_len, _new_start, new_len, _context in diff.hunks:
        stat.added += new_len
        stat.removed += old_len
    if diff.hunks:
        # Hunks come in file order, so the first is the topmost. A hunk above
        # an earlier commit's first line has a smaller start in the new
        # version too, so the minimum is the first changed line overall.
        _, _, start, _, context = diff.hunks[0]
        start = max(start, 1)  # a deletion at the top is "after line 0"
        if stat.first is None or start <= stat.first:
            stat.first, stat.context = start, _short_context(context)


# Git's default hunk context is just the nearest line starting with a letter;
# keep it only when it looks like a definition (def/class/function f(...)).
_DEFINITION = re.compile(
    r"\b(?:def|class|function|func|fn|sub|module|interface|struct|impl|"
    r"enum|trait|namespace|package|type)\b|[\w>]\s*\("
)


def _short_context(context: str) -> str:
    text = context.strip().rstrip("{:").strip()
    if not _DEFINITION.search(text):
        return ""
    return text if len(text) <= 60 else text[:59].rstrip() + "…"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")


def _parse_patch(text: str) -> list[_FileDiff]:
    """Per-file diffs of `git diff/log -p -U0` output, in output order.

    Lines starting with NUL (our commit separators) are skipped; hunk bodies
    are skipped by count, so content lines never look like headers.
    """
    diffs: list[_FileDiff] = []
    current: _FileDiff | None = None
    lines = iter(text.split("\n"))
    for line in lines:
        if line.startswith("diff --git "):
            old, new = _diff_git_paths(line[len("diff --git ") :])
            current = _FileDiff(path=new, old_path=old)
            diffs.append(current)
        elif current is None:
            continue
        elif line.startswith("@@ "):
            match = _HUNK.match(line)
            if not match:
                continue
            a, b, c, d, context = match.groups()
            old_len = 1 if b is None else int(b)
            new_len = 1 if d is None else int(d)
            current.hunks.append((int(a), old_len, int(c), new_len, context))
            remaining = old_len + new_len
            while remaining > 0:
                body = next(lines, None)
                if body is None:
                    break
                if not body.startswith("\\"):  # "\ No newline at end of file"
                    remaining -= 1
        elif line.startswith("new file mode"):
            current.status = "A"
        elif line.startswith("deleted file mode"):
            current.status = "D"
        elif line.startswith("rename from "):
            current.old_path, current.status = _unquote(line[len("rename from ") :]), "R"
        elif line.startswith("rename to "):
            current.path = _unquote(line[len("rename to ") :])
        elif line.startswith("copy to "):
            current.path, current.status = _unquote(line[len("copy to ") :]), "A"
        elif line.startswith("--- "):
            name = _header_path(line[4:], "a/")
            if name is not None:
                current.old_path = name
        elif line.startswith("+++ "):
            name = _header_path(line[4:], "b/")
            if name is not None:
                current.path = name
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            current.binary = True
    return diffs


def _header_path(value: str, prefix: str) -> str | None:
    value = value.rstrip("\t")  # git appends a tab to names containing spaces
    if value == "/dev/null":
        return None
    name = _unquote(value)
    return name[len(prefix) :] if name.startswith(prefix) else name


def _diff_git_paths(rest: str) -> tuple[str, str]:
    """The two names of a ``diff --git a/X b/Y`` line (quoted or not)."""
    if rest.startswith('"'):
        first, end = _read_quoted(rest)
        second = rest[end + 1 :].lstrip(" ")
        return _strip_prefix(first, "a/"), _strip_prefix(_unquote(second), "b/")
    if rest.endswith('"'):
        start = rest.index(' "')
        return _strip_prefix(rest[:start], "a/"), _strip_prefix(_unquote(rest[start + 1 :]), "b/")
    # Unquoted: for the same name on both sides the split point is exact.
    if (len(rest) - 5) % 2 == 0:
        n = (len(rest) - 5) // 2
        name = rest[2 : 2 + n]
        if rest == f"a/{name} b/{name}":
            return name, name
    head_, _, tail = rest.partition(" b/")
    return _strip_prefix(head_, "a/"), tail


def _strip_prefix(name: str, prefix: str) -> str:
    return name[len(prefix) :] if name.startswith(prefix) else name


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _read_quoted(text: str) -> tuple[str, int]:
    """Decode a C-quoted name at the start of `text`; return it and the index of its closing quote."""
    out = bytearray()
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8", "surrogateescape"), i
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "01234567" and i + 3 < len(text):
                out.append(int(text[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt) if ord(nxt) < 128 else 63))
            i += 2
            continue
        out.extend(ch.encode("utf-8", "surrogateescape"))
        i += 1
    return out.decode("utf-8", "surrogateescape"), len(text)


def _unquote(text: str) -> str:
    return _read_quoted(text)[0] if text.startswith('"') else text


def _worktree_stats(root: Path) -> tuple[dict[str, _FileStat], list[str]]:
    """Uncommitted changes: `git diff HEAD` for tracked files, line counts for untracked ones."""
    changes = worktree_changes(root)
    if not changes:
        return {}, []
    base = "HEAD" if head(root) else EMPTY_TREE
    stats: dict[str, _FileStat] = {}
    result = _git(root, "diff", *_DIFF_OPTIONS, base, "--")
    for diff in _parse_patch(result.stdout.decode("utf-8", "surrogateescape")):
        _apply(stats, diff)
    untracked = _git(root, "ls-files", "-z", "--others", "--exclude-standard")
    for raw in untracked.stdout.split(b"\0"):
        path = _path(raw)
        if raw and path not in stats:
            stats[path] = _untracked_stat(root / path)
    present = set(changes.changed)
    # A file staged and then changed back has no net change: it is left out.
    return stats, [p for p in _by_churn(stats) if p in present]


def _untracked_stat(full: Path) -> _FileStat:
    try:
        data = full.read_bytes() if not full.is_symlink() else b""
    except OSError:
        data = b""
    if b"\0" in data[:8192]:
        return _FileStat(new=True, binary=True)
    count = len(data.splitlines())
    return _FileStat(added=count, first=1 if count else None, new=True)


def _by_churn(stats: dict[str, _FileStat]) -> list[str]:
    return sorted(stats, key=lambda p: (-stats[p].churn, p))


# -- decisions in commit messages ----------------------------------------------

_DECISION_START = re.compile(
    r"^(?:decision\b|decided\b|(?:we|i)\s+(?:decided|chose|opted|went with)\b|chose\b|choose\b"
    r"|opted\b|went with\b|prefer\b|prefers\b|preferred\b)",
    re.IGNORECASE,
)
_DECISION_ANYWHERE = re.compile(r"\s(?:instead of|rather than)\s|\bbecause\b", re.IGNORECASE)
_DECISION_LABEL = re.compile(r"^(?:decision|decided|rationale)\s*:\s*", re.IGNORECASE)
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*:\s*\S")
_TRAILER_KEYS = {
    "cc",
    "fixes",
    "closes",
    "close",
    "resolves",
    "refs",
    "ref",
    "see-also",
    "change-id",
    "bug",
    "issue",
    "issues",
    "task",
    "link",
    "part-of",
    "related",
    "git-svn-id",
    "signed-off",
    "on-behalf-of",
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`\"'])")


def mine_decisions(commits: list[Commit], task: str = "", limit: int = MAX_DECISIONS) -> list[str]:
    """Decisions stated in commit messages, oldest commit first, deduplicated.

    A subject line or body item (a bullet or paragraph, wrapped lines joined)
    counts when it starts with Decision:/Decided/Chose/We chose/Prefer/... or
    contains " instead of ", " rather than " or "because". Trailers
    (Signed-off-by, Co-authored-by, Refs, ...) are skipped. Each result ends
    with the commit's short sha.
    """
    found: list[str] = []
    seen: set[str] = set()
    for commit in reversed(commits):
        candidates = [strip_task_id(commit.subject, task)] + _message_items(commit.body)
        for item in candidates:
            text = _decision_text(item)
            if not text:
                continue
            key = _norm(text)
            if key in seen:
                continue
            seen.add(key)
            found.append(f"{text} ({commit.sha[:7]})")
            if len(found) >= limit:
                return found
    return found


def _message_items(body: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            items.append(" ".join(current))
            current.clear()

    in_bullet = False
    for raw in body.splitlines():
        line = raw.strip()
        if not line or _is_trailer(line):
            flush()  # trailers are never part of an item
        elif _BULLET.match(line) or _DECISION_LABEL.match(line):
            flush()
            current.append(line)
            in_bullet = bool(_BULLET.match(line))
        elif in_bullet and current and raw[:1] not in (" ", "\t"):
            flush()  # an unindented line after a bullet starts a new item
            current.append(line)
            in_bullet = False
        else:
            current.append(line)
    flush()
    return items


def _is_trailer(line: str) -> bool:
    match = _TRAILER.match(line)
    if not match:
        return False
    key = match.group(1).lower()
    return key.endswith("-by") or key in _TRAILER_KEYS


def _decision_text(item: str) -> str | None:
    text = " ".join(_BULLET.sub("", item.strip(), count=1).split())
    labelled = bool(_DECISION_LABEL.match(text))
    text = _DECISION_LABEL.sub("", text)
    if not text or not (labelled or _DECISION_START.match(text) or _DECISION_ANYWHERE.search(text)):
        return None
    if len(text) > MAX_DECISION_CHARS:
        sentences = _SENTENCE.split(text)
        hits = [
            i
            for i, s in enumerate(sentences)
            if labelled or _DECISION_START.match(s) or _DECISION_ANYWHERE.search(s)
        ]
        start = hits[0] if hits else 0
        text = sentences[start]
        if start + 1 < len(sentences) and len(text) + 1 + len(sentences[start + 1]) <= MAX_DECISION_CHARS:
            text += " " + sentences[start + 1]
        if len(text) > MAX_DECISION_CHARS:
            text = text[: MAX_DECISION_CHARS - 1].rstrip() + "…"
    return _capitalize(text.rstrip().removesuffix("."))


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def strip_task_id(subject: str, task: str) -> str:
    """A commit subject without its task-id tag: ``[jat-abc] Fix x`` / ``jat-abc: Fix x`` /
    ``Fix x (jat-abc)`` -> ``Fix x``."""
    if not task:
        return subject.strip()
    tid = re.escape(task)
    text = re.sub(
        rf"^\s*(?:\[{tid}\]|\({tid}\)|{tid}(?![\w-]))\s*[:\-–—]?\s*", "", subject, flags=re.IGNORECASE
    )
    text = re.sub(rf"\s*(?:\[{tid}\]|\({tid}\))\s*$", "", text, flags=re.IGNORECASE)
    return text.strip() or subject.strip()


def _norm(text: str) -> str:
    """Comparison key: case, spacing, end punctuation and a trailing ``(sha)`` ignored."""
    text = re.sub(r"\s*\([0-9a-f]{7,40}\)\s*$", "", text.strip())
    return " ".join(text.lower().split()).rstrip(".;:!")


# -- rendering -----------------------------------------------------------------


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


def _summary(bundle: CompletionBundle, changes: TaskChanges) -> list[str]:
    items = _merge(bundle.summary)
    if items:
        return items
    if changes.commits:
        return _merge(
            [_capitalize(strip_task_id(c.subject, changes.task)) for c in reversed(changes.commits)]
        )
    if changes.files:
        shown = ", ".join(f"`{p}`" for p in changes.files[:5])
        more = f" and {len(changes.files) - 5} more" if len(changes.files) > 5 else ""
        return [f"Changed {shown}{more} (uncommitted)"]
    raise UsageError(
        "nothing to summarise: the completion bundle has no summary and no "
        'commits or changes were found for the task; add a "summary" to the bundle'
    )


def _approach(changes: TaskChanges) -> str:
    commits = list(reversed(changes.commits))
    touched = f" touching {_plural(len(changes.files), 'file')}" if changes.files else ""
    if commits:
        subjects = [_capitalize(strip_task_id(c.subject, changes.task)) for c in commits]
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
    """Items of all groups in order, blank and repeated ones (see :func:`_norm`) dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for group in groups:
        for item in group:
            key = _norm(item)
            if key and key not in seen:
                seen.add(key)
                out.append(item.strip())
    return out


def _bullets(items: list[str]) -> str:
    lines = []
    for item in items:
        rows = [row.strip() for row in item.strip().splitlines() if row.strip()]
        rows[0] = _BULLET.sub("", rows[0], count=1)
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


def _parse_file_entry(entry: str, known: dict) -> tuple[str, int | None, str] | None:
    """``path``, ``path:45``, ``path:45 - note``, ``\\`path:45\\` — note``, ``path (note)``.

    Returns None when the entry does not start with something path-like.
    """
    text = _BULLET.sub("", " ".join(entry.split()), count=1)
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


def complete_task(memories, task: str, *, title: str, bundle: CompletionBundle | None = None):
    """000's write-on-complete: write (or rewrite) the task's memory.

    Its body has 000's sections, its files come from the task's commits (or
    the work tree); commit text is redacted like any other input. Idempotent
    per task: a second call rewrites the same memory.
    """
    from lore.memory.repository import derive_keywords

    bundle = bundle or CompletionBundle()
    changes = task_changes(memories.project.root, task)
    body = render_body(bundle, changes)
    memories.sync()
    existing = memories.store.memories(memories.filter(task=task, types=["summary"]), limit=1)
    existing = [m for m in existing if m.visibility == "shared"]
    extra = {
        k: v
        for k, v in (("priority", bundle.priority), ("risk", bundle.risk), ("task_type", bundle.task_type))
        if v is not None
    }
    fields = dict(
        tags=bundle.tags or derive_keywords(title, body),
        files=changes.files,
        labels=bundle.labels,
        project=memories.project.root.name,
    )
    if not existing:
        return memories.add(body=body, title=title, type="summary", task=task, extra=extra, **fields)
    return memories.update(existing[0].path, body=body, title=title, **fields, **extra)
