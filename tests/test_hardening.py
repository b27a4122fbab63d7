"""Hostile memory files and inputs: each is refused with one clear line, never
a crash, a hang or a leak; what is written reads back as written."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import textwrap
import unicodedata
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import forkserver
from conftest import ON_POSTGRES
from lore.errors import ArgumentError, NotFound, ValidationError
from lore.memory import markdown
from lore.memory.files import (
    MAX_MEMORY_BYTES,
    display_path,
    read_memory_file,
    walk_memory_files,
)
from lore.memory.model import (
    Memory,
    derive_keywords,
    derive_title,
    keywords_of,
    normalize_body,
    parse_time,
    safe_line,
)

GOOD = "---\nid: m1\nsubject: A memory\noccurred_at: 2024-01-01T00:00:00Z\n---\n\nThe body is long enough.\n"


def head(extra: str = "", *, subject: str = "A memory", when: str = "2024-01-01") -> str:
    return f"---\nid: m1\nsubject: {subject}\noccurred_at: {when}\n{extra}"


def parse_text(text: str, path: str = "x.md"):
    return markdown.parse(text.encode("utf-8"), path)


def refused(text: str | bytes, *fragments: str, line: int | None = None) -> ValidationError:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    with pytest.raises(ValidationError) as caught:
        memory, _ = markdown.parse(raw, "x.md")
        memory.validate()
    message = str(caught.value)
    assert "\n" not in message and message.startswith("x.md")
    for fragment in fragments:
        assert fragment in message, message
    if line is not None:
        assert caught.value.line == line, message
    return caught.value


# -- reading files: regular files inside the project only ----------------------------


@pytest.fixture
def root(tmp_path) -> Path:
    project = tmp_path / "proj"
    (project / ".lore" / "memory").mkdir(parents=True)
    return project


def test_a_regular_file_is_read(root):
    (root / ".lore/memory/a.md").write_text(GOOD)
    assert read_memory_file(root, ".lore/memory/a.md") == GOOD.encode()


def test_a_symlink_inside_the_project_is_followed(root):
    (root / "notes").mkdir()
    (root / "notes/real.md").write_text(GOOD)
    os.symlink("../../notes/real.md", root / ".lore/memory/link.md")
    assert read_memory_file(root, ".lore/memory/link.md") == GOOD.encode()


def test_a_symlink_to_a_file_outside_the_project_is_refused(root, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text(GOOD.replace("The body", "TOP SECRET body"))
    os.symlink(secret, root / ".lore/memory/leak.md")
    with pytest.raises(ValidationError, match="outside the project") as caught:
        read_memory_file(root, ".lore/memory/leak.md")
    assert "TOP SECRET" not in str(caught.value)


def test_a_folder_symlinked_out_of_the_project_is_refused(root, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/x.md").write_text(GOOD)
    os.symlink(tmp_path / "elsewhere", root / ".lore/memory/sub")
    with pytest.raises(ValidationError, match="outside the project"):
        read_memory_file(root, ".lore/memory/sub/x.md")


@pytest.mark.parametrize(
    "folder, write",
    [
        (
            ".lore/local/carol",
            ("--agent", "carol", "add", "--private", "-t", "A note", "-b", "Written privately."),
        ),
        (".lore/memory", ("add", "-t", "A note", "-b", "Written for the whole team.")),
        (".lore/local/trash", ("rm", "m1")),
        (".lore/sessions", ("session", "start")),
    ],
)
def test_lore_writes_nothing_through_a_folder_symlinked_out_of_the_project(tmp_path, folder, write):
    """Reads refuse such folders; writes went through them: `lore add --private`
    wrote the memory file into the link's target, `rm` moved the memory there,
    and sessions were recorded there."""
    root = tmp_path / "proj"
    subprocess.run([sys.executable, "-m", "lore", "init", str(root)], check=True, capture_output=True)
    (root / ".lore/memory/m1.md").write_text(GOOD)
    outside = tmp_path / "outside"
    outside.mkdir()
    link = root / folder
    if link.is_dir():
        os.rename(link, tmp_path / "moved-away")
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, link)
    proc = subprocess.run(
        [sys.executable, "-m", "lore", *write],
        cwd=root,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode in (1, 2), proc.stderr  # .lore/memory: refused when the project opens
    assert proc.stderr.strip().count("\n") == 0 and "outside the project" in proc.stderr
    assert list(outside.iterdir()) == []


def test_a_move_between_tiers_refuses_a_tier_folder_symlinked_out(tmp_path):
    import lore
    from lore.errors import UsageError

    outside = tmp_path / "outside"
    outside.mkdir()
    with lore.init(tmp_path / "proj") as project:
        added = project.add(title="A shared note", body="Written for the whole team.")
        (project.project.root / ".lore/local").mkdir(exist_ok=True)
        os.symlink(outside, project.project.root / ".lore/local/daily")
        with pytest.raises(UsageError, match="leads outside the project"):
            project.memories.set_storage(added.id, "daily")
        assert (project.project.root / added.path).is_file() and list(outside.iterdir()) == []


def test_dangling_and_looping_symlinks_are_refused(root):
    os.symlink("nowhere.md", root / ".lore/memory/dangling.md")
    os.symlink("loop-b.md", root / ".lore/memory/loop-a.md")
    os.symlink("loop-a.md", root / ".lore/memory/loop-b.md")
    with pytest.raises(ValidationError, match="does not exist"):
        read_memory_file(root, ".lore/memory/dangling.md")
    with pytest.raises(ValidationError, match="loop"):
        read_memory_file(root, ".lore/memory/loop-a.md")


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_without_blocking(root):
    fifo = root / ".lore/memory/y.md"
    os.mkfifo(fifo)
    with pytest.raises(ValidationError, match="FIFO"):
        read_memory_file(root, ".lore/memory/y.md")  # nobody writes: a blocking open would hang here


@pytest.mark.timeout(60)
def test_an_indexed_code_file_replaced_by_a_fifo_is_refused_without_blocking(tmp_path):
    """A review: `Lore.code_file` (the web's GET /api/files/PATH, a locked
    endpoint) read an indexed file with a plain read: a FIFO put in its place
    hung it, and every other request with it; a file grown to gigabytes was
    read whole."""
    import lore

    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text("def alpha():\n    return 1\n")
    (proj / "b.py").write_text("def beta():\n    return 2\n")
    with lore.init(proj) as project:
        project.index_code()
        assert "alpha" in project.code_file("a.py")["text"]
        (proj / "a.py").unlink()
        os.mkfifo(proj / "a.py")
        with pytest.raises(ValidationError, match="FIFO"):
            project.code_file("a.py")
        (proj / "b.py").write_text("x = 1\n" * 400_000)  # past max_file_bytes since it was indexed
        with pytest.raises(ValidationError, match="MiB limit") as refused:
            project.code_file("b.py")
        # A code file's own advice (an audit: it said "split a memory into several").
        assert "max_file_bytes" in str(refused.value) and "memor" not in str(refused.value)


@pytest.mark.timeout(20)
def test_a_symlink_to_dev_zero_is_refused_without_reading(root):
    os.symlink("/dev/zero", root / ".lore/memory/x.md")
    with pytest.raises(ValidationError):
        read_memory_file(root, ".lore/memory/x.md")  # outside the project, and a device anyway


@pytest.mark.timeout(20)
def test_a_device_inside_the_project_is_refused(root):
    # A device node needs root to create; a bind of /dev/null's kind inside the project:
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(root / ".lore/memory/dev.md", 0o600 | 0o020000, os.makedev(1, 5))  # like /dev/zero
    with pytest.raises(ValidationError, match="device"):
        read_memory_file(root, ".lore/memory/dev.md")


def test_a_socket_is_refused(root):
    path = root / ".lore/memory/s.md"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(ValidationError, match="socket"):
            read_memory_file(root, ".lore/memory/s.md")
    finally:
        server.close()


def test_a_folder_named_like_a_memory_is_refused(root):
    (root / ".lore/memory/dir.md").mkdir()
    with pytest.raises(ValidationError, match="folder"):
        read_memory_file(root, ".lore/memory/dir.md")


@pytest.mark.timeout(20)
def test_a_huge_sparse_file_is_refused_by_its_size_without_reading_it(root):
    path = root / ".lore/memory/huge.md"
    with open(path, "wb") as handle:
        handle.truncate(50 * 1024**3)  # 50 GiB of nothing
    with pytest.raises(ValidationError, match="over the 16.0 MiB limit.*several memories"):
        read_memory_file(root, ".lore/memory/huge.md")


def test_the_size_limit_is_exact(root):
    path = root / ".lore/memory/a.md"
    path.write_bytes(b"x" * 1000)
    assert len(read_memory_file(root, ".lore/memory/a.md", max_bytes=1000)) == 1000
    with pytest.raises(ValidationError, match="limit"):
        read_memory_file(root, ".lore/memory/a.md", max_bytes=999)


def test_a_missing_file_is_not_found_and_paths_cannot_leave_the_project(root):
    with pytest.raises(NotFound):
        read_memory_file(root, ".lore/memory/nope.md")
    with pytest.raises(ValidationError, match="leaves the project"):
        read_memory_file(root, "../outside.md")
    with pytest.raises(ValidationError, match="leaves the project"):
        read_memory_file(root, "/etc/passwd")


def test_the_walk_lists_every_md_entry_and_survives_any_depth(root):
    memory = root / ".lore/memory"
    (memory / "a.md").write_text(GOOD)
    (memory / ".hidden.md").write_text(GOOD)
    (memory / "notes.txt").write_text("not a memory")
    os.mkfifo(memory / "fifo.md")
    os.symlink("loop.md", memory / "loop.md")
    depth = sys.getrecursionlimit() + 100  # deeper than a recursive walk can go
    fds = [os.open(memory, os.O_RDONLY)]
    try:
        for _ in range(depth):  # relative to the parent's fd: no long path lookups
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        os.close(os.open("deep.md", os.O_WRONLY | os.O_CREAT, dir_fd=fds[-1]))
        strip = len(str(root)) + 1
        problems: list = []
        found = {rel for rel, _ in walk_memory_files(str(memory), strip, problems)}
        assert {".lore/memory/a.md", ".lore/memory/fifo.md", ".lore/memory/loop.md"} <= found
        assert ".lore/memory/" + "d/" * depth + "deep.md" in found
        assert not any("hidden" in rel or rel.endswith(".txt") for rel in found)
        assert problems == []
    finally:  # pytest's own clean-up (shutil.rmtree) recurses, and would fail on this tree
        if len(fds) == depth + 1:
            os.unlink("deep.md", dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
        os.close(fds.pop())


def test_the_walk_reports_names_that_are_not_utf8_instead_of_listing_them(root):
    memory = root / ".lore/memory"
    os.makedirs(memory, exist_ok=True)
    (memory / "ok.md").write_text(GOOD)
    with open(os.fsencode(memory) + b"/bad\xff.md", "wb") as handle:
        handle.write(GOOD.encode())
    (memory / "new\nline.md").write_text(GOOD)
    problems: list = []
    found = [rel for rel, _ in walk_memory_files(str(memory), len(str(root)) + 1, problems)]
    assert found == [".lore/memory/ok.md"]
    shown = sorted(where for where, _ in problems)
    assert shown == [".lore/memory/bad\\xff.md", ".lore/memory/new\\x0aline.md"]
    assert all("\n" not in message and "rename" in message for _, message in problems)
    assert display_path("a\udcff\x07") == "a\\xff\\x07"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can list any folder")
def test_the_walk_reports_a_folder_it_cannot_list(root):
    locked = root / ".lore/memory/locked"
    locked.mkdir()
    (locked / "a.md").write_text(GOOD)
    locked.chmod(0)
    try:
        problems: list = []
        assert list(walk_memory_files(str(root / ".lore/memory"), len(str(root)) + 1, problems)) == []
        assert problems and "cannot list" in problems[0][1]
    finally:
        locked.chmod(0o755)


# -- parsing: every failure is one ValidationError naming file:line --------------------


def test_yaml_nested_100000_deep_is_refused_and_the_process_survives(tmp_path):
    # libyaml's composer recurses in C: this used to kill the process (SIGSEGV).
    script = textwrap.dedent(
        """
        from lore.errors import ValidationError
        from lore.memory import markdown
        head = "---\\nid: m1\\nsubject: s\\noccurred_at: 2024-01-01\\n"
        shapes = {
            "flow": "x: " + "[" * 100_000 + "]" * 100_000,
            "block": "x:\\n" + "- " * 30_000 + "a",
            "mappings": "x:\\n" + "".join(" " * i + "k:\\n" for i in range(1, 300)) + " " * 300 + "v: 1",
        }
        for name, front in shapes.items():
            try:
                markdown.parse((head + front + "\\n---\\n\\nbody long enough\\n").encode(), "x.md")
            except ValidationError as err:
                print(name, err)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert "brackets more than 1000 deep" in lines[0] or "64 KiB" in lines[0]
    assert all("nested" in line or "KiB" in line for line in lines[1:]), lines


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    ("extra", "fragments", "line"),
    [
        ("x: &a [1, 2]\ny: *a\n", ("alias (*a)",), 6),
        (
            "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b]\n",
            ("alias",),
            6,
        ),
        ("x: &a [*a]\n", ("alias",), 5),
        ("subject: again\n", ("'subject' appears twice",), 5),
        ("priority: 99999999999999999999999\n", ("priority", "out of range"), 5),
        ("priority: -9223372036854775809\n", ("priority", "out of range"), 5),
        ("tier: 9223372036854775808\n", ("'tier'", "out of range"), 5),
        ("x: " + "9" * 5000 + "\n", ("cannot read",), None),
        ("confidence: .nan\n", ("confidence",), 5),
        ("confidence: 1e999\n", ("confidence",), 5),
        ("x: !!binary aGVsbG8=\n", ("bytes",), 5),
        ("x: !!set {a, b}\n", ("set",), 5),
        ("x: !!omap [a: 1]\n", ("tuple",), 5),
        ("x: !!python/object/apply:os.system [echo hi]\n", ("malformed YAML",), 5),
        ('agent: "a\\x1bb"\n', ("agent", "control characters"), 5),
        ('x: "a\\0b"\n', ("'x'", "NUL"), 5),
        ('keywords: ["a\\nb"]\n', ("keywords", "one line"), 5),
        ("keywords: [[a]]\n", ("keywords", "list of strings"), 5),
        ("files: {a: 1}\n", ("files", "list of strings"), 5),
        ("applies_to: [{a: 1}]\n", ("applies_to", "single string"), 5),
        ("id: {a: b}\n", ("id",), None),
        ('"k\\x07": 1\n', ("control characters",), None),
        ("x: " + "[" * 40 + "]" * 40 + "\n", ("nested more than 32",), 5),
    ],
)
def test_hostile_frontmatter_is_one_clear_error(extra, fragments, line):
    refused(head(extra) + "---\n\nThe body is long enough.\n", *fragments, line=line)


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("---\n- a\n- b\n---\n\nThe body is long enough.\n", "mapping"),
        ("---\njust text\n---\n\nThe body is long enough.\n", "mapping"),
        ("---\n[a, b]\n---\n\nThe body is long enough.\n", "mapping"),
        ("no frontmatter at all\n", "no YAML frontmatter"),
        ("---\nid: m1\n", "not closed"),
        (head(subject="[{a: 1}]") + "---\n\nThe body is long enough.\n", "single string"),
        (head(subject="x" * 10_000) + "---\n\nThe body is long enough.\n", "1-200 characters"),
        (head(when="0001-01-01T00:00:00+01:00") + "---\n\nThe body is long enough.\n", "outside years"),
        (head(when="9999-12-31T23:59:59-01:00") + "---\n\nThe body is long enough.\n", "outside years"),
        (head(when="not a date") + "---\n\nThe body is long enough.\n", "not an ISO 8601 time"),
        (head() + "? " + "k" * 70_000 + "\n: 1\n---\n\nThe body is long enough.\n", "64 KiB limit"),
    ],
)
def test_unusable_files_are_one_clear_error(text, fragment):
    refused(text, fragment)


