"""Shared fixtures: real projects in temp dirs, and the CLI run as a real subprocess.

The storage backend of the run is ``LORE_TEST_BACKEND`` (``./scripts/test
--backend postgres`` sets it): with ``postgres`` one local PostgreSQL is
started for the session and ``LORE_DATABASE_URL`` points every Lore project
of every test (and every CLI subprocess) at it; each project is its own
project row there.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

import forkserver
import lore

FIXTURES = Path(__file__).parent / "fixtures"
BACKEND = os.environ.get("LORE_TEST_BACKEND", "sqlite")
ON_POSTGRES = BACKEND == "postgres"
TEMPLATE_DB = "lore_template"  # upgraded once; per-test databases are copies

postgres_only = pytest.mark.skipif(
    not ON_POSTGRES, reason="PostgreSQL only: run with ./scripts/test --backend postgres"
)


# Hypothesis's per-example deadline is a timing assertion: on a loaded CI machine
# a 3 ms example took 317 ms once and failed the run. The tests bound work, not time.
settings.register_profile("lore", deadline=None)
settings.load_profile("lore")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "storage_independent: touches no index of the backend under test (none, or a SQLite one "
        "it makes itself); CI's PostgreSQL pass may leave it out",
    )
    config.addinivalue_line(
        "markers",
        "surface: checks an interface (a terminal, a port, a transport, input limits, the browser) over "
        "an index that plays no part in what is checked; CI's PostgreSQL pass leaves it out",
    )


def pytest_collection_modifyitems(config, items):
    """The longest test files first (each file's tests in their own order): the
    parallel workers take files in this order, and long files started last
    left one worker running alone at the end of a run."""
    size: dict[Path, int] = {}

    def length(item) -> int:
        path = item.path
        if path not in size:
            size[path] = path.stat().st_size
        return size[path]

    items.sort(key=lambda item: -length(item))


@pytest.fixture(scope="session", autouse=True)
def database_backend():
    """On the postgres backend: one server for the session (stopped, and its temp
    dir removed, at the end), with a template database already upgraded."""
    if not ON_POSTGRES:
        yield None
        return
    from lore.errors import LoreError
    from lore.storage.postgres.local_server import start

    try:
        server = start()
    except LoreError as err:
        pytest.exit(f"--backend postgres: {err}", returncode=3)
    previous = os.environ.get("LORE_DATABASE_URL")
    try:
        # A throwaway server: durability buys nothing, and every commit of the suite pays for it.
        server.sql(
            "ALTER SYSTEM SET fsync = off",
            "ALTER SYSTEM SET synchronous_commit = off",
            "ALTER SYSTEM SET full_page_writes = off",
            "SELECT pg_reload_conf()",
        )
        _TEMPLATE_SHAPE.append(_shape(server.create_database(TEMPLATE_DB, upgrade=True)))
        os.environ["LORE_DATABASE_URL"] = server.create_database("lore_session", template=TEMPLATE_DB)
        yield server
    finally:
        if previous is None:
            os.environ.pop("LORE_DATABASE_URL", None)
        else:
            os.environ["LORE_DATABASE_URL"] = previous
        for conn in _recyclers.values():
            conn.close()
        server.stop()


_databases = iter(range(1, 1_000_000))
_spare: list[str] = []  # this worker's emptied databases, checked equal to the template
_TEMPLATE_SHAPE: list[tuple] = []  # the template's shape, read when the session makes it
_recyclers: dict[str, Any] = {}  # {spare database: the connection that emptied it}

# Everything a test could change in a database besides its rows: tables,
# columns, indexes, grants, row security, functions, triggers, extensions,
# schemas, database settings, and the rows the upgrade wrote. A database whose
# shape is the template's, once its rows are gone, is as good as a new copy.
_SHAPE = """
SELECT
  (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text || ':' || c.relrowsecurity
                     || ':' || coalesce(c.relacl::text, ''), ',' ORDER BY n.nspname, c.relname)
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_to%'
      AND n.nspname NOT LIKE 'pg\\_temp%'),
  (SELECT string_agg(c.relname || '.' || a.attname || ':' || a.atttypid::regtype::text || ':' || a.attnotnull
                     || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), ''), ',' ORDER BY c.relname, a.attnum)
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname = 'lore' AND a.attnum > 0 AND NOT a.attisdropped),
  (SELECT string_agg(p.proname || md5(p.prosrc) || coalesce(p.proacl::text, ''), ',' ORDER BY p.proname, p.oid)
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')),
  (SELECT string_agg(nspname || coalesce(nspacl::text, ''), ',' ORDER BY nspname) FROM pg_namespace),
  (SELECT string_agg(extname || extversion, ',' ORDER BY extname) FROM pg_extension),
  (SELECT count(*) FROM pg_trigger), (SELECT count(*) FROM pg_policy), (SELECT count(*) FROM pg_constraint),
  (SELECT string_agg(setconfig::text, ',') FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())),
  (SELECT datacl::text FROM pg_database WHERE datname = current_database()),
  (SELECT string_agg(m::text, ',' ORDER BY m::text) FROM lore.schema_migrations m),
  (SELECT string_agg(i::text, ',') FROM lore.instance i)
