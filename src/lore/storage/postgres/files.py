"""Files of the PostgreSQL index: what each clone synced from its disk, and the
indexed rows every clone (committed memories) or one clone (code, commits,
local memories) reads.

Sync is three-way: ``clone_files`` records what this clone last synced from
its disk, so :meth:`FileRows.file_states` is *this clone's* view, a clone
pushes only what it changed, and deleting a file removes the shared rows only
if no other clone changed them since.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lore.storage.base import ChunkFilter, FileState
from lore.storage.postgres import convert, sql
from lore.storage.postgres.core import StoreCore, is_local_memory


class FileRows(StoreCore):
    """Store methods about files (see :class:`lore.storage.base.Store`)."""

    def file_states(self, kind: str) -> dict[str, FileState]:
        """What *this clone* last synced of each file (the three-way sync's base)."""
        rows = self._rows(
            "SELECT path, id, sha256, mtime_ns, size, error FROM clone_files WHERE clone_id = %s AND kind = %s",
            (self.clone_id, kind),
        )
        return {row[0]: FileState(int(row[1]), row[2], int(row[3]), int(row[4]), row[5]) for row in rows}

    def paths(self, kind: str) -> set[str]:
        rows = self._rows(
            f"SELECT path FROM files f WHERE {sql.scope('f')} AND kind = %s", (*self._scope, kind)
        )
        return {r[0] for r in rows}

    def code_files(self, paths: Sequence[str], flt: ChunkFilter | None = None) -> dict[str, str | None]:
        """{path: role} of this clone's indexed code files among `paths` that pass
        `flt`. A file with nothing to chunk (an empty file) counts too, unless a
        language is asked for (the one condition on its chunks)."""
        if not paths:
            return {}
        where, params = self._where("code", flt) if flt is not None and not flt.is_empty() else ("", [])
        chunks = "JOIN chunks c ON c.file_id = f.id " if flt is not None and flt.languages else ""
        rows = self._rows(
            f"SELECT DISTINCT f.path, f.role FROM files f {chunks}"
            "WHERE f.project_id = %s AND f.clone_id = %s AND f.kind = 'code' AND f.path = ANY(%s)"
            f"{' AND ' + where if where else ''}",
            (*self._scope, list(dict.fromkeys(paths)), *params),
        )
        return {path: role for path, role in rows}

    def set_roles(self, roles: dict[str, str | None]) -> None:
        """Give this clone's indexed code files new roles (after the role rules changed)."""
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "UPDATE files SET role = %s WHERE project_id = %s AND clone_id = %s AND kind = 'code' AND path = %s",
                [(role, *self._scope, path) for path, role in sorted(roles.items())],
            )

    def put_file(
        self,
        path: str,
        kind: str,
        sha256: str,
        mtime_ns: int,
        size: int,
        error: str | None = None,
        role: str | None = None,
    ) -> int:
        """Record this clone's copy of a file and (unless it failed to parse)
        insert or replace its indexed rows, dropping what was indexed for it.

        A committed memory's rows are the project's: a broken copy in one
        clone is that clone's error, not a reason to hide the memory from
        everyone, so an error leaves the shared rows alone.
        """
        shared = kind == "memory" and not is_local_memory(path)
        owner = self._owner_of(path) if kind == "memory" else ""
        with self._writing() as conn:
            if owner:
                # A local memory a role synced first stays that role's: a role that sees
                # every row (the tables' owner re-indexing the clone) wrote a second row
                # under its own name, and the first role was locked out of its clone.
                # (A role that sees only its own rows finds none here.)
                found = conn.execute(
                    "SELECT owner_role FROM clone_files WHERE clone_id = %s AND path = %s",
                    (self.clone_id, path),
                ).fetchone()
                if found is not None and found[0]:
                    owner = str(found[0])
            conn.execute(
                "INSERT INTO clone_files(clone_id, path, kind, sha256, mtime_ns, size, error, owner_role) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (clone_id, path) DO UPDATE SET "
                "kind = excluded.kind, sha256 = excluded.sha256, mtime_ns = excluded.mtime_ns, "
                "size = excluded.size, error = excluded.error, owner_role = excluded.owner_role",
                (self.clone_id, path, kind, sha256, mtime_ns, size, convert.clean(error), owner),
            )
            if shared:
                self._lock_project(conn)
            self._changed(kind, shared)
            clone = None if shared else self.clone_id
            if error is not None:
                if not shared:
                    conn.execute(
                        "DELETE FROM files WHERE project_id = %s AND clone_id = %s AND path = %s",
                        (self.project_id, clone, path),
                    )
                return 0
            row = conn.execute(
                "INSERT INTO files(project_id, clone_id, path, kind, sha256, role, owner_role) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (project_id, clone_id, owner_role, path) DO UPDATE SET kind = excluded.kind, "
                "sha256 = excluded.sha256, role = excluded.role, is_global = false, "
                "written_by = current_user, indexed_at = now() RETURNING id",
                (self.project_id, clone, path, kind, sha256, role, owner),
            ).fetchone()
            assert row is not None
            file_id = int(row[0])
            for table in ("chunks", "memories", "commits", "links"):
                conn.execute(f"DELETE FROM {table} WHERE file_id = %s", (file_id,))
            return file_id

    def touch_file(self, file_id: int, mtime_ns: int, size: int) -> None:
        self._exec(
            "UPDATE clone_files SET mtime_ns = %s, size = %s WHERE id = %s AND clone_id = %s",
            (mtime_ns, size, file_id, self.clone_id),
        )

    def prune_vectors(self) -> int:
        return 0  # shared by every project and role of the database: not one clone's to drop

    def forget_synced(self, paths: Iterable[str]) -> list[str]:
        """Those of `paths` another clone has synced too: this clone's base loses
        them, the shared rows stay for the clones that have the files."""
        wanted = list(paths)
        if not wanted:
            return []
        with self._writing() as conn:
            rows = conn.execute(
                "DELETE FROM clone_files cf WHERE cf.clone_id = %s AND cf.path = ANY(%s) AND EXISTS "
                "(SELECT 1 FROM clone_files other WHERE other.path = cf.path AND other.clone_id <> cf.clone_id "
                "AND other.clone_id IN (SELECT id FROM clones WHERE project_id = %s)) RETURNING cf.path",
                (self.clone_id, wanted, self.project_id),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def delete_files(self, paths: Iterable[str]) -> int:
        """Forget files this clone no longer has. A committed memory's shared
        rows go only if they still hold what this clone had (no other clone
        changed it since); otherwise the other clone's version stays."""
        wanted = list(paths)
        if not wanted:
            return 0
        with self._writing() as conn:
            gone = conn.execute(
                "DELETE FROM clone_files WHERE clone_id = %s AND path = ANY(%s) RETURNING path, kind, sha256",
                (self.clone_id, wanted),
            ).fetchall()
            for path, kind, sha in gone:
                if kind == "memory" and not is_local_memory(path):
                    self._lock_project(conn)
                    conn.execute(
                        "DELETE FROM files WHERE project_id = %s AND clone_id IS NULL AND owner_role = '' "
                        "AND path = %s AND sha256 = %s",
                        (self.project_id, path, sha),
                    )
                    self._changed(kind, True)
                else:
                    conn.execute(
                        "DELETE FROM files WHERE project_id = %s AND clone_id = %s AND path = %s",
                        (self.project_id, self.clone_id, path),
                    )
                    self._changed(kind, False)
            return len(gone)

    def file_errors(self, kind: str) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT path, error FROM clone_files WHERE clone_id = %s AND kind = %s AND error IS NOT NULL "
            'ORDER BY path COLLATE "C"',
            (self.clone_id, kind),
        )
        return [(r[0], r[1]) for r in rows]
