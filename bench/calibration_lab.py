"""Self-calibration lab: does a repository's own recent history tell which code evidence ranks its files better?

    python bench/calibration_lab.py zod,ripgrep,timesplit,gin,hono,click,gson,rack,jq,sqlalchemy [N]

For each time-split set, the newest N (100) qualifying commits *before* the
cut (in the indexed clone) are asked like the set's tasks (the commit itself
left out of the history evidence), and three file rankings of
bench/files_lab.py are scored on them and on the set's own tasks: the
product's (hybrid code and history), keyword-only code and history, and
keyword-only code with hybrid history. If the calibration column picked
the better ranking for the tasks, a per-project choice would be a rule that
generalises. Columns: R@1/MRR@10 for calibration x3, then tasks x3.
"""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import files_lab
import timesplit
from lore.search.files import roles_asked, scope_words
from lore.storage import ChunkFilter
from timesplit_make import TRIVIAL, TRIVIAL_TYPES, clean

N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
CACHE = files_lab.WORK / "calibration"


def git(root, *a):
    return subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True, check=True).stdout


def calib_queries(project, root):
    by_sha = {c.sha: c for c in project.store.commits()}
    shas = git(root, "rev-list", "--no-merges", "--first-parent", "-n", "3000", "HEAD").split()
    out = []
    for sha in shas:
        if len(out) == N:
            break
        c = by_sha.get(sha)
        if c is None or c.is_merge:
            continue
        subject, text = clean(c.subject + ("\n\n" + c.body if c.body else ""))
        if (
            "bot" in c.author.lower()
            or len(subject.split()) < 5
            or TRIVIAL.search(subject)
            or TRIVIAL_TYPES.match(subject)
        ):
            continue
        files = [p for p in c.head_files if p]
        roles = project.store.code_files(sorted(set(files)), ChunkFilter()) if files else {}
        src = sorted(p for p, r in roles.items() if r == "source")
        if not 1 <= len(src) <= 5:
            continue
        out.append({"qid": sha[:12], "sha": sha, "text": text, "relevant": src})
    return out


def load_calib(name):
    CACHE.mkdir(parents=True, exist_ok=True)
    f = CACHE / f"{name}-{N}.json"
    if f.exists():
        d = json.loads(f.read_text())
        return d["lists"], {k: set(v) for k, v in d["qrels"].items()}, d["texts"]
    project, _ = timesplit.project("flask" if name == "timesplit" else name)
    root = timesplit.OUTSIDE / ("flask" if name == "timesplit" else name)
    qs = calib_queries(project, root)
    lists = files_lab.collect(project, qs)
    qrels = {q["qid"]: q["relevant"] for q in qs}
    texts = {q["qid"]: q["text"] for q in qs}
    f.write_text(json.dumps({"lists": lists, "qrels": qrels, "texts": texts}))
    return lists, {k: set(v) for k, v in qrels.items()}, texts


def prep(lists, texts):
    for q in lists:
        q["asked"] = frozenset(roles_asked(texts[q["qid"]]))
        q["scope"] = scope_words(texts[q["qid"]])
        q["text"] = texts[q["qid"]]


def hyb(q):
    return files_lab.rank(q)


def bm(q):
    return files_lab.rank(q, code_mode="bm25", hist_mode="bm25")


def bm_code(q):
    return files_lab.rank(q, code_mode="bm25")


def main() -> None:
    for name in sys.argv[1].split(","):
        cl, cq, ct = load_calib(name)
        prep(cl, ct)
        tl, tq = files_lab.load(name, False)
        row = [name, len(cl)]
        for lists, qrels in ((cl, cq), (tl, tq)):
            for fn in (hyb, bm, bm_code):
                m = files_lab.metrics(lists, qrels, fn)
                row.append(f"{m['R@1']:.3f}/{m['MRR@10']:.3f}")
        print(" ".join(str(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
