"""Backend-neutral parts of the storage layer: project identity, the filters'
glob translation, and `lore db export/import` between two indexes of the
backend under test (SQLite on the default run)."""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import CLI
from lore.storage.postgres.identity import identify, normalise_remote
from lore.storage.postgres.sql import glob_regex


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widgets.git",
        "https://github.com/Acme/Widgets",
        "https://user:token@github.com/Acme/Widgets.git/",
        "ssh://git@GitHub.com:22/Acme/Widgets.git",
    ],
)
def test_remote_urls_of_one_repository_normalise_alike(url):
    assert normalise_remote(url) == "github.com/Acme/Widgets"


@pytest.mark.storage_independent
def test_project_identity_prefers_config_then_remote_then_folder(tmp_path, git_env):
    root = tmp_path / "widgets"
    root.mkdir()
    assert identify(root, {}).id.startswith("path:") and identify(root, {}).name == "widgets"
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", "git@example.com:team/widgets.git"], cwd=root, check=True
    )
    found = identify(root, {})
    assert (found.id, found.name, found.remote_url) == (
        "git:example.com/team/widgets",
        "widgets",
        "git@example.com:team/widgets.git",
    )
    assert identify(root, {"project": {"id": "abc-123", "name": "Widgets"}}).id == "abc-123"
    assert identify(root, {"project": {"id": "abc-123", "name": "Widgets"}}).name == "Widgets"
    # A CI clone's remote holds a token: the shared database (no row-level security
    # on projects) keeps the URL without it; the project's id is the same.
    token = "https://x-access-token:ghp_SuperSecretToken123@example.com/team/widgets.git"
    subprocess.run(["git", "remote", "set-url", "origin", token], cwd=root, check=True)
    found = identify(root, {})
    assert (found.id, found.remote_url) == (
        "git:example.com/team/widgets",
        "https://example.com/team/widgets.git",
    )


def test_a_dump_cut_at_a_line_end_is_refused_and_the_index_left_as_it_was(cli, tmp_path):
    """A gzip holding a dump's first lines (`zcat | head | gzip`, a partial copy)
    was imported as the whole: history and memories it lacked were gone."""
    cli("add", "--title", "Walrus cache", "--body", "Keep the walrus cache small.")
    cli("add", "--title", "Otter queue", "--body", "The otter queue drains nightly.")
    dump, part = tmp_path / "dump.jsonl.gz", tmp_path / "part.jsonl.gz"
    cli("db", "export", str(dump))
    with gzip.open(dump, "rt") as handle:
        lines = handle.readlines()
    with gzip.open(part, "wt") as handle:
        handle.writelines(lines[:2])
    refused = cli("db", "import", str(part), ok=False)
    assert refused.returncode == 1 and "is incomplete (no last line" in refused.stderr
    assert len(cli.json("list")) == 2
    with gzip.open(part, "wt") as handle:  # and a line after the last one
        handle.writelines([*lines, lines[1]])
    assert "follows the dump's last line" in cli("db", "import", str(part), ok=False).stderr
    cli("db", "import", str(dump))
    assert len(cli.json("list")) == 2


@pytest.mark.storage_independent
def test_a_keyword_connection_string_is_refused_without_echoing_its_password():
    from lore.errors import UsageError
    from lore.storage import resolve_database_url

    class Defaults:  # a project whose config.toml sets nothing
        @staticmethod
        def setting(section, key, default=None):
            return default

    with pytest.raises(UsageError) as refused:
        resolve_database_url(Defaults(), "host=/run/pg dbname=lore user=ada password=KwSecret")
    assert "KwSecret" not in str(refused.value) and "keyword string" in str(refused.value)


