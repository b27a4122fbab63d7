"""Issue 14 benchmark: is the session-start pack worth its tokens?

    python bench/start_pack.py [--model] [--keep DIR]

On real repositories with realistic seeded memories, measures the pack the
SessionStart hook injects (``Lore.start(fresh=False)``, exactly what
`lore hook session-start` prints) and, for comparison, the pack the hook
injected before issue 14 (a recall for the branch's title, or for "project
conventions decisions gotchas" on the default branch).

Repositories (each copied into a temp dir; nothing outside it is touched):

- **flask**: the pinned snapshot in
  ``$LORE_BENCH_DATA/timesplit-flask/flask-*.tar.gz`` (3,600+ commits;
  LICENSE, CODE_OF_CONDUCT, CONTRIBUTING, CHANGES, docs/);
- **lore**: this repository, cloned at its ``main`` branch (README, docs/);
- **click**: built here: the installed ``click`` package's sources as
  ``src/click/`` in a new git repository with a short history, plus a
  LICENSE, CODE_OF_CONDUCT, CONTRIBUTING, CHANGES and docs/.

Each gets ~12 memories written as a team would (recent decisions, gotchas
and conventions about its real modules, some scoped to files or areas, a
superseded decision, two old memories, two session captures). Scenarios per
repository: the default branch, clean; a feature branch with a commit that
changes a source file and a community/changelog file, plus an uncommitted
edit; and a clone with no memories at all (which must inject nothing).

**Project-specific**, precisely: a token of the injected text is
project-specific when it belongs to an item derived from this project's own
state: one of its memories (not a session-tier capture), the current
branch/task line, or a file, code snippet, changed-area line or past commit
whose paths all have a non-generic role (``lore.index.roles.file_role`` is
not community, docs, changelog, generated or vendored). Every other token is
not: items from generic files (licence, code of conduct, contributing guide,
changelog, docs), session chatter, and the pack's own framing (headings,
query line, blank lines). So the share is conservative: project-specific
tokens / all tokens of the injected text (cl100k when ``bpe-openai`` is
installed, else Lore's calibrated estimate).

Prints per scenario: tokens injected, share project-specific; then the
share over all injected tokens and the median size of non-empty packs, for
the new pack and the old one. Embeddings: BM25 only by default (fast);
``--model`` uses the configured local model (slower: embeds each repository).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import BENCH_DATA, row

REPO = Path(__file__).resolve().parents[1]
GENERIC_ROLES = {"community", "docs", "changelog", "generated", "vendored"}
GIT = ["git", "-c", "commit.gpgsign=false", "-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def tokens(text: str) -> int:
    try:
        import bpe_openai

        return len(bpe_openai.get_encoding("cl100k_base").encode(text))
    except ImportError:
        from lore.index.tokens import count_tokens

        return count_tokens(text)


def ago(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def git(root: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


# -- memories a team would have written ------------------------------------------------------

# (type, title, body, applies_to, days ago, storage)
FLASK = [
    (
        "gotcha",
        "Session cookie is not updated when only a nested dict changes",
        "SecureCookieSession tracks `modified` on assignment only. After mutating a nested value set "
        "`session.modified = True`, or the cookie is not sent.",
        "file:src/flask/sessions.py",
        6,
        None,
    ),
    (
        "decision",
        "SESSION_COOKIE_SAMESITE defaults to None",
        "We keep SameSite unset by default to avoid breaking OAuth redirects; apps opt in with 'Lax'.",
        "file:src/flask/sessions.py",
        20,
        None,
    ),
    (
        "convention",
        "Every new config key is documented in docs/config.rst and defaulted in app.py",
        "Add the key to `Flask.default_config` in app.py and a section in docs/config.rst in the same commit.",
        "file:src/flask/app.py",
        12,
        None,
    ),
    (
        "gotcha",
        "app_context is pushed implicitly by test_request_context",
        "Tests that push `test_request_context()` get an app context too; do not push a second one or "
        "`g` is reset between them.",
        "file:src/flask/ctx.py",
        9,
        None,
    ),
    (
        "decision",
        "JSON provider stays on the stdlib json module",
        "We removed simplejson support; `flask.json` wraps the stdlib `json` so behaviour is the same "
        "on every install.",
        "area:json",
        30,
        None,
    ),
    (
        "pattern",
        "CLI commands get the app through ScriptInfo.load_app",
        "Never import the app at module level in cli.py; use `ScriptInfo.load_app()` so FLASK_APP and "
        "factories both work.",
        "file:src/flask/cli.py",
        15,
        None,
    ),
    (
        "warning",
        "Blueprint names must be unique per app",
        "Registering two blueprints with the same name silently shared endpoints before; now it raises. "
        "Keep names unique.",
        "file:src/flask/blueprints.py",
        3,
        None,
    ),
    (
        "decision",
        "Drop Python 2 in the 2.0 line",
        "The 2.0 release removes `_compat.py` users one module at a time; new code is Python 3 only.",
        "global",
        40,
        None,
    ),
    (
        "decision",
        "Support Python 2 until 2.0",
        "New code must keep Python 2 compatibility through `_compat.py`.",
        "global",
        400,
        None,
    ),
    (
        "fact",
        "The test suite runs with tox",
        "Run `tox -e py` locally; CI runs the same envs.",
        "global",
        700,
        None,
    ),
    (
        "fact",
        "Session chatter",
        "I read sessions.py and app.py for a while before the fix.",
        "global",
        1,
        "session",
    ),
    (
        "fact",
        "More chatter",
        "Looked at the docs build; nothing interesting there today.",
        "global",
        1,
        "session",
    ),
]
LORE = [
    (
        "gotcha",
        "Every reading method must call sync() first",
        "Memory files are the truth: a hand-edited file is only seen after `Memories.sync()`; new read "
        "paths in service.py must call it.",
        "file:src/lore/service.py",
        4,
        None,
    ),
    (
        "decision",
        "All SQL lives in storage/sqlite/store.py",
        "Nothing above storage writes SQL; add typed Store methods and a numbered migration instead.",
        "area:storage",
        10,
        None,
    ),
    (
        "convention",
        "Errors are LoreError subclasses with one line saying what to do",
        "Raise UsageError, NotFound, ValidationError... from lore.errors; never let a traceback reach a user.",
        "global",
        14,
        None,
    ),
    (
        "gotcha",
        "Never print to stdout in the MCP stdio server",
        "stdout is the protocol channel; log to stderr or the hooks log.",
        "file:src/lore/interfaces/mcp.py",
        8,
        None,
    ),
    (
        "decision",
        "Recall leaves out items below a 0.05 relevance floor",
        "Padding the pack with weak items costs agents tokens; FLOOR in search/recall.py.",
        "file:src/lore/search/recall.py",
        5,
        None,
    ),
    (
        "pattern",
        "Heavy imports go inside the functions that need them",
        "numpy, onnxruntime, tree-sitter, yaml, rich and mcp are imported lazily so `lore --help` stays fast.",
        "global",
        21,
        None,
    ),
    (
        "warning",
        "Vectors never mix models",
        "Vectors are keyed by (model, text hash); a model change means BM25 only until `lore index --reembed`.",
        "area:embed",
        2,
        None,
    ),
    (
        "decision",
        "Token counts are an offline estimate calibrated to cl100k",
        "tiktoken downloads its vocabulary, so index/tokens.py estimates; tests compare with bpe-openai.",
        "file:src/lore/index/tokens.py",
        25,
        None,
    ),
    (
        "decision",
        "Recall pads the pack to the budget",
        "Fill the budget with the best remaining items.",
        "file:src/lore/search/recall.py",
        300,
        None,
    ),
    (
        "fact",
        "Benchmarks live in bench/",
        "Run them on demand; figures go to docs/benchmarks.md.",
        "global",
        600,
        None,
    ),
    ("fact", "Session chatter", "Spent a while reading recall.py and pack.py.", "global", 1, "session"),
    ("fact", "More chatter", "Ran the tests twice, they passed.", "global", 1, "session"),
]
CLICK = [
    (
        "gotcha",
        "Progress bars must not draw when the output is not a TTY",
        "`ProgressBar.render_progress` checks `isatty`; piped output gets only the final line.",
        "file:src/click/_termui_impl.py",
        5,
        None,
    ),
    (
        "decision",
        "Shell completion is driven by the _PROG_COMPLETE environment variable",
        "Completion scripts call the program with `_PROG_COMPLETE=bash_complete`; never add a subcommand "
        "for it.",
        "file:src/click/shell_completion.py",
        11,
        None,
    ),
    (
        "convention",
        "Parameter types convert in ParamType.convert and fail with self.fail",
        "Custom types override `convert` and call `self.fail(message, param, ctx)`; never raise ValueError.",
        "file:src/click/types.py",
        16,
        None,
    ),
    (
        "gotcha",
        "Context.invoke does not run parameter callbacks of the invoked command",
        "Use `ctx.forward` or call the callback yourself when re-using commands.",
        "file:src/click/core.py",
        7,
        None,
    ),
    (
        "decision",
        "Options are parsed by the vendored optparse-style parser",
        "parser.py stays a small optparse derivative; no argparse.",
        "file:src/click/parser.py",
        40,
        None,
    ),
    (
        "pattern",
        "Decorators attach params in reverse order",
        "`@option` appends to `__click_params__`; `command()` reverses them so help lists them top-down.",
        "file:src/click/decorators.py",
        13,
        None,
    ),
    (
        "warning",
        "echo() strips ANSI codes when not writing to a terminal",
        "Tests that check colours must pass `color=True`.",
        "file:src/click/utils.py",
        3,
        None,
    ),
    (
        "decision",
        "Windows console support goes through _winconsole.py",
        "Unicode on the legacy console uses WriteConsoleW; keep it isolated there.",
        "area:windows",
        35,
        None,
    ),
    (
        "decision",
        "Progress bars always draw",
        "Draw progress bars on every stream.",
        "file:src/click/_termui_impl.py",
        500,
        None,
    ),
    ("fact", "Docs are built with Sphinx", "Run `make html` in docs/.", "global", 800, None),
    ("fact", "Session chatter", "Read core.py for an hour.", "global", 1, "session"),
    ("fact", "More chatter", "The test run was slow today.", "global", 1, "session"),
]
# Which memory each repository's newest decision supersedes (new title, old title).
SUPERSEDES = {
    "flask": ("Drop Python 2 in the 2.0 line", "Support Python 2 until 2.0"),
    "lore": ("Recall leaves out items below a 0.05 relevance floor", "Recall pads the pack to the budget"),
    "click": ("Progress bars must not draw when the output is not a TTY", "Progress bars always draw"),
}
# The feature branch: (name, source file changed, generic file changed).
BRANCHES = {
    "flask": ("fix-session-cookie-samesite", "src/flask/sessions.py", "CHANGES.rst"),
    "lore": ("fix-recall-floor", "src/lore/search/recall.py", "README.md"),
    "click": ("progressbar-tty-width", "src/click/_termui_impl.py", "CHANGES.rst"),
}
COMMUNITY = {
    "LICENSE": "Copyright 2014 Pallets\n\nRedistribution and use in source and binary forms, with or without "
    "modification, are permitted provided that the following conditions are met.\n",
    "CODE_OF_CONDUCT.md": "# Contributor Covenant Code of Conduct\n\nWe pledge to make participation in our "
    "project a harassment-free experience for everyone.\n",
    "CONTRIBUTING.rst": "How to contribute\n=================\n\nReport issues, fork, create a branch, run the "
    "tests with pytest, follow the coding conventions, open a pull request.\n",
    "CHANGES.rst": "Version 8.0\n-----------\n\n- Progress bars respect the terminal width.\n- Completion "
    "for zsh and fish.\n",
    "docs/index.rst": "Click\n=====\n\nClick is a Python package for creating command line interfaces. "
    "Decisions and conventions are described in the API docs.\n",
}


# -- building the repositories ------------------------------------------------------------------


def flask_repo(work: Path) -> Path:
    archive = next((BENCH_DATA / "timesplit-flask").glob("flask-*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return work / "flask"


def lore_repo(work: Path) -> Path:
    target = work / "lore"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(REPO), str(target)], check=True)
    return target


def click_repo(work: Path) -> Path:
    import click

    root = work / "click"
    (root / "src").mkdir(parents=True)
    shutil.copytree(
        Path(click.__file__).parent, root / "src/click", ignore=shutil.ignore_patterns("__pycache__")
    )
    for rel, text in COMMUNITY.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Import click")
    for i, rel in enumerate(["src/click/core.py", "src/click/termui.py", "src/click/types.py"]):
        with open(root / rel, "a") as handle:
            handle.write(f"\n# maintenance note {i}\n")
        git(root, "commit", "-q", "-am", f"Tidy {Path(rel).stem}")
    return root


def prepare(root: Path, model: bool) -> None:
    subprocess.run(
        [sys.executable, "-m", "lore", "init", "--here"], cwd=root, check=True, capture_output=True
    )
    config = root / ".lore/config.toml"
    if not model:
        config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    subprocess.run(
        [sys.executable, "-m", "lore", "index", "--json"], cwd=root, check=True, capture_output=True
    )


def seed(root: Path, memories: list, supersedes: tuple[str, str]) -> None:
    import lore

    with lore.open(root) as project:
        ids = {}
        for kind, title, body, scope, days, storage in memories:
            result = project.add(
                title=title,
                body=body,
                type=kind,
                applies_to=scope,
                occurred_at=ago(days),
                session=storage == "session",
            )
            ids[title] = result.id
        new, old = supersedes
        from lore.memory.edits import Edit

        project.edit(ids[new], [Edit("relate", relation="supersedes", value=ids[old])])


def feature_branch(root: Path, branch: tuple[str, str, str]) -> None:
    name, source, generic = branch
    git(root, "checkout", "-q", "-b", name)
    with open(root / source, "a") as handle:
        handle.write("\n# the fix\n")
    with open(root / generic, "a") as handle:
        handle.write("\n- Fixed it.\n")
    git(root, "commit", "-q", "-am", f"Fix: {name.replace('-', ' ')}")
    with open(root / source, "a") as handle:
        handle.write("# work in progress\n")


# -- measuring --------------------------------------------------------------------------------------


def specific(item) -> bool:
    """Is this pack item derived from the project's own state? (see the module doc)"""
    from lore.index.roles import file_role

    data = item.data
    if item.kind == "memory":
        return not str(data.get("path", "")).startswith(".lore/local/session/")
    if item.kind == "task":
        return True
    if item.kind in ("file", "code"):
        return file_role(data.get("path") or data.get("file_path") or "") not in GENERIC_ROLES
    if item.kind == "area":
        folder = data["folder"]
        return all(
            file_role(f"{folder}/{name}" if folder != "." else name) not in GENERIC_ROLES
            for name in data["files"]
        )
    if item.kind == "work":
        files = data.get("files") or []
        return bool(files) and all(file_role(f) not in GENERIC_ROLES for f in files)
    return False


