"""Memory files on disk: YAML frontmatter + Markdown body, names, atomic writes."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore import atomic
from lore.errors import ValidationError
from lore.memory.files import MAX_MEMORY_BYTES
from lore.memory.model import Frontmatter, Memory, from_frontmatter, normalize_body, normalized, split_body
from lore.memory.values import MAX_DEPTH, fold_line, same_value

if TYPE_CHECKING:
    import yaml

    YamlLoader = type[yaml.SafeLoader] | type[yaml.CSafeLoader]
    YamlDumper = type[yaml.SafeDumper] | type[yaml.CSafeDumper]

MAX_SLUG = 50
MAX_TASK_SLUG = 40
MAX_FRONTMATTER_CHARS = 64 * 1024
"""Largest frontmatter Lore parses; real ones are well under 4 KiB."""
_FENCE = "---"
_CLOSING_FENCE = re.compile(r"^---[^\S\n]*$", re.M)
_YAML_ONLY_BREAKS = re.compile("[\x85\u2028\u2029]")
# git's conflict markers: "<<<<<<< HEAD", "=======" (or "||||||| base" in diff3), ">>>>>>> branch".
_CONFLICT_START = re.compile(r"^<{7}(?: |$)", re.M)
_CONFLICT_MARK = re.compile(r"^(?:<{7}(?: |$)|={7}$|>{7}(?: |$))")
_CODE_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")

# Every field a user can give: what is written must read back the same.
ROUND_TRIP_FIELDS = (
    "id",
    "title",
    "type",
    "sector",
    "tags",
    "applies_to",
    "occurred_at",
    "updated_at",
    "agent",
    "task",
    "project",
    "files",
    "labels",
    "priority",
    "risk",
    "task_type",
    "confidence",
    "source",
    "extra",
    "body",
)


def parse(raw: bytes, path: str) -> tuple[Memory, int]:
    """Parse a memory file's bytes.

    Returns the memory and the 1-based line where its body starts (so chunk
    line numbers point into the real file). Raises :class:`ValidationError`
    naming the file (and line, where known) on any problem, and never any
    other exception, whatever the bytes: one bad file must not stop a
    command. Never touches disk.
    """
    try:
        return _parse(raw, path)
    except ValidationError:
        raise
    except Exception as err:  # the last guard (RecursionError, MemoryError, a library bug...)
        reason = fold_line(str(err))[:120]
        raise ValidationError(
            f"cannot be read ({err.__class__.__name__}: {reason}); fix the file or move it out of .lore/",
            path=path,
        ) from None


def _parse(raw: bytes, path: str) -> tuple[Memory, int]:
    if len(raw) > MAX_MEMORY_BYTES:
        raise ValidationError(
            f"is {len(raw) / 2**20:.1f} MiB, over the {MAX_MEMORY_BYTES // 2**20} MiB limit for a memory "
            "file; split it into smaller memories",
            path=path,
        )
    nul = raw.find(b"\x00")
    if 0 <= nul < 8192:
        raise ValidationError("binary file in the memory folder; move it out of .lore/", path=path)
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise ValidationError("contains a NUL byte; remove it", path=path, line=line)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValidationError("not valid UTF-8; re-save the file as UTF-8", path=path, line=line) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    _refuse_conflict(text, path)
    first_end = text.find("\n")
    if text[: first_end if first_end >= 0 else len(text)].rstrip() != _FENCE:
        raise ValidationError(
            "no YAML frontmatter; the file must start with a '---' line (see docs/memory-format.md)",
            path=path,
            line=1,
        )
    closing = _CLOSING_FENCE.search(text, first_end + 1) if first_end >= 0 else None
    if closing is None:
        raise ValidationError("frontmatter is not closed; add a '---' line after it", path=path, line=1)
    front = text[first_end + 1 : closing.start()]  # with its last line break: a final "|" block keeps it
    end_line = text.count("\n", 0, closing.start())  # 0-based line of the closing fence
    meta = _load_frontmatter(front, path)
    skipped, body = split_body(text[closing.end() + 1 :])
    try:
        memory = from_frontmatter(meta, body, path=path)
    except ValidationError as err:
        raise ValidationError(
            err.reason, path=path, field=err.field, line=_field_line(front.split("\n"), err.field)
        ) from None
    return memory, end_line + 2 + skipped


def _refuse_conflict(text: str, path: str) -> None:
    """A merge left git's conflict markers in the file: say so, at the first
    one, instead of the YAML or format error they cause (or, in the body,
    indexing both sides and the markers). Markers inside a fenced code block
    are text (a memory about merging may quote them). When the two sides give
    different ids, they are two memories that got one file name on two
    branches (same day, same title): both are kept, one in a file of its own."""
    if not _CONFLICT_START.search(text):
        return
    fence = None
    marks = []
    ids: dict[str, set[str]] = {"<": set(), "=": set()}
    side = None
    for number, line in enumerate(text.split("\n"), 1):
        opened = _CODE_FENCE.match(line)
        if opened and (
            fence is None or opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
        ):
            fence = None if fence else opened.group(1)
        elif fence is None and _CONFLICT_MARK.match(line):
            marks.append((number, line[0]))
            side = line[0] if line[0] in ids else None
        elif side and line.startswith("id:"):
            ids[side].add(line[3:].strip().strip("'\""))
    kinds = [kind for _, kind in marks]
    if "<" in kinds and "=" in kinds[kinds.index("<") :] and ">" in kinds[kinds.index("<") :]:
        if ids["<"] and ids["="] and ids["<"] != ids["="]:
            what = (
                "two memories written on two branches under one file name (ids "
                f"{', '.join(sorted(ids['<'] | ids['=']))}); keep both: save one side as a file of its own "
                "(e.g. `git show :3:FILE > other.md`), the other here, without the marker lines, then `git add` them"
            )
        else:
            what = (
                "unresolved merge conflict (git's <<<<<<< ======= >>>>>>> lines); keep the right text, "
                "delete the marker lines, then `git add` the file"
            )
        raise ValidationError(what, path=path, line=marks[kinds.index("<")][0])


def _load_frontmatter(front: str, path: str) -> Frontmatter:
    """The frontmatter's mapping, after checking its size and shape so no
    input can crash or stall the YAML parser (deep nesting segfaults
    libyaml's composer and is quadratic to parse in full; aliases can expand
    exponentially). The shape check walks the events only when a cheap look
    at the text can't rule out aliases or deep nesting."""
    import yaml

    if len(front) > MAX_FRONTMATTER_CHARS:
        raise ValidationError(
            f"frontmatter is {len(front) // 1024} KiB, over the {MAX_FRONTMATTER_CHARS // 1024} KiB limit; "
            "move long text into the body",
            path=path,
            line=2,
        )
    try:
        if "*" in front or _flow_depth_bound(front) + _block_depth_bound(front) > MAX_DEPTH:
            _check_yaml_shape(front, path)  # can't rule out aliases or deep nesting by looking
        meta = yaml.load(front, Loader=_loader()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValidationError(
            f"malformed YAML frontmatter ({fold_line(problem)[:200]}); fix the syntax", path=path, line=line
        ) from None
    except ValueError as err:  # e.g. an integer of more than 4,300 digits
        raise ValidationError(
            f"frontmatter holds a value Lore cannot read ({fold_line(str(err))[:120]}); fix it", path=path
        ) from None
    if not isinstance(meta, dict):
        raise ValidationError("frontmatter must be a mapping of fields (key: value)", path=path, line=2)
    return meta


def frontmatter_of(lines: list[str], path: str) -> tuple[Frontmatter, int]:
    """The YAML block of a text whose first line is ``---`` (an imported note,
    an ADR): its fields, read with the same guards as memory files, and the
    index of its closing ``---`` line.

    Raises:
        ValidationError: the block is not closed, not YAML, too large or too
            deep, or not a mapping (naming `path` and the line).
    """
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == _FENCE), None)
    if end is None:
        raise ValidationError("frontmatter is not closed; add a '---' line after it", path=path, line=1)
    return _load_frontmatter("\n".join(lines[1:end]) + "\n", path), end


