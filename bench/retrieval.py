"""Issue 3 retrieval benchmark: Lore's own search on the public sets in shared/bench-data.

    python bench/retrieval.py [--sets locomo,cosqa] [--split dev|test] [--modes bm25,vector,rrf,weighted]
                              [--embedding local|e5]

- locomo: every turn is a memory, one project per conversation (the
  protocol's per-conversation setting), recorded as an agent's session
  memories are: source ``session:<its session>``, dated by the session (a
  second per turn keeps their order); questions of categories 1-4 are the
  headline, category 5 is reported separately.
- cosqa: every function is a memory; dev split for tuning, test for reporting.
- cosqa-code: the same functions as .py files through the code indexer.
Prints R@1/5/10, MRR@10, nDCG@10 per mode (scored by the sets' own eval_retrieval.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import BENCH_DATA, WORK, jsonl

# Projects whose code is indexed must not sit inside another git repository.
OUTSIDE = Path(tempfile.gettempdir()) / "lore-bench"

EMBEDDING = "local"  # [embedding] provider of the projects built (--embedding)

MODES = {
    "bm25": ("bm25", None),
    "vector": ("vector", None),
    "hybrid": ("hybrid", "adaptive"),  # the default
    "rrf": ("hybrid", "rrf"),
    "weighted": ("hybrid", "weighted"),
}


def build(name: str, docs: list[tuple[str, str, str]], recorded: dict[str, tuple[str, str]] | None = None):
    """A project whose memories are `docs` = (id, title, body); indexed and
    embedded. `recorded`: {id: (source, occurred_at)} for memories recorded in
    a session (the rest are dated 2024-01-01)."""
    import lore
    from lore.memory import markdown
    from lore.memory.model import Memory

    root = WORK / ("retrieval" if EMBEDDING == "local" else f"retrieval-{EMBEDDING}") / name
    marker = root / ".built"
    if marker.exists():
        return lore.open(root)
    shutil.rmtree(root, ignore_errors=True)
    project = lore.init(root)
    if EMBEDDING != "local":
        config = root / ".lore" / "config.toml"
        config.write_text(config.read_text().replace('provider = "local"', f'provider = "{EMBEDDING}"', 1))
        project.close()
        project = lore.open(root)
    for doc_id, title, body in docs:
        source, occurred_at = (recorded or {}).get(doc_id, (None, "2024-01-01T00:00:00Z"))
        memory = Memory(
            id=doc_id,
            title=title[:200] or doc_id,
            body=body,
            tags=["bench"],
            occurred_at=occurred_at,
            source=source,
        )
        markdown.write_new(project.project.memory_dir, markdown.file_name(memory), markdown.render(memory))
    project.reindex()
    start = time.perf_counter()
    project.embed()
    print(
        f"  built {name}: {len(docs)} memories, embedded in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    marker.touch()
    return project


def run_queries(project, queries: list[dict], mode: str) -> list[dict]:
    search_mode, fusion = MODES[mode]
    return [
        {
            "qid": q["qid"],
            "ranked": [h.id for h in project.search(q["text"], mode=search_mode, fusion=fusion, limit=10)],
        }
        for q in queries
    ]


def evaluate(qrels: str, run: list[dict], extra: list[str] = ()) -> dict:
    path = WORK / "retrieval" / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in run))
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH_DATA / "eval_retrieval.py"),
            "--qrels",
            qrels,
            "--run",
            str(path),
            "--json",
            *extra,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def table(title: str, results: dict[str, dict]) -> None:
    print(f"\n{title}")
    print(f"  {'mode':<10} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} {'nDCG@10':>8}")
    for mode, m in results.items():
        print(
            f"  {mode:<10} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} {m['MRR@10']:7.3f} {m['nDCG@10']:8.3f}"
        )


def overall(report: dict) -> dict:
    return report["metrics"]["ALL"]


def turn_time(turn: dict) -> str:
    """When a LoCoMo turn was said: its session's start ("1:56 pm on 8 May,
    2023"), plus a second per turn (the set gives their order, not their
    times). A set of the same shape with other dates: 2024-01-01, in order."""
    from datetime import datetime, timedelta

    try:
        start = datetime.strptime(turn["date_time"], "%I:%M %p on %d %B, %Y")
    except (KeyError, TypeError, ValueError):
        start = datetime(2024, 1, 1)
    number = str(turn["id"]).rsplit(":", 1)[-1]
    said = start + timedelta(seconds=int(number) if number.isdigit() else 0)
    return said.strftime("%Y-%m-%dT%H:%M:%SZ")


def locomo(modes: list[str]) -> None:
    data = BENCH_DATA / "locomo"
    turns = jsonl(data / "corpus_turns.jsonl")
    queries = jsonl(data / "queries.jsonl")
    by_conv = defaultdict(list)
    recorded = {}
    for t in turns:
        text = t["text"] + (f" and shared {t['image_caption']}" if t.get("image_caption") else "")
        by_conv[t["conv"]].append((t["id"], f"{t['speaker']}: {text[:120]}", f"{t['speaker']}: {text}\n"))
        if t.get("session"):  # recorded as a session's memories are
            recorded[t["id"]] = (f"session:{t['session']}", turn_time(t))
    runs = {m: [] for m in modes}
    for conv, docs in sorted(by_conv.items()):
        project = build(f"locomo-sessions-{conv}", docs, recorded)
        conv_queries = [q for q in queries if q["conv"] == conv]
        for mode in modes:
            runs[mode] += run_queries(project, conv_queries, mode)
        project.close()
    qrels = str(data / "qrels_turns.jsonl")
    headline, cat5 = {}, {}
    for mode in modes:
        headline[mode] = overall(
            evaluate(qrels, runs[mode], ["--queries", str(data / "queries.jsonl"), "--exclude", "category=5"])
        )
        cat5[mode] = overall(
            evaluate(qrels, runs[mode], ["--queries", str(data / "queries.jsonl"), "--only", "category=5"])
        )
    table("locomo turns, categories 1-4 (n=1,536; BM25 baseline R@10 .568)", headline)
    table("locomo turns, category 5 (adversarial)", cat5)


def cosqa(modes: list[str], split: str) -> None:
    data = BENCH_DATA / "cosqa"
    docs = []
    for d in jsonl(data / "corpus.jsonl"):
        first = d["text"].strip().splitlines()[0] if d["text"].strip() else d["id"]
        docs.append((d["id"], first, d["text"] + "\n"))
    project = build("cosqa", docs)
    queries = jsonl(data / f"queries_{split}.jsonl")
    results = {
        m: overall(evaluate(str(data / f"qrels_{split}.jsonl"), run_queries(project, queries, m)))
        for m in modes
    }
    table(f"cosqa {split} (n=500; BM25 baseline MRR@10 {'.333' if split == 'test' else '.320'})", results)
    project.close()


def cosqa_code(modes: list[str], split: str) -> None:
    """Issue 4: the same set through the code indexer, each function a .py file."""
    import lore

    data = BENCH_DATA / "cosqa"
    root = OUTSIDE / "cosqa-code"
    if not (root / ".lore/.built").exists():
        shutil.rmtree(root, ignore_errors=True)
        (root / "functions").mkdir(parents=True)
        for d in jsonl(data / "corpus.jsonl"):
            (root / "functions" / f"{d['id']}.py").write_text(d["text"] + "\n", encoding="utf-8")
        project = lore.init(root)
        project.index_code()
        start = time.perf_counter()
        project.embed()
        print(f"  built cosqa-code: embedded in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        (root / ".lore/.built").touch()
    project = lore.open(root)
    queries = jsonl(data / f"queries_{split}.jsonl")
    results = {}
    for mode in modes:
        search_mode, fusion = MODES[mode]
        run = [
            {
                "qid": q["qid"],
                "ranked": [
                    h.file_path.rsplit("/", 1)[-1][:-3]
                    for h in project.code_search(
                        q["text"], limit=10, files_only=True, mode=search_mode, fusion=fusion, fresh=False
                    )
                ],
            }
            for q in queries
        ]
        results[mode] = overall(evaluate(str(data / f"qrels_{split}.jsonl"), run))
    table(f"cosqa {split} through the code indexer (functions as files)", results)
    project.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="locomo,cosqa")
    parser.add_argument("--split", default="test", choices=["dev", "test"])
    parser.add_argument("--modes", default="bm25,vector,rrf,weighted")
    parser.add_argument(
        "--embedding", default="local", help="[embedding] provider of the memory projects (e.g. e5)"
    )
    args = parser.parse_args()
    global EMBEDDING
    EMBEDDING = args.embedding
    modes = args.modes.split(",")
    if "locomo" in args.sets:
        locomo(modes)
    if "cosqa" in args.sets.split(","):
        cosqa(modes, args.split)
    if "cosqa-code" in args.sets:
        cosqa_code(modes, args.split)


if __name__ == "__main__":
    main()
