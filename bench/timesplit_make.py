"""Build a time-split "task -> files" set from any git repository, the way
shared/bench-data/timesplit-flask was built (its README is the protocol).

    python bench/timesplit_make.py --repo PATH --name gin --lang go|ts|py|java|rs|rb|c [--queries 150] [--after 900 | --cut REV]

The cut T is the first-parent commit with about `--after` non-merge commits
after it. Walking the first-parent chain after T (a merge contributes the
commits it brought, oldest first), the first `--queries` commits that

1. change 1-5 source files that are neither docs nor tests (plus any tests),
2. modify at least one of them as it existed at T (renames after T followed back),
3. change 3-400 lines in those files,
4. have a cleaned subject of at least 5 words, are not by a bot and are not trivial,

become the queries (cleaned subject + body); their relevant files are those
source files, named as at T. Writes, under bench/.data/timesplit-sets/NAME/:
queries.jsonl, qrels.jsonl, snapshot/ (a clone holding T and its history
only), and the README's baselines in baselines/ (BM25 over the source files
at T, history-sum over the commit messages up to T, RRF of the two).
`python bench/timesplit.py --set NAME` then measures Lore on it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

from _common import WORK

SETS = WORK / "timesplit-sets"

LANGS = {
    "py": (r"\.py$", r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"),
    "go": (r"\.go$", r"_test\.go$|(^|/)testdata/"),
    "java": (r"\.(java|kt)$", r"(^|/)src/test/|(^|/)tests?/|Tests?\.(java|kt)$"),
    "rs": (r"\.rs$", r"(^|/)(tests|benches)/|_tests?\.rs$"),
    "rb": (r"\.rb$", r"(^|/)(tests?|spec)/|_(test|spec)\.rb$"),
    "c": (r"\.(c|h)$", r"(^|/)tests?/|_test\.c$"),
    "ts": (
        r"(?<!\.d)\.(ts|tsx|js|jsx|mjs|cjs)$",
        r"(^|/)(tests?|__tests__|testing|e2e)/|\.(test|spec)\.[cm]?[jt]sx?$",
    ),
}
DOCS = re.compile(r"(^|/)(docs?|website)/")
NEVER = re.compile(r"(^|/)setup\.py$")
TRIVIAL = re.compile(
    r"\b(typos?|bump(ed|s)?|version|release[ds]?|changelog|format(ting)?|lint(ing)?|style|docstrings?"
    r"|comments?|deps|dependenc(y|ies)|revert|merge)\b",
    re.I,
)
TRIVIAL_TYPES = re.compile(r"^(docs|ci|build|test|style|chore\(deps\))(\(.*?\))?!?:", re.I)
TRAILER = re.compile(
    r"^(signed-off-by|co-authored-by|fixes|closes|close|fix|resolves|refs?|see|reviewed-by|change-id)\s*:",
    re.I,
)
REFS = re.compile(r"https?://\S+|\b[\w.-]+/[\w.-]+#\d+|\bgh-\d+|#\d+")
EMPTY_PARENS = re.compile(r"\s+\((\s|,)*\)")
STOP = frozenset(
    "a an and are as at be but by for from has have if in into is it its of on or that the their then there "
    "these this to was were will with not no can do does when which who how what why you your we our".split()
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def clean(message: str) -> tuple[str, str]:
    lines = [line for line in message.strip().splitlines() if not TRAILER.match(line.strip())]
    text = "\n".join(EMPTY_PARENS.sub("", REFS.sub("", line)).rstrip() for line in lines).strip()
    text = re.sub(r"\n{3,}", "\n\n", text)
    subject = text.splitlines()[0].strip() if text else ""
    return subject, text


def chain_after(repo: Path, cut: str) -> list[str]:
    """Non-merge commits after `cut` in landing order: the first-parent chain,
    each merge contributing the commits it brought, oldest first."""
    out: list[str] = []
    for line in git(
        repo, "rev-list", "--first-parent", "--reverse", "--parents", f"{cut}..HEAD"
    ).splitlines():
        sha, *parents = line.split()
        if len(parents) < 2:
            out.append(sha)
            continue
        brought = git(repo, "rev-list", "--reverse", "--no-merges", "--topo-order", f"{parents[0]}..{sha}")
        out += brought.split()
    seen: set[str] = set()
    return [s for s in out if not (s in seen or seen.add(s))]


def choose_cut(repo: Path, after: int) -> str:
    """The first-parent commit with about `after` non-merge commits after it."""
    chain = git(repo, "rev-list", "--first-parent", "HEAD").split()
    low, high = 0, len(chain) - 1
    while low < high:  # chain is newest first; the count after chain[i] grows with i
        mid = (low + high) // 2
        count = int(git(repo, "rev-list", "--count", "--no-merges", f"{chain[mid]}..HEAD"))
        if count < after:
            low = mid + 1
        else:
            high = mid
    return chain[low]


def renames_since(repo: Path, cut: str, rev: str) -> dict[str, str]:
    """Path at `rev` -> path at `cut`, for files renamed in between."""
    out = {}
    for line in git(repo, "diff", "-M", "--name-status", "--diff-filter=R", cut, rev).splitlines():
        _, old, new = line.split("\t")
        out[new] = old
    return out


def mine(
    repo: Path, cut: str, source: re.Pattern, test: re.Pattern, wanted: int, name: str
) -> list[tuple[dict, dict]]:
    at_cut = set(git(repo, "ls-tree", "-r", "--name-only", cut).splitlines())
    rows: list[tuple[dict, dict]] = []
    for position, sha in enumerate(chain_after(repo, cut)):
        if len(rows) == wanted:
            break
        author, body = git(repo, "show", "-s", "--format=%an%x00%B", sha).split("\x00", 1)
        subject, text = clean(body)
        if (
            "bot" in author.lower()
            or len(subject.split()) < 5
            or TRIVIAL.search(subject)
            or TRIVIAL_TYPES.match(subject)
        ):
            continue
        changed: dict[str, tuple[str, int]] = {}  # path -> (status, lines)
        numstat = git(repo, "show", "--format=", "-M", "--numstat", sha).splitlines()
        status = git(repo, "show", "--format=", "-M", "--name-status", sha).splitlines()
        lines = {}
        for row in numstat:
            added, deleted, path = row.split("\t", 2)
            if "=>" in path:  # rename: "a/{b => c}/d" or "b => c"
                path = re.sub(r"\{(.*?) => (.*?)\}", r"\2", path).split(" => ")[-1].replace("//", "/")
            lines[path] = (int(added) if added != "-" else 0) + (int(deleted) if deleted != "-" else 0)
        for row in status:
            parts = row.split("\t")
            changed[parts[-1]] = (parts[0][0], lines.get(parts[-1], 0))
        src = {
            p: v
            for p, v in changed.items()
            if source.search(p) and not test.search(p) and not DOCS.search(p) and not NEVER.search(p)
        }
        if not 1 <= len(src) <= 5 or not 3 <= sum(v[1] for v in src.values()) <= 400:
            continue
        back = renames_since(repo, cut, f"{sha}^")
        relevant = sorted(
            {back.get(p, p) for p, (st, _) in src.items() if st in "MR" and back.get(p, p) in at_cut}
        )
        if not relevant:
            continue
        qid = f"{name}-{len(rows):03d}"
        rows.append(
            (
                {"qid": qid, "text": text, "subject": subject, "commit": sha, "commits_after_T": position},
                {"qid": qid, "relevant": relevant},
            )
        )
    return rows


def tokens(text: str) -> list[str]:
    out = []
    for word in re.findall(r"[A-Za-z0-9]+", text):
        parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", word)
        for token in {word.lower(), *(p.lower() for p in parts)}:
            if len(token) > 1 and token not in STOP:
                out.append(token)
    return out


class BM25:
    def __init__(self, docs: list[list[str]], k1: float = 1.5, b: float = 0.75):
        self.tf = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avg = sum(self.len) / max(1, len(docs))
        df = Counter(t for d in self.tf for t in d)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: list[str]) -> list[float]:
        out = []
        for tf, length in zip(self.tf, self.len, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self.avg)
            out.append(
                sum(self.idf.get(t, 0) * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in query if t in tf)
            )
        return out


def history_at_cut(repo: Path, cut: str, at_cut: set[str]) -> list[tuple[str, list[str]]]:
    """(cleaned message, files named as at T) of every non-merge commit up to T, newest first."""
    log = git(repo, "log", "--no-merges", "-M", "--name-status", "--format=%x00%H%x00%B%x00", cut)
    names = {p: p for p in at_cut}  # name at that time -> name at T
    out = []
    chunks = log.split("\x00")
    # layout: "", sha, body, "\n<name-status>\n", sha, body, ...
    for i in range(1, len(chunks) - 2, 3):
        body, status = chunks[i + 1], chunks[i + 2]
        files = []
        for row in status.strip().splitlines():
            parts = row.split("\t")
            kind = parts[0][:1]
            if kind == "R":
                old, new = parts[1], parts[2]
                target = names.pop(new, None)
                if target:
                    files.append(target)
                    names[old] = target
            else:
                target = names.get(parts[-1])
                if target:
                    files.append(target)
                if kind == "A":
                    names.pop(parts[-1], None)
        out.append((clean(body)[1], files))
    return out


def rrf(*rankings: list[str], k: int = 60) -> list[str]:
    score: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, doc in enumerate(ranking):
            score[doc] += 1 / (k + rank + 1)
    return sorted(score, key=lambda d: -score[d])


def baselines(repo: Path, cut: str, source: re.Pattern, queries: list[dict], out: Path) -> None:
    at_cut = sorted(git(repo, "ls-tree", "-r", "--name-only", cut).splitlines())
    files = [p for p in at_cut if source.search(p)]
    docs = []
    for path in files:
        blob = subprocess.run(["git", "-C", str(repo), "show", f"{cut}:{path}"], capture_output=True).stdout
        docs.append(tokens(path.replace("/", " ") + " " + blob.decode("utf-8", "replace")))
    code = BM25(docs)
    history = history_at_cut(repo, cut, set(at_cut))
    messages = BM25([tokens(m) for m, _ in history])
    runs: dict[str, list[dict]] = {"bm25": [], "history-sum": [], "rrf": []}
    for q in queries:
        terms = tokens(q["text"])
        scores = code.scores(terms)
        bm25 = [files[i] for i in sorted(range(len(files)), key=lambda i: -scores[i]) if scores[i] > 0][:100]
        commit_scores = messages.scores(terms)
        top = sorted(range(len(history)), key=lambda i: -commit_scores[i])[:100]
        per_file: dict[str, float] = defaultdict(float)
        for i in top:
            for path in history[i][1]:
                if source.search(path):
                    per_file[path] += commit_scores[i]
        hist = sorted(per_file, key=lambda p: -per_file[p])[:100]
        for name, ranked in (("bm25", bm25), ("history-sum", hist), ("rrf", rrf(bm25, hist)[:100])):
            runs[name].append({"qid": q["qid"], "ranked": ranked})
    out.mkdir(parents=True, exist_ok=True)
    for name, run in runs.items():
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run))


def snapshot(repo: Path, cut: str, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "fetch", "-q", "--no-tags", str(repo), cut], check=True)
    subprocess.run(["git", "-C", str(target), "reset", "-q", "--hard", cut], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--lang", choices=sorted(LANGS), required=True)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--after", type=int, default=900, help="non-merge commits after the cut")
    parser.add_argument("--cut", help="the cut commit itself (instead of --after)")
    args = parser.parse_args()
    source, test = (re.compile(p) for p in LANGS[args.lang])
    repo = args.repo.resolve()
    cut = git(repo, "rev-parse", args.cut).strip() if args.cut else choose_cut(repo, args.after)
    rows = mine(repo, cut, source, test, args.queries, args.name)
    out = SETS / args.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q, _ in rows))
    (out / "qrels.jsonl").write_text("".join(json.dumps(r) + "\n" for _, r in rows))
    (out / "pin.json").write_text(
        json.dumps({"repo": str(repo), "cut": cut, "lang": args.lang, "queries": len(rows)})
    )
    baselines(repo, cut, source, [q for q, _ in rows], out / "baselines")
    snapshot(repo, cut, out / "snapshot")
    commits = git(repo, "rev-list", "--count", cut).strip()
    print(f"{args.name}: cut {cut[:12]} ({commits} commits up to it), {len(rows)} queries -> {out}")


if __name__ == "__main__":
    main()
