"""Memories anchored to the code they describe, and flagged when it changes.

A memory names code in its frontmatter `files`, its `applies_to: file:<path>`
scope, or its "Key Files" section (`src/auth/refresh.ts:45` — what). Each
becomes an anchor: the path, the code unit (symbol) or line range, and the
hash of that code when the memory was written. When the code index sees the
file change, the anchor's code is hashed again; a difference marks the
memory stale with the reason. Renames move the anchor. `lore verify`
re-anchors to the current code; reading a memory file again (a checkout
brings it back, its text is edited) keeps anchors on the code it still names.

Anchors live in the index (the Markdown stays as the human wrote it); an
index rebuild re-anchors every memory to the code as it is then.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Protocol, TypedDict

from lore.errors import LoreError
from lore.filenames import in_lore_folder, plain_path
from lore.index.encoding import decode_text, text_encoding
from lore.safe_read import read_inside
from lore.storage import AnchorRecord, Store

MAX_ANCHORED_BYTES = 16 * 1024 * 1024
"""Largest file an anchor hashes; a larger (or unreadable) one counts as absent."""

_KEY_FILE = re.compile(r"`([\w./@+-]+\.[\w]+)(?::(\d+)(?:-(\d+))?)?`")


class Anchored(Protocol):
    """What anchoring reads of a memory (:class:`lore.memory.model.Memory` has it;
    the index layer does not import the memory layer above it)."""

    id: str
    files: list[str]
    applies_to: str
    body: str


#: A code target a memory names: (path, first line, last line); lines may be None.
Target = tuple[str, int | None, int | None]


class AnchorInfo(TypedDict):
    """An anchor as a memory's detail shows it (``stale``: why it is stale, or None)."""

    path: str
    symbol: str | None
    start_line: int | None
    end_line: int | None
    stale: str | None


def targets(memory: Anchored) -> list[Target]:
    """(path, first line, last line) named by a memory; lines may be None."""
    found: dict[Target, None] = {}
    for path in memory.files:
        found[(plain_path(path), None, None)] = None
    if memory.applies_to.startswith("file:"):
        found[(plain_path(memory.applies_to[5:]), None, None)] = None
    in_key_files = False
    for line in memory.body.splitlines():
        if line.startswith("#"):
            in_key_files = line.lstrip("#").strip().lower() == "key files"
            continue
        if in_key_files:
            for path, start, end in _KEY_FILE.findall(line):
                first = _line(start)
                last = _line(end) or first
                found[(plain_path(path), first, last if first and last and last >= first else first)] = None
    # A path named with lines supersedes the same path named without. Lore's own
    # folder is no code (and whether another agent's private file exists is not to be told).
    with_lines = {p for p, s, _ in found if s is not None}
    return [t for t in found if (t[1] is not None or t[0] not in with_lines) and not in_lore_folder(t[0])]


def record(store: Store, root: Path, memory: Anchored) -> int:
    """(Re-)anchor `memory` to the code as it is now; clears staleness.

    A path the memory names that was since renamed resolves to its new name
    (remembered from the previous anchors)."""
    found = _current(root, memory, store.anchors(memory_id=memory.id))
    store.replace_anchors(memory.id, found)
    return len(found)


def record_new(store: Store, root: Path, memory: Anchored) -> int:
    """Anchor `memory` when it names other code than its anchors do; else keep
    them, with their hashes and staleness.

    For a memory file read again (a checkout brought it back, an edit of its
    text): anchors live only in the index, and re-anchoring to the code as it
    is now would clear a staleness nobody checked. `lore verify` (:func:`record`)
    is what clears it."""
    existing = store.anchors(memory_id=memory.id)
    found = _current(root, memory, existing)
    have = {(a.named_path or a.path, a.symbol) for a in existing}
    want = {(a.named_path or a.path, a.symbol) for a in found}
    # A named file that is gone now is stood for by its (stale) anchor.
    gone = {named for named, _, _ in targets(memory)} - {named for named, _ in want}
    want |= {key for key in have if key[0] in gone}
    if existing and want == have:
        return len(existing)
    store.replace_anchors(memory.id, found)
    return len(found)


