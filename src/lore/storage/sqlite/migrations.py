"""Schema of the SQLite index, as numbered migrations applied in order.

Each migration is a list of statements; the number reached is stored in
``meta.schema_version``. The index is derived data, so an index whose version
is *newer* than this code knows, or that can't be read, is rebuilt from the
files instead (see :mod:`lore.storage.sqlite.store`).
"""

from __future__ import annotations

# How FTS5 splits text into terms (lore.storage.sqlite.termlists splits query terms alike).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
_FTS = f"tokenize = '{FTS_TOKENIZER}'"


def _fts_table(name: str, kind: str) -> list[str]:
    """An external-content FTS5 table over the chunks of one kind, kept in
    step by triggers. One table per kind keeps BM25's statistics (IDF) about
    like documents: memory ranking shouldn't depend on how much code exists."""
    return [
        f"CREATE VIRTUAL TABLE {name} USING fts5(title, keywords, text, "
        f"content='chunks', content_rowid='id', {_FTS})",
        f"CREATE TRIGGER {name}_ai AFTER INSERT ON chunks WHEN new.kind = '{kind}' BEGIN "
        f"INSERT INTO {name}(rowid, title, keywords, text) VALUES (new.id, new.title, new.keywords, new.text); END",
        f"CREATE TRIGGER {name}_ad AFTER DELETE ON chunks WHEN old.kind = '{kind}' BEGIN "
        f"INSERT INTO {name}({name}, rowid, title, keywords, text) "
        f"VALUES ('delete', old.id, old.title, old.keywords, old.text); END",
    ]


# The keyword (FTS5) table of each kind of chunk.
FTS_KINDS = {"chunks_fts": "memory", "code_fts": "code", "commit_fts": "commit"}

# What chunk records, and the filters applied to them, are read from (and
# the writes that change it: a tier pass rewrites checked_at on every read).
_WRITES = ("INSERT", "UPDATE", "DELETE")
CONTENT_TABLES = {
    "chunks": _WRITES,
    "files": _WRITES,
    "memories": _WRITES,
    "commits": _WRITES,
    "anchors": _WRITES,
    "tier_state": ("INSERT", "UPDATE OF tier", "DELETE"),
}

