"""Secret detection: recall on a generated corpus, false positives on real code, throughput.

    .venv/bin/python bench/secrets.py [--stdlib DIR] [--show N] [--detect-secrets]

1. Detection rate of `redact` (and of `mask_code` on the machine-made shapes)
   over the generated corpus (tests/secret_corpus.py: ≥150 samples, ≥30
   shapes), with the misses per shape; negatives that were changed.
2. False positives per 10k lines on the Python standard library's source
   (every *.py under DIR, tests included), for `mask_code` (target ≤ 1) and
   `redact`; every finding is printed with its line so it can be inspected.
3. Throughput (lines/s, CPU time) of `redact` and `mask_code` over the same
   files, and mask_code over the chunks Lore's chunker makes of them (how the
   code indexer will call it), against the 27 s the stdlib takes to index.
4. `redact` over real prose and snippets (LoCoMo conversations, CoSQA code)
   from the shared bench data, where there is nothing to redact.
5. With --detect-secrets (if installed): the same corpus and a sample of the
   stdlib through detect-secrets' plugins, for comparison.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from lore.secrets import mask_code, redact
from lore.secrets.scan import find
from secret_corpus import code_negatives, negatives, samples, shapes

INDEX_SECONDS = 27  # `lore index --no-embed` on the stdlib, docs/benchmarks.md


def detection(show: int) -> None:
    corpus = samples()
    print(f"corpus: {len(corpus)} samples, {len(shapes(corpus))} shapes (seeded generator)")
    missed: Counter = Counter()
    total: Counter = Counter()
    code_missed: Counter = Counter()
    code_total = 0
    examples: list[str] = []
    for sample in corpus:
        total[sample.shape] += 1
        clean, found = redact(sample.text)
        ok = (
            bool(found)
            and not any(s in clean for s in sample.secrets)
            and all(k in clean for k in sample.keep)
        )
        if not ok:
            missed[sample.shape] += 1
            examples.append(f"  {sample.shape}: {sample.text[:100]!r} -> {clean[:100]!r}")
        if sample.code:
            code_total += 1
            masked, _ = mask_code(sample.text)
            if any(s in masked for s in sample.secrets):
                code_missed[sample.shape] += 1
    caught = len(corpus) - sum(missed.values())
    print(f"redact detection:    {caught}/{len(corpus)} = {100 * caught / len(corpus):.1f}%  (target >= 95%)")
    shape_misses = ", ".join(f"{shape} {n}/{total[shape]}" for shape, n in sorted(missed.items())) or "none"
    print(f"  misses per shape: {shape_misses}")
    for line in examples[:show]:
        print(line)
    code_caught = code_total - sum(code_missed.values())
    print(
        f"mask_code detection: {code_caught}/{code_total} = {100 * code_caught / code_total:.1f}% "
        "(machine-made shapes only)"
    )
    code_shape_misses = ", ".join(f"{s} {n}" for s, n in sorted(code_missed.items())) or "none"
    print(f"  misses per shape: {code_shape_misses}")
    changed = [text for text in negatives() if redact(text)[0] != text]
    code_changed = [text for text in code_negatives() if mask_code(text)[1]]
    print(
        f"negatives changed:   redact {len(changed)}/{len(negatives())}, "
        f"mask_code {len(code_changed)}/{len(code_negatives())}"
    )
    for text in changed + code_changed:
        print(f"  changed: {text[:100]!r}")


def _files(root: Path) -> list[tuple[Path, str]]:
    out = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            out.append((path, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return out


def false_positives(root: Path, show: int) -> None:
    files = _files(root)
    n_lines = sum(text.count("\n") + 1 for _, text in files)
    print(f"\nstdlib: {root} — {len(files)} files, {n_lines:,} lines (tests and data included)")
    for label, strict in (("mask_code", True), ("redact", False)):
        hits: list[str] = []
        kinds: Counter = Counter()
        for path, text in files:
            for finding in find(text, strict=strict):
                kinds[finding.kind] += 1
                line_no = text.count("\n", 0, finding.start) + 1
                line = text.splitlines()[line_no - 1].strip() if text else ""
                hits.append(f"  {path.relative_to(root)}:{line_no} [{finding.kind}] {line[:110]}")
        per_10k = len(hits) / n_lines * 10_000
        target = "  (target <= 1)" if strict else ""
        print(f"{label:9s} findings: {len(hits)} = {per_10k:.2f} per 10k lines{target}")
        print(f"  by kind: {dict(kinds.most_common())}")
        for line in hits[:show]:
            print(line)
        if len(hits) > show:
            print(f"  ... {len(hits) - show} more")


def prose_false_positives(show: int) -> None:
    """`redact` over real conversations (LoCoMo) and code snippets (CoSQA): nothing to find."""
    import json

    from _common import BENCH_DATA

    texts: list[tuple[str, str]] = []
    for name in ("locomo/corpus_turns.jsonl", "locomo/corpus_sessions.jsonl", "cosqa/corpus.jsonl"):
        path = BENCH_DATA / name
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                texts.extend((name, v) for v in row.values() if isinstance(v, str) and len(v) > 20)
    if not texts:
        print(f"\nprose: no bench data under {BENCH_DATA}: skipped")
        return
    hits = [(name, text) for name, text in texts if redact(text)[1]]
    n_lines = sum(text.count("\n") + 1 for _, text in texts)
    print(
        f"\nprose and snippets: {len(texts):,} texts ({n_lines:,} lines) from LoCoMo and CoSQA: "
        f"redact changed {len(hits)}"
    )
    for name, text in hits[:show]:
        print(f"  {name}: {redact(text)[0][:140]!r}")


def _timed(fn, inputs) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of fn over inputs. CPU time is what counts on a shared machine."""
    cpu, wall = time.process_time(), time.perf_counter()
    for item in inputs:
        fn(item)
    return time.process_time() - cpu, time.perf_counter() - wall


