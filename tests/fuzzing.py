"""Generators and checks shared by the fuzz tests (tests/test_fuzz_*.py) and
the long fuzz run (bench/fuzz.py).

Each ``check_*`` function runs one generated input through the real code and
returns what went wrong, as a short *cause* (``None`` when all is well), so
the tests can assert and the benchmark can count. Causes name the exception
class and the innermost frame of Lore's code, so crashes group by bug.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
from hypothesis import strategies as st

from lore.errors import LoreError, ValidationError
from lore.memory import markdown
from lore.memory.model import (
    MEMORY_TYPES,
    RESERVED_FIELDS,
    SECTORS,
    Memory,
    normalize_body,
    normalized,
    parse_time,
    visible_length,
)

# -- text ------------------------------------------------------------------------------

YAML_LOOKALIKES = [
    "yes", "no", "on", "off", "y", "n", "true", "False", "null", "Null", "~", "", " ", "1e3", "1.5e3",
    "0x10", "0o17", "0b101", "012", "1_000", "-0", "+1", ".5", "1.", ".inf", "-.inf", ".nan", "2024-01-01",
    "2024-01-01 12:30:00", "2024-01-01T12:30:00Z", "12:30", "190:20:30", "-", "'", '"', "'quoted'",
    '"double"', "a: b", "a:b", ":", "# hash", "a #b", "---", "...", "--- x", "- item", "? key", "@at",
    "`tick`", "%TAG", "!bang", "!!str x", "&anchor", "*alias", "|", "|-", ">", ">+", "{a: 1}", "[1, 2]",
    "a,b", "<<", "=", "\\", "\\n", "trailing  ", "  leading", "tab\tinside", "é", "e\u0301", "🙂", "👩‍💻",
    "עברית", "\ufeff", "\u00a0", "\u200b", "\u3000", "\U0010ffff", "\ufffe", "\uffff",
]  # fmt: skip
ONE_LINE_LOOKALIKES = [s for s in YAML_LOOKALIKES if "\t" not in s]
HOSTILE_PIECES = [
    "\n", "\r\n", "\r", "\t", "\x00", "\x07", "\x1b[31m", "\x7f", "\x85", "\u2028", "\u2029", "\ud800",
    "\udcff", "\n---\n", "\n...\n", "---\n", "\n# H1\n", "```", "\n\n\n", "  \n", "\u0301",
]  # fmt: skip

_ONE_LINE_CHARS = st.characters(exclude_categories=("Cc", "Cs"), exclude_characters="\u2028\u2029")
_ANY_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")

one_line_text = st.one_of(
    st.text(_ONE_LINE_CHARS, max_size=40),
    st.sampled_from(ONE_LINE_LOOKALIKES),
    st.lists(
        st.one_of(st.text(_ONE_LINE_CHARS, max_size=12), st.sampled_from(ONE_LINE_LOOKALIKES)), max_size=5
    ).map(" ".join),
)
"""Text a one-line field accepts (no control characters or line breaks)."""

multi_line_text = st.one_of(
    st.text(_ANY_CHARS, max_size=120),
    st.lists(
        st.one_of(
            st.text(_ANY_CHARS, max_size=20),
            st.sampled_from(YAML_LOOKALIKES),
            st.sampled_from([p for p in HOSTILE_PIECES if p not in ("\x00", "\ud800", "\udcff")]),
        ),
        max_size=10,
    ).map("".join),
)
"""Text a body or an extra field accepts (anything but NUL and lone surrogates)."""

hostile_text = st.one_of(
    multi_line_text,
    st.lists(
        st.one_of(st.text(max_size=10), st.sampled_from(YAML_LOOKALIKES), st.sampled_from(HOSTILE_PIECES)),
        max_size=8,
    ).map("".join),
    st.integers(1, 6).map(lambda n: "x" * 10**n),
)
"""Anything, including what must be refused (control characters, NUL, lone surrogates, 1 MB)."""

# -- memories --------------------------------------------------------------------------

times = st.one_of(
    st.datetimes(allow_imaginary=False).map(lambda d: d.isoformat()),
    st.datetimes(timezones=st.timezones(), allow_imaginary=False).map(lambda d: d.isoformat()),
    st.sampled_from(
        [
            "0001-01-01",
            "9999-12-31T23:59:59Z",
            "2024-02-29",
            "2024-01-01T00:00:00.000001Z",
            "2024-01-01T10:00+14:00",
        ]
    ),
)
plain_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    multi_line_text,
)
plain_data = st.recursive(
    plain_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(one_line_text, st.integers(-100, 100)), inner, max_size=4),
    ),
    max_leaves=12,
)
extra_fields = st.dictionaries(
    one_line_text.filter(lambda k: k not in RESERVED_FIELDS), plain_data, max_size=4
)

tags = st.lists(one_line_text.map(lambda s: s[:50]), max_size=6)


def _valid_time(text: str) -> bool:
    try:
        parse_time(text)
        return True
    except ValidationError:
        return False


def _long_enough(body: str) -> str:
    """At least 10 visible characters once normalised (``\\r\\n`` counts as
    one; zero-width ones count as none)."""
    return body if visible_length(normalize_body(body)) >= 10 else body + "\na body that is long enough"


def _legal_title(text: str) -> str:
    """A title with at least one visible character (a lone byte-order mark or
    zero-width space is refused, rightly)."""
    title = text.strip()[:200]
    return title if visible_length(title) else "title"


def _optional(strategy):
    return st.none() | strategy


canonical_times = times.filter(_valid_time).map(parse_time)
legal_memories = st.builds(
    Memory,
    title=one_line_text.map(_legal_title),
    body=multi_line_text.map(_long_enough),
    type=st.sampled_from(MEMORY_TYPES),
    sector=_optional(st.sampled_from(SECTORS)),
    tags=tags.map(lambda items: [t for t in items if t.strip()][:20]),
    applies_to=st.just("global")
    | st.tuples(st.sampled_from(["file:", "area:"]), one_line_text.filter(bool)).map("".join),
    occurred_at=canonical_times,
    updated_at=_optional(canonical_times),
    id=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.:-]{0,40}\Z"),
    agent=_optional(one_line_text),
    task=_optional(one_line_text),
    project=_optional(one_line_text),
    files=st.lists(one_line_text, max_size=3),
    labels=st.lists(one_line_text, max_size=3),
    priority=_optional(st.integers(-(2**63), 2**63 - 1)),
    risk=_optional(one_line_text),
    task_type=_optional(one_line_text),
    confidence=st.floats(0, 1),
    source=_optional(one_line_text),
    extra=extra_fields,
)
"""Memories every field of which is legal: they must be written and read back exactly."""


@st.composite
def any_memories(draw) -> Memory:
    """Legal memories with some fields replaced by anything at all (of any type)."""
    memory = draw(legal_memories)
    for name in draw(_SOME_FIELDS):
        setattr(memory, name, draw(_JUNK))
    if draw(st.booleans()):
        memory.extra = draw(_JUNK_EXTRA)
    return memory


_JUNK = st.one_of(hostile_text, st.integers(), st.floats(), st.none(), st.booleans(), plain_data)
_JUNK_EXTRA = st.dictionaries(st.one_of(hostile_text, st.integers()), _JUNK, max_size=3)
_SOME_FIELDS = st.lists(st.sampled_from(markdown.ROUND_TRIP_FIELDS), max_size=3)


# -- memory files ----------------------------------------------------------------------

_KEYS = [
    "id", "subject", "title", "type", "sector", "keywords", "tags", "applies_to", "occurred_at",
    "created_at", "createdAt", "completed", "date", "updated_at", "content_hash", "agent", "task",
    "project", "files", "labels", "priority", "risk", "task_type", "confidence", "source",
    "source_work_item_id", "tier", "x", "<<", "? complex", '"quoted key"', "'k'", "k" * 300,
]  # fmt: skip
_VALUES = [
    "", "~", "null", "yes", "0", "-1", "1.5", ".nan", "-.inf", "1e999", "99999999999999999999999",
    "-9223372036854775809", "9223372036854775807", "0x7fffffffffffffff", "190:20:30", "2024-01-01",
    "0001-01-01", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00+01:00", "10000-01-01", "2024-13-45",
    "fact", "summary", "bug", "procedural", "[a, b]", "[[a]]", "[{a: 1}]", "{a: {b: c}}", "[]", "{}",
    "&a [1, 2]", "*a", "&b x", "!!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]", "!!int 3",
    "!!float x", "!!python/object/apply:os.system [id]", "!custom x", '"a\\x00b"', '"\\ud800"',
    '"\\x1b[31m"', '"line\\nbreak"', "'it''s'", "|\n  block\n  ---\n  text", ">-\n  folded\n  text",
    "|\n  \ttab", '"\\u2028"', "global", "file:src/a.py", "area:auth", "a, b, c", "- a\n- b",
    "\n  - a\n  - b", "[" * 40 + "]" * 40, "[" * 2000 + "]" * 2000, "- " * 40 + "x", "{" * 50,
]  # fmt: skip
_BODIES = [
    "A body that is long enough.\n",
    "## Key Files\n\n- `src/a.py:45` what\n- `src/b.py:99999999999999999999999` huge\n- `c.py:1-2` x\n",
    "## Key Files\n- `a/../../../../etc/passwd.txt:1` escape\n- `x.py:" + "9" * 5000 + "` long\n",
    "---\nsubject: fake\n---\nbody after a fake frontmatter\n",
    "a body with one very long word " + "supercalifragilistic" * 4 + " in it, and more words",
    "# Title\n\n```\ncode\n```\n" * 3,
    "",
]


@st.composite
def frontmatter_texts(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        lines.append(f"{draw(_KEY)}: {draw(_VALUE)}")
    if draw(st.booleans()):
        lines.insert(0, f"occurred_at: {draw(_WHEN)}")
    return "\n".join(lines)


_KEY = st.sampled_from(_KEYS) | one_line_text.map(lambda s: s.replace(":", ""))
_VALUE = st.sampled_from(_VALUES) | one_line_text | st.integers().map(str)
_WHEN = st.sampled_from(_VALUES[15:21])
_BODY = st.sampled_from(_BODIES) | multi_line_text | hostile_text
_KIND = st.sampled_from(["structured", "rendered", "mutated", "noise"])


@st.composite
def memory_file_bytes(draw) -> bytes:
    """Bytes of a memory file: structured but hostile, a faithful file mutated,
    or plain noise; sometimes with a BOM, CRLF or a stray invalid byte."""
    kind = draw(_KIND)
    if kind == "noise":
        return draw(st.binary(max_size=300))
    if kind == "structured":
        front = draw(frontmatter_texts())
        body = draw(_BODY)
        text = f"---\n{front}\n---\n\n{body}"
        raw = text.encode("utf-8", "surrogatepass")
    else:
        raw = markdown.render(draw(legal_memories)).encode("utf-8")
        if kind == "mutated" and raw:
            data = bytearray(raw)
            for _ in range(draw(st.integers(1, 6))):
                at = draw(st.integers(0, len(data)))
                choice = draw(st.integers(0, 2))
                if choice == 0 and at < len(data):
                    del data[at]
                elif choice == 1:
                    data[at:at] = draw(st.binary(min_size=1, max_size=4))
                elif at < len(data):
                    data[at] = draw(st.integers(0, 255))
            raw = bytes(data)
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    if draw(st.booleans()):
        raw = raw.replace(b"\n", b"\r\n")
    return raw


# -- checks ----------------------------------------------------------------------------


def cause(err: BaseException) -> str:
    """``ExceptionClass at lore/module.py:function`` (innermost frame in Lore, else innermost)."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/lore/" in f.filename.replace(os.sep, "/")] or frames
    where = ""
    if ours:
        frame = ours[-1]
        where = f" at {frame.filename.replace(os.sep, '/').split('/lore/', 1)[-1]}:{frame.name}"
    return f"{err.__class__.__name__}{where}"


