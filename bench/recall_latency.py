"""Issue 5 benchmark: `lore recall` latency on an index of ≥ 50k chunks.

    python bench/recall_latency.py [--project bench/.data/stdlib]

Run bench/code_index.py --memories 15000 first (stdlib code + 15k memories).
Prints the index size, cold CLI wall time (median of 10 fresh processes,
default model) and in-process p50/p95 over 100 task titles of `recall` (the
first time, then the same tasks again: a long-running process keeps each
query word's keyword list, see lore.storage.sqlite.termlists; the frequent
words' lists are read before the first task, as the MCP server does), `code_search`
and `code_search --files-only` (wall and CPU time: the machine is shared). `--fill-vectors` gives chunks still waiting for a vector one of
the real vectors already stored, reused cyclically (as search_scale.py does:
embedding the whole stdlib takes too long on 2 shared cores; search cost does
not depend on the values).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from _common import (
    BENCH_DATA,
    WORK,
    jsonl,
    latency_row,
    percentile,
    row,
    stop_warm_servers,
    summary,
    timed_cli,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", default=str(WORK / "stdlib"))
    parser.add_argument("--fill-vectors", action="store_true")
    args = parser.parse_args()
    import lore

    project = lore.open(args.project, watch=True)  # as the MCP server runs
    if args.fill_vectors:
        print(f"  filled {fill_vectors(project)} pending vectors with reused real ones")
    counts = project.store.counts()
    print(
        f"recall latency on {args.project}: {counts.chunks:,} chunks "
        f"({counts.code_chunks:,} code, {counts.memory_chunks:,} memory, {counts.commits} commits)"
    )
    random.seed(2)
    tasks = [q["subject"] for q in jsonl(BENCH_DATA / "gitlog-flask/queries.jsonl")]
    cold = [timed_cli(["recall", t, "--json"], project.project.root)[0][0] for t in random.sample(tasks, 10)]
    row("cold `lore recall` (CLI, fresh process, LORE_WARM=0)", summary(cold))
    with tempfile.TemporaryDirectory(prefix="lore-warm-") as sockets:
        warm = {"LORE_WARM": "1", "LORE_WARM_DIR": sockets}
        timed_cli(["stats"], project.project.root, env=warm)  # leaves the server
        deadline = time.monotonic() + 120
        while not list(Path(sockets).glob("*.sock")) and time.monotonic() < deadline:
            time.sleep(0.1)
        times = [
            timed_cli(["recall", t, "--json"], project.project.root, env=warm)[0][0]
            for t in random.sample(tasks, 10)
        ]
        row("`lore recall` through the warm server", summary(times))
        stop_warm_servers(Path(sockets))
    project.recall("warm up the model and matrices", fresh=False)
    project.code_search("warm up", fresh=False)
    start = time.perf_counter()
    lists = project.warm_up()  # the frequent terms' keyword lists, as the MCP server reads them at start
    print(f"  warm-up: {lists} keyword lists read in {time.perf_counter() - start:.1f} s")
    sample = random.sample(tasks * 2, 100)
    for label, run in (
        ("in-process recall (warm, like the MCP server)", lambda t: project.recall(t, fresh=False)),
        # The same tasks again: a long-running process's keyword lists hold their words by now.
        ("in-process recall, the same 100 tasks again", lambda t: project.recall(t, fresh=False)),
        ("in-process code search (chunks)", lambda t: project.code_search(t, fresh=False)),
        (
            "in-process code search --files-only",
            lambda t: project.code_search(t, fresh=False, files_only=True),
        ),
    ):
        latency_row(label, run, sample, digits=0)
    times = []
    for t in random.sample(tasks, 20):
        start = time.perf_counter()
        project.recall(t, fresh=True)
        times.append((time.perf_counter() - start) * 1000)
    row(
        "in-process recall (with code freshness check)",
        f"p50 {percentile(times, 50):.0f} ms   p95 {percentile(times, 95):.0f} ms",
    )


def fill_vectors(project, pool_size: int = 1000) -> int:
    """Give every chunk waiting for a vector a real one, reused cyclically: the
    first `pool_size` pending texts are embedded, the rest borrow their vectors."""
    import numpy as np

    store, embedder = project.store, project.embedding.embedder
    pending = store.pending_embeddings(embedder.model_id, pool_size)
    if not pending:
        return 0
    pool = np.asarray(embedder.embed_documents([text for _hash, text in pending]), dtype=np.float32)
    done = 0
    while batch := store.pending_embeddings(embedder.model_id, 5000):
        rows = np.stack([pool[(done + j) % len(pool)] for j in range(len(batch))])
        with store.transaction():
            store.put_embeddings(embedder.model_id, [h for h, _text in batch], rows)
        done += len(batch)
    return done


if __name__ == "__main__":
    main()
