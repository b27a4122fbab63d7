"""Codebase indexing end to end (issue 4): tree-sitter chunks, incremental sync
driven by git, code search, git history as past work, `lore status`.

Real files in real git repositories made in temp dirs; every command is the
`lore` CLI run as a subprocess. Most tests set `[embedding] provider = "none"`
(BM25 only, no model load); the few about vectors use the bundled default model.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import lore
from conftest import ON_POSTGRES
from lore.storage import ChunkInput

# -- helpers ---------------------------------------------------------------------

AUTHOR = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}
_GIT_LOCAL = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR")
RESULT_KEYS = {
    "file_path",
    "symbol",
    "language",
    "start_line",
    "end_line",
    "snippet",
    "similarity",
    "source",
    "role",
    "weak",
}


def git(root: Path, *args: str, date: str | None = None, env: dict | None = None) -> str:
    full_env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCAL}
    full_env.update(AUTHOR)
    if date:
        full_env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    full_env.update(env or {})
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.strip()


def commit(root: Path, message: str, *, date: str | None = None) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, date=date)
    return git(root, "rev-parse", "HEAD")


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def configure(root: Path, *, provider: str = "none", **index) -> None:
    """Set `[embedding] provider` and `[index]` keys in .lore/config.toml."""
    path = root / ".lore/config.toml"
    text = path.read_text()
    assert re.search(r'^provider = "\w+"$', text, re.M) and "[index]\n" in text
    text = re.sub(r'^provider = "\w+"$', f'provider = "{provider}"', text, count=1, flags=re.M)
    for key, value in index.items():
        line = f"{key} = {str(value).lower() if isinstance(value, bool) else repr(value)}"
        pattern = re.compile(rf"^{key} = .*$", re.M)
        text = (
            pattern.sub(line, text)
            if pattern.search(text)
            else text.replace("[index]\n", f"[index]\n{line}\n", 1)
        )
    path.write_text(text)


def index(cli) -> dict:
    return cli.json("index")["code"]


def code(cli, *args: str) -> list[dict]:
    return cli.json("code", *args)


def paths(hits: list[dict]) -> list[str]:
    return [h["file_path"] for h in hits]


def subjects(hits: list[dict]) -> list[str]:
    return [h["subject"] for h in hits]


def _method(name: str, topic: str, word: str, n: int = 12) -> list[str]:
    lines = [
        f"    def {name}(self, person, salutation='Hello'):",
        f'        """{topic} for the given person, politely and with care."""',
    ]
    lines += [
        f"        part_{i} = self.compose_{word}_fragment(person, salutation, index={i})" for i in range(n)
    ]
    lines.append(f"        return ' '.join([{', '.join(f'part_{i}' for i in range(n))}])")
    return lines


# A class too big for one chunk, so each method is its own chunk with a qualified symbol.
GREETER = "\n".join(
    [
        '"""Greeting helpers for the reception desk."""',
        "",
        "",
        "class Greeter:",
        '    """Says hello and goodbye to visitors by name."""',
        "",
    ]
    + _method("greet", "Greeting words", "greeting")
    + [""]
    + _method("farewell", "Farewell message", "farewell")
    + [""]
    + _method("introduce", "Introduction speech", "introduction")
    + ["", "", "def shout(text):", "    return text.upper()", ""]
)

MATH_TS = """\
export function addNumbers(a: number, b: number): number {
  return a + b;
}
"""

MUL_GO = """\
package mathx

// Multiply returns the product of two integers.
func Multiply(a, b int) int {
\treturn a * b
}
"""


@pytest.fixture
def repo(cli):
    """The `cli` folder made a git repository, BM25 only (no model load)."""
    git(cli.cwd, "init", "-q", "-b", "main")
    configure(cli.cwd)
    return cli


# -- 1. `lore index`: what is indexed, what is skipped and why ----------------------------


def test_a_file_binary_after_its_head_is_skipped_and_leaves_the_index(repo):
    """Discovery sniffs a file's first 8 KB: a self-extracting script (a shell
    header, then a tarball) was cut into a thousand chunks of NUL and control bytes."""
    root = repo.cwd
    header = "#!/bin/sh\n# installer for the zebrafish tool\n" + "echo unpacking\n" * 700
    assert len(header) > 8192
    write(root, "install.sh", header)
    write(root, "tool.py", "def zebrafish():\n    return 1\n")
    commit(root, "Initial import")
    first = index(repo)
    assert first["files_processed"] == 2, first
    write(root, "install.sh", header.encode() + bytes(range(256)) * 40)
    commit(root, "Bundle the payload")
    again = index(repo)
    assert {s["path"]: s["reason"] for s in again["skipped"]}.get("install.sh") == "binary", again
    with lore.open(root) as project:
        assert "install.sh" not in project.store.paths("code")
        assert [h.file_path for h in project.code_search("zebrafish", files_only=True)] == ["tool.py"]


def test_index_reports_counts_and_skips_binary_large_vendored_and_ignored_files(repo):
    root = repo.cwd
    configure(root, max_file_bytes=2000)
    write(root, "app/greeter.py", "class Greeter:\n    def greet(self, name):\n        return 'hi ' + name\n")
    write(root, "src/math.ts", MATH_TS)
    write(root, "cmd/mul.go", MUL_GO)
    write(root, "node_modules/leftpad/index.js", "module.exports = function leftpadzebra() {};\n")
    write(root, "data.txt", b"header\x00\x01\x02binary payload okapizebra\n")
    write(
        root, "big.py", "def huge_table():\n" + "".join(f"    row_{i} = 'hippozebra'\n" for i in range(150))
    )
    write(root, ".gitignore", "secret.py\n")
    write(root, "secret.py", "def gitignoredzebra():\n    return 1\n")
    write(root, ".loreignore", "generated.py\n")
    write(root, "generated.py", "def loreignoredzebra():\n    return 1\n")
    assert (root / "big.py").stat().st_size > 2000
    commit(root, "Initial import")

    out = index(repo)
    assert out["files_processed"] == 3
    assert out["chunks_created"] >= 3
    assert isinstance(out["duration_ms"], int) and out["duration_ms"] >= 0
    assert out["commits_added"] == 1 and out["errors"] == [] and out["success"] is True
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert out["files_skipped"] == len(out["skipped"])
    assert reasons["data.txt"] == "binary"
    assert reasons["big.py"].startswith("too large")
    assert reasons["node_modules/"] == "excluded dir"
    assert not [p for p in reasons if p.startswith("node_modules/") and p != "node_modules/"]  # reported once
    assert reasons["generated.py"] == "ignored by .loreignore"
    assert "secret.py" not in reasons  # gitignored: simply absent

    status = repo.json("status")
    assert status["code_files"] == 3 and status["code_chunks"] == out["chunks_created"]
    for word in ("leftpadzebra", "okapizebra", "hippozebra", "gitignoredzebra", "loreignoredzebra"):
        assert code(repo, word) == [], word
    assert paths(code(repo, "Multiply")) == ["cmd/mul.go"]


def test_text_output_of_index_summarises_code(repo):
    write(repo.cwd, "a.py", "def alpha():\n    return 1\n")
    write(repo.cwd, "node_modules/x.js", "x()\n")
    commit(repo.cwd, "first")
    out = repo("index").stdout
    assert re.search(
        r"code: 1 files processed, \d+ chunks, 0 renamed, 0 removed, \d+ skipped \(.*excluded dir", out
    ), out


def test_a_script_named_without_an_extension_is_indexed_in_its_language(repo):
    """An audit: `scripts/rotate-logs` (a Python script with a `#!` line and no
    extension) was "not included", so `lore code` never found its functions;
    rack's `bin/rackup` too. Other files without an extension stay out."""
    root = repo.cwd
    write(
        root,
        "scripts/rotate-logs",
        "#!/usr/bin/env python3\n\n\ndef rotate_the_logs(days):\n    return days\n",
    )
    write(root, "bin/rackup", "#!/usr/bin/env ruby\n\ndef start_the_rack_server\n  1\nend\n")
    write(root, "notes", "plain notes without a first line of a script\n")
    os.mkfifo(root / "run")  # not a script, and never opened blocking
    commit(root, "Scripts")
    out = index(repo)
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert reasons.get("notes") == "not included" and "scripts/rotate-logs" not in reasons
    hit = code(repo, "rotate_the_logs")[0]
    assert (hit["file_path"], hit["language"], hit["symbol"]) == (
        "scripts/rotate-logs",
        "python",
        "rotate_the_logs",
    )
    assert code(repo, "start_the_rack_server")[0]["language"] == "ruby"
    # A config's own include list replaces the defaults: scripts are then what it says.
    configure(root, include=["*.py"])
    assert code(repo, "rotate_the_logs") == []


