"""Package-level import graph and module sizes of src/lore at a git revision.

    python scripts/import_graph.py [REV]     # default HEAD

Prints the module count, line count and largest modules, then each
package -> package edge with how many imports make it (issue 12's evidence).
"""

from __future__ import annotations

import ast
import collections
import subprocess
import sys


def package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lore"


def main(rev: str) -> None:
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "src/lore"], capture_output=True, text=True, check=True
    )
    files = [f for f in listing.stdout.split() if f.endswith(".py")]
    edges: collections.Counter[tuple[str, str]] = collections.Counter()
    sizes = []
    for path in files:
        source = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True).stdout
        module = path[len("src/") : -len(".py")].replace("/", ".").removesuffix(".__init__")
        sizes.append((source.count("\n"), path[len("src/lore/") :]))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        here = package(module)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lore"):
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("lore")]
            for name in names:
                if package(name) != here:
                    edges[(here, package(name))] += 1
    sizes.sort(reverse=True)
    largest = ", ".join(f"{name} {lines}" for lines, name in sizes[:6])
    print(f"{len(files)} modules, {sum(lines for lines, _ in sizes)} lines; largest: {largest}")
    print(f"{len(edges)} package edges:")
    for (a, b), count in sorted(edges.items()):
        print(f"  {a} -> {b}: {count}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "HEAD")
