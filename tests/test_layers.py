"""The import graph keeps the architecture (issue 12): layers call downward
only, and no module imports another module's private names.

    interfaces, integrations → service, health, jobs → search, memory, sessions
    → index, embed → storage → base helpers (errors, records, project, ...)

Checked on the source with `ast`, imports inside functions included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

SRC = Path(__file__).resolve().parents[1] / "src" / "lore"

LEVELS = {
    "errors": 0,
    "safe_read": 0,
    "filenames": 0,
    "records": 0,
    "project": 0,
    "settings": 0,
    "locking": 0,
    "secrets": 0,
    "http_post": 0,
    "atomic": 0,
    "storage": 1,
    "index": 2,
    "embed": 2,
    "memory": 3,
    "search": 3,
    "sessions": 3,
    "health": 4,
    "jobs": 4,
    "service": 4,
    "interfaces": 5,
    "integrations": 5,
    "__main__": 5,
}


def part_of(module: str) -> str:
    """`lore.search.hybrid` → `search`; `lore` (the package) → `lore`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


PACKAGES: set[str] = set()  # the modules that are packages (their __init__.py)


def modules() -> dict[str, ast.Module]:
    found = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        if path.name == "__init__.py":
            PACKAGES.add(name)
        found[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return found


def imports(tree: ast.Module, module: str) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every import in `tree`: relative ones
    resolved (from a package's __init__, `.` is the package itself), and a
    module imported from a package (`from lore import service`) as that module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                package = parts[: len(parts) - node.level + (module in PACKAGES)]
                base = ".".join([*package, base] if base else package)
            names = [alias.name for alias in node.names]
            submodules = [
                n
                for n in names
                if (SRC.parent / base.replace(".", "/") / n).with_suffix(".py").exists()
                or (SRC.parent / base.replace(".", "/") / n / "__init__.py").exists()
            ]
            out += [(f"{base}.{n}", []) for n in submodules]
            if len(submodules) < len(names):
                out.append((base, [n for n in names if n not in submodules]))
    return out


def test_imports_are_read_as_python_resolves_them():
    """The checks below see `from lore import service` as lore.service, and a
    package's relative imports from the package itself (a review found both
    read wrongly: `from . import scan` in lore.secrets read as `lore`)."""
    modules()
    tree = ast.parse("from lore import service\nfrom . import scan\nfrom .keys import words\n")
    assert imports(tree, "lore.secrets") == [
        ("lore.service", []),
        ("lore.secrets.scan", []),
        ("lore.secrets.keys", ["words"]),
    ]
    assert imports(ast.parse("from . import keys\n"), "lore.secrets.scan") == [("lore.secrets.keys", [])]


def test_layers_call_downward_only():
    wrong = []
    for module, tree in modules().items():
        mine = part_of(module)
        if mine == "lore":
            continue  # the package's __init__ re-exports the public API lazily
        level = LEVELS[mine]
        for target, _names in imports(tree, module):
            if not target.startswith("lore.") or part_of(target) == mine:
                continue
            theirs = part_of(target)
            if LEVELS.get(theirs, 0) > level:
                wrong.append(f"{module} ({mine}, level {level}) imports {target} (level {LEVELS[theirs]})")
    assert wrong == []


def test_no_module_imports_another_modules_private_names():
    wrong = []
    all_modules = modules()
    for module, tree in all_modules.items():
        for target, names in imports(tree, module):
            if not target.startswith("lore."):
                continue
            same_package = (
                target.rsplit(".", 1)[0] == module.rsplit(".", 1)[0]
                or module.startswith(target + ".")
                or target.startswith(module)
            )
            for name in names:
                private = name.startswith("_") and not name.startswith("__")
                if private and not same_package:
                    wrong.append(f"{module} imports {target}.{name}")
            if (
                target.split(".")[-1].startswith("_")
                and not same_package
                and part_of(target) != part_of(module)
            ):
                wrong.append(f"{module} imports the private module {target}")
    assert wrong == []
