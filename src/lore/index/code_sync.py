"""Keep the code index in step with the repository's files.

Discovery (`discover.py`) says which files count; each is compared with the
index by (mtime, size), then by sha256, so only changed files are chunked
again. A new path whose bytes equal a vanished file's is a rename: its row is
moved, nothing is re-chunked or re-embedded. Chunks are searchable by BM25 as
soon as they are written; vectors follow (`embedding.py`).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.errors import NotFound, ValidationError
from lore.filenames import display_path
from lore.index import anchors
from lore.index.encoding import decode_text
from lore.index.roles import RULES_VERSION, file_role
from lore.records import Record, datarecord, internal
from lore.safe_read import read_inside
from lore.storage import ChunkInput, Store

# Bumped when the chunker learns languages: an index made by an older version
# chunks the files of the languages that version did not know again, once.
# Version 3 chunks the same languages, with the comments that close a gap
# opening the unit below them (a divider was a chunk of its own): every file of
# a structured language is chunked again, once.
CHUNKER_VERSION = "4"
# The languages each version chunked as such (anything else was "text" windows).
CHUNKER_LANGUAGES = {
    "1": frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "java", "markdown", "rst"}),
    "2": frozenset(
        {
            *("python", "javascript", "typescript", "tsx", "go", "rust", "java", "markdown", "rst"),
            *("c", "cpp", "ruby", "csharp", "php", "kotlin", "swift", "scala", "objc", "elixir"),
            *("dart", "lua", "perl", "shell", "sql"),
        }
    ),
}
CHUNKER_LANGUAGES["3"] = CHUNKER_LANGUAGES["2"]
# Version 4 chunks notebooks by their cells (they were JSON in line windows when named by `include`).
CHUNKER_LANGUAGES["4"] = CHUNKER_LANGUAGES["3"] | {"notebook"}
_COMMENTS_FOLDED = "3"  # the first version that folds a gap's closing comments into the unit below
KIND = "code"
# Meta `prose_redaction`: the version of what masking chunks get. "1": prose and
# configuration chunks are redacted with the memory rules (before, with code's
# machine-made-only masking); "2": secrets are masked in the whole file before
# it is cut into chunks (a private key's lines after its first chunk were kept
# in clear); "3": code's rules read command lines and SQL (`mysql -p…`,
# `IDENTIFIED BY '…'`), `=>` and a call's quoted arguments (`define('API_KEY',
# '…')`). An index of another version chunks every file again, once (a chunk
# whose text is unchanged keeps its vector).
PROSE_REDACTION = "3"
ROLE_HEAD = 2000  # characters of a file its role may look at (generated-code markers)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_+")


@datarecord
class IndexResult(Record):
    """003's IndexResult, plus what a person wants to know."""

    success: bool = True
    files_processed: int = 0
    chunks_created: int = 0
    files_skipped: int = 0
    files_removed: int = 0
    files_renamed: int = 0
    commits_added: int = 0
    commits_updated: int = 0
    newly_stale: list[str] = field(default_factory=list)
    duration_ms: int = 0
    errors: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = internal(default_factory=list)
    changed_paths: list[str] = internal(default_factory=list)
    added_paths: list[str] = internal(default_factory=list)  # new to the index (a deleted file back)
    removed_paths: list[str] = internal(default_factory=list)
    renamed_paths: list[tuple[str, str]] = internal(default_factory=list)
    # Paths named to re-check (update_index) that the index does not hold, and why.
    unindexed: list[tuple[str, str]] = internal(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "skipped": [{"path": p, "reason": r} for p, r in self.skipped]}


