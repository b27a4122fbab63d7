"""Where a project's Lore data lives, and its settings.

::

    .lore/
      config.toml   committed: settings
      memory/       committed: shared durable memories (source of truth)
      local/        git-ignored: local/<agent>/ private memories,
                    local/{session,daily,archive}/ the local storage tiers
                    (also under local/<agent>/), local/trash/,
                    local/evidence.jsonl (pending evidence)
      index.db      git-ignored: derived index, rebuilt from the files
      sessions/     git-ignored: recorded agent sessions (lore.sessions)

Which folder holds which storage tier: :func:`lore.memory.files.location_of`.
"""

from __future__ import annotations

import os
import tomllib
import uuid
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.errors import NotFound, ProjectNotFound, UsageError, ValidationError
from lore.records import datarecord
from lore.safe_read import read_regular

LORE_DIR = ".lore"
RESERVED_LOCAL = ("session", "trash", "cache", "sessions", "daily", "archive")

DEFAULT_CONFIG = """\
# Lore settings for this project (committed). See docs/configuration.md.

[project]
# Names this project in a shared PostgreSQL index: every clone with this id is
# the same project there (docs/postgres.md). Written by `lore init`; keep it.
id = "{project_id}"

[memory]
# Days a removed memory stays in .lore/local/trash/ before `lore gc` purges it.
trash_retention_days = 30

[index]
# Globs (gitignore syntax). include: a non-empty list REPLACES the default
# file types (*.py, *.md, ...); exclude: added to the default skips
# (node_modules/, .venv/, dist/, ...), "!vendor/" re-includes one.
include = []
exclude = []
max_file_bytes = 1000000
# Every commit reachable from HEAD is indexed as past work, up to this cap
# (for very large monorepos).
history_commits = 200000

[embedding]
# local (offline MiniLM, the default), e5 (pip install lore-memory[e5]), onnx, openai, openai-compatible, gemini, voyage, none
provider = "local"

[search]
# adaptive (keyword weight follows how clearly keywords pick a winner), rrf
# (reciprocal rank fusion) or weighted (0.7 vector / 0.3 keyword): how search,
# code and history results are ranked and scored
fusion = "adaptive"
# the same choice for the evidence that ranks files (`lore code --files-only`,
# recall's likely files): code chunks and similar past commits
files_fusion = "rrf"

[recall]
budget = 2000
# Tokens of the pack injected when an agent session starts (`lore start`).
start_budget = 800
half_life_days = 90
"""

GITIGNORE = """\
# Derived index (rebuilt from the Markdown files), local-only memories, recorded sessions.
index.db
index.db-wal
index.db-shm
local/
sessions/
"""
# Inside the private folders themselves, so they stay out of git even where
# `.lore/.gitignore` is not (a branch from before Lore was adopted).
PRIVATE_GITIGNORE = "# Private to this clone: never committed (made by Lore).\n*\n"
# The index, kept out of the repository's own exclude file for the same reason.
EXCLUDED = ("index.db", "index.db-wal", "index.db-shm", "local/", "sessions/")


