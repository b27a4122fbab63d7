"""Retrieval v2 (issue 10): all of history with today's paths, file roles, one
hybrid search with filters inside, exact matches first, scores that mean
something, time phrases.

Real git repositories in temp dirs, the Python API and the CLI as a real
subprocess; the bundled embedding model where meaning matters.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lore
from lore.search import fusion, hybrid
from lore.search.text import exactness, lexical_terms, match_features
from lore.storage import ChunkRecord

AUTHOR = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(root: Path, *args: str, date: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(AUTHOR, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def commit(root: Path, message: str, date: str = "2024-01-01T12:00:00+00:00") -> str:
    git(root, "add", "-A", "--", ".", ":!.lore")
    git(root, "commit", "-q", "-m", message, date=date)
    return git(root, "rev-parse", "HEAD")


def bm25_only(root: Path) -> None:
    config = root / ".lore/config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))


def bm25_project(root: Path) -> lore.Lore:
    """`lore init` in `root`, then opened without vectors (fast, exact)."""
    lore.init(root).close()
    bm25_only(root)
    return lore.open(root)


def indexed(root: Path) -> lore.Lore:
    """A BM25-only project over `root` with its code and history indexed."""
    project = bm25_project(root)
    project.index_code()
    return project


@pytest.fixture
def repo(tmp_path, git_env) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


# -- all of history, paths of today ------------------------------------------------------


def test_history_follows_renames_to_paths_of_today_and_drops_deleted_files(repo):
    write(repo, "flask/app.py", "def dispatch_request():\n    return route()\n")
    write(repo, "flask/old.py", "def legacy_helper():\n    pass\n")
    commit(repo, "Fix request dispatch for blueprints", "2023-01-01T12:00:00+00:00")
    write(repo, "flask/app.py", "def dispatch_request():\n    return route(blueprint=True)\n")
    commit(repo, "Blueprint dispatch keeps the request context", "2023-02-01T12:00:00+00:00")
    project = indexed(repo)
    # The package moves into src/, then moves again; old.py is deleted.
    git(repo, "mv", "flask", "src")
    commit(repo, "Move the package into src", "2023-03-01T12:00:00+00:00")
    git(repo, "mv", "src", "pkg")
    git(repo, "rm", "-q", "-f", "pkg/old.py")
    commit(repo, "Rename src to pkg, drop the legacy helper", "2023-04-01T12:00:00+00:00")
    project.index_code()  # incremental: renames remap the stored commits
    hits = project.history("blueprint dispatch request", limit=5)
    first = next(h for h in hits if h.subject == "Fix request dispatch for blueprints")
    assert first.files == ["pkg/app.py"]
    assert first.gone_files == ["flask/old.py"]  # evidence kept on the commit, not offered as a file
    # A full re-walk gives the same answer.
    project.store.set_meta("history_head", "")
    project.index_code()
    again = next(h for h in project.history("blueprint dispatch request") if h.sha == first.sha)
    assert again.files == ["pkg/app.py"]
    files = project.code_search("blueprint dispatch request", files_only=True)
    assert files and files[0].file_path == "pkg/app.py"
    assert not any(h.file_path.startswith(("flask/", "src/")) for h in files)
    project.close()


def test_a_change_landed_twice_is_past_work_once_and_files_since_removed_are_counted(repo):
    """A cherry-pick took two of recall's five past-work places; a commit whose
    main file was since deleted listed its other files as if that was all."""
    write(repo, "parser.py", "def parse(args):\n    return args\n")
    write(repo, "zsh.py", "def complete():\n    pass\n")
    commit(repo, "Start", "2023-01-01T12:00:00+00:00")
    write(repo, "parser.py", "def parse(args):\n    return list(args)\n")
    write(repo, "zsh.py", "def complete():\n    return []\n")
    first = commit(repo, "Correct ZSH completion definitions", "2023-02-01T12:00:00+00:00")
    git(repo, "checkout", "-q", "-b", "maint", first + "~1")
    git(repo, "cherry-pick", first, date="2023-02-02T12:00:00+00:00")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge maint", "maint", date="2023-02-03T12:00:00+00:00")
    git(repo, "rm", "-q", "zsh.py")
    commit(repo, "Drop the zsh module", "2023-03-01T12:00:00+00:00")
    project = indexed(repo)
    found = project.history("Correct ZSH completion definitions", limit=10, fresh=False)
    assert [c.subject for c in found].count("Correct ZSH completion definitions") == 1
    (fix,) = [c for c in found if c.subject == "Correct ZSH completion definitions"]
    assert fix.files == ["parser.py"] and fix.gone_files == ["zsh.py"]
    pack = project.recall("Correct ZSH completion definitions", fresh=False)
    work = [it.renders["L1"] for it in pack.items if it.kind == "work" and "ZSH" in it.renders["L1"]]
    assert len(work) == 1 and "parser.py (+1 since removed)" in work[0], work


def test_incremental_history_after_new_commits_rebase_and_branch_switch(repo):
    write(repo, "a.py", "def alpha():\n    return 1\n")
    commit(repo, "Add alpha")
    project = bm25_project(repo)
    assert project.index_code().commits_added == 1
    write(repo, "b.py", "def beta():\n    return 2\n")
    commit(repo, "Add beta")
    assert project.index_code().commits_added == 1  # only the new one
    assert project.stats()["commits"] == 2
    # Amend (a rewrite): the old commit goes, the new one comes.
    git(repo, "commit", "-q", "--amend", "-m", "Add beta, the second function")
    project.index_code()
    subjects = {h.subject for h in project.history("beta second function alpha", limit=10)}
    assert subjects == {"Add alpha", "Add beta, the second function"}
    # A branch switch to a branch without beta.
    git(repo, "checkout", "-q", "-b", "other", "HEAD~1")
    write(repo, "c.py", "def gamma():\n    return 3\n")
    commit(repo, "Add gamma")
    project.index_code()
    subjects = {h.subject for h in project.history("alpha beta gamma function", limit=10)}
    assert subjects == {"Add alpha", "Add gamma"}
    git(repo, "checkout", "-q", "main")
    project.index_code()
    assert project.stats()["commits"] == 2
    project.close()


def test_history_evidence_sums_over_similar_commits(repo):
    """Two similar commits touching a file outweigh one; a sweep across many files says little."""
    for name in ("session.py", "cookies.py", "noise.py"):
        write(repo, f"src/{name}", f"def {name[:-3]}_handler():\n    return None\n")
    commit(repo, "Initial layout")
    write(repo, "src/session.py", "def session_handler():\n    return 'signed'\n")
    commit(repo, "Sign the session cookie with the secret key")
    write(repo, "src/session.py", "def session_handler():\n    return 'signed, rotated'\n")
    commit(repo, "Rotate the session cookie signing key")
    write(repo, "src/cookies.py", "def cookies_handler():\n    return 'samesite'\n")
    commit(repo, "Cookie samesite attribute for the session")
    for i in range(30):
        write(repo, f"gen/file{i}.py", f"X{i} = {i}\n")
    write(repo, "src/noise.py", "def noise_handler():\n    return 'cookie session signing key'\n")
    commit(repo, "Reformat everything: session cookie signing key sweep")
    project = indexed(repo)
    ranked = [h.file_path for h in project.code_search("session cookie signing key", files_only=True)]
    assert ranked.index("src/session.py") < ranked.index("src/cookies.py")
    session = next(
        h
        for h in project.code_search("session cookie signing key", files_only=True)
        if h.file_path == "src/session.py"
    )
    assert session.commits >= 2
    project.close()


def test_the_file_every_similar_change_touched_ranks_high_without_matching_code(repo):
    """History's top file is offered near the top even when its code has none of
    the task's words: files that are merely middling in both lists must not bury it."""
    write(repo, "src/registry.py", "REGISTRY = {}\n")
    for i in range(10):
        write(
            repo,
            f"src/part{i}.py",
            f"def part_{i}():\n    '''Data {'export ' * (i % 3)}helpers, part {i}.'''\n",
        )
    commit(repo, "Initial layout")
    for fmt in ("csv", "json", "xml", "toml"):
        write(repo, f"src/{fmt}_out.py", f"def write_{fmt}(rows):\n    '''Write rows as {fmt}.'''\n")
        write(repo, "src/registry.py", (repo / "src/registry.py").read_text() + f"REGISTRY['{fmt}'] = 1\n")
        commit(repo, f"Add a {fmt} export format")
    for i in range(10):
        write(repo, f"src/part{i}.py", (repo / f"src/part{i}.py").read_text() + "# export data\n")
        commit(repo, f"Export data helpers, part {i}")
    write(repo, "src/registry.py", "")  # empty today: nothing to chunk, still a file to open
    commit(repo, "Registrations move to the plugins")
    project = indexed(repo)
    ranked = [h.file_path for h in project.code_search("Add a yaml export format", files_only=True)]
    assert "src/registry.py" in ranked[:5], ranked
    project.close()


