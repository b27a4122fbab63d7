"""Quality parity, sequential: the retrieval projects built by bench/retrieval.py
(SQLite) moved into one throwaway PostgreSQL (`copy_index`, the code path of
`lore db export/import`), then bench/retrieval.py run again on PostgreSQL.

    python bench/postgres_parity_seq.py [--work bench/.data]   # prints the PostgreSQL table

Compare with `python bench/retrieval.py --sets locomo,cosqa --modes bm25,vector,hybrid`
(SQLite). `bench/postgres.py parity` runs both side by side through a symlinked
work dir; there its PostgreSQL vector mode came back empty (not yet understood),
which this script avoids.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# bench/ holds a secrets.py that would shadow the standard library's: load the real one first.
_bench = sys.path.pop(0)
import secrets  # noqa: F401

sys.path.insert(0, _bench)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", default=str(HERE / ".data"))
    args = parser.parse_args()
    from lore.storage.postgres.local_server import start
    from postgres import move_to_postgres

    work = Path(args.work).resolve()
    server = start()
    try:
        url = server.create_database("parity", upgrade=True)
        roots = [p.parent for p in (work / "retrieval").glob("*/.built")]
        for root in roots:
            move_to_postgres(root, url)
        print(f"moved {len(roots)} projects into PostgreSQL", file=sys.stderr)
        env = {**os.environ, "LORE_BENCH_WORK": str(work), "LORE_DATABASE_URL": url}
        subprocess.run(
            [
                sys.executable,
                str(HERE / "retrieval.py"),
                "--sets",
                "locomo,cosqa",
                "--modes",
                "bm25,vector,hybrid",
            ],
            env=env,
            check=True,
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