def sync_code(
    root: Path,
    store: Store,
    settings: dict[str, Any],
    *,
    force: bool = False,
    only: list[str] | None = None,
    deleted: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    cache: Path | None = None,
) -> IndexResult:
    """Index the repository's code incrementally.

    Args:
        settings: the `[index]` table (include, exclude, max_file_bytes).
        only: re-check just these paths (003's update_index); None = every file.
        deleted: paths known to be gone.
        cache: a folder for discovery's translated globs (`.lore/local/cache`).
    """
    from lore.index.discover import BAD_NAME, SNIFF_BYTES, binary_kind, discover, size_limit

    started = time.perf_counter()
    result = IndexResult()
    known = store.file_states(KIND)
    found = discover(
        root,
        include=settings.get("include") or None,
        exclude=settings.get("exclude") or None,
        max_bytes=int(settings.get("max_file_bytes", 1_000_000)),
        known=None if force else {path: (state.mtime_ns, state.size) for path, state in known.items()},
        cache=cache,
    )
    result.skipped = found.skipped
    result.files_skipped = len(found.skipped)
    result.errors += [
        f"{rel}: skipped: the name is not UTF-8 text or has control characters; rename the file to index it"
        for rel, reason in found.skipped
        if reason == BAD_NAME
    ]
    wanted = set(found.files)
    if only is not None:
        check = {p for p in (_norm(x, root) for x in only) if p}
        candidates = [p for p in found.files if p in check]
        gone = [p for p in check | {_norm(x, root) for x in deleted or []} if p in known and p not in wanted]
        # (A file indexed until now and left out since, too large or excluded: removed, and said why.)
        result.unindexed = _unindexed(
            sorted(check - wanted - {p for p in gone if p not in dict(found.skipped)}), found.skipped, root
        )
    else:
        candidates = found.files
        gone = [p for p in known if p not in wanted]
    # Files of languages the chunker learned since they were indexed: chunked again once.
    version = store.get_meta("chunker_version") or "1"
    relabel = _new_languages(known, CHUNKER_LANGUAGES.get(version, frozenset())) if known else set()
    if known and version.isdigit() and int(version) < int(_COMMENTS_FOLDED):
        relabel |= _structured(known)
    if known and store.get_meta("prose_redaction") != PROSE_REDACTION:
        relabel |= set(known)
    changed: list[tuple[str, os.stat_result]] = []
    unchanged: set[str] = set()  # files as the index last saw them
    for rel in candidates:
        try:
            st = os.stat(root / rel)
        except OSError:
            continue
        state = known.get(rel)
        # A file named to update is read again whatever its stat says: an edit
        # that kept size and time (`cp -p`, `rsync -t`, a tar) is otherwise never seen.
        named = only is not None
        if force or named or state is None or state.mtime_ns != st.st_mtime_ns or state.size != st.st_size:
            changed.append((rel, st))
        else:
            unchanged.add(rel)
            if rel in relabel:
                changed.append((rel, st))
    if known and version != CHUNKER_VERSION and only is None:
        with store.transaction():
            anchors.rehash_unchanged(store, root, unchanged)
    gone_by_sha = {known[p].sha256: p for p in gone}
    classified: set[str] = set()  # files given a role by the current rules in this run
    max_bytes = int(settings.get("max_file_bytes", 1_000_000))
    for done, (rel, st) in enumerate(changed, 1):
        try:
            # Read as discovery saw it, or not at all: a file replaced meanwhile by a
            # FIFO (a read would block), a link to /dev/zero, or grown past the limit.
            raw = read_inside(root, rel, max_bytes=max(max_bytes, size_limit(rel, max_bytes)))
        except NotFound:
            continue  # deleted since discovery: the next sync forgets it
        except ValidationError as err:
            result.errors.append(f"{display_path(rel)}: skipped: {err.reason}")
            result.unindexed.append((rel, err.reason))
            if rel in known:  # what it held is not what it holds: out of the index
                gone.append(rel)
            continue
        binary = binary_kind(raw) if len(raw) > SNIFF_BYTES else None  # (discovery read the head)
        if binary is not None:  # text at its head only: a self-extracting script, a blob after a header
            result.skipped.append((rel, binary))
            result.unindexed.append((rel, binary))
            result.files_skipped += 1
            if rel in known:
                gone.append(rel)
            continue
        sha = hashlib.sha256(raw).hexdigest()
        state = known.get(rel)
        with store.transaction():
            if state is not None and state.sha256 == sha and not force and rel not in relabel:
                store.touch_file(state.id, st.st_mtime_ns, st.st_size)
            else:
                # A rename (same bytes as a vanished file) is re-chunked so its path
                # words are searchable, but its text hashes are unchanged: no re-embedding.
                renamed_from = gone_by_sha.pop(sha, None) if state is None else None
                if renamed_from:
                    store.delete_files([renamed_from])
                    gone.remove(renamed_from)
                    result.files_renamed += 1
                    result.renamed_paths.append((renamed_from, rel))
                text = decode_text(raw)
                chunks = code_chunks(rel, text)
                file_id = store.put_file(
                    rel, KIND, sha, st.st_mtime_ns, st.st_size, role=file_role(rel, text[:ROLE_HEAD])
                )
                classified.add(rel)
                store.put_chunks(file_id, KIND, chunks)
                if not renamed_from:
                    result.files_processed += 1
                    result.chunks_created += len(chunks)
                if state is not None and state.sha256 != sha:  # (anchors look at content changes)
                    result.changed_paths.append(rel)
                elif state is None and not renamed_from:
                    result.added_paths.append(rel)
        if progress:
            progress(done, len(changed))
    if gone:
        with store.transaction():
            result.files_removed = store.delete_files(gone)
        result.removed_paths = list(gone)
        store.reclaim_space()
    if store.get_meta("roles_version") != str(RULES_VERSION):
        _reclassify(root, store, set(known) - classified - set(gone))
    if only is None or not known:  # every file seen by this chunker and these rules
        for key, value in (("chunker_version", CHUNKER_VERSION), ("prose_redaction", PROSE_REDACTION)):
            if store.get_meta(key) != value:
                with store.transaction():
                    store.set_meta(key, value)
    result.duration_ms = int((time.perf_counter() - started) * 1000)
    return result


