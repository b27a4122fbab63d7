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

import pytest

import forkserver
import lore

FIXTURES = Path(__file__).parent / "fixtures"
BACKEND = os.environ.get("LORE_TEST_BACKEND", "sqlite")
ON_POSTGRES = BACKEND == "postgres"
TEMPLATE_DB = "lore_template"  # upgraded once; per-test databases are copies

postgres_only = pytest.mark.skipif(
    not ON_POSTGRES, reason="PostgreSQL only: run with ./scripts/test --backend postgres"
)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "storage_independent: touches no index; CI's PostgreSQL pass may leave it out"
    )


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
        server.create_database(TEMPLATE_DB, upgrade=True)
        os.environ["LORE_DATABASE_URL"] = server.create_database("lore_session", template=TEMPLATE_DB)
        yield server
    finally:
        if previous is None:
            os.environ.pop("LORE_DATABASE_URL", None)
        else:
            os.environ["LORE_DATABASE_URL"] = previous
        server.stop()


_databases = iter(range(1, 1_000_000))


@contextlib.contextmanager
def _own_database(server):
    """A fresh database (a copy of the template) in LORE_DATABASE_URL while the block runs.

    Every test's projects get a database of their own: vectors are shared by
    every project of a database by design, so a test counting what it
    embedded must not see what another test embedded."""
    from lore.storage.postgres.connection import close

    name = f"t{os.getpid()}_{next(_databases)}"
    previous = os.environ.get("LORE_DATABASE_URL")
    url = os.environ["LORE_DATABASE_URL"] = server.create_database(name, template=TEMPLATE_DB)
    try:
        yield
    finally:
        os.environ["LORE_DATABASE_URL"] = previous or ""
        close(url)
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
    ) -> subprocess.CompletedProcess:
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
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
