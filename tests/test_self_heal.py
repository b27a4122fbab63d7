"""A damaged index heals itself; a read-only project still answers (issue 11).

Real index files damaged on disk (garbage mid-file, truncation, a missing WAL,
a foreign database), then real CLI subprocesses; read-only folders are tested
as a non-root user (root ignores file permissions).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import CLI, ON_POSTGRES
from lore.storage.sqlite.store import FTS_TABLES, SQLiteStore

NOBODY = 65534
# The tests that damage .lore/index.db exercise the SQLite backend's self-healing.
sqlite_index_file = pytest.mark.skipif(
    ON_POSTGRES,
    reason="damages .lore/index.db to test the SQLite backend's rebuild; a PostgreSQL index is a "
    "shared server database no clone rebuilds (its repair: tests/test_postgres.py)",
)


def build(cli) -> Path:
    root = cli.cwd
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    for i in range(120):
        (root / f"mod{i}.py").write_text(
            f"def handler_{i}(request):\n    '''Serve page {i}.'''\n    return {i}\n"
        )
    (root / "alpha.py").write_text("def alpha_greeting():\n    return 'alpha beta gamma'\n")
    cli(
        "add",
        "--title",
        "Greek letters",
        "--body",
        "The alpha module greets in greek letters.",
        "--tag",
        "greek",
    )
    cli("index")
    return root / ".lore/index.db"


def damage(path: Path, offset: int, size: int = 4096) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(os.urandom(size))


def healthy(cli) -> None:
    """Every reading command works, and says once that the index was rebuilt."""
    for args in (
        ("search", "greek", "letters"),
        ("recall", "alpha greeting"),
        ("code", "alpha", "greeting"),
        ("list",),
        ("stats",),
    ):
        proc = cli(*args)
        assert "Traceback" not in proc.stderr, proc.stderr
    assert cli.json("search", "greek")[0]["title"] == "Greek letters"
    assert any(h["file_path"] == "alpha.py" for h in cli.json("code", "alpha", "greeting"))


@sqlite_index_file
@pytest.mark.parametrize("page", [3, 10, 20, 40, -2])
def test_garbage_mid_file_is_rebuilt_once(cli, page):
    index = build(cli)
    pages = index.stat().st_size // 4096
    assert pages > 40
    damage(index, (page % pages) * 4096)
    first = cli("code", "alpha", "greeting")
    assert "Traceback" not in first.stderr
    healthy(cli)


@sqlite_index_file
def test_vtable_damage_found_on_open_and_repaired_by_index_force(cli):
    index = build(cli)
    good = index.read_bytes()
    # Find a page whose damage breaks the code index's FTS table (as seen in the field).
    for page in range(2, len(good) // 4096):
        index.write_bytes(good)
        damage(index, page * 4096)
        db = sqlite3.connect(index)
        try:
            db.execute("SELECT rowid FROM code_fts WHERE code_fts MATCH 'alpha'").fetchall()
        except sqlite3.DatabaseError:
            db.close()
            break
        db.close()
    else:
        pytest.skip("no page breaks the FTS table in this index")
    proc = cli("recall", "alpha greeting")
    assert "rebuilding" in proc.stderr and "Traceback" not in proc.stderr
    healthy(cli)
    # `lore index --force` checks the whole file and repairs what a query would not notice.
    damage(index, 2 * 4096)
    assert "Traceback" not in cli("index", "--force", ok=False).stderr
    assert cli.json("doctor") == [] or all(p["level"] != "error" for p in cli.json("doctor", ok=False))
    healthy(cli)


@sqlite_index_file
def test_truncated_missing_wal_and_foreign_database(cli):
    index = build(cli)
    with open(index, "r+b") as handle:
        handle.truncate(index.stat().st_size // 3)
    healthy(cli)
    # A missing WAL after a crash.
    Path(f"{index}-wal").unlink(missing_ok=True)
    healthy(cli)
    # Someone else's database at our path.
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    other = sqlite3.connect(index)
    other.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    other.commit()
    other.close()
    proc = cli("search", "greek")
    assert "rebuilding" in proc.stderr
    healthy(cli)


_FILE_SIZE_LIMITED = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
sys.argv[0] = "lore"
runpy.run_module("lore", run_name="__main__", alter_sys=True)
"""


