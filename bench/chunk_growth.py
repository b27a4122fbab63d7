"""How chunking time grows with a Markdown file's headings (the many-headings case).

    python bench/chunk_growth.py [--sizes 10000,20000,40000,80000,160000,200000]

Each heading's section was once found by slicing the list of headings below
it, which made a file of 200,000 headings (800 KB, under the default 1 MB
file limit) take minutes to chunk. Prints, per size, the best of three wall
and CPU times of `chunk_file` and the CPU time's growth from the size before:
about 2x per doubling is linear, about 4x quadratic. (A test cannot assert
this: on a shared machine even the ratio of two timings varies by 4x.)
"""

from __future__ import annotations

import argparse
import time

from _common import row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,20000,40000,80000,160000,200000")
    args = parser.parse_args()
    from lore.index.chunker import chunk_file

    previous: tuple[int, float] | None = None
    for n in (int(s) for s in args.sizes.split(",")):
        text, wall, cpu = "# h\n" * n, [], []
        for _ in range(3):
            start, start_cpu = time.perf_counter(), time.process_time()
            chunks = chunk_file("notes.md", text)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        growth = f"   x{min(cpu) / previous[1]:.1f} for x{n / previous[0]:.1f} headings" if previous else ""
        row(
            f"{n:,} headings ({len(chunks):,} chunks)",
            f"wall {min(wall):.2f} s   CPU {min(cpu):.2f} s{growth}",
        )
        previous = (n, min(cpu))


if __name__ == "__main__":
    main()
