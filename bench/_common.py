"""Helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH_DATA = Path(
    os.environ.get("LORE_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench-data")
)
WORK = Path(os.environ.get("LORE_BENCH_WORK", Path(__file__).resolve().parent / ".data"))


def jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def timed_cli(
    args: list[str], cwd: Path, repeat: int = 1, env: dict | None = None
) -> tuple[list[float], subprocess.CompletedProcess]:
    """Wall times (ms) of `python -m lore ARGS` in fresh processes, each in its own
    process from start to end (``LORE_WARM=0``: no warm server, see
    lore.interfaces.warm) unless `env` says otherwise."""
    times, proc = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        # -P: like the `lore` script, the project is not put on sys.path.
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "lore", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "LORE_WARM": "0", **(env or {})},
            stdin=subprocess.DEVNULL,
        )
        times.append((time.perf_counter() - start) * 1000)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"lore {' '.join(args)} failed:\n{proc.stderr}")
    return times, proc


def stop_warm_servers(folder: Path) -> None:
    """Stop the warm servers (lore.interfaces.warm) whose logs are in `folder`."""
    import signal

    for log in folder.glob("*.log"):
        for line in log.read_text().splitlines():
            if line.startswith("server "):
                try:
                    os.kill(int(line.split()[1]), signal.SIGTERM)
                except ProcessLookupError:
                    pass


def children_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def self_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_size(path: Path, prefix: str) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def row(label: str, value: str) -> None:
    print(f"  {label:<44} {value}")


def latency_row(label: str, call, inputs, digits: int = 1) -> None:
    """Run `call` on each input and print its wall p50/p95 beside CPU p50 and load
    (the machine is shared: CPU time says what the code cost)."""
    wall, cpu = [], []
    for item in inputs:
        start, start_cpu = time.perf_counter(), time.process_time()
        call(item)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    row(
        label,
        f"p50 {percentile(wall, 50):.{digits}f} ms   p95 {percentile(wall, 95):.{digits}f} ms   "
        f"(CPU p50 {percentile(cpu, 50):.{digits}f} ms, load {os.getloadavg()[0]:.1f})",
    )


def summary(times: list[float]) -> str:
    return (
        f"median {statistics.median(times):7.1f} ms   p95 {percentile(times, 95):7.1f} ms   (n={len(times)})"
    )
