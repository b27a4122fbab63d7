"""Vectors of the PostgreSQL index: keyed by (model, content hash) and shared by
every project of the database, so equal text is embedded and stored once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lore.storage.base import embedding_text
from lore.storage.postgres import sql
from lore.storage.postgres.core import StoreCore

if TYPE_CHECKING:
    import numpy as np

_KIND_ORDER = ("memory", "commit", "code")  # what gets embedded first


class VectorRows(StoreCore):
    """Store methods about vectors (see :class:`lore.storage.base.Store`)."""

    def pending_embeddings(self, model: str, limit: int, kind: str | None = None) -> list[tuple[str, str]]:
        """(text_hash, text to embed) of chunks with no vector for `model` yet,
        memories first, then commits, then code."""
        out: dict[str, str] = {}
        for each in (kind,) if kind else _KIND_ORDER:
            if len(out) >= limit:
                break
            rows = self._rows(
                "SELECT DISTINCT ON (c.text_hash) c.text_hash, c.kind, c.title, c.text FROM chunks c "
                f"WHERE c.kind = %s AND {sql.scope('c')} AND NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.model = %s AND e.text_hash = c.text_hash) ORDER BY c.text_hash LIMIT %s",
                (each, *self._scope, model, limit - len(out)),
            )
            for hash_, chunk_kind, title, text in rows:
                out.setdefault(hash_, embedding_text(chunk_kind, title, text))
        return list(out.items())[:limit]

    def count_pending(self, model: str, kind: str | None = None, cap: int | None = None) -> int:
        """Distinct chunk texts without a vector for `model` (counting stops at `cap`)."""
        if cap is None and self.all_embedded(model):
            return 0
        row = self._one(
            "SELECT count(*) FROM (SELECT DISTINCT c.text_hash FROM chunks c "
            f"WHERE {sql.scope('c')} AND (%s::text IS NULL OR c.kind = %s) AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = c.text_hash)"
            f"{' LIMIT %s' if cap is not None else ''}) t",
            (*self._scope, kind, kind, model, *((cap,) if cap is not None else ())),
        )
        return int(row[0]) if row else 0

    def all_embedded(self, model: str) -> bool:
        """True when nothing changed since every chunk had a vector (no scan needed)."""
        return self.get_meta(f"embedded:{model}") == str(self.vectors_version())

    def mark_all_embedded(self, model: str) -> None:
        # The version is read before the check: a chunk committed after it
        # moves the version on, so it is never covered by this mark.
        version = self.vectors_version()
        if not self.count_pending(model, cap=1):
            self.set_meta(f"embedded:{model}", str(version))

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors, shared by every project (a hash stored already is kept)."""
        import numpy as np

        data = np.asarray(vectors, dtype=np.float32)
        order = sorted(range(len(hashes)), key=lambda i: hashes[i])  # one lock order for everyone
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings(model, text_hash, dim, vector) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (model, text_hash) DO NOTHING",
                [(model, hashes[i], int(data.shape[1]), data[i]) for i in order],
            )

    def drop_embeddings(self, keep_model: str | None) -> int:
        """Forget vectors: of other models than `keep_model` that no other clone
        still uses (after a model change), and, with `keep_model` None (`lore
        index --reembed`), every vector of this clone's texts as well.

        Vectors are shared by every project, so when any go, every project's
        vectors_version moves on: a clone whose texts lost a vector embeds it
        again instead of trusting its 'all embedded' mark.
        """
        mine = f" OR EXISTS (SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash AND {sql.scope('c')})"
        with self._writing() as conn:
            gone = conn.execute(
                "DELETE FROM embeddings e WHERE e.model IS DISTINCT FROM %s AND (NOT EXISTS (SELECT 1 FROM meta "
                f"WHERE key = 'embed_model' AND value = e.model AND clone_id <> %s){mine if keep_model is None else ''})",
                (keep_model, self.clone_id, *(self._scope if keep_model is None else ())),
            ).rowcount
            if gone:
                conn.execute(
                    "UPDATE projects SET changed_seq = nextval('change_seq') WHERE id IN "
                    "(SELECT id FROM projects ORDER BY id FOR UPDATE)"
                )
        return gone

    def count_embeddings(self, model: str) -> int:
        row = self._one(
            "SELECT count(*) FROM embeddings e WHERE e.model = %s AND EXISTS "
            f"(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash AND {sql.scope('c')})",
            (model, *self._scope),
        )
        return int(row[0]) if row else 0

    def embedding_dim(self, model: str) -> int | None:
        row = self._one(
            "SELECT e.dim FROM embeddings e WHERE e.model = %s AND EXISTS "
            f"(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash AND {sql.scope('c')}) LIMIT 1",
            (model, *self._scope),
        )
        return int(row[0]) if row and row[0] is not None else None

    def dump_embeddings(self, model: str) -> Iterator[tuple[str, np.ndarray]]:
        import numpy as np

        rows = self._rows(
            "SELECT e.text_hash, e.vector FROM embeddings e WHERE e.model = %s AND EXISTS "
            f"(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash AND {sql.scope('c')}) "
            'ORDER BY e.text_hash COLLATE "C"',
            (model, *self._scope),
        )
        for text_hash_, vector in rows:
            values = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
            yield text_hash_, np.asarray(values, dtype=np.float32)