MIGRATIONS: list[list[str]] = [
    # 1: files, memories, chunks, BM25 over memory chunks.
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            error TEXT,
            indexed_at TEXT NOT NULL)""",
        "CREATE INDEX files_kind ON files(kind)",
        """CREATE TABLE memories (
            file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            title TEXT NOT NULL,
            type TEXT NOT NULL,
            sector TEXT NOT NULL,
            tags TEXT NOT NULL,
            applies_to TEXT NOT NULL,
            agent TEXT,
            task TEXT,
            project TEXT,
            visibility TEXT NOT NULL,
            storage TEXT NOT NULL,
            occurred_at TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            confidence REAL NOT NULL,
            files TEXT NOT NULL,
            summary TEXT NOT NULL,
            body_line INTEGER NOT NULL)""",
        "CREATE INDEX memories_id ON memories(id)",
        "CREATE INDEX memories_dedup ON memories(occurred_at, content_hash)",
        "CREATE INDEX memories_time ON memories(occurred_at)",
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            ord INTEGER NOT NULL,
            section TEXT,
            symbol TEXT,
            language TEXT,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            keywords TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            text_hash TEXT NOT NULL)""",
        "CREATE INDEX chunks_file ON chunks(file_id)",
        "CREATE INDEX chunks_hash ON chunks(text_hash)",
        *_fts_table("chunks_fts", "memory"),
    ],
    # 2: code chunks and commits (as chunks of their own kinds), and vectors
    # keyed by (model, chunk content hash) so equal text is embedded once.
    [
        *_fts_table("code_fts", "code"),
        *_fts_table("commit_fts", "commit"),
        """CREATE TABLE commits (
            file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            sha TEXT NOT NULL UNIQUE,
            author TEXT NOT NULL,
            email TEXT NOT NULL,
            date TEXT NOT NULL,
            subject TEXT NOT NULL,
            body TEXT NOT NULL,
            files TEXT NOT NULL)""",
        "CREATE INDEX commits_date ON commits(date)",
        """CREATE TABLE embeddings (
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model, text_hash)) WITHOUT ROWID""",
        "CREATE INDEX chunks_kind ON chunks(kind)",
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', '0')",
    ],
    # 3: access statistics (reading must not dirty committed files) and code
    # anchors of memories, with staleness when the anchored code changes.
    [
        """CREATE TABLE access (
            memory_id TEXT PRIMARY KEY,
            count INTEGER NOT NULL,
            last_accessed TEXT NOT NULL)""",
        """CREATE TABLE anchors (
            memory_id TEXT NOT NULL,
            path TEXT NOT NULL,
            symbol TEXT,
            start_line INTEGER,
            end_line INTEGER,
            code_hash TEXT,
            stale_reason TEXT,
            stale_commit TEXT,
            PRIMARY KEY (memory_id, path, symbol))""",
        "CREATE INDEX anchors_path ON anchors(path)",
    ],
    # 4: the path as the memory names it, so re-anchoring after a rename
    # (the Markdown still names the old path) follows the file.
    [
        "ALTER TABLE anchors ADD COLUMN named_path TEXT",
        "UPDATE anchors SET named_path = path",
    ],
    # 5: scoped memories (file:/area: sort before 'global') found by range scan.
    [
        "CREATE INDEX memories_scope ON memories(applies_to)",
    ],
    # 6: file roles (source, test, docs...); commits with their paths at HEAD
    # (renames followed), size, merge flag and time; evidence counts.
    [
        "ALTER TABLE files ADD COLUMN role TEXT",
        "ALTER TABLE commits ADD COLUMN head_files TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE commits ADD COLUMN n_files INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE commits ADD COLUMN is_merge INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE commits ADD COLUMN ts INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX commits_ts ON commits(ts)",
        "ALTER TABLE memories ADD COLUMN evidence_count INTEGER NOT NULL DEFAULT 1",
        # Who may see a memory (private or an agent's session memory): one column, one rule.
        "ALTER TABLE memories ADD COLUMN owner TEXT",
        "UPDATE memories SET owner = agent WHERE visibility = 'private'",
        # Code is chunked again to learn each file's role (vectors are kept: keyed by text).
        "DELETE FROM files WHERE kind = 'code'",
        # History is read again, whole, with the paths of today.
        "DELETE FROM files WHERE kind = 'commit'",
        "DELETE FROM meta WHERE key = 'history_head'",
    ],
    # 7: links between memories (Markdown links, [[wikilinks]], typed relations),
    # one row per link written; resolved to memories when read, so a link to a
    # memory added later, renamed or removed is always current. Memories are
    # read again to find the links they already hold (vectors are kept).
    [
        """CREATE TABLE links (
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            relation TEXT NOT NULL,
            target TEXT NOT NULL,
            target_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            line INTEGER,
            origin TEXT NOT NULL,
            PRIMARY KEY (file_id, ord))""",
        "CREATE INDEX links_target ON links(target_key)",
        "DELETE FROM files WHERE kind = 'memory'",
    ],
    # 8 (lifecycle, seed 001): attention tiers kept between runs, evidence
    # (keyed by what produced it: counted once), error occurrences counted
    # across captures, sessions and agents, and proposals awaiting review.
    [
        """CREATE TABLE tier_state (
            memory_id TEXT PRIMARY KEY,
            tier TEXT NOT NULL,
            since TEXT NOT NULL,
            low_since TEXT,
            checked_at TEXT NOT NULL)""",
        "CREATE INDEX tier_state_tier ON tier_state(tier)",
        """CREATE TABLE evidence (
            key TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            source TEXT NOT NULL,
            agent TEXT,
            occurred_at TEXT NOT NULL,
            folded INTEGER NOT NULL DEFAULT 0)""",
        "CREATE INDEX evidence_memory ON evidence(memory_id, folded)",
        """CREATE TABLE error_occurrences (
            signature TEXT NOT NULL,
            key TEXT NOT NULL,
            source TEXT NOT NULL,
            agent TEXT,
            occurred_at TEXT NOT NULL,
            example TEXT NOT NULL,
            PRIMARY KEY (signature, key))""",
        "CREATE TABLE error_patterns (signature TEXT PRIMARY KEY, memory_id TEXT NOT NULL)",
        "ALTER TABLE memories ADD COLUMN superseded_by TEXT",
        """CREATE TABLE proposals (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            title TEXT NOT NULL,
            reason TEXT NOT NULL,
            confidence REAL NOT NULL,
            evidence INTEGER NOT NULL,
            memory_ids TEXT NOT NULL,
            changes TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
    ],
    # 9: 003's is_global (a memory shared with every project of a team database;
    # one SQLite index holds one project, so here it is only kept and exported).
    [
        "ALTER TABLE memories ADD COLUMN is_global INTEGER NOT NULL DEFAULT 0",
    ],
    # 10: vectors in a rowid table. A MiniLM vector (1,536 bytes) is over the
    # ~1,000 bytes a WITHOUT ROWID table keeps in a cell on 4 KiB pages, so
    # every vector took an overflow page of its own: 167 MB for 36k vectors
    # (55 MB of data) on sqlalchemy's index; a rowid table holds them in 77 MB.
    [
        """CREATE TABLE embeddings_rowid (
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (model, text_hash))""",
        "INSERT INTO embeddings_rowid(model, text_hash, vector) "
        "SELECT model, text_hash, vector FROM embeddings ORDER BY model, text_hash",
        "DROP TABLE embeddings",
        "ALTER TABLE embeddings_rowid RENAME TO embeddings",
    ],
    # 11: a token that changes with every write to what a chunk record or a
    # search filter reads, so a process may keep the records it read until
    # then (SQLiteStore.chunks). Random, not a counter: a rolled-back write
    # must not bring back a value that later stands for other content.
    [
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('content_token', '0')",
        *(
            f"CREATE TRIGGER content_token_{table}_{op.split()[0].lower()} AFTER {op} ON {table} BEGIN "
            "UPDATE meta SET value = random() WHERE key = 'content_token'; END"
            for table, ops in CONTENT_TABLES.items()
            for op in ops
        ),
    ],
    # 12: a token per keyword table, changed by every write to its rows, so a
    # process keeps a table's BM25 lists (SQLiteStore.lexical_search) while
    # only chunks of another kind change: a memory added during an agent's
    # session leaves the code's lists standing.
    [
        statement
        for table, kind in FTS_KINDS.items()
        for statement in (
            f"INSERT OR IGNORE INTO meta(key, value) VALUES ('terms_token:{table}', '0')",
            *(
                f"CREATE TRIGGER terms_token_{table}_{op.split()[0].lower()} AFTER {op} ON chunks "
                f"WHEN {when} BEGIN UPDATE meta SET value = random() WHERE key = 'terms_token:{table}'; END"
                for op, when in (
                    ("INSERT", f"new.kind = '{kind}'"),
                    ("DELETE", f"old.kind = '{kind}'"),
                    ("UPDATE OF kind, title, keywords, text", f"old.kind = '{kind}' OR new.kind = '{kind}'"),
                )
            ),
        )
    ],
    # 13: a memory's source (frontmatter `source`, e.g. ``session:<id>``):
    # memories of one session lend each other context in search
    # (lore.search.memories.session_context). Filled when the memory files are
    # read again (lore.memory.sync.FORMAT 4).
    [
        "ALTER TABLE memories ADD COLUMN source TEXT",
        "CREATE INDEX memories_source ON memories(source, occurred_at) WHERE source IS NOT NULL",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)