def _is_prose(rel: str) -> bool:
    """Whether the file is prose to mask as a whole (a notebook is code: its
    Markdown cells' chunks get prose's rules one by one)."""
    from lore.index.chunker import language_for

    return (language_for(rel) or "text") in _PROSE and not rel.lower().endswith(".ipynb")


def shown_text(rel: str, text: str) -> str:
    """A code file's text as Lore shows it whole (anchors link to it): secrets
    masked by the rule its chunks were, or the file view would hand out in
    clear what code search redacts (a README's "the staging password is …")."""
    from lore.secrets import mask_code, redact

    if rel.lower().endswith(".ipynb"):  # its cells' lines as written, then the file (prose cells too)
        from lore.index.notebook import mask_strings

        return redact(mask_strings(text, lambda value: redact(value)[0]))[0]
    return redact(text)[0] if _is_prose(rel) else mask_code(text)[0]


def _structured(known: dict[str, Any]) -> set[str]:
    """Indexed files the chunker cuts by their syntax (not Markdown, not plain windows)."""
    from lore.index.chunker import language_for

    syntax = CHUNKER_LANGUAGES[CHUNKER_VERSION] - {"markdown", "rst"}
    return {rel for rel in known if language_for(rel) in syntax}


def _new_languages(known: dict[str, Any], indexed: frozenset[str]) -> set[str]:
    """Indexed files of languages the chunker knows now but not in the version
    that indexed them (which knew `indexed`)."""
    if indexed == CHUNKER_LANGUAGES[CHUNKER_VERSION]:
        return set()  # the usual case: a cold CLI need not import the chunker to know
    from lore.index.chunker import language_for

    def language(rel: str) -> str | None:
        return "notebook" if rel.lower().endswith(".ipynb") else language_for(rel)

    return {rel for rel in known if (named := language(rel)) and named not in indexed}


