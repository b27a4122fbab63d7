"""Issue 10 lab: how the evidence that ranks files is fused, on the time-split sets.

    python bench/files_fusion_lab.py [--sets flask,gin,...] [--field text|subject] [--grid]
    python bench/files_fusion_lab.py --scales 1:1,0.5:1,0.67:1,0.5:0.5
    python bench/files_fusion_lab.py --sets gitlog,flask,... --scales 1:1 --near

`--near` scales the vector list's RRF weight by the relevance of its nearest
hit, for each search (stop 50). `gitlog` is gitlog-flask's whole tree, as
`python bench/gitlog_flask.py --tree all` built it (no history).

Runs the product's own `search_files` on each set's indexed snapshot (built by
`python bench/timesplit.py [--set NAME]` first) with the code chunks and the
past commits fused four ways (adaptive or RRF for each) and prints R@1 / R@10
/ MRR@10 per set and mean MRR@10. `--grid` instead tries RRF's k and the
query length beyond which the vector list's weight falls (fusion.RRF_K,
fusion.LONG_QUERY) for both. This is what chose `[search] files_fusion =
"rrf"` (docs/benchmarks.md, stop 30); it reads the indexes, never writes them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from _common import BENCH_DATA, WORK, jsonl

SETS = "flask,gin,hono,click,zod,gson,ripgrep,rack,jq,sqlalchemy"
OUTSIDE = Path(tempfile.gettempdir()) / "lore-bench" / "timesplit"
SPLITS = [("adaptive", "adaptive"), ("rrf", "rrf"), ("rrf", "adaptive"), ("adaptive", "rrf")]
GRID = [(5, 12), (2, 12), (10, 12), (20, 12), (5, 6), (5, 24)]


def data_dir(name: str) -> Path:
    if name == "gitlog":
        return BENCH_DATA / "gitlog-flask"
    return BENCH_DATA / "timesplit-flask" if name == "flask" else WORK / "timesplit-sets" / name


def root(name: str) -> Path:
    return OUTSIDE.parent / "flask-all" / "flask-3.1.3" if name == "gitlog" else OUTSIDE / name


def weigh_by_nearness() -> None:
    """From now on, each RRF fusion scales the vector list's weight by its
    nearest hit's relevance (0-1): distant neighbours vote less."""
    from lore.search import fusion

    fuse = fusion.fuse

    def near_fuse(keyword, vector, mode="adaptive", n_terms=1, *args, **kwargs):
        near = min(1.0, max(0.05, vector[0][1])) if vector else 1.0
        weight = fusion.vector_weight
        fusion.vector_weight = lambda n: weight(n) * near  # type: ignore[assignment]
        try:
            return fuse(keyword, vector, mode, n_terms, *args, **kwargs)
        finally:
            fusion.vector_weight = weight  # type: ignore[assignment]

    fusion.fuse = near_fuse  # type: ignore[assignment]


def score(
    project,
    queries: list[dict],
    qrels: dict[str, set[str]],
    field: str,
    code: str = "rrf",
    commits: str = "rrf",
    *,
    scales: tuple[float, float] = (1.0, 1.0),
    mode: str | None = None,
) -> tuple[float, float, float]:
    """(hit@1, R@10, MRR@10) of files ranked on code fused by `code` and commits
    by `commits`, the vector list's RRF weight scaled by `scales` (code, commits);
    `mode` "bm25": BM25 mode throughout."""
    from lore.search import fusion
    from lore.search.code import search_files
    from lore.storage import ChunkFilter

    base, scale = fusion.vector_weight, [1.0]
    fusion.vector_weight = lambda n: base(n) * scale[0]  # type: ignore[assignment]
    searcher = project.searcher
    hit1, r10, mrr = [], [], []
    try:
        for q in queries:
            searcher._recent.clear()  # the commits of another fusion are not these
            query, run = searcher.query(q[field], "code", mode)
            scale[0] = scales[1]
            found = searcher._commits(q[field], mode, commits, None)
            scale[0] = scales[0]
            hits = search_files(
                searcher.store,
                query,
                found,
                ChunkFilter(),
                limit=10,
                mode=run,
                fusion=code,
                tests=searcher.tests_of,
            )
            ranked, relevant = [h.file_path for h in hits], qrels.get(q["qid"], set())
            hit1.append(float(bool(ranked[:1]) and ranked[0] in relevant))
            r10.append(len(set(ranked[:10]) & relevant) / max(1, len(relevant)))
            mrr.append(next((1 / (i + 1) for i, p in enumerate(ranked[:10]) if p in relevant), 0.0))
    finally:
        fusion.vector_weight = base  # type: ignore[assignment]
    return statistics.fmean(hit1), statistics.fmean(r10), statistics.fmean(mrr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default=SETS)
    parser.add_argument("--field", default="text", choices=["text", "subject"])
    parser.add_argument("--grid", action="store_true", help="RRF's k and long-query point instead")
    parser.add_argument("--scales", help="CODE:COMMITS,... vector-weight scales to compare (stop 49)")
    parser.add_argument("--near", action="store_true", help="weigh vectors by their nearest hit (stop 50)")
    args = parser.parse_args()
    import lore
    from lore.search import fusion

    if args.near:
        weigh_by_nearness()

    if args.scales:
        pairs = [tuple(float(x) for x in v.split(":")) for v in args.scales.split(",")]
        table: dict[str, list[tuple[float, float]]] = {}
        for name in args.sets.split(","):
            data = data_dir(name)
            queries = jsonl(data / "queries.jsonl")
            qrels = {q["qid"]: set(q["relevant"]) for q in jsonl(data / "qrels.jsonl")}
            with lore.open(root(name)) as project:
                cells = {"bm25": score(project, queries, qrels, args.field, mode="bm25")[::2]}
                for code, commits in pairs:
                    cells[f"{code:g}:{commits:g}"] = score(
                        project, queries, qrels, args.field, scales=(code, commits)
                    )[::2]
            for key, value in cells.items():
                table.setdefault(key, []).append(value)
            print(
                f"{name:<11} " + " | ".join(f"{k}: {a:.3f} {b:.3f}" for k, (a, b) in cells.items()),
                flush=True,
            )
        for key, values in table.items():
            print(f"{key}: mean MRR@10 {statistics.fmean(v[1] for v in values):.4f}")
        return

    variants = GRID if args.grid else SPLITS
    means: dict[tuple, list[float]] = {v: [] for v in variants}
    for name in args.sets.split(","):
        data = data_dir(name)
        queries = jsonl(data / "queries.jsonl")
        qrels = {q["qid"]: set(q["relevant"]) for q in jsonl(data / "qrels.jsonl")}
        with lore.open(root(name)) as project:
            cells = []
            for variant in variants:
                if args.grid:
                    fusion.RRF_K, fusion.LONG_QUERY = variant
                    code = commits = "rrf"
                else:
                    code, commits = variant
                r1, r10, mrr = score(project, queries, qrels, args.field, code, commits)
                means[variant].append(mrr)
                cells.append(f"{variant}: {r1:.3f} {r10:.3f} {mrr:.3f}")
        print(f"{name:<11} " + " | ".join(cells), flush=True)
    for variant, values in means.items():
        print(f"{variant}: mean MRR@10 {statistics.fmean(values):.4f}")


if __name__ == "__main__":
    main()