def test_the_area_a_commit_style_task_names_is_evidence(repo):
    """ "printer: ..." names where the change goes: a file under printer/ that
    matches fewer of the task's words than one elsewhere is ranked first;
    a change type ("fix: ...") names no area and changes nothing."""
    write(
        repo,
        "src/searcher/lines.py",
        "def trim_terminator(line):\n    '''Trim the line terminator of a line before replacements.'''\n"
        "    return line.rstrip()  # line terminator trimmed, replacements follow\n",
    )
    commit(repo, "Add the searcher")
    write(
        repo, "src/printer/util.py", "def replace_all(line, old, new):\n    return line.replace(old, new)\n"
    )
    commit(repo, "Add the printer")
    project = indexed(repo)
    task = "trim line terminator before doing replacements"
    plain = [h.file_path for h in project.code_search(f"fix: {task}", files_only=True)]
    assert plain[0] == "src/searcher/lines.py", plain
    scoped = [h.file_path for h in project.code_search(f"printer: {task}", files_only=True)]
    assert scoped[0] == "src/printer/util.py", scoped
    project.close()


def test_a_file_or_module_the_task_names_is_evidence(repo):
    """A task that names a file ("router.go") or a dotted module
    ("pkg.helpers") points at it, though another file matches more words."""
    write(
        repo,
        "pkg/app.py",
        "def find_root_path(name):\n    '''Root path lookup helpers: the root path lookup of an app.'''\n"
        "    return name  # root path lookup helpers\n",
    )
    write(repo, "pkg/helpers.py", "def get_root_path(import_name):\n    return import_name\n")
    write(repo, "router.go", "package web\n\nfunc handle(path string) string { return path }\n")
    write(
        repo,
        "server.go",
        "package web\n\n// Serve: handle a request path, every request path.\nfunc serve() {}\n",
    )
    commit(repo, "Initial layout")
    project = indexed(repo)
    plain = [h.file_path for h in project.code_search("move the root path lookup back", files_only=True)]
    assert plain[0] == "pkg/app.py", plain
    named = [
        h.file_path
        for h in project.code_search("move the root path lookup back to pkg.helpers", files_only=True)
    ]
    assert named[0] == "pkg/helpers.py", named
    assert (
        project.code_search("handle a request path in router.go", files_only=True)[0].file_path == "router.go"
    )
    project.close()


def test_a_file_the_task_names_in_capitals_comes_first_whatever_its_role(repo):
    """ "Update the README ..." means the project's README (not an example's),
    ranked as source is though its role is docs; a capital that starts a
    sentence names nothing, and a body's "see the README" leaves code first."""
    write(repo, "README.rst", "Widgets\n=======\n\nInstall with pip install widgets.\n")
    write(repo, "examples/demo/README", "Demo of the widgets: install the widgets, run the demo.\n")
    write(
        repo,
        "src/widgets/install.py",
        'def install_widgets(target):\n    """Install the widgets: installation steps."""\n    return target\n',
    )
    write(repo, "src/widgets/Update.py", "def refresh():\n    return 'widgets'\n")
    write(repo, "README.ja.md", "Widgets: install the widgets (installation instructions in Japanese).\n")
    write(repo, "API.md", "The widgets API: JSON parsing of the widgets installation steps.\n")
    write(
        repo, "src/widgets/parse.py", "def parse_json(text):\n    return text  # JSON parsing for widgets\n"
    )
    commit(repo, "Widgets")
    project = indexed(repo)

    def files(task: str) -> list[str]:
        return [h.file_path for h in project.code_search(task, files_only=True)]

    assert files("install the widgets installation steps")[0] == "src/widgets/install.py"
    assert files("update the README installation instructions for the widgets")[0] == "README.rst"
    assert files("Update the widgets installation steps")[0] == "src/widgets/install.py"
    # named in the body only ("see the README"), or after the first sentence, the task is about code first
    assert files("fix the widgets installation steps\n\nSee the README.")[0] == "src/widgets/install.py"
    assert files("fix the widgets installation steps. See the README.")[0] == "src/widgets/install.py"
    # an acronym names no document ("API" is no API.md)
    assert files("Fix JSON parsing in the API for widgets")[0] == "src/widgets/parse.py"
    project.close()


def test_a_test_file_the_task_names_is_ranked_with_source(repo):
    """ "Fix the flaky test in tests/test_warm.py": the file was only listed
    beside its source (tests stay in their tier), never as a likely file."""
    write(repo, "src/warm.py", "def serve_warm(socket):\n    return socket.accept()\n")
    write(repo, "src/cold.py", "def serve_cold(socket):\n    return socket.close()\n")
    write(
        repo,
        "tests/test_warm.py",
        "from warm import serve_warm\n\ndef test_serve_warm_times_out():\n    assert serve_warm\n",
    )
    commit(repo, "Warm server")
    project = indexed(repo)
    found = [
        h.file_path for h in project.code_search("fix the flaky test in tests/test_warm.py", files_only=True)
    ]
    assert found[0] == "tests/test_warm.py", found
    unnamed = [h.file_path for h in project.code_search("fix the flaky warm server test", files_only=True)]
    assert unnamed.index("src/warm.py") < unnamed.index("tests/test_warm.py")  # unnamed, source first
    project.close()


@pytest.mark.storage_independent
def test_which_files_a_document_name_in_capitals_names():
    from lore.search.files import _named_in_capitals

    project = ["README.md", "README.ja.md", "docs/README.md", "examples/demo/README", "CHANGES.rst", "API.md"]

    def named(found: list[str], task: str) -> set[str]:
        return _named_in_capitals(found, task, lambda: project)

    assert named(project, "Update the README and CHANGES") == {"README.md", "CHANGES.rst"}
    # the shallowest of the project's, even when the search found only a deeper one
    assert named(["examples/demo/README", "docs/README.md"], "update the README") == set()
    assert named(project, "Fix the API client's JSON") == set()  # acronyms, not documents
    assert named(project, "Fix login. See the README.") == set()  # the first sentence only
    assert named(project, "fix login\n\nREADME: see it") == set()  # the first line only
    assert named(project, "update the readme") == set()  # a word, not a name written so


@pytest.mark.timeout(15)  # ~1 s; the quadratic versions took 18 s and hours
def test_a_task_holding_a_huge_word_is_searched_in_linear_time(repo):
    """A pasted blob (base64, minified code) in a task: finding the files it
    names must take linear time (these were quadratic: hours at this size)."""
    write(repo, "src/codec.py", "def decode(blob):\n    '''Decode a base64 blob.'''\n    return blob\n")
    commit(repo, "Codec")
    project = indexed(repo)
    for blob in ("QUJD" * 50_000, "a." * 50_000):  # a word with no dot; a name of 50,000 parts
        assert project.code_search(f"decode this blob {blob}", files_only=True)[0].file_path == "src/codec.py"
    project.close()


@pytest.mark.storage_independent
def test_scope_words_of_commit_style_tasks():
    from lore.search.files import scope_words

    assert scope_words("ignore/types: add *.rbw for Ruby") == ["ignore", "types"]
    assert scope_words("fix(middleware/jwt)!: verify the audience") == ["middleware", "jwt"]
    assert scope_words("docs(core, cli): explain") == ["core", "cli"]
    assert scope_words("core.py: fix") == ["core.py"]
    assert scope_words("README.md: fix a link") == ["readme.md"]
    labels = ("Note: it fails", "Error: cannot open", "TypeError: x is None", "CLI: add a flag", "C: drive")
    others = ("fix: a bug", "Docs: typo", "Fix the bug: again", "see http://x.org: it", "add tests")
    for text in (*labels, *others):
        assert scope_words(text) == [], text


# -- file roles --------------------------------------------------------------------------