def measure(pack) -> tuple[int, int]:
    """(tokens injected, project-specific tokens)."""
    if not pack.markdown:
        return 0, 0
    good = sum(tokens(item.text(item.level or "L1")) for item in pack.items if specific(item))
    return tokens(pack.markdown), good


def old_pack(project):
    """What the SessionStart hook injected before issue 14."""
    title = project.branch_title() or "project conventions decisions gotchas"
    pack = project.recall(title, fresh=False)
    if not pack.items:
        pack.markdown = ""
    return pack


def scenario(root: Path, results: dict, label: str) -> None:
    import lore

    with lore.open(root, agent="claude-code") as project:
        new = measure(project.start(fresh=False))
    with lore.open(root, agent="claude-code") as project:
        old = measure(old_pack(project))
    results[label] = (new, old)
    share = lambda t: f"{100 * t[1] / t[0]:.0f}%" if t[0] else "-"  # noqa: E731
    row(label, f"new {new[0]:>5} tokens, {share(new):>4} specific   old {old[0]:>5} tokens, {share(old):>4}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", action="store_true", help="Use the configured embedding model (slow).")
    parser.add_argument("--keep", type=Path, help="Build the repositories in DIR and keep them.")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="lore-startpack-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    try:
        for name, build, memories in (
            ("flask", flask_repo, FLASK),
            ("lore", lore_repo, LORE),
            ("click", click_repo, CLICK),
        ):
            root = build(work)
            prepare(root, args.model)
            scenario(root, results, f"{name}: no memories")
            seed(root, memories, SUPERSEDES[name])
            scenario(root, results, f"{name}: default branch")
            feature_branch(root, BRANCHES[name])
            scenario(root, results, f"{name}: feature branch")
        for which, index in (("new pack", 0), ("old pack", 1)):
            sizes = [r[index][0] for r in results.values() if r[index][0]]
            total = sum(r[index][0] for r in results.values())
            good = sum(r[index][1] for r in results.values())
            empty = sum(1 for r in results.values() if not r[index][0])
            row(
                which,
                f"{100 * good / total:.1f}% project-specific over {total} tokens; median size "
                f"{statistics.median(sizes) if sizes else 0:.0f} tokens; {empty} empty of {len(results)}",
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    main()
