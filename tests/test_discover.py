"""Tests for lore.index.discover: which files of a repository get indexed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore.errors import LoreError, UsageError
from lore.index.discover import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Discovery, discover

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

HAS_GIT = shutil.which("git") is not None


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch, tmp_path):
    """Keep the user's global git config (excludesFile, ...) out of the tests."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture(params=["git", "plain"])
def repo(request, tmp_path) -> Path:
    """An empty project folder, once as a git repository and once not."""
    root = tmp_path / "repo"
    root.mkdir()
    if request.param == "git":
        if not HAS_GIT:
            pytest.skip("git is not installed")
        _git(root, "init", "-q")
    return root


def _reasons(found: Discovery) -> dict[str, str]:
    return dict(found.skipped)


def test_plain_files_are_found_sorted_and_posix(repo):
    for rel in ["b.py", "a.md", "src/pkg/mod.ts", "src/app.go"]:
        _write(repo, rel)
    found = discover(repo)
    assert found.files == ["a.md", "b.py", "src/app.go", "src/pkg/mod.ts"]
    assert found.skipped == []


def test_gitignore_and_nested_gitignore_are_respected(repo):
    _write(repo, ".gitignore", "gen_*.py\nsecret/\n")
    _write(repo, "sub/.gitignore", "!gen_keep.py\nlocal.py\n")
    for rel in [
        "main.py",
        "local.py",
        "gen_a.py",
        "secret/key.py",
        "sub/gen_keep.py",
        "sub/gen_b.py",
        "sub/local.py",
        "sub/ok.py",
    ]:
        _write(repo, rel)
    found = discover(repo)
    assert found.files == ["local.py", "main.py", "sub/gen_keep.py", "sub/ok.py"]
    # Ignored files are absent, as in `git status`; .gitignore files are not code.
    assert set(_reasons(found)) == {".gitignore", "sub/.gitignore"}


def test_loreignore_skips_files_and_whole_dirs(repo):
    _write(repo, ".loreignore", "# drafts are noise\ndocs/drafts/\n*.generated.py\n")
    for rel in ["docs/guide.md", "docs/drafts/a.md", "docs/drafts/b.md", "api.generated.py", "api.py"]:
        _write(repo, rel)
    found = discover(repo)
    assert found.files == ["api.py", "docs/guide.md"]
    reasons = _reasons(found)
    assert reasons["docs/drafts/"] == "ignored by .loreignore"
    assert reasons["api.generated.py"] == "ignored by .loreignore"
    assert not any(path.startswith("docs/drafts/") and path != "docs/drafts/" for path in reasons)


def test_include_globs_replace_the_defaults(repo):
    for rel in ["src/a.py", "src/deep/b.py", "src/c.js", "top.py", "README.md"]:
        _write(repo, rel)
    found = discover(repo, include=["src/**/*.py"])
    assert found.files == ["src/a.py", "src/deep/b.py"]
    reasons = _reasons(found)
    assert reasons["top.py"] == "not included"
    assert reasons["src/c.js"] == "not included"


def test_exclude_globs_add_to_the_defaults_and_can_readmit(repo):
    for rel in ["app.go", "app_test.go", "tests/t.py", "vendor/lib.go", "node_modules/x.js"]:
        _write(repo, rel)
    found = discover(repo, exclude=["*_test.go", "tests/", "!vendor/"])
    assert found.files == ["app.go", "vendor/lib.go"]
    reasons = _reasons(found)
    assert reasons["app_test.go"] == "excluded"
    assert reasons["tests/"] == "excluded dir"
    assert reasons["node_modules/"] == "excluded dir"


def test_node_modules_is_one_entry_not_one_per_file(repo):
    for i in range(20):
        _write(repo, f"node_modules/pkg{i}/index.js")
        _write(repo, f"web/node_modules/pkg{i}/index.js")
    _write(repo, "web/app.js")
    _write(repo, "package-lock.json", "{}")
    _write(repo, "web/vendor.min.js", "var a=1;")
    found = discover(repo)
    assert found.files == ["web/app.js"]
    assert found.skipped == [
        ("node_modules/", "excluded dir"),
        ("package-lock.json", "excluded"),
        ("web/node_modules/", "excluded dir"),
        ("web/vendor.min.js", "excluded"),
    ]


