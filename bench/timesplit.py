"""Issue 10 benchmark: the next tasks on a real repository, answered from its past (timesplit-flask).

    python bench/timesplit.py [--field text|subject] [--budget 2000] [--set NAME]

`--set NAME` runs a set built by bench/timesplit_make.py from another
repository (bench/.data/timesplit-sets/NAME) instead of timesplit-flask.

Unpacks the set's snapshot (a real git clone of flask at the cut commit T,
with all its history) outside any other repository, runs `lore init` and
`lore index` with default settings (code, every commit, embeddings), then
asks each of the 150 tasks (the messages of commits made after T) and scores
the files Lore offers against the files those commits changed:

- `lore code --files-only` (hybrid, default), also in bm25 mode;
- `lore recall` (the pack's "Likely files" in order, then its code snippets' files);
- `lore history` turned into files (each commit's files as named at HEAD, in order).

Prints R@1/5/10 and MRR@10 beside the set's README baselines, plus index
time and size. Scores by the set's own eval_retrieval.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from _common import BENCH_DATA, WORK, dir_size, jsonl

DATA = BENCH_DATA / "timesplit-flask"
OUTSIDE = Path(tempfile.gettempdir()) / "lore-bench" / "timesplit"
BASELINES = {"BM25 (README)": "bm25", "history-sum (README)": "history-sum", "RRF (README)": "rrf"}


def data_dir(name: str) -> Path:
    """The set's folder: timesplit-flask, or one bench/timesplit_make.py built."""
    return DATA if name == "flask" else WORK / "timesplit-sets" / name


def project(name: str = "flask"):
    """The indexed snapshot (built once; `rm -r $TMPDIR/lore-bench/timesplit` to rebuild)."""
    import lore

    root = OUTSIDE / name
    if (root / ".lore/.built").exists():
        return lore.open(root), None
    shutil.rmtree(root, ignore_errors=True)
    OUTSIDE.mkdir(parents=True, exist_ok=True)
    if name == "flask":
        with tarfile.open(DATA / "flask-29111a325948.tar.gz") as archive:
            archive.extractall(OUTSIDE, filter="data")
    else:
        shutil.copytree(data_dir(name) / "snapshot", root, symlinks=True)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "lore", "init"], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    index_started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "lore", "index", "--json"], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    timing = {
        "index_s": time.perf_counter() - index_started,
        "total_s": time.perf_counter() - started,
        "result": json.loads(proc.stdout),
    }
    (root / ".lore/.built").touch()
    return lore.open(root), timing


def evaluate(run: list[dict], data: Path = DATA) -> dict:
    path = WORK / "timesplit-run.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in run))
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH_DATA / "eval_retrieval.py"),
            "--qrels",
            str(data / "qrels.jsonl"),
            "--run",
            str(path),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["metrics"]["ALL"]


def line(name: str, m: dict, extra: str = "") -> None:
    print(f"  {name:<34} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} {m['MRR@10']:7.3f}  {extra}")


def history_files(hits) -> list[str]:
    ranked: list[str] = []
    for commit in hits:
        for path in commit.files:
            if path not in ranked:
                ranked.append(path)
    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--field", default="text", choices=["text", "subject"])
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--set", default="flask", help="a set from bench/timesplit_make.py")
    args = parser.parse_args()
    data = data_dir(args.set)
    lore_project, timing = project(args.set)
    queries = jsonl(data / "queries.jsonl")
    stats = lore_project.stats()
    print(
        f"timesplit-{args.set}: {len(queries)} queries ({args.field}); index: {stats['code_files']} files, "
        f"{stats['code_chunks']} chunks, {stats['commits']} commits, "
        f"{dir_size(lore_project.project.index_path, 'index.db') / 1e6:.1f} MB"
    )
    if timing:
        print(f"  lore index (code + all history + embeddings): {timing['index_s']:.1f} s")
    print(f"  {'system':<34} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")
    for name, base in BASELINES.items():
        line(name, evaluate(jsonl(data / f"baselines/{base}.jsonl"), data))
    for name, mode in (("lore code --files-only", None), ("lore code --files-only --mode bm25", "bm25")):
        times, run = [], []
        for q in queries:
            started = time.perf_counter()
            hits = lore_project.code_search(q[args.field], limit=10, files_only=True, mode=mode, fresh=False)
            times.append((time.perf_counter() - started) * 1000)
            run.append({"qid": q["qid"], "ranked": [h.file_path for h in hits]})
        line(name, evaluate(run, data), f"p50 {statistics.median(times):.0f} ms")
    run, tokens, times = [], [], []
    for q in queries:
        started = time.perf_counter()
        pack = lore_project.recall(q[args.field], budget=args.budget, fresh=False, include_memories=False)
        times.append((time.perf_counter() - started) * 1000)
        cited: list[str] = []
        for kind, key in (("file", "path"), ("code", "file_path")):
            for item in pack.items:
                path = item.data.get(key) if item.kind == kind else None
                if path and path not in cited:
                    cited.append(path)
        run.append({"qid": q["qid"], "ranked": cited})
        tokens.append(pack.tokens_used)
    line(
        f"lore recall (≤{args.budget} tok)",
        evaluate(run, data),
        f"p50 {statistics.median(times):.0f} ms, tokens median {statistics.median(tokens):.0f}",
    )
    run = [
        {"qid": q["qid"], "ranked": history_files(lore_project.history(q[args.field], limit=20, fresh=False))}
        for q in queries
    ]
    line("lore history → files", evaluate(run, data))
    lore_project.close()


if __name__ == "__main__":
    main()
