"""What showing memory bodies costs recall: `view` (parse, redact every field)
against `shown_body` (redact the body only; kept while the file is unchanged).

    python bench/recall_bodies.py [--project bench/.data/stdlib] [--tasks 150]

Run bench/code_index.py --memories 15000 first. Prints the cost per memory of
each (over 300 memories: `view`, a first `shown_body`, a repeated one), then
in-process `recall` CPU time p50/p95 over gitlog-flask task titles with recall
showing bodies each way, alternated task by task (CPU time: the machine is
shared, and wall time on it varied by more than the difference).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _common import BENCH_DATA, WORK, jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", default=str(WORK / "stdlib"))
    parser.add_argument("--tasks", type=int, default=150)
    args = parser.parse_args()
    import lore
    from lore.memory.repository import Memories

    project = lore.open(args.project, watch=True)
    memories = project.memories
    paths = [record.path for record in project.store.memories()[:300]]
    per_memory = {}
    for name, show in (
        ("view", lambda rel: memories.view(rel).body),
        ("shown_body, first", memories.shown_body),
        ("shown_body, again", memories.shown_body),
    ):
        start = time.perf_counter()
        for rel in paths:
            show(rel)
        per_memory[name] = (time.perf_counter() - start) / len(paths) * 1000
    print(f"per memory ({len(paths)}): " + ", ".join(f"{k} {v:.3f} ms" for k, v in per_memory.items()))

    kept = Memories.shown_body
    variants = {"view": lambda self, rel: self.view(rel).body, "shown_body": kept}
    random.seed(3)
    tasks = random.sample(
        [q["subject"] for q in jsonl(BENCH_DATA / "gitlog-flask/queries.jsonl")], args.tasks
    )
    project.recall("warm up the model and matrices", fresh=False)
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for i, task in enumerate(tasks):
            for name in list(variants)[:: 1 if i % 2 else -1]:
                Memories.shown_body = variants[name]  # type: ignore[method-assign]
                start = time.process_time()
                project.recall(task, fresh=False)
                cpu[name].append((time.process_time() - start) * 1000)
    finally:
        Memories.shown_body = kept  # type: ignore[method-assign]
    for name, values in cpu.items():
        p95 = sorted(values)[int(0.95 * len(values))]
        print(
            f"  recall showing bodies by {name:<10} CPU p50 {statistics.median(values):5.1f} ms   p95 {p95:5.1f} ms"
        )
    project.close()


if __name__ == "__main__":
    main()
