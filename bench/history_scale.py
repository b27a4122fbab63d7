"""Issue 10 benchmark: walking all of history with paths mapped to HEAD.

    python bench/history_scale.py [--commits 20000] [--repo PATH ...]

Builds a synthetic repository in a temp dir with `git fast-import`: N
commits: a main line and pull-request branches merged back (about one
commit in eight is a merge), with edits, adds, deletes, renames (some edited
in the same commit), directory moves (one file of each heavily rewritten,
so git reports it as delete + add) and a few mass-reformatting commits.
Then times `walk_history` over all of it (git's work and Lore's parsing and
path mapping), adds 100 commits (with renames) and times the incremental walk
from the old HEAD. `--repo` also times full walks of existing clones (e.g.
the timesplit-flask snapshot unpacked in a temp dir).

Each walk runs in a fresh Python process, with and without the merges'
renames (`merge_renames=False`); prints commits/s, wall seconds, changed
paths, how many resolve to a path at HEAD, CPU seconds and peak RSS of that
process and of its git children. The machine's other load shows in wall
time, not in CPU time.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import children_peak_rss_mb, self_peak_rss_mb
from lore.index.githistory import walk_history

LINES_PER_FILE = 24


class SyntheticHistory:
    """Writes a fast-import stream of a plausible project history."""

    def __init__(self, seed: int = 7, files: int = 3000, dirs: int = 150):
        self.rng = random.Random(seed)
        self.files: dict[str, list[str]] = {}
        self.mark = 0
        self.time = 1_500_000_000
        self.tip: str | None = None  # mark (":N") or sha of main's tip
        self.commits = 0
        self.next_file = 0
        self.dirs = [f"pkg{d}/sub{d % 7}" for d in range(dirs)]
        self.initial = files

    # -- stream pieces ------------------------------------------------------------

    def _new_content(self, path: str) -> list[str]:
        return [f"# {path} line {k}: {self.rng.random():.6f}\n" for k in range(LINES_PER_FILE)]

    def _blob(self, out: list[bytes], path: str, content: list[str]) -> None:
        data = "".join(content).encode()
        out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")

    def _commit(self, out: list[bytes], message: str, parent: str | None, merge: str | None = None) -> str:
        self.mark += 1
        self.time += self.rng.randint(60, 7200)
        self.commits += 1
        msg = message.encode()
        out.append(
            f"commit refs/heads/main\nmark :{self.mark}\n"
            f"author Dev <dev@example.com> {self.time} +0000\n"
            f"committer Dev <dev@example.com> {self.time} +0000\n"
            f"data {len(msg)}\n".encode()
            + msg
            + b"\n"
        )
        if parent:
            out.append(f"from {parent}\n".encode())
        if merge:
            out.append(f"merge {merge}\n".encode())
        return f":{self.mark}"

    def _path(self) -> str:
        self.next_file += 1
        return f"{self.rng.choice(self.dirs)}/m{self.next_file}.py"

    # -- changes on a tree (dict path -> lines) ----------------------------------

    def _edit(self, tree: dict[str, list[str]], out: list[bytes], n: int) -> None:
        for path in self.rng.sample(sorted(tree), min(n, len(tree))):
            content = list(tree[path])
            content[self.rng.randrange(LINES_PER_FILE)] = f"edited {self.commits} {self.rng.random()}\n"
            tree[path] = content
            self._blob(out, path, content)

    def _change(self, tree: dict[str, list[str]], out: list[bytes]) -> str:
        roll = self.rng.random()
        if roll < 0.06:
            path = self._path()
            tree[path] = self._new_content(path)
            self._blob(out, path, tree[path])
            return f"Add {path.rsplit('/', 1)[-1]}"
        if roll < 0.10 and len(tree) > 100:
            path = self.rng.choice(sorted(tree))
            del tree[path]
            out.append(f"D {path}\n".encode())
            return f"Remove {path}"
        if roll < 0.15:
            old = self.rng.choice(sorted(tree))
            new = self._path()
            tree[new] = tree.pop(old)
            out.append(f"R {old} {new}\n".encode())
            if self.rng.random() < 0.5:
                self._edit({new: tree[new]}, out, 1)
            return f"Move {old} to {new}"
        self._edit(tree, out, self.rng.randint(1, 4))
        return f"Fix behaviour number {self.commits} in the module"

    def _directory_move(self, tree: dict[str, list[str]], out: list[bytes]) -> None:
        old_dir = self.rng.choice(self.dirs)
        new_dir = old_dir.replace("pkg", "lib", 1) + f"v{self.commits}"
        self.dirs[self.dirs.index(old_dir)] = new_dir
        moved = [p for p in sorted(tree) if p.startswith(old_dir + "/")]
        for i, path in enumerate(moved):
            target = new_dir + path[len(old_dir) :]
            content = tree.pop(path)
            if i == 0:  # rewritten while moved: git sees delete + add
                content = self._new_content(target)
                out.append(f"D {path}\n".encode())
                self._blob(out, target, content)
            else:
                out.append(f"R {path} {target}\n".encode())
            tree[target] = content

    # -- history ------------------------------------------------------------------

    def stream(self, n_commits: int) -> bytes:
        """The fast-import stream of the next `n_commits` commits (or so) on main."""
        out: list[bytes] = []
        if self.tip is None:
            for _ in range(self.initial):
                path = self._path()
                self.files[path] = self._new_content(path)
            self.tip = self._commit(out, "Initial import", None)
            for path in sorted(self.files):
                self._blob(out, path, self.files[path])
        target = self.commits + n_commits
        while self.commits < target:
            roll = self.rng.random()
            if roll < 0.25 and target - self.commits > 8:
                self._pull_request(out)
            elif roll < 0.2515:
                self.tip = self._commit(out, "Reformat everything", self.tip)
                self._edit(self.files, out, 500)
            elif roll < 0.253:
                self.tip = self._commit(out, "Move a package", self.tip)
                self._directory_move(self.files, out)
            else:
                message_out: list[bytes] = []
                message = self._change(self.files, message_out)
                self.tip = self._commit(out, message, self.tip)
                out.extend(message_out)
        return b"".join(out)

    def _pull_request(self, out: list[bytes]) -> None:
        """A branch of 1-4 commits merged back while main moves on (edits only)."""
        fork_tree = dict(self.files)
        side = dict(fork_tree)  # edits replace a file's list, never mutate it
        side_tip = self.tip
        for _ in range(self.rng.randint(1, 4)):
            ops: list[bytes] = []
            message = self._change(side, ops)
            side_tip = self._commit(out, message, side_tip)
            out.extend(ops)
            if self.rng.random() < 0.5:
                self.tip = self._commit(out, f"Main line fix {self.commits}", self.tip)
                self._edit(self.files, out, 1)
        # The merge: main's tree with the branch's changes (the branch wins).
        self.tip = self._commit(out, f"Merge pull request #{self.commits} from dev/topic", self.tip, side_tip)
        for path in sorted(set(fork_tree) | set(side)):
            if side.get(path) is fork_tree.get(path):
                continue
            if path not in side:
                if self.files.pop(path, None) is not None:
                    out.append(f"D {path}\n".encode())
            else:
                self.files[path] = side[path]
                self._blob(out, path, side[path])


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=True)
    return result.stdout.decode().strip()


def timed_walk(root: Path, since: str | None = None, merge_renames: bool = True) -> dict:
    """Walk `root` in a fresh Python process (so its peak RSS is the walk's alone)."""
    options = (["--since", since] if since else []) + ([] if merge_renames else ["--no-merge-renames"])
    return json.loads(run_self("--walk", str(root), *options))


def walk_figures(root: Path, since: str | None, merge_renames: bool) -> dict:
    start = time.perf_counter()
    commits = changed = resolved = 0
    with walk_history(root, since=since, merge_renames=merge_renames) as walk:
        for commit in walk:
            commits += 1
            changed += commit.n_files
            resolved += sum(1 for p in commit.head_paths if p is not None)
        moved = walk.moved() if walk.incremental else {}
    seconds = time.perf_counter() - start
    return {
        "commits": commits,
        "seconds": seconds,
        "per_second": commits / seconds if seconds else 0.0,
        "changed": changed,
        "resolved": resolved,
        "moved": len(moved),
        "incremental": walk.incremental,
        "rss_mb": peak_rss_mb(),
        "git_rss_mb": children_peak_rss_mb(),
        "cpu_s": cpu_seconds(resource.RUSAGE_SELF),
        "git_cpu_s": cpu_seconds(resource.RUSAGE_CHILDREN),
    }


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM starts afresh at exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return self_peak_rss_mb()


def build(repo: Path, state: Path, commits: int) -> None:
    """Add `commits` synthetic commits to `repo` (state kept in `state` between calls)."""
    if state.exists():
        history = pickle.loads(state.read_bytes())
        history.tip = git(repo, "rev-parse", "HEAD")
    else:
        history = SyntheticHistory()
    git(repo, "fast-import", "--quiet", "--force", data=history.stream(commits))
    state.write_bytes(pickle.dumps(history))


def run_self(*args: str) -> str:
    """This script in a fresh process: the generator's memory never inflates
    the walk's peak RSS figures (ru_maxrss is inherited through fork)."""
    result = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return result.stdout


def report(label: str, figures: dict) -> None:
    print(
        f"{label:<32} {figures['commits']:>7,} commits {figures['seconds']:>6.2f} s "
        f"{figures['per_second']:>7,.0f} commits/s {figures['changed']:>7,} changed paths, "
        f"{figures['resolved']:>7,} at HEAD"
        + (f", {figures['moved']} moved" if figures["incremental"] else "")
        + f"; CPU {figures['cpu_s']:.1f} s (git {figures['git_cpu_s']:.1f} s)"
        + f"; peak RSS {figures['rss_mb']:.0f} MB (git {figures['git_rss_mb']:.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commits", type=int, default=20000)
    parser.add_argument("--repo", action="append", default=[], help="also walk this existing clone")
    parser.add_argument("--walk", help=argparse.SUPPRESS)  # internal: one measured walk
    parser.add_argument("--since", help=argparse.SUPPRESS)
    parser.add_argument("--no-merge-renames", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build", nargs=2, help=argparse.SUPPRESS)  # internal: REPO STATE
    args = parser.parse_args()
    if args.walk:
        print(json.dumps(walk_figures(Path(args.walk), args.since, not args.no_merge_renames)))
        return
    if args.build:
        build(Path(args.build[0]), Path(args.build[1]), args.commits)
        return

    with tempfile.TemporaryDirectory(prefix="lore-history-") as tmp:
        repo = Path(tmp) / "synthetic"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        state = Path(tmp) / "generator.pickle"
        start = time.perf_counter()
        run_self("--build", str(repo), str(state), "--commits", str(args.commits))
        built = time.perf_counter() - start
        merges = int(git(repo, "rev-list", "--merges", "--count", "HEAD"))
        total = int(git(repo, "rev-list", "--count", "HEAD"))
        print(f"synthetic repository: {total:,} commits ({merges:,} merges), built in {built:.1f} s")

        report("full walk", timed_walk(repo))
        report("  without merge renames", timed_walk(repo, merge_renames=False))
        old_head = git(repo, "rev-parse", "HEAD")
        run_self("--build", str(repo), str(state), "--commits", "100")
        report("incremental walk (+100 commits)", timed_walk(repo, since=old_head))

    for path in args.repo:
        report(f"full walk of {Path(path).name}", timed_walk(Path(path)))
        report("  without merge renames", timed_walk(Path(path), merge_renames=False))


if __name__ == "__main__":
    main()
