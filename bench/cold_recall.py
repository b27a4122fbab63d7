"""Cold `lore recall` wall time, this code against another tree, fairly.

    python bench/cold_recall.py --project PATH [--against SRC] [--rounds 20] [--no-warm]

Each variant gets its own copy of the project (an older Lore would rewrite
the index's meta and make the other pay for it), bytecode compiled in every
source tree (this machine sets PYTHONDONTWRITEBYTECODE: a tree without .pyc
files compiles every module on every run), and the variants are rotated, a
new task every run. Prints the median and the 25th percentile per variant.
`--against` is a `src` folder, e.g. of `git worktree add /tmp/old <commit>`.

This code runs two ways: in its own process from start to end (`LORE_WARM=0`,
what the first command of a session costs), and through the warm server
(lore.interfaces.warm) that the first command leaves behind: a new process
each time still, which hands its command to the server's fork. `--no-warm`
leaves the second out.
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

from _common import stop_warm_servers

HERE = Path(__file__).resolve().parents[1] / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", required=True)
    parser.add_argument("--against", help="another Lore's src folder")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-warm", action="store_true", help="leave out the run through the warm server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lore-cold-") as scratch:
        warm = Path(scratch) / "sockets"
        warm.mkdir(mode=0o700)
        off = {"LORE_WARM": "0"}
        variants = {"this": (HERE, off)}
        if not args.no_warm:
            variants["warm"] = (HERE, {"LORE_WARM": "1", "LORE_WARM_DIR": str(warm)})
        if args.against:
            variants["against"] = (Path(args.against), off)
        copies = {}
        try:
            for name, (src, env) in variants.items():
                compileall.compile_dir(str(src), quiet=1)
                copies[name] = Path(scratch) / name
                shutil.copytree(args.project, copies[name], symlinks=True)
                run(src, env, copies[name], "warm the index up")  # one-time upgrades are not what is measured
            if "warm" in variants:  # that first command started the server
                deadline = time.monotonic() + 120
                while not any(warm.glob("*.sock")) and time.monotonic() < deadline:
                    time.sleep(0.1)
            times: dict[str, list[float]] = {name: [] for name in variants}
            for i in range(args.rounds):
                for name, (src, env) in variants.items():
                    times[name].append(
                        run(src, env, copies[name], f"make url rule handling robust {i} {name}")
                    )
        finally:
            stop_warm_servers(warm)
    labels = {
        "this": "this code, in its own process (LORE_WARM=0)",
        "warm": "this code, through the warm server",
    }
    for name, values in times.items():
        q1 = statistics.quantiles(values, n=4)[0]
        print(
            f"  {labels.get(name, name):<46} median {statistics.median(values):6.0f} ms"
            f"   p25 {q1:6.0f} ms   ({len(values)} runs)"
        )


def run(src: Path, extra: dict[str, str], project: Path, task: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(src), **extra}
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