def test_notebooks_are_indexed_by_their_cells_as_source_and_cited_at_their_lines(repo):
    """A data project's code lives in notebooks; they were not indexed at all.
    Their cells' source is searchable, a hit cites the notebook's own lines,
    a notebook outside docs and examples is source, and the outputs that make
    a notebook large (plots) count less against the size limit."""
    root = repo.cwd
    configure(root, max_file_bytes=20_000)
    plot = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo" * 6_000}, "metadata": {}}
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Churn model\n", "Predict churn."]},
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "outputs": [plot],
                "source": ["def wombat_churn_score(row):\n", "    return row.logins / (row.days + 1)\n"],
            },
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(notebook, indent=1)
    assert 20_000 < len(text) < 100_000  # over max_file_bytes, under a notebook's five times
    write(root, "analysis/churn.ipynb", text)
    write(root, "docs/tour.ipynb", text.replace("wombat_churn", "docs_tour"))
    write(root, "huge.ipynb", text.replace("iVBORw0KGgo" * 6_000, "iVBORw0KGgo" * 12_000))
    commit(root, "notebooks")
    out = index(repo)
    assert {s["path"]: s["reason"] for s in out["skipped"]}["huge.ipynb"].startswith("too large")
    hits = code(repo, "wombat_churn_score")
    assert hits[0]["file_path"] == "analysis/churn.ipynb" and hits[0]["language"] == "python", hits[0]
    assert "iVBOR" not in json.dumps(code(repo, "churn"))
    line = text.split("\n")[hits[0]["start_line"] - 1]
    assert line.strip() == '"def wombat_churn_score(row):\\n",', line
    roles = {
        h["file_path"]: h["role"]
        for h in code(repo, "churn score", "--files-only", "--role", "source", "--role", "docs")
    }
    assert roles == {"analysis/churn.ipynb": "source", "docs/tour.ipynb": "docs"}, roles
    # Secrets in a cell: masked as in code (a token) and in prose (a password said in words),
    # in search and in the file's view.
    notebook["cells"] += [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": ["The staging password is: Tr0ub4dor-zebra-77\n"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": [f'GH = "{TOKEN}"\n'],
        },
    ]
    write(root, "analysis/churn.ipynb", json.dumps(notebook, indent=1))
    repo("update-index", "--files", "analysis/churn.ipynb")
    found = json.dumps(code(repo, "staging password GH"))
    assert "analysis/churn.ipynb" in found and "Tr0ub4dor" not in found and TOKEN not in found
    with lore.open(root) as project:
        shown = project.code_file("analysis/churn.ipynb")["text"]
    assert "wombat_churn_score" in shown and "Tr0ub4dor" not in shown and TOKEN not in shown


def test_a_file_name_that_is_not_utf8_is_skipped_and_everything_else_indexed(repo):
    root = repo.cwd
    write(root, "ok.py", "def okapi_total():\n    return 1\n")
    write(root, os.fsdecode(b"caf\xe9.py"), "def lattezebra():\n    return 2\n")
    write(root, "tab\tname.py", "def tabbed_total():\n    return 3\n")
    commit(root, "Add the okapi counter")
    write(root, "ok.py", "def okapi_total():\n    return 10\n")
    commit(root, "Count more okapis")

    out = index(repo)
    assert out["files_processed"] == 1 and out["commits_added"] == 2
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert reasons["caf\\xe9.py"].startswith("bad name") and reasons["tab\\x09name.py"].startswith("bad name")
    assert [e.split(":")[0] for e in out["errors"]] == ["caf\\xe9.py", "tab\\x09name.py"]
    assert paths(code(repo, "okapi_total")) == ["ok.py"]
    assert code(repo, "lattezebra") == []
    first = [h for h in repo.json("history", "okapi") if h["subject"] == "Add the okapi counter"]
    assert first and {"caf\\xe9.py", "ok.py", "tab\\x09name.py"} <= set(first[0]["files"])

    run = repo("index", "--force")  # the text output warns, one line per file, and succeeds
    warnings = [line for line in run.stderr.splitlines() if "rename the file" in line]
    assert len(warnings) == 2 and "caf\\xe9.py" in warnings[0], run.stderr
    assert "Traceback" not in run.stderr


# -- 2. Incremental sync --------------------------------------------------------------


def test_second_index_processes_nothing_and_one_edit_reprocesses_one_file(repo):
    root = repo.cwd
    write(root, "a.py", "def alpha():\n    return 1\n")
    write(root, "b.ts", MATH_TS)
    write(root, "c.go", MUL_GO)
    commit(root, "three files")
    assert index(repo)["files_processed"] == 3

    again = index(repo)
    assert (
        again["files_processed"],
        again["chunks_created"],
        again["files_renamed"],
        again["files_removed"],
        again["commits_added"],
    ) == (0, 0, 0, 0, 0)

    write(root, "b.ts", MATH_TS + "\nexport function zanzibarRoute(): string {\n  return 'z';\n}\n")
    changed = index(repo)
    assert changed["files_processed"] == 1 and changed["chunks_created"] >= 1
    assert paths(code(repo, "zanzibarRoute")) == ["b.ts"]

    # Same bytes, new mtime: checked by hash, not re-chunked.
    st = (root / "a.py").stat()
    os.utime(root / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert index(repo)["files_processed"] == 0


def test_deleting_a_file_removes_its_chunks(repo):
    root = repo.cwd
    write(root, "keep.py", "def keeper():\n    return 'stay'\n")
    write(root, "quokka.py", "def feed_quokka():\n    return 'leaves'\n")
    commit(root, "two files")
    index(repo)
    assert paths(code(repo, "feed_quokka")) == ["quokka.py"]
    before = repo.json("status")["code_files"]

    (root / "quokka.py").unlink()
    out = index(repo)
    assert out["files_removed"] == 1 and out["files_processed"] == 0
    assert code(repo, "feed_quokka") == []
    assert repo.json("status")["code_files"] == before - 1


def test_rename_moves_the_file_without_rechunking(repo):
    root = repo.cwd
    write(root, "helpers/arithmetic.py", "def compute_tax_total(amount):\n    return amount * 1.2\n")
    commit(root, "helpers")
    index(repo)
    (root / "billing").mkdir()
    git(root, "mv", "helpers/arithmetic.py", "billing/invoices.py")
    out = index(repo)
    assert out["files_renamed"] == 1
    assert out["files_processed"] == 0 and out["chunks_created"] == 0 and out["files_removed"] == 0
    assert paths(code(repo, "compute_tax_total")) == ["billing/invoices.py"]


def test_renamed_file_is_found_by_the_words_of_its_new_path_not_the_old(repo):
    """Path words are searchable (`code_chunks` puts them in the chunk keywords);
    a rename must not leave the old path's words behind."""
    root = repo.cwd
    write(root, "helpers/arithmetic.py", "def compute(x):\n    return x * 2\n")
    commit(root, "helpers")
    index(repo)
    assert paths(code(repo, "arithmetic")) == ["helpers/arithmetic.py"]  # found by a path word
    (root / "billing").mkdir()
    git(root, "mv", "helpers/arithmetic.py", "billing/invoices.py")
    assert index(repo)["files_renamed"] == 1
    assert paths(code(repo, "invoices")) == ["billing/invoices.py"]
    assert code(repo, "arithmetic") == []


def test_rename_and_branch_switches_embed_nothing_new(cli):
    """Real default model: vectors are keyed by content, so moving or re-checking-out
    known content embeds nothing."""
    root = cli.cwd
    git(root, "init", "-q", "-b", "main")
    write(root, "greeter.py", GREETER)
    write(root, "math.ts", MATH_TS)
    commit(root, "init")
    first = cli.json("index")
    assert first["embedded"] > 0 and first["code"]["files_processed"] == 2

    git(root, "checkout", "-q", "-b", "other")
    write(root, "greeter.py", GREETER.replace("Greeting words", "Hearty greeting words"))
    write(root, "other.py", "def other_branch_only():\n    return 42\n")
    commit(root, "other work")
    assert cli.json("index")["embedded"] > 0  # new content, new commit: embedded once

    for branch in ("main", "other", "main", "other"):
        git(root, "checkout", "-q", branch)
        out = cli.json("index")
        assert out["code"]["files_processed"] >= 1, branch  # the work tree did change
        assert out["embedded"] == 0, branch

    git(root, "mv", "math.ts", "arith.ts")
    out = cli.json("index")
    assert out["code"]["files_renamed"] == 1 and out["embedded"] == 0
    status = cli.json("status")
    assert status["embedding"] and status["pending_embeddings"] == 0 and status["vectors"] > 0


# -- 3. Git operations ------------------------------------------------------------------


def test_amend_replaces_the_commit_in_history(repo):
    root = repo.cwd
    write(root, "a.py", "a = 1\n")
    commit(root, "Add alpha module")
    index(repo)
    write(root, "b.py", "b = 1\n")
    old = commit(root, "Introduce zebra parser")
    hits = repo.json("history", "zebra")
    assert subjects(hits) == ["Introduce zebra parser"] and hits[0]["sha"] == old

    git(root, "commit", "-q", "--amend", "-m", "Introduce giraffe parser")
    new = git(root, "rev-parse", "HEAD")
    assert repo.json("history", "zebra") == []
    hits = repo.json("history", "giraffe")
    assert subjects(hits) == ["Introduce giraffe parser"] and hits[0]["sha"] == new
    assert repo.json("status")["commits"] == 2


def test_a_commit_message_without_a_blank_line_is_shown_cut(repo):
    """git joins a message's first paragraph into its subject: a 300-line
    message without a blank line printed whole in `lore history` and in
    every recall pack that cited it."""
    root = repo.cwd
    write(root, "a.py", "a = 1\n")
    message = "\n".join(f"Tune the walrus cache, step {n} of many" for n in range(300))
    commit(root, message)
    index(repo)
    [hit] = repo.json("history", "walrus")
    assert len(hit["subject"]) > 10_000  # the data keeps it whole
    shown = repo("history", "walrus").stdout
    assert "step 0 of many" in shown and "step 299" not in shown and "…" in shown
    assert max(len(line) for line in shown.splitlines()) < 400
    pack = repo.json("recall", "walrus cache")
    [work] = pack["related_work_items"]
    assert len(work["title"]) <= 200 and work["title"].endswith("…")
    assert "step 299" not in repo("recall", "walrus cache").stdout


def merge_in(root: Path, branch: str, *paragraphs: str, date: str) -> None:
    """A merge commit of `branch` (never fast-forward) with the message's paragraphs."""
    git(root, "merge", "-q", "--no-ff", branch, *(a for p in paragraphs for a in ("-m", p)), date=date)


def test_a_merge_is_not_told_beside_the_commit_it_brought_in(repo):
    """A pull request's merge changes what its commit changed; listed with that
    commit it took a second slot of past work for the same change."""
    root = repo.cwd
    write(root, "base.py", "def base():\n    return 0\n")
    commit(root, "Base", date="2024-01-01T00:00:00")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "render/json.go", "func SecureJSON() {}\n")
    commit(root, "Add SecureJSON renderer to prevent json hijacking", date="2024-01-02T00:00:00")
    git(root, "checkout", "-q", "main")
    merge_in(
        root,
        "feature",
        "Merge pull request #9 from a/secure",
        "Add SecureJSON renderer to prevent json hijacking",
        date="2024-01-03T00:00:00",
    )
    git(root, "checkout", "-q", "-b", "big")
    write(root, "docs.md", "SecureJSON docs\n")
    commit(root, "Document the SecureJSON renderer", date="2024-01-04T00:00:00")
    write(root, "base.py", "def base():\n    return 1\n")
    commit(root, "Tidy up", date="2024-01-04T01:00:00")
    git(root, "checkout", "-q", "main")
    merge_in(root, "big", "Merge big: SecureJSON json hijacking, more", date="2024-01-05T00:00:00")
    index(repo)
    told = subjects(repo.json("history", "SecureJSON", "json", "hijacking"))
    assert "Merge pull request #9 from a/secure" not in told
    assert "Add SecureJSON renderer to prevent json hijacking" in told
    # A merge that changed a file no listed commit changed (base.py) stays.
    assert "Merge big: SecureJSON json hijacking, more" in told
    pack = repo.json("recall", "SecureJSON json hijacking")
    work = [item["title"] for item in pack["related_work_items"]]
    assert "Add SecureJSON renderer to prevent json hijacking" in work
    assert "Merge pull request #9 from a/secure" not in work