def _flow_depth_bound(text: str) -> int:
    """An upper bound of the flow-collection nesting of `text` (brackets in
    quoted text count too, which only makes the bound larger)."""
    if "[" not in text and "{" not in text:
        return 0
    depth = deepest = 0
    for char in re.findall(r"[\[\]{}]", text):
        depth = depth + 1 if char in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


_BLOCK_PREFIX = re.compile(r"^(?: +|[-?:][ \t]+)(?:[-?:][ \t]+)*", re.M)


def _block_depth_bound(text: str) -> int:
    """An upper bound of the block-collection nesting of `text`: each level
    needs more indentation or a ``- ``/``? `` indicator, and a sequence may
    share its mapping's indentation, hence the factor 2."""
    return 2 * max(map(len, _BLOCK_PREFIX.findall(text)), default=0) + 2


def _check_yaml_shape(front: str, path: str) -> None:
    """Walk the YAML events of `front` with libyaml's parser (which keeps its
    own stack, so this never recurses) before anything is built from them:
    refuse aliases and nesting deeper than the model allows. (libyaml's
    composer, which builds the data, recurses in C and segfaults on deep input.)"""
    import yaml

    source = _loader()(front)
    depth = 0
    try:
        while source.check_event():
            event = source.get_event()
            if isinstance(event, yaml.AliasEvent):
                raise ValidationError(
                    f"frontmatter uses a YAML alias (*{fold_line(str(event.anchor))[:40]}); "
                    "write the value out instead",
                    path=path,
                    line=_line_of(event),
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH + 1:
                    raise _too_deep(path, _line_of(event))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as err:
        # libyaml 0.2.5+ (PyYAML 6.0.4's wheels) refuses nesting past 1,000
        # levels in its scanner, which reads ahead of the events counted here:
        # the same fault, so the same message. Any other error is the caller's.
        if "nesting depth" not in str(getattr(err, "problem", "")):
            raise
        mark = getattr(err, "problem_mark", None)
        raise _too_deep(path, mark.line + 2 if mark is not None else None) from None
    finally:
        source.dispose()


def _too_deep(path: str, line: int | None) -> ValidationError:
    return ValidationError(
        f"frontmatter is nested more than {MAX_DEPTH} levels deep; flatten it", path=path, line=line
    )


def _line_of(event: yaml.Event) -> int | None:
    """The file line of a YAML event in the frontmatter (which starts on line 2)."""
    mark = getattr(event, "start_mark", None)
    return mark.line + 2 if mark is not None else None


def render(memory: Memory) -> str:
    """The canonical text of a memory file (no checks: see :func:`render_checked`)."""
    return f"{_FENCE}\n{_render_frontmatter(memory)}{_FENCE}\n\n{normalize_body(memory.body)}"


def _render_frontmatter(memory: Memory) -> str:
    import yaml

    try:
        front = yaml.dump(
            memory.frontmatter(),
            Dumper=_dumper(),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=100,
        )
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as err:
        raise ValidationError(
            f"cannot be written as YAML ({fold_line(str(err))[:120]}); use text, numbers, lists or mappings",
            path=memory.path,
        ) from None
    return front


def render_checked(memory: Memory, *, strict: bool = False) -> str:
    """The text to write for `memory`, proven to read back as written.

    The memory is normalised (:func:`lore.memory.model.normalized`: the
    documented trimming of title, body and keywords), validated (``strict``
    for memories Lore creates: see :meth:`Memory.validate`), rendered, and
    the exact bytes parsed again; every field a user can give must come back
    equal (types included). Raises :class:`ValidationError` naming the field
    otherwise, so the caller writes nothing.
    """
    memory = normalized(memory)
    memory.validate(strict=strict)
    front = _render_frontmatter(memory)
    if len(front) > MAX_FRONTMATTER_CHARS:
        raise ValidationError(
            f"its frontmatter would be {len(front) // 1024} KiB, over the {MAX_FRONTMATTER_CHARS // 1024} KiB "
            "limit; shorten the longest fields or move that text into the body",
            path=memory.path,
        )
    text = f"{_FENCE}\n{front}{_FENCE}\n\n{memory.body}"
    raw = text.encode("utf-8")
    if len(raw) > MAX_MEMORY_BYTES:
        raise ValidationError(
            f"the memory would be {len(raw) / 2**20:.1f} MiB, over the {MAX_MEMORY_BYTES // 2**20} MiB limit; "
            "split it into smaller memories",
            path=memory.path,
            field="body",
        )
    name = memory.path or "new memory"
    try:
        again, _ = parse(raw, name)
    except ValidationError as err:
        raise ValidationError(
            f"would not read back ({err.reason}); nothing was written", path=memory.path, field=err.field
        ) from None
    for field in ROUND_TRIP_FIELDS:
        given, read = getattr(memory, field), getattr(again, field)
        if not same_value(given, read):
            raise ValidationError(
                f"would read back as {_short(read)} instead of {_short(given)}; nothing was written "
                "(please report this)",
                path=memory.path,
                field="subject" if field == "title" else field,
            )
    return text


def _short(value: object) -> str:
    return repr(value)[:60]


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
    """``{YYYY-MM-DD}-{taskId}-{slug}.md`` (without a task: ``{YYYY-MM-DD}-{slug}.md``).

    Always a safe, portable name whatever the memory holds: only ``a-z0-9-``
    besides the date, at most 110 characters (task slug ≤ 40, title slug ≤
    50), never empty, hidden, ``.``/``..`` or a reserved device name (it
    starts with the date).
    """
    day = memory.occurred_at[:10] if isinstance(memory.occurred_at, str) else ""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        day = "undated"
    slug = slugify(memory.title if isinstance(memory.title, str) else "") or "memory"
    task = slugify(memory.task, limit=MAX_TASK_SLUG) if isinstance(memory.task, str) else ""
    return f"{day}-{task}-{slug}.md" if task else f"{day}-{slug}.md"


def write_new(directory: Path, name: str, text: str) -> Path:
    """Create a new memory file atomically, never overwriting (a taken name
    gets ``-2``, ``-3``, ...). Returns the path written."""
    return atomic.write_new(directory, name, text)


def move_new(source: Path, directory: Path, name: str | None = None) -> Path:
    """Move a file into `directory` (as `name`, default its own), never
    overwriting: a taken name gets ``-2``, ``-3``, ... Returns the new path.

    Hard link, then unlink: the file exists under one name or both, never
    none; if the unlink fails, the new name goes again (one file, as before),
    unless the source is already gone.
    """
    directory.mkdir(parents=True, exist_ok=True)
    target = atomic.link_free(source, directory, name or source.name)
    try:
        os.unlink(source)
    except FileNotFoundError:
        return target  # gone meanwhile (another process): the new name is now the only copy
    except OSError:
        target.unlink(missing_ok=True)
        raise
    return target


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` atomically (temp file in the same folder + rename). A
    file whose lines end in CRLF keeps them: rewritten with LF, every line of
    it changed in git's diff."""
    if "\r\n" not in text and _ends_lines_with_crlf(path):
        text = text.replace("\n", "\r\n")
    atomic.write_atomic(path, text)


def _ends_lines_with_crlf(path: Path) -> bool:
    """Do most of the lines `path` holds now end in CRLF? (False when unreadable.)"""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return False
    crlf = head.count(b"\r\n")
    return crlf > 0 and crlf * 2 >= head.count(b"\n")


def _field_line(front_lines: list[str], field: str | None) -> int | None:
    if not field:
        return None
    pattern = re.compile(rf"^{re.escape(field)}\s*:")
    for i, line in enumerate(front_lines):
        if pattern.match(line):
            return i + 2
    return None


_LOADER: YamlLoader | None = None
_DUMPER: YamlDumper | None = None


def _loader() -> YamlLoader:
    """A safe YAML loader (libyaml's when installed) that keeps timestamps as
    strings we normalise ourselves and refuses a key given twice (YAML says
    keys are unique; PyYAML would silently keep the last)."""
    global _LOADER
    if _LOADER is None:
        import yaml
        from yaml.constructor import ConstructorError

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        merge = "tag:yaml.org,2002:merge"

        class Loader(base):  # type: ignore[valid-type, misc, unused-ignore]
            def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
                if isinstance(node, yaml.MappingNode):
                    seen: set[Hashable] = set()
                    for key_node, _ in node.value:
                        if key_node.tag == merge:
                            continue
                        key = self.construct_object(key_node, deep=deep)
                        try:
                            duplicate = key in seen
                            seen.add(key)
                        except TypeError:  # unhashable: the base class says so
                            continue
                        if duplicate:
                            raise ConstructorError(
                                "while constructing a mapping",
                                node.start_mark,
                                f"key '{fold_line(str(key))[:60]}' appears twice, keep one",
                                key_node.start_mark,
                            )
                mapping: dict[Hashable, Any] = super().construct_mapping(node, deep=deep)
                return mapping

        Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_str)
        _LOADER = Loader
    return _LOADER


def _dumper() -> YamlDumper:
    global _DUMPER
    if _DUMPER is None:
        import yaml

        base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

        class Dumper(base):  # type: ignore[valid-type, misc, unused-ignore]
            pass

        def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
            # Text with a line break YAML knows but Lore's fences don't (NEL, U+2028,
            # U+2029) is double-quoted, where they are escaped: in a "|" block one
            # could end the value right before the closing '---', which then
            # would not start a line of its own.
            style = '"' if _YAML_ONLY_BREAKS.search(value) else "|" if "\n" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        Dumper.add_representer(str, _str)
        # A value used twice is written out twice: the reader refuses aliases.
        Dumper.ignore_aliases = lambda self, data: True
        # Write times plain (occurred_at: 2026-02-10T15:30:00Z), as the seeds do;
        # our loader reads them back as strings anyway.
        Dumper.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }
        _DUMPER = Dumper
    return _DUMPER
