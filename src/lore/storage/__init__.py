"""Storage: the index database behind one interface (:class:`~lore.storage.base.Store`).

The backend is chosen by configuration: ``[index] backend = "sqlite"`` (the
default, `.lore/index.db`) or ``"postgres"`` with ``[index] database_url``;
``LORE_DATABASE_URL`` (or an explicit URL, e.g. `lore serve --database URL`)
wins over both. Nothing above this package knows which one runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lore.storage.base import (
    MEMORY_SORTS,
    AnchorRecord,
    ChunkFilter,
    ChunkInput,
    ChunkRecord,
    CommitRecord,
    ErrorOccurrence,
    ErrorPattern,
    EvidenceRecord,
    FileDump,
    FileState,
    IndexCounts,
    LinkInput,
    LinkRecord,
    MemoryFilter,
    MemoryRecord,
    MemoryStamp,
    ProposalRecord,
    SourceCounts,
    Store,
    TierState,
)

__all__ = [
    "MEMORY_SORTS",
    "AnchorRecord",
    "ChunkFilter",
    "ChunkInput",
    "ChunkRecord",
    "CommitRecord",
    "FileDump",
    "ErrorOccurrence",
    "ErrorPattern",
    "EvidenceRecord",
    "FileState",
    "IndexCounts",
    "LinkInput",
    "LinkRecord",
    "MemoryFilter",
    "MemoryRecord",
    "MemoryStamp",
    "ProposalRecord",
    "SourceCounts",
    "Store",
    "TierState",
    "resolve_database_url",
    "open_store",
    "check_database_role",
]

URL_SCHEMES = ("postgresql://", "postgres://")


def resolve_database_url(project: Any, override: str | None = None) -> str | None:
    """The PostgreSQL URL `project` uses, or None for SQLite.

    Order: `override` (a command's ``--database``), ``LORE_DATABASE_URL``,
    then ``[index] database_url`` when ``[index] backend = "postgres"``.
    """
    from lore.errors import UsageError

    backend = str(project.setting("index", "backend", "sqlite"))
    if backend != "postgres" and project.setting("index", "database_url"):
        # (it was ignored: a user who meant a team's database wrote to a local index)
        from lore.errors import ValidationError

        raise ValidationError(
            '[index] database_url needs [index] backend = "postgres"; '
            "add that line, or remove database_url to keep the local SQLite index",
            path=".lore/config.toml",
        )
    url = override or os.environ.get("LORE_DATABASE_URL") or None
    if url is None and backend == "postgres":
        url = project.setting("index", "database_url") or None
        if not url:
            raise UsageError(
                "[index] backend = 'postgres' needs [index] database_url in .lore/config.toml "
                "(or LORE_DATABASE_URL=postgresql://…)"
            )
    if url is None:
        if backend != "sqlite":
            raise UsageError(
                f"[index] backend = '{backend}' in .lore/config.toml is not known; use sqlite or postgres"
            )
        return None
    url = str(url)
    if not url.startswith(URL_SCHEMES):
        scheme = url.split(":", 1)[0] if re.fullmatch(r"[A-Za-z][\w+.-]{0,20}:.*", url, re.S) else None
        got = (
            f" (got '{scheme}:…')" if scheme else " (a keyword string such as 'host=… dbname=…' is not taken)"
        )
        raise UsageError(f"the database URL must start with postgresql://{got}")
    return url


def open_store(project: Any, *, database_url: str | None = None, role: str | None = None) -> Store:
    """The configured store for `project` (a :class:`lore.project.Project`).

    Args:
        database_url: a PostgreSQL URL that wins over the environment
            and the configuration (`lore serve --database URL`).
        role: on PostgreSQL, the database role to act as (``SET ROLE``) instead
            of the URL's user, so row-level security applies to that role: a
            team server's store for one of its users. Ignored on SQLite.
    """
    url = resolve_database_url(project, database_url)
    if url is None:
        from lore.storage.sqlite import SQLiteStore

        path, notice = _writable_index(project)
        store: Store = SQLiteStore(path)
        if notice:
            store.notices.insert(0, notice)
        return store
    from lore.storage.postgres import open_postgres
    from lore.storage.postgres.connection import holds_password

    store = open_postgres(project, url, role=role)
    configured = project.setting("index", "database_url")
    if configured and holds_password(str(configured)):
        store.notices.append(
            "[index] database_url in .lore/config.toml holds a password in clear; "
            "use ~/.pgpass or PGPASSWORD instead"
        )
    return store


def check_database_role(database_url: str, role: str) -> None:
    """Raise StorageError (one line saying which GRANT is missing) unless the
    server's login at `database_url` can act as `role` (``SET ROLE``) and `role`
    may use Lore's schema: a team server checks every user's role at start-up."""
    from lore.storage.postgres.connection import check_role

    check_role(database_url, role)


# -- administration (lore db …) -------------------------------------------------------------


class _NoProject:
    """Settings of no project: every default (a URL checked without one)."""

    @staticmethod
    def setting(section: str, key: str, default: Any = None) -> Any:
        return default


_NO_PROJECT = _NoProject()


def upgrade_database(project: Any, database_url: str | None = None) -> dict[str, Any]:
    """Bring the schema of `project`'s database up to date (`lore db upgrade`).

    `project` may be None when `database_url` is given (a database with no
    project at hand). SQLite indexes migrate themselves when opened.
    """
    if project is None and database_url is not None and not database_url.startswith(URL_SCHEMES):
        resolve_database_url(_NO_PROJECT, database_url)  # refused, as any other URL is
    url = database_url if project is None else resolve_database_url(project, database_url)
    if url is None:
        from lore.storage.sqlite.migrations import SCHEMA_VERSION

        open_store(project).close()
        return {"backend": "sqlite", "path": str(project.index_path), "schema_version": SCHEMA_VERSION}
    from lore.storage.postgres import upgrade
    from lore.storage.postgres.connection import redact

    before, after = upgrade(url)
    return {"backend": "postgres", "database": redact(url), "from_version": before, "schema_version": after}


def database_status(project: Any, database_url: str | None = None) -> dict[str, Any]:
    """Which database `project` uses, its schema version and 003's index status per clone and source."""
    url = resolve_database_url(project, database_url)
    if url is None:
        from lore.storage.sqlite.migrations import SCHEMA_VERSION

        store = open_store(project)
        try:
            return {
                "backend": "sqlite",
                "path": str(project.index_path),
                "schema_version": SCHEMA_VERSION,
                "counts": store.counts().__dict__,
            }
        finally:
            store.close()
    from lore.storage.postgres import open_postgres

    pg = open_postgres(project, url)
    report = pg.status_report()
    report["counts"] = pg.counts().__dict__
    return report


def list_projects(project: Any, database_url: str | None = None) -> list[dict[str, Any]]:
    """The projects of a shared database (SQLite: just this one)."""
    url = resolve_database_url(project, database_url)
    if url is None:
        return [{"id": None, "name": project.root.name, "current": True}]
    from lore.storage.postgres import open_postgres

    return open_postgres(project, url).projects()


def _writable_index(project: Any) -> tuple[Path, str | None]:
    """Where the SQLite index can live: `.lore/index.db`, or, when `.lore/` or the
    index is read-only, a private copy in the temp folder (read-only commands
    keep working; nothing in `.lore/` is touched)."""
    import shutil

    path = Path(project.index_path)
    folder_ok = os.access(path.parent, os.W_OK)
    if folder_ok and (not path.exists() or os.access(path, os.W_OK)):
        return path, None
    spare = spare_index(project.root)
    if path.exists() and not spare.exists():
        try:
            shutil.copyfile(path, spare)
            os.chmod(spare, 0o600)
        except OSError:
            pass
    if not folder_ok:
        return (
            spare,
            f"{path.parent} is read-only: using a temporary index ({spare}); writes to memories will fail",
        )
    # Only the index file is read-only: memory files are written as ever.
    return (
        spare,
        f"{path} is read-only: using a temporary index ({spare}); make it writable to keep one index",
    )


def spare_index(root: Path) -> Path:
    """The temporary index of a read-only project: in a folder of this user's
    that nobody else may enter (``$TMPDIR/lore-<uid>/<key>/``). The names are
    guessable, so a folder or file someone else made or may write (another
    user planting an index to read the code written into it, or to serve
    their own text as search results) is never used: then a new private
    folder of a random name is, removed when the process ends. A folder of
    this user's that others may read but not write is closed (mode 0700) first."""
    import hashlib
    import stat
    import tempfile

    def private(folder: Path) -> bool:
        try:
            info = os.lstat(folder)
            mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            if mine and info.st_mode & 0o077 and not info.st_mode & 0o022:
                # Ours, others may read but never wrote in it (a umask of 022): closed again.
                os.chmod(folder, 0o700)
                info = os.lstat(folder)
        except OSError:
            return False
        return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077

    key = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    base = Path(tempfile.gettempdir()) / f"lore-{os.getuid()}"
    folder = base / key
    for step in (base, folder):
        try:
            step.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            break
        if not private(step):
            break
    else:
        spare = folder / "index.db"
        try:
            info = os.lstat(spare)
        except FileNotFoundError:
            return spare
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
            return spare
        spare.unlink()  # in a folder of ours, but not ours to trust: gone
        for side in ("-wal", "-shm", "-journal"):
            Path(f"{spare}{side}").unlink(missing_ok=True)
        return spare
    import atexit
    import shutil

    once = tempfile.mkdtemp(prefix=f"lore-{os.getuid()}-")
    atexit.register(shutil.rmtree, once, ignore_errors=True)  # a copy of the code: not left behind
    return Path(once) / "index.db"