def test_index_force_writes_every_commit_again(repo):
    """`lore index --force` re-indexed files only: commits lost from the index
    (a damaged or pruned history) stayed lost while HEAD had not moved."""
    root = repo.cwd
    for name, subject in (("a", "Add alpha module"), ("c", "Add walrus cache"), ("d", "Add pelican logger")):
        write(root, f"{name}.py", f"{name} = 1\n")
        commit(root, subject)
    index(repo)
    with lore.open(root) as project, project.store.transaction():
        project.store.prune_commits(1)  # the newest only
    index(repo)
    assert repo.json("status")["commits"] == 1  # HEAD did not move: nothing new to walk
    forced = repo.json("index", "--force")["code"]
    assert (forced["commits_added"], forced["commits_updated"]) == (2, 1)
    assert "0 commits (3 rewritten)" in repo("index", "--force").stdout
    assert repo.json("status")["commits"] == 3
    assert subjects(repo.json("history", "walrus")) == ["Add walrus cache"]


def test_rebase_drop_and_reword_resyncs_history(repo):
    root = repo.cwd
    for name, subject in (("a", "Add alpha module"), ("c", "Add walrus cache"), ("d", "Add pelican logger")):
        write(root, f"{name}.py", f"{name} = 1\n")
        commit(root, subject)
    index(repo)
    assert subjects(repo.json("history", "walrus")) == ["Add walrus cache"]

    git(
        root,
        "rebase",
        "-q",
        "-i",
        "HEAD~2",
        env={
            "GIT_SEQUENCE_EDITOR": "sed -i -e '/walrus/d' -e 's/^pick \\(.*pelican.*\\)/reword \\1/'",
            "GIT_EDITOR": "sed -i 's/pelican/flamingo/'",
        },
    )
    assert git(root, "log", "--format=%s") == "Add flamingo logger\nAdd alpha module"
    index(repo)
    assert repo.json("history", "walrus") == []
    assert repo.json("history", "pelican") == []
    hits = repo.json("history", "flamingo")
    assert subjects(hits) == ["Add flamingo logger"] and hits[0]["files"] == ["d.py"]
    assert repo.json("status")["commits"] == 2
    assert not (root / "c.py").exists() and code(repo, "walrus") == []


@pytest.mark.skipif(ON_POSTGRES, reason="the SQLite index file's bytes")
def test_text_rewritten_out_of_history_is_gone_from_the_index_file_after_gc(repo):
    """An audit: a credential in a commit message, scrubbed by `git reset
    --hard` (or a rebase), stayed in index.db after `lore index` and `lore gc`:
    the keyword index's old segments keep removed text until they merge."""
    root = repo.cwd
    write(root, "a.py", "a = 1\n")
    commit(root, "Add alpha module")
    write(root, "b.py", "b = 1\n")
    commit(root, "Oops: the staging login is quetzalcoatl9871")
    index(repo)
    git(root, "reset", "-q", "--hard", "HEAD~1")
    index(repo)
    assert repo.json("history", "quetzalcoatl9871") == []
    repo("gc")
    for name in ("index.db", "index.db-wal"):
        held = root / ".lore" / name
        assert not held.exists() or b"quetzalcoatl9871" not in held.read_bytes(), name
    assert subjects(repo.json("history", "alpha")) == ["Add alpha module"]


def test_deepening_a_shallow_clone_brings_its_older_commits_into_history(repo, tmp_path):
    origin = repo.cwd
    for name, subject in (("a", "Add walrus cache"), ("b", "Add pelican logger"), ("c", "Add heron queue")):
        write(origin, f"{name}.py", f"{name} = 1\n")
        commit(origin, subject)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    cli = type(repo)(clone)
    assert subjects(cli.json("history", "heron")) == ["Add heron queue"]
    assert cli.json("history", "walrus") == []

    cli.json("index")
    assert cli.json("status")["up_to_date"] is True

    git(clone, "fetch", "-q", "--deepen", "1")  # HEAD does not move
    # status said "up to date" (it compared HEAD only) while history lacked what came
    assert cli.json("status")["up_to_date"] is False
    assert subjects(cli.json("history", "pelican")) == ["Add pelican logger"]
    assert cli.json("status")["up_to_date"] is True
    assert cli.json("history", "walrus") == []

    git(clone, "fetch", "-q", "--unshallow")
    assert subjects(cli.json("history", "walrus")) == ["Add walrus cache"]
    assert cli.json("status")["commits"] == 3


def test_history_of_a_blobless_clone_is_read_offline(repo, tmp_path):
    """A partial clone (`git clone --filter=blob:none`) fetches a missing file
    version from its remote whenever a command needs one. Comparing contents
    to find renames needs old versions: the walk must not download history's
    files (Lore works offline), nor fail when the remote is out of reach."""
    origin = repo.cwd
    git(origin, "config", "uploadpack.allowFilter", "true")
    write(origin, "walrus.py", "".join(f"def walrus_{i}():\n    return {i}\n" for i in range(60)))
    commit(origin, "Add the walrus module")
    git(origin, "mv", "walrus.py", "seal.py")
    write(origin, "seal.py", (origin / "seal.py").read_text() + "def seal():\n    return 0\n")
    commit(origin, "Rename walrus to seal and add seal")
    clone = tmp_path / "blobless"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{origin}", str(clone))
    origin.rename(tmp_path / "out-of-reach")
    cli = type(repo)(clone)
    assert cli.json("index")["code"]["commits_added"] == 2
    found = set(subjects(cli.json("history", "walrus")))
    assert found == {"Add the walrus module", "Rename walrus to seal and add seal"}


def test_branch_switch_is_reflected_in_code_search_and_history(repo):
    root = repo.cwd
    write(root, "feature.py", "def pelicanroute():\n    return 'main'\n")
    commit(root, "Main line route")
    git(root, "checkout", "-q", "-b", "other")
    write(root, "feature.py", "def flamingoroute():\n    return 'other'\n")
    write(root, "only_other.py", "def heronhelper():\n    return 1\n")
    commit(root, "Otter branch route")

    git(root, "checkout", "-q", "main")
    index(repo)
    assert paths(code(repo, "pelicanroute")) == ["feature.py"]
    assert code(repo, "flamingoroute") == [] and code(repo, "heronhelper") == []
    assert repo.json("history", "otter") == []

    git(root, "checkout", "-q", "other")
    out = index(repo)
    assert out["files_processed"] == 2
    assert paths(code(repo, "flamingoroute")) == ["feature.py"]
    assert paths(code(repo, "heronhelper")) == ["only_other.py"]
    assert code(repo, "pelicanroute") == []
    assert subjects(repo.json("history", "otter")) == ["Otter branch route"]

    git(root, "checkout", "-q", "main")
    out = index(repo)
    assert out["files_removed"] == 1
    assert code(repo, "heronhelper") == [] and paths(code(repo, "pelicanroute")) == ["feature.py"]


def test_merge_brings_both_sides_into_code_and_history(repo):
    root = repo.cwd
    write(root, "base.py", "def base():\n    return 0\n")
    commit(root, "Base")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "feature/lynx.py", "def lynx_tracker():\n    return 'lynx'\n")
    commit(root, "Add lynx tracker")
    git(root, "checkout", "-q", "main")
    write(root, "main/badger.py", "def badger_burrow():\n    return 'badger'\n")
    commit(root, "Add badger burrow")
    index(repo)
    assert code(repo, "lynx_tracker") == []

    git(root, "merge", "-q", "--no-ff", "feature", "-m", "Merge feature tracking")
    out = index(repo)
    assert out["files_processed"] == 1 and out["commits_added"] == 2
    assert paths(code(repo, "lynx_tracker")) == ["feature/lynx.py"]
    assert paths(code(repo, "badger_burrow")) == ["main/badger.py"]
    assert subjects(repo.json("history", "lynx", "tracker"))[0] == "Add lynx tracker"
    with lore.open(root) as project:
        (merge,) = [c for c in project.store.commits() if c.is_merge]
    assert merge.subject == "Merge feature tracking" and merge.files == ["feature/lynx.py"]
    # Its change is the branch's commit: past work tells it once.
    assert subjects(repo.json("history", "merge", "feature", "tracking")) == ["Add lynx tracker"]
    status = repo.json("status")
    assert status["up_to_date"] and status["commits"] == 4