"""
_KEEP_ROWS = ("schema_migrations", "instance")  # written by the upgrade: part of the template


def _shape(url: str) -> tuple:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return tuple(conn.execute(_SHAPE).fetchone())


def _recycle(name: str, url: str) -> bool:
    """Empty a test's database for the next test: True if it is now as good
    as a fresh copy of the template (no connection left to it, same shape, no
    rows); False (and it must be dropped) otherwise.

    The connection that empties a database is kept for its next recycling
    (a new one, and its cold catalog cache, were half the cost); it holds no
    transaction between tests, so it takes no lock a test could wait on."""
    import psycopg

    conn = _recyclers.pop(name, None)
    try:
        if conn is None or conn.closed:
            conn = psycopg.connect(url)
        clean = _emptied(conn, name)
    except psycopg.Error:
        clean = False
    if clean:
        _recyclers[name] = conn
    elif conn is not None:
        conn.close()
    return clean


def _emptied(conn: Any, name: str) -> bool:
    """Delete the rows of database `name` on `conn`: whether it now has the template's shape."""
    left = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (name,),
    ).fetchone()[0]
    if left:  # something of the test still runs: it must not write into the next test's data
        return False
    # DELETE, not TRUNCATE: a test leaves a few rows, and TRUNCATE makes
    # new files for every table and index (as slow as a new copy).
    conn.execute("SET LOCAL session_replication_role = replica")  # no foreign-key order
    tables = conn.execute(
        "SELECT format('%%I.%%I', schemaname, tablename) FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND NOT tablename = ANY(%s)",
        (list(_KEEP_ROWS),),
    ).fetchall()
    for (table,) in tables:
        conn.execute(f"DELETE FROM {table}")
    conn.execute(
        "SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false) FROM pg_sequences"
        " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
    )
    conn.commit()
    # A process the test left behind (a hook's detached `lore hook consolidate`)
    # may have connected and written meanwhile: between the DELETE and the
    # sequences' reset, its row kept an id the next test's first insert gets.
    again = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
    ).fetchone()[0]
    rows = any(conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0] for (table,) in tables)
    shape = tuple(conn.execute(_SHAPE).fetchone())
    conn.rollback()  # no transaction (and no lock) held while the next test runs
    return not again and not rows and shape == _TEMPLATE_SHAPE[0]


@contextlib.contextmanager
def _own_database(server):
    """A database of its own (a copy of the template) in LORE_DATABASE_URL while the block runs.

    Every test's projects get a database of their own: vectors are shared by
    every project of a database by design, so a test counting what it
    embedded must not see what another test embedded. Copying the template
    costs 0.2-0.3 s on a busy server, so a test's database is emptied
    afterwards and used again when it still has the template's shape (see
    _recycle); anything else is dropped."""
    from lore.storage.postgres.connection import close

    if _spare:
        name = _spare.pop()
        url = server.url(name)
    else:
        name = f"t{os.getpid()}_{next(_databases)}"
        url = server.create_database(name, template=TEMPLATE_DB)
    previous = os.environ.get("LORE_DATABASE_URL")
    os.environ["LORE_DATABASE_URL"] = url
    try:
        yield
    finally:
        os.environ["LORE_DATABASE_URL"] = previous or ""
        close(url)
        if _recycle(name, url):
            _spare.append(name)
        else:
            server.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _storage_independent(node) -> bool:
    return node.get_closest_marker("storage_independent") is not None


