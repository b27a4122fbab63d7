"""Files lab: how code matches, past commits and file roles are best combined into "likely files".

    python bench/files_lab.py [--sets timesplit,gitlog,gin,hono,click,zod,gson,ripgrep,rack,jq] [--refresh]

Caches, per query, the code chunks and past commits Lore's searches return
(bench/.data/files/), then scores file-ranking rules over them offline.
timesplit-flask and gitlog-flask are both dev sets (their READMEs); the
other names are time-split sets built by bench/timesplit_make.py from other
repositories (gin: Go, hono and zod: TypeScript, click: Python, gson:
Java, ripgrep: Rust, rack: Ruby, jq: C).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from _common import BENCH_DATA, WORK, jsonl

CACHE = WORK / "files"


def collect(project, queries: list[dict]) -> list[dict]:
    from lore.search import hybrid
    from lore.storage import ChunkFilter

    out = []
    store = project.store
    for q in queries:
        entry = {"qid": q["qid"]}
        for mode in ("hybrid", "bm25"):
            query, run = project.searcher.query(q["text"], "code", None if mode == "hybrid" else "bm25")
            chunks = hybrid.search(store, "code", query, limit=300, flt=ChunkFilter(), mode=run)
            entry[f"code_{mode}"] = [
                (c.chunk.path, c.score, c.chunk.role, c.lexical, c.similarity) for c in chunks
            ]
            query, run = project.searcher.query(q["text"], "commit", None if mode == "hybrid" else "bm25")
            # A query that is a past commit (bench/calibration_lab.py) leaves that commit out.
            commits = hybrid.search(store, "commit", query, limit=101, mode=run)
            entry[f"commits_{mode}"] = [
                (
                    c.score,
                    [p for p in c.chunk.commit.head_files if p],
                    c.chunk.commit.n_files,
                    c.chunk.commit.is_merge,
                    c.chunk.commit.date,
                )
                for c in commits
                if c.chunk.commit.sha != q.get("sha")
            ][:100]
        # Roles of every file the lists name, as the product looks them up (history-only files too).
        named = {row[0] for key in ("code_hybrid", "code_bm25") for row in entry[key]}
        named |= {p for key in ("commits_hybrid", "commits_bm25") for c in entry[key] for p in c[1]}
        entry["roles"] = store.code_files(sorted(named), ChunkFilter()) if named else {}
        out.append(entry)
    return out


def load(name: str, refresh: bool):
    CACHE.mkdir(parents=True, exist_ok=True)
    cache = CACHE / f"{name}.json"
    import timesplit

    split_set = "flask" if name == "timesplit" else name  # others: bench/timesplit_make.py
    data = BENCH_DATA / "gitlog-flask" if name == "gitlog" else timesplit.data_dir(split_set)
    if cache.exists() and not refresh:
        lists = json.loads(cache.read_text())
    else:
        if name != "gitlog":
            project, _ = timesplit.project(split_set)
        else:
            import gitlog_flask

            project = gitlog_flask.tree("all")
        lists = collect(project, jsonl(data / "queries.jsonl"))
        cache.write_text(json.dumps(lists))
    qrels = {r["qid"]: set(r["relevant"]) for r in jsonl(data / "qrels.jsonl")}
    from lore.search.files import roles_asked, scope_words

    texts = {q["qid"]: q["text"] for q in jsonl(data / "queries.jsonl")}
    for q in lists:
        q["asked"] = frozenset(roles_asked(texts[q["qid"]]))
        q["scope"] = scope_words(texts[q["qid"]])
        q["text"] = texts[q["qid"]]
    return lists, qrels


def code_files(chunks, extra: float = 0.5, depth: int = 3, field: int = 1):
    """Per file: best chunk + `extra` x the next `depth`, of the chunks' fused
    score (field 1), keyword relevance (3) or cosine (4)."""
    per: dict[str, list[float]] = defaultdict(list)
    roles = {}
    for row in chunks:
        path, role, score = row[0], row[2], row[field]
        if score > 0 or field == 1:
            per[path].append(score)
        roles[path] = role
    per = {p: sorted(s, reverse=True) for p, s in per.items()}
    scored = {p: s[0] + extra * sum(s[1 : 1 + depth]) for p, s in per.items()}
    return scored, roles


def history_files(
    commits,
    *,
    top: int = 100,
    size_power: float = 0.5,
    max_files: int = 100,
    merge_weight: float = 0.5,
    sum_mode: str = "sum",
):
    scores: dict[str, float] = defaultdict(float)
    for score, files, n_files, is_merge, _date in commits[:top]:
        if n_files > max_files or not files:
            continue
        weight = score / max(1.0, n_files) ** size_power * (merge_weight if is_merge else 1.0)
        for path in files:
            if sum_mode == "sum":
                scores[path] += weight
            else:
                scores[path] = max(scores[path], weight)
    return dict(scores)


ROLE_PRIOR = {
    "source": 1.0,
    "test": 0.5,
    "example": 0.5,
    "config": 0.4,
    "docs": 0.3,
    "changelog": 0.2,
    "community": 0.2,
    "generated": 0.2,
    "vendored": 0.2,
}


def rank(
    q,
    *,
    code_mode="hybrid",
    hist_mode="hybrid",
    k=2,
    w_hist=1.0,
    roles="tiers",
    split="fused",
    asked=frozenset(),
    role_prior=None,
    hist=True,
    code=True,
    scope=True,
    **hkw,
):
    """Files for one query, best first. roles: "tiers" (the product: source
    first, the fused score orders files within a role's tier; asked-for roles
    but tests join the source tier at half their score), "multiply" (role
    weight times the fused score, the rule before) or None."""
    asked = asked or q.get("asked", frozenset())
    c_scores, c_roles = code_files(q[f"code_{code_mode}"])
    c_roles = {**q.get("roles", {}), **c_roles}
    code_lists = [c_scores]
    if split and code_mode == "hybrid":  # fused and keyword strengths as two lists (the product)
        words = code_files(q["code_hybrid"], field=3)[0]
        code_lists = (
            [c_scores, words] if split == "fused" else [words, code_files(q["code_hybrid"], field=4)[0]]
        )
    h_scores = (
        history_files(q[f"commits_{hist_mode}"], size_power=hkw.pop("size_power", 1.0), **hkw) if hist else {}
    )
    if "roles" in q:  # the product offers only files that exist now
        h_scores = {p: v for p, v in h_scores.items() if p in q["roles"]}
    prior = role_prior or ROLE_PRIOR
    final: dict[str, float] = defaultdict(float)
    if code:
        for scores in code_lists:
            for r, p in enumerate(sorted(scores, key=lambda x: -scores[x])):
                final[p] += 1 / (k + 1 + r)
    for r, p in enumerate(sorted(h_scores, key=lambda x: -h_scores[x])):
        final[p] += w_hist / (k + 1 + r)
    if scope:  # what the task names: an area ("printer: ..."), files or modules (the product)
        from lore.search.files import _in_scope, _named

        for named in (_in_scope(final, q["scope"]) if q["scope"] else {}, _named(final, q["text"])):
            for r, p in enumerate(sorted(named, key=lambda x: (-named[x], -final[x]))):
                final[p] += 1 / (k + 1 + r)

    def key(p):
        role = c_roles.get(p) or "source"
        weight = prior.get(role, 1.0)
        if roles == "tiers":
            if role in asked and role != "test":
                return (1.0, final[p] * 0.5)
            return (weight, final[p])
        if roles == "multiply":
            return (1.0, final[p] * (max(weight, 0.8) if role in asked else weight))
        return (1.0, final[p])

    return sorted(final, key=key, reverse=True)


def metrics(lists, qrels, fn):
    tot = defaultdict(float)
    for q in lists:
        ranked = fn(q)[:10]
        rel = qrels[q["qid"]]
        for k in (1, 5, 10):
            tot[f"R@{k}"] += len(rel & set(ranked[:k])) / len(rel)
        tot["MRR@10"] += next((1 / (i + 1) for i, d in enumerate(ranked) if d in rel), 0.0)
    return {k: v / len(lists) for k, v in tot.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="timesplit,gitlog,gin,hono,click,zod,gson,ripgrep,rack,jq")
    parser.add_argument("--refresh", action="store_true")
    args = parser.parse_args()
    rules = {
        "code only (hybrid), no roles": lambda q: rank(q, hist=False, roles=None),
        "code only (bm25), no roles": lambda q: rank(q, code_mode="bm25", hist=False, roles=None),
        "code only (hybrid) + tiers": lambda q: rank(q, hist=False, split=False),
        "history only (hybrid)": lambda q: rank(q, code=False, roles=None),
        "history only (bm25)": lambda q: rank(q, code=False, roles=None, hist_mode="bm25"),
        "rrf2 code+hist, no roles": lambda q: rank(q, roles=None, split=False),
        "default: fused+words+hist+named": rank,
        "  ... without what the task names": lambda q: rank(q, scope=False),
        "  ... words+meaning (before)": lambda q: rank(q, split=True),
        "rrf2 code+hist + tiers": lambda q: rank(q, split=False),
        "rrf60 code+hist + tiers": lambda q: rank(q, k=60, split=False),
        "rrf60 code+hist x role (before)": lambda q: rank(q, k=60, roles="multiply", split=False),
        "rrf2 code+hist x role": lambda q: rank(q, roles="multiply", split=False),
        "rrf1 + tiers": lambda q: rank(q, k=1),
        "rrf5 + tiers": lambda q: rank(q, k=5),
        "rrf10 + tiers": lambda q: rank(q, k=10),
        "rrf2 bm25 code+bm25 hist + tiers": lambda q: rank(q, code_mode="bm25", hist_mode="bm25"),
        "rrf2 + tiers, max": lambda q: rank(q, sum_mode="max"),
        "rrf2 + tiers, size^0.5": lambda q: rank(q, size_power=0.5),
        "rrf2 + tiers, size^0": lambda q: rank(q, size_power=0.0),
        "rrf2 + tiers, top50": lambda q: rank(q, top=50),
        "rrf2 + tiers, merges 0": lambda q: rank(q, merge_weight=0.0),
        "rrf2 + tiers, merges 1": lambda q: rank(q, merge_weight=1.0),
        "rrf2 code+hist x1.5 + tiers": lambda q: rank(q, w_hist=1.5),
        "rrf2 code+hist x0.7 + tiers": lambda q: rank(q, w_hist=0.7),
    }
    sets = args.sets.split(",")
    data = {name: load(name, args.refresh) for name in sets}
    print("R@10 / MRR@10 per set; mean over the sets")
    print(f"  {'rule':<34}" + "".join(f"{name[:12]:>14}" for name in sets) + f"{'mean':>14}")
    for rule, fn in rules.items():
        cells, r10, mrr = [], 0.0, 0.0
        for name in sets:
            m = metrics(*data[name], fn)
            cells.append(f"{m['R@10']:.3f}/{m['MRR@10']:.3f}".rjust(14))
            r10, mrr = r10 + m["R@10"], mrr + m["MRR@10"]
        print(f"  {rule:<34}" + "".join(cells) + f"{r10 / len(sets):.3f}/{mrr / len(sets):.3f}".rjust(14))


if __name__ == "__main__":
    main()
