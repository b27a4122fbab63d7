"""`lore recall` of a task whose description is a long paste (a log, a spec).

    python bench/long_task.py --project <an indexed clone> [--sizes 2000,124000,750000]

An agent may hand recall_context a description of up to 1,000,000 characters.
Prints the in-process recall time (median of 3) for descriptions of distinct
random words of each size, after one warm-up recall.
"""

from __future__ import annotations

import argparse
import random
import string
import time

from _common import row


def paste(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < size:
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10)))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", required=True)
    parser.add_argument("--sizes", default="2000,124000,750000")
    args = parser.parse_args()
    import lore

    project = lore.open(args.project)
    project.recall("warm up the model and matrices", fresh=False)
    for size in (int(s) for s in args.sizes.split(",")):
        description = paste(size)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            project.recall("Fix the parser", description=description, fresh=False)
            times.append((time.perf_counter() - start) * 1000)
        row(f"recall, description of {size:,} characters", f"median {sorted(times)[1]:.0f} ms")
    project.close()


if __name__ == "__main__":
    main()