def check_parse(raw: bytes) -> str | None:
    """A file's bytes: parse + validate raise nothing but ValidationError, and a
    file that reads fine can be written back exactly (what `update` does)."""
    try:
        memory, _ = markdown.parse(raw, ".lore/memory/x.md")
        memory.validate()
    except ValidationError as err:
        if "\n" in str(err):
            return "multi-line error message"
        return None
    except Exception as err:
        return cause(err)
    return check_round_trip(memory, strict=True)


def check_round_trip(memory: Memory, *, strict: bool) -> str | None:
    """render_checked + parse give back every user-given field exactly.

    ``strict``: the memory is legal, so refusing it is a failure too.
    Returns ``mismatch:<field>`` for a round-trip difference."""
    expected = normalized(memory)
    try:
        text = markdown.render_checked(memory)
    except ValidationError as err:
        if "read back" in str(err):
            return f"mismatch:{err.field or 'unreadable'}"
        return f"refused legal memory: {err}"[:200] if strict else None
    except Exception as err:
        return cause(err)
    try:
        again, _ = markdown.parse(text.encode("utf-8"), ".lore/memory/x.md")
    except Exception as err:
        return f"mismatch:unreadable ({cause(err)})"
    for field in markdown.ROUND_TRIP_FIELDS:
        if not _same(getattr(expected, field), getattr(again, field)):
            return f"mismatch:{field}"
    name = markdown.file_name(memory)
    if not (
        name.endswith(".md")
        and len(name) <= 110
        and all(c.isascii() and (c.isalnum() or c in "-.") for c in name)
    ):
        return "unsafe file name"
    return None


