"""Memories anchored to the code they describe, and flagged when it changes.

A memory names code in its frontmatter `files`, its `applies_to: file:<path>`
scope, or its "Key Files" section (`src/auth/refresh.ts:45` — what). Each
becomes an anchor: the path, the code unit (symbol) or line range, and the
hash of that code when the memory was written. When the code index sees the
file change, the anchor's code is hashed again; a difference marks the
memory stale with the reason. Renames move the anchor. `lore verify`
re-anchors to the current code.

Anchors live in the index (the Markdown stays as the human wrote it); an
index rebuild re-anchors every memory to the code as it is then.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from lore.index.store import SQLiteIndex

_KEY_FILE = re.compile(r"`([\w./@+-]+\.[\w]+)(?::(\d+)(?:-(\d+))?)?`")


@dataclass
class Anchor:
    path: str
    symbol: str | None
    start_line: int | None
    end_line: int | None
    code_hash: str | None


def targets(memory) -> list[tuple[str, int | None, int | None]]:
    """(path, first line, last line) named by a memory; lines may be None."""
    found: dict[tuple, None] = {}
    for path in memory.files:
        found[(path.strip().lstrip("./"), None, None)] = None
    if memory.applies_to.startswith("file:"):
        found[(memory.applies_to[5:].strip().lstrip("./"), None, None)] = None
    in_key_files = False
    for line in memory.body.splitlines():
        if line.startswith("#"):
            in_key_files = line.lstrip("#").strip().lower() == "key files"
            continue
        if in_key_files:
            for path, start, end in _KEY_FILE.findall(line):
                first = int(start) if start else None
                found[(path.lstrip("./"), first, int(end) if end else first)] = None
    # A path named with lines supersedes the same path named without.
    with_lines = {p for p, s, _ in found if s is not None}
    return [t for t in found if t[1] is not None or t[0] not in with_lines]


def record(index: SQLiteIndex, root: Path, memory) -> int:
    """(Re-)anchor `memory` to the code as it is now; clears staleness.

    A path the memory names that was since renamed resolves to its new name
    (remembered from the previous anchors)."""
    moved = dict(
        index.db.execute(
            "SELECT named_path, path FROM anchors WHERE memory_id = ? "
            "AND named_path IS NOT NULL AND named_path != path",
            (memory.id,),
        )
    )
    index.db.execute("DELETE FROM anchors WHERE memory_id = ?", (memory.id,))
    count = 0
    for named, first, last in targets(memory):
        path = named if (root / named).exists() or named not in moved else moved[named]
        anchor = _anchor(root, path, first, last)
        if anchor is None:
            continue
        index.db.execute(
            "INSERT OR REPLACE INTO anchors(memory_id, path, symbol, start_line, end_line, "
            "code_hash, named_path) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id,
                anchor.path,
                anchor.symbol,
                anchor.start_line,
                anchor.end_line,
                anchor.code_hash,
                named,
            ),
        )
        count += 1
    return count


def check(
    index: SQLiteIndex,
    root: Path,
    changed: list[str],
    removed: list[str],
    renamed: list[tuple[str, str]],
    commit: str | None,
) -> list[str]:
    """After a code update: follow renames, then mark memories whose anchored
    code changed or vanished. Returns the ids newly marked stale."""
    db = index.db
    for old, new in renamed:
        db.execute("UPDATE OR REPLACE anchors SET path = ? WHERE path = ?", (new, old))
    newly: list[str] = []
    where = f" (commit {commit[:10]})" if commit else ""
    for path in removed:
        rows = db.execute(
            "SELECT memory_id, symbol FROM anchors WHERE path = ? AND stale_reason IS NULL", (path,)
        ).fetchall()
        for memory_id, symbol in rows:
            _mark(db, memory_id, path, symbol, f"{path} was deleted{where}", commit)
            newly.append(memory_id)
    for path in changed:
        rows = db.execute(
            "SELECT memory_id, symbol, start_line, end_line, code_hash FROM anchors "
            "WHERE path = ? AND stale_reason IS NULL",
            (path,),
        ).fetchall()
        for memory_id, symbol, first, last, old_hash in rows:
            now = _anchor(root, path, first, last, symbol=symbol)
            if now is None or now.code_hash != old_hash:
                what = f"{symbol} in {path}" if symbol else (f"{path}:{first}-{last}" if first else path)
                verb = "was removed" if now is None or now.code_hash is None else "changed"
                _mark(db, memory_id, path, symbol, f"{what} {verb}{where}", commit)
                newly.append(memory_id)
    return sorted(set(newly))


def stale_reasons(index: SQLiteIndex, memory_ids: list[str] | None = None) -> dict[str, list[str]]:
    sql = "SELECT memory_id, stale_reason FROM anchors WHERE stale_reason IS NOT NULL"
    params: tuple = ()
    if memory_ids is not None:
        if not memory_ids:
            return {}
        sql += f" AND memory_id IN ({','.join('?' * len(memory_ids))})"
        params = tuple(memory_ids)
    out: dict[str, list[str]] = {}
    for memory_id, reason in index.db.execute(sql, params):
        out.setdefault(memory_id, []).append(reason)
    return out


def anchors_of(index: SQLiteIndex, memory_id: str) -> list[dict]:
    rows = index.db.execute(
        "SELECT path, symbol, start_line, end_line, stale_reason FROM anchors "
        "WHERE memory_id = ? ORDER BY path",
        (memory_id,),
    ).fetchall()
    return [{"path": r[0], "symbol": r[1], "startLine": r[2], "endLine": r[3], "stale": r[4]} for r in rows]


def _mark(db, memory_id, path, symbol, reason, commit) -> None:
    db.execute(
        "UPDATE anchors SET stale_reason = ?, stale_commit = ? WHERE memory_id = ? AND path = ? "
        "AND symbol IS ?",
        (reason, commit, memory_id, path, symbol),
    )


def _anchor(
    root: Path, path: str, first: int | None, last: int | None, *, symbol: str | None = None
) -> Anchor | None:
    """The anchor for `path` (at a line range, or for `symbol`) as the code is now;
    None if the file is gone. A symbol that no longer exists hashes to None."""
    full = root / path
    try:
        raw = full.read_bytes()
    except OSError:
        return None
    if b"\0" in raw[:8192]:
        return None
    text = raw.decode("utf-8", errors="replace")
    if symbol is None and first is None:
        return Anchor(path, None, None, None, _hash(text))
    units = _units(path, text)
    if symbol is None:
        # The code unit around the named line: anchor to it, so edits elsewhere
        # in the file (or lines shifting) don't make the memory stale.
        unit = next((u for u in units if u[0] and u[1] <= first <= u[2]), None)
        if unit is None:
            lines = text.split("\n")[first - 1 : (last or first)]
            return Anchor(path, None, first, last or first, _hash("\n".join(lines)))
        symbol = unit[0]
    parts = [u for u in units if u[0] == symbol]
    if not parts:
        return Anchor(path, symbol, first, last, None)
    return Anchor(path, symbol, parts[0][1], parts[-1][2], _hash("\n".join(u[3] for u in parts)))


def _units(path: str, text: str) -> list[tuple[str | None, int, int, str]]:
    """(symbol, start, end, text) of the file's code units, freshly chunked."""
    from lore.index.chunker import chunk_file

    # No merging of small neighbours: an anchor is one function, not its neighbours.
    return [(c.symbol, c.start_line, c.end_line, c.text) for c in chunk_file(path, text, min_tokens=0)]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