def test_source_first_tests_beside_docs_findable_when_asked(repo):
    write(
        repo,
        "src/app/routing.py",
        "def url_rule(path):\n    '''Match a URL rule to a view.'''\n    return path\n",
    )
    write(repo, "tests/test_routing.py", "def test_url_rule():\n    assert url_rule('/x') == '/x'\n")
    write(repo, "docs/routing.rst", "URL rules\n=========\n\nA url rule maps a path to a view. url_rule.\n")
    write(repo, "CHANGES.rst", "Version 2\n---------\n\n- url_rule now matches paths. url rule routing.\n")
    commit(repo, "Routing")
    project = indexed(repo)
    files = project.code_search("url rule routing path", files_only=True)
    assert files[0].file_path == "src/app/routing.py" and files[0].role == "source"
    assert files[0].tests == ["tests/test_routing.py"]
    assert {h.file_path: h.role for h in files}["CHANGES.rst"] == "changelog"
    # "add tests" describes the change; the source file it targets still comes first.
    with_tests = project.code_search("fix url rule routing and add tests", files_only=True)
    assert with_tests[0].file_path == "src/app/routing.py"
    # A question about the docs keeps them findable (not pushed down); a role filter gives only them.
    about_docs = [
        h.file_path for h in project.code_search("update the routing docs for url rule", files_only=True)
    ]
    assert "docs/routing.rst" in about_docs[:2]
    assert [h.file_path for h in files].index("docs/routing.rst") >= 2  # pushed down otherwise
    only_docs = project.code_search("url rule", files_only=True, roles=["docs"])
    assert [h.file_path for h in only_docs] == ["docs/routing.rst"]
    project.close()


def test_roles_are_classified_again_when_the_rules_change(repo):
    """An index built under older role rules is corrected by the next sync, without re-chunking."""
    from lore.index.roles import RULES_VERSION

    write(repo, "src/url.ts", "export const splitPath = (path: string) => path.split('/')\n")
    write(repo, "deno_dist/url.ts", "export const splitPath = (path: string) => path.split('/')\n")
    commit(repo, "Split paths")
    project = indexed(repo)
    assert project.store.code_files(["deno_dist/url.ts"]) == {"deno_dist/url.ts": "generated"}
    with project.store.transaction():  # as an index made before rules version 2 holds it
        project.store.set_roles({"deno_dist/url.ts": "source", "src/url.ts": "source"})
        project.store.set_meta("roles_version", "1")
    later = (repo / "deno_dist/url.ts").stat().st_mtime + 10
    os.utime(repo / "deno_dist/url.ts", (later, later))  # touched (a checkout), same bytes
    project.index_code()
    assert project.store.code_files(["deno_dist/url.ts", "src/url.ts"]) == {
        "deno_dist/url.ts": "generated",
        "src/url.ts": "source",
    }
    assert project.store.get_meta("roles_version") == str(RULES_VERSION)
    ranked = [h.file_path for h in project.code_search("split path", files_only=True)]
    assert ranked.index("src/url.ts") < ranked.index("deno_dist/url.ts")
    project.close()


# -- one hybrid search: filters inside, exact first, meaningful scores --------------------------


def test_filtered_search_is_never_short_while_matching_code_exists(repo):
    """A selective filter (1 Go file among 300 Python ones) still finds the Go code by meaning."""
    for i in range(300):
        write(
            repo, f"py/mod{i}.py", f"def handler_{i}(request):\n    return render(request, 'page{i}.html')\n"
        )
    write(
        repo,
        "go/auth.go",
        "package auth\n\n// Check a user's password against the stored hash.\n"
        "func VerifyPassword(hash, plain string) bool {\n\treturn compare(hash, plain)\n}\n",
    )
    commit(repo, "code")
    project = lore.init(repo)
    project.index_code()
    project.embed()
    hits = project.code_search("validate credentials of a login", languages=["go"], mode="vector", limit=5)
    assert [h.file_path for h in hits] == ["go/auth.go"]
    hybrid_hits = project.code_search("validate credentials of a login", languages=["go"], limit=5)
    assert [h.file_path for h in hybrid_hits] == ["go/auth.go"]
    project.close()


FUSION_FILES = {
    "src/session.py": 'def sign_session(data, key):\n    """Sign the session cookie with the secret key."""\n',
    "src/cookies.py": 'def set_cookie(name, value, samesite="Lax"):\n    """Set a cookie on the response."""\n',
    "src/templates.py": 'def render(name, **context):\n    """Render a Jinja template with the context."""\n',
    "src/routing.py": 'def add_url_rule(rule, endpoint, view):\n    """Register a URL rule for a view."""\n',
    "src/config.py": 'def from_envvar(name):\n    """Load configuration from the file an environment variable names."""\n',
    "src/json_provider.py": 'def dumps(obj):\n    """Serialise an object to JSON text for a response."""\n',
}
FUSION_COMMITS = [
    ("src/session.py", "Rotate the session signing key when the secret changes"),
    ("src/cookies.py", "Default cookies to SameSite Lax"),
    ("src/templates.py", "Autoescape templates rendered from strings"),
    ("src/routing.py", "Allow converters in URL rules"),
    ("src/config.py", "Read config files named by environment variables"),
    ("src/json_provider.py", "Sort keys when dumping JSON responses"),
    ("src/session.py", "Store the session in a signed cookie"),
    ("src/cookies.py", "Partitioned cookies for the session"),
]


def test_files_are_ranked_on_evidence_fused_by_rank_unless_configured(repo):
    """`[search] files_fusion` (default rrf) fuses the code and commits that rank
    files; `[search] fusion` still scores search results, and `--fusion` both."""
    for rel, text in FUSION_FILES.items():
        write(repo, rel, text)
    commit(repo, "Initial layout")
    for rel, message in FUSION_COMMITS:
        write(repo, rel, (repo / rel).read_text() + f"# {message}\n")
        commit(repo, message)
    lore.init(repo).close()
    task = (
        "when rendering a template the context processors should also see config values "
        "loaded from the environment and the session"
    )

    def ranked(**kwargs) -> list[str]:
        with lore.open(repo) as project:
            project.index_code()
            return [h.file_path for h in project.code_search(task, files_only=True, **kwargs)]

    by_rank, by_weight = ranked(fusion="rrf"), ranked(fusion="adaptive")
    assert by_rank != by_weight  # the two fusions differ on this task
    # One search fused both ways (recall: past work, and file evidence) gives what each alone gives.
    with lore.open(repo) as project:
        query, _ = project.searcher.query(task, "commit", None)
        both = hybrid.search_each(project.store, "commit", query, limit=20, fusions=("adaptive", "rrf"))
        for way in ("adaptive", "rrf"):
            alone = hybrid.search(project.store, "commit", query, limit=20, fusion_mode=way)
            assert [(h.chunk.chunk_id, h.score) for h in both[way]] == [
                (h.chunk.chunk_id, h.score) for h in alone
            ]
        assert [h.score for h in both["adaptive"]] != [h.score for h in both["rrf"]]
    assert ranked() == by_rank
    config = repo / ".lore/config.toml"
    config.write_text(config.read_text().replace('files_fusion = "rrf"', 'files_fusion = "adaptive"'))
    assert ranked() == by_weight
    config.write_text(config.read_text().replace('files_fusion = "adaptive"', 'files_fusion = "ranked"'))
    with pytest.raises(lore.LoreError, match="files_fusion"):
        ranked()


def test_nonsense_and_empty_queries(tmp_path):
    project = lore.init(tmp_path / "p")
    project.add(
        title="Deploys", body="Releases go to the staging cluster for an hour first.", tags=["deploy"]
    )
    project.add(title="Pets", body="Dogs are welcome in the office on Fridays.", tags=["office"])
    assert project.search("zxqv blorptangle wumfrizzle") == []
    # An explicit vector search as well: it listed every memory, scored 0 (an audit).
    assert all(h.score >= 0.01 for h in project.search("zxqv blorptangle wumfrizzle", mode="vector"))
    assert project.search("dogs in the office", mode="vector")[0].title == "Pets"
    with pytest.raises(lore.UsageError):
        project.search("   ")
    pack = project.recall("zxqv blorptangle wumfrizzle")
    assert not [it for it in pack.items if it.kind == "memory"]
    project.close()


def test_empty_query_is_a_usage_error_on_the_cli(cli):
    for args in (("search", " "), ("code", " "), ("history", " ")):
        proc = cli(*args, ok=False)
        assert proc.returncode == 2 and "empty" in proc.stderr and "Traceback" not in proc.stderr
    # No word to search for: the same answer from every search, not a low-scored README from one.
    for query in ("???", "*", "; ,"):
        for command in ("search", "code", "history", "recall"):
            proc = cli(command, query, ok=False)
            assert proc.returncode == 2 and "no words to search for" in proc.stderr, (command, query)


