"""Moving an index between backends: `lore db export` and `lore db import`.

A dump is gzip-compressed JSON lines, written through the :class:`Store`
interface only, so any backend exports to any other (SQLite → PostgreSQL and
back): a header line, then one line per file (with its memory or commit and
its chunks), per vector, per code anchor and per access count, and a last
line that counts them (version 2: a dump cut at a line's end, a partial
copy recompressed, is refused rather than taken for the whole). Vectors
travel as float32 bytes (base64), so the imported index searches exactly
like the exported one without embedding anything again.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from types import UnionType
from typing import Any, TypeVar, Union

from lore.errors import StorageError, UsageError, ValidationError
from lore.records import datarecord
from lore.storage.base import (
    KINDS,
    AnchorRecord,
    ChunkInput,
    CommitRecord,
    FileDump,
    LinkInput,
    MemoryRecord,
    Store,
    embed_dim_key,
)

FORMAT = "lore-index-dump"
VERSION = 2
# Index state worth carrying over; counters and versions belong to the store.
PORTABLE_META = ("embed_model", "history_head", "indexed_commit")
# The commits the code and the history were indexed at: a dump without them
# replaced the target's rows, and the target's markers said they were up to date.
_INDEXED_AT = ("history_head", "indexed_commit")
_BATCH = 256


@datarecord
class TransferReport:
    files: int = 0
    chunks: int = 0
    vectors: int = 0
    anchors: int = 0
    access: int = 0
    # Memories of the dump whose file this project lacks (a fresh folder, not a clone):
    # the index follows the files, so the next command drops them.
    memories_without_file: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


T = TypeVar("T")


def records(store: Store) -> Iterator[dict[str, Any]]:
    """Everything `store` holds for this project, as dump records (header first)."""
    meta = {k: v for k, v in store.meta_items().items() if k in PORTABLE_META}
    yield {"format": FORMAT, "version": VERSION, "source": store.describe(), "meta": meta}
    count = 0
    for record in _body(store, meta):
        count += 1
        yield record
    yield {"end": {"records": count}}


def _body(store: Store, meta: dict[str, str]) -> Iterator[dict[str, Any]]:
    for kind in KINDS:
        for dump in store.dump_files(kind):
            yield {"file": asdict(dump)}
    model = meta.get("embed_model")
    if model:
        for text_hash, vector in store.dump_embeddings(model):
            encoded = base64.b64encode(vector.astype("<f4").tobytes()).decode()
            yield {"vector": {"hash": text_hash, "data": encoded}}
    for anchor in store.anchors():
        yield {"anchor": asdict(anchor)}
    for memory_id, (count, when) in sorted(store.access_stats().items()):
        yield {"access": {"memory_id": memory_id, "count": count, "last_accessed": when}}


def export_index(store: Store, target: Path) -> TransferReport:
    """Write everything `store` holds for this project to `target` (atomically, owner-only)."""
    report = TransferReport()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as err:  # named as the user gave it, not as the temporary file next to it
        reason = (err.strerror or str(err)).lower()
        raise StorageError(
            f"cannot write {target} ({reason}); give a file in a folder that exists and you can write to"
        ) from None
    try:
        with os.fdopen(fd, "wb") as raw, gzip.open(raw, "wt", encoding="utf-8") as out:
            for record in records(store):
                out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                _count(report, record)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return report


def import_index(store: Store, source: Path) -> TransferReport:
    """Replace what `store` holds for this project (this clone's view) with a dump."""
    return load(store, _read(source), str(source))


def copy_index(source: Store, target: Store) -> TransferReport:
    """Move a project from one store to another without a file (benchmarks, tests)."""
    return load(target, records(source), source.describe())


def load(store: Store, lines: Iterator[dict[str, Any]], origin: str) -> TransferReport:
    """Replace what `store` holds for this project with the dump `lines`."""
    import numpy as np

    header = next(lines, None)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValidationError(f"{origin} is not a Lore index dump; make one with `lore db export`")
    version, meta = header.get("version", 0), header.get("meta", {})
    if (
        not isinstance(version, int)
        or isinstance(version, bool)
        or not isinstance(meta, dict)
        or not all(isinstance(meta[key], str) for key in PORTABLE_META if key in meta)
    ):
        raise ValidationError(f"{origin}: its first line is not a Lore dump's header; the dump is damaged")
    if version > VERSION:
        raise ValidationError(f"{origin} was written by a newer Lore (dump version {header['version']})")
    model = meta.get("embed_model")
    report = TransferReport()
    vectors: list[tuple[str, Any]] = []
    anchors: dict[str, list[AnchorRecord]] = {}
    access: dict[str, tuple[int, str]] = {}
    width = 0  # every vector of a model has its length

    def flush() -> None:
        if vectors and model:
            store.put_embeddings(model, [h for h, _ in vectors], np.stack([v for _, v in vectors]))
        vectors.clear()

    with store.transaction():
        for kind in KINDS:
            store.delete_files(list(store.file_states(kind)))
        ended = None
        for number, record in enumerate(lines, 2):
            if ended is not None:
                raise ValidationError(
                    f"{origin}: line {number} follows the dump's last line; the dump is damaged, "
                    "the index was left as it was"
                )
            try:
                _count(report, record)
                if "end" in record:
                    ended = int(record["end"]["records"]), number - 2
                elif "file" in record:
                    _put(store, _file(record["file"]))
                elif "vector" in record:
                    data = base64.b64decode(record["vector"]["data"])
                    vector = np.frombuffer(data, dtype="<f4").astype(np.float32)
                    if not len(vector) or len(vector) != (width or len(vector)):
                        raise ValueError(f"a vector of {len(vector)} numbers among vectors of {width}")
                    if not np.isfinite(vector).all():  # NaN would poison every similarity
                        raise ValueError("a vector holds NaN or infinity")
                    width = len(vector)
                    vectors.append((record["vector"]["hash"], vector))
                    if len(vectors) >= _BATCH:
                        flush()
                elif "anchor" in record:
                    anchor = AnchorRecord(**record["anchor"])
                    anchors.setdefault(anchor.memory_id, []).append(anchor)
                elif "access" in record:
                    item = record["access"]
                    access[item["memory_id"]] = (int(item["count"]), str(item["last_accessed"]))
            except (TypeError, KeyError, ValueError, AttributeError, OverflowError) as err:  # rolled back
                raise ValidationError(
                    f"{origin}: line {number} is not a record of a Lore dump ({type(err).__name__}: "
                    f"{str(err)[:80]}); the dump is damaged, the index was left as it was"
                ) from None
        if version >= 2 and (ended is None or ended[0] != ended[1]):
            raise ValidationError(
                f"{origin} is incomplete ({'no last line' if ended is None else f'{ended[1]} of {ended[0]} records'}: "
                "cut short, or a part of a dump); export it again, the index was left as it was"
            )
        flush()
        if model:  # the size the vectors have (searches check a query's against it)
            store.set_meta(embed_dim_key(model), str(width) if width else "")
        for memory_id, found in anchors.items():
            store.replace_anchors(memory_id, found)
            for anchor in found:
                if anchor.stale_reason:
                    store.mark_stale(anchor, anchor.stale_reason, None)
        store.set_access(access)  # the dump's counts, and none for what it does not count
        for key, value in meta.items():
            if key in PORTABLE_META:
                store.set_meta(key, value)
        for key in _INDEXED_AT:
            if key not in meta:  # the dump's index has none: the next `lore index` builds it
                store.set_meta(key, "")
    return report


def _count(report: TransferReport, record: dict[str, Any]) -> None:
    if "file" in record:
        report.files += 1
        report.chunks += len(record["file"].get("chunks", []))
    elif "vector" in record:
        report.vectors += 1
    elif "anchor" in record:
        report.anchors += 1
    elif "access" in record:
        report.access += 1


def _put(store: Store, dump: FileDump) -> None:
    file_id = store.put_file(
        dump.path, dump.kind, dump.sha256, dump.mtime_ns, dump.size, error=dump.error, role=dump.role
    )
    if dump.error is not None:
        return
    if dump.memory is not None:
        store.put_memory(file_id, dump.memory)
    if dump.commit is not None:
        store.put_commit(file_id, dump.commit)
    if dump.links:
        store.put_links(file_id, dump.links)
    store.put_chunks(file_id, dump.kind, dump.chunks)


def _file(data: dict[str, Any]) -> FileDump:
    data = dict(data)
    memory = data.pop("memory", None)
    commit = data.pop("commit", None)
    chunks = data.pop("chunks", [])
    links = data.pop("links", [])  # dumps from before links have none
    dump = _typed(FileDump, data)
    dump.memory = _typed(MemoryRecord, memory) if memory else None
    dump.commit = _typed(CommitRecord, commit) if commit else None
    dump.chunks = [_typed(ChunkInput, c) for c in chunks]
    dump.links = [_typed(LinkInput, link) for link in links]
    return dump


def _typed(cls: type[T], data: Any) -> T:
    """`cls(**data)`, each value checked against its field's type (str, int,
    float, bool, a list of those, optional), so that a damaged dump is refused
    naming its line rather than by the database ("NOT NULL constraint failed"
    for a NaN, a list where a title goes)."""
    import math
    import typing

    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object")
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, typing.get_type_hints(cls))
    for name, value in data.items():
        hint = hints.get(name)
        if hint is None:
            continue  # an unknown field: cls() says so
        allowed = typing.get_args(hint) if typing.get_origin(hint) in (Union, UnionType) else (hint,)
        if value is None and type(None) in allowed:
            continue
        if not any(_is(value, kind) for kind in allowed if kind is not type(None)):
            raise TypeError(f"{cls.__name__}.{name} is {type(value).__name__}, not {hint}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{cls.__name__}.{name} is {value}")
    return cls(**data)


