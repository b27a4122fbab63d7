"""Memory files on disk: YAML frontmatter + Markdown body, names, atomic writes."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from lore import atomic
from lore.errors import ValidationError
from lore.memory.model import Memory, from_frontmatter

MAX_SLUG = 50
_FENCE = "---"


def parse(raw: bytes, path: str) -> tuple[Memory, int]:
    """Parse a memory file's bytes.

    Returns the memory and the 1-based line where its body starts (so chunk
    line numbers point into the real file). Raises :class:`ValidationError`
    naming the file (and line, where known) on any problem; never touches disk.
    """
    if b"\x00" in raw[:8192]:
        raise ValidationError("binary file in the memory folder; move it out of .lore/", path=path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValidationError("not valid UTF-8; re-save the file as UTF-8", path=path, line=line) from None
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].strip() != _FENCE:
        raise ValidationError(
            "no YAML frontmatter; the file must start with a '---' line (see docs/memory-format.md)",
            path=path,
            line=1,
        )
    meta, end = frontmatter_of(lines, path)
    body_lines = lines[end + 1 :]
    skipped = 0
    while skipped < len(body_lines) and not body_lines[skipped].strip():
        skipped += 1
    body = "\n".join(body_lines[skipped:]).rstrip() + "\n"
    try:
        memory = from_frontmatter(meta, body, path=path)
    except ValidationError as err:
        raise ValidationError(
            err.reason, path=path, field=err.field, line=_field_line(lines[1:end], err.field)
        ) from None
    return memory, end + 2 + skipped


def frontmatter_of(lines: list[str], path: str) -> tuple[dict, int]:
    """The YAML block of a text whose first line is ``---``: its fields (dates
    kept as written) and the index of its closing ``---`` line.

    Raises:
        ValidationError: the block is not closed, not YAML, or not a mapping
            (naming `path` and the line).
    """
    import yaml

    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise ValidationError(
            "frontmatter is not closed; add a '---' line after it", path=path, line=1
        ) from None
    try:
        meta = yaml.load("\n".join(lines[1:end]), Loader=_loader()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValidationError(
            f"malformed YAML frontmatter ({problem}); fix the syntax", path=path, line=line
        ) from None
    if not isinstance(meta, dict):
        raise ValidationError("frontmatter must be a mapping of fields (key: value)", path=path, line=2)
    return meta, end


def render(memory: Memory) -> str:
    """The canonical text of a memory file."""
    import yaml

    front = yaml.dump(
        memory.frontmatter(),
        Dumper=_dumper(),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return f"{_FENCE}\n{front}{_FENCE}\n\n{memory.body.strip()}\n"


def slugify(title: str, limit: int | None = MAX_SLUG) -> str:
    """000's slug rules: lowercase, non-alphanumerics to hyphens, collapse,
    trim, truncate to 50 characters at a word boundary.

    Accented letters are folded to ASCII first so names stay portable.
    """
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if limit and len(slug) > limit:
        cut = slug[:limit]
        # Break at the last hyphen when the cut fell inside a word.
        if slug[limit] != "-" and "-" in cut:
            cut = cut[: cut.rindex("-")]
        slug = cut.strip("-")
    return slug


def file_name(memory: Memory) -> str:
    """``{YYYY-MM-DD}-{taskId}-{slug}.md`` (without a task: ``{YYYY-MM-DD}-{slug}.md``)."""
    day = memory.occurred_at[:10]
    slug = slugify(memory.title) or "memory"
    task = slugify(memory.task, limit=None) if memory.task else ""
    return f"{day}-{task}-{slug}.md" if task else f"{day}-{slug}.md"


def write_new(directory: Path, name: str, text: str) -> Path:
    """Create a new memory file atomically, never overwriting (a taken name
    gets ``-2``, ``-3``, ...). Returns the path written."""
    return atomic.write_new(directory, name, text)


def move_new(source: Path, directory: Path, name: str | None = None) -> Path:
    """Move a file into `directory` (as `name`, default its own), never
    overwriting: a taken name gets ``-2``, ``-3``, ... Returns the new path.

    Hard link, then unlink: the file exists under one name or both, never none.
    """
    directory.mkdir(parents=True, exist_ok=True)
    target = atomic.link_free(source, directory, name or source.name)
    os.unlink(source)
    return target


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` atomically (temp file in the same folder + rename)."""
    atomic.write_atomic(path, text)


def _field_line(front_lines: list[str], field: str | None) -> int | None:
    if not field:
        return None
    pattern = re.compile(rf"^{re.escape(field)}\s*:")
    for i, line in enumerate(front_lines):
        if pattern.match(line):
            return i + 2
    return None


_LOADER = None
_DUMPER = None


def _loader():
    """A safe YAML loader that keeps timestamps as strings we normalise ourselves."""
    global _LOADER
    if _LOADER is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[valid-type, misc]
            pass

        Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_str)
        _LOADER = Loader
    return _LOADER


def _dumper():
    global _DUMPER
    if _DUMPER is None:
        import yaml

        base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

        class Dumper(base):  # type: ignore[valid-type, misc]
            pass

        def _str(dumper, value):
            style = "|" if "\n" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        Dumper.add_representer(str, _str)
        # Write times plain (occurred_at: 2026-02-10T15:30:00Z), as the seeds do;
        # our loader reads them back as strings anyway.
        Dumper.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }
        _DUMPER = Dumper
    return _DUMPER