def _current(root: Path, memory: Anchored, previous: list[AnchorRecord]) -> list[AnchorRecord]:
    """`memory`'s anchors on the code as it is now; a named path renamed since
    `previous` were made resolves to its new name."""
    moved = {a.named_path: a.path for a in previous if a.named_path and a.named_path != a.path}
    found = []
    for named, first, last in targets(memory):
        path = named if named not in moved or _exists(root, named) else moved[named]
        anchor = _anchor(root, path, first, last)
        if anchor is not None:
            anchor.memory_id, anchor.named_path = memory.id, named
            found.append(anchor)
    return found


def check(
    store: Store,
    root: Path,
    changed: list[str],
    removed: list[str],
    renamed: list[tuple[str, str]],
    commit: str | None,
    *,
    added: list[str] | None = None,
) -> list[str]:
    """After a code update: follow renames, then mark memories whose anchored
    code changed or vanished, and lift the mark from anchors whose code is
    again what it was when anchored (`added`: files new to the index, which
    may be anchored files back). Returns the ids newly marked stale."""
    for old, new in renamed:
        store.move_anchors(old, new)
    newly: list[str] = []
    known: dict[str, tuple[str, str | None]] = {}

    def where(path: str) -> tuple[str, str | None]:
        """Where the change is: not committed yet, or the commit that made it (HEAD
        at index time named a docs-only commit for an edit of the work tree)."""
        if path not in known:
            known[path] = _change_of(root, path) if commit else ("", None)
        return known[path]

    for path in removed:
        for anchor in store.anchors(path=path, fresh_only=True):
            said, made = where(path)
            store.mark_stale(anchor, f"{path} was deleted{said}", made)
            newly.append(anchor.memory_id)
    if added:  # a file deleted, then back (a branch switched back): its stale anchors are checked again
        stale_paths = {a.path for a in store.anchors() if a.stale_reason}
        changed = [*changed, *(path for path in added if path in stale_paths)]
    for path in changed:
        for anchor in store.anchors(path=path):
            first, last, symbol = anchor.start_line, anchor.end_line, anchor.symbol
            now = _anchor(root, path, first, last, symbol=symbol)
            if anchor.stale_reason:  # the code back as it was anchored (a branch left, a revert): fresh again
                if now is not None and now.code_hash is not None and now.code_hash == anchor.code_hash:
                    store.mark_stale(anchor, None, None)
                continue
            if now is None or now.code_hash != anchor.code_hash:
                what = f"{symbol} in {path}" if symbol else (f"{path}:{first}-{last}" if first else path)
                verb = "was removed" if now is None or now.code_hash is None else "changed"
                said, made = where(path)
                store.mark_stale(anchor, f"{what} {verb}{said}", made)
                newly.append(anchor.memory_id)
    return sorted(set(newly))


def rehash_unchanged(store: Store, root: Path, unchanged: set[str]) -> int:
    """Hash again, with the current chunker, the anchors of every memory whose
    anchors are all fresh and on files unchanged since the index last saw them.

    Called when the chunker changed how it cuts code (``CHUNKER_VERSION``): an
    anchor is the hash of a code unit as the chunker of its day cut it, so the
    next edit anywhere in its file would compare it with a unit cut another way
    and call it changed. A fresh anchor on an unchanged file matched its code
    at the last check, so hashing it again now loses nothing. Returns how many
    memories were re-anchored."""
    by_memory: dict[str, list[AnchorRecord]] = {}
    for anchor in store.anchors():
        by_memory.setdefault(anchor.memory_id, []).append(anchor)
    count = 0
    for memory_id, found in by_memory.items():
        if any(a.stale_reason or a.path not in unchanged for a in found):
            continue
        now = [_anchor(root, a.path, a.start_line, a.end_line, symbol=a.symbol) for a in found]
        if any(n is None or n.code_hash is None for n in now):
            continue
        fresh = [n for n in now if n is not None]
        for new, old in zip(fresh, found, strict=True):
            new.memory_id, new.named_path = memory_id, old.named_path
        if fresh != found:
            store.replace_anchors(memory_id, fresh)
            count += 1
    return count


