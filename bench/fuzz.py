"""The long fuzz run: 100,000+ generated inputs through the real code.

    .venv/bin/python bench/fuzz.py                     # ~100k inputs (defaults below)
    .venv/bin/python bench/fuzz.py --scale 0.1 --seed 7

Families (the same generators and checks as tests/test_fuzz_*.py, see
tests/fuzzing.py): memory files on disk (parse + validate, and a file that
reads fine must be written back exactly), generated memories through
render_checked (legal ones must round-trip exactly; anything else is written
exactly or refused), `Lore.add` through the Python API on a real project
(stored = shown = given, nothing else touched), CLI argument vectors through
`lore.interfaces.cli.main` in process, and generated files synced into a real
project (parse + index + anchors, end to end).

Prints counts: inputs, tracebacks by cause, round-trip mismatches by field.
Causes listed in tests/fuzzing.py's KNOWN_OUTSIDE_SCOPE (empty now) are
counted as tracebacks too, and marked as such. Exit status 1 if any traceback or
mismatch was seen.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# bench/ holds a secrets.py that would shadow the standard library's `secrets`
# (used by Lore) when this script's folder is first on sys.path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent / "tests"))

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import fuzzing

DEFAULTS = {  # inputs per family at --scale 1
    "memory files": 40_000,
    "round trip (legal)": 20_000,
    "round trip (any)": 10_000,
    "add (Python API)": 15_000,
    "CLI vectors": 15_000,
    "files synced into a project": 2_000,
}


class Tally:
    def __init__(self) -> None:
        self.inputs: Counter = Counter()
        self.tracebacks: Counter = Counter()  # (family, cause)
        self.mismatches: Counter = Counter()  # (family, field)
        self.other: Counter = Counter()  # (family, problem) e.g. multi-line messages
        self.examples: dict = {}

    def record(self, family: str, problem: str | None, example) -> None:
        self.inputs[family] += 1
        if problem is None:
            return
        if problem.startswith("mismatch:"):
            key = (family, problem.removeprefix("mismatch:"))
            self.mismatches[key] += 1
        elif " at " in problem or problem.startswith(("internal", "traceback", "exit code")):
            key = (family, problem)
            self.tracebacks[key] += 1
        else:
            key = (family, problem)
            self.other[key] += 1
        self.examples.setdefault(key, repr(example)[:300])


def run_family(name: str, strategy, check, count: int, tally: Tally, run_seed: int) -> None:
    if count <= 0:
        return

    @seed(run_seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def fuzz(example):
        tally.record(name, check(example), example)

    started = time.perf_counter()
    fuzz()
    print(f"  {name:30} {tally.inputs[name]:>8,} inputs  {time.perf_counter() - started:7.1f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every family's count")
    parser.add_argument("--seed", type=int, default=20260211)
    args = parser.parse_args()
    counts = {name: int(n * args.scale) for name, n in DEFAULTS.items()}
    tally = Tally()
    started = time.perf_counter()
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    os.environ.setdefault("GIT_CONFIG_GLOBAL", os.devnull)
    for role in ("AUTHOR", "COMMITTER"):
        os.environ.setdefault(f"GIT_{role}_NAME", "Fuzz")
        os.environ.setdefault(f"GIT_{role}_EMAIL", "fuzz@example.com")
    os.environ["EDITOR"] = os.environ["VISUAL"] = "true"
    print(f"lore fuzz, seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="lore-fuzz-") as tmp:
        tmp_path = Path(tmp)
        os.environ["HOME"] = str(tmp_path)  # installers and caches stay in here

        run_family(
            "memory files",
            fuzzing.memory_file_bytes(),
            fuzzing.check_parse,
            counts["memory files"],
            tally,
            args.seed,
        )
        run_family(
            "round trip (legal)",
            fuzzing.legal_memories,
            lambda m: fuzzing.check_round_trip(m, strict=True),
            counts["round trip (legal)"],
            tally,
            args.seed,
        )
        run_family(
            "round trip (any)",
            fuzzing.any_memories(),
            lambda m: fuzzing.check_round_trip(m, strict=False),
            counts["round trip (any)"],
            tally,
            args.seed,
        )

        import lore

        fuzzing.fuzz_project(tmp_path / "add", git=False)
        with lore.open(tmp_path / "add") as api:
            run_family(
                "add (Python API)",
                fuzzing.add_inputs(),
                lambda kwargs: fuzzing.check_add(api, kwargs),
                counts["add (Python API)"],
                tally,
                args.seed,
            )

        from lore.interfaces.cli import cli

        cli_root = tmp_path / "cli"
        paths = fuzzing.fuzz_project(cli_root, git=True)
        os.chdir(cli_root)
        run_family(
            "CLI vectors",
            st.tuples(fuzzing.cli_argvs(cli, paths), st.binary(max_size=200)),
            lambda case: fuzzing.check_cli(fuzzing.run_cli(["--project", str(cli_root), *case[0]], case[1])),
            counts["CLI vectors"],
            tally,
            args.seed,
        )
        os.chdir(tmp_path)

        sync_root = tmp_path / "sync"
        fuzzing.fuzz_project(sync_root, git=False)
        with lore.open(sync_root) as synced:
            run_family(
                "files synced into a project",
                fuzzing.memory_file_bytes(),
                lambda raw: check_synced(synced, raw),
                counts["files synced into a project"],
                tally,
                args.seed,
            )
    elapsed = time.perf_counter() - started
    return report(tally, elapsed)


def check_synced(api, raw: bytes) -> str | None:
    """Write the bytes as a memory file of a real project, then sync and list:
    the file is indexed or reported, never a crash, and other memories stay."""
    path = api.project.memory_dir / "fuzzed.md"
    path.write_bytes(raw)
    os.utime(path, ns=(time.time_ns(), time.time_ns()))  # always seen as changed
    try:
        api.sync()
        listed = api.list(limit=50)
    except Exception as err:
        return fuzzing.cause(err)
    finally:
        path.unlink()
    if not any(row["title"] == "Use UTC" for row in listed):
        return "other memories lost"
    return None


def report(tally: Tally, elapsed: float) -> int:
    total = sum(tally.inputs.values())
    tracebacks = sum(tally.tracebacks.values())
    mismatches = sum(tally.mismatches.values())
    print(f"\ninputs: {total:,} in {elapsed:.0f} s")
    print(f"tracebacks: {tracebacks}")
    for (family, cause), n in tally.tracebacks.most_common():
        known = fuzzing.KNOWN_OUTSIDE_SCOPE.get(cause)
        print(f"  {n:>6}  {family}: {cause}" + (f"   [outside scope: {known}]" if known else ""))
        print(f"          e.g. {tally.examples[(family, cause)]}")
    print(f"round-trip mismatches: {mismatches}")
    for (family, field), n in tally.mismatches.most_common():
        print(f"  {n:>6}  {family}: {field}")
        print(f"          e.g. {tally.examples[(family, field)]}")
    if tally.other:
        print(f"other problems: {sum(tally.other.values())}")
        for (family, problem), n in tally.other.most_common():
            print(f"  {n:>6}  {family}: {problem}")
            print(f"          e.g. {tally.examples[(family, problem)]}")
    return 1 if tracebacks or mismatches or tally.other else 0


if __name__ == "__main__":
    sys.exit(main())
