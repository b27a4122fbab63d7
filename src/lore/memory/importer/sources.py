"""What `lore import` reads: files found under a path, each recognised as one layout.

Layouts, recognised per file:

- **instructions** — ``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md``,
  ``CONVENTIONS.md``, ``copilot-instructions.md``: one memory per level-1/2
  section, typed by its heading (conventions by default; "architecture",
  "commands / workflow", "gotchas", "decisions" ... see :data:`SECTION_TYPES`).
  Lore's own instruction block (``<!-- lore:begin -->`` … ``end``) is skipped.
- **adr** — a file in an ADR folder (``adr/``, ``adrs/``, ``decisions/``,
  ``…/architecture/decisions/``) or named ``NNNN-title.md`` with a Status
  and a Decision section: one ``decision`` memory, dated by its ``Date:``
  line; a superseded ADR is imported as superseded.
- **chati** — seed 001's ``.chati/memories/{shared|<agent>}/{durable|daily|session}/*.md``:
  each file keeps its tier, and its agent's privacy.
- **note** — any other Markdown file (seed 004's ``memory/{id}.md`` among
  them): one memory, with or without frontmatter.

Only files under the path named are read: links that lead out of it are
skipped, so are hidden folders (but ``.chati``), ``node_modules`` and ``.lore``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

INSTRUCTION_FILES = {
    "agents.md",
    "claude.md",
    "gemini.md",
    "conventions.md",
    "copilot-instructions.md",
    "cursor.md",
}
ADR_FOLDERS = {"adr", "adrs", "decisions", "decision-records", "architecture-decisions"}
NOT_ADRS = {"readme.md", "index.md", "template.md", "adr-template.md", "0000-template.md"}
CHATI_TIERS = {"durable", "daily", "session"}
SKIPPED_DIRS = {"node_modules", ".lore", ".git", "__pycache__", ".venv", "venv"}
EXTENSIONS = (".md", ".markdown", ".mdx")
MAX_BYTES = 2 * 1024 * 1024

# Section heading words → memory type (first match wins); default: convention.
SECTION_TYPES = (
    (re.compile(r"\b(?:decision|decided|adr)s?\b", re.I), "decision"),
    (re.compile(r"\b(?:gotchas?|pitfalls?|traps?|known issues?|footguns?)\b", re.I), "gotcha"),
    (re.compile(r"\b(?:warnings?|caveats?|never|don'?t|do not|avoid)\b", re.I), "warning"),
    (
        re.compile(r"\b(?:architecture|structure|layout|overview|design|modules?|components?)\b", re.I),
        "architecture",
    ),
    (
        re.compile(
            r"\b(?:commands?|setup|build|testing|tests?|run(?:ning)?|workflows?|how to|development|deploy\w*|release)\b",
            re.I,
        ),
        "pattern",
    ),
    (re.compile(r"\b(?:preferences?|prefer)\b", re.I), "preference"),
    (re.compile(r"\b(?:lessons?|learned)\b", re.I), "lesson"),
)
_ADR_NAME = re.compile(r"^\d{3,5}[-_].+\.(?:md|markdown)$", re.I)
_ADR_STATUS = re.compile(r"^(?:#{1,3}\s*status\b|status\s*:)", re.I | re.M)
_ADR_DECISION = re.compile(r"^#{1,3}\s*(?:decision|decision outcome)\b", re.I | re.M)


@dataclass(frozen=True)
class Source:
    """One file to import and the layout it was recognised as."""

    path: Path  # absolute (resolved)
    rel: str  # relative to the path the user named (posix); what ids are derived from
    kind: str  # instructions | adr | chati | note
    scope: str | None = None  # chati: "shared" or the agent
    tier: str | None = None  # chati: durable | daily | session


def discover(named: Path, root: Path | None = None) -> tuple[list[Source], list[str]]:
    """The files under `named` (a file or a folder), recognised; and one line per file skipped.

    Each source is known (:attr:`Source.rel`) by its path in the project
    `root` when `named` lies inside it (``services/api/AGENTS.md`` and
    ``services/web/AGENTS.md`` imported one at a time were both ``AGENTS.md``,
    and the second was taken for a changed version of the first), else by its
    path under `named` (notes from elsewhere keep their ids wherever they are)."""
    base = named.resolve()
    problems: list[str] = []
    if base.is_file():
        if not _utf8(base.name, problems):
            return [], problems
        return [_known_as(_recognise(base, base.parent, base.name), base.parent, root)], problems
    found = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(
            d for d in dirs if d not in SKIPPED_DIRS and (not d.startswith(".") or d == ".chati")
        )
        for name in sorted(files):
            if not name.lower().endswith(EXTENSIONS):
                continue
            path = Path(folder) / name
            rel = path.relative_to(base).as_posix()
            if not _utf8(rel, problems):
                continue
            real = Path(os.path.realpath(path))
            if real != base and base not in real.parents:
                problems.append(f"skipped {rel}: a link to a file outside {named}")
                continue
            if not real.is_file():
                problems.append(f"skipped {rel}: not a regular file")
                continue
            found.append(_known_as(_recognise(real, base, rel), base, root))
    return found, problems


def _known_as(source: Source, folder: Path, root: Path | None) -> Source:
    """`source` (found under `folder`) known by its path in the project `root`
    when `folder` lies inside it."""
    top = root.resolve() if root is not None else None
    if top is None or top not in folder.parents:
        return source
    return replace(source, rel=f"{folder.relative_to(top).as_posix()}/{source.rel}")


def _utf8(rel: str, problems: list[str]) -> bool:
    """Whether a file's name can be stored and shown (its ids and frontmatter
    are text); else one line in `problems`."""
    from lore.filenames import display_path, unsafe_name

    if unsafe_name(rel):
        problems.append(f"skipped {display_path(rel)}: its name is not valid UTF-8; rename it")
        return False
    return True


def read_text(source: Source) -> str:
    """The file's text (UTF-8, at most 2 MB); raises ValueError saying what is wrong."""
    size = source.path.stat().st_size
    if size > MAX_BYTES:
        raise ValueError(f"{size} bytes, over the {MAX_BYTES}-byte limit")
    raw = source.path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise ValueError("binary, not Markdown")
    try:
        return raw.decode("utf-8-sig").replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise ValueError("not valid UTF-8; re-save it as UTF-8") from None