def anchors_of(store: Store, memory_id: str) -> list[AnchorInfo]:
    return [
        {
            "path": a.path,
            "symbol": a.symbol,
            "start_line": a.start_line,
            "end_line": a.end_line,
            "stale": a.stale_reason,
        }
        for a in store.anchors(memory_id=memory_id)
    ]


def _anchor(
    root: Path, path: str, first: int | None, last: int | None, *, symbol: str | None = None
) -> AnchorRecord | None:
    """The anchor for `path` (at a line range, or for `symbol`) as the code is now;
    None if the file is gone. A symbol that no longer exists hashes to None."""
    try:  # a regular file inside the project only: memories name paths, and memories are shared
        raw = read_inside(root, path, max_bytes=MAX_ANCHORED_BYTES)
    except LoreError:
        return None
    if b"\0" in raw[:8192] and text_encoding(raw[:8192], whole=len(raw) <= 8192) is None:
        return None  # binary (UTF-16, marked, is text)
    text = decode_text(raw)
    if symbol is None and first is None:
        return AnchorRecord("", path, None, None, None, _hash(text))
    units = _units(path, text)
    if symbol is None:
        # The code unit around the named line: anchor to it, so edits elsewhere
        # in the file (or lines shifting) don't make the memory stale.
        assert first is not None  # a line was named when no symbol was
        unit = next((u for u in units if u[0] and u[1] <= first <= u[2]), None)
        if unit is None:
            # Lines as the chunker and editors number them: a file of bare CRs has them too.
            lines = (text.replace("\r", "\n") if "\n" not in text else text).split("\n")[
                first - 1 : (last or first)
            ]
            return AnchorRecord("", path, None, first, last or first, _hash("\n".join(lines)))
        symbol = unit[0]
    parts = [u for u in units if u[0] == symbol]
    if not parts:
        return AnchorRecord("", path, symbol, first, last, None)
    return AnchorRecord("", path, symbol, parts[0][1], parts[-1][2], _hash("\n".join(u[3] for u in parts)))


def _units(path: str, text: str) -> list[tuple[str | None, int, int, str]]:
    """(symbol, start, end, text) of the file's code units, freshly chunked."""
    from lore.index.chunker import chunk_file

    # No merging of small neighbours: an anchor is one function, not its neighbours.
    return [(c.symbol, c.start_line, c.end_line, c.text) for c in chunk_file(path, text, min_tokens=0)]


def _exists(root: Path, path: str) -> bool:
    """Does `path` exist in the project? (False for names the OS refuses, e.g. too long.)"""
    try:
        return (root / path).exists()
    except (OSError, ValueError):
        return False


def _line(text: str) -> int | None:
    """A line number named in a memory, or None (absent, or beyond any real file)."""
    return int(text) if text and len(text) <= 9 and int(text) > 0 else None


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _change_of(root: Path, path: str) -> tuple[str, str | None]:
    """(" (not committed)", None) when `path` differs from HEAD in the work tree,
    else (" (commit <sha>)", sha) of the last commit that changed it."""
    from lore.errors import LoreError
    from lore.index import gitrepo

    try:
        status = gitrepo.run_git(root, "status", "--porcelain", "--", path, check=False)
        if status.returncode == 0 and status.stdout.strip():
            return " (not committed)", None
        last = gitrepo.run_git(root, "log", "-1", "--format=%H", "--", path, check=False)
    except LoreError:
        return "", None
    sha = last.stdout.decode("ascii", "replace").strip() if last.returncode == 0 else ""
    return (f" (commit {sha[:10]})", sha) if sha else ("", None)