# -- 4. update-index ----------------------------------------------------------------------


def test_update_index_reports_updated_and_deleted(repo):
    root = repo.cwd
    configure(root, auto_sync=False)  # so `lore code` shows what update-index did, nothing more
    write(root, "a.py", "def alpha():\n    return 1\n")
    write(root, "b.py", "def betawombat():\n    return 2\n")
    commit(root, "two")
    index(repo)
    write(root, "a.py", "def alphakangaroo():\n    return 1\n")
    (root / "b.py").unlink()
    assert code(repo, "alphakangaroo") == []  # not picked up without an update
    assert repo.json("update-index", "--files", "a.py", "--deleted", "b.py") == {
        "updated": 1,
        "deleted": 1,
        "skipped": [],
    }
    assert paths(code(repo, "alphakangaroo")) == ["a.py"]
    assert code(repo, "betawombat") == []
    assert repo("update-index", "--files", "a.py").stdout.strip() == "updated 0, deleted 0"
    # An edit keeping the size and the time (`cp -p`, `rsync -t`): a named file is read again.
    before = (root / "a.py").stat()
    write(root, "a.py", "def alphakoalabea():\n    return 1\n")
    os.utime(root / "a.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (root / "a.py").stat().st_size == before.st_size
    assert repo.json("update-index", "--files", "a.py") == {"updated": 1, "deleted": 0, "skipped": []}
    assert paths(code(repo, "alphakoalabea")) == ["a.py"]


@pytest.mark.skipif(ON_POSTGRES, reason="the SQLite index file's size")
def test_the_index_file_shrinks_when_a_large_file_is_removed(repo):
    """A 60 MB file indexed, then deleted, left index.db at its size for ever."""
    root = repo.cwd
    configure(root, max_file_bytes=20_000_000)
    write(root, "small.py", "def keep():\n    return 1\n")
    lines = [
        f"row {n}: the quick brown fox {n * 7919 % 104729} jumps over the lazy dog {n}" for n in range(80_000)
    ]
    write(root, "big.txt", "\n".join(lines) + "\n")
    index(repo)
    db = root / ".lore/index.db"
    full = db.stat().st_size
    assert full > 8_000_000
    (root / "big.txt").unlink()
    assert index(repo)["files_removed"] == 1
    assert db.stat().st_size < full / 2 and paths(code(repo, "keep")) == ["small.py"]


def test_update_index_takes_file_names_with_spaces(repo):
    """`--files "a.py b.py"` names two files, but an editor hook passes one
    file per option, and a file's name may hold a space."""
    root = repo.cwd
    configure(root, auto_sync=False)
    write(root, "my notes.py", "def alpha():\n    return 1\n")
    write(root, "old file.py", "def betawombat():\n    return 2\n")
    write(root, "file.py", "def gammaotter():\n    return 3\n")
    commit(root, "three")
    index(repo)
    write(root, "my notes.py", "def alphakangaroo():\n    return 1\n")
    (root / "old file.py").unlink()
    out = repo.json("update-index", "--files", "my notes.py", "--deleted", "old file.py")
    assert out == {"updated": 1, "deleted": 1, "skipped": []}
    assert paths(code(repo, "alphakangaroo")) == ["my notes.py"]
    assert code(repo, "betawombat") == [] and paths(code(repo, "gammaotter")) == ["file.py"]
    write(root, "file.py", "def gammapuffin():\n    return 3\n")
    write(root, "a.py", "def deltaheron():\n    return 4\n")
    assert repo.json("update-index", "--files", "file.py a.py") == {"updated": 2, "deleted": 0, "skipped": []}


def test_update_index_says_which_named_files_it_did_not_index_and_why(repo):
    """A hook or an agent naming a file the index leaves out learned nothing:
    `updated 0, deleted 0` for a typo, a git-ignored file or a binary alike."""
    root = repo.cwd
    configure(root, auto_sync=False)
    write(root, ".gitignore", "local.py\n")
    write(root, "a.py", "def alpha():\n    return 1\n")
    commit(root, "one")
    index(repo)
    write(root, "local.py", "x = 1\n")
    write(root, "node_modules/pkg/index.js", "module.exports = 1\n")
    (root / "blob.py").write_bytes(bytes(range(256)) * 20)
    (root / "src").mkdir()
    out = repo.json(
        "update-index",
        *("--files", "a.py", "--files", "typo.py", "--files", "local.py"),
        *("--files", "node_modules/pkg/index.js", "--files", "blob.py", "--files", "src"),
    )
    assert out["updated"] == 0 and out["deleted"] == 0
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert reasons.keys() == {"typo.py", "local.py", "node_modules/pkg/index.js", "blob.py", "src"}
    assert reasons["typo.py"] == "no such file" and reasons["local.py"] == "ignored by git"
    assert "node_modules/" in reasons["node_modules/pkg/index.js"] and reasons["blob.py"] == "binary"
    assert reasons["src"].startswith("a folder")
    # In text, one line on stderr each; stdout keeps its one line of counts.
    proc = repo("update-index", "--files", "typo.py", "--files", "a.py")
    assert proc.stdout == "updated 0, deleted 0\n"
    assert proc.stderr == "not indexed: typo.py (no such file)\n"
    # A name with a space is one file, not its words; two names in one value are two files.
    write(root, "my notes.py", "def gamma():\n    return 3\n")
    assert repo.json("update-index", "--files", "my notes.py")["skipped"] == []
    assert repo.json("update-index", "--files", str(root / "my notes.py"))["skipped"] == []
    assert [s["path"] for s in repo.json("update-index", "--files", "a.py typo2.py")["skipped"]] == [
        "typo2.py"
    ]
    # git's own files, a FIFO: said as what they are.
    os.mkfifo(root / "pipe.py")
    said = repo.json("update-index", "--files", ".git/config", "--files", "pipe.py")["skipped"]
    assert {s["path"]: s["reason"] for s in said} == {
        ".git/config": "git's own files",
        "pipe.py": "not a regular file",
    }, said
    # An absolute path through a link to the project is the file inside it (a review: skipped silently).
    link = root.parent / "link-to-repo"
    link.symlink_to(root)
    write(root, "a.py", "def alphaplatypus():\n    return 1\n")
    out = repo.json("update-index", "--files", str(link / "a.py"))
    assert out == {"updated": 1, "deleted": 0, "skipped": []}
    assert paths(code(repo, "alphaplatypus")) == ["a.py"]


def test_update_index_names_paths_outside_the_project_as_not_indexed(repo, tmp_path):
    """Never read, and one more file not indexed rather than an error for the
    batch: a hook naming every file an agent edited (~/.bashrc among them), or
    an HTTP/MCP batch, still indexes the project's own (an audit: one path
    outside failed the whole batch)."""
    root = repo.cwd
    configure(root, auto_sync=False)
    write(root, "a.py", "def alpha():\n    return 1\n")
    commit(root, "one")
    index(repo)
    outside = write(tmp_path, "elsewhere.py", "def wombatouter():\n    return 1\n")
    write(root, "a.py", "def alphaquokka():\n    return 1\n")
    out = repo.json(
        "update-index",
        "--files",
        "../elsewhere.py",
        "--files",
        str(outside),
        "--files",
        "a.py",
        "--deleted",
        "../gone.py",
    )
    assert out["updated"] == 1 and out["deleted"] == 0
    assert out["skipped"] == [  # the same file twice is one path, and each is named absolute
        {"path": p, "reason": "outside the project"} for p in (str(outside), str(root.parent / "gone.py"))
    ]
    assert paths(code(repo, "alphaquokka")) == ["a.py"] and code(repo, "wombatouter") == []
    proc = repo("update-index", "--files", str(outside))
    assert proc.stdout == "updated 0, deleted 0\n"
    assert proc.stderr == f"not indexed: {outside} (outside the project)\n"
    # The service names them as given, for HTTP and MCP.
    with lore.open(root) as service:
        said = service.update_index(["../elsewhere.py", "a.py"])
    assert said["skipped"] == [{"path": "../elsewhere.py", "reason": "outside the project"}]


def test_update_index_reads_paths_from_the_current_folder_and_names_them_as_given(repo):
    """An editor hook runs in a folder of the project and names files as its
    shell sees them (an audit: `lore update-index --files b.py` in `src/`
    looked for `b.py` at the root and indexed nothing). A file named through
    a linked folder is indexed as its real path, but reported as it was named."""
    root = repo.cwd
    configure(root, auto_sync=False)
    write(root, "src/b.py", "def beta():\n    return 1\n")
    commit(root, "one")
    index(repo)
    write(root, "src/b.py", "def betanumbat():\n    return 1\n")
    write(root, "b.py", "def rootbeta():\n    return 1\n")
    out = repo.json("update-index", "--files", "b.py", "--files", "typo.py", cwd=root / "src")
    assert out == {"updated": 1, "deleted": 0, "skipped": [{"path": "src/typo.py", "reason": "no such file"}]}
    assert paths(code(repo, "betanumbat")) == ["src/b.py"] and code(repo, "rootbeta") == []
    # `..` from a folder stays inside the project: the root's file.
    assert repo.json("update-index", "--files", "../b.py", cwd=root / "src")["updated"] == 1
    assert paths(code(repo, "rootbeta")) == ["b.py"]
    # Deleted, from the folder: its words and the whole are both tried.
    (root / "src/b.py").unlink()
    assert repo.json("update-index", "--deleted", "b.py", cwd=root / "src")["deleted"] == 1
    # Through a link to a folder: `skipped` names the path given, not where the link leads.
    write(root, "real/c.py", "c = 1\n")
    (root / "linked").symlink_to(root / "real", target_is_directory=True)
    said = repo.json("update-index", "--files", "linked/missing.py")["skipped"]
    assert said == [{"path": "linked/missing.py", "reason": "no such file"}]


# -- 5. `lore code` -------------------------------------------------------------------------


def test_code_result_shape_qualified_symbols_and_exact_lines(repo):
    root = repo.cwd
    write(root, "greeter.py", GREETER)
    write(root, "src/math.ts", MATH_TS)
    write(root, "cmd/mul.go", MUL_GO)
    commit(root, "code")
    index(repo)

    hits = code(repo, "greet")
    assert hits and all(set(h) == RESULT_KEYS for h in hits)
    assert all(0 <= h["similarity"] <= 1 and h["source"] in ("bm25", "vector", "hybrid") for h in hits)
    greet = next(h for h in hits if h["symbol"] == "Greeter.greet")
    lines = GREETER.split("\n")
    start = lines.index("    def greet(self, person, salutation='Hello'):") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("        return ")) + 1
    assert (greet["file_path"], greet["language"]) == ("greeter.py", "python")
    assert (greet["start_line"], greet["end_line"]) == (start, end)
    assert "greet" in greet["snippet"].lower()

    full = next(h for h in code(repo, "greet", "--full") if h["symbol"] == "Greeter.greet")
    assert full["chunk_text"] == "\n".join(lines[start - 1 : end])
    assert "Greeter.farewell" in [h["symbol"] for h in code(repo, "farewell", "message")]

    ts = code(repo, "addNumbers")[0]
    assert (ts["file_path"], ts["language"], ts["symbol"], ts["start_line"], ts["end_line"]) == (
        "src/math.ts",
        "typescript",
        "addNumbers",
        1,
        3,
    )
    go = code(repo, "Multiply")[0]
    assert (go["file_path"], go["language"], go["symbol"], go["end_line"]) == (
        "cmd/mul.go",
        "go",
        "Multiply",
        6,
    )
    assert go["start_line"] <= 3  # the doc comment belongs to the function


