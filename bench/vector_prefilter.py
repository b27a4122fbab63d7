"""Issue 10 benchmark: the 1-bit prefilter of large SQLite vector sets, recall and cost.

    python bench/vector_prefilter.py [--queries 400] [--sizes 20000,38000]

Above `APPROX_MIN` vectors the SQLite store ranks rows by sign-bit codes and
computes exact cosines only for `candidates(n, k)` of them
(src/lore/storage/sqlite/vectors.py). This measures what that costs in
recall against exact search, on real MiniLM vectors: every vector cache the
other benches left behind (CoSQA functions and code, the stdlib's code and
synthetic memories, LoCoMo turns, flask's code and commits), deduplicated,
asked real questions (CoSQA test queries, LoCoMo questions, flask tasks).
Then the cost, exact vs prefiltered, on that set and on the 100k matrix of
bench/search_scale.py if it exists. `--sizes` also measures random subsets
of those sizes (the threshold's neighbourhood: fewer rows, more of them
candidates).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from _common import BENCH_DATA, WORK, jsonl, percentile

CACHES = [WORK, Path("/tmp/lore-bench")]


def real_vectors():
    import numpy as np

    found = []
    for root in CACHES:
        found += [p for p in root.rglob("*.vec.npy") if "/scale/" not in str(p)]
    rows = np.concatenate([np.load(p) for p in found]) if found else np.zeros((0, 384), np.float32)
    return np.unique(rows, axis=0), len(found)


def questions(count: int) -> list[str]:
    texts = [q["text"] for q in jsonl(BENCH_DATA / "cosqa" / "queries_test.jsonl")]
    texts += [q.get("text") or q.get("question") for q in jsonl(BENCH_DATA / "locomo" / "queries.jsonl")]
    texts += [
        q.get("text") or q.get("query") for q in jsonl(BENCH_DATA / "timesplit-flask" / "queries.jsonl")
    ]
    random.Random(7).shuffle(texts)
    return [t for t in texts if t][:count]


def timings(matrix, codes, queries, k: int) -> tuple[float, float]:
    import numpy as np

    from lore.storage.sqlite.vectors import candidates

    exact, approx = [], []
    for q in queries:
        start = time.perf_counter()
        sims = matrix @ q
        np.argpartition(-sims, k)[:k]
        exact.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        rows = codes.nearest(q, candidates(len(matrix), k))
        sims = matrix[rows] @ q
        rows[np.argpartition(-sims, k)[:k]]
        approx.append((time.perf_counter() - start) * 1000)
    return percentile(exact, 50), percentile(approx, 50)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--sizes", default="", help="comma-separated subset sizes to measure too")
    args = parser.parse_args()

    import numpy as np

    from lore.embed.local import load_local
    from lore.storage.sqlite.vectors import APPROX_MIN, Codes, candidates

    matrix, files = real_vectors()
    if not len(matrix):
        raise SystemExit(
            "no vector caches found: run bench/retrieval.py, timesplit.py or code_index.py first"
        )
    encoder = load_local({})
    texts = questions(args.queries)
    queries = np.stack([encoder.embed_query(t) for t in texts]).astype(np.float32)
    print(f"{len(matrix):,} distinct real vectors from {files} caches; {len(queries)} real questions")
    print(f"(the store uses the prefilter from {APPROX_MIN:,} vectors on; here it is forced)")
    sizes = [int(n) for n in args.sizes.split(",") if n.strip() and int(n) < len(matrix)]
    for size in [len(matrix), *sizes]:
        subset = matrix
        if size < len(matrix):
            subset = matrix[sorted(random.Random(size).sample(range(len(matrix)), size))]
            print(f"a random {size:,} of them:")
        codes = Codes.of(subset)
        for k in (10, 100, 150):
            count = candidates(len(subset), k)
            recall, worst = [], 1.0
            for q in queries:
                truth = set(np.argpartition(-(subset @ q), k)[:k].tolist())
                rows = codes.nearest(q, count)
                got = set(rows[np.argpartition(-(subset[rows] @ q), k)[:k]].tolist())
                recall.append(len(truth & got) / k)
                worst = min(worst, recall[-1])
            print(
                f"  top {k:>3}: {count:,} candidates  recall vs exact mean {np.mean(recall):.3f}  "
                f"p5 {percentile(recall, 5):.2f}  worst {worst:.2f}"
            )
        exact, approx = timings(subset, codes, queries[:200], 100)
        print(f"  top-100 cost p50: exact {exact:.2f} ms, prefiltered {approx:.2f} ms")

    scale = sorted((WORK / "scale" / "local" / "cache").glob("*.vec.npy"))
    if scale:
        big = np.load(scale[-1], mmap_mode="r")
        big_codes = Codes.of(big)
        exact, approx = timings(big, big_codes, queries[:200], 100)
        print(
            f"{len(big):,} vectors (bench/search_scale.py): top-100 p50 exact {exact:.2f} ms, prefiltered {approx:.2f} ms"
        )


if __name__ == "__main__":
    main()