def test_binary_nul_and_invalid_utf8_are_refused_with_their_line():
    refused(b"\x00\x01binary", "binary file")
    refused((GOOD + "x" * 9000 + "\n\x00\n").encode(), "NUL byte", line=GOOD.count("\n") + 2)
    refused(GOOD.encode() + b"caf\xe9\n", "not valid UTF-8", line=GOOD.count("\n") + 1)


def test_a_file_over_16_mib_is_refused_before_parsing():
    refused((GOOD + "x" * MAX_MEMORY_BYTES).encode(), "16 MiB limit")


def test_extreme_dates_a_5mb_body_bom_and_crlf_still_pass():
    low, _ = parse_text(head(when="0001-01-01") + "---\n\nThe body is long enough.\n")
    high, _ = parse_text(head(when="9999-12-31T23:59:59Z") + "---\n\nThe body is long enough.\n")
    assert (low.occurred_at, high.occurred_at) == ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z")
    big, _ = parse_text(GOOD + "word " * 1_000_000)
    assert len(big.body) > 5_000_000
    windows, line = markdown.parse(("\ufeff" + GOOD).replace("\n", "\r\n").encode(), "x.md")
    assert windows.title == "A memory" and windows.body == "The body is long enough.\n" and line == 7
    for memory in (low, high, big, windows):
        memory.validate()


