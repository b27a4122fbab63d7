"""Schema of the PostgreSQL index, as numbered migrations (`lore db upgrade`).

Like the SQLite backend's, each migration is a list of statements applied in
order; the versions applied are rows of ``lore.schema_migrations``. Unlike
SQLite the database is shared and not derived from one clone, so nothing
is rebuilt behind anyone's back: `lore db upgrade` applies what is missing,
under a session advisory lock so two machines upgrading at once take turns
(the second finds nothing left to do).

The layout (003's tables, adapted to Lore; everything lives in schema ``lore``):

- ``projects``: one row per project, however many clones index it
  (identity: :mod:`lore.storage.postgres.identity`); ``clones``: one row
  per working copy (host, repo_path), with 003's index status per source
  kind in ``index_status``.
- ``files``: what is indexed. Committed memories (``.lore/memory/``) belong
  to the project (``clone_id`` NULL) and every clone sees them; code,
  commits and a clone's local memories (``.lore/local/``) belong to the clone.
  ``clone_files`` is what each clone last synced from its disk: the base of a
  three-way sync, so a clone only pushes what *it* changed.
- ``memories``, ``chunks`` (tsvector + GIN, BM25 statistics per scope in
  ``chunk_stats``), ``commits``, ``anchors``, ``access``, ``meta``.
- ``embeddings``: vectors keyed by (model, content hash) and shared by every
  project: equal text is embedded and stored once. HNSW indexes (cosine), one
  per common dimension.
- Row-level security on everything holding memory text: a row whose
  ``owner_role`` is set (a clone's local, private or session, memories) is
  visible to that database role only; a code anchor shows where its memory does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lore.errors import StorageError

if TYPE_CHECKING:
    import psycopg

# Dimensions that get an HNSW index (pgvector indexes one dimension per
# index): MiniLM/bge-small (384), base models (768), large (1024), OpenAI (1536).
HNSW_DIMENSIONS = (384, 768, 1024, 1536)
USER_ROLE = "lore_user"  # members may read and write (RLS still applies)
_LOCK_KEY = 7_470_111_001  # pg_advisory_lock key of `lore db upgrade`

_PRIVATE_TABLES = ("files", "clone_files", "memories", "chunks")


# The HNSW graph's degree and build-time candidate list. pgvector's defaults
# (m 16, ef_construction 64) gave recall@10 0.84-0.89 at ef_search 400 on 1M
# vectors grown from real MiniLM ones; m 32 / ef_construction 128 gave 0.958,
# for a 2.2x longer build (bench/postgres.py recall --expand; docs/postgres.md).
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128


def _hnsw(dim: int, options: str = "") -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS embeddings_hnsw_{dim} ON embeddings "
        f"USING hnsw ((vector::vector({dim})) vector_cosine_ops){options} WHERE dim = {dim}"
    )


def hnsw_options() -> str:
    """The WITH clause of Lore's HNSW indexes (migration 5 onwards)."""
    return f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"


def hnsw_index(dim: int) -> str:
    """The statement creating Lore's current HNSW index for `dim` (schema-relative)."""
    return _hnsw(dim, hnsw_options())


def _rls(table: str) -> list[str]:
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"CREATE POLICY {table}_owner ON {table} USING (owner_role IN ('', current_user)) "
        "WITH CHECK (owner_role IN ('', current_user))",
    ]


_STATS_FUNCTION = """
CREATE FUNCTION chunk_stats_update() RETURNS trigger LANGUAGE plpgsql
SET search_path = lore, pg_catalog AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO chunk_stats AS s (project_id, clone_key, kind, docs, tokens)
      SELECT project_id, coalesce(clone_id, 0), kind, count(*), sum(n_tokens)
      FROM new_rows GROUP BY 1, 2, 3
    ON CONFLICT (project_id, clone_key, kind)
      DO UPDATE SET docs = s.docs + excluded.docs, tokens = s.tokens + excluded.tokens;
  ELSE
    UPDATE chunk_stats s SET docs = s.docs - d.docs, tokens = s.tokens - d.tokens
      FROM (SELECT project_id, coalesce(clone_id, 0) AS clone_key, kind, count(*) AS docs,
                   sum(n_tokens) AS tokens
            FROM old_rows GROUP BY 1, 2, 3) d
      WHERE s.project_id = d.project_id AND s.clone_key = d.clone_key AND s.kind = d.kind;
  END IF;
  RETURN NULL;
END $$
"""

