"""Quality parity, sequential: the retrieval projects built by bench/retrieval.py
(SQLite) moved into one throwaway PostgreSQL (`copy_index`, the code path of
`lore db export/import`), then bench/retrieval.py run again on PostgreSQL.

    python bench/postgres_parity_seq.py [--work bench/.data]   # prints the PostgreSQL table
    python bench/postgres_parity_seq.py --flask    # gitlog-flask and timesplit-flask instead

Compare with `python bench/retrieval.py --sets locomo,cosqa --modes bm25,vector,hybrid`
(SQLite); with --flask, with `python bench/gitlog_flask.py` and `python bench/timesplit.py`
(their projects, built under $TMPDIR/lore-bench, are moved the same way). `bench/postgres.py parity` runs both side by side through a symlinked
work dir; there its PostgreSQL vector mode came back empty (not yet understood),
which this script avoids.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
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
    parser.add_argument("--flask", action="store_true", help="the two flask sets instead of LoCoMo and CoSQA")
    args = parser.parse_args()
    from lore.storage.postgres.local_server import start
    from postgres import move_to_postgres

    work = Path(args.work).resolve()
    server = start()
    try:
        url = server.create_database("parity", upgrade=True)
        if args.flask:
            outside = Path(tempfile.gettempdir()) / "lore-bench"
            roots = [p.parent.parent for p in outside.glob("*/*/.lore/.built")]
            roots += [p.parent.parent for p in outside.glob("*/.lore/.built")]
            jobs = [["gitlog_flask.py"], ["timesplit.py"]]
        else:
            roots = [p.parent for p in (work / "retrieval").glob("*/.built")]
            jobs = [["retrieval.py", "--sets", "locomo,cosqa", "--modes", "bm25,vector,hybrid"]]
        for root in roots:
            move_to_postgres(root, url)
        print(f"moved {len(roots)} projects into PostgreSQL", file=sys.stderr)
        env = {**os.environ, "LORE_BENCH_WORK": str(work), "LORE_DATABASE_URL": url}
        for script, *rest in jobs:
            subprocess.run([sys.executable, str(HERE / script), *rest], env=env, check=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