@pytest.fixture(scope="module", autouse=True)
def _module_database(database_backend, request):
    """Module-scoped projects (built once, used by several tests) live in the module's database."""
    if database_backend is None or _storage_independent(request.node):
        yield
        return
    with _own_database(database_backend):
        yield


@pytest.fixture(autouse=True)
def _test_database(database_backend, _module_database, request):
    """Each test gets a database of its own, unless it uses a module-scoped
    project fixture (which lives in the module's database)."""
    if database_backend is None or _storage_independent(request.node):
        yield
        return
    defs = getattr(getattr(request.node, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(
        d and d[-1].scope == "module" and not getattr(d[-1], "_autouse", getattr(d[-1], "autouse", False))
        for d in defs.values()
    ):
        yield
        return
    with _own_database(database_backend):
        yield


@pytest.fixture
def pg_database(database_backend, request):
    """A database of its own for one postgres-only test (copied from the
    upgraded template): (server, superuser URL)."""
    import re

    name = "t_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40] + f"_{os.getpid()}"
    database_backend.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    url = database_backend.create_database(name, template=TEMPLATE_DB)
    yield database_backend, url
    from lore.storage.postgres.connection import close

    close(url)
    database_backend.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Tests never touch the user's real cache (the re-quantised model lives here, shared by test runs).
os.environ.setdefault("LORE_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"lore-test-cache-{os.getuid()}"))
# Commands run in their own process: a warm server (lore.interfaces.warm) per test
# environment would outlive the test; tests/test_warm.py turns it on where it is tested.
os.environ["LORE_WARM"] = "0"
# `lore` on PATH, as after `pip install`: agent configs name the command, not a path.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture
def project(tmp_path) -> lore.Lore:
    """An initialised project with no memories."""
    p = lore.init(tmp_path / "proj")
    yield p
    p.close()


class CLI:
    """Runs `python -m lore` in a process of its own, in the project folder: a
    fork of a server with Lore imported (tests/forkserver.py), or a fresh
    interpreter where a fork could differ (and with LORE_TEST_EXEC=1)."""

    def __init__(self, cwd: Path, *, fresh: bool = False):
        self.cwd = cwd
        self.fresh = fresh  # always a fresh interpreter (tests of what start-up prints or imports)

    def __call__(
        self,
        *args: str,
        input: str | None = None,
        ok: bool = True,
        cwd: Path | None = None,
        env: dict | None = None,
        unset: tuple[str, ...] = (),
    ) -> subprocess.CompletedProcess:
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
        for name in unset:
            full_env.pop(name, None)
        fresh = self.fresh or forkserver.needs_exec(full_env)
        run = forkserver.fresh_run if fresh else forkserver.Server.get().run
        proc = run(list(args), cwd=cwd or self.cwd, env=full_env, input=input, timeout=120)
        if ok and proc.returncode != 0:
            raise AssertionError(
                f"lore {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str, **kwargs):
        return json.loads(self(*args, "--json", **kwargs).stdout)


@pytest.fixture
def cli(tmp_path) -> CLI:
    """A runner in an initialised project. The project is made in process: `lore
    init` as a command has tests of its own, and a process per test is what
    the suite spends most of its time on."""
    root = tmp_path / "repo"
    root.mkdir()
    lore.init(root).close()
    return CLI(root)


@pytest.fixture
def git_env(monkeypatch, tmp_path):
    """Isolate git from the user's config and give it an identity."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path))
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ada Lovelace")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ada@example.com")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo(tmp_path, git_env) -> Path:
    """An empty git repository on branch main (modules may define their own `repo`)."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    return root
