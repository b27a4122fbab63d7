"""Issue 2 benchmark: an index of 10,000 memories (LoCoMo turns as realistic text).

Prints index build time, cold `lore search` wall time (median of 15 fresh
processes), in-process search p50/p95, index size on disk, peak RSS.

    python bench/memory_search.py [--memories 10000] [--embedding none|local]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import time

from _common import (
    BENCH_DATA,
    WORK,
    children_peak_rss_mb,
    dir_size,
    jsonl,
    percentile,
    row,
    self_peak_rss_mb,
    summary,
    timed_cli,
)


def build_project(n: int, embedding: str):
    import lore
    from lore.memory import markdown
    from lore.memory.model import Memory, derive_keywords

    root = WORK / f"memories-{n}-{embedding}"
    shutil.rmtree(root, ignore_errors=True)
    project = lore.init(root)
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', f'provider = "{embedding}"'))
    turns = jsonl(BENCH_DATA / "locomo/corpus_turns.jsonl")
    random.seed(0)
    folder = project.project.memory_dir
    for i in range(n):
        turn = turns[i % len(turns)]
        text = turn["text"] + (f" (shared {turn['image_caption']})" if turn.get("image_caption") else "")
        if i >= len(turns):
            text += f" [copy {i // len(turns)}]"
        body = f"{turn['speaker']} said on {turn['date_time']}:\n\n{text}\n"
        title = f"{turn['speaker']}: {' '.join(text.split())[:80]}"  # a title is one line
        memory = Memory(
            title=title,
            body=body,
            type=random.choice(["fact", "lesson", "decision", "summary"]),
            tags=derive_keywords(title, body),
            occurred_at=f"2023-{1 + i % 12:02d}-{1 + i % 28:02d}T12:00:00Z",
        )
        markdown.write_new(folder, markdown.file_name(memory), markdown.render(memory))
    project.close()
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--embedding", default="none", help="none (BM25 only) or local")
    args = parser.parse_args()

    print(f"Lore memory benchmark: {args.memories} memories, embedding={args.embedding}")
    root = build_project(args.memories, args.embedding)
    build, _ = timed_cli(["index"], root)
    row("index build (cold CLI, from files)", f"{build[0] / 1000:.2f} s")
    row("peak RSS of `lore index`", f"{children_peak_rss_mb():.0f} MB")
    row("index size on disk", f"{dir_size(root / '.lore/index.db', 'index.db') / 1e6:.1f} MB")

    queries = [q["text"] for q in jsonl(BENCH_DATA / "locomo/queries.jsonl")]
    random.seed(1)
    sample = random.sample(queries, 15)
    cold = [timed_cli(["search", q, "--json"], root)[0][0] for q in sample]
    row("cold `lore search` wall time", summary(cold))
    cold_noop, _ = timed_cli(["--version"], root, repeat=5)
    row("  (cold `lore --version`, for reference)", f"median {statistics.median(cold_noop):.1f} ms")

    import lore

    project = lore.open(root)
    project.search("warm up")
    times = []
    for q in random.sample(queries, 300):
        start = time.perf_counter()
        project.search(q)
        times.append((time.perf_counter() - start) * 1000)
    row(
        "in-process search (incl. freshness check)",
        f"p50 {percentile(times, 50):.2f} ms   p95 {percentile(times, 95):.2f} ms",
    )
    from lore.search.filters import MemoryFilter
    from lore.search.memories import search_bm25

    flt = MemoryFilter()
    times = []
    for q in random.sample(queries, 300):
        start = time.perf_counter()
        search_bm25(project.index, q, flt, 10)
        times.append((time.perf_counter() - start) * 1000)
    row(
        "in-process BM25 query only",
        f"p50 {percentile(times, 50):.2f} ms   p95 {percentile(times, 95):.2f} ms",
    )
    row("peak RSS of this process", f"{self_peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