def test_virtualenvs_are_found_by_marker_not_by_name(repo):
    _write(repo, "myenv/pyvenv.cfg", "home = /usr/bin\n")
    _write(repo, "myenv/lib/python3.11/site.py")
    _write(repo, "conda/conda-meta/history", "")
    _write(repo, "conda/lib/x.py")
    _write(repo, "src/venv/__init__.py")  # a package that happens to be called venv
    found = discover(repo)
    assert found.files == ["src/venv/__init__.py"]
    assert found.skipped == [("conda/", "virtualenv"), ("myenv/", "virtualenv")]


def test_binary_content_is_skipped_whatever_the_extension(repo):
    _write(repo, "blob.py", b"import os\n\x00\x01\x02")
    _write(repo, "cp1252.py", "x = '€ ¤ ¥ ¦ § ¨ © ª « ¬'\n".encode("cp1252"))  # mostly not UTF-8
    # One Latin-1 byte in a file of text dropped the whole file from the index, as binary.
    _write(
        repo,
        "latin1.py",
        "# café au lait, a comment in an old file\ndef brew():\n    return 1\n".encode("latin-1"),
    )
    _write(repo, "ok.py", "x = 'café'\n")
    found = discover(repo)
    assert found.files == ["latin1.py", "ok.py"]
    assert _reasons(found) == {"blob.py": "binary", "cp1252.py": "binary (not UTF-8)"}


def test_text_in_a_declared_marked_or_legacy_encoding_is_indexed_in_it(repo):
    """Files in another encoding than UTF-8 were skipped as binary: UTF-16 (a
    Windows resource, NUL bytes everywhere), a Python file declaring
    Shift JIS, an old Java file whose German comments are Windows-1252 (more
    than 2% of its bytes invalid UTF-8). Each is read in its encoding."""
    from lore.index.encoding import decode_text

    german = "// Überprüfe die Größe, bevor die Datei geöffnet wird: Änderungen später.\n"
    sources = {
        "Legacy.java": (german * 3 + "class Legacy {}\n").encode("cp1252"),
        "jp.py": "# -*- coding: shift_jis -*-\nGREETING = 'こんにちは'\n".encode("shift_jis"),
        "app.rc": 'STRINGTABLE\nBEGIN\n  1 "Größe"\nEND\n'.encode("utf-16"),
        "page.xml": '<?xml version="1.0" encoding="ISO-8859-15"?>\n<p>€uro Größe</p>\n'.encode("iso-8859-15"),
    }
    for name, data in sources.items():
        _write(repo, name, data)
    _write(repo, "random.py", bytes(range(128, 256)) * 40)  # no text in any encoding
    found = discover(repo, include=["*.java", "*.py", "*.rc", "*.xml"])
    assert found.files == sorted(sources) and _reasons(found) == {"random.py": "binary (not UTF-8)"}
    texts = {name: decode_text((repo / name).read_bytes()) for name in sources}
    assert texts["Legacy.java"].startswith(german) and "こんにちは" in texts["jp.py"]
    assert "Größe" in texts["app.rc"] and "€uro Größe" in texts["page.xml"]
    # UTF-8 with a stray Latin-1 byte stays UTF-8: its other characters are not misread.
    mixed = ("# naïve — “quoted”\n" * 20).encode() + b"# caf\xe9\n"
    assert decode_text(mixed).startswith("# naïve — “quoted”")


def test_files_known_as_text_are_not_read_again_until_they_change(repo):
    path = _write(repo, "mod.py", "x = 1\n")
    info = path.stat()
    known = {"mod.py": (info.st_mtime_ns, info.st_size)}
    # Same size, same mtime, different bytes: an unchanged file is not re-read
    # (the index sniffed it when it was indexed) ...
    path.write_bytes(b"x\x00 = 1\n"[:6])
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert discover(repo, known=known).files == ["mod.py"]
    assert discover(repo).files == []  # (read, it is binary)
    # ... and a changed one is.
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    assert discover(repo, known=known).files == []
    assert _reasons(discover(repo, known=known)) == {"mod.py": "binary"}


def test_utf8_cut_at_the_sniff_boundary_is_text(repo):
    # "é" is two bytes; put it across byte 8192 so the sniff sees half of it.
    _write(repo, "wide.md", "a" * 8191 + "é" * 100 + "\n")
    assert discover(repo).files == ["wide.md"]