def test_code_filters_by_language_extension_and_directory(repo):
    root = repo.cwd
    write(root, "src/v1/api/routes.py", "def route_wombat():\n    return 'wombat'\n")
    write(root, "src/web/view.py", "def view_wombat():\n    return 'wombat'\n")
    write(root, "src/web/page.ts", "export function pageWombat(): string {\n  return 'wombat';\n}\n")
    write(root, "lib/util.go", 'package lib\n\nfunc UtilWombat() string {\n\treturn "wombat"\n}\n')
    write(root, "srcx/other.py", "def other_wombat():\n    return 'wombat'\n")
    commit(root, "wombats")
    index(repo)
    everything = {
        "src/v1/api/routes.py",
        "src/web/view.py",
        "src/web/page.ts",
        "lib/util.go",
        "srcx/other.py",
    }
    assert set(paths(code(repo, "wombat"))) == everything

    assert set(paths(code(repo, "wombat", "--lang", "python"))) == {
        "src/v1/api/routes.py",
        "src/web/view.py",
        "srcx/other.py",
    }
    assert paths(code(repo, "wombat", "--lang", "go")) == ["lib/util.go"]
    assert set(paths(code(repo, "wombat", "--lang", "go", "--lang", "typescript"))) == {
        "lib/util.go",
        "src/web/page.ts",
    }
    assert paths(code(repo, "wombat", "--ext", "ts")) == ["src/web/page.ts"]
    assert set(paths(code(repo, "wombat", "--ext", ".go", "--ext", "ts"))) == {
        "lib/util.go",
        "src/web/page.ts",
    }
    # Written with commas, as `--tag a,b` is (they were refused, or matched nothing).
    assert set(paths(code(repo, "wombat", "--lang", "go,typescript"))) == {"lib/util.go", "src/web/page.ts"}
    assert set(paths(code(repo, "wombat", "--ext", "go, ts"))) == {"lib/util.go", "src/web/page.ts"}
    # A language named as a file type (MCP's file_types=["python"]) is its extensions (it matched nothing).
    assert set(paths(code(repo, "wombat", "--ext", "python"))) == set(
        paths(code(repo, "wombat", "--ext", "py"))
    )
    assert set(paths(code(repo, "wombat", "--ext", "typescript"))) == {"src/web/page.ts"}
    assert paths(code(repo, "wombat", "--files-only", "--role", "source,test")) != []
    proc = repo("code", "wombat", "--role", "source,bogus", ok=False)
    assert proc.returncode == 2 and "unknown role 'bogus'" in proc.stderr and "Traceback" not in proc.stderr
    # A prefix is a directory, not a string prefix: srcx/ is not under src/.
    assert set(paths(code(repo, "wombat", "--dir", "src"))) == {
        "src/v1/api/routes.py",
        "src/web/view.py",
        "src/web/page.ts",
    }
    assert set(paths(code(repo, "wombat", "--dir", "src/web/"))) == {"src/web/view.py", "src/web/page.ts"}
    assert set(paths(code(repo, "wombat", "--dir", "lib", "--dir", "srcx"))) == {
        "lib/util.go",
        "srcx/other.py",
    }
    assert set(paths(code(repo, "wombat", "--dir", "src/*/api/*"))) == {"src/v1/api/routes.py"}
    assert paths(code(repo, "wombat", "--dir", "src", "--lang", "typescript")) == ["src/web/page.ts"]
    # Written as a shell or an agent writes them, they mean the same (they found nothing before).
    assert set(paths(code(repo, "wombat", "--dir", "./src/web"))) == {"src/web/view.py", "src/web/page.ts"}
    assert set(paths(code(repo, "wombat", "--dir", "."))) == everything
    assert paths(code(repo, "wombat", "--ext", "*.ts")) == ["src/web/page.ts"]
    proc = repo("code", "wombat", "--dir", "../elsewhere", ok=False)
    assert proc.returncode == 2 and "leaves the project" in proc.stderr


CART_RB = """\
# Prices in cents.
class Cart
  def initialize(items)
    @items = items
  end

  # The sum of the item prices.
  def total
    @items.sum(&:price)
  end
end
"""


