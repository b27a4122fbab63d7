"""Embedding speed of the default model against the opt-in e5 one.

    python bench/embed_models.py [--providers local,e5]

Embeds 400 LoCoMo dialogue turns and 150 CoSQA functions in one call each,
then 60 CoSQA questions one by one, with each provider after a warm-up;
prints texts per second and the query p50. Quality of the same providers:
bench/retrieval.py --embedding e5.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import BENCH_DATA, jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--providers", default="local,e5")
    args = parser.parse_args()
    from lore.embed import load_embedder

    turns = [t["text"] for t in jsonl(BENCH_DATA / "locomo" / "corpus_turns.jsonl")][:400]
    code = [d["text"] for d in jsonl(BENCH_DATA / "cosqa" / "corpus.jsonl")][:150]
    questions = [q["text"] for q in jsonl(BENCH_DATA / "cosqa" / "queries_test.jsonl")][:60]
    for provider in args.providers.split(","):
        embedder = load_embedder({"provider": provider})
        embedder.embed_documents(["warm up"])
        embedder.embed_query("warm up")
        began = time.perf_counter()
        embedder.embed_documents(turns)
        short = len(turns) / (time.perf_counter() - began)
        began = time.perf_counter()
        embedder.embed_documents(code)
        functions = len(code) / (time.perf_counter() - began)
        latencies = []
        for question in questions:
            began = time.perf_counter()
            embedder.embed_query(question)
            latencies.append((time.perf_counter() - began) * 1000)
        print(
            f"{provider}: dialogue turns {short:.0f}/s, CoSQA functions {functions:.0f}/s, "
            f"query p50 {statistics.median(latencies):.1f} ms"
        )


if __name__ == "__main__":
    main()
