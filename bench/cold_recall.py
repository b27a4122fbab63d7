"""Cold `lore recall` wall time, this code against another tree, fairly.

    python bench/cold_recall.py --project PATH [--against SRC] [--rounds 20]

Each variant gets its own copy of the project (an older Lore would rewrite
the index's meta and make the other pay for it), bytecode compiled in every
source tree (this machine sets PYTHONDONTWRITEBYTECODE: a tree without .pyc
files compiles every module on every run), and the variants are rotated, a
new task every run. Prints the median and the 25th percentile per variant.
`--against` is a `src` folder, e.g. of `git worktree add /tmp/old <commit>`.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", required=True)
    parser.add_argument("--against", help="another Lore's src folder")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    variants = {"this": HERE, **({"against": Path(args.against)} if args.against else {})}
    with tempfile.TemporaryDirectory(prefix="lore-cold-") as scratch:
        copies = {}
        for name, src in variants.items():
            compileall.compile_dir(str(src), quiet=1)
            copies[name] = Path(scratch) / name
            shutil.copytree(args.project, copies[name], symlinks=True)
            run(src, copies[name], "warm the index up")  # one-time upgrades are not what is measured
        times: dict[str, list[float]] = {name: [] for name in variants}
        for i in range(args.rounds):
            for name, src in variants.items():
                times[name].append(run(src, copies[name], f"make url rule handling robust {i} {name}"))
    for name, values in times.items():
        q1 = statistics.quantiles(values, n=4)[0]
        print(
            f"  {name:<8} median {statistics.median(values):6.0f} ms   p25 {q1:6.0f} ms   ({len(values)} runs)"
        )


def run(src: Path, project: Path, task: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-P", "-m", "lore", "recall", task, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        check=False,
    )
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    main()