def test_language_filters_take_aliases_and_refuse_unknown_names(repo):
    root = repo.cwd
    write(root, "lib/cart.rb", CART_RB)
    write(
        root,
        "src/cart.c",
        "/* Sum the prices. */\nint cart_total(const int *prices, int n) {\n  return 0;\n}\n",
    )
    write(root, "app.py", "def cart_total():\n    return 0\n")
    commit(root, "carts")
    index(repo)
    assert paths(code(repo, "cart total", "--lang", "rb")) == ["lib/cart.rb"]
    assert paths(code(repo, "cart total", "--lang", "C")) == ["src/cart.c"]
    proc = repo("code", "cart total", "--lang", "cobol", ok=False)
    assert proc.returncode == 2 and "unknown language 'cobol'" in proc.stderr and "ruby" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_files_of_languages_learned_since_they_were_indexed_are_chunked_again_once(repo):
    """An index made when Ruby was cut into plain-text windows gets Ruby's
    units at the next sync; other files are not read again."""
    root = repo.cwd
    write(root, "lib/cart.rb", CART_RB)
    write(root, "app.py", "def wombat():\n    return 1\n")
    commit(root, "cart")
    index(repo)
    with lore.open(root) as project:  # what the previous chunker kept: one "text" window
        store = project.store
        state = store.file_states("code")["lib/cart.rb"]
        with store.transaction():
            file_id = store.put_file("lib/cart.rb", "code", state.sha256, state.mtime_ns, state.size)
            window = ChunkInput(CART_RB.rstrip(), 1, 11, section="lines", language="text")
            store.put_chunks(file_id, "code", [window])
            store.set_meta("chunker_version", "1")
    # The Ruby file, and app.py: version 3 chunks every file of a structured language again.
    assert index(repo)["files_processed"] == 2
    hit = code(repo, "sum of the item prices", "--lang", "ruby")[0]
    assert (hit["file_path"], hit["symbol"], hit["language"]) == ("lib/cart.rb", "Cart", "ruby")
    assert index(repo)["files_processed"] == 0  # once
    write(root, "README.md", "# Wombats\n\nThey eat grass.\n")
    commit(root, "readme")
    index(repo)
    with lore.open(root) as project:  # an index of version 2: its dividers were chunks of their own
        with project.store.transaction():
            project.store.set_meta("chunker_version", "2")
    assert index(repo)["files_processed"] == 2  # cart.rb and app.py, not README.md
    assert index(repo)["files_processed"] == 0
    # Version 3 cut a notebook (named by `include`) into JSON windows: version 4 reads its cells, once.
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cells = [{**cell, "source": ["def notebook_wombat():\n", "    return 1\n"]}]
    write(root, "nb.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}, indent=1))
    commit(root, "notebook")
    index(repo)
    with lore.open(root) as project:
        store = project.store
        state = store.file_states("code")["nb.ipynb"]
        with store.transaction():
            file_id = store.put_file("nb.ipynb", "code", state.sha256, state.mtime_ns, state.size)
            store.put_chunks(
                file_id, "code", [ChunkInput("{ json }", 1, 9, section="lines", language="text")]
            )
            store.set_meta("chunker_version", "3")
    assert index(repo)["files_processed"] == 1  # the notebook only
    hit = code(repo, "notebook_wombat")[0]
    assert (hit["file_path"], hit["symbol"], hit["language"]) == ("nb.ipynb", "notebook_wombat", "python")
    assert index(repo)["files_processed"] == 0


CART_C = "#include <stddef.h>\n\nint cart_total(const int *prices, size_t n) {\n  int sum = 0;\n  for (size_t i = 0; i < n; i++) sum += prices[i];\n  return sum;\n}\n"


def test_chunking_a_file_again_for_its_language_marks_no_memory_stale(repo):
    """A line anchor made when C was plain text hashed the line itself; the
    file's code did not change, so the new units must not make it stale."""
    from lore.index import anchors
    from lore.storage import AnchorRecord

    root = repo.cwd
    write(root, "lib/cart.c", CART_C)
    commit(root, "cart")
    index(repo)
    added = repo.json("add", "-t", "Totals are ints", "-b", "Key files: `lib/cart.c:5` sums the prices.")
    with lore.open(root) as project:  # what the previous chunker and anchors kept
        store = project.store
        state = store.file_states("code")["lib/cart.c"]
        line = CART_C.split("\n")[4]
        with store.transaction():
            file_id = store.put_file("lib/cart.c", "code", state.sha256, state.mtime_ns, state.size)
            store.put_chunks(
                file_id, "code", [ChunkInput(CART_C.rstrip(), 1, 7, section="lines", language="text")]
            )
            old = AnchorRecord(added["id"], "lib/cart.c", None, 5, 5, anchors._hash(line), "lib/cart.c")
            store.replace_anchors(added["id"], [old])
            store.set_meta("chunker_version", "1")
    assert index(repo)["files_processed"] == 1
    assert code(repo, "cart total prices", "--lang", "c")[0]["symbol"] == "cart_total"
    assert repo.json("stale") == []
    # Nor an edit elsewhere in the file later: the anchor was hashed again with the
    # new units (it compared the old line's hash with the whole function's).
    write(root, "lib/cart.c", CART_C + "\nint cart_count(size_t n) {\n  return (int)n;\n}\n")
    index(repo)
    assert repo.json("stale") == []
    # The anchored function itself changing still makes it stale.
    write(root, "lib/cart.c", CART_C.replace("int sum = 0;", "int sum = 1;"))
    index(repo)
    assert [m["id"] for m in repo.json("stale")] == [added["id"]]


def test_code_directory_glob_matches_files_under_matching_directories(repo):
    """`--dir` takes "a directory prefix or glob" (CodeFilter's own example: src/**/api)."""
    root = repo.cwd
    write(root, "src/v1/api/routes.py", "def route_wombat():\n    return 'wombat'\n")
    write(root, "src/web/page.py", "def page_wombat():\n    return 'wombat'\n")
    commit(root, "wombats")
    index(repo)
    assert paths(code(repo, "wombat", "--dir", "src/**/api")) == ["src/v1/api/routes.py"]
    assert paths(code(repo, "wombat", "--dir", "src/*/api")) == ["src/v1/api/routes.py"]
    # `**/` also stands for no folder, and a file named as the folder is that file.
    write(root, "crates/api/lib.py", "def lib_wombat():\n    return 'wombat'\n")
    commit(root, "a crate")
    index(repo)
    assert paths(code(repo, "wombat", "--dir", "crates/**/api")) == ["crates/api/lib.py"]
    assert paths(code(repo, "wombat", "--dir", "src/web/page.py")) == ["src/web/page.py"]
    proc = repo("code", "wombat", "--dir", "", ok=False)
    assert proc.returncode == 2 and "directory filter is empty" in proc.stderr


def test_changed_within_uses_commit_dates(repo):
    root = repo.cwd
    write(root, "old.py", "def capybaralegacy():\n    return 'capybara'\n")
    commit(root, "Old capybara code", date="2015-03-01T12:00:00+00:00")
    write(root, "new.py", "def capybarafresh():\n    return 'capybara'\n")
    commit(root, "New capybara code")
    index(repo)
    assert set(paths(code(repo, "capybara"))) == {"old.py", "new.py"}
    assert paths(code(repo, "capybara", "--changed-within", "30")) == ["new.py"]
    assert set(paths(code(repo, "capybara", "--changed-within", "36500"))) == {"old.py", "new.py"}
    assert code(repo, "capybaralegacy", "--changed-within", "30") == []


def test_changed_within_finds_a_recent_file_among_many_older_matches(repo):
    """The recency filter must select before ranking is cut to the limit."""
    root = repo.cwd
    for i in range(45):
        write(
            root,
            f"old/parser_{i}.py",
            f"def old_parser_{i}():\n    # tokenizer tokenizer tokenizer\n    return 'tokenizer'\n",
        )
    commit(root, "Old parsers", date="2015-03-01T12:00:00+00:00")
    write(
        root,
        "fresh.py",
        "def fresh_code():\n    # uses the tokenizer once, among many other words\n"
        "    return compute_everything_else()\n",
    )
    commit(root, "Fresh code")
    index(repo)
    assert "fresh.py" in paths(code(repo, "tokenizer", "--limit", "50"))
    assert paths(code(repo, "tokenizer", "--changed-within", "30")) == ["fresh.py"]


def _many_chunk_file(word: str, n: int) -> str:
    lines = []
    for i in range(n):
        lines.append(f"def {word}_step_{i}({word}, text):")
        lines.append(f'    """{word.title()} stage {i}: the {word} splits text into {word} units."""')
        lines += [f"    value_{j} = {word}.advance_position(text, offset={j}, stage={i})" for j in range(10)]
        lines += ["    return value_0", ""]
    return "\n".join(lines)


def test_files_only_lists_each_file_once(repo):
    root = repo.cwd
    write(root, "big_tokenizer.py", _many_chunk_file("tokenizer", 5))
    write(root, "small_a.py", "def use_tokenizer():\n    return 'tokenizer'\n")
    write(root, "small_b.py", "def other_tokenizer():\n    return 'tokenizer'\n")
    commit(root, "tokenizers")
    index(repo)
    chunks = paths(code(repo, "tokenizer"))
    assert chunks.count("big_tokenizer.py") >= 3
    files = paths(code(repo, "tokenizer", "--files-only"))
    assert sorted(files) == ["big_tokenizer.py", "small_a.py", "small_b.py"]
    out = repo("code", "tokenizer", "--files-only").stdout
    assert out.count("big_tokenizer.py") == 1


def test_files_only_fills_the_limit_when_one_file_has_many_matching_chunks(repo):
    root = repo.cwd
    write(root, "big_tokenizer.py", _many_chunk_file("tokenizer", 15))
    for name in ("small_a", "small_b", "small_c"):
        write(root, f"{name}.py", f"def {name}():\n    return 'tokenizer'\n")
    commit(root, "tokenizers")
    index(repo)
    assert paths(code(repo, "tokenizer", "--limit", "50")).count("big_tokenizer.py") == 15
    files = paths(code(repo, "tokenizer", "--files-only", "--limit", "2"))
    assert len(files) == 2 and len(set(files)) == 2


def test_limit_defaults_to_10_and_is_capped_at_50(repo):
    root = repo.cwd
    for i in range(60):
        write(root, f"pkg/narwhal_{i:02}.py", f"def narwhal_{i}():\n    return 'narwhal'\n")
    commit(root, "many narwhals")
    index(repo)
    assert len(code(repo, "narwhal")) == 10
    assert len(code(repo, "narwhal", "--limit", "3")) == 3
    assert len(code(repo, "narwhal", "--limit", "100")) == 50
    assert len(set(paths(code(repo, "narwhal", "--files-only", "--limit", "100")))) == 50
    proc = repo("code", "narwhal", "--limit", "0", ok=False)
    assert proc.returncode == 2 and "limit" in proc.stderr


# -- 6. `lore history` -------------------------------------------------------------------------


def test_commits_dated_at_the_epoch_west_of_utc_and_far_ahead_are_indexed(repo):
    # git itself dies printing `%aI` of a commit in the first hours of 1970 with a zone
    # west of UTC ("fatal: Timestamp before Unix epoch", as a converted repository's
    # missing dates are): that one commit made `lore index`, `code` and `recall` fail.
    root = repo.cwd
    write(root, "a.py", "def alpha():\n    return 1\n")
    commit(root, "Epoch commit in Baker Island time", date="@0 -1200")
    write(root, "b.py", "def beta():\n    return 2\n")
    commit(root, "Commit from the year 5138", date="@99999999999 +0000")
    assert repo.json("index")["code"]["commits_added"] == 2
    dates = {h["subject"]: h["date"] for h in repo.json("history", "commit")}
    assert dates == {
        "Epoch commit in Baker Island time": "1970-01-01T00:00:00Z",
        "Commit from the year 5138": "5138-11-16T09:46:39Z",
    }
    assert [h["subject"] for h in repo.json("history", "commit", "--since", "2000")] == [
        "Commit from the year 5138"
    ]
    assert repo.json("code", "alpha")[0]["file_path"] == "a.py"
    assert repo.json("recall", "alpha epoch")["related_work_items"]


def test_history_result_shape(repo):
    root = repo.cwd
    write(root, "README.md", "# Shop\n")
    commit(root, "Start the shop", date="2024-03-01T09:00:00+00:00")
    write(root, "src/payments/refund.py", "def refund(order):\n    return order.total\n")
    write(root, "tests/test_refund.py", "def test_refund():\n    pass\n")
    git(root, "add", "-A")
    git(
        root,
        "commit",
        "-q",
        "-m",
        "Handle partial refunds\n\nStripe sends negative amounts for chargebacks.",
        date="2024-03-05T10:20:30+02:00",
    )
    sha = git(root, "rev-parse", "HEAD")

    hits = repo.json("history", "partial", "refunds")
    assert hits, "no commit found"
    hit = hits[0]
    assert set(hit) >= {"sha", "subject", "author", "date", "files", "relevance"}
    assert hit["sha"] == sha and hit["subject"] == "Handle partial refunds"
    assert (
        hit["author"] == "Ada Tester" and hit["date"] == "2024-03-05T08:20:30Z"
    )  # UTC, like every time Lore prints
    assert sorted(hit["files"]) == ["src/payments/refund.py", "tests/test_refund.py"]
    assert 0 < hit["relevance"] <= 1
    assert repo.json("history", "chargebacks")[0]["sha"] == sha  # the body is searched too
    assert "Start the shop" not in subjects(repo.json("history", "partial", "refunds"))
    text = repo("history", "refunds").stdout
    assert sha[:10] in text and "Handle partial refunds" in text and "src/payments/refund.py" in text


TOKEN = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Bc5Df7Gh9Jk0Ls2Qa4"
URL_PASSWORD = "hunter2" + "secret"


def test_history_keeps_no_secret_from_commit_messages(repo):
    root = repo.cwd
    write(root, "deploy.py", "def deploy():\n    return 1\n")
    message = f"Use token {TOKEN} for CI deploys\n\nDatabase postgres://admin:{URL_PASSWORD}@db/prod"
    commit(root, message)
    hit = repo.json("history", "deploys")[0]
    assert "[REDACTED:github-token]" in hit["subject"] and TOKEN not in hit["subject"]
    shown = repo("history", "deploys").stdout + repo("recall", "CI deploys", "--json").stdout
    assert TOKEN not in shown and URL_PASSWORD not in shown
    with lore.open(root) as project:
        stored = [(c.subject, c.body) for c in project.store.commits()]
        chunks = [c.text for c, _ in project.store.lexical_search("commit", ["deploys"], None, 10)]
    assert stored and not any(TOKEN in s or URL_PASSWORD in b for s, b in stored)
    assert chunks and not any(TOKEN in text or URL_PASSWORD in text for text in chunks)


PROSE_SECRETS = {
    "README.md": ("# Staging\n\nThe staging password is Hunter2Staging, ask ops.\n", "Hunter2Staging"),
    "deploy/config.yaml": ("database:\n  user: app\n  password: YamlPassw0rd8\n", "YamlPassw0rd8"),
    "docs/ops.txt": ("Restart with curl -u admin:CurlPassw0rd9 https://ops.local/restart\n", "CurlPassw0rd9"),
}


def stored_code_text(root) -> str:
    with lore.open(root) as project:
        hits = project.store.lexical_search("code", ["staging", "password", "restart", "database"], None, 50)
        return "\n".join(chunk.text for chunk, _ in hits)


def test_prose_and_config_files_are_indexed_with_human_chosen_passwords_redacted(repo):
    """Code is masked for machine-made secrets only (a false positive hurts code
    search); a README's or a YAML file's password went into the index in clear."""
    root = repo.cwd
    for rel, (text, _secret) in PROSE_SECRETS.items():
        write(root, rel, text)
    write(root, "app.py", 'def login(form):\n    password = form["password"]\n    return password\n')
    index(repo)
    stored = stored_code_text(root)
    assert "The staging password is [REDACTED:password]" in stored
    assert not [secret for _text, secret in PROSE_SECRETS.values() if secret in stored]
    assert 'password = form["password"]' in stored  # code keeps its own words
    assert paths(code(repo, "staging", "password"))[0] == "README.md"

    # An index made before prose was redacted chunks those files again, once.
    with lore.open(root) as project:
        store = project.store
        readme = store.file_states("code")["README.md"]
        with store.transaction():
            store.put_chunks(
                readme.id, "code", code_chunks_in_clear("README.md", PROSE_SECRETS["README.md"][0])
            )
            store.set_meta("prose_redaction", "")
    assert "Hunter2Staging" in stored_code_text(root)
    assert index(repo)["files_processed"] == len(PROSE_SECRETS) + 1  # every file (app.py too), once
    assert "Hunter2Staging" not in stored_code_text(root)
    assert index(repo)["files_processed"] == 0


def code_chunks_in_clear(rel: str, text: str) -> list[ChunkInput]:
    from lore.index.chunker import chunk_file

    return [
        ChunkInput(
            text=c.text, start_line=c.start_line, end_line=c.end_line, section=c.kind, language=c.language
        )
        for c in chunk_file(rel, text)
    ]


def _key_script() -> tuple[str, list[str]]:
    """A shell script writing a private key from a heredoc, long enough to be
    cut into several chunks; and the key's body lines."""
    import base64
    import random

    rng = random.Random(7)
    body = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(26)]
    lines = ["#!/bin/sh", "cat > /etc/ssl/key.pem <<EOF", "-----BEGIN RSA PRIVATE KEY-----", *body]
    lines += ["-----END RSA PRIVATE KEY-----", "EOF"]
    lines += [f"echo 'installer step {n}: configure the service and check it answers'" for n in range(1, 61)]
    return "\n".join(lines) + "\n", body


