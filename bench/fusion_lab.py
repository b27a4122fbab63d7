"""Fusion lab: how keyword and vector candidates are best combined, measured offline.

    python bench/fusion_lab.py [--sets locomo,cosqa-dev,cosqa-test,cosqa-code-dev] [--refresh]

Collects, once per query, the lexical and vector candidate lists Lore's
hybrid search sees (raw BM25, coverage, exactness, cosine) and caches them in
bench/.data/fusion/; then scores fusion rules over the cached lists in
milliseconds. Used to choose the default fusion (docs/benchmarks.md); the
sets' dev splits are for choosing, the test splits for reporting.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

from _common import BENCH_DATA, WORK, jsonl

CACHE = WORK / "fusion"
POOL = 100


def collect(project, kind: str, queries: list[dict], key) -> list[dict]:
    """Per query: lexical [(doc, lexical relevance, raw, coverage, exact)], vector [(doc, cosine, exact)]."""
    from lore.search import hybrid

    out = []
    store = project.store
    for q in queries:
        query, _ = project.searcher.query(q["text"], kind, None)
        lex = hybrid._best_per_group(hybrid._lexical(store, kind, query, None, POOL, [])[0], key)
        vec = hybrid._best_per_group(hybrid._vector(store, kind, query, None, POOL), key)
        out.append(
            {
                "qid": q["qid"],
                "n_terms": len(query.terms),
                "lex": [(str(k), s.score, s.exact) for k, s in lex.items()],
                "vec": [(str(k), s.similarity, s.exact) for k, s in vec.items()],
            }
        )
    return out


def load_set(name: str, refresh: bool) -> tuple[list[dict], dict[str, set[str]]]:
    CACHE.mkdir(parents=True, exist_ok=True)
    cache = CACHE / f"{name}.json"
    qrels_path, lists = _qrels_path(name), None
    if cache.exists() and not refresh:
        lists = json.loads(cache.read_text())
    else:
        lists = _build(name)
        cache.write_text(json.dumps(lists))
    qrels = {}
    for row in jsonl(qrels_path):
        qrels[row["qid"]] = set(row["relevant"]) if "relevant" in row else {row["doc"]}
    return lists, qrels


def _qrels_path(name: str) -> Path:
    if name == "locomo":
        return BENCH_DATA / "locomo" / "qrels_turns.jsonl"
    split = name.rsplit("-", 1)[-1]
    return BENCH_DATA / "cosqa" / f"qrels_{split}.jsonl"


def _build(name: str) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).parent))
    import retrieval

    if name == "locomo":
        data = BENCH_DATA / "locomo"
        turns = jsonl(data / "corpus_turns.jsonl")
        queries = [q for q in jsonl(data / "queries.jsonl") if q["category"] != 5]
        by_conv = defaultdict(list)
        for t in turns:
            text = t["text"] + (f" and shared {t['image_caption']}" if t.get("image_caption") else "")
            by_conv[t["conv"]].append((t["id"], f"{t['speaker']}: {text[:120]}", f"{t['speaker']}: {text}\n"))
        lists = []
        for conv, docs in sorted(by_conv.items()):
            project = retrieval.build(f"locomo-{conv}", docs)
            ids = _memory_ids(project)
            lists += collect(
                project, "memory", [q for q in queries if q["conv"] == conv], lambda c, ids=ids: ids[c.path]
            )
            project.close()
        return lists
    split = name.rsplit("-", 1)[-1]
    data = BENCH_DATA / "cosqa"
    queries = jsonl(data / f"queries_{split}.jsonl")
    if name.startswith("cosqa-code"):
        import lore

        project = lore.open(retrieval.OUTSIDE / "cosqa-code")
        return collect(project, "code", queries, lambda c: c.path.rsplit("/", 1)[-1][:-3])
    docs = []
    for d in jsonl(data / "corpus.jsonl"):
        first = d["text"].strip().splitlines()[0] if d["text"].strip() else d["id"]
        docs.append((d["id"], first, d["text"] + "\n"))
    project = retrieval.build("cosqa", docs)
    ids = _memory_ids(project)
    return collect(project, "memory", queries, lambda c: ids[c.path])


def _memory_ids(project) -> dict[str, str]:
    from lore.storage import MemoryFilter

    return {m.path: m.id for m in project.store.memories(MemoryFilter(include_private=True))}


# -- fusion rules ---------------------------------------------------------------------


def rrf(k: float, wl: float, wv: float, long_query: int | None = 12):
    def fuse(q):
        wv_q = wv * (min(1.0, long_query / max(1, q["n_terms"])) if long_query else 1.0)
        scores: dict[str, float] = defaultdict(float)
        for rank, (doc, *_rest) in enumerate(q["lex"]):
            scores[doc] += wl / (k + 1 + rank)
        for rank, (doc, *_rest) in enumerate(q["vec"]):
            scores[doc] += wv_q / (k + 1 + rank)
        return sorted(scores, key=lambda d: -scores[d])

    return fuse


def calibrated(floor: float, full: float, wl: float, agree: str = "noisy_or", adapt: bool = False):
    """Score fusion over calibrated relevances (what Lore shows as the score)."""

    def fuse(q):
        lex = {doc: s for doc, s, _ in q["lex"]}
        vec = {doc: min(1.0, max(0.0, (c - floor) / (full - floor))) for doc, c, _ in q["vec"]}
        top_lex = max(lex.values(), default=0.0)
        w = wl
        if adapt:  # trust keywords as much as the best keyword match is strong
            w = wl * top_lex
        scores = {}
        for doc in set(lex) | set(vec):
            a, b = (
                w * lex.get(doc, 0.0),
                (1 - w) * vec.get(doc, 0.0) if agree != "noisy_or" else vec.get(doc, 0.0),
            )
            if agree == "noisy_or":
                scores[doc] = 1 - (1 - w * lex.get(doc, 0.0)) * (1 - (1 - w) * vec.get(doc, 0.0))
            elif agree == "max":
                scores[doc] = max(a, b)
            else:
                scores[doc] = a + b
        return sorted(scores, key=lambda d: -scores[d])

    return fuse


def only(which: str):
    return lambda q: [doc for doc, *_ in q[which]]


def exact_first(fuse):
    def wrapped(q):
        ranked = fuse(q)
        exact = {doc for doc, _s, e in q["lex"] if e} | {doc for doc, _s, e in q["vec"] if e}
        vec_only = {doc for doc, *_ in q["vec"]} - {doc for doc, *_ in q["lex"]}
        last = max((i for i, d in enumerate(ranked) if d in exact), default=-1)
        if last < 0:
            return ranked
        head = ranked[: last + 1]
        weak = [d for d in head if d in vec_only and d not in exact]
        keep = [d for d in head if not (d in vec_only and d not in exact)]
        return keep + weak + ranked[last + 1 :]

    return wrapped


def metrics(lists: list[dict], qrels: dict[str, set[str]], fuse) -> dict[str, float]:
    totals = defaultdict(float)
    scored = [q for q in lists if q["qid"] in qrels]
    for q in scored:
        ranked = fuse(q)[:10]
        rel = qrels[q["qid"]]
        for k in (1, 5, 10):
            totals[f"R@{k}"] += len(rel & set(ranked[:k])) / len(rel)
        totals["MRR@10"] += next((1 / (i + 1) for i, d in enumerate(ranked) if d in rel), 0.0)
    return {k: v / max(1, len(scored)) for k, v in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="locomo,cosqa-dev")
    parser.add_argument("--refresh", action="store_true")
    args = parser.parse_args()
    rules = {
        "bm25": only("lex"),
        "vector": only("vec"),
        "rrf k5 v1.5 (old default)": rrf(5, 1.0, 1.5),
        "rrf k60 equal": rrf(60, 1.0, 1.0, None),
        "rrf k5 v1.5 +exact": exact_first(rrf(5, 1.0, 1.5)),
        "rrf k10 v1.0 +exact": exact_first(rrf(10, 1.0, 1.0)),
        "rrf k20 v1.0 +exact": exact_first(rrf(20, 1.0, 1.0)),
    }
    for floor in (0.15,):
        for full in (0.6, 0.75):
            for wl in (0.3, 0.5, 0.7):
                for agree in ("noisy_or", "sum", "max"):
                    rules[f"cal {floor}-{full} wl{wl} {agree}"] = calibrated(floor, full, wl, agree)
                    rules[f"cal {floor}-{full} wl{wl} {agree} +exact"] = exact_first(
                        calibrated(floor, full, wl, agree)
                    )
    for name in args.sets.split(","):
        lists, qrels = load_set(name, args.refresh)
        print(f"\n{name}: {len(lists)} queries")
        print(f"  {'rule':<40} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")
        for rule, fuse in rules.items():
            m = metrics(lists, qrels, fuse)
            print(f"  {rule:<40} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} {m['MRR@10']:7.3f}")
        _ = math


if __name__ == "__main__":
    main()
