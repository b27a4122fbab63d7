"""The SQLite index's layout on disk: vectors stored compactly, and an index
written by an older Lore migrated in place (real index files, real CLI runs)."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import ON_POSTGRES
from lore.storage.sqlite.migrations import SCHEMA_VERSION

pytestmark = pytest.mark.skipif(
    ON_POSTGRES, reason="the SQLite index file's layout (PostgreSQL stores vectors with pgvector)"
)


def _index(cli) -> sqlite3.Connection:
    return sqlite3.connect(cli.cwd / ".lore/index.db")


def _embeddings_bytes(db: sqlite3.Connection) -> int | None:
    """Bytes of the vectors' table on disk; None where SQLite has no dbstat table."""
    try:
        row = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'embeddings'").fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0])


@pytest.fixture
def indexed(cli):
    for i in range(80):
        (cli.cwd / f"mod{i}.py").write_text(
            f"def handler_{i}(request):\n    '''Serve page {i} of the catalogue.'''\n    return {i}\n"
        )
    cli("index")
    return cli


def test_vectors_take_about_their_own_size_on_disk(indexed):
    """A vector (1,536 bytes) in a WITHOUT ROWID table spilled to an overflow
    page of its own (4 KiB a vector); in a rowid table a page holds two."""
    db = _index(indexed)
    rows, data = db.execute("SELECT count(*), sum(length(vector)) FROM embeddings").fetchone()
    assert rows >= 80
    size = _embeddings_bytes(db)
    if size is None:
        pytest.skip("this SQLite has no dbstat table")
    assert size < data * 1.6, "vectors should not take a page each"


def test_an_index_from_before_is_migrated_in_place_with_its_vectors(indexed):
    cli = indexed
    before = cli.json("code", "serve page 7 of the catalogue")
    db = _index(cli)
    # Put the index back as schema 9 wrote it: vectors in a WITHOUT ROWID table.
    with db:
        db.execute(
            "CREATE TABLE old (model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL, "
            "PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
        )
        db.execute("INSERT INTO old SELECT model, text_hash, vector FROM embeddings")
        db.execute("DROP TABLE embeddings")
        db.execute("ALTER TABLE old RENAME TO embeddings")
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    vectors = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    old_size = _embeddings_bytes(db)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.close()

    assert cli.json("code", "serve page 7 of the catalogue") == before
    assert cli.json("index")["embedded"] == 0  # the vectors moved with the table: nothing embedded again
    db = _index(cli)
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'embeddings'").fetchone()[0]
    assert "WITHOUT ROWID" not in sql
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == vectors
    # The migration freed the old table's pages, a good part of the file: vacuumed once.
    assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert db.execute("PRAGMA page_count").fetchone()[0] < pages
    if old_size is not None:
        assert (_embeddings_bytes(db) or 0) < old_size / 2