MIGRATIONS: list[list[str]] = [
    # 1: projects and clones, files, memories, chunks with full-text search,
    # commits, shared vectors with HNSW, anchors, access statistics, status.
    [
        "CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public",
        """CREATE TABLE instance (
            id text PRIMARY KEY DEFAULT md5(random()::text || clock_timestamp()::text))""",
        "INSERT INTO instance DEFAULT VALUES",
        "CREATE SEQUENCE change_seq",
        # Full-text search like SQLite's FTS5 `porter unicode61`: Porter stems, no stop words.
        "CREATE TEXT SEARCH DICTIONARY lore_porter_stem (TEMPLATE = snowball, Language = porter)",
        "CREATE TEXT SEARCH CONFIGURATION lore_porter (COPY = simple)",
        "ALTER TEXT SEARCH CONFIGURATION lore_porter ALTER MAPPING FOR asciiword, word, numword, "
        "asciihword, hword, hword_part, hword_asciipart, hword_numpart WITH lore_porter_stem",
        """CREATE TABLE projects (
            id text PRIMARY KEY,
            name text NOT NULL,
            remote_url text,
            created_at timestamptz NOT NULL DEFAULT now(),
            changed_seq bigint NOT NULL DEFAULT 0)""",
        """CREATE TABLE clones (
            id bigserial PRIMARY KEY,
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            host text NOT NULL,
            repo_path text NOT NULL,
            db_user text NOT NULL DEFAULT current_user,
            created_at timestamptz NOT NULL DEFAULT now(),
            last_seen_at timestamptz NOT NULL DEFAULT now(),
            changed_seq bigint NOT NULL DEFAULT 0,
            UNIQUE (project_id, host, repo_path))""",
        # 003's code_index_status, per clone and source kind (memory, code, commit).
        """CREATE TABLE index_status (
            clone_id bigint NOT NULL REFERENCES clones(id) ON DELETE CASCADE,
            kind text NOT NULL,
            status text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'indexing', 'completed', 'failed')),
            last_indexed_at timestamptz,
            last_commit_hash text,
            error_message text,
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (clone_id, kind))""",
        """CREATE TABLE meta (
            clone_id bigint NOT NULL REFERENCES clones(id) ON DELETE CASCADE,
            key text NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (clone_id, key))""",
        """CREATE TABLE files (
            id bigserial PRIMARY KEY,
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            clone_id bigint REFERENCES clones(id) ON DELETE CASCADE,
            path text NOT NULL,
            kind text NOT NULL,
            sha256 text NOT NULL,
            role text,
            owner_role text NOT NULL DEFAULT '',
            is_global boolean NOT NULL DEFAULT false,
            written_by text NOT NULL DEFAULT current_user,
            indexed_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE NULLS NOT DISTINCT (project_id, clone_id, owner_role, path))""",
        "CREATE INDEX files_kind ON files (project_id, kind, clone_id)",
        """CREATE TABLE clone_files (
            id bigserial PRIMARY KEY,
            clone_id bigint NOT NULL REFERENCES clones(id) ON DELETE CASCADE,
            path text NOT NULL,
            kind text NOT NULL,
            sha256 text NOT NULL,
            mtime_ns bigint NOT NULL,
            size bigint NOT NULL,
            error text,
            owner_role text NOT NULL DEFAULT '',
            UNIQUE (clone_id, path))""",
        """CREATE TABLE memories (
            file_id bigint PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            project_id text NOT NULL,
            clone_id bigint,
            owner_role text NOT NULL DEFAULT '',
            is_global boolean NOT NULL DEFAULT false,
            id text NOT NULL,
            title text NOT NULL,
            type text NOT NULL,
            sector text NOT NULL,
            tags jsonb NOT NULL,
            applies_to text NOT NULL,
            agent text,
            task text,
            project text,
            visibility text NOT NULL,
            storage text NOT NULL,
            occurred_at text NOT NULL,
            content_hash text NOT NULL,
            confidence double precision NOT NULL,
            files jsonb NOT NULL,
            summary text NOT NULL,
            body_line integer NOT NULL,
            evidence_count integer NOT NULL DEFAULT 1,
            owner text,
            written_by text NOT NULL DEFAULT current_user)""",
        "CREATE INDEX memories_id ON memories (project_id, id)",
        "CREATE INDEX memories_dedup ON memories (project_id, occurred_at, content_hash)",
        "CREATE INDEX memories_scope ON memories (project_id, applies_to)",
        "CREATE INDEX memories_global ON memories (is_global) WHERE is_global",
        """CREATE TABLE chunks (
            id bigserial PRIMARY KEY,
            file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            project_id text NOT NULL,
            clone_id bigint,
            kind text NOT NULL,
            owner_role text NOT NULL DEFAULT '',
            is_global boolean NOT NULL DEFAULT false,
            ord integer NOT NULL,
            section text,
            symbol text,
            language text,
            start_line integer NOT NULL,
            end_line integer NOT NULL,
            title text NOT NULL DEFAULT '',
            keywords text NOT NULL DEFAULT '',
            text text NOT NULL,
            text_hash text NOT NULL,
            n_tokens integer NOT NULL,
            tsv tsvector NOT NULL)""",
        "CREATE INDEX chunks_file ON chunks (file_id)",
        "CREATE INDEX chunks_scope ON chunks (project_id, kind, clone_id)",
        "CREATE INDEX chunks_hash ON chunks (text_hash)",
        "CREATE INDEX chunks_tsv ON chunks USING gin (tsv)",
        "CREATE INDEX chunks_global ON chunks (kind) WHERE is_global",
        # BM25 needs the number of chunks and their mean length per scope and kind.
        """CREATE TABLE chunk_stats (
            project_id text NOT NULL,
            clone_key bigint NOT NULL,
            kind text NOT NULL,
            docs bigint NOT NULL,
            tokens bigint NOT NULL,
            PRIMARY KEY (project_id, clone_key, kind))""",
        _STATS_FUNCTION,
        "CREATE TRIGGER chunks_stats_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION chunk_stats_update()",
        "CREATE TRIGGER chunks_stats_delete AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION chunk_stats_update()",
        """CREATE TABLE commits (
            file_id bigint PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            sha text NOT NULL,
            author text NOT NULL,
            email text NOT NULL,
            date text NOT NULL,
            subject text NOT NULL,
            body text NOT NULL,
            files jsonb NOT NULL,
            head_files jsonb NOT NULL,
            n_files integer NOT NULL,
            is_merge boolean NOT NULL,
            ts bigint NOT NULL)""",
        "CREATE INDEX commits_ts ON commits (ts)",
        "CREATE INDEX commits_head_files ON commits USING gin (head_files jsonb_path_ops)",
        """CREATE TABLE embeddings (
            model text NOT NULL,
            text_hash text NOT NULL,
            dim integer NOT NULL,
            vector vector NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (model, text_hash))""",
        *(_hnsw(dim) for dim in HNSW_DIMENSIONS),
        """CREATE TABLE anchors (
            clone_id bigint NOT NULL REFERENCES clones(id) ON DELETE CASCADE,
            memory_id text NOT NULL,
            path text NOT NULL,
            symbol text,
            start_line integer,
            end_line integer,
            code_hash text,
            named_path text,
            stale_reason text,
            stale_commit text,
            UNIQUE NULLS NOT DISTINCT (clone_id, memory_id, path, symbol))""",
        "CREATE INDEX anchors_path ON anchors (clone_id, path)",
        """CREATE TABLE access (
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            memory_id text NOT NULL,
            count integer NOT NULL,
            last_accessed text NOT NULL,
            PRIMARY KEY (project_id, memory_id))""",
        *(statement for table in _PRIVATE_TABLES for statement in _rls(table)),
    ],
    # 2: pages of memories (Store.memory_page, the web UI) walk an index in time
    # order; the stale filter (MemoryFilter.stale) reads only stale anchors.
    [
        'CREATE INDEX memories_page ON memories (project_id, occurred_at COLLATE "C", file_id)',
        "CREATE INDEX anchors_stale ON anchors (clone_id, memory_id) WHERE stale_reason IS NOT NULL",
    ],
    # 3: links between memories (Store.put_links / links; SQLite's migration 7),
    # one row per link written, private with their memory's file. Each clone
    # reads its memory files again on its next sync to find the links they hold
    # (what it last synced is forgotten; the indexed rows stay until then).
    [
        """CREATE TABLE links (
            file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            project_id text NOT NULL,
            clone_id bigint,
            owner_role text NOT NULL DEFAULT '',
            ord integer NOT NULL,
            relation text NOT NULL,
            target text NOT NULL,
            target_key text NOT NULL,
            kind text NOT NULL,
            line integer,
            origin text NOT NULL,
            PRIMARY KEY (file_id, ord))""",
        "CREATE INDEX links_target ON links (project_id, target_key)",
        *_rls("links"),
        "DELETE FROM clone_files WHERE kind = 'memory'",
    ],
    # 4: the lifecycle (SQLite's migration 8): attention tiers kept between runs,
    # evidence (keyed by what produced it: counted once), error occurrences counted
    # across captures, sessions and agents, proposals awaiting review; all of them
    # the project's (memory ids are). A proposal that changes a clone's local
    # memory holds its text: private to its role, as the memory is.
    [
        """CREATE TABLE tier_state (
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            memory_id text NOT NULL,
            tier text NOT NULL,
            since text NOT NULL,
            low_since text,
            checked_at text NOT NULL,
            PRIMARY KEY (project_id, memory_id))""",
        "CREATE INDEX tier_state_tier ON tier_state (project_id, tier)",
        """CREATE TABLE evidence (
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            key text NOT NULL,
            memory_id text NOT NULL,
            source text NOT NULL,
            agent text,
            occurred_at text NOT NULL,
            folded boolean NOT NULL DEFAULT false,
            PRIMARY KEY (project_id, key))""",
        "CREATE INDEX evidence_memory ON evidence (project_id, memory_id, folded)",
        """CREATE TABLE error_occurrences (
            id bigserial,
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            signature text NOT NULL,
            key text NOT NULL,
            source text NOT NULL,
            agent text,
            occurred_at text NOT NULL,
            example text NOT NULL,
            PRIMARY KEY (project_id, signature, key))""",
        """CREATE TABLE error_patterns (
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            signature text NOT NULL,
            memory_id text NOT NULL,
            PRIMARY KEY (project_id, signature))""",
        "ALTER TABLE memories ADD COLUMN superseded_by text",
        """CREATE TABLE proposals (
            project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            id text NOT NULL,
            owner_role text NOT NULL DEFAULT '',
            kind text NOT NULL,
            status text NOT NULL,
            title text NOT NULL,
            reason text NOT NULL,
            confidence double precision NOT NULL,
            evidence integer NOT NULL,
            memory_ids jsonb NOT NULL,
            changes jsonb NOT NULL,
            created_at text NOT NULL,
            updated_at text NOT NULL,
            PRIMARY KEY (project_id, id))""",
        *_rls("proposals"),
    ],
    # 5: a denser HNSW graph (HNSW_M, HNSW_EF_CONSTRUCTION): the indexes are
    # rebuilt, which on a large database takes minutes (~10 per million
    # 384-d vectors on two cores) under the upgrade's lock.
    [
        *(f"DROP INDEX IF EXISTS embeddings_hnsw_{dim}" for dim in HNSW_DIMENSIONS),
        *(hnsw_index(dim) for dim in HNSW_DIMENSIONS),
    ],
    # 6: a memory's source (SQLite's migration 13), e.g. ``session:<id>``:
    # memories of one session lend each other context in search.
    [
        "ALTER TABLE memories ADD COLUMN source text",
        "CREATE INDEX memories_source ON memories (project_id, source, occurred_at) WHERE source IS NOT NULL",
    ],
    # 7: a private memory's code anchors (the files it names, a symbol, a named
    # path) are as private as the memory: a row shows only where its memory's
    # row does (that table's own policy decides, for the role reading). Direct
    # SQL by another member of lore_user read them.
    [
        "CREATE INDEX memories_by_id ON memories (id)",
        "ALTER TABLE anchors ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY anchors_of_visible_memories ON anchors "
        "USING (EXISTS (SELECT 1 FROM memories m WHERE m.id = anchors.memory_id)) WITH CHECK (true)",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The highest migration applied to this database (0: none)."""
    found = conn.execute("SELECT to_regclass('lore.schema_migrations') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM lore.schema_migrations").fetchone()
    return int(row[0]) if row else 0


def upgrade(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """Apply the missing migrations; returns (version before, version after).

    Holds a session advisory lock, so concurrent upgrades (two machines, two
    CI jobs) run one after the other; each migration is one transaction.
    """
    import psycopg

    conn.execute("SET lock_timeout = 0")  # another upgrade's turn may take minutes (an index rebuild)
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        before = schema_version(conn)
        if before > SCHEMA_VERSION:
            raise StorageError(
                f"the database schema is at version {before}, newer than this Lore knows "
                f"({SCHEMA_VERSION}); upgrade Lore"
            )
        for number in range(before, SCHEMA_VERSION):
            with conn.transaction():
                conn.execute("CREATE SCHEMA IF NOT EXISTS lore")
                conn.execute("SET LOCAL search_path = lore, public")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                    "applied_at timestamptz NOT NULL DEFAULT now(), "
                    "applied_by text NOT NULL DEFAULT current_user)"
                )
                for statement in MIGRATIONS[number]:
                    try:
                        conn.execute(statement)
                    except psycopg.errors.InsufficientPrivilege as err:
                        raise StorageError(_privilege_message(statement, err)) from None
                conn.execute("INSERT INTO schema_migrations(version) VALUES (%s)", (number + 1,))
        _grant(conn)
        return before, SCHEMA_VERSION
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


def _grant(conn: psycopg.Connection[Any]) -> None:
    """Let members of ``lore_user`` use the schema (RLS still applies to them)."""
    import psycopg

    try:
        with conn.transaction():
            conn.execute(
                f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{USER_ROLE}') "
                f"THEN CREATE ROLE {USER_ROLE} NOLOGIN; END IF; END $$"
            )
            conn.execute(f"GRANT USAGE ON SCHEMA lore TO {USER_ROLE}")
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA lore TO {USER_ROLE}")
            conn.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA lore TO {USER_ROLE}")
    except psycopg.errors.InsufficientPrivilege:
        pass  # a schema owner without CREATEROLE: an administrator grants access instead


def _privilege_message(statement: str, err: Exception) -> str:
    if "EXTENSION" in statement:
        return (
            "creating the pgvector extension needs a superuser; run `lore db upgrade` once as one, "
            "or ask an administrator to run `CREATE EXTENSION vector` in this database"
        )
    first = str(err).strip().splitlines()[0] if str(err).strip() else "permission denied"
    return f"`lore db upgrade` was refused ({first}); run it as the database owner"
