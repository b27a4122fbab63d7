"""Commits in the PostgreSQL index: a clone's history (stored as files named
``git:<sha>``), with the paths each commit changed as named then and at HEAD."""

from __future__ import annotations

import json

from lore.storage.base import CommitRecord
from lore.storage.postgres import convert, sql
from lore.storage.postgres.core import StoreCore


class CommitRows(StoreCore):
    """Store methods about commits (see :class:`lore.storage.base.Store`)."""

    def put_commit(self, file_id: int, commit: CommitRecord) -> None:
        self._exec(
            "INSERT INTO commits(file_id, sha, author, email, date, subject, body, files, head_files, "
            "n_files, is_merge, ts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                file_id,
                commit.sha,
                convert.clean(commit.author),
                convert.clean(commit.email),
                commit.date,
                convert.clean(commit.subject),
                convert.clean(commit.body),
                json.dumps(commit.files),
                json.dumps(commit.head_files),
                commit.n_files or len(commit.files),
                commit.is_merge,
                sql.epoch(commit.committed or commit.date),
            ),
        )

    def prune_commits(self, keep: int) -> int:
        """Drop all but the `keep` newest commits of this clone."""
        with self._writing() as conn:
            gone = conn.execute(
                "DELETE FROM files WHERE id IN (SELECT x.file_id FROM commits x JOIN files f ON "
                "f.id = x.file_id WHERE f.clone_id = %s ORDER BY x.ts DESC OFFSET %s) RETURNING path",
                (self.clone_id, keep),
            ).fetchall()
            if gone:
                conn.execute(
                    "DELETE FROM clone_files WHERE clone_id = %s AND path = ANY(%s)",
                    (self.clone_id, [g[0] for g in gone]),
                )
                self._changed("commit", False)
            return len(gone)

    def redate_commits(self, times: dict[str, int]) -> int:
        """Date this clone's stored commits by these times ({sha: epoch seconds}); how many changed."""
        if not times:
            return 0
        with self._writing() as conn:
            return conn.execute(
                "UPDATE commits x SET ts = t.ts FROM unnest(%s::text[], %s::bigint[]) AS t(sha, ts), files f "
                "WHERE x.sha = t.sha AND f.id = x.file_id AND f.clone_id = %s AND x.ts != t.ts",
                (list(times), list(times.values()), self.clone_id),
            ).rowcount

    def remap_commit_paths(self, mapping: dict[str, str | None]) -> int:
        """Point stored commits' HEAD paths at their new names (None: gone)."""
        if not mapping:
            return 0
        changed = 0
        with self._writing() as conn:
            rows = conn.execute(
                "SELECT x.file_id, x.head_files FROM commits x JOIN files f ON f.id = x.file_id "
                "WHERE f.clone_id = %s",
                (self.clone_id,),
            ).fetchall()
            for file_id, paths in rows:
                moved = [mapping.get(p, p) if p is not None else None for p in paths]
                if moved != paths:
                    conn.execute(
                        "UPDATE commits SET head_files = %s WHERE file_id = %s", (json.dumps(moved), file_id)
                    )
                    changed += 1
        return changed

    def commits_touching(self, head_path: str, limit: int = 20) -> list[CommitRecord]:
        rows = self._rows(
            f"SELECT {sql.COMMIT_COLUMNS} FROM commits m JOIN files f ON f.id = m.file_id "
            "WHERE f.clone_id = %s AND m.head_files @> %s::jsonb ORDER BY m.ts DESC LIMIT %s",
            (self.clone_id, json.dumps([head_path]), limit),
        )
        return [convert.commit_record(row, 0) for row in rows]

    def commits(self) -> list[CommitRecord]:
        """Every commit this clone stored, newest first."""
        rows = self._rows(
            f"SELECT {sql.COMMIT_COLUMNS} FROM commits m JOIN files f ON f.id = m.file_id "
            "WHERE f.clone_id = %s ORDER BY m.ts DESC",
            (self.clone_id,),
        )
        return [convert.commit_record(row, 0) for row in rows]

    def paths_changed(self, since: str | None, until: str | None) -> set[str]:
        """Files (as named at HEAD) changed by this clone's commits in [since, until)."""
        rows = self._rows(
            "SELECT DISTINCT p.path FROM commits m JOIN files f ON f.id = m.file_id "
            "CROSS JOIN LATERAL jsonb_array_elements_text(m.head_files) AS p(path) "
            "WHERE f.clone_id = %s AND p.path IS NOT NULL AND m.ts >= %s AND m.ts < %s",
            (self.clone_id, sql.epoch(since) if since else 0, sql.epoch(until) if until else 2**62),
        )
        return {r[0] for r in rows}