@sqlite_index_file
def test_a_disk_too_full_for_the_shared_memory_file_says_so(cli):
    # Opening the index needs its 32 KiB -shm file; on a full disk SQLite says only
    # "disk I/O error", which Lore printed as an index error to rebuild with
    # `lore index --force` (on a full disk!), from every command, reads included.
    index = build(cli)
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    before = index.read_bytes()
    for command in (["list"], ["add", "--title", "Full", "--body", "Written on a full disk."]):
        proc = subprocess.run(
            [sys.executable, "-P", "-c", _FILE_SIZE_LIMITED, *command],
            cwd=cli.cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines()[-1] == (
            "lore: error: the disk is full (the index's .db-shm file could not grow); "
            "free some space and try again"
        )
    assert index.read_bytes() == before  # nothing rebuilt
    assert [m["title"] for m in cli.json("list")] == ["Greek letters"]


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "8m"):
    """A tmpfs mounted at `folder` (root only; the test is skipped where mounting is not allowed)."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small disk here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path) -> None:
    """Fill the disk of `folder` to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
        try:
            while True:
                handle.write(b"\0")
        except OSError:
            pass


@contextlib.contextmanager
def full_disk_after_a_hand_edit(disk: Path):
    """A project on `disk` with one memory, its index held open (a server's
    -shm stays), the disk filled, then the memory edited by hand: yields
    (runner, memory file) while the disk is full; frees the space after."""
    import lore

    root = disk / "p"
    lore.init(root).close()
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    runner = CLI(root)
    runner("add", "--title", "Greek letters", "--body", "The alpha module greets in greek letters.")
    memory = next((root / ".lore/memory").glob("*.md"))
    holder = sqlite3.connect(root / ".lore/index.db")
    try:
        holder.execute("SELECT count(*) FROM meta").fetchone()
        fill(disk)
        memory.write_text(memory.read_text().replace("in greek letters", "in many greek letters"))
        yield runner, memory
    finally:
        holder.close()
        (disk / "filler").unlink()


@sqlite_index_file
def test_reading_on_a_full_disk_answers_from_the_index_as_it_stands(tmp_path):
    # A read syncs the memory files first; on a full disk that write failed and
    # so did the read ("the disk is full"), though answering needs no new space.
    with small_disk(tmp_path / "disk") as disk:
        with full_disk_after_a_hand_edit(disk) as (runner, memory):
            proc = runner("search", "greek", "letters", "--json", ok=False)
        assert proc.returncode == 0, proc.stderr
        assert [h["title"] for h in json.loads(proc.stdout)] == ["Greek letters"]
        assert "the disk is full" in proc.stderr and "not in these results" in proc.stderr
        assert "many greek" in memory.read_text()  # nothing lost: the file is as written
        assert "many greek" in runner("search", "many", "greek", "--json").stdout  # space again: synced


@sqlite_index_file
def test_status_and_doctor_on_a_full_disk_answer_from_the_index_as_it_stands(tmp_path):
    """search and list answered on a full disk; status and doctor failed ("the
    disk is full"), though they need no new space either."""
    with small_disk(tmp_path / "disk") as disk:
        with full_disk_after_a_hand_edit(disk) as (runner, _memory):
            status = runner("status", "--json", ok=False)
            doctor = runner("doctor", "--json", ok=False)
        assert status.returncode == 0 and "the disk is full" in status.stderr, status.stderr
        assert json.loads(status.stdout)["memories"] == 1
        assert doctor.returncode == 0, doctor.stderr
        assert [p for p in json.loads(doctor.stdout) if "the disk is full" in p["message"]], doctor.stdout


def test_store_rebuilds_once_per_process_then_reports(tmp_path):
    store = SQLiteStore(tmp_path / "index.db")
    store.close()
    damage(tmp_path / "index.db", 0, 100)  # the header itself
    again = SQLiteStore(tmp_path / "index.db")
    assert any("rebuilding" in n for n in again.notices)
    assert again.counts().memories == 0 and set(FTS_TABLES)
    again.close()