def test_a_private_key_over_several_chunks_is_masked_whole_and_lines_keep_their_numbers(repo):
    """Masking was per chunk: only the chunk holding the BEGIN line was masked,
    and the key's later lines reached the index, snippets and recall in clear."""
    root = repo.cwd
    text, body = _key_script()
    write(root, "install_key.sh", text)
    index(repo)
    with lore.open(root) as project:
        stored = [
            c for c, _ in project.store.lexical_search("code", ["installer", "step", "redacted"], None, 50)
        ]
    assert len(stored) > 1 and any("[REDACTED:private-key]" in c.text for c in stored)
    assert not [line for line in body if any(line in c.text for c in stored)]
    if not ON_POSTGRES:  # the SQLite file, every page of it
        assert not [line for line in body if line in (root / ".lore/index.db").read_bytes().decode("latin-1")]
    # Lines after the key keep their numbers: the masked block keeps its line breaks.
    line = "echo 'installer step 55: configure the service and check it answers'"
    chunk = next(c for c in stored if line in c.text.splitlines())
    wanted = text.splitlines().index(line) + 1
    assert chunk.text.splitlines()[wanted - chunk.start_line] == line

    # An index made chunk by chunk (before this) chunks the file again, once.
    from lore.secrets import mask_code

    with lore.open(root) as project:
        store = project.store
        state = store.file_states("code")["install_key.sh"]
        old = [
            ChunkInput(
                text=mask_code(c.text)[0],
                start_line=c.start_line,
                end_line=c.end_line,
                section=c.section,
                language=c.language,
            )
            for c in code_chunks_in_clear("install_key.sh", text)
        ]
        with store.transaction():
            store.put_chunks(state.id, "code", old)
            store.set_meta("prose_redaction", "1")
        held = "\n".join(c.text for c, _ in store.lexical_search("code", ["installer", "step"], None, 50))
    assert any(line in held for line in body)
    index(repo)
    with lore.open(root) as project:
        held = "\n".join(
            c.text for c, _ in project.store.lexical_search("code", ["installer", "step"], None, 50)
        )
    assert "installer step" in held and not [line for line in body if line in held]


def test_history_stored_in_clear_by_an_older_lore_is_rewritten(repo):
    """An index whose commits were stored before messages were redacted (an
    older history format) walks the whole history again at the next sync."""
    from lore.index import history_sync
    from lore.storage import CommitRecord

    root = repo.cwd
    write(root, "deploy.py", "def deploy():\n    return 1\n")
    sha = commit(root, "Rotate the CI token")
    index(repo)
    old = CommitRecord(
        sha, "Ada", "ada@example.com", "2024-01-01T00:00:00+00:00", f"Rotate the CI token {TOKEN}", ""
    )
    with lore.open(root) as project:  # what the previous format kept: the message as written
        store = project.store
        with store.transaction():
            store.delete_files([history_sync.PREFIX + sha])
            file_id = store.put_file(history_sync.PREFIX + sha, history_sync.KIND, sha, 0, 0)
            store.put_commit(file_id, old)
            store.put_chunks(file_id, history_sync.KIND, [history_sync.commit_chunk(old)])
            store.set_meta("history_format", "1")
    hit = repo.json("history", "rotate")[0]
    assert hit["sha"] == sha and hit["subject"] == "Rotate the CI token"


# -- 7. `lore status` -----------------------------------------------------------------------------


def test_status_tracks_head_and_work_tree_changes(repo):
    root = repo.cwd
    write(root, "a.py", "def alpha():\n    return 1\n")
    write(root, "b.py", "def beta():\n    return 2\n")
    first = commit(root, "first")
    index(repo)
    status = repo.json("status")
    assert status["git"] is True and status["up_to_date"] is True
    assert status["head"] == status["indexed_commit"] == first
    assert (status["changed_files"], status["new_files"], status["deleted_files"]) == ([], [], [])

    git(root, "commit", "-q", "--allow-empty", "-m", "nothing changed")
    status = repo.json("status")
    assert status["head"] == git(root, "rev-parse", "HEAD") != status["indexed_commit"] == first
    assert status["up_to_date"] is False and status["changed_files"] == []

    write(root, "a.py", "def alpha():\n    return 'one'\n")
    second = commit(root, "edit a")
    status = repo.json("status")
    assert status["head"] == second and status["indexed_commit"] == first
    assert status["up_to_date"] is False and status["changed_files"] == ["a.py"]

    index(repo)
    status = repo.json("status")
    assert status["up_to_date"] is True and status["indexed_commit"] == second

    write(root, "a.py", "def alpha():\n    return 'uno, modified in the work tree'\n")
    write(root, "n.py", "def new_one():\n    return 3\n")
    (root / "b.py").unlink()
    status = repo.json("status")
    assert status["changed_files"] == ["a.py"] and status["new_files"] == ["n.py"]
    assert status["deleted_files"] == ["b.py"] and status["up_to_date"] is False
    text = repo("status").stdout
    assert "stale" in text and "1 changed, 1 new, 1 deleted" in text