def test_extreme_dates_survive_the_recency_arithmetic():
    from lore.search.attention import recency

    for when in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"):
        assert 0.3 <= recency(when, 90.0) <= 1.0


def test_a_closing_fence_must_start_the_line():
    # An indented '---' (inside a YAML block) is not the end of the frontmatter.
    text = "---\nid: m1\nsubject: s\noccurred_at: 2024-01-01\nnote: |\n  a\n  ---\n  b\n---\n\nThe body is long enough.\n"
    memory, line = parse_text(text)
    assert memory.extra == {"note": "a\n---\nb\n"} and line == 11


def test_times_keep_milliseconds_and_format_the_same_twice():
    once = parse_time("2024-01-01T00:00:00.000001Z")
    assert once == parse_time(once)
    assert parse_time("2024-01-01T10:00:00.5+02:00") == "2024-01-01T08:00:00.500Z"


# -- derived values are always valid ---------------------------------------------------


def test_safe_line_never_overflows():
    assert [safe_line(v) for v in ("45", " 7 ", 1, 10**9)] == [45, 7, 1, 10**9]
    for bad in ("0", "-3", "9" * 30, "9" * 5000, "١٢", "1e3", "", 10**9 + 1, True, 2**70):
        assert safe_line(bad) is None


def test_derived_keywords_are_bounded_and_never_empty():
    long_word = "a" * 80
    body = f"{long_word} {long_word} {'b' * 51} quartz quartz quartz deadbeefcafe 12345"
    words = derive_keywords("Fix the \x1b[31m Überlänge\tparser", body)
    assert words and len(words) <= 5
    assert all(2 <= len(w) <= 50 and all(c.isalnum() or c == "_" for c in w) for w in words)
    assert "überlänge" in words and "quartz" in words
    assert derive_keywords("", "") == ["note"]
    assert len(derive_keywords("a b c d e f g h", "x " * 100, limit=99)) <= 20


def test_derived_titles_fold_line_breaks_and_drop_control_characters():
    assert derive_title("\n\n# Title\twith\x07 bell\n\nbody") == "Title with bell"
    assert derive_title("first line\r\nsecond") == "first line"
    assert derive_title("```\n----------\n```") == "Untitled"
    assert len(derive_title("word " * 500)) <= 200


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    ("title", "task"),
    [
        ("..", None),
        ("", None),
        ("🙂🙂🙂", "🙂"),
        ("con", "nul"),
        ("x" * 5000, "y" * 5000),
        ("a/../../etc/passwd", "../.."),
        ("Ünïcödé title", "JAT-12"),
    ],
)
def test_file_names_are_always_safe(title, task):
    memory = Memory(title=title, body="b" * 20, task=task, occurred_at="0001-01-01T00:00:00Z")
    name = markdown.file_name(memory)
    assert len(name) <= 110
    assert name.startswith("0001-01-01-") and name.endswith(".md")
    assert all(c.isascii() and (c.isalnum() or c in "-.") for c in name)
    assert "/" not in name and ".." not in name


# -- never write what cannot be read back -------------------------------------------------

LOOKALIKES = [
    "yes",
    "no",
    "on",
    "off",
    "null",
    "~",
    "true",
    "1e3",
    "0x10",
    "0o17",
    "012",
    "1_000",
    "2024-01-01",
    "2024-01-01 12:30:00",
    "12:30",
    ".inf",
    ".nan",
    "-",
    "'quoted'",
    '"double"',
    "a: b",
    "# hash",
    "a #b",
    "---",
    "...",
    "- item",
    "? key",
    "@at",
    "`tick`",
    "%percent",
    "!bang",
    "&anchor",
    "*alias",
    "|pipe",
    ">fold",
    "{brace}",
    "[bracket]",
    "a,b",
    "trailing  ",
    "x" * 130,
    "é composed",
    unicodedata.normalize("NFD", "é decomposed"),
    "emoji 🙂 zwj 👩‍💻",
    "rtl עברית",
    "bom\ufeffinside",
    "nel-free \u00a0nbsp",
]


@pytest.mark.storage_independent
@pytest.mark.parametrize("value", LOOKALIKES)
def test_values_yaml_would_misread_come_back_as_written(value):
    memory = Memory(
        title=value.strip() or "t",
        body=f"---\nsubject: fake\n---\n{value}\n...\n---\n\tindented\ttabs  \n",
        tags=[value.strip()[:50] or "t", "plain"],
        id="m-1",
        applies_to=f"area:{value}",
        agent=value.strip() or None,
        task=value.strip() or None,
        files=[value],
        labels=[value],
        source=value.strip() or None,
        risk=value,
        extra={"note": value, "nested": {"list": [value, 1, 1.5, True, None]}, value: value},
    )
    text = markdown.render_checked(memory)
    again, _ = markdown.parse(text.encode(), "x.md")
    for field in markdown.ROUND_TRIP_FIELDS:
        expected = getattr(memory, field)
        if field == "body":
            expected = normalize_body(expected)
        elif field == "tags":  # a comma separates keywords (docs/memory-format.md)
            expected = keywords_of(expected)
        assert getattr(again, field) == expected, field


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    "value", ["\n'quoted'\u200b\u2028", "a\u2028", "x\x85", "\u2029", "two\nlines\u2028"]
)
def test_text_ending_in_a_line_break_only_yaml_knows_round_trips(value):
    # Found by bench/fuzz.py: in a "|" block, a final U+2028 ended the value right
    # before the closing '---', which then was not a line of its own.
    for extra in ({"k": value}, {"k": [[value]]}, {"k": {"a": value}}):
        memory = Memory(title="A title", body="A body that is long enough.", extra=extra)
        again, _ = markdown.parse(markdown.render_checked(memory).encode(), "x.md")
        assert again.extra == extra


def test_bodies_that_look_like_frontmatter_stay_bodies():
    body = "\n\n---\nid: evil\nsubject: hijack\n---\n\n---\n...\n# Real heading\n\ntext   \n\n\n"
    memory = Memory(title="t", body=body)
    again, line = markdown.parse(markdown.render_checked(memory).encode(), "x.md")
    assert again.body == "---\nid: evil\nsubject: hijack\n---\n\n---\n...\n# Real heading\n\ntext\n"
    assert again.id == memory.id and again.title == "t"


def test_line_endings_in_the_body_are_normalised_the_same_way_on_both_sides():
    memory = Memory(title="t", body="\r\n line a\r\nb\rc\n\n\td  \n")
    again, _ = markdown.parse(markdown.render_checked(memory).encode(), "x.md")
    assert again.body == "line a\nb\nc\n\n\td\n" == normalize_body(memory.body)