def test_a_query_of_only_stop_words_or_letters_searches_for_them(cli):
    """``lore code AND`` in a C project, ``x`` or ``a.b.c``: identifiers made
    of stop words or single letters are what the user asked for, not "no words"."""
    (cli.cwd / "parser.h").write_text("#define AND 280\n#define OR 281\n")
    (cli.cwd / "geometry.py").write_text("def shift(point):\n    x = point.x + 1\n    return x\n")
    cli("index")
    assert cli.json("code", "AND", "--files-only")[0]["file_path"] == "parser.h"
    assert cli.json("code", "x", "--files-only")[0]["file_path"] == "geometry.py"
    assert cli.json("code", "point.x", "--files-only")[0]["file_path"] == "geometry.py"


def test_exact_identifier_is_never_outranked_by_a_vector_only_hit(tmp_path):
    project = lore.init(tmp_path / "p")
    project.add(
        title="Token refresh", body="Refreshing OAuth tokens happens in the background worker.", tags=["auth"]
    )
    project.add(
        title="Retry helper", body="Use retry_with_backoff for every call to the payment API.", tags=["retry"]
    )
    project.add(
        title="Backoff", body="Exponential backoff doubles the wait between attempts.", tags=["retry"]
    )
    hits = project.search("retry_with_backoff")
    assert hits[0].title == "Retry helper"
    project.close()


def test_an_exact_identifier_scores_at_least_what_its_words_say(tmp_path):
    """`lore code ZebraStripes` scored the one chunk defining it 0.22 in hybrid
    mode and 0.92 in BM25 mode: its meaning, averaged over a chunk about other
    things, pulled the fused score down. Relevance is comparable across modes."""
    root = tmp_path / "p"
    lore.init(root).close()
    units = [
        f"def unrelated_{i}(rows):\n    total = sum(len(r) for r in rows) * {i}\n    return total\n"
        for i in range(6)
    ]
    units.insert(3, "def ZebraStripes(rows):\n    return [(i % 2, r) for i, r in enumerate(rows)]\n")
    write(root, "table.py", "\n".join(units))
    write(root, "checks.py", "def nonempty(rows):\n    return [r for r in rows if r]\n")
    write(root, "other.py", 'def paint(colour):\n    """Paint the rows in stripes."""\n    return colour\n')
    with lore.open(root) as project:
        project.index_code()
        project.embed()
        hybrid_hit = project.code_search("ZebraStripes", fresh=False)[0]
        words_hit = project.code_search("ZebraStripes", mode="bm25", fresh=False)[0]
        assert hybrid_hit.file_path == words_hit.file_path == "table.py"
        assert hybrid_hit.similarity >= words_hit.similarity >= 0.5
        # A one-word query names what it looks for as exactly (zod's `nonempty`: 0.18, and 0.88 in bm25).
        hybrid_hit = project.code_search("nonempty", fresh=False)[0]
        words_hit = project.code_search("nonempty", mode="bm25", fresh=False)[0]
        assert hybrid_hit.file_path == words_hit.file_path == "checks.py"
        assert hybrid_hit.similarity >= words_hit.similarity >= 0.5


def _handbook(tmp_path: Path) -> lore.Lore:
    """A project of twice as many notes as a candidate list holds, each on one of eight topics."""
    project = lore.init(tmp_path / "p")
    topics = ["invoices", "deploys", "office pets", "coffee", "holidays", "backups", "fonts", "parking"]
    with project.memories.batch():
        for i in range(2 * hybrid.CANDIDATES):
            topic = topics[i % len(topics)]
            project.add(
                title=f"Note {i} on {topic}", body=f"The {topic} rule number {i} of the team handbook."
            )
    project.embed()
    return project


def test_a_keyword_hit_past_the_nearest_candidates_keeps_its_meaning(tmp_path):
    """A keyword candidate the vector candidates did not reach is fused with
    its own cosine, not 0: every hit's similarity is its true cosine, and on
    both backends `vector_scores` gives the cosines `vector_search` gives."""
    project = _handbook(tmp_path)
    store, (query, _) = (
        project.store,
        project.searcher.query("team handbook rule about parking", "memory", None),
    )
    everything = dict(store.vector_search("memory", query.model, query.vector, None, 10_000))
    assert store.vector_scores("memory", query.model, query.vector, list(everything)) == pytest.approx(
        everything
    )
    assert store.vector_scores("memory", query.model, query.vector, []) == {}
    assert store.vector_scores("code", query.model, query.vector, [1, 2, 3]) == {}  # no code vectors at all
    hits = _fused(store, query)
    beyond = [h for h in hits if h.source == "bm25"]  # keyword hits the nearest candidates missed
    assert beyond, "the query should reach past the vector candidates"
    for hit in hits:
        assert hit.similarity == pytest.approx(everything[hit.chunk.chunk_id], abs=1e-5)
    project.close()


def test_a_vector_hit_past_the_keyword_candidates_keeps_its_words(tmp_path):
    """A vector candidate the keyword candidates did not reach is fused with
    its own BM25, not 0: on both backends `lexical_search` scores the chunks
    it is asked `also` for after its best ones, as it would rank them, and
    such a hit is not demoted as meaning-only."""
    project = _handbook(tmp_path)  # every note matches the query's words alike
    store, (query, _) = (
        project.store,
        project.searcher.query("where may cars be left overnight, says the team handbook", "memory", None),
    )
    terms = lexical_terms(query.terms)
    everything = {c.chunk_id: score for c, score in store.lexical_search("memory", terms, None, 10_000)}
    assert len(everything) == 2 * hybrid.CANDIDATES
    best = store.lexical_search("memory", terms, None, 10)
    ranked = sorted(everything, key=lambda i: -everything[i])
    also = ranked[150:] + ranked[:5] + [10**9]  # beyond the best 10, among them, and no chunk at all
    found = store.lexical_search("memory", terms, None, 10, also=also)
    assert [c.chunk_id for c, _ in found[:10]] == [c.chunk_id for c, _ in best]
    assert {c.chunk_id: s for c, s in found[10:]} == pytest.approx({i: everything[i] for i in ranked[150:]})
    assert [s for _, s in found[10:]] == sorted((s for _, s in found[10:]), reverse=True)
    assert store.lexical_search("memory", ["zyzzyva"], None, 10, also=list(everything)) == []
    hits = _fused(store, query)
    beyond = [h for h in hits if h.source == "vector"]  # vector hits the keyword candidates missed
    assert beyond, "the query should reach past the keyword candidates"
    for hit in hits:  # every note holds two of the query's words
        chunk = hit.chunk
        covered, _ = match_features(
            query.terms, query.exact, chunk.text, chunk.title, chunk.keywords, chunk.path
        )
        assert covered > 0
        assert hit.lexical == pytest.approx(
            hybrid.lexical_relevance(everything[chunk.chunk_id], len(query.terms), covered)
        )
    assert hybrid.search(store, "memory", query, limit=3)[0].chunk.title.endswith("parking")
    project.close()


def _fused(store, query: hybrid.Query) -> list[hybrid.Scored]:
    """Every memory the two candidate lists of `query` hold, fused (not cut to a limit)."""
    vector = hybrid._vector(store, "memory", query, None, hybrid.CANDIDATES)
    also = [h.chunk.chunk_id for h in vector]
    lexical, beyond = hybrid._lexical(store, "memory", query, None, hybrid.CANDIDATES, also)
    return hybrid._fuse(
        store, "memory", query, lexical, vector, "hybrid", "adaptive", lambda c: c.chunk_id, beyond
    )


def test_a_clear_vector_winner_cuts_the_keyword_weight_only_when_it_is_near():
    keyword = [0.9, *[0.5] * 19]  # a clear keyword winner
    far = [0.55, *[0.2] * 19]  # a clear vector winner, but far in meaning
    near = [0.98, *[0.6] * 19]  # as clear, and a close paraphrase
    alone = fusion.keyword_weight(keyword)
    assert fusion.keyword_weight(keyword, vector_scores=far) == pytest.approx(alone)
    assert fusion.keyword_weight(keyword, vector_scores=near) < alone * 0.8


_KEYS = st.lists(st.integers(0, 40), unique=True, max_size=30)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_KEYS, st.lists(st.permutations(range(41)), max_size=3), st.integers(0, 12))
def test_hedge_keeps_every_key_and_the_head_and_takes_each_rankings_next_in_turn(ranked, others, start):
    """The hedged order is `ranked` reordered past its first `start` keys: the
    next key each other ranking would add lands within one round of picks."""
    others = [[k for k in other if k in set(ranked)] for other in others]
    out = fusion.hedge(ranked, others, start)
    assert sorted(out) == sorted(ranked) and out[:start] == ranked[:start]
    one_round = start + 1 + len(others)
    for other in others:
        after_head = [k for k in other if k not in set(ranked[:start])]
        if after_head:
            assert out.index(after_head[0]) < one_round
    assert fusion.hedge(ranked, [list(ranked)], start) == ranked
    assert fusion.hedge(ranked, others, 10**6) == ranked