def throughput(root: Path) -> None:
    from lore.index.chunker import chunk_file

    files = _files(root)
    texts = [text for _, text in files]
    n_lines = sum(text.count("\n") + 1 for text in texts)
    cpu, wall = time.process_time(), time.perf_counter()
    chunks = [c.text for path, text in files for c in chunk_file(str(path), text)]
    chunk_cpu, chunk_wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"\nthroughput over {n_lines:,} lines ({len(chunks):,} chunks from lore's chunker):")
    print(f"  {'chunk_file (reference)':24s} {chunk_cpu:6.2f} s CPU {chunk_wall:6.2f} s wall")
    results = {}
    for label, fn, inputs in (
        ("mask_code per chunk", mask_code, chunks),
        ("mask_code per file", mask_code, texts),
        ("redact per file", redact, texts),
    ):
        seconds, wall_seconds = _timed(fn, inputs)
        results[label] = seconds
        print(
            f"  {label:24s} {seconds:6.2f} s CPU {wall_seconds:6.2f} s wall "
            f"{n_lines / seconds:>12,.0f} lines/s (CPU)"
        )
    share = results["mask_code per chunk"] / INDEX_SECONDS * 100
    print(
        f"  mask_code on every chunk adds {results['mask_code per chunk']:.2f} s CPU = {share:.1f}% of the "
        f"{INDEX_SECONDS} s stdlib index (docs/benchmarks.md, chunking + BM25)"
    )


def detect_secrets_comparison(root: Path) -> None:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import default_settings
    except ImportError:
        print("\ndetect-secrets not installed (pip install detect-secrets): comparison skipped")
        return
    with default_settings():
        plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]

        def secrets_in(text: str) -> set[str]:
            found: set[str] = set()
            for number, line in enumerate(text.splitlines(), 1):
                for plugin in plugins:
                    try:
                        found.update(s.secret_value or "" for s in plugin.analyze_line("x.env", line, number))
                    except Exception:  # a plugin failing on odd input counts as nothing found
                        continue
            return found

        corpus = samples()
        caught = 0
        for sample in corpus:
            found = secrets_in(sample.text)
            caught += all(any(secret in f or f in secret for f in found if f) for secret in sample.secrets)
        print(f"\ndetect-secrets 1.x, all {len(plugins)} plugins, same corpus: {caught}/{len(corpus)} caught")
        files = _files(root)[:200]
        lines = sum(text.count("\n") + 1 for _, text in files)
        start = time.perf_counter()
        hits = sum(len(secrets_in(text)) for _, text in files)
        seconds = time.perf_counter() - start
        print(
            f"detect-secrets on {lines:,} stdlib lines: {hits} findings = {hits / lines * 10_000:.1f} per 10k lines, "
            f"{lines / seconds:,.0f} lines/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--show", type=int, default=60, help="findings and misses to print")
    parser.add_argument("--detect-secrets", action="store_true", help="compare with detect-secrets' plugins")
    args = parser.parse_args()
    detection(args.show)
    false_positives(args.stdlib, args.show)
    prose_false_positives(args.show)
    throughput(args.stdlib)
    if args.detect_secrets:
        detect_secrets_comparison(args.stdlib)


if __name__ == "__main__":
    main()
