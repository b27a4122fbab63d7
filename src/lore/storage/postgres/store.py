"""The PostgreSQL backend's store: one clone of one project in a shared database.

Every SQL statement of the PostgreSQL index lives in this package, one module
per concern of the :class:`~lore.storage.base.Store` protocol:

=================  =============================================================
``core.py``        connections, transactions, locks, index status, meta, repair
``files.py``       files and the three-way sync of each clone's copies
``memories.py``    memories (pages, stamps, global ones) and access statistics
``links.py``       links between memories
``lifecycle.py``   attention tiers, evidence, error patterns, proposals
``search.py``      chunks, BM25 lexical search, vector search (HNSW)
``vectors.py``     embeddings shared by every project, what is left to embed
``commits.py``     a clone's history
``anchors.py``     code anchors of memories and their staleness
``reports.py``     counts, source counts, `lore db status/projects`, export
``sql.py``         SQL pieces: columns, scopes, filters, BM25 (runs nothing)
``convert.py``     rows to typed records
``migrations.py``  the schema, as numbered migrations (`lore db upgrade`)
=================  =============================================================

A new Store method goes in the module of its concern (a new module and mixin
for a new concern, added to :class:`PostgresStore`'s bases); see
docs/postgres.md, "Adding a Store method".
"""

from __future__ import annotations

from lore.storage.postgres.anchors import AnchorRows
from lore.storage.postgres.commits import CommitRows
from lore.storage.postgres.core import DEFAULT_TEXT_SEARCH, is_local_memory
from lore.storage.postgres.files import FileRows
from lore.storage.postgres.lifecycle import LifecycleRows
from lore.storage.postgres.links import LinkRows
from lore.storage.postgres.memories import MemoryRows
from lore.storage.postgres.reports import Reports
from lore.storage.postgres.search import ChunkRows
from lore.storage.postgres.vectors import VectorRows

__all__ = ["DEFAULT_TEXT_SEARCH", "PostgresStore", "is_local_memory"]


class PostgresStore(
    FileRows, MemoryRows, LinkRows, LifecycleRows, ChunkRows, VectorRows, CommitRows, AnchorRows, Reports
):
    """One clone of one project in a shared PostgreSQL database: the
    :class:`~lore.storage.base.Store` of the team backend."""
