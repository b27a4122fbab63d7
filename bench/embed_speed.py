"""Speed of the default local embedder: plain vs re-quantised, 128 vs 256 tokens.

Run on demand (not a test):

    .venv/bin/python bench/embed_speed.py [--short 2000] [--code 300] [--queries 200] [--repeats 3] [--quality]

Each configuration runs in a fresh subprocess (so load times and peak RSS are
its own) with a private, initially empty LORE_CACHE_DIR: "cold" is the first
load (hash the model, re-quantise), "warm" a second process on the filled cache.
Texts: LoCoMo dialogue turns (short) and CoSQA Python functions: an even
sample (typical code chunks) and the longest ones (past 256 tokens), from
/work/shared/bench-data; throughput is the best of --repeats runs. --quality adds MRR on CoSQA test queries against
their functions plus distractors (slow on the plain path).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(os.environ.get("LORE_BENCH_DATA", "/work/shared/bench-data"))
CONFIGS = [("plain", 128), ("plain", 256), ("pcq8", 128), ("pcq8", 256)]


def _jsonl(path: Path, field: str = "text", limit: int | None = None) -> list:
    rows = []
    with path.open() as handle:
        for line in handle:
            rows.append(json.loads(line) if field is None else json.loads(line)[field])
            if limit and len(rows) >= limit:
                break
    return rows


def _settings(variant: str, max_tokens: int) -> dict:
    return {"provider": "local", "max_tokens": max_tokens, "requantize": variant == "pcq8"}


def _load(variant: str, max_tokens: int):
    """Time load_embedder() and the first query (which creates the ORT session)."""
    t0 = time.perf_counter()
    from lore.embed import load_embedder

    embedder = load_embedder(_settings(variant, max_tokens))
    t1 = time.perf_counter()
    embedder.embed_query("warm up")
    t2 = time.perf_counter()
    return {"load_embedder_s": t1 - t0, "first_query_s": t2 - t1, "model_id": embedder.model_id}, embedder


def _throughput(embedder, texts: list[str], repeats: int) -> float:
    """Texts per second, best of `repeats` runs (the machine may be shared)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        embedder.embed_documents(texts)
        best = min(best, time.perf_counter() - t0)
    return len(texts) / best


def _mrr(embedder, n_distractors: int = 1500) -> float:
    """MRR of CoSQA test queries over their relevant functions plus distractors."""
    import numpy as np

    corpus = {row["id"]: row["text"] for row in _jsonl(DATA / "cosqa/corpus.jsonl", None)}
    queries = {row["qid"]: row["text"] for row in _jsonl(DATA / "cosqa/queries_test.jsonl", None)}
    qrels = {row["qid"]: row["relevant"] for row in _jsonl(DATA / "cosqa/qrels_test.jsonl", None)}
    relevant = sorted({doc for docs in qrels.values() for doc in docs})
    ids = relevant + [d for d in sorted(corpus) if d not in set(relevant)][:n_distractors]
    docs = embedder.embed_documents([corpus[d] for d in ids])
    qids = sorted(qrels)
    scores = np.stack([embedder.embed_query(queries[q]) for q in qids]) @ docs.T  # one at a time, as in use
    total = 0.0
    for row, qid in zip(scores, qids):
        ranked = [ids[i] for i in np.argsort(-row)[:100]]
        hit = next((rank for rank, doc in enumerate(ranked, 1) if doc in qrels[qid]), None)
        total += 1.0 / hit if hit else 0.0
    return total / len(qids)


def _run_one(variant: str, max_tokens: int, args) -> dict:
    """Measure one configuration in this process (the cache is already warm)."""
    import numpy as np

    result, embedder = _load(variant, max_tokens)
    short = _jsonl(DATA / "locomo/corpus_turns.jsonl", limit=args.short)
    functions = _jsonl(DATA / "cosqa/corpus.jsonl")
    sets = {
        "short": short,
        "code": functions[:: max(1, len(functions) // args.code)][: args.code],  # typical functions
        "long_code": sorted(functions, key=len)[-args.code :],
    }  # chunks past 256 tokens
    tokenizer = embedder._tokenizer
    for name, texts in sets.items():
        result[f"{name}_tokens_mean"] = float(np.mean([len(e.ids) for e in tokenizer.encode_batch(texts)]))
        result[f"{name}_per_s"] = _throughput(embedder, texts, args.repeats)
    queries = _jsonl(DATA / "locomo/queries.jsonl", limit=args.queries)
    latencies = []
    for query in queries:
        t0 = time.perf_counter()
        embedder.embed_query(query)
        latencies.append((time.perf_counter() - t0) * 1000)
    result["query_ms_p50"], result["query_ms_p95"] = (float(x) for x in np.percentile(latencies, [50, 95]))
    if args.quality:
        result["cosqa_mrr"] = _mrr(embedder)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _child(mode: str, variant: str, max_tokens: int, cache: str, args) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        mode,
        variant,
        str(max_tokens),
        "--short",
        str(args.short),
        "--code",
        str(args.code),
        "--queries",
        str(args.queries),
        "--repeats",
        str(args.repeats),
    ]
    if args.quality:
        cmd.append("--quality")
    env = {**os.environ, "LORE_CACHE_DIR": cache}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=2000)
    parser.add_argument("--code", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "VARIANT", "MAX_TOKENS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, variant, max_tokens = args.child[0], args.child[1], int(args.child[2])
        result = _load(variant, max_tokens)[0] if mode == "load" else _run_one(variant, max_tokens, args)
        print(json.dumps(result))
        return
    # Throughput is wall-clock: on a shared machine, check the load average.
    print(
        f"cores: {len(os.sched_getaffinity(0))}, python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for variant, max_tokens in CONFIGS:
        with tempfile.TemporaryDirectory(prefix="lore-bench-cache-") as cache:
            cold = _child("load", variant, max_tokens, cache, args)
            warm = _child("load", variant, max_tokens, cache, args)
            full = _child("full", variant, max_tokens, cache, args)
        print(f"\n== {full['model_id']}")
        print(
            f"  load (cold cache): load_embedder {cold['load_embedder_s']:.2f}s + first query "
            f"{cold['first_query_s']:.2f}s"
        )
        print(
            f"  load (warm cache): load_embedder {warm['load_embedder_s']:.3f}s + first query "
            f"{warm['first_query_s']:.3f}s"
        )
        for name, label in (("short", "short texts"), ("code", "code chunks"), ("long_code", "long code")):
            print(
                f"  {label}: {full[f'{name}_per_s']:.0f}/s "
                f"(mean {full[f'{name}_tokens_mean']:.0f} tokens after truncation)"
            )
        print(f"  query latency: p50 {full['query_ms_p50']:.1f} ms, p95 {full['query_ms_p95']:.1f} ms")
        print(f"  peak RSS: {full['peak_rss_mb']:.0f} MB")
        if "cosqa_mrr" in full:
            print(f"  CoSQA MRR (500 queries, 1500 distractors): {full['cosqa_mrr']:.3f}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