_ROTATION = [
    "Secrets are renewed every ninety days by the vault job.",
    "API tokens get replaced on a fixed schedule.",
    "Passwords expire and must be changed each quarter.",
    "The signing key is swapped out when someone leaves.",
    "Service accounts receive fresh keys monthly.",
    "Database logins are reissued after an incident.",
    "Old SSH keys are revoked and new ones issued.",
    "Cloud access keys are cycled by a cron task.",
    "OAuth client secrets are regenerated yearly.",
    "Deploy tokens are refreshed before they lapse.",
    "TLS certificates are renewed automatically.",
    "Leaked passwords are reset within the hour.",
    # the query's words, other meanings
    "Rotate the log files daily with logrotate.",
    "Credentials in the test fixtures are fake.",
    "The image editor can rotate pictures.",
    "We rotate the on-call duty weekly.",
    "Credentials screen uses the brand colours.",
    "Rotate the dashboard widgets to fit the screen.",
    *(f"Unrelated note {i} about lunch menus and office plants." for i in range(10)),
]


def test_a_page_of_memories_hedges_the_keyword_weight_past_its_first_results(tmp_path, monkeypatch):
    """Past the first ``HEDGE_FROM`` memories, a page takes in turn from the
    adaptive ranking and from a words-leaning and a meaning-leaning one: the
    same memories as the plain ranking up to there, reordered after, with
    scores still falling and a longer page starting with a shorter one."""
    project = lore.init(tmp_path / "p")
    with project.memories.batch():
        for body in _ROTATION:
            project.add(title=body[:40], body=body)
    project.embed()
    store, changed = project.store, 0
    for text in (
        "credential rotation policy",
        "how do we rotate credentials",
        "rotate keys",
        "renew secrets",
    ):
        query, _ = project.searcher.query(text, "memory", None)
        hits = hybrid.search(store, "memory", query, limit=10)
        page = [h.chunk.chunk_id for h in hits]
        longer = hybrid.search(store, "memory", query, limit=20)
        assert [h.chunk.chunk_id for h in longer[:10]] == page
        assert [h.score for h in longer] == sorted((h.score for h in longer), reverse=True)
        with monkeypatch.context() as plain_ranking:
            plain_ranking.setattr(fusion, "HEDGE_FROM", 10**6)
            plain = {h.chunk.chunk_id: h.score for h in hybrid.search(store, "memory", query, limit=50)}
        h = fusion.HEDGE_FROM
        assert page[:h] == list(plain)[:h] and set(page) <= set(plain)
        # A memory lifted above better ones shows at least its own score; none shows less.
        assert all(hit.score >= plain[hit.chunk.chunk_id] for hit in hits)
        changed += page != list(plain)[:10]
    assert changed, "some query's page should differ from the plain ranking's"
    project.close()