@pytest.mark.storage_independent
def test_a_folder_name_that_is_not_utf8_gives_a_storable_stable_identity(tmp_path):
    import os

    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    root.mkdir()
    first, again = identify(root, {}), identify(root, {})
    assert first == again and first.name == "caf\\xe9" and first.repo_path.endswith("/caf\\xe9")
    for text in (first.id, first.name, first.repo_path):
        text.encode("utf-8")  # a database can hold it


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("src/*", "src/a/b.py", True),  # SQLite GLOB: * crosses /
        ("src/*/api/*", "src/x/api/h.py", True),
        ("src/*/api/*", "lib/x/api/h.py", False),
        ("src/?.py", "src/a.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("a.b/*", "aXb/c", False),  # dots are literal
    ],
)
def test_directory_globs_mean_what_sqlite_glob_means(glob, path, matches):
    import re

    assert bool(re.search(glob_regex(glob), path)) is matches
    db = sqlite3.connect(":memory:")
    assert bool(db.execute("SELECT ? GLOB ?", (path, glob)).fetchone()[0]) is matches


def test_export_then_import_into_another_project_gives_the_same_results(cli, tmp_path):
    for title, body in (
        ("Blue-green deploys", "Releases switch traffic between the blue and the green pools."),
        (
            "Timezones",
            "Persist timestamps in UTC and convert them only when rendering. [[Blue-green deploys]]",
        ),
    ):
        cli("add", "--title", title, "--body", body, "--tag", "ops")
    cli("index")
    before = cli.json("search", "switch release traffic")
    linked = next(p.name for p in (cli.cwd / ".lore/memory").glob("*blue-green*.md"))
    backlinks = cli.json("show", linked)["backlinks"]
    assert [b["title"] for b in backlinks] == ["Timezones"]
    dump = tmp_path / "dump.jsonl.gz"
    report = cli.json("db", "export", str(dump))
    assert report["files"] == 2 and report["vectors"] >= 2
    with gzip.open(dump, "rt") as handle:
        header = json.loads(handle.readline())
    assert header["format"] == "lore-index-dump" and header["meta"]["embed_model"]
    # Import into the same project after wiping its index: identical results, nothing re-embedded.
    for suffix in ("", "-wal", "-shm"):
        Path(f"{cli.cwd / '.lore/index.db'}{suffix}").unlink(missing_ok=True)
    assert cli.json("db", "import", str(dump))["vectors"] == report["vectors"]
    import lore

    with lore.open(cli.cwd) as imported:  # the vectors' size travels: searches check queries against it
        model = imported.store.get_meta("embed_model")
        assert imported.store.get_meta(f"embed_dim:{model}") == str(imported.store.embedding_dim(model))
    assert cli.json("show", linked)["backlinks"] == backlinks  # links travel: no file was read again
    assert cli.json("search", "switch release traffic") == before
    assert cli.json("index")["embedded"] == 0
    assert cli.json("db", "import", str(dump))["memories_without_file"] == 0
    # Into a fresh folder without the memory files: imported, then dropped by the next
    # command (the files are the truth), which used to happen without a word.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    CLI(fresh)("init", "--here")
    proc = CLI(fresh)("db", "import", str(dump))
    assert (
        "2 memories of the dump have no file in this project" in proc.stderr
        and "Bring the files first" in (proc.stderr)
    )
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"format": "something else"}\n'))
    proc = cli("db", "import", str(broken), ok=False)
    assert proc.returncode == 1 and "not a Lore index dump" in proc.stderr and "Traceback" not in proc.stderr


def test_a_dump_without_history_leaves_the_history_to_be_indexed_again(cli, tmp_path, git_env):
    """Imported over an index with history, a dump of an index never indexed
    replaced the commits but kept the old markers: `lore index` added nothing,
    `lore history` found nothing and `lore status` said up to date."""
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=cli.cwd, check=True)
    (cli.cwd / "retry.py").write_text("def kiwi_retry():\n    return 1\n")
    subprocess.run(["git", "add", "retry.py"], cwd=cli.cwd, check=True)
    subprocess.run(["git", "commit", "-qm", "Add the kiwi retry helper"], cwd=cli.cwd, check=True)
    cli("index", "--no-embed")
    assert cli.json("history", "kiwi")
    dump = tmp_path / "dump.jsonl.gz"
    cli("db", "export", str(dump))
    with gzip.open(dump, "rt") as handle:
        lines = [json.loads(line) for line in handle]
    lines[0]["meta"] = {
        k: v for k, v in lines[0]["meta"].items() if k not in ("history_head", "indexed_commit")
    }
    kept = [line for line in lines if line.get("file", {}).get("kind") not in ("commit", "code")]
    kept[-1] = {"end": {"records": len(kept) - 2}}  # as an index never indexed would write it
    with gzip.open(dump, "wt") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in kept)
    cli("db", "import", str(dump))
    cli("index", "--no-embed")
    assert cli.json("history", "kiwi") and cli.json("code", "kiwi_retry", "--mode", "bm25")


def test_an_import_replaces_access_counts_the_dump_does_not_hold(cli, tmp_path):
    """ "Replace this project's index" kept the target's counts of memories the
    dump counted none for."""
    import lore

    added = cli.json("add", "--title", "Walrus cache", "--body", "Keep the walrus cache small.")
    dump = tmp_path / "dump.jsonl.gz"
    cli("db", "export", str(dump))  # no access counted yet
    with lore.open(cli.cwd) as project:
        project.store.record_access([added["id"]], "2026-01-02T03:04:05Z")
        assert project.store.access_stats()
    cli("db", "import", str(dump))
    with lore.open(cli.cwd) as project:
        assert project.store.access_stats() == {}


def test_db_status_and_upgrade_on_the_default_backend(cli):
    status = cli.json("db", "status")
    assert status["backend"] in ("sqlite", "postgres") and status["counts"]["memories"] == 0
    assert cli.json("db", "upgrade")["schema_version"] >= 1
    assert CLI(cli.cwd)("db", "--help").stdout.count("export") >= 1


def test_export_into_a_missing_folder_names_the_file_given(cli, tmp_path):
    target = tmp_path / "no-such-folder" / "dump.gz"
    proc = cli("db", "export", str(target), ok=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert f"cannot write {target} (no such file or directory)" in lines[0] and ".tmp" not in lines[0]
    assert not target.parent.exists()


@pytest.mark.parametrize("target", [".lore/memory/dump.gz", ".lore/dump.gz", ".lore/memory/x/../dump.md"])
def test_a_dump_is_never_written_into_the_committed_lore_folder(cli, target):
    proc = cli("db", "export", target, ok=False)
    assert proc.returncode == 2 and "is in .lore/, which is committed" in proc.stderr
    assert not (cli.cwd / target).exists() and not list((cli.cwd / ".lore/memory").glob("dump*"))
    cli("db", "export", ".lore/local/dump.gz")  # private to this clone: fine
    assert (cli.cwd / ".lore/local/dump.gz").exists()


@pytest.mark.parametrize(
    "lines",
    [
        ['{"format": "lore-index-dump", "version": "abc"}'],
        ['{"format": "lore-index-dump", "version": 1, "meta": []}'],
        ['["not", "a", "header"]'],
        ['{"format": "lore-index-dump", "version": 1}', '{"file": 5}'],
        ['{"format": "lore-index-dump", "version": 1}', '{"file": {"path": "a.py"}}'],
        ['{"format": "lore-index-dump", "version": 1}', '{"vector": {"hash": "h"}}'],
        # vectors of two lengths: np.stack died after the last line (internal error)
        [
            '{"format": "lore-index-dump", "version": 1, "meta": {"embed_model": "m"}}',
            '{"vector": {"hash": "a", "data": "AACAPwAAAEAAAEBAAACAQA=="}}',
            '{"vector": {"hash": "b", "data": "AACAPwAAAEAAAEBA"}}',
        ],
        # a NaN in a vector was imported, and would poison every similarity with it
        [
            '{"format": "lore-index-dump", "version": 1, "meta": {"embed_model": "m"}}',
            '{"vector": {"hash": "a", "data": "AADAfwAAgD8="}}',
        ],
        # an access count of 1e400 is infinity: int() overflowed (internal error)
        [
            '{"format": "lore-index-dump", "version": 1}',
            '{"access": {"memory_id": "x", "count": 1e400, "last_accessed": "2026-01-01T00:00:00Z"}}',
        ],
        # a header's index state that is not text went into the index (or failed there as "index error")
        ['{"format": "lore-index-dump", "version": 1, "meta": {"indexed_commit": ["x"]}}'],
        ['{"format": "lore-index-dump", "version": 1, "meta": {"embed_model": 5}}'],
        ['{"format": "lore-index-dump", "version": true}'],
    ],
)
def test_a_damaged_dump_is_one_line_and_leaves_the_index_as_it_was(cli, tmp_path, lines):
    cli("add", "--title", "Blue-green deploys", "--body", "Releases switch traffic between pools.")
    before = cli.json("db", "status")["counts"]
    dump = tmp_path / "damaged.gz"
    dump.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    proc = cli("db", "import", str(dump), ok=False)
    errors = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert "internal error" not in errors[0]
    assert "the dump is damaged" in errors[0] or "is not a Lore index dump" in errors[0], errors[0]
    assert cli.json("db", "status")["counts"] == before


@pytest.mark.parametrize(
    "field, value",
    [
        ("confidence", float("nan")),
        ("title", ["a", "list"]),
        ("tags", [1, 2]),
        ("body_line", "3"),
        ("path", None),
    ],
)
def test_a_memory_record_of_the_wrong_types_is_refused_naming_its_line(cli, tmp_path, field, value):
    """A NaN confidence or a list for a title went to the database, which said
    "index error (NOT NULL constraint failed ...); run lore doctor" of an index that was fine."""
    cli("add", "--title", "Blue-green deploys", "--body", "Releases switch traffic between pools.")
    good = tmp_path / "good.gz"
    cli("db", "export", str(good))
    lines = gzip.decompress(good.read_bytes()).decode().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if '"memory":{' in line)
    record = json.loads(lines[number - 1])
    record["file"]["memory"][field] = value
    lines[number - 1] = json.dumps(record)
    damaged = tmp_path / "damaged.gz"
    damaged.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    before = cli.json("db", "status")["counts"]
    proc = cli("db", "import", str(damaged), ok=False)
    errors = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert f"line {number} is not a record of a Lore dump" in errors[0] and field in errors[0], errors[0]
    assert cli.json("db", "status")["counts"] == before
    assert cli.json("db", "import", str(good))["files"] >= 1  # the undamaged dump still imports


def test_a_dump_line_too_long_to_hold_is_refused_without_reading_it_whole(cli, tmp_path):
    # A gzip bomb of one endless line: 128 MiB + 1 characters, compressed to ~130 kB.
    # Reading it whole would have held the line (and json's copy) in memory.
    from lore.storage.transfer import MAX_LINE_CHARS

    dump = tmp_path / "bomb.gz"
    block = b"a" * (1 << 20)
    with gzip.open(dump, "wb", compresslevel=1) as out:
        out.write(b'{"format": "lore-index-dump", "version": 1}\n')
        for _ in range(MAX_LINE_CHARS // len(block) + 1):
            out.write(block)
    proc = cli("db", "import", str(dump), ok=False)
    errors = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert "line 2 is longer than 134,217,728 characters; the dump is damaged" in errors[0], errors[0]


def test_export_never_replaces_a_file_unasked(cli, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("someone's notes\n")
    proc = cli("db", "export", str(target), ok=False)
    assert proc.returncode == 2 and f"{target} exists" in proc.stderr and "--force" in proc.stderr
    assert target.read_text() == "someone's notes\n"  # nothing lost
    cli("db", "export", str(target), "--force")
    with gzip.open(target, "rt") as handle:
        assert json.loads(handle.readline())["format"] == "lore-index-dump"