def test_a_5mb_body_and_unicode_forms_round_trip_exactly():
    nfc, nfd = "café", unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    memory = Memory(title=f"{nfc} {nfd}", body=("line " * 20 + "\n") * 50_000, tags=[nfc, nfd + "x"])
    again, _ = markdown.parse(markdown.render_checked(memory).encode(), "x.md")
    assert again.title == f"{nfc} {nfd}" and again.tags == [nfc, nfd + "x"]
    assert len(again.body) > 5_000_000


@pytest.mark.storage_independent
@pytest.mark.parametrize(
    ("changes", "field", "fragment"),
    [
        ({"title": "two\nlines"}, "subject", "one line"),
        ({"title": "tab\there"}, "subject", "one line"),
        ({"title": "nul\x00"}, "subject", "NUL"),
        ({"title": "x" * 10_000}, "subject", "1-200"),
        ({"title": "bad \udcff byte"}, "subject", "byte"),
        ({"body": "body with \udcff undecodable"}, "body", "not valid Unicode"),
        ({"body": "body with a \x00 NUL in it"}, "body", "NUL"),
        ({"tags": ["a\u2028b"]}, "keywords", "one line"),
        ({"tags": ["k" * 51]}, "keywords", "1-50"),
        ({"tags": [3]}, "keywords", "list of strings"),
        ({"priority": 2**63}, "priority", "out of range"),
        ({"priority": True}, "priority", "whole number"),
        ({"confidence": float("nan")}, "confidence", "between 0 and 1"),
        ({"occurred_at": "yesterday"}, "occurred_at", "ISO 8601"),
        ({"extra": {"tags": ["x"]}}, "extra", "Lore's own field names"),
        ({"extra": {"date": "2024-01-01"}}, "extra", "Lore's own field names"),
        ({"extra": {"x": (1, 2)}}, "x", "tuple"),
        ({"extra": {"x": {1, 2}}}, "x", "set"),
        ({"extra": {"x": b"bytes"}}, "x", "bytes"),
        ({"extra": {"x": 10**30}}, "x", "out of range"),
        ({"applies_to": "global\n"}, "applies_to", "one line"),
        ({"id": "abc\n"}, "id", "one line"),
        ({"agent": "a\tb"}, "agent", "one line"),
    ],
)
def test_values_that_cannot_be_written_exactly_are_refused_naming_the_field(changes, field, fragment):
    memory = Memory(**{"title": "A title", "body": "A body that is long enough.", **changes})
    with pytest.raises(ValidationError) as caught:
        markdown.render_checked(memory)
    assert caught.value.field == field, str(caught.value)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_cycles_in_extra_fields_are_refused_and_shared_values_written_out():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValidationError, match="cycle"):
        markdown.render_checked(Memory(title="t", body="A body that is long enough.", extra={"x": loop}))
    shared = ["a", "b"]
    text = markdown.render_checked(
        Memory(title="t", body="A body long enough.", extra={"p": shared, "q": shared})
    )
    assert "&" not in text and "*" not in text
    again, _ = markdown.parse(text.encode(), "x.md")
    assert again.extra == {"p": ["a", "b"], "q": ["a", "b"]}


def test_a_write_over_the_size_limit_is_refused_before_writing():
    memory = Memory(title="t", body="x" * (MAX_MEMORY_BYTES + 10))
    with pytest.raises(ValidationError, match="over the 16 MiB limit"):
        markdown.render_checked(memory)
    with pytest.raises(ValidationError, match="over the 64 KiB limit"):
        markdown.render_checked(Memory(title="t", body="A body long enough.", extra={"x": "y" * 70_000}))


def test_brackets_in_text_are_not_nesting():
    value = "[" * 5000 + "{" * 5000
    text = markdown.render_checked(Memory(title="[[[[", body="A body long enough.", extra={"x": value}))
    again, _ = markdown.parse(text.encode(), "x.md")
    assert again.extra == {"x": value} and again.title == "[[[["


_FAILING_WRITE = """
import os, resource, signal, sys
from pathlib import Path
from lore.memory import markdown
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
folder = Path(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    if sys.argv[2] == "new":
        markdown.write_new(folder, "m.md", "x" * 100_000)
    else:
        markdown.write_atomic(folder / "keep.md", "y" * 100_000)
except OSError as err:
    print("failed", err.errno)
"""