def _same(a, b) -> bool:
    from lore.memory.values import same_value

    return same_value(a, b)


# -- add through the Python API ------------------------------------------------------------

KNOWN_OUTSIDE_SCOPE: dict[str, str] = {}
"""Failures the fuzzers find in code outside lore.memory and the CLI's input
decoding that are tolerated until fixed: cause -> what to fix (see bench/fuzz.py).
Empty: everything found so far is fixed."""


@st.composite
def add_inputs(draw) -> dict:
    """Keyword arguments for Lore.add, legal or not."""
    text = st.one_of(one_line_text, hostile_text) if draw(st.integers(0, 3)) == 0 else one_line_text
    body = st.one_of(multi_line_text, st.sampled_from(_BODIES), hostile_text)
    kwargs: dict = {
        "body": draw(body.filter(lambda b: len(b.strip()) >= 10) if draw(st.booleans()) else body)
    }
    optional = {
        "title": st.none() | text,
        "type": st.sampled_from(MEMORY_TYPES) | st.sampled_from(MEMORY_TYPES) | text,
        "tags": st.lists(text, max_size=4),
        "applies_to": st.sampled_from(["global", "file:src/a.py", "area:x"]) | text,
        "task": st.none() | text,
        "project": st.none() | text,
        "files": st.lists(text, max_size=3),
        "labels": st.lists(text, max_size=3),
        "confidence": st.none() | st.floats(),
        "occurred_at": st.none() | times | text,
        "id": st.none() | st.uuids(version=4).map(str) | text,
        "source": st.none() | text,
        "extra": st.none() | extra_fields,
        "session": st.booleans(),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            kwargs[name] = draw(strategy)
    return kwargs


def check_add(lore, kwargs: dict) -> str | None:
    """Lore.add with generated input: a LoreError or a memory that reads back
    exactly as stored (and as given, after the documented normalisation), with
    every other memory file untouched."""
    before = _snapshot(lore.project.root)
    try:
        result = lore.add(**kwargs)
    except LoreError as err:
        if "\n" in str(err):
            return "multi-line error message"
        return _unchanged(lore.project.root, before, None)
    except Exception as err:
        return cause(err)
    try:
        stored = lore.load(result.path)
        shown = lore.show(result.path).memory
    except Exception as err:
        return f"stored memory unreadable: {cause(err)}"
    for field in markdown.ROUND_TRIP_FIELDS:
        if field == "extra":
            continue
        if not _same(getattr(stored, field), getattr(shown, field)):
            return f"mismatch:show:{field}"
        if not _same(getattr(stored, field), getattr(result.memory, field)):
            return f"mismatch:result:{field}"
    if result.created:
        problem = _given_fields_match(kwargs, stored, redacted=bool(result.redacted))
        if problem:
            return problem
    return _unchanged(lore.project.root, before, result.path)


def _given_fields_match(kwargs: dict, stored: Memory, *, redacted: bool) -> str | None:
    """The documented normalisation of each given field equals what is stored."""
    checks: dict[str, Callable[[object], object]] = {
        "type": lambda v: v,
        "applies_to": lambda v: v,
        "task": lambda v: v or None,
        "project": lambda v: v or None,
        "files": list,
        "labels": list,
        "source": lambda v: v or None,
        "id": lambda v: v or stored.id,
        "extra": lambda v: dict(v or {}),
        "confidence": lambda v: 1.0 if v is None else float(v),
        "occurred_at": lambda v: parse_time(v) if v else stored.occurred_at,
    }
    if not redacted:
        checks["body"] = normalize_body
        checks["title"] = lambda v: v.strip() if isinstance(v, str) and v.strip() else stored.title
        checks["tags"] = lambda v: normalized(Memory(title="t", body="b", tags=list(v))).tags or stored.tags
    for name, expect in checks.items():
        if name in kwargs and kwargs[name] is not None:
            if not _same(expect(kwargs[name]), getattr(stored, "title" if name == "title" else name)):
                return f"mismatch:given:{name}"
    return None


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """(inode, size, mtime) of every memory file: any rewrite changes one of them."""
    files = {}
    for folder in (root / ".lore" / "memory", root / ".lore" / "local"):
        for path in folder.rglob("*.md"):
            if "trash" not in path.parts:
                info = path.stat()
                files[str(path.relative_to(root))] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return files


def _unchanged(root: Path, before: dict[str, tuple[int, int, int]], added: str | None) -> str | None:
    after = _snapshot(root)
    for rel, data in before.items():
        if after.get(rel) != data:
            return "another memory changed"
    extra = set(after) - set(before) - ({added} if added else set())
    if extra:
        return "file left behind by a refused write" if added is None else "unexpected file written"
    leftovers = [p for p in (root / ".lore").rglob(".lore-*.tmp")]
    if leftovers:
        return "temp file left behind"
    return None


# -- the command line, in process ----------------------------------------------------------


def fuzz_project(root: Path, git: bool = True) -> list[str]:
    """A project with a few memories (BM25 only, for speed); returns paths for path parameters."""
    root.mkdir()
    if git:
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        (root / "app.py").write_text("def handler():\n    return 42\n")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-qm", "first"], cwd=root, check=True)
    import lore

    project = lore.init(root)
    config = root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    added = project.add(title="Use UTC", body="Store every time in UTC.", tags=["time"])
    project.close()
    as_agent = lore.open(root, agent="a1")  # the acting agent is fixed per process
    as_agent.add(title="Retry twice", body="Network calls retry twice.", tags=["net"], private=True)
    as_agent.close()
    (root / "notes.txt").write_text("A body from a file, long enough.\n")
    (root / "bad.txt").write_bytes(b"not \xff utf-8 body text\n")
    return [
        str(root / added.path),
        str(root / "notes.txt"),
        str(root / "bad.txt"),
        str(root),
        str(root / "missing.json"),
        "-",
        "/dev/null",
        os.fsdecode(os.fsencode(str(root)) + b"/caf\xe9.txt"),
    ]


SKIP_COMMANDS = {"mcp", "serve"}  # serve forever


def command_paths(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    context = click.Context(group)
    # list_commands/get_command: the CLI loads a command's module on first use.
    for name in sorted(group.list_commands(context)):
        command = group.get_command(context, name)
        if name in SKIP_COMMANDS or command is None:
            continue
        if isinstance(command, click.Group):
            out += command_paths(command, (*prefix, name))
        else:
            out.append(((*prefix, name), command))
    return out


@st.composite
def param_values(draw, param: click.Parameter, paths: list[str]) -> list[str]:
    """Values for one parameter: right-typed, edge, or junk."""
    kind = param.type
    if isinstance(kind, click.Choice):
        good = st.sampled_from(list(kind.choices))
    elif isinstance(kind, (click.types.IntParamType, click.IntRange)):
        good = st.sampled_from(
            ["0", "-1", "1", "50", str(2**63), str(10**30), "-" + str(10**30)]
        ) | st.integers().map(str)
    elif isinstance(kind, (click.types.FloatParamType, click.FloatRange)):
        good = st.sampled_from(
            ["0", "1", "-1", "1e308", "1e309", "nan", "inf", "-inf", "0.5"]
        ) | st.floats().map(str)
    elif isinstance(kind, (click.Path, click.File)):
        good = st.sampled_from(paths)
    else:
        good = st.one_of(one_line_text, hostile_text.filter(lambda s: len(s) < 5000 and "\x00" not in s))
    junk = st.sampled_from(["", "-", "--", "=", "\udcff", os.fsdecode(b"\xff\xfe"), "x" * 3000, "--json"])
    return [draw(junk if draw(st.integers(0, 9)) == 0 else good)]


@st.composite
def cli_argvs(draw, group: click.Group, paths: list[str]) -> list[str]:
    """An argument vector for `lore`, built from the real command tree:
    the command's arguments (required ones always), some of its options."""
    path, command = draw(st.sampled_from(command_paths(group)))
    argv = list(path)
    options = [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]
    for param in draw(st.lists(st.sampled_from(options), max_size=5)) if options else []:
        flag = draw(st.sampled_from(param.opts))
        argv += [flag] if param.is_flag else [flag, *draw(param_values(param, paths))]
    for param in command.params:
        if isinstance(param, click.Argument) and (param.required or draw(st.booleans())):
            for _ in range(draw(st.integers(1, 3)) if param.nargs == -1 else 1):
                argv += draw(param_values(param, paths))
    if draw(st.integers(0, 19)) == 0:
        argv.insert(
            draw(st.integers(0, len(argv))), draw(st.sampled_from(["--bogus", "-z", "--", "--json=1"]))
        )
    return argv


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str
    crash: str | None = None  # the cause, when an exception escaped that main() could not name


def run_cli(argv: list[str], stdin: bytes = b"") -> CliRun:
    """`lore ARGV` through the real entry point, in this process.

    ``LORE_DEBUG=1`` makes main() re-raise, so an escaping exception keeps its
    traceback; it is then judged exactly as main() would (as_lore_error)."""
    from lore.errors import as_lore_error
    from lore.interfaces.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_stdin, saved_debug = sys.stdin, os.environ.get("LORE_DEBUG")
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    os.environ["LORE_DEBUG"] = "1"
    crash = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as done:  # `lore hook` exits itself
                code = done.code if isinstance(done.code, int) else 0
            except Exception as exc:
                known = as_lore_error(exc)
                if known is None:
                    code, crash = 1, cause(exc)
                else:
                    code = known.exit_code
                    print(f"lore: error: {' '.join(str(known).split())}", file=sys.stderr)
    finally:
        sys.stdin = saved_stdin
        if saved_debug is None:
            os.environ.pop("LORE_DEBUG", None)
        else:
            os.environ["LORE_DEBUG"] = saved_debug
    return CliRun(code, out.getvalue(), err.getvalue(), crash)


def check_cli(run: CliRun) -> str | None:
    """No traceback: exit 0/1/2; a failure is one `lore ...: error: ...` line."""
    if run.crash:
        return run.crash
    if run.code not in (0, 1, 2):
        return f"exit code {run.code}"
    if "Traceback" in run.stderr:
        return "traceback"
    if run.code != 0 and run.stderr.strip():
        errors = [line for line in run.stderr.splitlines() if line.startswith("lore") and "error" in line]
        if len(errors) > 1:
            return "several error lines"
    return None


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)
