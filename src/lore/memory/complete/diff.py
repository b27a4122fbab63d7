"""Per-file statistics from unified patches: lines added and removed, the
first changed line and its function, renames, new and binary files.

Parses the patches of :func:`lore.index.gitrepo.commit_patches` and
:func:`~lore.index.gitrepo.worktree_patch` (zero context lines, so each hunk
header says exactly which lines changed) and folds the diffs of several
commits, oldest first, into one account per file as it is after them.
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path

from lore.records import datarecord

__all__ = ["FileDiff", "FileStat", "by_churn", "fold_diff", "parse_patch", "untracked_stat"]


@datarecord
class FileStat:
    """One file's account over the diffs folded so far.

    Attributes:
        added, removed: lines added and removed.
        first: the first changed line in the newest version (None for binary
            or mode-only changes).
        context: git's function context of that hunk, when it looks like a
            definition (``def load(path)``).
        new: the file was created by the diffs folded.
        binary: a binary change was seen.
        renamed_from: the name before, when the file was renamed.
    """

    added: int = 0
    removed: int = 0
    first: int | None = None  # first changed line in the new version
    context: str = ""  # git's function context for that hunk
    new: bool = False
    binary: bool = False
    renamed_from: str | None = None

    @property
    def churn(self) -> int:
        """Lines added plus lines removed."""
        return self.added + self.removed

    def note(self) -> str:
        """A short account for a Key Files line: ``+12 −3 lines in `def foo()```."""
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


@datarecord
class FileDiff:
    """One file's diff in a patch: its paths, status and hunks
    (``(old_start, old_len, new_start, new_len, context)``)."""

    path: str
    old_path: str
    status: str = "M"  # A, M, D, R (C counts as A)
    hunks: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    binary: bool = False


def fold_diff(stats: dict[str, FileStat], diff: FileDiff) -> None:
    """Fold one file's diff (commits applied oldest first) into the running stats."""
    if diff.status == "D":
        stats.pop(diff.path, None)
        return
    if diff.status == "R":
        stat = stats.pop(diff.old_path, None)
        if stat is None:
            stat = FileStat(renamed_from=diff.old_path)
    elif diff.status == "A":
        stat = FileStat(new=True)
    else:
        stat = stats.get(diff.path) or FileStat()
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


def parse_patch(text: str) -> list[FileDiff]:
    """Per-file diffs of `git diff/log -p -U0` output, in output order.

    Lines starting with NUL (our commit separators) are skipped; hunk bodies
    are skipped by count, so content lines never look like headers.
    """
    diffs: list[FileDiff] = []
    current: FileDiff | None = None
    lines = iter(text.split("\n"))
    for line in lines:
        if line.startswith("diff --git "):
            old, new = _diff_git_paths(line[len("diff --git ") :])
            current = FileDiff(path=new, old_path=old)
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


def untracked_stat(full: Path) -> FileStat:
    """The account of an untracked file: every line added (binary files: none)."""
    try:
        data = full.read_bytes() if not full.is_symlink() else b""
    except OSError:
        data = b""
    if b"\0" in data[:8192]:
        return FileStat(new=True, binary=True)
    count = len(data.splitlines())
    return FileStat(added=count, first=1 if count else None, new=True)


def by_churn(stats: dict[str, FileStat]) -> list[str]:
    """Paths of `stats`, most changed lines first (ties by path)."""
    return sorted(stats, key=lambda p: (-stats[p].churn, p))