def test_huge_files_are_skipped_with_their_size(repo):
    _write(repo, "big.py", "x = 1\n" * 350)  # 2,100 bytes
    _write(repo, "small.py", "x = 1\n")
    _write(repo, "data.json", "[" + "1," * 100 + "1]")  # 203 bytes > a tenth of 1,000
    found = discover(repo, max_bytes=1000)
    assert found.files == ["small.py"]
    assert _reasons(found) == {
        "big.py": "too large (2.1 KB > 1 KB)",
        "data.json": "too large (203 B > 100 B)",
    }


def test_a_file_just_over_the_limit_says_by_how_much(repo):
    _write(repo, "edge.js", "x" * 1_000_001)
    assert _reasons(discover(repo)) == {
        "edge.js": "too large (1,000,001 B > 1,000,000 B)"
    }  # not "1 MB > 1 MB"


def test_symlinks_outside_the_repo_are_not_followed(repo, tmp_path):
    outside = tmp_path / "outside"
    _write(outside, "secret.py", "TOKEN = 'x'\n")
    _write(repo, "main.py")
    (repo / "leak.py").symlink_to(outside / "secret.py")
    (repo / "leakdir").symlink_to(outside, target_is_directory=True)
    found = discover(repo)
    assert found.files == ["main.py"]
    assert _reasons(found) == {"leak.py": "symlink outside repo", "leakdir": "symlink outside repo"}


def test_symlinks_inside_the_repo_are_left_to_their_target(repo):
    _write(repo, "src/a.py")
    (repo / "alias.py").symlink_to(repo / "src" / "a.py")
    (repo / "src" / "again").symlink_to(repo / "src", target_is_directory=True)
    (repo / "dangling.py").symlink_to(repo / "nowhere.py")
    found = discover(repo)
    assert found.files == ["src/a.py"]
    assert _reasons(found) == {
        "alias.py": "symlink to src/a.py",
        "src/again": "symlink to src/",
        "dangling.py": "broken symlink",
    }