def section_type(heading: str) -> str:
    for pattern, kind in SECTION_TYPES:
        if pattern.search(heading):
            return kind
    return "convention"


def _recognise(path: Path, base: Path, rel: str) -> Source:
    parts = rel.split("/")
    name = parts[-1].lower()
    chati = _chati_place(path, base)
    if chati is not None:
        return Source(path, rel, "chati", *chati)
    if name in INSTRUCTION_FILES:
        return Source(path, rel, "instructions")
    folders = {p.lower() for p in (*base.parts[-2:], *parts[:-1])}
    in_adr_folder = (
        bool(folders & ADR_FOLDERS) or "architecture/decisions" in f"{base.as_posix()}/{rel}".lower()
    )
    if name not in NOT_ADRS and (in_adr_folder or _ADR_NAME.match(name)) and _looks_like_adr(path):
        return Source(path, rel, "adr")
    return Source(path, rel, "note")


def _chati_place(path: Path, base: Path) -> tuple[str, str] | None:
    """(scope, tier) of a file at ``<memories>/<scope>/<tier>/<file>`` where
    ``<memories>`` is 001's folder (``.chati/memories``, or one holding ``shared/<tier>/``)."""
    scope_dir = path.parent.parent
    memories = scope_dir.parent
    if path.parent.name not in CHATI_TIERS or (memories != base and base not in memories.parents):
        return None
    is_chati = (memories.name == "memories" and memories.parent.name == ".chati") or any(
        (memories / "shared" / tier).is_dir() for tier in CHATI_TIERS
    )
    return (scope_dir.name, path.parent.name) if is_chati else None


def _looks_like_adr(path: Path) -> bool:
    try:
        with path.open("rb") as handle:  # its head only: a huge file is skipped later, never read whole
            head = handle.read(20000).decode("utf-8", "replace")
    except OSError:
        return False
    return bool(_ADR_STATUS.search(head)) and bool(_ADR_DECISION.search(head) or "decision" in head.lower())