def _reclassify(root: Path, store: Store, paths: set[str]) -> None:
    """The role of each of `paths` (indexed code files not just classified) by the
    current rules, which changed since they were indexed, reading only each file's
    first lines; then the rules' version, unless a file could not be read."""
    current = store.code_files(sorted(paths)) if paths else {}
    changed: dict[str, str | None] = {}
    unread = False
    for rel, role in current.items():
        try:  # (never blocking on a FIFO put in a file's place)
            raw = read_inside(root, rel, max_bytes=4 * ROLE_HEAD, head=True)
        except NotFound:
            continue  # gone: the next sync forgets it
        except ValidationError:
            unread = True  # tried again on the next sync
            continue
        head = decode_text(raw)[:ROLE_HEAD]
        new = file_role(rel, head)
        if new != role:
            changed[rel] = new
    with store.transaction():
        if changed:
            store.set_roles(changed)
        if not unread:
            store.set_meta("roles_version", str(RULES_VERSION))


# Chunks of these are prose or configuration, not code: a README's "the staging
# password is …" or a YAML `password: …` is redacted as memory text is.
_PROSE = frozenset({"markdown", "rst", "text"})


def code_chunks(rel: str, text: str) -> list[ChunkInput]:
    """The file's chunks as stored: secrets masked before they reach the index,
    its full-text tables, snippets or an embedding provider. Code gets
    :func:`~lore.secrets.mask_code` (machine-made values only: a false positive
    in code hurts search); prose and configuration the memory rules."""
    from lore.index.chunker import chunk_file
    from lore.secrets import mask_code, mask_lines, redact

    path_words = " ".join(p for p in re.split(r"[/._-]+", rel) if p)
    rows = []
    # The whole file first (a key block runs over several chunks), then each
    # chunk (what a chunk's own edges make of a value, read alone).
    for chunk in chunk_file(rel, mask_lines(text, code=not _is_prose(rel))):
        masked = redact(chunk.text)[0] if chunk.language in _PROSE else mask_code(chunk.text)[0]
        rows.append(
            ChunkInput(
                text=masked,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                section=chunk.kind,
                symbol=chunk.symbol,
                language=chunk.language,
                title=chunk.symbol or "",
                keywords=f"{path_words} {identifier_parts(masked)}",
            )
        )
    return rows


def identifier_parts(text: str) -> str:
    """The words inside compound identifiers (getUserName → get user name),
    so BM25 finds code by the words a person would type."""
    parts: dict[str, None] = {}
    for ident in set(_IDENT.findall(text)):
        pieces = [p for p in _SPLIT.split(ident) if len(p) > 1]
        if len(pieces) > 1:
            parts.update(dict.fromkeys(p.lower() for p in pieces))
    return " ".join(parts)


def _unindexed(paths: list[str], skipped: list[tuple[str, str]], root: Path) -> list[tuple[str, str]]:
    """Why each of `paths` (named to re-check, not among the files discovery
    found) is not indexed: discovery's reason for it or a folder holding it,
    else a folder, not in the work tree, or left out by git's ignore rules."""
    reasons = dict(skipped)
    folders = [(folder, reason) for folder, reason in skipped if folder.endswith("/")]
    out = []
    for rel in paths:
        reason = reasons.get(display_path(rel)) or next(
            (f"{why} ({folder})" for folder, why in folders if rel.startswith(folder)), None
        )
        if reason is not None:
            reason = "no such file" if reason == "missing" else reason  # tracked, gone from the work tree
        elif rel == ".git" or rel.startswith(".git/"):
            reason = "git's own files"
        elif os.path.isdir(root / rel):
            reason = "a folder: name its files, or run `lore index`"
        elif not os.path.lexists(root / rel):
            reason = "no such file"
        elif not os.path.isfile(root / rel):
            reason = "not a regular file"
        else:
            reason = "ignored by git"
        out.append((rel, reason))
    return out


def _norm(path: str, root: Path) -> str | None:
    full = Path(path) if os.path.isabs(path) else root / path
    try:
        return Path(os.path.normpath(full)).relative_to(root).as_posix()
    except ValueError:
        return None
