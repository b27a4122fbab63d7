"""Connections to PostgreSQL: one pool per (database URL, role) per process.

A store borrows a connection for one statement (autocommit) or for one
transaction, so a process with many open projects (a server) shares a few
connections, and an object nobody closed holds none. Every connection of
the pool gets Lore's schema on its search path and pgvector's settings.

A team server acts for several people, each mapped to a database role of
their own (`lore serve --users`): their stores use a pool of that role,
whose connections run ``SET ROLE`` once, when they are opened, and are never
reset nor lent to another pool. So a connection never carries one user's
role into another user's request, and row-level security applies to each.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from lore.errors import StorageError
from lore.errors import driver_reason as reason

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg
    from psycopg_pool import ConnectionPool

# The pool logs a warning per connection it drops or fails to open (the server
# restarted), and psycopg one per pipeline it ends on a lost connection ("error
# ignored terminating <psycopg.Pipeline [BAD] at 0x…>"); Lore reports the
# failure itself in one line. A handler of their own keeps them off a command's
# stderr (Python's last-resort handler) while a server that configured logging
# still gets them.
logging.getLogger("psycopg").addHandler(logging.NullHandler())

SCHEMA = "lore"
POOL_SIZE = 8
CONNECT_TIMEOUT = 10  # seconds to wait for a connection (server or pool)
# Candidates the HNSW scan keeps (pgvector's default is 40; hybrid search asks
# for 100). With iterative scans a filtered search keeps scanning the graph
# until enough rows pass the filter. On 55k real MiniLM vectors and 400 real
# questions (bench/postgres.py recall), recall@10 is 0.982 at 100 (p5 0.90),
# 0.986 at 200 and 0.990 at 400. At 1M vectors the graph is harder to walk:
# 0.874 -> 0.923 (Gaussian clusters) and 0.756 -> 0.839 (real vectors grown
# to 1M) from 200 to 400, for 1.8 -> 3.3 ms p50, against ~20 ms for the
# lexical side of the same hybrid search: 400 costs little where it matters.
# With the denser graph of migration 5 (m 32), the grown set gives 0.958 at 400.
EF_SEARCH = 400
WORK_MEM = "32MB"  # per sort or hash of a statement, this pool's connections only
# How long a statement waits for a lock another session holds (a long `lore
# index` of the same clone, an administrator's LOCK TABLE) before it is one line
# saying to try again, as SQLite's busy timeout; 0 waited for ever. A limit the
# role, the database or PGOPTIONS sets is kept. Schema upgrades wait as long as
# it takes (`migrations.upgrade`).
LOCK_TIMEOUT = "30s"

_POOLS: dict[tuple[str, str | None], ConnectionPool] = {}
_LOCK = threading.Lock()


# Query parameters of a connection URL that hold a secret (libpq's names).
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def redact(url: str) -> str:
    """The URL without its passwords (``user:pw@`` or ``?password=``), for messages and `describe()`."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "postgresql://…"
    if password is not None:
        netloc = parts.netloc.rsplit("@", 1)
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{netloc[-1]}")
    if parts.query:
        query = "&".join(
            f"{name}=***" if unquote(name).strip().lower() in SECRET_PARAMETERS else pair
            for pair in parts.query.split("&")
            for name in [pair.split("=", 1)[0]]
        )
        parts = parts._replace(query=query)
    return urlunsplit(parts)


def holds_password(url: str) -> bool:
    """Whether `url` carries a password itself (``user:pw@`` or ``?password=``)."""
    return redact(url) != url


_VECTOR_TYPES: dict[str, Any] = {}  # database URL -> pgvector's type info, fetched once a process


