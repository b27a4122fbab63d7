"""Chunk records kept between searches of one process.

A search reads a few hundred chunk records (its keyword and vector
candidates), and the next search of the same process — an MCP server, the
web UI, a bench loop — reads many of the same again: over 100 recall tasks
on the 52,901-chunk bench index, 63% of the ~650 records a recall reads
had been read before, at ~8-16 µs each (SQLite's row, then the record; a
memory chunk's record holds its memory's fields too).

The records are good while the index's ``content_token`` holds: triggers
give it a new random value on any write to the tables a record or a search
filter reads (migration 11), in this process or another. Entries are keyed
by the filter they passed, so a record left out by one filter is not shown
to another. Records are shared, never copied: readers must not change them.
The same token keeps :attr:`RecordCache.memo`, other facts read from the
index (which query terms are frequent, see :mod:`lore.storage.sqlite.lexical`).
:attr:`RecordCache.terms`, each query term's BM25 over the rows holding it
(:mod:`lore.storage.sqlite.termlists`), holds while its own table's rows do.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from lore.storage.base import ChunkRecord
from lore.storage.sqlite.termlists import MAX_BYTES as TERM_LISTS_MAX_BYTES
from lore.storage.sqlite.termlists import TermLists

# What the records may take: their text plus ~600 bytes of object each
# (~40k records of the stdlib index, whose chunks average 1 KB of text). Only a
# long-running process fills it: a recall reads ~650 records. At 24 MB, 100
# tasks asked twice of the 52,973-chunk bench index read ~9 ms of records per
# recall the second time; at 64 MB, ~1.3 ms.
MAX_BYTES = 64 << 20
_RECORD_BYTES = 600

_ABSENT = None  # an id that is not there, or that the filter left out


def _size(record: ChunkRecord | None) -> int:
    return _RECORD_BYTES + (len(record.text) if record is not None else 0)


# The caches of the process's open stores: the budgets above are shared among
# them (a team server on SQLite opens a store per user).
_OPEN: weakref.WeakSet[RecordCache] = weakref.WeakSet()


def _share(total: int) -> int:
    return total // max(1, len(_OPEN))


class RecordCache:
    def __init__(self, max_bytes: int | None = None) -> None:
        self._fixed = max_bytes
        self.token: Any = None
        self.size = 0
        self._records: OrderedDict[Hashable, ChunkRecord | None] = OrderedDict()
        # Small facts of the index, good as long as the records (bounded by their callers' keys).
        self.memo: dict[Hashable, Any] = {}
        # Each query term's BM25 over its rows (lore.storage.sqlite.termlists).
        self.terms = TermLists(budget=lambda: _share(TERM_LISTS_MAX_BYTES))
        _OPEN.add(self)

    @property
    def max_bytes(self) -> int:
        """What the records may take: :data:`MAX_BYTES`, shared among the open stores."""
        return self._fixed if self._fixed is not None else _share(MAX_BYTES)

    def release(self) -> None:
        """Drop everything, and leave the budgets to the other stores (the store closed)."""
        self.clear()
        _OPEN.discard(self)

    def valid_for(self, token: Any) -> None:
        """Drop the records and facts when the index changed since they were
        read (the term lists hold per table: :meth:`TermLists.valid_for`)."""
        if token != self.token:
            self._drop()
            self.token = token

    def clear(self) -> None:
        self._drop()
        self.token = None
        self.terms.clear()

    def _drop(self) -> None:
        self._records.clear()
        self.memo.clear()
        self.size = 0

    def split(self, scope: Hashable, ids: list[int]) -> tuple[list[ChunkRecord], list[int]]:
        """(the records of `ids` held for `scope`, the ids not held)."""
        found, missing = [], []
        records = self._records
        for chunk_id in ids:
            key = (scope, chunk_id)
            if key in records:
                records.move_to_end(key)
                record = records[key]
                if record is not _ABSENT:
                    found.append(record)
            else:
                missing.append(chunk_id)
        return found, missing

    def keep(self, scope: Hashable, asked: list[int], read: list[ChunkRecord]) -> None:
        """Hold the records read for `asked` (and the absence of the others),
        dropping the least recently used beyond :data:`MAX_BYTES`."""
        records = self._records
        by_id = {record.chunk_id: record for record in read}
        for chunk_id in asked:
            key = (scope, chunk_id)
            if key in records:  # asked twice in one call
                continue
            record = by_id.get(chunk_id, _ABSENT)
            records[key] = record
            self.size += _size(record)
        while self.size > self.max_bytes and records:
            self.size -= _size(records.popitem(last=False)[1])
