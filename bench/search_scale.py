"""Issue 3 benchmark: hybrid search latency as the index grows.

    python bench/search_scale.py [--sizes 10000,100000,300000]

Builds indexes of N memory chunks (LoCoMo turns, cycled with a suffix so no
two texts are equal) straight through the store, with vectors from a pool of
2,000 real MiniLM embeddings of those turns reused cyclically (embedding
300k texts would take an hour here; search cost does not depend on the
values). Prints, per size: first-query matrix load, in-process BM25 /
vector / hybrid p50 and p95 (hybrid includes embedding the query), and
the matrix-vector product alone — where exact search stops being fast enough.
The per-command freshness check (a stat per memory file) is measured by
bench/memory_search.py.
"""

from __future__ import annotations

import argparse
import random
import shutil
import time

from _common import BENCH_DATA, WORK, jsonl, percentile, row


def build(n: int, pool_vectors, turns, model: str):
    import numpy as np

    from lore.index.store import ChunkRow, SQLiteIndex
    from lore.memory.model import Memory

    path = WORK / "scale" / f"index-{n}.db"
    shutil.rmtree(path.parent / f"{n}", ignore_errors=True)
    for suffix in ("", "-wal", "-shm"):
        (path.parent / f"index-{n}.db{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    index = SQLiteIndex(path)
    with index.write():
        index.set_meta("embed_model", model)
        for i in range(n):
            t = turns[i % len(turns)]
            text = f"{t['speaker']}: {t['text']} #{i // len(turns)}"
            memory = Memory(title=text[:80], body=text, tags=["bench"], occurred_at="2024-01-01T00:00:00Z")
            file_id = index.put_file(f".lore/memory/m{i}.md", "memory", str(i), 0, 0)
            index.put_memory(file_id, memory, 1)
            chunk = ChunkRow(text=text, start_line=1, end_line=1, section="body", title=memory.title)
            index.put_chunks(file_id, "memory", [chunk])
        rows = index.db.execute("SELECT text_hash FROM chunks ORDER BY id").fetchall()
        vectors = np.asarray(pool_vectors, dtype=np.float32)
        index.put_embeddings(model, [(h[0], vectors[i % len(vectors)].tobytes()) for i, h in enumerate(rows)])
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,300000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    from lore.embed import load_embedder
    from lore.search import memories
    from lore.search.filters import MemoryFilter
    from lore.search.vectors import vector_set

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
    flt = MemoryFilter()
    for n in (int(s) for s in args.sizes.split(",")):
        start = time.perf_counter()
        index = build(n, pool, turns, embedder.model_id)
        print(f"\n{n:,} chunks (built in {time.perf_counter() - start:.0f} s)")
        start = time.perf_counter()
        vs = vector_set(index, "memory", embedder.model_id)
        row("matrix load (first query in a process)", f"{(time.perf_counter() - start) * 1000:.0f} ms")
        qv = embedder.embed_query(queries[0])
        mat = []
        for _ in range(50):
            start = time.perf_counter()
            vs.top_k(qv, 100)
            mat.append((time.perf_counter() - start) * 1000)
        row("exact top-100 (matrix product + partition)", f"p50 {percentile(mat, 50):.1f} ms")
        for label, run in (
            ("BM25", lambda q, index=index: memories.search_bm25(index, q, flt, 10)),
            (
                "vector (query embedding included)",
                lambda q, index=index: memories.search_vector(
                    index, embedder.embed_query(q), embedder.model_id, flt, 10, q
                ),
            ),
            (
                "hybrid (query embedding included)",
                lambda q, index=index: memories.search_hybrid(
                    index, q, embedder.embed_query(q), embedder.model_id, flt, 10
                ),
            ),
        ):
            times = []
            for q in queries:
                start = time.perf_counter()
                run(q)
                times.append((time.perf_counter() - start) * 1000)
            row(label, f"p50 {percentile(times, 50):.1f} ms   p95 {percentile(times, 95):.1f} ms")
        index.close()


if __name__ == "__main__":
    main()