def _configure(conn: psycopg.Connection, role: str | None = None, url: str | None = None) -> None:
    """Session settings every Lore connection needs (acting as `role` when given),
    sent in one round trip: each statement is a wait on the server. (A
    process's first connection gets them twice: when it is checked, and when
    the pool takes it; one round trip, against a second connection.)"""
    from psycopg import sql

    settings = [
        f"SET search_path = {SCHEMA}, public",
        "SET hnsw.iterative_scan = 'relaxed_order'",
        f"SET hnsw.ef_search = {EF_SEARCH}",
        # Statements are prepared after a few runs (psycopg), and PostgreSQL may then
        # switch to one generic plan; how many rows a tsquery or a filter matches
        # varies by orders of magnitude with its values, so plan every run for them.
        "SET plan_cache_mode = force_custom_plan",
        # A lexical search materialises the rows its terms match (tsvectors
        # included): ~10 MB for 20k rows, which spilled to disk at the default 4 MB.
        f"SET work_mem = '{WORK_MEM}'",
        # Unless the role, the database or PGOPTIONS chose one already.
        f"SELECT set_config('lock_timeout', '{LOCK_TIMEOUT}', false) WHERE current_setting('lock_timeout') = '0'",
    ]
    statements: list[sql.Composable] = [sql.SQL(each) for each in settings]
    if role is not None:
        statements.insert(0, sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    conn.execute(sql.SQL("; ").join(statements))
    _register_vector(conn, url)


def _register_vector(conn: psycopg.Connection, url: str | None) -> None:
    """pgvector's `vector` type on `conn`, its type looked up once per database
    (pgvector's own `register_vector` asks for four types on every connection)."""
    try:
        from pgvector.psycopg.vector import register_vector_info
        from psycopg.types import TypeInfo
    except ImportError:
        return
    info = _VECTOR_TYPES.get(url) if url is not None else None
    if info is None:
        try:
            info = TypeInfo.fetch(conn, "vector")
        except Exception:
            return
        if info is None:
            return  # the extension is not created yet: `lore db upgrade` will
        if url is not None:
            _VECTOR_TYPES[url] = info
    register_vector_info(conn, info)


def pool(url: str, role: str | None = None) -> ConnectionPool:
    """The process's pool for `url` acting as `role` (None: the URL's own user);
    created on first use, closed at exit."""
    import functools

    key = (url, role)
    with _LOCK:
        found = _POOLS.get(key)
        if found is not None:
            return found
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StorageError(
                "the PostgreSQL backend needs psycopg; install it with `pip install 'lore-memory[postgres]'`"
            ) from None
        # Fails fast, with the server's own reason; then it is the pool's first
        # connection (a second one would cost a command another round of
        # connecting: a server process, authentication, the settings).
        handing, close_untaken = _handing_over(connect(url, role))
        created = _pool_class(ConnectionPool, role)(
            url,
            connection_class=handing,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
            configure=functools.partial(_configure, role=role, url=url),
            check=_alive,
            timeout=CONNECT_TIMEOUT,
            open=False,
            name="lore",
        )
        try:
            created.open(wait=True, timeout=CONNECT_TIMEOUT)
        except Exception as err:
            created.close()
            raise StorageError(
                f"cannot connect to PostgreSQL at {redact(url)} ({reason(err)}); check LORE_DATABASE_URL "
                "or [index] database_url, and that the server is running"
            ) from None
        finally:
            close_untaken()  # a pool that failed, or opened its first connection another way
        _POOLS[key] = created
        return created


def _pool_class(base: type[ConnectionPool], role: str | None) -> type[ConnectionPool]:
    """`base` that says why it could not lend a connection where the cause is the
    role it acts as (a role revoked while a server runs: each request waited,
    then read "lost the connection"; the server's log alone said "permission
    denied to set role")."""
    from psycopg_pool import PoolTimeout

    class Diagnosing(base):  # type: ignore[valid-type,misc]
        def getconn(self, timeout: float | None = None) -> Any:
            try:
                return super().getconn(timeout)
            except PoolTimeout:
                if role:
                    connect(self.conninfo, role).close()  # raises, saying what the role lacks
                raise

    return Diagnosing


def _handing_over(
    first: psycopg.Connection[Any],
) -> tuple[type[psycopg.Connection[Any]], Callable[[], None]]:
    """A connection class for a pool whose first new connection is `first`
    (already open and configured; the pool opens the others itself), and what
    closes `first` if the pool has not taken it."""
    import psycopg

    waiting = [first]

    class Handing(psycopg.Connection):
        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
            try:
                return waiting.pop()
            except IndexError:
                return psycopg.Connection.connect(conninfo, **kwargs)

    def close_untaken() -> None:
        while waiting:
            waiting.pop().close()

    return Handing, close_untaken


def _alive(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection it lends: one the server closed while it
    sat idle (a restart, a killed backend) has its goodbye waiting to be read,
    so it is pinged, fails, and the pool lends a new one instead of failing the
    request. One with nothing to read is lent as is: no round trip per use."""
    import select

    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        conn.execute("")


def connect(url: str, role: str | None = None) -> psycopg.Connection[Any]:
    """A connection of its own (migrations hold a session lock on it), acting as `role` if given."""
    try:
        import psycopg
    except ImportError:
        raise StorageError(
            "the PostgreSQL backend needs psycopg; install it with `pip install 'lore-memory[postgres]'`"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as err:
        raise StorageError(
            f"cannot connect to PostgreSQL at {redact(url)} ({reason(err)}); check LORE_DATABASE_URL "
            "or [index] database_url, and that the server is running"
        ) from None
    try:
        _configure(conn, role, url)
    except psycopg.Error as err:
        conn.close()
        raise StorageError(_role_problem(url, role, err)) from None
    return conn


def _role_problem(url: str, role: str | None, err: BaseException) -> str:
    login = urlsplit(url).username or "the server's login role"
    return (
        f"cannot act as database role '{role}' at {redact(url)} ({reason(err)}); "
        f"create it (CREATE ROLE {role} IN ROLE lore_user) and let the server assume it "
        f"(GRANT {role} TO {login})"
    )


def check_role(url: str, role: str) -> None:
    """Raise StorageError (one line) unless the server at `url` can act as `role`
    and `role` may use Lore's schema (a member of ``lore_user``)."""
    conn = connect(url, role)
    try:
        row = conn.execute(
            "SELECT pg_has_role(current_user, 'lore_user', 'USAGE') OR "
            "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
    except Exception as err:
        raise StorageError(_role_problem(url, role, err)) from None
    finally:
        conn.close()
    if not row or not row[0]:
        raise StorageError(
            f"database role '{role}' is not a member of lore_user, so it cannot read Lore's tables; "
            f"run GRANT lore_user TO {role}"
        )


def close(url: str) -> None:
    """Close the pools of `url`, whatever their role (a store that needs one again opens a new one)."""
    with _LOCK:
        found = [_POOLS.pop(key) for key in list(_POOLS) if key[0] == url]
        _VECTOR_TYPES.pop(url, None)  # a database made again under this URL has its type anew
    for each in found:
        try:
            each.close(timeout=2)
        except Exception:
            pass


def close_all() -> None:
    """Close every pool (at exit, and in tests that stop a server)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
        _VECTOR_TYPES.clear()
    for each in pools:
        try:
            each.close(timeout=2)
        except Exception:
            pass


atexit.register(close_all)
