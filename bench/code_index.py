"""Issue 4 benchmark: indexing the Python standard library, and freshness after a commit.

    python bench/code_index.py [--no-embed] [--memories 15000]

Copies the stdlib (~1,800 .py files) into a git repo under bench/.data, then prints:
chunking + BM25 time, embedding time and chunks/s, index size, peak RSS;
the time `git commit` takes with and without Lore's hooks; and the wall time
from `git commit` until the change is searchable (hook → background update).
With --memories N it also adds N memories (LoCoMo turns) so later benchmarks
(recall, MCP) have an index of ≥ 50k chunks; the project is left in place.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from _common import BENCH_DATA, WORK, children_peak_rss_mb, dir_size, jsonl, row, timed_cli

ROOT = WORK / "stdlib"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def copy_stdlib() -> None:
    src = Path(sysconfig.get_paths()["stdlib"])
    shutil.rmtree(ROOT, ignore_errors=True)
    shutil.copytree(
        src,
        ROOT,
        ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc", "*.so", "config-*"),
        symlinks=True,
    )
    subprocess.run(["git", "init", "-q"], cwd=ROOT, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ROOT, check=True)
    subprocess.run([*GIT, "commit", "-qm", "import the standard library"], cwd=ROOT, check=True)


def add_memories(n: int) -> None:
    from lore.memory import markdown
    from lore.memory.model import Memory, derive_keywords

    turns = jsonl(BENCH_DATA / "locomo/corpus_turns.jsonl")
    folder = ROOT / ".lore/memory"
    for i in range(n):
        t = turns[i % len(turns)]
        body = f"{t['speaker']}: {t['text']}" + (f" [{i // len(turns)}]" if i >= len(turns) else "") + "\n"
        title = " ".join(f"{t['speaker']}: {t['text'][:80]}".split())  # a title is one line
        m = Memory(
            title=title,
            body=body,
            tags=derive_keywords(title, body),
            occurred_at=f"2023-{1 + i % 12:02d}-{1 + i % 28:02d}T12:00:00Z",
        )
        markdown.write_new(folder, markdown.file_name(m), markdown.render(m))


def commit_times(n: int, touch: str) -> list[float]:
    times = []
    for i in range(n):
        with open(ROOT / touch, "a", encoding="utf-8") as handle:
            handle.write(f"# bench edit {i}\n")
        subprocess.run(["git", "add", touch], cwd=ROOT, check=True)
        start = time.perf_counter()
        subprocess.run([*GIT, "commit", "-qm", f"bench edit {i}"], cwd=ROOT, check=True)
        times.append((time.perf_counter() - start) * 1000)
        time.sleep(0.3)
    return times


def wait_idle(timeout: float = 600) -> None:
    """Until no background updater holds the lock."""
    import fcntl

    lock = ROOT / ".lore/local/update.lock"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not lock.exists():
            return
        with open(lock, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-embed", action="store_true")
    parser.add_argument("--memories", type=int, default=0)
    parser.add_argument("--reuse", action="store_true", help="keep an existing bench/.data/stdlib index")
    args = parser.parse_args()

    if not (args.reuse and (ROOT / ".lore/index.db").exists()):
        copy_stdlib()
        timed_cli(["init"], ROOT)
        if args.memories:
            add_memories(args.memories)
    files = sum(1 for _ in ROOT.rglob("*.py"))
    lines = sum(p.read_bytes().count(b"\n") for p in ROOT.rglob("*.py"))
    print(f"Lore code-index benchmark: {files} .py files, {lines:,} lines ({ROOT})")
    chunk, proc = timed_cli(["index", "--no-embed", "--json"], ROOT)
    row("chunking + BM25 (lore index --no-embed)", f"{chunk[0] / 1000:.1f} s")
    import json

    code = json.loads(proc.stdout)["code"]
    row("files processed / chunks", f"{code['files_processed']} / {code['chunks_created']}")
    row("peak RSS so far", f"{children_peak_rss_mb():.0f} MB")
    if not args.no_embed:
        import lore

        project = lore.open(ROOT)
        pending = project.embedding_status()["pending_embeddings"] or 0
        project.close()
        embed, _ = timed_cli(["index"], ROOT)
        row(
            "embedding (lore index)",
            f"{embed[0] / 1000:.0f} s for {pending} chunks = {pending / (embed[0] / 1000):.0f} chunks/s",
        )
        row("peak RSS (incl. embedding)", f"{children_peak_rss_mb():.0f} MB")
    row("index size on disk", f"{dir_size(ROOT / '.lore/index.db', 'index.db') / 1e6:.0f} MB")

    touch = "json/decoder.py"
    before = commit_times(5, touch)
    timed_cli(["hooks", "install"], ROOT)
    wait_idle()
    after = commit_times(10, touch)
    row("git commit without hooks", f"median {statistics.median(before):.1f} ms")
    row(
        "git commit with Lore's hooks",
        f"median {statistics.median(after):.1f} ms "
        f"(+{statistics.median(after) - statistics.median(before):.1f} ms)",
    )
    wait_idle()

    # Commit → searchable: add a function with a unique name, poll `lore code` (no auto-sync).
    config = ROOT / ".lore/config.toml"
    config.write_text(config.read_text().replace("[index]\n", "[index]\nauto_sync = false\n", 1))
    latencies = []
    for i in range(5):
        word = f"zebrafrobnicate{i}x"
        with open(ROOT / touch, "a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef {word}():\n    return {i}\n")
        subprocess.run(["git", "add", touch], cwd=ROOT, check=True)
        start = time.perf_counter()
        subprocess.run([*GIT, "commit", "-qm", f"add {word}"], cwd=ROOT, check=True)
        while True:
            out = subprocess.run(
                [sys.executable, "-P", "-m", "lore", "code", word, "--mode", "bm25", "--json"],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            if word in out.stdout:
                break
            if time.perf_counter() - start > 120:
                raise SystemExit("change never became searchable")
        latencies.append((time.perf_counter() - start) * 1000)
        wait_idle()
    row(
        "git commit → change searchable (BM25)",
        f"median {statistics.median(latencies):.0f} ms (min {min(latencies):.0f}, max {max(latencies):.0f})",
    )
    print("  (includes the polling `lore code` process itself, ~0.2 s each)")
    config.write_text(config.read_text().replace("auto_sync = false\n", ""))
    timed_cli(["hooks", "uninstall"], ROOT)


if __name__ == "__main__":
    main()
