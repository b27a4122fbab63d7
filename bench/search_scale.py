"""Issue 3 benchmark: hybrid search latency as the index grows.

    python bench/search_scale.py [--sizes 10000,100000,300000]

Builds indexes of N memory chunks (LoCoMo turns, cycled with a suffix so no
two texts are equal) straight through the store, with vectors from a pool of
2,000 real MiniLM embeddings of those turns reused cyclically (embedding
300k texts would take an hour here; search cost does not depend on the
values). Prints, per size: first-query matrix load, in-process BM25 /
vector / hybrid p50 and p95 (hybrid includes embedding the query; CPU time
and load beside, the machine being shared), the store's BM25 candidates
alone, and the matrix-vector product alone — where exact search stops being
fast enough.
The per-command freshness check (a stat per memory file) is measured by
bench/memory_search.py.
"""

from __future__ import annotations

import argparse
import random
import time

from _common import BENCH_DATA, WORK, jsonl, latency_row, percentile, row


def build(n: int, pool_vectors, turns, model: str):
    """A SQLite store of `n` memory chunks with vectors from the pool (cycled)."""
    import numpy as np

    from lore.memory.model import Memory
    from lore.memory.sync import record_of
    from lore.storage import ChunkInput
    from lore.storage.sqlite import SQLiteStore

    path = WORK / "scale" / f"index-{n}.db"
    for suffix in ("", "-wal", "-shm"):
        (path.parent / f"index-{n}.db{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(path)
    with store.transaction():
        store.set_meta("embed_model", model)
        for i in range(n):
            t = turns[i % len(turns)]
            text = f"{t['speaker']}: {t['text']} #{i // len(turns)}"
            memory = Memory(title=text[:80], body=text, tags=["bench"], occurred_at="2024-01-01T00:00:00Z")
            rel = f".lore/memory/m{i}.md"
            file_id = store.put_file(rel, "memory", str(i), 0, 0)
            store.put_memory(file_id, record_of(memory, rel, 1))
            store.put_chunks(file_id, "memory", [ChunkInput(text, 1, 1, section="body", title=memory.title)])
    vectors = np.asarray(pool_vectors, dtype=np.float32)
    done = 0
    while pending := store.pending_embeddings(model, 5000):
        hashes = [h for h, _text in pending]
        rows = np.stack([vectors[(done + j) % len(vectors)] for j in range(len(hashes))])
        with store.transaction():
            store.put_embeddings(model, hashes, rows)
        done += len(hashes)
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,300000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    from lore.embed import load_embedder
    from lore.search import hybrid
    from lore.search.text import lexical_terms, terms

    embedder = load_embedder({})
    turns = jsonl(BENCH_DATA / "locomo/corpus_turns.jsonl")
    random.seed(0)
    pool_texts = [f"{t['speaker']}: {t['text']}" for t in random.sample(turns, 2000)]
    start = time.perf_counter()
    pool = embedder.embed_documents(pool_texts)
    print(f"model {embedder.model_id}: pool of 2,000 embedded in {time.perf_counter() - start:.1f} s")
    queries = [q["text"] for q in random.sample(jsonl(BENCH_DATA / "locomo/queries.jsonl"), args.queries)]
    times = []
    for q in queries:
        start = time.perf_counter()
        embedder.embed_query(q)
        times.append((time.perf_counter() - start) * 1000)
    row("query embedding", f"p50 {percentile(times, 50):.1f} ms   p95 {percentile(times, 95):.1f} ms")
    for n in (int(s) for s in args.sizes.split(",")):
        start = time.perf_counter()
        index = build(n, pool, turns, embedder.model_id)
        print(f"\n{n:,} chunks (built in {time.perf_counter() - start:.0f} s)")
        start = time.perf_counter()
        index.vector_count("memory", embedder.model_id)
        row("matrix load (first query in a process)", f"{(time.perf_counter() - start) * 1000:.0f} ms")
        qv = embedder.embed_query(queries[0])
        mat = []
        for _ in range(50):
            start = time.perf_counter()
            index.vector_search("memory", embedder.model_id, qv, None, 100)
            mat.append((time.perf_counter() - start) * 1000)
        from lore.storage.sqlite.vectors import APPROX_MIN

        row(
            f"vector top-100 via the store (exact; 1-bit prefilter from {APPROX_MIN // 1000}k)",
            f"p50 {percentile(mat, 50):.1f} ms",
        )

        def run(q, mode, index=index):
            vector = embedder.embed_query(q) if mode != "bm25" else None
            query = hybrid.Query.of(q, vector, embedder.model_id)
            return hybrid.search(index, "memory", query, limit=10, mode=mode, key=lambda c: c.path)

        def lexical(q, index=index):
            return index.lexical_search("memory", lexical_terms(terms(q)), None, hybrid.CANDIDATES)

        stages = (
            ("store.lexical_search (top 100 by BM25)", lexical),
            ("BM25", lambda q: run(q, "bm25")),
            ("vector (query embedding included)", lambda q: run(q, "vector")),
            ("hybrid (query embedding included)", lambda q: run(q, "hybrid")),
        )
        for label, stage in stages:
            latency_row(label, stage, queries)
        index.close()


if __name__ == "__main__":
    main()