def test_a_repository_git_refuses_to_read_is_an_error_that_says_what_to_do(repo):
    """A clone owned by another user (a container's mount, a copy made as root):
    git refuses every command ("dubious ownership") until the folder is marked
    safe. Lore says so; it neither treats the folder as not a repository nor
    drops the history it has indexed."""
    root = repo.cwd
    write(root, "alpha.py", "def alpha_walrus():\n    return 1\n")
    commit(root, "Add the walrus module")
    index(repo)
    refused = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}  # git's own switch for this check
    for args in (("index",), ("status",), ("code", "walrus"), ("history", "walrus"), ("init",)):
        proc = repo(*args, ok=False, env=refused)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "safe.directory" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert repo.json("status")["commits"] == 1
    assert subjects(repo.json("history", "walrus")) == ["Add the walrus module"]


def test_a_linked_worktree_whose_repository_moved_is_an_error_that_says_what_to_do(repo, tmp_path):
    """A linked worktree's .git file names its repository's folder: when that
    repository moves, git cannot open the worktree until `git worktree repair`.
    Lore says so instead of taking the worktree for a folder without git."""
    main = repo.cwd
    write(main, "alpha.py", "def alpha_walrus():\n    return 1\n")
    commit(main, "Add the walrus module")
    tree = tmp_path / "feature"
    git(main, "worktree", "add", "-q", str(tree), "-b", "feature")
    cli = type(repo)(tree)
    assert subjects(cli.json("history", "walrus")) == ["Add the walrus module"]

    moved = main.rename(tmp_path / "moved")
    for args in (("index",), ("status",), ("history", "walrus")):
        proc = cli(*args, ok=False)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "git worktree repair" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    git(moved, "worktree", "repair", str(tree))
    assert subjects(cli.json("history", "walrus")) == ["Add the walrus module"]
    assert cli.json("status")["commits"] == 1


def test_a_head_naming_a_missing_commit_is_an_error_not_an_empty_history(repo):
    """A damaged repository (a crash mid-write, a half-copied .git/): HEAD names
    an object that is not there. That is no unborn branch: Lore says what is
    wrong instead of dropping the indexed history and calling itself stale."""
    root = repo.cwd
    write(root, "alpha.py", "def alpha_walrus():\n    return 1\n")
    sha = commit(root, "Add the walrus module")
    index(repo)
    ref = root / ".git/refs/heads/main"
    ref.write_text("0123456789" * 4 + "\n")
    for args in (("index",), ("status",), ("history", "walrus")):
        proc = repo(*args, ok=False)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "0123456789" in proc.stderr and "git fsck" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    ref.write_text(sha + "\n")
    assert subjects(repo.json("history", "walrus")) == ["Add the walrus module"]
    assert repo.json("status")["commits"] == 1


# -- 8. Outside git ---------------------------------------------------------------------------


def test_a_folder_without_git_is_indexed_and_searched(cli):
    root = cli.cwd
    configure(root)
    write(root, "greeter.py", GREETER)
    write(root, "lib/mul.go", MUL_GO)
    write(root, ".gitignore", "ignored.py\n")
    write(root, "ignored.py", "def ignored_meerkat():\n    return 1\n")
    write(root, "node_modules/dep/index.js", "function vendored_meerkat() {}\n")
    out = index(cli)
    assert out["files_processed"] == 2 and out["commits_added"] == 0
    assert {"path": "node_modules/", "reason": "excluded dir"} in out["skipped"]
    assert paths(code(cli, "Multiply")) == ["lib/mul.go"]
    assert "Greeter.greet" in [h["symbol"] for h in code(cli, "greet")]
    assert code(cli, "ignored_meerkat") == [] and code(cli, "vendored_meerkat") == []
    assert index(cli)["files_processed"] == 0

    status = cli.json("status")
    assert status["git"] is False and status["head"] is None and status["up_to_date"] is True
    assert status["code_files"] == 2
    assert cli.json("history", "anything") == []
    proc = cli("code", "Multiply", "--changed-within", "7", ok=False)
    assert proc.returncode == 2 and "git" in proc.stderr
    proc = cli("code", "Multiply", "--since", "yesterday", ok=False)  # it found nothing, silently
    assert proc.returncode == 2 and "--since needs a git repository" in proc.stderr


# -- 10. Memories are not code ------------------------------------------------------------------


@pytest.mark.parametrize("use_git", [True, False], ids=["git", "no-git"])
def test_memory_files_are_never_indexed_as_code(cli, use_git):
    root = cli.cwd
    configure(root)
    added = cli.json(
        "add",
        "--title",
        "Ocelot cluster deploys",
        "--body",
        "The ocelot cluster deploys from the release branch only.",
        "--tag",
        "deploy",
    )
    write(
        root,
        ".lore/memory/hand-written.md",
        "---\ntitle: Ocelot notes\ntype: fact\noccurred_at: 2025-01-02T03:04:05Z\n---\nOcelot by hand.\n",
    )
    write(root, "docs/ocelot.md", "# Ocelot\n\nThe ocelot runbook lives here.\n")
    write(root, "sub/.lore/memory/nested.md", "Ocelot in a nested lore folder.\n")
    if use_git:
        git(root, "init", "-q", "-b", "main")
        commit(root, "memories and docs")
    out = index(cli)
    assert out["files_processed"] == 1
    assert paths(code(cli, "ocelot")) == ["docs/ocelot.md"]
    assert paths(code(cli, "ocelot", "--dir", ".lore")) == []
    assert cli.json("status")["code_files"] == 1
    assert added["path"] in [h["path"] for h in cli.json("search", "ocelot")]  # still a memory


# -- embeddings: semantic search with the default model -------------------------------------------


def test_semantic_code_search_with_the_default_model(cli):
    root = cli.cwd
    git(root, "init", "-q", "-b", "main")
    write(root, "greeter.py", GREETER)
    write(root, "src/math.ts", MATH_TS)
    write(root, "lib/mul.go", MUL_GO)
    commit(root, "Implement arithmetic helpers and the greeter")
    out = cli.json("index")
    assert out["embedded"] >= out["code"]["chunks_created"] > 0
    status = cli.json("status")
    assert status["search"] == "hybrid" and status["pending_embeddings"] == 0

    hits = code(cli, "product of two integers", "--mode", "vector")
    assert hits[0]["file_path"] == "lib/mul.go" and hits[0]["source"] == "vector"
    assert all(0 <= h["similarity"] <= 1 and set(h) == RESULT_KEYS for h in hits)
    hybrid = code(cli, "say hello to a visitor")
    assert hybrid[0]["file_path"] == "greeter.py"
    assert hybrid[0]["source"] in ("hybrid", "vector", "bm25")
    assert (
        cli.json("history", "arithmetic", "helpers")[0]["subject"]
        == "Implement arithmetic helpers and the greeter"
    )


@pytest.mark.parametrize("swap", ["fifo", "dev-zero", "grown"])
def test_a_file_swapped_between_discovery_and_reading_is_skipped_without_blocking(repo, swap):
    root = repo.cwd
    write(root, "a.py", "def first():\n    return 1\n")
    write(root, "b.py", "def second():\n    return 2\n")
    write(root, "c.py", "def third():\n    return 3\n")

    def replace_b(done: int, total: int) -> None:
        if done == 1:  # a.py is read; b.py was a small regular file when discovery saw it
            (root / "b.py").unlink()
            if swap == "fifo":
                os.mkfifo(root / "b.py")  # reading it would wait for a writer forever
            elif swap == "dev-zero":
                os.symlink("/dev/zero", root / "b.py")  # reading it would never end
            else:
                write(root, "b.py", "x = 1\n" * 400_000)  # 2.4 MB, over max_file_bytes

    with lore.open(root) as project:
        result = project.index_code(progress=replace_b)
    assert [e.split(":")[0] for e in result.errors] == ["b.py"]
    assert "skipped" in result.errors[0]
    assert sorted(paths(code(repo, "first third"))) == ["a.py", "c.py"]


def test_an_index_masked_by_older_rules_chunks_every_file_again_once(repo):
    """Code's rules now read `=>` and SQL: an index made before keeps those
    values in clear unless its files are chunked again (once; unchanged
    chunks keep their vectors)."""
    root = repo.cwd
    secret = "8f812d810a485ed03241b4d419b1b673bd4755d0"
    php = f"<?php\n$config = ['db_host' => 'db', 'api_key' => '{secret}'];\n"
    write(root, "config.php", php)
    write(root, "app.py", "def main():\n    return 1\n")
    assert index(repo)["files_processed"] == 2
    with lore.open(root) as project:
        store = project.store
        assert secret not in "\n".join(c.text for c, _ in store.lexical_search("code", ["config"], None, 50))
        state = store.file_states("code")["config.php"]
        with store.transaction():  # what the rules of version 2 stored
            store.put_chunks(state.id, "code", code_chunks_in_clear("config.php", php))
            store.set_meta("prose_redaction", "2")
    assert index(repo)["files_processed"] == 2
    with lore.open(root) as project:
        held = "\n".join(c.text for c, _ in project.store.lexical_search("code", ["config"], None, 50))
    assert "api_key" in held and secret not in held
    assert index(repo)["files_processed"] == 0