@pytest.mark.parametrize("mode", ["new", "atomic"])
def test_a_failed_write_leaves_nothing_behind(tmp_path, mode):
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "keep.md").write_text("the user's file\n")
    proc = subprocess.run(
        [sys.executable, "-c", _FAILING_WRITE, str(folder), mode], capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.startswith("failed"), proc.stdout + proc.stderr  # the disk "filled up"
    assert sorted(p.name for p in folder.iterdir()) == ["keep.md"]  # no temp file, no partial file
    assert (folder / "keep.md").read_text() == "the user's file\n"


def test_a_write_that_cannot_be_encoded_leaves_nothing_behind(tmp_path):
    with pytest.raises(UnicodeEncodeError):
        markdown.write_new(tmp_path, "m.md", "bad \udcff")
    assert list(tmp_path.iterdir()) == []


# -- command line input that is not UTF-8 ------------------------------------------------


def _lore(
    cwd: Path, *args: str, stdin: bytes | None = None, timeout: float = 120, max_memory: int | None = None
) -> subprocess.CompletedProcess:
    """`python -m lore ARGS` under the C.UTF-8 locale, output as bytes: forked
    from the worker's server when this process already runs under it or in
    UTF-8 mode (its streams then pass undecodable bytes through, as the fresh
    interpreter's do; under en_US.UTF-8 they would refuse them), in a fresh
    interpreter otherwise, or with `max_memory` (its own limit). A fresh one
    spends ~0.6 s importing."""
    import locale

    env = {**os.environ, "NO_COLOR": "1"}
    c_utf8 = sys.flags.utf8_mode or locale.setlocale(locale.LC_CTYPE) in ("C.UTF-8", "C.utf8", "UTF-8")
    if not max_memory and c_utf8 and not forkserver.needs_exec(env):
        return forkserver.Server.get().run(
            list(args), cwd=cwd, env=env, input=stdin, timeout=timeout, text=False
        )
    env["LC_ALL"] = "C.UTF-8"

    def limit() -> None:  # a runaway read (/dev/zero) fails fast instead of eating the machine
        if max_memory:
            resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))

    return subprocess.run(
        [sys.executable, "-m", "lore", *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=timeout,
        preexec_fn=limit,
    )


def _one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in (1, 2), (proc.returncode, err)
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def proj(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    assert _lore(root, "init").returncode == 0
    config = root / ".lore/config.toml"  # BM25 only: these tests are about input, not vectors
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    return root


def test_non_utf8_arguments_are_one_line_errors(proj):
    bad = os.fsdecode(b"bad \xff byte")
    _one_line_error(_lore(proj, "add", "--title", bad, "--body", "A body long enough."), "--title", "0xff")
    _one_line_error(_lore(proj, "add", "--body", bad + " and more text"), "--body", "0xff")
    _one_line_error(_lore(proj, "add", "--tag", bad, "--body", "A body long enough."), "--tag", "0xff")
    _one_line_error(_lore(proj, "search", "query", bad), "QUERY", "0xff")
    _one_line_error(_lore(proj, "recall", bad), "TITLE", "0xff")
    _one_line_error(_lore(proj, "show", bad), "KEY", "0xff")
    _one_line_error(_lore(proj, "list", "--tag", bad), "--tag", "0xff")


def test_non_utf8_stdin_and_files_are_one_line_errors(proj, tmp_path):
    body = b"A body that is\nlong enough \xfe\xff here\n"
    _one_line_error(_lore(proj, "add", "--title", "t", stdin=body), "standard input", "line 2")
    path = tmp_path / "body.txt"
    path.write_bytes(body)
    _one_line_error(_lore(proj, "add", "--body-file", str(path)), "--body-file", "0xfe")
    _one_line_error(_lore(proj, "add", "--body-file", "-", stdin=body), "0xfe")
    _one_line_error(_lore(proj, "recall", "task", "-d", "-", stdin=b"desc \xff"), "standard input")
    _one_line_error(_lore(proj, "capture", "--from-stdout", str(path)), "--from-stdout", "0xfe")
    session = _lore(proj, "session", "start").stdout.decode().strip()
    _one_line_error(_lore(proj, "session", "append", session, stdin=body), "standard input", "0xfe")
    listed = _lore(proj, "list", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == b"[]"  # nothing was written


@pytest.mark.timeout(240)
@pytest.mark.surface
def test_endless_stdin_and_files_stop_at_the_input_limit(proj):
    def endless(*args: str, stdin: str = os.devnull) -> subprocess.CompletedProcess:
        with open(stdin, "rb") as source:  # a read to the end would never return
            return subprocess.run(
                [sys.executable, "-m", "lore", *args],
                cwd=proj,
                stdin=source,
                capture_output=True,
                env={**os.environ, "NO_COLOR": "1"},
                timeout=25,
            )

    session = _lore(proj, "session", "start").stdout.decode().strip()
    for args, stdin, named in (
        (["add", "-t", "z", "--body-file", "/dev/zero"], os.devnull, "--body-file /dev/zero"),
        (["add", "-t", "z", "--body-file", "/dev/urandom"], os.devnull, "--body-file /dev/urandom"),
        (["add", "-t", "z"], "/dev/zero", "standard input"),
        (["capture", "--from-stdout", "/dev/zero"], os.devnull, "--from-stdout /dev/zero"),
        (["capture", "--stdin"], "/dev/zero", "standard input"),
        (["complete", "T-5", "-t", "x", "--bundle", "/dev/zero"], os.devnull, "/dev/zero"),
        (["recall", "x", "-d", "-"], "/dev/zero", "standard input"),
        (["session", "append", session], "/dev/zero", "standard input"),
    ):
        _one_line_error(endless(*args, stdin=stdin), named, "over the 16 MiB limit")
    listed = _lore(proj, "list", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == b"[]"  # nothing was written


def test_utf8_input_with_a_bom_and_a_project_path_that_is_not_utf8_work(tmp_path):
    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    root.mkdir()
    assert _lore(root, "init").returncode == 0
    added = _lore(root, "add", "--title", "Ünïcode", stdin="\ufeffA body that is long enough.\n".encode())
    assert added.returncode == 0, added.stderr
    shown = _lore(tmp_path, "--project", str(root), "list", "--json")
    assert shown.returncode == 0 and "Ünïcode".encode() in shown.stdout


@pytest.mark.surface
def test_trash_retention_out_of_range_is_one_line_error(proj):
    for days in ("nan", "inf", "1e308", "-1"):
        _one_line_error(_lore(proj, "gc", "--days", days), "trash retention must be a number of days")
    done = _lore(proj, "gc", "--days", "0", "--json")
    assert done.returncode == 0, done.stderr


def test_click_usage_errors_are_one_line(proj):
    _one_line_error(_lore(proj, "add", "--bogus"), "No such option", "lore add --help")
    _one_line_error(_lore(proj, "search"), "Missing argument")
    _one_line_error(_lore(proj, "add", "--type", "nonsense", "--body", "x" * 20), "--type")


# -- end to end: one bad file never stops the others -------------------------------------


@pytest.mark.timeout(120)
def test_every_command_survives_hostile_files_in_the_memory_folder(proj, tmp_path):
    memory = proj / ".lore/memory"
    (memory / "good.md").write_text(GOOD.replace("id: m1", f"id: {uuid.uuid4()}"))
    os.mkfifo(memory / "fifo.md")
    os.symlink("/dev/zero", memory / "zero.md")
    (tmp_path / "outside.md").write_text(GOOD.replace("The body", "OUTSIDE SECRET body"))
    os.symlink(tmp_path / "outside.md", memory / "outside.md")
    (memory / "deep.md").write_text(
        head("x: " + "[" * 30_000 + "]" * 30_000 + "\n") + "---\n\nbody long enough\n"
    )
    (memory / "big.md").write_text(head("priority: 99999999999999999999999\n") + "---\n\nbody long enough\n")
    (proj / "src").mkdir()
    (memory / "lines.md").write_text(
        head()
        + "---\n\n## Key Files\n\n- `src/a.py:99999999999999999999999` x\n- `b.py:"
        + "9" * 5000
        + "` y\n"
    )
    (memory / "zero-anchor.md").write_text(
        head("files: [src/../../../../../../../../../dev/zero]\n") + "---\n\nbody long enough\n"
    )
    with open(os.fsencode(memory) + b"/name\xff.md", "wb") as handle:
        handle.write(GOOD.encode())
    commands = (
        ["list", "--json"],
        ["search", "memory", "--json"],
        ["recall", "memory", "--json"],
        ["stats"],
        ["doctor", "--json"],
    )
    for args in commands:
        try:
            proc = _lore(proj, *args, timeout=15, max_memory=1024**3)
        except subprocess.TimeoutExpired:
            pytest.fail(f"lore {' '.join(args)} hung")
        assert proc.returncode == (1 if args[0] == "doctor" else 0), (args, proc.stderr[-500:])
        assert b"Traceback" not in proc.stderr and b"OUTSIDE SECRET" not in proc.stdout
        if args[0] in ("list", "search", "recall"):
            assert b"A memory" in proc.stdout, args
    # every bad file is one problem `doctor` names (file: what is wrong, what to do)
    errors = {p["where"]: p["message"] for p in json.loads(proc.stdout) if p["level"] == "error"}
    expected = {
        "fifo.md": "FIFO",
        "zero.md": "outside the project",
        "outside.md": "outside the project",
        "deep.md": "nested more than",
        "big.md": "out of range",
        "name\\xff.md": "not UTF-8",
    }
    for name, fragment in expected.items():
        assert fragment in errors.get(f".lore/memory/{name}", ""), (name, errors)
    # absurd Key Files line numbers and an anchor to /dev/zero are no errors, just no anchor
    # (both files share id m1, which doctor does report)
    for name in ("lines.md", "zero-anchor.md"):
        assert "also used by" in errors.get(f".lore/memory/{name}", "also used by"), errors


# -- end to end: the values that must keep working, and writes that fail cleanly --------


@pytest.mark.timeout(240)
def test_extreme_dates_and_a_5mb_body_work_through_every_command(proj, tmp_path):
    added = _lore(
        proj,
        "add",
        "--title",
        "Oldest memory",
        "--occurred-at",
        "0001-01-01T00:00:00Z",
        "--body",
        "Oldest memory body text.",
    )
    assert added.returncode == 0, added.stderr
    # A memory from the future is refused when added, but a file may still hold the calendar's last second.
    args = (
        "add",
        "--title",
        "Newest memory",
        "--occurred-at",
        "9999-12-31T23:59:59Z",
        "--body",
        "Newest memory body.",
    )
    assert _lore(proj, *args).returncode == 2
    (proj / ".lore/memory/newest.md").write_text(
        "---\nid: 7d0c1f3e-0b8e-4c55-9a57-0d5f3d0b1a2c\nsubject: Newest memory\n"
        "occurred_at: 9999-12-31T23:59:59Z\n---\n\nNewest memory body text.\n"
    )
    big_body = ("A large memory line of text. " * 20 + "\n") * 9_000  # > 5 MB
    assert len(big_body) > 5_000_000
    (tmp_path / "big.txt").write_text(big_body)
    added = _lore(proj, "add", "--title", "Big memory", "--body-file", str(tmp_path / "big.txt"), "--json")
    assert added.returncode == 0, added.stderr
    big_id = json.loads(added.stdout)["id"]
    shown = json.loads(_lore(proj, "show", big_id, "--json").stdout)
    assert shown["content"].endswith("\n---\n\n" + big_body.strip() + "\n")  # stored as given
    for args in (["list", "--json"], ["search", "memory", "--json"], ["recall", "memory", "--json"]):
        proc = _lore(proj, *args)
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, (args, proc.stderr[-300:])
    listed = {m["title"]: m for m in json.loads(_lore(proj, "list", "--json").stdout)}
    assert listed["Oldest memory"]["occurred_at"] == "0001-01-01T00:00:00Z"
    assert listed["Newest memory"]["occurred_at"] == "9999-12-31T23:59:59Z"
    assert "Big memory" in listed
    assert _lore(proj, "doctor", "--json").returncode == 0


def test_capture_keeps_messages_whose_derived_keywords_would_be_too_long(proj, tmp_path):
    long_word = "supercalifragilistic" * 4  # 80 letters: longer than a keyword may be
    output = tmp_path / "agent.out"
    output.write_text(
        f"<lore-memory title='Remember {long_word}'>The {long_word} setting must stay off "
        f"in production, {long_word} breaks the cache.</lore-memory>\n"
    )
    proc = _lore(proj, "capture", "--from-stdout", str(output), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["created"] == 1 and result["problems"] == [], result
    (memory,) = json.loads(_lore(proj, "list", "--json").stdout)
    assert memory["tags"] and all(2 <= len(tag) <= 50 for tag in memory["tags"]), memory


def _memory_folder_state(root: Path) -> dict[str, bytes]:
    """Every file under .lore/memory and .lore/local (temp files included), with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for folder in (root / ".lore/memory", root / ".lore/local")
        for p in folder.rglob("*")
        if p.is_file() and p.name != ".write.lock"
    }


def test_a_failed_mcp_write_leaves_nothing_behind(tmp_path):
    from test_mcp import make_project, run_async, stdio_session

    root = make_project(tmp_path, code=False)

    async def body():
        async with stdio_session(root) as s:
            kept = await s.ok(
                "memory_write", title="Kept as it is", content="This memory must not change at all."
            )
            before = _memory_folder_state(root)
            bad_calls = (
                {"title": "two\u2028lines", "content": "A body that is long enough."},
                {"title": "bell \u0007 here", "content": "A body that is long enough."},
                {"tags": ["ok", "bad\u0085tag"], "content": "A body that is long enough."},
                {"tags": ["k" * 51], "content": "A body that is long enough."},
                {"content": "A body with a NUL \u0000 in the middle of it."},
                {"id": kept["id"], "title": "new\u2029title", "content": "Replacement body text."},
                {"id": kept["id"], "content": "Replacement body text.", "tags": ["x\u0000y"]},
            )
            for arguments in bad_calls:
                message = await s.error("memory_write", **arguments)
                assert "\n" not in message.strip() and "Traceback" not in message, message
                assert _memory_folder_state(root) == before, arguments  # no file, no temp file, no rewrite
            long_word = "x" * 70  # a derived keyword over 50 characters no longer makes the write fail
            made = await s.ok(
                "memory_write", content=f"# Notes on {long_word}\n\nThe {long_word} flag stays off."
            )
            assert made["created"] and all(len(tag) <= 50 for tag in made["tags"])

    run_async(body)


def test_consolidate_recent_days_must_be_a_finite_number(proj):
    # found by bench/fuzz.py: nan and 1e238 days reached date arithmetic
    for value in ("nan", "1e238", "inf"):
        _one_line_error(_lore(proj, "consolidate", "--recent", value, "--json"), "--recent", "")
    assert _lore(proj, "consolidate", "--recent", "5", "--json").returncode == 0


def test_half_a_surrogate_pair_in_a_python_query_is_searched_not_a_type_error(tmp_path):
    """MCP repairs and HTTP refuses a lone surrogate; through the Python API it
    reached the tokenizer, which raised TypeError."""
    import lore

    with lore.init(tmp_path / "p") as project:  # the default local model
        added = project.add(title="Walrus cache", body="Keep the walrus cache small.")
        assert [h.id for h in project.search("walrus \ud83d cache")] == [added.id]
        assert project.recall("walrus \udfff cache").to_dict()["memories"][0]["id"] == added.id


def _bm25_project(root: Path):
    """A Python API project with no model (BM25 only), a memory in it and a code file."""
    import lore

    lore.init(root).close()
    config = root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "none"'))
    (root / "src").mkdir()
    (root / "src" / "walrus.py").write_text('def walrus_cache():\n    """Keep the walrus cache small."""\n')
    project = lore.open(root)
    project.add(title="Walrus cache", body="Keep the walrus cache small.", tags=["cache"])
    return project


def test_python_api_refuses_wrong_arguments_with_a_usage_error(tmp_path):
    """A library caller's wrong type, None or negative limit is a UsageError that
    says what to give, as the CLI's, never an internal error: before, `search(5)`
    raised AttributeError, `limit="3"` and `recall(None)` TypeError, `add(colour=...)`
    and `open(None)` TypeError, `edit(key, [object()])` AttributeError, and
    `list(limit=0)` / `list(limit=-1)` listed everything."""
    import lore
    from lore.errors import UsageError

    with _bm25_project(tmp_path / "p") as project:
        key = project.list()[0]["id"]
        cases = {
            "the query must be text": lambda: project.search(5),
            "limit must be a whole number": lambda: project.search("walrus", limit="3"),
            "limit must be at least 1": lambda: project.list(limit=0),
            "limit must be at least 1 ": lambda: project.list(limit=-1),
            "limit must be at least 1  ": lambda: project.session_list(limit=-1),
            "limit must be at least 1   ": lambda: project.memory_log(key, limit=0),
            "title and description must be text": lambda: project.recall(None),
            "unknown field colour": lambda: project.add(body="The walrus eats fish.", colour="red"),
            "edits must be a list": lambda: project.edit(key, [object()]),
            "tags must be a name or a list of names": lambda: project.search("walrus", tags=5),
            "languages must be a name or a list of names": lambda: project.code_search("x", languages=3),
            "files must be a name or a list of names": lambda: project.recall("walrus", files=7),
            "since: give a date or a phrase, not int": lambda: project.history("walrus", since=5),
            "give a memory id": lambda: project.show(5),
            "whole numbers": lambda: project.show(key, offset="3"),
            "a project folder is a path": lambda: lore.open(None),
            "a project folder is a path ": lambda: lore.init(None),
            # A switch is True or False: "no" was taken as yes, 0 as no.
            "include_code must be True or False, not 'no'": lambda: project.recall(
                "walrus", include_code="no"
            ),
            "files_only must be True or False, not 1": lambda: project.code_search("walrus", files_only=1),
            "fresh must be True or False, not 'false'": lambda: project.history("walrus", fresh="false"),
        }
        for expected, call in cases.items():
            with pytest.raises(UsageError, match=expected.strip()):
                call()
        assert [m["id"] for m in project.list(limit=1)] == [key]
        assert project.recall("walrus", include_code=False, include_related_work=False).items
        for field, call in {
            "title": lambda: project.add(body="The walrus eats fish.", title=5),
            "body": lambda: project.update(key, body=5),
        }.items():
            with pytest.raises(ValidationError, match=f"field '{field}': must be text, not int"):
                call()
        with pytest.raises(UsageError, match="tags must be a name or a list of names"):
            project.add(body="The walrus eats fish.", tags=5)
    with pytest.raises(ValidationError, match="an agent is named by text"):
        with lore.open(tmp_path / "p", agent=5) as as_five:
            as_five.list()


def test_python_api_takes_one_name_where_it_takes_a_list(tmp_path):
    """`files="src/walrus.py"` is that file (as `tags="cache"` is that tag), not
    one file per letter: before, recall offered files named `s`, `r`, `c`..., and
    `code_search(languages="python")` refused the language 'p', and
    `update_index("src/walrus.py")` re-checked nothing."""
    import datetime

    with _bm25_project(tmp_path / "p") as project:
        project.index_code()
        (tmp_path / "p" / "src" / "walrus.py").write_text("def walrus_feed():\n    pass\n")
        assert project.update_index("src/walrus.py") == {"updated": 1, "deleted": 0, "skipped": []}
        # A Python date or datetime is taken as the CLI takes 2024-01-01.
        assert project.search("walrus", since=datetime.date(2000, 1, 1)) == project.search(
            "walrus", since="2000-01-01"
        )
        a_while_ago = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
        for given in (a_while_ago, "2000"):  # read alike; without git, no commits date the code
            with pytest.raises(ArgumentError, match="^since needs a git repository"):
                project.code_search("walrus", since=given)
        pack = project.recall("walrus cache", files="src/walrus.py").to_dict()
        assert [f["path"] for f in pack["files"]][:1] == ["src/walrus.py"]
        assert all(len(f["path"]) > 1 for f in pack["files"])
        for one in (
            {"languages": "python"},
            {"directories": "src"},
            {"extensions": "py"},
            {"roles": "source"},
        ):
            hits = project.code_search("walrus cache", **one)
            assert [h.file_path for h in hits][:1] == ["src/walrus.py"], one


def test_every_kind_of_lore_error_can_be_caught_from_the_lore_package():
    """A library user catches each kind of failure in lore.errors' table as
    `lore.<Class>` (before, Conflict, PermissionDenied and StorageError were
    only in lore.errors)."""
    import re

    import lore
    from lore import errors

    table = re.findall(r"^(\w+)\s+\w+\s+\d\s+\d{3}$", errors.__doc__ or "", re.M)
    assert len(table) == 7
    for name in table:
        assert getattr(lore, name) is getattr(errors, name) and name in lore.__all__, name


def test_every_public_method_of_the_python_api_says_what_it_does():
    """help(lore.Lore) documents each method and property a library user may call
    (before, open, init, close, stats, status, doctor, gc, restore... had none)."""
    import inspect

    from lore.service import Lore

    undocumented = []
    for name, member in inspect.getmembers(Lore):
        if name.startswith("_"):
            continue
        target = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        doc = inspect.getdoc(target)
        if not doc or doc == inspect.getdoc(object):
            undocumented.append(name)
    assert undocumented == []


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_names_and_ids_with_a_trailing_line_break_are_refused(tmp_path, ending):
    """A pattern's `$` also matches before a final line break: a session id
    "s2\\n" made a folder of that name, and user names, roles, memory ids and
    scopes took the same path."""
    from lore.errors import UsageError
    from lore.interfaces.web.users import add_user
    from lore.memory.model import ID_RE, SCOPE_RE, UUID4_RE
    from lore.sessions.events import SESSION_ID_RE

    for pattern, good in (
        (SESSION_ID_RE, "s2"),
        (ID_RE, "m1"),
        (UUID4_RE, str(uuid.uuid4())),
        (SCOPE_RE, "area:billing"),
    ):
        assert pattern.match(good) and not pattern.match(good + ending), pattern.pattern
    users = tmp_path / "users.toml"
    with pytest.raises(UsageError, match="user name"):
        add_user(users, "ada" + ending)
    with pytest.raises(UsageError, match="database role"):
        add_user(users, "ada", role="lore_ada" + ending)
    assert not users.exists()
    with pytest.raises(ValidationError, match="applies_to"):
        Memory(title="T", body="A body long enough.", applies_to="area:billing" + ending).validate()


@pytest.mark.storage_independent
@pytest.mark.parametrize("invisible", ["\u200b\u200b", "\ufeff", " \u200d ", "\u2060"])
def test_a_title_or_body_of_invisible_characters_is_refused(invisible):
    """A title of zero-width spaces was stored: a memory nobody can see in a list."""
    body = "A body long enough to keep."
    with pytest.raises(ValidationError, match="no visible character"):
        Memory(title=invisible, body=body).validate()
    with pytest.raises(ValidationError, match="at least 10 characters"):
        Memory(title="Title", body=invisible * 12).validate()
    Memory(title=f"Title{invisible}", body=f"{body}{invisible}").validate()  # beside text, kept


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(_JSON)
def test_json_lore_is_handed_reads_as_json_does_when_it_is_whole(value):
    from lore.safe_read import json_loads

    text = json.dumps(value)
    assert json_loads(text) == json.loads(text)


def test_json_lore_is_handed_is_refused_past_its_depth_and_freed_of_half_surrogates():
    """A transcript line 1,000 deep raised RecursionError, which the reader did
    not catch: the session's recording stopped at that line for good."""
    from lore.safe_read import MAX_JSON_DEPTH, json_loads

    assert json_loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    for depth in (MAX_JSON_DEPTH + 1, 100_000):
        with pytest.raises(ValueError, match="nested"):
            json_loads("[" * depth + "]" * depth)
    assert json_loads('{"a\\udc00": ["x \\ud83d", "\\ud83d\\ude00", {"b": "\\udfff"}]}') == {
        "a\ufffd": ["x \ufffd", "\U0001f600", {"b": "\ufffd"}]
    }


@pytest.mark.storage_independent
def test_a_read_only_projects_temporary_index_is_never_in_a_folder_another_user_made(tmp_path, monkeypatch):
    """The temporary index of a read-only project had a guessable path in the
    temp folder, created with exist_ok and never checked: another user who
    made the folder first read the code written into it, or served their own
    index as search results. Only a private folder of this user's is used."""
    import stat
    import tempfile

    from lore.storage import spare_index

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = Path("/projects/shop")
    first = spare_index(root)
    assert first.parent.parent == tmp_path / f"lore-{os.getuid()}"
    assert stat.S_IMODE(first.parent.stat().st_mode) == 0o700 and spare_index(root) == first
    first.write_bytes(b"an index of ours")
    assert spare_index(root) == first and first.read_bytes() == b"an index of ours"
    # A folder anyone may write (planted before us, with a ready index in it): not used.
    os.chmod(first.parent, 0o777)
    planted = spare_index(root)
    assert planted.parent != first.parent and not str(planted).startswith(str(first.parent))
    assert stat.S_IMODE(planted.parent.stat().st_mode) == 0o700 and not planted.exists()
    os.chmod(first.parent, 0o700)
    # Ours and readable by others, never writable (a umask of 022): closed, and used.
    # (Falling back made a new folder holding a copy of the code at every run, never removed.)
    os.chmod(first.parent.parent, 0o755)
    assert spare_index(root) == first and stat.S_IMODE(first.parent.parent.stat().st_mode) == 0o700
    # A folder of its own for one run (ours is open to writers) is gone when the run ends.
    os.chmod(first.parent.parent, 0o777)
    script = (
        "import sys, tempfile; from pathlib import Path; tempfile.tempdir = sys.argv[1]; "
        "from lore.storage import spare_index; print(spare_index(Path('/projects/shop')).parent)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    )
    once = Path(ran.stdout.strip())
    assert once.parent == tmp_path and once != first.parent and not once.exists()
    os.chmod(first.parent.parent, 0o700)
    # A link where the folder should be: not followed.
    os.rename(first.parent, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", first.parent)
    assert spare_index(root).parent != first.parent


def test_a_busy_index_is_a_lore_error_and_never_rebuilt(project):
    """Another process writing the index: `reindex(force=True)` (`lore index
    --force`) raises StorageError naming the index busy, sqlite3's error kept as
    its cause (the README promises the Python API raises LoreError subclasses),
    and does not take the lock for damage: the file is not rebuilt under its
    writer. doctor says the index was not checked; nothing is lost."""
    import sqlite3

    from lore.errors import StorageError

    if type(project.store).__name__ != "SQLiteStore":
        pytest.skip("another process's write lock on a SQLite index")
    deploys = project.add(title="Deploys", body="Releases go to the staging cluster first.")
    project.recall("staging cluster")  # the index is fresh: reads below need no write
    project.lifecycle.maybe_tick()
    identity = project.store.identity()
    project.store.db.execute("PRAGMA busy_timeout = 200")  # not the default 30 s, for the test's sake
    other = sqlite3.connect(project.project.lore_dir / "index.db")
    other.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        # Reads are answered: their bookkeeping (access counts) waits for a free index.
        assert project.show(deploys.id).title == "Deploys"
        assert [item.key for item in project.recall("staging cluster").items if item.kind == "memory"] == [
            deploys.id
        ]
        with pytest.raises(StorageError, match="busy") as caught:
            project.reindex(force=True)
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert [p.message for p in project.doctor() if "index" in p.message and "check" in p.message] == [
            "index not checked: the index is busy (database is locked); another Lore process holds it, "
            "try again"
        ]
        project.add(title="Pets", body="Dogs are welcome on Fridays.")  # the file now, the index later
        # doctor, with a file the index has not read yet: says so, and goes on.
        assert any("memory files not read again" in p.message for p in project.doctor())
        other.execute("INSERT INTO meta(key, value) VALUES ('written by', 'the other process')")
        other.commit()
    finally:
        other.close()
    assert project.store.identity() == identity and not project.notices  # not rebuilt
    assert project.store.get_meta("written by") == "the other process"
    assert [hit.title for hit in project.search("staging cluster")] == ["Deploys"]
    assert [hit.title for hit in project.search("dogs fridays")] == ["Pets"]


def test_lores_own_files_are_no_memories_to_remove_or_show(project):
    """`remove('.lore/config.toml')` trashed the configuration (and index.db,
    .gitignore, a session's metadata), which `restore` could not bring back:
    any file under .lore/ was taken for a memory."""
    from lore.errors import UsageError

    kept = project.add(title="Keep", body="A memory worth keeping.")
    project.start_session("s1")
    own = [".lore/config.toml", ".lore/.gitignore", ".lore/index.db", ".lore/sessions/s1/metadata.json"]
    own = [rel for rel in own if (project.project.root / rel).exists()]
    assert ".lore/config.toml" in own
    for rel in own:
        before = (project.project.root / rel).read_bytes()
        for call in (project.remove, project.show):
            with pytest.raises(UsageError, match="not a memory file"):
                call(rel)
        assert (project.project.root / rel).read_bytes() == before
    # A broken memory file is still one (to fix or remove), and so is a good one.
    (project.project.memory_dir / "broken.md").write_text("---\nid: [\n---\nbody\n")
    assert project.remove(".lore/memory/broken.md").original == ".lore/memory/broken.md"
    assert project.remove(kept.path).original == kept.path


def test_the_python_api_raises_one_line_lore_errors_for_hostile_arguments(project):
    """The README's contract: a library caller's wrong type or value is a
    LoreError (most a UsageError naming the call) with a one-line message,
    cut, its secrets redacted; never TypeError, OverflowError, IndexError..."""
    from lore.errors import LoreError, UsageError
    from lore.memory.edits import Edit

    memory = project.add(title="Keep", body="A memory worth keeping.")
    session = project.start_session().id
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    calls = {
        "graph depth None": lambda: project.graph(memory.id, depth=None),
        "context depth text": lambda: project.context(memory.id, depth="two"),
        "recall budget inf": lambda: project.recall("retry", budget=float("inf")),
        "consolidate days text": lambda: project.consolidate(recent_days="7"),
        "browse offset None": lambda: project.browse(offset=None),
        "session limit -1": lambda: project.session_context(session, limit_tokens=-1),
        "history list": lambda: project.history(["a"]),
        "search fusion list": lambda: project.search("a", fusion=["x"]),
        "list task huge": lambda: project.list(task=10**30),
        "search agent dict": lambda: project.search("x", agent={}),
        "edit None": lambda: project.edit(memory.id, None),
        "edit text int": lambda: project.edit(memory.id, [Edit("append", text=5)]),
        "move None": lambda: project.move(memory.id, None),
        "export None": lambda: project.export_index(None),
        "job kind None": lambda: project.start_index_job(None),
        "key with a line break": lambda: project.show("line1\nline2"),
        "limit of 2 MB": lambda: project.search("x", limit="x" * 2_000_000),
        "a token as a key": lambda: project.show(token),
        "import from nowhere": lambda: project.import_notes(""),
    }
    for what, call in calls.items():
        with pytest.raises(LoreError) as caught:
            call()
        message = str(caught.value)
        assert "\n" not in message and len(message) <= 1000 and token not in message, (what, message)
    with pytest.raises(UsageError, match=r"^graph\(\): "):
        project.graph(memory.id, depth=None)
    # One name where a list is expected is that name, not its letters.
    tagged = project.add(title="One tag", body="Tagged with one name.", tags="urgent", labels="abc")
    assert project.load(tagged.path).tags == ["urgent"] and project.load(tagged.path).labels == ["abc"]
    preview = project.bulk("retag", ids=tagged.id, add_tags="later")  # one id, one tag: not their letters
    assert [row.id for row in preview.items] == [tagged.id]
    with pytest.raises(UsageError, match="at most 20000"):
        project.update_index(["a.py"] * 20_001)


def test_a_closed_lore_says_so_and_writes_nothing(tmp_path):
    """A Lore used after `close()` (or after its `with` block) opened its index
    again, silently, and held that connection open for good."""
    import lore
    from lore.errors import UsageError

    root = tmp_path / "p"
    lore.init(root).close()
    with lore.open(root) as project:
        project.add(title="Deploys", body="Releases go to the staging cluster first.")
    before = sorted(p.relative_to(root) for p in (root / ".lore").rglob("*.md"))
    for call in (
        lambda: project.add(title="Pets", body="Dogs are welcome on Fridays."),
        lambda: project.search("staging"),
        lambda: project.recall("staging cluster"),
        project.list,
    ):
        with pytest.raises(UsageError, match="is closed; open the project again"):
            call()
    assert sorted(p.relative_to(root) for p in (root / ".lore").rglob("*.md")) == before
    assert project._store is None
    with lore.open(root) as again:
        assert [h.title for h in again.search("staging")] == ["Deploys"]


def test_a_memory_file_named_with_a_secret_is_not_indexed_and_said_redacted(tmp_path):
    """A hand-written .lore/memory/note-<token>.md put the token into the
    index's file paths, listings and search results in clear."""
    import lore

    token = "ghp_" + "OhbVrpoiVgRV5IfLBcbfnoGMbJmTPSIAoCLr"
    root = tmp_path / "p"
    lore.init(root).close()
    (root / f".lore/memory/note-{token}.md").write_text(GOOD.replace("id: m1", "id: m-secret-name"))
    with lore.open(root) as project:
        problems = [f"{p.where} {p.message}" for p in project.doctor()]
        assert [p for p in problems if "looks like a secret" in p], problems
        assert not [p for p in problems if token[:10] in p], problems
        assert [r for r in project.list() if r["id"] == "m-secret-name"] == []
        assert not [p for p in project.store.paths("memory") if token[:10] in p]
    if not ON_POSTGRES:  # the SQLite file, every page of it
        assert token[:10].encode() not in (root / ".lore/index.db").read_bytes()


def test_every_text_field_of_a_hand_written_memory_is_redacted_in_the_index(tmp_path):
    """`agent:` was never redacted, and a custom field's password (its key
    makes it one) reached the index in clear."""
    import lore

    token = "sk-ant-api03-" + "Xq7Lm2Np9Rt4Vw6Yz8Bc1Df3Gh5Jk0Mn2Pq4Rs6Tu8Vw0Xy2Za4Bc6De8Fg0Hi2Jk"
    root = tmp_path / "p"
    lore.init(root).close()
    (root / ".lore/memory/hand.md").write_text(
        f"---\nid: m-hand\nsubject: Deploy notes\noccurred_at: 2024-01-01\nagent: ci-{token}\n"
        "smtp_password: Tr0ub4dorMnTvnR\n---\n\nDeploys run from CI.\n"
    )
    with lore.open(root) as project:
        assert [r["id"] for r in project.list()] == ["m-hand"]
        (record,) = project.store.memories()
        assert record.id == "m-hand" and token[:20] not in (record.agent or "")
    if not ON_POSTGRES:  # the SQLite file, every page of it
        index = (root / ".lore/index.db").read_bytes()
        assert token[:20].encode() not in index and b"Tr0ub4dorMnTvnR" not in index


def test_a_thousand_memories_of_one_name_on_one_day_each_get_a_file(tmp_path):
    """Session memories are named by their day and first line: once 999 of
    one day began "Done.", every next one failed with "no free file name",
    after probing all 999 names."""
    from lore import atomic

    source = tmp_path / "new.md"
    source.write_text("Done.\n")
    folder = tmp_path / "session"
    folder.mkdir()
    made = {atomic.link_free(source, folder, "2026-11-30-done.md") for _ in range(1200)}
    assert len(made) == 1200 and all(
        p.parent == folder and p.name.startswith("2026-11-30-done") for p in made
    )