def _as_nobody(root: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the CLI as user `nobody`. It keeps only the right to *read* any file
    (CAP_DAC_READ_SEARCH: the interpreter may live under /root), not to write."""
    env = {**os.environ, "HOME": str(root.parent / "home"), "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    drop = [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
    ]
    return subprocess.run(
        [*drop, sys.executable, "-m", "lore", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="switching to another user needs root and util-linux's setpriv",
)
def test_read_only_project_answers_reads_and_refuses_writes_in_one_line():
    base = Path(tempfile.mkdtemp(prefix="lore-ro-"))
    try:
        os.chmod(base, 0o755)
        (base / "home").mkdir(mode=0o777)
        root = base / "proj"
        root.mkdir()
        subprocess.run([sys.executable, "-m", "lore", "init"], cwd=root, check=True, capture_output=True)
        config = root / ".lore/config.toml"
        config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "lore",
                "add",
                "--title",
                "Read only",
                "--body",
                "This memory lives in a read-only checkout.",
            ],
            cwd=root,
            check=True,
            capture_output=True,
        )
        before = {p: p.read_bytes() for p in (root / ".lore").rglob("*") if p.is_file()}
        for path in [root, *root.rglob("*")]:
            mode = path.stat().st_mode
            path.chmod(
                (mode | stat.S_IRGRP | stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0))
                & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
            )
        search = _as_nobody(root, "search", "read-only", "checkout", "--json")
        assert search.returncode == 0, search.stderr
        assert "Read only" in search.stdout and "Traceback" not in search.stderr
        # SQLite says it answers from a temporary copy of the index; on PostgreSQL
        # the index is not in .lore/ at all, so there is nothing to say.
        assert ON_POSTGRES or "read-only" in search.stderr
        listed = _as_nobody(root, "list")
        assert listed.returncode == 0 and "Read only" in listed.stdout
        add = _as_nobody(root, "add", "--title", "New", "--body", "Should not be written anywhere.")
        assert add.returncode == 1 and "Traceback" not in add.stderr
        assert len(add.stderr.strip().splitlines()) <= 2 and "lore: error:" in add.stderr
        after = {p: p.read_bytes() for p in (root / ".lore").rglob("*") if p.is_file()}
        assert after == before  # nothing deleted, nothing changed
    finally:
        for path in [base, *base.rglob("*")]:
            try:
                path.chmod(0o755 if path.is_dir() else 0o644)
            except OSError:
                pass
        shutil.rmtree(base, ignore_errors=True)


@sqlite_index_file
def test_an_index_deleted_under_a_running_server_is_rebuilt_by_the_next_command(cli):
    """`rm .lore/index.db` while `lore serve` ran left its write-ahead log and
    shared memory behind, held by the server: SQLite took them for the new
    file's, and every command (`lore index --force` too) failed with a disk
    I/O error until the server stopped."""
    import urllib.request

    from web_helpers import Server

    path = build(cli)
    server = Server(cli.cwd)
    try:
        for route in ("/api/status", "/api/search?q=greek"):  # (a server that wrote, then read)
            urllib.request.urlopen(f"{server.url}{route}", timeout=60).read()
        path.unlink()
        env = {k: v for k, v in os.environ.items() if k != "LORE_PROJECT"} | {"LORE_WARM": "0"}
        for command in (("status",), ("index", "--force")):  # each in a process of its own
            proc = subprocess.run(
                [sys.executable, "-m", "lore", *command],
                cwd=cli.cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0 and "disk I/O error" not in proc.stderr, (command, proc.stderr)
        healthy(cli)
    finally:
        server.stop()


@sqlite_index_file
def test_an_edit_written_on_a_disk_too_full_to_index_it_is_said_saved(tmp_path):
    """The file was written, the index could not take it, and the edit said
    "the disk is full... try again": tried again, `--append` appended twice."""
    import lore

    with small_disk(tmp_path / "disk", "14m") as disk:
        root = disk / "p"
        lore.init(root).close()
        config = root / ".lore/config.toml"
        config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
        runner = CLI(root)
        key = runner.json("add", "--title", "Greek letters", "--body", "The alpha module greets in greek.")[
            "id"
        ]
        memory = next((root / ".lore/memory").glob("*.md"))
        holder = sqlite3.connect(root / ".lore/index.db")  # a server holds the index open: -shm stays
        try:
            holder.execute("SELECT count(*) FROM meta").fetchone()
            fill(disk)
            with open(disk / "filler", "r+b") as filler:  # room for the file, not for the index
                filler.truncate(max(0, filler.seek(0, 2) - 40_000))
            proc = runner("edit", key[:8], "--append", "Also in latin letters.", ok=False)
        finally:
            holder.close()
            (disk / "filler").unlink()
        assert memory.read_text().count("Also in latin letters.") == 1
        # the index could not take it: said, with nothing to try again
        assert proc.returncode == 0 and "saved, but not searchable yet" in proc.stderr, proc.stderr
        assert "latin" in runner("search", "latin", "letters", "--json").stdout  # space again: indexed


def _cli(root: Path, *args: str, drop: bool = False) -> subprocess.CompletedProcess:
    """The CLI in `root`; `drop`: as root without its rights over files (as a user
    the files' modes apply to, keeping the interpreter under /root readable)."""
    rights = ["setpriv", "--inh-caps=-dac_override,-dac_read_search"]
    rights += ["--bounding-set=-dac_override,-dac_read_search"]
    return subprocess.run(
        [*(rights if drop else []), sys.executable, "-m", "lore", *args],
        cwd=root,
        env={**os.environ, "LORE_WARM": "0", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


WITHOUT_FILE_RIGHTS = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="root without its file rights needs root and util-linux's setpriv",
)


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert _cli(root, "init").returncode == 0
    return root


@WITHOUT_FILE_RIGHTS
@pytest.mark.skipif(ON_POSTGRES, reason="without its file rights root cannot reach the test server's socket")
def test_a_memory_unreadable_since_it_was_indexed_costs_recall_its_body_only_and_doctor_names_it(tmp_path):
    """A chmod keeps a file's time, so the index still lists the memory: recall
    failed as a whole on reading its body, and doctor said nothing was wrong."""
    root = _project(tmp_path)

    def run(*args: str, drop: bool = False) -> subprocess.CompletedProcess:
        return _cli(root, *args, drop=drop)

    run("add", "-t", "Flaky sync test", "-b", "Retries are needed for sync.")
    run("add", "-t", "Use pytest", "-b", "We run the tests with pytest.")
    (flaky,) = (root / ".lore/memory").glob("*flaky*")
    flaky.chmod(0)
    recall = run("recall", "flaky sync tests pytest", drop=True)
    assert recall.returncode == 0, recall.stderr
    assert "Use pytest" in recall.stdout and "Flaky sync test" in recall.stdout
    assert f"skipped the body of .lore/memory/{flaky.name}" in recall.stderr
    assert "Traceback" not in recall.stderr
    doctor = run("doctor", drop=True)
    assert doctor.returncode == 1 and flaky.name in doctor.stdout + doctor.stderr
    assert "permission denied" in doctor.stdout + doctor.stderr


def test_a_full_or_read_only_disk_names_the_file_in_a_sentence():
    """ "the disk is full /tmp/…/x.md:; free some space" was the message."""
    from lore.errors import as_lore_error

    full = as_lore_error(OSError(28, "No space left on device", "/tmp/p/.lore/memory/x.md"))
    assert str(full) == "the disk is full (writing /tmp/p/.lore/memory/x.md); free some space and try again"
    ro = as_lore_error(OSError(30, "Read-only file system", "/mnt/p/x.md"))
    assert str(ro) == "read-only file system (writing /mnt/p/x.md); run where you can write"


@WITHOUT_FILE_RIGHTS
@pytest.mark.skipif(ON_POSTGRES, reason="the index is a database, not a file of the project")
def test_a_read_only_index_file_alone_does_not_say_memory_writes_will_fail(tmp_path):
    root = _project(tmp_path)
    _cli(root, "add", "-t", "First", "-b", "A memory written while the index was writable.")
    (root / ".lore/index.db").chmod(0o444)
    added = _cli(root, "add", "-t", "Second", "-b", "A memory written beside a read-only index.", drop=True)
    assert added.returncode == 0, added.stderr
    assert ".lore/index.db is read-only: using a temporary index" in added.stderr
    assert "writes to memories will fail" not in added.stderr
    assert len(list((root / ".lore/memory").glob("*.md"))) == 2