def _is(value: object, kind: Any) -> bool:
    """Does `value` (from JSON) fit the field type `kind`?"""
    import typing

    if typing.get_origin(kind) is list:
        (item,) = typing.get_args(kind) or (Any,)
        return isinstance(value, list) and all(_is(v, item) for v in value)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in (str, bool):
        return isinstance(value, kind)
    return True  # a type a dump's JSON can't be held against: cls() or the store decides


_HINTS: dict[type, dict[str, Any]] = {}


# One line holds one file's record (its chunks and links) and a file is at
# most `[index] max_file_bytes` (1 MB by default); this bounds what a damaged
# or hostile dump can make the importer hold in memory at once.
MAX_LINE_CHARS = 128 * 1024 * 1024


def _read(source: Path) -> Iterator[dict[str, Any]]:
    if not source.is_file():
        what = "is not a regular file" if source.exists() else "does not exist"
        raise UsageError(f"{source} {what}; give the file `lore db export` wrote")
    try:
        with gzip.open(source, "rt", encoding="utf-8") as handle:
            for number, text in enumerate(iter(lambda: handle.readline(MAX_LINE_CHARS + 1), ""), 1):
                if len(text) > MAX_LINE_CHARS:
                    raise ValidationError(
                        f"{source}: line {number} is longer than {MAX_LINE_CHARS:,} characters; "
                        "the dump is damaged or not one `lore db export` wrote"
                    )
                if text.strip():
                    try:
                        yield json.loads(text)
                    except json.JSONDecodeError:
                        raise ValidationError(
                            f"{source}: line {number} is not JSON; the dump is damaged"
                        ) from None
    except (OSError, EOFError) as err:
        raise ValidationError(f"{source} cannot be read as a Lore dump ({err})") from None