def _scored(i: int, source: str, exact: int, score: float, lexical: float = 0.0) -> hybrid.Scored:
    chunk = ChunkRecord(i, "memory", f"m{i}.md", None, None, None, 1, 1, "", "", f"text {i}")
    return hybrid.Scored(chunk, score, source, lexical=lexical, exact=exact)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["bm25", "vector", "hybrid"]),
            st.integers(0, 2),
            st.floats(0, 1),
            st.sampled_from([0.0, 0.4]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_exact_first_property(items):
    ranked = [_scored(i, src, exact, score, lexical) for i, (src, exact, score, lexical) in enumerate(items)]
    ranked.sort(key=lambda h: -h.score)
    query = hybrid.Query.of("anything")
    out = hybrid.exact_first(list(ranked), query)
    assert sorted(h.chunk.chunk_id for h in out) == sorted(h.chunk.chunk_id for h in ranked)
    positions = {h.chunk.chunk_id: i for i, h in enumerate(out)}
    for exact_hit in (h for h in out if h.exact > 0):
        for weak in (h for h in out if h.source == "vector" and h.exact == 0 and h.lexical == 0):
            assert positions[exact_hit.chunk.chunk_id] < positions[weak.chunk.chunk_id]
    # A vector candidate holding some of the words keeps its place among the others.
    worded = [
        h.chunk.chunk_id for h in ranked if not (h.source == "vector" and h.exact == 0 and h.lexical == 0)
    ]
    assert [h.chunk.chunk_id for h in out if h.chunk.chunk_id in set(worded)] == worded
    scores = [h.score for h in out]
    assert scores == sorted(scores, reverse=True)


# -- time in queries ------------------------------------------------------------------------------


def test_since_until_phrases_on_search_history_code_and_recall(repo):
    write(repo, "old.py", "def archive_orders():\n    return 'orders archived'\n")
    commit(repo, "Archive old orders nightly", "2020-03-01T12:00:00+00:00")
    write(repo, "new.py", "def export_orders():\n    return 'orders exported'\n")
    commit(repo, "Export orders to CSV", "2099-01-01T12:00:00+00:00")  # "in the future" stays in range
    project = indexed(repo)
    project.add(
        title="Orders archive",
        body="Old orders are archived every night at 2am.",
        occurred_at="2020-03-02T00:00:00Z",
        tags=["orders"],
    )
    project.add(title="Orders export", body="Orders are exported to CSV for accounting.", tags=["orders"])
    assert [h.subject for h in project.history("orders", since="2 years ago")] == ["Export orders to CSV"]
    assert [h.subject for h in project.history("orders", until="2021")] == ["Archive old orders nightly"]
    assert [h.title for h in project.search("orders", since="last month")] == ["Orders export"]
    assert [h.title for h in project.search("orders", until="2020-03-01")] == []
    assert [h.title for h in project.search("orders", until="March 2020")] == ["Orders archive"]
    assert [h.file_path for h in project.code_search("orders", since="2021-01-01")] == ["new.py"]
    pack = project.recall("orders", since="last week")
    assert {it.data["title"] for it in pack.items if it.kind == "memory"} == {"Orders export"}
    with pytest.raises(lore.UsageError):
        project.search("orders", since="the day after never")
    project.close()


def test_a_scored_hits_copy_has_every_field_and_is_its_own():
    """Fusions score copies of their hits; a field added to Scored must be copied too."""
    import dataclasses

    fields = {f.name for f in dataclasses.fields(hybrid.Scored)}
    values = {
        "chunk": None,
        "score": 0.25,
        "source": "vector",
        "lexical": 0.5,
        "similarity": 0.75,
        "exact": 2,
    }
    assert set(values) == fields, "a new Scored field: give it a value here and copy it in Scored.copy"
    hit = hybrid.Scored(**values)
    copied = hit.copy()
    assert copied is not hit and dataclasses.asdict(copied) == dataclasses.asdict(hit)
    copied.score = 0.9
    assert hit.score == 0.25


# -- what a result is shown with, and in which order ----------------------------------------------


def test_a_files_score_is_its_own_relevance_whatever_is_asked_and_whoever_ranks_near(repo):
    """A file was shown with the score of the best file ranked after it, within
    the files asked for: `tox.ini --limit 4` showed a workflow file at 0.45,
    `--limit 5` at 0.81, and a docs page was shown at 0.28 by `--files-only`
    but 0.95 by `lore code`. A file's score is its own best evidence."""
    write(repo, "src/shop/cart.py", "def add_to_cart(cart, item):\n    '''Add an item to the cart.'''\n")
    write(repo, "src/shop/prices.py", "def cart_total(cart):\n    return sum(i.price for i in cart)\n")
    write(repo, "tests/test_cart.py", "def test_add_to_cart():\n    add_to_cart([], 'apple')  # cart\n")
    write(
        repo, "docs/cart.rst", "The cart\n========\n\nAdding an item to the cart: add_to_cart(cart, item).\n"
    )
    commit(repo, "Shop")
    project = indexed(repo)
    query = "add an item to the cart"
    ranked = project.code_search(query, files_only=True, limit=10)
    own = {h.file_path: h.similarity for h in ranked}
    assert len(own) >= 4
    for limit in range(1, len(own) + 1):
        assert {
            h.file_path: h.similarity for h in project.code_search(query, files_only=True, limit=limit)
        } == {h.file_path: own[h.file_path] for h in ranked[:limit]}
    chunks = project.code_search(query, limit=50)
    for path, score in own.items():
        assert score == max(c.similarity for c in chunks if c.file_path == path), path
    # Source first, though the docs page holds more of the task's words.
    assert ranked[0].file_path == "src/shop/cart.py" and own["docs/cart.rst"] > own["src/shop/prices.py"]
    # Recall keeps the ranking's order, and shows each file with its own score.
    pack = project.recall(query, budget=4000)
    files = [it for it in pack.items if it.kind == "file"]
    assert [it.key for it in files] == [h.file_path for h in ranked][: len(files)]
    assert {it.key: it.data["score"] for it in files} == {it.key: own[it.key] for it in files}
    project.close()


def test_every_term_means_words_that_start_with_the_terms():
    """`lore code "click current"` ranked the changelog's ``.. currentmodule::
    click`` (found by meaning alone) first: five letters of "current" inside
    "currentmodule" counted as the word, so it was taken for a chunk holding
    every term and kept above the chunks that do."""
    terms = ["click", "current"]
    assert exactness(terms, [], ".. currentmodule:: click") == 0
    assert exactness(terms, [], "def get_current_context():\n    '''The click context.'''") == 1
    assert exactness(terms, [], "ctx = getCurrentContext()  # click") == 1
    assert exactness(terms, [], "Clicked: currently shown") == 1  # -ed, -ly
    assert exactness(["pass"], [], "the password") == 0
    assert exactness(["connect"], [], "open a connection") == 1
    assert exactness(["connect"], [], "a reconnection") == 0
    assert exactness(["click"], ["click.echo"], "see click.echo") == 2
    assert exactness(["straße"], [], "İstanbul straße") == 1  # a lower case of another length


def test_a_named_definition_or_file_comes_first_then_source(repo):
    """`lore code CliRunner` put a conftest, a test and a docs page above the
    class; `lore code src/click/testing.py` put a test module first."""
    write(
        repo,
        "src/kit/testing.py",
        "import os\n\n\nclass CliRunner:\n    '''Invoke a command in isolation.'''\n\n"
        "    def invoke(self, cli):\n        return cli()\n",
    )
    for n in range(3):
        write(
            repo,
            f"tests/test_runner_{n}.py",
            "from kit.testing import CliRunner\n\n\ndef test_runner():\n"
            "    runner = CliRunner()\n    assert CliRunner().invoke(lambda: 1) == 1  # CliRunner CliRunner\n",
        )
    write(repo, "docs/testing.rst", "Testing\n=======\n\nUse CliRunner. A CliRunner runs a CliRunner.\n")
    write(repo, "src/kit/other.py", "from kit import testing\n\n\ndef helper():\n    return testing\n")
    commit(repo, "Kit")
    project = indexed(repo)
    hits = project.code_search("CliRunner")
    assert (hits[0].file_path, hits[0].symbol) == ("src/kit/testing.py", "CliRunner")
    roles = [h.role for h in hits]
    assert roles.index("test") > roles.index("source") and roles[-1] in ("docs", "test")
    named = project.code_search("kit/testing.py")
    assert named[0].file_path == "src/kit/testing.py"
    # A role the query is about joins the source tier.
    assert project.code_search("CliRunner docs")[1].file_path == "docs/testing.rst"
    project.close()


def test_a_one_word_lookup_finds_the_definition_past_the_many_names_holding_the_word(repo):
    """`lore code redact` on Lore's own code listed redact_fields, redact_values,
    warn_redacted... and never `def redact`; `lore code MAX_LIMIT` put a test's
    comment before the constant's assignment."""
    names = ("fields", "values", "names", "tags", "paths", "links", "titles", "bodies", "notes", "keys")
    helper = 'def redact_{0}(text):\n    """Redact the {0} parts: redact, redact, redact."""\n    return redact(text)\n\n\n'
    write(repo, "src/kit/helpers.py", "".join(helper.format(n) for n in names) * 4)
    write(repo, "src/kit/secrets.py", "import re\n\n\ndef redact(text):\n    return re.sub('x', '*', text)\n")
    write(repo, "src/kit/limits.py", "import os\n\nMAX_LIMIT = 50\n")
    write(repo, "tests/test_limits.py", "# MAX_LIMIT is fifty\nfrom kit.limits import MAX_LIMIT\n")
    commit(repo, "Kit")
    project = indexed(repo)
    first = project.code_search("redact")[0]
    assert (first.file_path, first.symbol) == ("src/kit/secrets.py", "redact")
    assert project.code_search("MAX_LIMIT")[0].file_path == "src/kit/limits.py"
    project.close()


def test_a_lookup_takes_declarations_only_in_the_case_written_first_from_the_signature(repo):
    """An audit: `lore code configure` on Lore's own code listed 40 chunks
    passing `configure=partial(...)` on a line of their own (and cobra's
    comments, "// check for ...", for `check`) as definitions, so the pool was
    never read deeper and `def configure` never came; `testPersistentHooks`
    ranked Go's other `TestPersistentHooks` first; a long function's later
    window came before its signature; and what came first depended on --limit."""
    call = "def build_{0}(factory):\n    return factory(\n        name='{0}',\n        configure=lambda c: c,\n    )\n"
    for n in range(40):
        write(repo, f"src/kit/builders_{n}.py", call.format(n) + "\n\n# check for configure options\n")
    write(
        repo,
        "src/kit/server.py",
        "class LocalServer:\n    def configure(self, options):\n        return options\n",
    )
    go = 'package hooks\n\nfunc {0}(t *testing.T) {{\n\tt.Log("{1}")\n}}\n'
    write(repo, "hooks/upper_test.go", go.format("TestPersistentHooks", "upper"))
    write(repo, "hooks/lower_test.go", go.format("testPersistentHooks", "lower"))
    body = "".join(f"    step_{k} = compute_step(options, {k}) + load_bundle_part({k})\n" for k in range(160))
    write(repo, "src/kit/bundles.py", f"def load_bundle(options):\n{body}    return step_0\n")
    commit(repo, "Kit")
    project = indexed(repo)
    for limit in (3, 10, 40):
        assert project.code_search("configure", limit=limit)[0].file_path == "src/kit/server.py", limit
    assert project.code_search("configure", files_only=True, limit=3)[0].file_path == "src/kit/server.py"
    assert project.code_search("testPersistentHooks")[0].file_path == "hooks/lower_test.go"
    assert project.code_search("TestPersistentHooks")[0].file_path == "hooks/upper_test.go"
    assert project.code_search("upper testPersistentHooks.")[0].file_path == "hooks/lower_test.go"
    windows = [h for h in project.code_search("load_bundle", limit=10) if h.file_path == "src/kit/bundles.py"]
    assert len(windows) > 1 and windows[0].start_line == 1
    # A file named by name comes before code assigning its extension's word (`json = ...`).
    write(repo, "package.json", '{"name": "kit", "version": "1.0.0"}\n')
    write(repo, "src/kit/fetch.py", "import json\n\njson = json.loads('{}')\n")
    commit(repo, "Package")
    project.index_code()
    assert project.code_search("package.json")[0].file_path == "package.json"
    assert project.code_search("package.json", files_only=True)[0].file_path == "package.json"
    # The first results do not depend on the limit.
    short = [(h.file_path, h.start_line) for h in project.code_search("configure options", limit=5)]
    long = [(h.file_path, h.start_line) for h in project.code_search("configure options", limit=45)]
    assert long[:5] == short
    project.close()


def test_a_task_foreign_to_the_project_packs_nothing_found_by_meaning_alone(repo):
    """Tasks of words the project never uses ("tuba kumquat nebula") filled
    click's pack with files, code and past commits found by meaning alone at
    0.06-0.23; so did an unrelated real task. Recall leaves them out."""
    topics = {
        "invoices": "Compute invoice totals and round each line to cents",
        "accounts": "Create user accounts and hash their passwords",
        "mailer": "Send the weekly digest email to every subscriber",
        "search": "Rank products by how well their names match the query",
        "reports": "Render the monthly sales report as a PDF",
    }
    for name, summary in topics.items():
        write(repo, f"app/{name}.py", f"def {name}_job(rows):\n    '''{summary}.'''\n    return rows\n")
        commit(repo, summary)
        write(repo, f"app/{name}.py", (repo / f"app/{name}.py").read_text() + "# reviewed\n")
        commit(repo, f"Tidy the {name} module")
    lore.init(repo).close()
    with lore.open(repo) as project:
        project.index_code()
        for task in ("xylophone quasar marmalade", "tuba kumquat nebula", "walrus origami lagoon"):
            pack = project.recall(task)
            assert pack.items == [], (task, [(it.kind, it.key, it.value) for it in pack.items])
        found = project.recall("Round invoice lines to cents")  # words it does use
        assert "app/invoices.py" in [it.key for it in found.items if it.kind == "file"]


def test_paths_given_at_the_shell_are_read_from_the_current_directory(repo):
    """`--dir` was read from the project's root whatever the directory: from
    inside net/, `--dir go` matched nothing and `--dir .` the whole project;
    an absolute path inside the project matched nothing, silently."""
    from conftest import CLI

    write(repo, "py/retry.py", "def retry_backoff():\n    '''Retry with backoff.'''\n")
    write(
        repo,
        "net/go/retry.go",
        "package net\n\n// RetryBackoff retries with backoff.\nfunc RetryBackoff() {}\n",
    )
    commit(repo, "Retry in two languages")
    lore.init(repo).close()
    bm25_only(repo)
    cli = CLI(repo)

    def files(*args: str, cwd: Path = repo) -> set[str]:
        return {h["file_path"] for h in cli.json("code", "retry backoff", *args, cwd=cwd)}

    assert files("--dir", "net/go") == {"net/go/retry.go"}
    assert files("--dir", "go", cwd=repo / "net") == {"net/go/retry.go"}
    assert files("--dir", ".", cwd=repo / "net") == {"net/go/retry.go"}
    assert files("--dir", str(repo / "py")) == {"py/retry.py"}
    outside = cli("code", "retry", "--dir", str(repo.parent), ok=False)
    assert outside.returncode == 2 and "outside the project" in outside.stderr
    assert "Traceback" not in outside.stderr
    # recall --files too; a file the index does not hold is said to be so.
    pack = cli.json("recall", "retry", "--files", "go/retry.go", "--files", "go/gone.go", cwd=repo / "net")
    reasons = {f["path"]: f["reasons"] for f in pack["files"]}
    assert reasons["net/go/retry.go"] == ["named by the task"]
    assert reasons["net/go/gone.go"] == ["named by the task, not in the index"]


def test_a_lower_history_cap_applies_without_force_and_a_higher_one_walks_again(repo):
    for n in range(7):
        write(repo, "log.py", f"VERSION = {n}\n")
        commit(repo, f"Release number {n}", f"2024-01-0{n + 1}T12:00:00+00:00")
    project = indexed(repo)
    assert project.store.counts().commits == 7
    project.close()
    config = repo / ".lore/config.toml"
    config.write_text(config.read_text().replace("history_commits = 200000", "history_commits = 3"))
    with lore.open(repo) as project:
        project.index_code()
        assert sorted(c.subject for c in project.store.commits()) == [
            f"Release number {n}" for n in (4, 5, 6)
        ]
    config.write_text(config.read_text().replace("history_commits = 3", "history_commits = 5"))
    with lore.open(repo) as project:
        project.index_code()
        assert project.store.counts().commits == 5


def test_piped_results_are_one_line_each_whatever_the_width(repo):
    """Piped, `lore history` wrapped at 80 columns: a commit's date landed on a
    line of its own and broke grep."""
    from conftest import CLI

    subject = "Make the nightly export of every order to the accounting CSV file retry on timeouts"
    write(repo, "export.py", "def export_orders():\n    return 'orders'\n")
    commit(repo, subject)
    lore.init(repo).close()
    bm25_only(repo)
    out = CLI(repo)("history", "nightly export orders", env={"COLUMNS": "80"}).stdout
    line = next(line for line in out.splitlines() if "nightly export" in line)
    assert subject in line and "Ada" in line and len(line) > 80


def test_secrets_in_commit_authors_and_file_names_stay_out_of_the_index(repo):
    """Only a commit's message was redacted: an author or email holding a
    token, or a file named after one, reached the index (and `lore history`)
    in clear."""
    aws, github = "AKIAQ3EGRTZL5XK7WN4P", "ghp_R8tXq2LmN5vB7cZ9wK3jH6fD1sA4gE0yU2iO"
    write(repo, f"config_{aws}.py", "def load_config():\n    return {}\n")
    write(repo, "app/settings_loader.py", "def load_settings():\n    return {}\n")
    git(repo, "add", "-A")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        AUTHOR, GIT_AUTHOR_NAME=aws, GIT_AUTHOR_EMAIL=f"{github}@example.com", GIT_CONFIG_GLOBAL=os.devnull
    )
    subprocess.run(["git", "commit", "-q", "-m", "Load the configuration"], cwd=repo, env=env, check=True)
    project = indexed(repo)
    found = project.history("Load the configuration")
    assert found and aws not in found[0].author and github not in str(found[0].files)
    assert "[REDACTED" in found[0].author and "app/settings_loader.py" in found[0].files
    assert not [h for h in project.code_search("load config") if aws in h.file_path]
    project.close()
    stored = b"".join(p.read_bytes() for p in (repo / ".lore").rglob("*") if p.is_file())
    assert aws.encode() not in stored and github.encode() not in stored


