"""Issue 5 benchmark: `lore recall` latency on an index of ≥ 50k chunks.

    python bench/recall_latency.py [--project bench/.data/stdlib]

Run bench/code_index.py --memories 15000 first (stdlib code + 15k memories).
Prints the index size, cold CLI wall time (median of 10 fresh processes,
default model) and in-process p50/p95 over 100 task titles.
"""

from __future__ import annotations

import argparse
import random
import time

from _common import BENCH_DATA, WORK, jsonl, percentile, row, summary, timed_cli


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", default=str(WORK / "stdlib"))
    args = parser.parse_args()
    import lore

    project = lore.open(args.project, watch=True)  # as the MCP server runs
    counts = project.store.counts()
    print(
        f"recall latency on {args.project}: {counts.chunks:,} chunks "
        f"({counts.code_chunks:,} code, {counts.memory_chunks:,} memory, {counts.commits} commits)"
    )
    random.seed(2)
    tasks = [q["subject"] for q in jsonl(BENCH_DATA / "gitlog-flask/queries.jsonl")]
    cold = [timed_cli(["recall", t, "--json"], project.project.root)[0][0] for t in random.sample(tasks, 10)]
    row("cold `lore recall` (CLI, fresh process)", summary(cold))
    project.recall("warm up the model and matrices", fresh=False)
    times = []
    for t in random.sample(tasks * 2, 100):
        start = time.perf_counter()
        project.recall(t, fresh=False)
        times.append((time.perf_counter() - start) * 1000)
    row(
        "in-process recall (warm, like the MCP server)",
        f"p50 {percentile(times, 50):.0f} ms   p95 {percentile(times, 95):.0f} ms",
    )
    times = []
    for t in random.sample(tasks, 20):
        start = time.perf_counter()
        project.recall(t, fresh=True)
        times.append((time.perf_counter() - start) * 1000)
    row(
        "in-process recall (with code freshness check)",
        f"p50 {percentile(times, 50):.0f} ms   p95 {percentile(times, 95):.0f} ms",
    )


if __name__ == "__main__":
    main()
