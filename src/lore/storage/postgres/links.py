"""Links between memories in the PostgreSQL index (Markdown links, [[wikilinks]],
typed relations): one row per link written in a memory file, resolved to
memories when read. A link lives with its file: the project's for committed
memories, a clone's (its database role's only) for local ones."""

from __future__ import annotations

from collections.abc import Sequence

from lore.storage.base import LinkInput, LinkRecord, MemoryFilter
from lore.storage.postgres import sql
from lore.storage.postgres.core import StoreCore


class LinkRows(StoreCore):
    """Store methods about links between memories (see :class:`lore.storage.base.Store`)."""

    def put_links(self, file_id: int, links: Sequence[LinkInput]) -> None:
        if not links:
            return
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO links(file_id, project_id, clone_id, owner_role, ord, relation, target, target_key, "
                "kind, line, origin) SELECT f.id, f.project_id, f.clone_id, f.owner_role, %s, %s, %s, %s, %s, "
                "%s, %s FROM files f WHERE f.id = %s",
                [
                    (
                        i,
                        link.relation,
                        link.target,
                        link.target_key,
                        link.kind,
                        link.line,
                        link.origin,
                        file_id,
                    )
                    for i, link in enumerate(links)
                ],
            )

    def links(
        self,
        flt: MemoryFilter | None = None,
        *,
        target_keys: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
    ) -> list[LinkRecord]:
        where, params = self._where("memory", flt)
        clauses = [sql.scope("l"), *([where] if where else [])]
        params = [*self._scope, *params]
        if target_keys is not None:
            clauses.append("l.target_key = ANY(%s)")
            params.append(list(target_keys))
        if relations is not None:
            clauses.append("l.relation = ANY(%s)")
            params.append(list(relations))
        rows = self._rows(
            "SELECT m.id, f.path, m.title, l.relation, l.target, l.target_key, l.kind, l.line, l.origin "
            "FROM links l JOIN files f ON f.id = l.file_id JOIN memories m ON m.file_id = l.file_id "
            f'WHERE {" AND ".join(clauses)} ORDER BY f.path COLLATE "C", l.ord',
            params,
        )
        return [LinkRecord(*row) for row in rows]