def test_a_file_that_can_no_longer_be_read_safely_leaves_the_index(repo, tmp_path):
    """A tracked file's folder replaced by a link out of the project: the file
    was skipped with a clear reason, but its old code stayed searchable."""
    write(repo, "lib/x.py", "def inside_only():\n    return 1\n")
    commit(repo, "Lib")
    project = indexed(repo)
    assert [h.file_path for h in project.code_search("inside_only")] == ["lib/x.py"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("def inside_only():\n    return 2\n")
    for child in (repo / "lib").iterdir():
        child.unlink()
    (repo / "lib").rmdir()
    (repo / "lib").symlink_to(outside)
    result = project.index_code()
    assert any("lib/x.py: skipped" in error for error in result.errors)
    assert project.code_search("inside_only") == []
    project.close()


def test_private_memories_and_the_index_stay_out_of_git_on_a_branch_from_before_lore(repo):
    """`.lore/.gitignore` was the only protection: a checkout of a branch from
    before Lore removed it, `git add -A` committed the index and a private
    memory, and switching back deleted that memory from the work tree."""
    write(repo, "app.py", "def app():\n    return 1\n")
    commit(repo, "Before Lore")
    git(repo, "branch", "release-1.0")
    project = lore.init(repo, agent="claude")
    git(repo, "add", ".lore")
    git(repo, "commit", "-q", "-m", "Adopt Lore")
    note = project.add(
        title="Private note", body="My private lesson about the staging deploys.", private=True
    )
    project.index_code()
    project.close()
    git(repo, "checkout", "-q", "release-1.0")
    assert not (repo / ".lore/.gitignore").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # nothing to commit
    with lore.open(repo) as again:
        problems = [p for p in again.doctor() if p.where == ".lore/.gitignore"]
    assert problems and "lore init" in problems[0].message
    git(repo, "checkout", "-q", "main")
    assert note.path and (repo / note.path).exists()


def test_where_a_shallow_clone_stops_a_commit_changes_no_file_rather_than_all(repo, tmp_path):
    """git compares the oldest commit of a shallow clone with nothing, so it was
    stored as changing every file (333 in a depth-3 clone of Lore), and each
    of them was its evidence."""
    for n in range(6):
        write(repo, f"mod{n}.py", f"def part_{n}():\n    return {n}\n")
    commit(repo, "Six modules")
    write(repo, "mod1.py", "def part_1():\n    return 'one'\n")
    commit(repo, "Part one returns a word")
    write(repo, "mod2.py", "def part_2():\n    return 'two'\n")
    commit(repo, "Part two returns a word")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(clone))
    project = indexed(clone)
    files = {c.subject: c.files for c in project.store.commits()}
    assert files == {"Part one returns a word": [], "Part two returns a word": ["mod2.py"]}
    git(clone, "fetch", "-q", "--unshallow")
    project.index_code()
    files = {c.subject: sorted(c.files) for c in project.store.commits()}
    assert files["Part one returns a word"] == ["mod1.py"] and len(files["Six modules"]) == 6
    project.close()


def test_an_extension_filter_naming_no_extension_is_a_usage_error(repo):
    write(repo, "a.py", "def alpha():\n    return 1\n")
    commit(repo, "Alpha")
    project = indexed(repo)
    assert [h.file_path for h in project.code_search("alpha", extensions=["*.py"])] == ["a.py"]
    for empty in ("", ".", "..", "*."):
        with pytest.raises(lore.UsageError, match="names no extension"):
            project.code_search("alpha", extensions=[empty])
    project.close()


def test_an_orphan_branch_is_indexed_and_up_to_date(repo):
    """On a branch with no commit yet, `lore status` said stale after every `lore index`."""
    write(repo, "a.py", "def alpha():\n    return 1\n")
    commit(repo, "Alpha")
    project = indexed(repo)
    git(repo, "checkout", "-q", "--orphan", "fresh")
    project.index_code()
    status = project.code_index.changes()
    assert status["head"] is None and status["indexed_commit"] is None and status["up_to_date"]
    project.close()