def test_symlink_loops_are_safe(repo):
    _write(repo, "a/b/c.py")
    (repo / "a" / "b" / "up").symlink_to(repo / "a", target_is_directory=True)
    (repo / "self.py").symlink_to(repo / "self.py")  # points at itself
    found = discover(repo)
    assert found.files == ["a/b/c.py"]
    reasons = _reasons(found)
    assert reasons["a/b/up"] == "symlink to a/"
    assert reasons["self.py"] == "broken symlink"


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_lists_tracked_and_untracked_and_reports_deleted(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, ".gitignore", "*.tmp.py\n")
    _write(root, "tracked.py")
    _write(root, "gone.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    _write(root, "untracked.py")
    _write(root, "scratch.tmp.py")
    (root / "gone.py").unlink()
    found = discover(root)
    assert found.files == ["tracked.py", "untracked.py"]
    assert _reasons(found) == {".gitignore": "not included", "gone.py": "missing"}


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_files_a_sparse_checkout_leaves_out_are_not_reported_missing(tmp_path):
    """`git sparse-checkout` keeps most of a monorepo out of the work tree: those
    files are not missing, and listing each one (hundreds of thousands) says nothing."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, "app/main.py")
    for i in range(20):
        _write(root, f"other/m{i}.py")
    _write(root, "kept.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    _git(root, "sparse-checkout", "set", "--no-cone", "/app/", "/kept.py")
    assert not (root / "other").exists()
    _git(root, "update-index", "--skip-worktree", "kept.py")  # skip-worktree, yet in the work tree
    (root / "app/main.py").unlink()  # really deleted
    found = discover(root)
    assert found.files == ["kept.py"]
    assert _reasons(found) == {"app/main.py": "missing"}


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_gitignore_applies_to_a_subfolder_of_a_repo(tmp_path):
    root = tmp_path / "repo"
    _git(tmp_path, "init", "-q", "repo")
    _write(root, ".gitignore", "*.gen.py\n")
    _write(root, "pkg/a.py")
    _write(root, "pkg/b.gen.py")
    assert discover(root / "pkg").files == ["a.py"]


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_folder_ignored_by_an_enclosing_repo_is_walked(tmp_path):
    # A dotfiles repository in $HOME that ignores `*` must not hide projects.
    _git(tmp_path, "init", "-q")
    _write(tmp_path, ".gitignore", "*\n")
    _write(tmp_path, "proj/.gitignore", "*.log.py\n")
    _write(tmp_path, "proj/app.py")
    _write(tmp_path, "proj/debug.log.py")
    assert discover(tmp_path / "proj").files == ["app.py"]


def test_defaults_cover_the_usual_suspects():
    for glob in ["*.py", "*.ts", "*.tsx", "*.go", "*.rs", "*.java", "*.md", "*.json"]:
        assert glob in DEFAULT_INCLUDE


def test_grammars_build_files_and_documents_without_an_extension_are_found(tmp_path):
    """jq's parser.y and lexer.l, its NEWS and ChangeLog, rack's Gemfile, gemspec,
    config.ru and README.rdoc, gin's go.mod, gson's pom.xml and zod's
    INTEGRATIONS.MD were never indexed, so no search or role could find them."""
    names = [
        "src/parser.y",
        "src/lexer.l",
        "NEWS",
        "ChangeLog",
        "Gemfile",
        "rack.gemspec",
        "config.ru",
        "README.rdoc",
        "go.mod",
        "pom.xml",
        "INTEGRATIONS.MD",
    ]
    for name in names:
        _write(tmp_path, name)
    _write(tmp_path, "build/output.bin")
    assert sorted(discover(tmp_path).files) == sorted(names)
    for glob in [
        "node_modules/",
        ".venv/",
        ".git/",
        ".lore/",
        "__pycache__/",
        "*.min.js",
        "package-lock.json",
    ]:
        assert glob in DEFAULT_EXCLUDE


def test_bad_input_is_a_usage_error_and_a_bad_glob_a_config_error(tmp_path):
    from lore.errors import ConfigError

    with pytest.raises(UsageError):
        discover(tmp_path / "missing")
    with pytest.raises(ConfigError, match=r"^\.lore/config\.toml: \[index\] include: bad glob '!'"):
        discover(tmp_path, include=["!"])
    # A glob pathspec takes whose regex is no regex: an internal error, naming neither file nor field.
    with pytest.raises(ConfigError, match=r"\[index\] exclude: bad glob '\[z-a\]' \(bad character range"):
        discover(tmp_path, exclude=["[z-a]"])


def test_translated_globs_are_cached_on_disk_and_give_the_same_answer(repo, tmp_path):
    from lore.index import discover as module

    for rel in ["app.go", "app_test.go", "vendor/lib.go", "node_modules/x.js", "notes.md", "main.py"]:
        _write(repo, rel)
    _write(repo, ".loreignore", "notes.md\n")
    cache = tmp_path / "cache"
    module._TRANSLATED.clear()
    first = discover(repo, exclude=["*_test.go", "!vendor/"], cache=cache)
    saved = sorted(cache.glob("globs-*.json"))
    assert len(saved) == 3  # include, exclude, .loreignore

    module._TRANSLATED.clear()  # as a new process: the files, not pathspec
    again = discover(repo, exclude=["*_test.go", "!vendor/"], cache=cache)
    assert (again.files, again.skipped) == (first.files, first.skipped)
    assert again.files == ["app.go", "main.py", "vendor/lib.go"]
    assert sorted(cache.glob("globs-*.json")) == saved

    # Other globs are another entry; a damaged entry is rebuilt, never trusted.
    module._TRANSLATED.clear()
    for path in saved:
        path.write_text('[[true, "("]]')
    rebuilt = discover(repo, exclude=["*_test.go", "!vendor/"], cache=cache)
    assert (rebuilt.files, rebuilt.skipped) == (first.files, first.skipped)
    assert all(p.read_text() != '[[true, "("]]' for p in saved)
    module._TRANSLATED.clear()
    assert discover(repo, exclude=["*.go"], cache=cache).files == ["main.py"]
    assert len(list(cache.glob("globs-*.json"))) == 4


def test_a_bad_glob_is_an_error_even_when_cached_leniently(tmp_path):
    from lore.index import discover as module

    cache = tmp_path / "cache"
    module._TRANSLATED.clear()
    _write(tmp_path / "p", ".loreignore", "!\n")  # .loreignore is lenient: the line is skipped
    _write(tmp_path / "p", "a.py")
    assert discover(tmp_path / "p", cache=cache).files == ["a.py"]
    module._TRANSLATED.clear()
    with pytest.raises(LoreError, match="bad glob"):
        discover(tmp_path / "p", include=["!"], cache=cache)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_loreignore_that_is_no_regular_file_is_an_error_not_a_hang(repo, kind):
    _write(repo, "a.py", "x = 1\n")
    if kind == "fifo":
        os.mkfifo(repo / ".loreignore")  # reading it waited for a writer forever
    else:
        os.symlink("/dev/zero", repo / ".loreignore")  # reading it never ended
    with pytest.raises(UsageError, match=r"\.loreignore: is a (FIFO|device), not a regular file"):
        discover(repo)


_GLOB_PART = st.sampled_from(
    ["src", "lib", "*.py", "*.min.js", "a?c", "[ab]x", "node_modules", ".git", "**", "b*"]
)
_PATH_PART = st.sampled_from(
    ["src", "lib", "a.py", "x.min.js", "abc", "ax", "node_modules", ".git", "b1", "py"]
)


@settings(max_examples=150, deadline=None)
@given(
    globs=st.lists(
        st.builds(
            lambda lead, parts, slash, bang: ("!" if bang else "") + lead + "/".join(parts) + slash,
            st.sampled_from(["", "/", "**/"]),
            st.lists(_GLOB_PART, min_size=1, max_size=3),
            st.sampled_from(["", "/"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    ),
    paths=st.lists(
        st.builds(
            lambda parts, slash: "/".join(parts) + slash,
            st.lists(_PATH_PART, min_size=1, max_size=4),
            st.sampled_from(["", "/"]),
        ),
        min_size=1,
        max_size=25,
    ),
)
def test_the_merged_glob_regex_matches_where_any_one_glob_does(globs, paths):
    """Globs sharing pathspec's head and tail are merged into one alternative
    (a cold process compiles that faster): it must match exactly where one of
    the globs' own regexes does."""
    import re

    from lore.index.discover import _alternation, _translate

    translated = _translate(globs, strict=False)
    if not translated:
        return
    merged = re.compile(_alternation(translated))
    singles = [re.compile(source) for _, source in translated]
    for path in paths:
        assert bool(merged.match(path)) == any(r.match(path) for r in singles), (path, globs)


def test_a_git_dir_the_caller_exported_names_no_other_repository(tmp_path, monkeypatch):
    """`git ls-files` ran with the caller's GIT_DIR (a dotfile manager, a
    `git --git-dir` wrapper): it listed another repository's files, or none,
    and what the project ignores was indexed."""
    if not HAS_GIT:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, "svc/app.py")
    _write(root, "svc/local_only.py")
    (root / ".git/info/exclude").write_text("local_only.py\n")
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert discover(root / "svc").files == ["app.py"]


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_nested_build_folder_git_tracks_is_content_not_output(tmp_path):
    """All of sqlalchemy's `doc/build/` (its docs and changelog, tracked in git)
    was left out as build output; Go's `src/go/build/` would be too."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    for rel in [
        "doc/build/index.rst",
        "doc/build/changelog/unreleased.rst",
        "doc/build/node_modules/x.js",
        "src/go/build/build.go",
        "build/out.js",
        "web/dist/app.js",
        "app.py",
    ]:
        _write(root, rel)
    _git(root, "add", "doc", "src", "app.py")  # tracked; build/ and web/dist/ are output
    found = discover(root)
    assert found.files == [
        "app.py",
        "doc/build/changelog/unreleased.rst",
        "doc/build/index.rst",
        "src/go/build/build.go",
    ]
    assert ("build/", "excluded dir") in found.skipped and ("web/dist/", "excluded dir") in found.skipped
    assert discover(root, exclude=["doc/build/"]).files == ["app.py", "src/go/build/build.go"]


def test_a_minified_script_not_named_so_is_left_out(tmp_path):
    """A bundle not named *.min.js was indexed as 808 "source" chunks, all on line 1."""
    root = tmp_path / "proj"
    _write(root, "static/app.bundle2.js", "var a=1;" * 3000)  # 24 KB on one line
    _write(root, "static/ok.js", "function ok() {\n  return 1;\n}\n" * 400)
    found = discover(root)
    assert found.files == ["static/ok.js"]
    assert ("static/app.bundle2.js", "minified (no line break in its first 8 KB)") in found.skipped
