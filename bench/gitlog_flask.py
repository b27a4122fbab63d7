"""Issues 4 and 5 benchmark: task (commit message) → files, on Flask 3.1.3.

    python bench/gitlog_flask.py [--tree all|py] [--field text|subject]

Indexes the Flask sdist (downloaded once with pip, as the set's README says)
and, for each of the 150 queries, ranks files with `lore code --files-only`
in bm25, vector, hybrid (rrf, weighted) modes, and takes the files cited by a
`lore recall` pack (budget 2,000 tokens). Prints R@1/5/10, MRR@10 and the
pack's tokens. The sdist has no git history, so recall's past-commit
evidence is absent here (README: the tree must not be the git repo).
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
from pathlib import Path

from _common import BENCH_DATA, WORK, jsonl

DATA = BENCH_DATA / "gitlog-flask"
OUTSIDE = Path(tempfile.gettempdir()) / "lore-bench"
SDIST = "flask-3.1.3.tar.gz"


def tree(kind: str):
    import lore

    # Outside any git repository: the sdist has no history, and must not
    # borrow the history of a repository it happens to sit in.
    root = OUTSIDE / f"flask-{kind}" / "flask-3.1.3"
    if (root / ".lore/.built").exists():
        return lore.open(root)
    shutil.rmtree(root.parent, ignore_errors=True)
    root.parent.mkdir(parents=True)
    cache = WORK / "downloads"
    if not (cache / SDIST).exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "flask==3.1.3",
                "--no-binary",
                ":all:",
                "--no-deps",
                "-d",
                str(cache),
                "-q",
            ],
            check=True,
        )
    with tarfile.open(cache / SDIST) as archive:
        archive.extractall(root.parent, filter="data")
    project = lore.init(root)
    if kind == "py":
        config = root / ".lore/config.toml"
        config.write_text(config.read_text().replace("include = []", 'include = ["*.py"]'))
        project = lore.open(root)
    project.index_code()
    project.embed()
    (root / ".lore/.built").touch()
    return project


def evaluate(run: list[dict]) -> dict:
    path = WORK / "flask-run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in run))
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH_DATA / "eval_retrieval.py"),
            "--qrels",
            str(DATA / "qrels.jsonl"),
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
    print(f"  {name:<26} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} {m['MRR@10']:7.3f}  {extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", default="all", choices=["all", "py"])
    parser.add_argument("--field", default="text", choices=["text", "subject"])
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args()
    project = tree(args.tree)
    queries = jsonl(DATA / "queries.jsonl")
    print(f"gitlog-flask: {len(queries)} queries ({args.field}), tree: {args.tree}")
    print(f"  {'system':<26} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")
    for name, base in (
        ("BM25 baseline (README)", "bm25"),
        ("grep baseline (README)", "grep"),
        ("prior (README)", "prior"),
    ):
        line(name, evaluate(jsonl(DATA / f"baselines/{base}.jsonl")))
    for name, mode, fusion in (
        ("lore code (default: hybrid)", None, None),
        ("lore code bm25", "bm25", None),
        ("lore code vector", "vector", None),
        ("lore code hybrid rrf", "hybrid", "rrf"),
        ("lore code hybrid weighted", "hybrid", "weighted"),
    ):
        run = [
            {
                "qid": q["qid"],
                "ranked": [
                    h.file_path
                    for h in project.code_search(
                        q[args.field], limit=10, files_only=True, mode=mode, fusion=fusion, fresh=False
                    )
                ],
            }
            for q in queries
        ]
        line(name, evaluate(run))
    run, tokens = [], []
    for q in queries:
        pack = project.recall(q[args.field], budget=args.budget, fresh=False, include_memories=False)
        # The pack's "Likely files" section in its order, then files of its code snippets.
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
        evaluate(run),
        f"tokens median {statistics.median(tokens):.0f}, max {max(tokens)}",
    )


if __name__ == "__main__":
    main()