def test_a_blank_since_or_until_is_a_usage_error_not_a_filter_left_out(cli):
    for command in ("search", "code", "history", "recall", "list"):
        for option in ("--since", "--until"):
            args = (command, option, " ") if command == "list" else (command, "orders", option, "")
            proc = cli(*args, ok=False)
            assert proc.returncode == 2 and option in proc.stderr and "empty" in proc.stderr, (
                args,
                proc.stderr,
            )
            assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_task_of_many_words_finds_source_before_a_changelog_line_holding_them_all(tmp_path):
    """Changelogs are written in task words: a changelog line holding every
    word of "add a flag to limit the number of matches per file" came before
    the source defining that flag. A short lookup still puts the chunk holding
    all its words first, whatever its role."""
    root = tmp_path / "p"
    lore.init(root).close()
    write(
        root,
        "CHANGELOG.md",
        "# Changes\n\n- Added --max-count, a flag to limit the number of matches per file.\n",
    )
    write(
        root,
        "src/args.py",
        "def flag_max_count(parser):\n"
        '    """--max-count: stop reading a file after this many matching lines."""\n'
        '    parser.add_argument("--max-count", type=int, help="matches per file")\n',
    )
    write(root, "src/walk.py", "def walk(root):\n    return sorted(root.iterdir())\n")
    with lore.open(root) as project:
        project.index_code()
        project.embed()
        hits = project.code_search("add a flag to limit the number of matches per file", fresh=False)
        assert [h.file_path for h in hits][:2] == ["src/args.py", "CHANGELOG.md"]
        assert project.code_search("limit matches", fresh=False)[0].file_path == "CHANGELOG.md"


def test_a_lookup_puts_the_file_defining_the_identifier_first(tmp_path):
    """`lore code HandleContext --files-only` ranked a file full of "context"
    (never naming HandleContext) above the one defining it as a method."""
    root = tmp_path / "p"
    lore.init(root).close()
    write(
        root,
        "context.py",
        "\n\n".join(
            f'class Context{i}:\n    """The request context: handle the context of a request."""\n'
            f"    def handle(self, context):\n        self.context = context\n"
            f"        return self.handle_context(context)\n"
            for i in range(8)
        ),
    )
    write(
        root,
        "engine.py",
        "class Engine:\n    def __init__(self):\n        self.routes = []\n\n"
        "    def HandleContext(self, c):\n        # re-enter the engine with a rewritten context\n"
        "        old = c.index\n        self.serve(c)\n        c.index = old\n",
    )
    with lore.open(root) as project:
        project.index_code()
        project.embed()
        assert project.code_search("HandleContext", files_only=True, fresh=False)[0].file_path == "engine.py"
        assert project.code_search("HandleContext", fresh=False)[0].file_path == "engine.py"


def test_the_first_ten_likely_files_do_not_depend_on_the_limit(tmp_path):
    """A longer list read more code chunks, so `--limit 20` reordered the top five."""
    root = tmp_path / "p"
    lore.init(root).close()
    rng = random.Random(4)
    words = "client session socket buffer stream header payload chunk window backoff jitter deadline".split()
    for i in range(80):
        units = [
            f"def retry_upload_{i}_{j}(client, attempt):\n"
            f'    """Retry the upload after a timeout. {" ".join(rng.choice(words) for _ in range(16))}"""\n'
            + "".join(f"    value_{k} = client.{rng.choice(words)}(attempt, {k})\n" for k in range(8))
            + "    return value_0\n"
            for j in range(1 + i % 3)
        ]
        write(root, f"pkg{i % 9}/upload_{i}.py", "\n\n".join(units))
    with lore.open(root) as project:
        project.index_code()
        project.embed()

        def top(limit: int) -> list[str]:
            hits = project.code_search(
                "retry the upload after a timeout", files_only=True, limit=limit, fresh=False
            )
            return [h.file_path for h in hits]

        first = top(10)
        assert len(first) == 10
        for limit in (12, 30, 50):
            assert top(limit)[:10] == first, limit


def test_a_long_pasted_description_is_read_for_its_first_terms(tmp_path):
    """recall_context takes descriptions of up to 1,000,000 characters: a
    124 KB paste of distinct words took 3 s, every term checked in every
    candidate and snippet. Its first MAX_TERMS terms are read; what the task
    says first still finds its file."""
    from lore.search.text import MAX_TERMS, terms

    rng = random.Random(3)
    filler = " ".join(
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 9)))
        for _ in range(20_000)
    )
    assert len(terms(filler)) == MAX_TERMS
    assert terms("zebra stripes " + filler)[:2] == ["zebra", "stripes"]
    root = tmp_path / "p"
    lore.init(root).close()
    write(root, "table.py", "def zebra_stripes(rows):\n    return [(i % 2, r) for i, r in enumerate(rows)]\n")
    write(root, "other.py", "def paint(colour):\n    return colour\n")
    with lore.open(root) as project:
        project.index_code()
        found = project.code_search("zebra stripes " + filler, files_only=True, fresh=False)
        assert found[0].file_path == "table.py"
        assert project.recall(
            "Fix zebra stripes", description="zebra stripes " + filler, fresh=False
        ).markdown


def test_results_found_by_meaning_alone_and_scored_low_are_marked_weak(cli):
    """A query sharing no word with the code is answered by meaning alone; the
    loose matches among those say so (JSON `weak`; a line before the text
    results when all of them are), as recall leaves them out."""
    for name in ("billing", "shipping", "users", "auth", "cart"):
        (cli.cwd / f"{name}.py").write_text(
            f'def {name}_total(items):\n    """Add up the {name} amounts for the report."""\n'
            "    return sum(i.amount for i in items)\n"
        )
    cli("index")
    hits = cli.json("code", "money owed by customers")
    assert any(h["weak"] for h in hits)
    for hit in hits:
        assert hit["weak"] == (hit["source"] == "vector" and hit["similarity"] < 0.2), hit
    assert not any(h["weak"] for h in cli.json("code", "billing amounts"))
    weak = [h["file_path"] for h in hits if h["weak"]]
    shown = cli("code", "money owed by customers", "--dir", weak[0]).stdout
    assert shown.startswith("no close match") and weak[0] in shown
    assert "no close match" not in cli("code", "billing amounts").stdout


def test_the_first_files_are_the_same_whatever_the_limit(tmp_path):
    """An audit: `lore code "convert value type" --files-only --limit 1` gave
    __init__.py where `--limit 10` put types.py first: a smaller limit ranked
    among smaller candidate pools. On a real package (click, as installed)."""
    import shutil

    import click

    root = tmp_path / "ck"
    shutil.copytree(
        Path(click.__file__).parent, root / "src_click", ignore=shutil.ignore_patterns("__pycache__")
    )
    git(root, "init", "-q")
    with indexed(root) as project:
        for query in ("convert value type", "make_context", "format help text", "parse options"):
            ten = [h.file_path for h in project.code_search(query, files_only=True, limit=10)]
            for k in (1, 3, 5):
                got = [h.file_path for h in project.code_search(query, files_only=True, limit=k)]
                assert got == ten[:k], (query, k, got, ten)


def test_a_lookup_written_as_a_declaration_finds_the_definition_first(tmp_path):
    """An audit: `lore code "def echo"` put `echo_via_pager` first and `class
    Option` `OptionHelpExtra`, where `echo` alone found the definition: the
    keyword in front hid the name from the lookup rules."""

    root = tmp_path / "decl"
    (root / "pkg").mkdir(parents=True)
    pager = "".join(f"    echo_line({n})  # echo echo via pager\n" for n in range(30))
    (root / "pkg/termui.py").write_text(
        f"def echo_via_pager(lines):\n    '''Echo through a pager, echo.'''\n{pager}\n"
        "class OptionHelpExtra:\n    '''Option option help extra option.'''\n"
    )
    (root / "pkg/utils.py").write_text(
        "import os\n\n\ndef helper():\n    return os.sep\n\n\ndef echo(message=None):\n    return message\n\n\n"
        "class Option:\n    pass\n"
    )
    git(root, "init", "-q")
    with indexed(root) as project:
        for query, symbol in (
            ("def echo", "echo"),
            ("def echo():", "echo"),
            ("class Option", "Option"),
            ("pub fn echo", "echo"),
        ):
            first = project.code_search(query, limit=5)[0]
            assert first.file_path == "pkg/utils.py" and symbol in first.symbol.split(", "), (query, first)
            assert project.code_search(query, files_only=True, limit=5)[0].file_path == "pkg/utils.py", query