@datarecord
class Project:
    """A project root with a `.lore/` folder."""

    root: Path
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def lore_dir(self) -> Path:
        return self.root / LORE_DIR

    @property
    def memory_dir(self) -> Path:
        return self.lore_dir / "memory"

    @property
    def local_dir(self) -> Path:
        return self.lore_dir / "local"

    @property
    def session_dir(self) -> Path:
        return self.local_dir / "session"

    @property
    def sessions_dir(self) -> Path:
        """Recorded agent sessions (``lore.sessions``), one folder each."""
        return self.lore_dir / "sessions"

    @property
    def trash_dir(self) -> Path:
        return self.local_dir / "trash"

    @property
    def index_path(self) -> Path:
        return self.lore_dir / "index.db"

    def setting(self, section: str, key: str, default: Any = None) -> Any:
        return self.settings.get(section, {}).get(key, default)

    @classmethod
    def find(cls, start: str | os.PathLike[str] = ".") -> Project:
        """The nearest folder at or above `start` that has a `.lore/` (like git)."""
        here = Path(start).resolve()
        if here.is_file():
            here = here.parent
        for candidate in (here, *here.parents):
            if (candidate / LORE_DIR).is_dir():
                return cls(candidate, load_settings(candidate / LORE_DIR / "config.toml"))
        if not here.exists():
            raise ProjectNotFound(f"{here} does not exist; give the project's folder")
        raise ProjectNotFound(f"no {LORE_DIR}/ folder in {here} or any parent; run `lore init` first")

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".") -> tuple[Project, list[str]]:
        """Create the layout idempotently; existing files are never overwritten.

        Returns the project and the paths created (relative to the root).
        """
        root = Path(path).resolve()
        if root.exists() and not root.is_dir():
            raise UsageError(f"{root} is a file, not a folder; give a folder to initialise")
        root.mkdir(parents=True, exist_ok=True)  # like `git init newdir`
        created = []
        lore = root / LORE_DIR
        for folder in (lore, lore / "memory", lore / "local"):
            if not folder.exists():
                folder.mkdir(parents=True)
                created.append(str(folder.relative_to(root)) + "/")
        config = DEFAULT_CONFIG.replace("{project_id}", str(uuid.uuid4()))
        for name, text in (("config.toml", config), (".gitignore", GITIGNORE)):
            target = lore / name
            if not target.exists():
                from lore.atomic import write_atomic

                write_atomic(target, text)
                created.append(str(target.relative_to(root)))
        project = cls(root, load_settings(lore / "config.toml"))
        if project.keep_private():
            created.append(str((project.local_dir / ".gitignore").relative_to(root)))
        return project, created

    def keep_private(self) -> bool:
        """Keep the private parts of `.lore/` out of git whatever branch is
        checked out: `.lore/local/.gitignore` ignores everything beside it
        (the service also names them in the repository's own exclude file,
        :func:`lore.index.gitrepo.exclude_locally`). `.lore/.gitignore` alone
        went away with a checkout of a branch from before Lore, and the next
        `git add -A` committed private memories and the index. Returns whether
        it wrote the file now."""
        local = self.local_dir
        marker = local / ".gitignore"
        if local.is_dir() and not local.is_symlink() and not marker.exists():
            from lore.atomic import write_atomic

            try:
                write_atomic(marker, PRIVATE_GITIGNORE, sync=False)
                return True
            except OSError:
                pass  # a read-only project: git is the user's to run there
        return False

    def is_shared_place(self, path: Path) -> bool:
        """Whether a file at `path` would be in `.lore/` but not `.lore/local/`:
        the part of Lore's folder that is committed and shared with the team."""
        where = Path(os.path.realpath(path.parent)) / path.name
        lore_dir, local = (Path(os.path.realpath(p)) for p in (self.lore_dir, self.local_dir))
        return where.is_relative_to(lore_dir) and not where.is_relative_to(local)

    def outside_folders(self) -> list[tuple[str, str]]:
        """(relative path, real path) of Lore's memory folders (``.lore/memory``,
        ``.lore/local``) that are links leading outside the project."""
        root = os.path.realpath(self.root)
        found = []
        for folder in (self.memory_dir, self.local_dir):  # itself a link, or inside a linked .lore/
            real = os.path.realpath(folder)
            if os.path.commonpath([root, real]) != root:
                found.append((folder.relative_to(self.root).as_posix(), real))
        return found

    def rel(self, path: str | os.PathLike[str]) -> str:
        """`path` relative to the project root, in posix form."""
        return Path(os.path.abspath(path)).relative_to(self.root).as_posix()

    def inside(self, user_path: str | os.PathLike[str], *, base: Path | None = None) -> Path:
        """Resolve a user-supplied path, refusing anything outside the project."""
        if "\x00" in os.fspath(user_path):  # the OS can't name it: ValueError from realpath otherwise
            shown = os.fspath(user_path).replace("\x00", "\\x00")[:200]
            raise UsageError(f"the path '{shown}' contains a NUL character; remove it")
        candidate = Path(user_path)
        if not candidate.is_absolute():
            candidate = (base or Path.cwd()) / candidate
        # realpath, not Path.resolve: before Python 3.13 a symlink loop on the way
        # raised RuntimeError (an internal error); now the path is kept as it is,
        # and using it fails as a file system error like any other.
        resolved = Path(os.path.realpath(candidate))
        if resolved != self.root and self.root not in resolved.parents:
            raise UsageError(f"{user_path} is outside the project ({self.root}); give a path inside it")
        return resolved

    def check_folder(self, folder: Path) -> None:
        """Refuse to write in a folder of ``.lore/`` that a symbolic link leads out
        of the project (``.lore/local/<agent>``, the trash, ``.lore/sessions``
        → elsewhere): what Lore writes stays in the project, and its readers
        never follow such a link back."""
        try:
            self.inside(folder, base=self.root)
        except UsageError:
            raise UsageError(
                f"{self.rel(folder)}/ leads outside the project (a symbolic link?); "
                "make it a folder inside the project"
            ) from None

    def agent_dir(self, agent: str) -> Path:
        """The private folder of `agent` (named by :func:`agent_key`, the one naming rule)."""
        return self.local_dir / agent_key(agent)


def agent_key(agent: str) -> str:
    """The one form of an agent's identity: its private folder's name and what
    visibility is checked against (``Claude Code`` → ``claude-code``).

    Raises ValidationError for a name that can't identify an agent.
    """
    import re
    import unicodedata

    if not isinstance(agent, str):
        raise ValidationError(f"an agent is named by text, not {type(agent).__name__}", field="agent")
    text = unicodedata.normalize("NFKD", agent).encode("ascii", "ignore").decode("ascii")
    # (Cut at 64: a longer name refused would leave the memories it owns readable by no rule,
    # and a team's users file naming one unusable.)
    key = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64].strip("-")
    if not key or key in RESERVED_LOCAL:
        raise ValidationError(
            f"'{agent[:60]}' can't name an agent; choose another agent name (letters, digits)", field="agent"
        )
    return key


MAX_CONFIG_BYTES = 1024 * 1024


def load_settings(path: Path) -> dict[str, Any]:
    """Read config.toml; a missing file means defaults, a broken one (bad TOML, or
    a section, key or value Lore can't use: :mod:`lore.settings`) is an error, and
    so is anything but a regular file (the file is committed: a link to
    /dev/zero would otherwise be read forever)."""
    try:
        raw = read_regular(path, max_bytes=MAX_CONFIG_BYTES)
    except NotFound:
        if os.path.islink(path):  # a link to nothing: meant to be read, and defaults are not it
            raise ValidationError(
                f"links to {os.readlink(path)}, which does not exist; restore it or replace the link "
                "with the file",
                path=str(path),
            ) from None
        return {}
    if raw.startswith(b"\xef\xbb\xbf"):  # a byte order mark (Windows editors write one): not TOML's
        raw = raw[3:]
    try:
        settings = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ValidationError(
            f"invalid TOML ({err}); fix the syntax or delete the file to use defaults", path=str(path)
        ) from None
    from lore.settings import check

    return check(settings, str(path))
