"""PostgreSQL rows to the storage layer's typed records, and text made storable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lore.storage.base import ChunkRecord, CommitRecord, MemoryRecord


def chunk_record(kind: str, row: Sequence[Any]) -> ChunkRecord:
    """A row of ``sql.CHUNK_COLUMNS`` (then a memory's or commit's columns for those kinds)."""
    chunk = ChunkRecord(
        chunk_id=int(row[0]),
        kind=row[1],
        path=row[2],
        section=row[3],
        symbol=row[4],
        language=row[5],
        start_line=row[6],
        end_line=row[7],
        title=row[8],
        keywords=row[9],
        text=row[10],
        role=row[11],
    )
    if kind == "memory" and len(row) > 12:
        chunk.memory = memory_record(row[12:])
    elif kind == "commit" and len(row) > 12:
        chunk.commit = commit_record(row, 12)
    return chunk


def memory_record(row: Sequence[Any]) -> MemoryRecord:
    """A row of ``sql.MEMORY_COLUMNS``."""
    return MemoryRecord(
        id=row[0],
        title=row[1],
        type=row[2],
        sector=row[3],
        tags=list(row[4]),
        applies_to=row[5],
        agent=row[6],
        task=row[7],
        project=row[8],
        visibility=row[9],
        storage=row[10],
        occurred_at=row[11],
        content_hash=row[12],
        confidence=float(row[13]),
        files=list(row[14]),
        summary=row[15],
        body_line=row[16],
        evidence_count=row[17],
        owner=row[18],
        path=row[19],
        is_global=bool(row[20]),
        superseded_by=row[21],
        source=row[22],
    )


def commit_record(row: Sequence[Any], at: int) -> CommitRecord:
    """The ``sql.COMMIT_COLUMNS`` of `row`, from column `at` on."""
    r = row[at:]
    return CommitRecord(
        sha=r[0],
        author=r[1],
        email=r[2],
        date=r[3],
        subject=r[4],
        body=r[5],
        files=list(r[6]),
        head_files=list(r[7]),
        n_files=r[8],
        is_merge=bool(r[9]),
    )


def clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL characters."""
    return text.replace("\x00", "\ufffd") if text and "\x00" in text else text
