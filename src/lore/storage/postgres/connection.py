"""Connections to PostgreSQL: one pool per database URL per process.

A store borrows a connection for one statement (autocommit) or for one
transaction, so a process with many open projects (a server) shares a few
connections, and an object nobody closed holds none. Every connection of
the pool gets Lore's schema on its search path and pgvector's settings.
"""

from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from lore.errors import StorageError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

SCHEMA = "lore"
POOL_SIZE = 8
CONNECT_TIMEOUT = 10  # seconds to wait for a connection (server or pool)
# Candidates the HNSW scan keeps (pgvector's default is 40; Lore asks for up to
# 40 and more while widening). With iterative scans a filtered search keeps
# scanning the graph until enough rows pass the filter.
EF_SEARCH = 100

_POOLS: dict[str, ConnectionPool] = {}
_LOCK = threading.Lock()


def redact(url: str) -> str:
    """The URL without its password, for messages and `describe()`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://…"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def _configure(conn: psycopg.Connection) -> None:
    """Session settings every Lore connection needs."""
    conn.execute(f"SET search_path = {SCHEMA}, public")
    conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")
    conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    try:
        from pgvector.psycopg import register_vector

        register_vector(conn)
    except Exception:  # the extension is not created yet: `lore db upgrade` will
        pass


def pool(url: str) -> ConnectionPool:
    """The process's pool for `url` (created on first use, closed at exit)."""
    with _LOCK:
        found = _POOLS.get(url)
        if found is not None:
            return found
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StorageError(
                "the PostgreSQL backend needs psycopg; install it with `pip install 'lore-memory[postgres]'`"
            ) from None
        connect(url).close()  # fails fast, with the server's own reason
        created = ConnectionPool(
            url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
            configure=_configure,
            timeout=CONNECT_TIMEOUT,
            open=False,
            name="lore",
        )
        try:
            created.open(wait=True, timeout=CONNECT_TIMEOUT)
        except Exception as err:
            created.close()
            raise StorageError(
                f"cannot connect to PostgreSQL at {redact(url)} ({_reason(err)}); check LORE_DATABASE_URL "
                "or [index] database_url, and that the server is running"
            ) from None
        _POOLS[url] = created
        return created


def connect(url: str) -> psycopg.Connection[Any]:
    """A connection of its own (migrations hold a session lock on it)."""
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
            f"cannot connect to PostgreSQL at {redact(url)} ({_reason(err)}); check LORE_DATABASE_URL "
            "or [index] database_url, and that the server is running"
        ) from None
    _configure(conn)
    return conn


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[-1] if text else err.__class__.__name__


def close(url: str) -> None:
    """Close the pool of `url` (a store that needs it again opens a new one)."""
    with _LOCK:
        found = _POOLS.pop(url, None)
    if found is not None:
        try:
            found.close(timeout=2)
        except Exception:
            pass


def close_all() -> None:
    """Close every pool (at exit, and in tests that stop a server)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for each in pools:
        try:
            each.close(timeout=2)
        except Exception:
            pass


atexit.register(close_all)
