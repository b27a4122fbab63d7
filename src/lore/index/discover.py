"""Decide which files of a repository get indexed.

Candidates come from git when `root` is inside a work tree (`git ls-files -co
--exclude-standard`: tracked files plus untracked ones that are not ignored, so
every .gitignore, .git/info/exclude and the user's global excludes apply).
Elsewhere, without git, or when git lists nothing (say a project inside a
dotfiles repository that ignores `*`), the tree is walked and the root and
nested .gitignore files are applied here. Either way the candidates then pass
through the exclude globs, virtualenvs (found by their `pyvenv.cfg` or `conda-meta`,
whatever their name), the root `.loreignore` (gitignore syntax), the include
globs, a size limit and a binary sniff.

Gitignored files are simply absent, as they are from `git status`. Every other
file left out is reported with a short reason; an excluded directory such as
`node_modules/` is reported once instead of file by file.

A file whose name is not UTF-8 or holds control characters is skipped too
("bad name"), reported by its printable form (:mod:`lore.filenames`): no
index can store such a name, and one such file must not stop the others.

Symlinks are never followed. One pointing outside the repository is skipped
("symlink outside repo"); one pointing inside is skipped too ("symlink to
<target>") because its target is indexed under its own path. So a symlinked
directory can neither leak files from elsewhere nor cause a loop.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Protocol

from lore.errors import UsageError
from lore.filenames import display_path, unsafe_name
from lore.records import datarecord
from lore.secrets import describe, redact_name

DEFAULT_INCLUDE: list[str] = [
    # Code.
    "*.py",
    "*.pyi",
    "*.js",
    "*.jsx",
    "*.mjs",
    "*.cjs",
    "*.ts",
    "*.tsx",
    "*.mts",
    "*.cts",
    "*.vue",
    "*.svelte",
    "*.go",
    "*.rs",
    "*.java",
    "*.kt",
    "*.kts",
    "*.scala",
    "*.groovy",
    "*.gradle",
    "*.c",
    "*.h",
    "*.cc",
    "*.cpp",
    "*.cxx",
    "*.hpp",
    "*.hh",
    "*.cs",
    "*.fs",
    "*.rb",
    "*.php",
    "*.swift",
    "*.m",
    "*.mm",
    "*.dart",
    "*.lua",
    "*.pl",
    "*.pm",
    "*.r",
    "*.R",
    "*.jl",
    "*.ex",
    "*.exs",
    "*.erl",
    "*.hs",
    "*.clj",
    "*.ml",
    "*.zig",
    "*.sh",
    "*.bash",
    "*.zsh",
    "*.ps1",
    "*.sql",
    "*.proto",
    "*.graphql",
    "*.tf",
    "*.y",  # grammars: yacc/bison, lex/flex (what their generated parser.c comes from)
    "*.yy",
    "*.l",
    "*.ll",
    "*.rake",
    "*.ru",
    "*.gemspec",
    "*.ipynb",  # Jupyter notebooks: their cells' source is indexed (notebook.py)
    # Docs (also in capitals: INTEGRATIONS.MD).
    "*.md",
    "*.MD",
    "*.markdown",
    "*.mdx",
    "*.rst",
    "*.txt",
    "*.TXT",
    "*.adoc",
    "*.rdoc",
    "*.org",
    # Documents named without an extension (GNU and Ruby projects).
    "README",
    "NEWS",
    "ChangeLog",
    "CHANGES",
    "CHANGELOG",
    "HISTORY",
    "INSTALL",
    "CONTRIBUTING",
    "AUTHORS",
    # Configuration, markup, build files.
    "*.toml",
    "*.yaml",
    "*.yml",
    "*.json",
    "*.ini",
    "*.cfg",
    "*.html",
    "*.htm",
    "*.css",
    "*.scss",
    "*.sass",
    "*.less",
    "Dockerfile",
    "Makefile",
    "*.mk",
    "*.cmake",
    "Jenkinsfile",
    "go.mod",
    "pom.xml",
    "build.xml",
    "*.csproj",
    "Gemfile",
    "Rakefile",
    "Podfile",
    "Vagrantfile",
    "Procfile",
    "justfile",
    "meson.build",
    "configure.ac",
    "Makefile.am",
]

# Build output's folder names: deeper than the top, a folder of one whose files
# git tracks is kept (:func:`_prune_dirs`).
_OUTPUT_NAMES = frozenset({"build/", "dist/", "target/", "_build/"})
DEFAULT_EXCLUDE: list[str] = [
    # Version control and Lore's own state.
    ".git/",
    ".hg/",
    ".svn/",
    ".lore/",
    # Dependencies and virtual environments.
    # Virtualenvs under any name are also found by their pyvenv.cfg (see
    # _VENV_MARKERS), so `venv/` and `env/` packages of real code are kept.
    "node_modules/",
    "bower_components/",
    "jspm_packages/",
    "vendor/",
    ".venv/",
    "__pypackages__/",
    "site-packages/",
    # Build output.
    "dist/",
    "build/",
    "target/",
    "_build/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    ".output/",
    ".turbo/",
    ".parcel-cache/",
    ".gradle/",
    "*.egg-info/",
    ".eggs/",
    # Caches and tool state.
    "__pycache__/",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".cache/",
    "coverage/",
    "htmlcov/",
    ".idea/",
    ".terraform/",
    # Lock files and generated or minified files.
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "Cargo.lock",
    "composer.lock",
    "Gemfile.lock",
    "go.sum",
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.bundle.js",
]

#: The reason given for a file whose name is not UTF-8 or holds control characters.
BAD_NAME = "bad name (not UTF-8, or control characters)"
# A directory holding one of these is a Python or conda environment.
_VENV_MARKERS = ("pyvenv.cfg", "conda-meta")
SNIFF_BYTES = 8192
# JSON is code-like when small (configs, manifests) and data when large.
_JSON_SHARE = 10
# Most of a notebook's bytes are its cells' outputs (plots in base64), never indexed.
_NOTEBOOK_TIMES = 5


def size_limit(rel: str, max_bytes: int) -> int:
    """The largest file at `rel` indexed, for `[index] max_file_bytes` = `max_bytes`."""
    lowered = rel.lower()
    if lowered.endswith(".json"):
        return max_bytes // _JSON_SHARE
    return max_bytes * _NOTEBOOK_TIMES if lowered.endswith(".ipynb") else max_bytes


@datarecord
class Discovery:
    """The outcome of :func:`discover`.

    Attributes:
        files: POSIX paths relative to the root, sorted.
        skipped: (relative path, reason) pairs, sorted; directories end in "/";
            a name that is not UTF-8 is given in its printable form.
    """

    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def discover(
    root: Path,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    max_bytes: int = 1_000_000,
    known: Mapping[str, tuple[int, int]] | None = None,
    cache: Path | None = None,
) -> Discovery:
    """List the files under `root` that should be indexed.

    Args:
        root: the repository (or any folder) to scan.
        include: gitwildmatch globs a file must match (`*.py`, `src/**`);
            replaces :data:`DEFAULT_INCLUDE` when given.
        exclude: gitwildmatch globs to leave out, added after
            :data:`DEFAULT_EXCLUDE`; a `!pattern` re-admits a default
            (`!vendor/`).
        max_bytes: larger files are skipped (JSON files get a tenth of it).
        known: (mtime_ns, size) of files already found to be text (the index's
            file states); one still at that mtime and size is not read again
            (a freshness check of 2,000 files saves ~100 ms of reads).
        cache: a folder for the translated globs (a cold process then skips
            translating them; see :func:`_translations`).

    Raises:
        UsageError: `root` is not a directory. ConfigError: a glob is malformed.
    """
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"{root} is not a directory; pass the repository folder.")
    filters = _Filters(root, include, exclude, cache)
    result = Discovery()
    root_real = os.path.realpath(root)
    tracked, sparse, committed = _git_files(root) or ([], set(), set())
    if not tracked:  # not a work tree, or one that ignores all of `root`
        candidates = _walk(root, filters, result.skipped)
    else:
        candidates = _prune_dirs(tracked, filters, result.skipped, committed)
    for rel in candidates:
        if unsafe_name(rel):
            result.skipped.append((rel, BAD_NAME))
            continue
        shown, secrets = redact_name(rel)
        if secrets:  # stored, searched and shown, the name would carry it in clear
            result.skipped.append(
                (shown, f"the name holds what looks like a secret ({describe(secrets)}); rename it")
            )
            continue
        path = os.path.join(root, rel)
        reason = (
            filters.ignore_reason(rel)
            or _link_reason(path, root_real)
            or filters.include_reason(rel)
            or _content_reason(path, rel, max_bytes, known.get(rel) if known else None)
        )
        if reason == "missing" and rel in sparse:
            continue  # kept out of the work tree by a sparse checkout: not missing
        if reason:
            result.skipped.append((rel, reason))
        else:
            result.files.append(rel)
    result.files.sort()
    result.skipped = sorted((display_path(rel), reason) for rel, reason in result.skipped)
    return result


class _GitignorePattern(Protocol):
    """What Lore uses of a compiled pathspec pattern."""

    @property
    def include(self) -> bool | None:
        """True: matches ignore; False: a `!` pattern re-admits; None: blank line or comment."""

    @property
    def regex(self) -> re.Pattern[str] | None:
        """The compiled pattern (None for a blank line or comment)."""


def _pattern_class() -> Callable[[str], _GitignorePattern]:
    """pathspec's gitignore pattern: `GitIgnoreSpecPattern` (pathspec >= 1), else
    the older `GitWildMatchPattern` (deprecated in 1.x, with a warning per pattern)."""
    try:
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

        return GitIgnoreSpecPattern
    except ImportError:
        from pathspec.patterns.gitwildmatch import GitWildMatchPattern

        legacy: Callable[[str], _GitignorePattern] = GitWildMatchPattern  # untyped in pathspec 1.x
        return legacy


class _Patterns:
    """A gitignore-style pattern list where the last matching pattern wins.

    All patterns are also compiled into one alternation, so the common case
    (nothing matches, or no negations) costs a single regex match. The
    patterns' regexes come from :func:`_translations` (cached: translating
    the ~130 default globs with pathspec costs a cold process ~30 ms).
    """

    def __init__(
        self, lines: Iterable[str], *, strict: bool = False, cache: Path | None = None, what: str = "glob"
    ):
        self._patterns = _translations(list(lines), strict, cache, what)  # (include, regex source)
        self._compiled: list[re.Pattern[str]] | None = None
        self._negated = any(not include for include, _ in self._patterns)
        self._any = re.compile(_alternation(self._patterns)) if self._patterns else None

    def verdict(self, path: str) -> bool | None:
        """True if `path` is matched, False if re-admitted by `!`, else None."""
        if self._any is None or not self._any.match(path):
            return None
        if not self._negated:
            return True
        if self._compiled is None:
            self._compiled = [re.compile(source) for _, source in self._patterns]
        for (include, _), regex in zip(reversed(self._patterns), reversed(self._compiled), strict=True):
            if regex.match(path):
                return include
        return None


# Translated pattern lists of this process, by key (see _translations).
_TRANSLATED: dict[str, list[tuple[bool, str]]] = {}


def _translations(
    lines: list[str], strict: bool, cache: Path | None, what: str = "glob"
) -> list[tuple[bool, str]]:
    """(include, regex source) of each pattern line that is not blank or a comment.

    Memoised per process and, with `cache` (a folder), on disk as
    ``globs-<key>.json``, keyed by the lines, `strict` and the installed
    pathspec (its file's mtime), so a cold CLI reads regex sources instead
    of importing pathspec and translating every default glob again.

    Raises:
        ConfigError: `strict` and a line is not a valid glob (`what` names where it was written).
    """
    key = _translation_key(lines, strict)
    if key in _TRANSLATED:
        return _TRANSLATED[key]
    saved = cache / f"globs-{key}.json" if cache is not None else None
    found = _read_translations(saved) if saved is not None else None
    if found is None:
        found = _translate(lines, strict, what)
        if saved is not None:
            _write_translations(saved, found)
    _TRANSLATED[key] = found
    return found


def _translation_key(lines: list[str], strict: bool) -> str:
    text = "\n".join([f"v1 strict={strict} pathspec={_pathspec_stamp()}", *lines])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@functools.cache
def _pathspec_stamp() -> str:
    """Which pathspec is installed (its file's mtime), found without importing it."""
    from importlib.util import find_spec

    try:
        spec = find_spec("pathspec")
        origin = spec.origin if spec is not None else None
        return str(os.stat(origin).st_mtime_ns) if origin else "none"
    except (ImportError, OSError, ValueError):
        return "none"


def _translate(lines: list[str], strict: bool, what: str = "glob") -> list[tuple[bool, str]]:
    pattern_class = _pattern_class()
    out: list[tuple[bool, str]] = []
    for line in lines:
        try:
            pattern = pattern_class(line)
        except (ValueError, re.error) as exc:  # GitWildMatchPatternError; "[z-a]" fails as a regex
            if strict:
                from lore.errors import ConfigError

                raise ConfigError(f"{what}: bad glob {line!r} ({exc}); fix it or remove it") from None
            continue
        if pattern.include is not None and pattern.regex is not None:  # None: blank line or comment
            out.append((pattern.include, pattern.regex.pattern))
    return out


def _read_translations(path: Path) -> list[tuple[bool, str]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        found = [(bool(include), str(source)) for include, source in data]
        re.compile(_alternation(found))  # a damaged file is rebuilt, never trusted (re caches it)
        return found
    except (OSError, ValueError, TypeError, re.error):
        return None


def _write_translations(path: Path, found: list[tuple[bool, str]]) -> None:
    from lore.atomic import write_atomic

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, json.dumps(found), mode=0o600, sync=False)
    except OSError:
        pass  # a cache is an optimisation, never a failure


#: The .gitignore files above a directory: (path prefix, patterns), outermost first.
_IgnoreChain = tuple[tuple[str, _Patterns], ...]


# pathspec's regex for a glob: "^", "(?:.+/)?" unless the glob is anchored, the
# glob's own part, then what may follow it ("/" for a directory-only glob).
_GLOB_REGEX = re.compile(
    r"\^(?P<head>\(\?:\.\+/\)\?)?(?P<body>.*?)(?P<tail>\(\?:\(\?P<ps_d>/\)\|\$\)|\(\?P<ps_d>/\)|\$)?",
    re.S,
)


def _alternation(patterns: list[tuple[bool, str]]) -> str:
    """One regex matching where any of `patterns` matches.

    Patterns that share pathspec's head and tail are merged into one
    alternative, ``^(?:.+/)?(?:py|js|...)(?:/|$)``: P(A|B)T matches
    exactly where PAT or PBT does, and a cold process compiles the merged
    regex in a third of the time (~130 default globs: 7 → 2 ms). A
    source of another shape stays an alternative of its own.
    """
    merged: dict[tuple[str, str], list[str]] = {}
    alone: list[str] = []
    for _, source in patterns:
        shape = _GLOB_REGEX.fullmatch(source)
        if shape is None or "|" in shape["body"]:  # an alternation of its own binds looser than P·A·T
            alone.append(_anonymous(source))
        else:
            ends = (shape["head"] or "", _anonymous(shape["tail"] or ""))
            merged.setdefault(ends, []).append(_anonymous(shape["body"]))
    alternatives = [f"^{head}(?:{'|'.join(bodies)}){tail}" for (head, tail), bodies in merged.items()]
    return "|".join(f"(?:{alternative})" for alternative in [*alternatives, *alone])


def _anonymous(regex: str) -> str:
    """Drop named groups so several patterns can share one regex."""
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


def prepare() -> None:
    """Translate and compile the default include and exclude globs in this
    process, as a project's first freshness check would: the warm server
    (lore.interfaces.warm) does it once for all the commands it forks."""
    _Patterns(DEFAULT_INCLUDE, strict=True)
    _Patterns(DEFAULT_EXCLUDE, strict=True)


class _Filters:
    """Exclude globs, virtualenvs and .loreignore first, then include globs."""

    def __init__(
        self, root: Path, include: list[str] | None, exclude: list[str] | None, cache: Path | None = None
    ):
        self.root = root
        config = ".lore/config.toml: [index]"
        self.include = _Patterns(
            DEFAULT_INCLUDE if include is None else include,
            strict=True,
            cache=cache,
            what=f"{config} include",
        )
        self.exclude = _Patterns(
            DEFAULT_EXCLUDE + list(exclude or []), strict=True, cache=cache, what=f"{config} exclude"
        )
        self.own_exclude = _Patterns(list(exclude or []), strict=True, what=f"{config} exclude")
        self.defaults = include is None  # (then a script named without an extension counts too)
        self.kept: list[str] = []  # build-output folders kept as content (:func:`_prune_dirs`)
        self.loreignore = _Patterns(_read_lines(root / ".loreignore"), cache=cache)

    def dir_reason(self, rel_dir: str) -> str | None:
        """Why a whole directory (`rel_dir` ends in "/") is left out, if it is."""
        if self._excluded(rel_dir):
            return "excluded dir"
        if any(os.path.exists(os.path.join(self.root, rel_dir, m)) for m in _VENV_MARKERS):
            return "virtualenv"
        if self.loreignore.verdict(rel_dir):
            return "ignored by .loreignore"
        return None

    def ignore_reason(self, rel: str) -> str | None:
        """Why a file is excluded or .loreignored, if it is."""
        if self._excluded(rel):
            return "excluded"
        if self.loreignore.verdict(rel):
            return "ignored by .loreignore"
        return None

    def _excluded(self, rel: str) -> bool:
        """The exclude globs' verdict; below a build-output folder kept as content
        (:func:`_prune_dirs`) the defaults read the path from there."""
        if not self.exclude.verdict(rel):
            return False
        kept = next((k for k in self.kept if rel.startswith(k)), None)
        return (
            kept is None
            or bool(self.own_exclude.verdict(rel))
            or bool(self.exclude.verdict(rel[len(kept) :]))
        )

    def include_reason(self, rel: str) -> str | None:
        if self.include.verdict(rel):
            return None
        name = rel.rsplit("/", 1)[-1]
        if self.defaults and "." not in name and _is_script(os.path.join(self.root, rel)):
            return None  # bin/rackup, scripts/deploy: a script named without an extension
        return "not included"

    def excluded_by_config(self, rel: str) -> bool:
        """Whether the config's own `exclude` (not the defaults) leaves `rel` out."""
        return bool(self.own_exclude.verdict(rel))


def _read_lines(path: Path) -> list[str]:
    """The lines of an ignore file ([] if there is none).

    Raises:
        UsageError: it is a FIFO, a device (a committed link to /dev/zero), over
            16 MiB or unreadable: reading it would hang, and ignoring it would
            index what it leaves out.
    """
    from lore.errors import NotFound, ValidationError
    from lore.safe_read import MAX_INPUT_BYTES, read_regular

    try:
        return read_regular(path, max_bytes=MAX_INPUT_BYTES).decode("utf-8", "replace").splitlines()
    except NotFound:
        return []
    except ValidationError as err:
        raise UsageError(str(err)) from None


def _git_files(root: Path) -> tuple[list[str], set[str], set[str]] | None:
    """Tracked and unignored untracked files, those of them marked
    skip-worktree (a sparse checkout leaves them out of the work tree), and
    those git tracks; None outside a git work tree.

    Raises:
        GitError: git refuses the repository (owned by another user): walking
            it instead would ignore what git ignores and pass for no git.
    """
    from lore.index.gitrepo import git_env, refusal

    try:
        proc = subprocess.run(
            ["git", "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            timeout=120,
            env=git_env(),  # GIT_DIR and the like a caller exported name no other repository
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        refused = refusal(root, proc.stderr)
        if refused is not None:
            raise refused
        return None
    # Each entry is a status letter, a space, the path (-t).
    entries = [e for e in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if len(e) > 2]
    sparse = {e[2:] for e in entries if e[0] == "S"}
    # A conflicted file is listed once per stage; keep the first.
    return list(dict.fromkeys(e[2:] for e in entries)), sparse, {e[2:] for e in entries if e[0] != "?"}


def _prune_dirs(
    paths: list[str],
    filters: _Filters,
    skipped: list[tuple[str, str]],
    committed: set[str] | frozenset[str] = frozenset(),
) -> Iterator[str]:
    """Drop git's paths that lie in excluded directories, reporting each dir once.

    A build-output name deeper than the top (`doc/build/`, Go's `src/go/build/`)
    whose files git tracks is content someone committed, not output: the
    defaults keep it (an `exclude` of the config's own still drops it). All of
    sqlalchemy's `doc/build/`, 227 files and its changelog, was left out."""
    verdicts: dict[str, tuple[str, str] | None] = {}
    holding: set[str] | None = None  # folders holding a tracked file (worked out once, if needed)

    def tracked_in(rel_dir: str) -> bool:
        nonlocal holding
        if holding is None:
            holding = set()
            for path in committed:
                slash = path.find("/")
                while slash != -1:
                    holding.add(path[: slash + 1])
                    slash = path.find("/", slash + 1)
        return rel_dir in holding

    def verdict(rel_dir: str) -> tuple[str, str] | None:
        if rel_dir not in verdicts:
            cut = rel_dir.rfind("/", 0, -1) + 1
            found = verdict(rel_dir[:cut]) if cut else None
            if found is None:
                reason = filters.dir_reason(rel_dir)
                if (
                    reason == "excluded dir"
                    and cut
                    and rel_dir[cut:] in _OUTPUT_NAMES
                    and not filters.excluded_by_config(rel_dir)
                    and tracked_in(rel_dir)
                ):
                    reason = None
                    filters.kept.append(rel_dir)
                if reason:
                    found = (rel_dir, reason)
                    skipped.append(found)
            verdicts[rel_dir] = found
        return verdicts[rel_dir]

    for rel in paths:
        cut = rel.rfind("/", 0, -1) + 1
        if not cut or verdict(rel[:cut]) is None:
            yield rel


def _walk(root: Path, filters: _Filters, skipped: list[tuple[str, str]]) -> Iterator[str]:
    """Walk `root` without following symlinks, applying .gitignore files.

    Each directory carries the chain of .gitignore files above it as
    (prefix, patterns) pairs; the deepest file with an opinion decides.
    """
    stack: list[tuple[str, str, _IgnoreChain]] = [("", os.fspath(root), ())]
    while stack:
        prefix, directory, chain = stack.pop()
        ignore = os.path.join(directory, ".gitignore")
        if os.path.isfile(ignore):
            chain = chain + ((prefix, _Patterns(_read_lines(Path(ignore)))),)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            skipped.append((prefix, "unreadable dir"))
            continue
        for entry in entries:
            rel = prefix + entry.name
            if entry.name == ".git":
                continue
            if entry.is_dir(follow_symlinks=False):
                rel += "/"
                if _gitignored(chain, rel):
                    continue
                reason = filters.dir_reason(rel)
                if reason:
                    skipped.append((rel, reason))
                else:
                    stack.append((rel, entry.path, chain))
            elif not _gitignored(chain, rel):
                yield rel


def _gitignored(chain: _IgnoreChain, rel: str) -> bool:
    for prefix, patterns in reversed(chain):
        verdict = patterns.verdict(rel[len(prefix) :])
        if verdict is not None:
            return verdict
    return False


def _link_reason(path: str, root_real: str) -> str | None:
    """Why a symlink (or a vanished file) is left out; None for anything else."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
    except OSError:
        return "missing"
    target = os.path.realpath(path)
    if not os.path.exists(target):
        return "broken symlink"
    if target != root_real and not target.startswith(root_real.rstrip(os.sep) + os.sep):
        return "symlink outside repo"
    inside = Path(os.path.relpath(target, root_real)).as_posix()
    return f"symlink to {inside}{'/' if os.path.isdir(target) else ''}"


def _is_script(path: str) -> bool:
    """Whether `path` is a regular file starting with `#!` (read without
    blocking: a FIFO or a device is no script)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def _content_reason(path: str, rel: str, max_bytes: int, seen: tuple[int, int] | None = None) -> str | None:
    """Why a file is left out after looking at it: kind, size, content (not
    read again when it is still at the (mtime_ns, size) `seen` as text)."""
    try:
        info = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISDIR(info.st_mode):
        return "submodule or nested repository"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    limit = size_limit(rel, max_bytes)
    if info.st_size > limit:
        size, most = _human_size(info.st_size), _human_size(limit)
        if size == most:  # 1,000,001 bytes is "1 MB" too: show the bytes
            size, most = f"{info.st_size:,} B", f"{limit:,} B"
        return f"too large ({size} > {most})"
    if seen == (info.st_mtime_ns, info.st_size):
        return None
    return _sniff(path, minifiable=rel.endswith(_MINIFIABLE))


def _sniff(path: str, *, minifiable: bool = False) -> str | None:
    """'binary' when the first 8 KB hold a NUL byte, or more than a few bytes
    of invalid UTF-8 (a file in another encoding mostly); with `minifiable`
    (a script or a style sheet), 'minified' when they hold no line break:
    a bundle not named `*.min.js` (808 chunks all `:1`, labelled source)."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return "unreadable"
    if minifiable and len(head) == SNIFF_BYTES and head.count(b"\n") < 2:
        return "minified (no line break in its first 8 KB)"
    return binary_kind(head, whole=len(head) < SNIFF_BYTES)


_MINIFIABLE = (".js", ".mjs", ".cjs", ".css")


def binary_kind(data: bytes, *, whole: bool = True) -> str | None:
    """Why `data` is no text to index ('binary': a NUL byte; 'binary (not
    UTF-8)': not text in UTF-8, in the encoding it declares or marks, or in a
    legacy single-byte one: see :mod:`lore.index.encoding`), or None.
    `whole`: `data` is the whole file, not its head (whose last character may be cut)."""
    from lore.index.encoding import text_encoding

    if text_encoding(data, whole=whole) is not None:
        return None
    return "binary" if b"\0" in data else "binary (not UTF-8)"


def _human_size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{n} B"
