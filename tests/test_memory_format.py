"""The memory file format: seed schemas, canonical form, validation, names, secrets."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from lore.errors import ValidationError
from lore.memory import markdown
from lore.memory.model import Memory, content_hash, from_frontmatter, visible_length
from lore.secrets import redact

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

SEEDS = sorted((FIXTURES / "seeds").glob("*.md"))


@pytest.mark.parametrize("path", SEEDS, ids=[p.name for p in SEEDS])
def test_every_seed_example_parses_and_round_trips(path):
    memory, body_line = markdown.parse(path.read_bytes(), path.name)
    memory.validate()
    assert memory.title and memory.tags and memory.occurred_at.endswith("Z")
    # The body starts where parse says it does.
    lines = path.read_text().splitlines()
    assert lines[body_line - 1].strip() == memory.body.splitlines()[0].strip()
    again, _ = markdown.parse(markdown.render(memory).encode(), path.name)
    for field in (
        "id",
        "title",
        "type",
        "sector",
        "tags",
        "applies_to",
        "occurred_at",
        "body",
        "agent",
        "task",
        "files",
        "labels",
        "extra",
        "confidence",
    ):
        assert getattr(again, field) == getattr(memory, field), field


def test_seed_000_task_memory_maps_to_canonical_fields():
    memory, _ = markdown.parse((FIXTURES / "seeds/000-task-memory.md").read_bytes(), "x.md")
    assert memory.task == "jat-abc" and memory.agent == "FairBay" and memory.project == "chimaro"
    assert memory.type == "summary" and memory.task_type == "bug"  # 000's type is the task's
    assert memory.files == ["src/auth/refresh.ts", "src/config.ts"]
    assert memory.labels == ["security", "backend"] and memory.priority == 1 and memory.risk == "medium"
    assert memory.title == "Increased token refresh timeout from 5s to 15s"
    assert memory.occurred_at == "2026-02-10T15:30:00Z"


def test_seed_001_sector_in_type_and_unknown_fields_are_preserved():
    memory, _ = markdown.parse((FIXTURES / "seeds/001-chati-memory.md").read_bytes(), "x.md")
    assert memory.sector == "procedural" and memory.type == "pattern"
    assert memory.title == "Pattern: JWT Authentication in Next.js Projects"
    assert memory.confidence == pytest.approx(0.92)
    assert memory.extra == {"tier": "hot", "access_count": 7, "last_accessed": "2026-02-12T16:30:00Z"}
    text = markdown.render(memory)
    assert "access_count: 7" in text and "tier: hot" in text


def test_canonical_form_uses_002_names():
    memory, _ = markdown.parse((FIXTURES / "seeds/004-jarvis-memory.md").read_bytes(), "x.md")
    front = markdown.render(memory).split("---")[1]
    keys = [line.split(":")[0] for line in front.splitlines() if line and not line.startswith(("-", " "))]
    assert keys[:4] == ["id", "subject", "type", "sector"]
    assert "keywords" in keys and "occurred_at" in keys and "createdAt" not in keys and "tags" not in keys
    assert f"content_hash: {content_hash(memory.body)}" in front
    assert "occurred_at: 2024-01-01T00:00:00Z" in front  # written plain, like the seeds


def test_content_hash_is_16_hex_of_sha256_of_body():
    assert re.fullmatch(r"[0-9a-f]{16}", content_hash("hello world"))
    assert content_hash("hello world\n") == content_hash("hello world")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"id": "not a uuid!"}, "id"),
        ({"title": ""}, "subject"),
        ({"title": "x" * 201}, "subject"),
        ({"tags": []}, "keywords"),
        ({"tags": [f"k{i}" for i in range(21)]}, "keywords"),
        ({"tags": ["x" * 51]}, "keywords"),
        ({"applies_to": "module:auth"}, "applies_to"),
        ({"body": "too short"}, "body"),
        ({"type": "bug"}, "type"),
        ({"confidence": 1.5}, "confidence"),
    ],
)
def test_strict_validation_names_the_field(change, field):
    values = {"title": "A title", "body": "A body that is long enough.", "tags": ["a"], **change}
    with pytest.raises(ValidationError) as err:
        Memory(**values).validate(strict=True)
    assert err.value.field == field


def test_new_ids_are_uuid4_and_validation_demands_it():
    memory = Memory(title="t", body="long enough body", tags=["a"])
    assert uuid.UUID(memory.id).version == 4
    with pytest.raises(ValidationError):
        Memory(
            title="t", body="long enough body", tags=["a"], id="6ba7b810-9dad-11d1-80b4-00c04fd430c8"
        ).validate(strict=True)


@pytest.mark.parametrize(
    "raw, message, line",
    [
        (b"no frontmatter here\n", "no YAML frontmatter", 1),
        (b"---\nsubject: x\n", "not closed", 1),
        (b"---\nsubject: [unclosed\noccurred_at: 2025-01-01\n---\nbody text here\n", "malformed YAML", None),
        (b"---\n- a\n- b\n---\nbody text here\n", "mapping", 2),
        (b"---\nsubject: x\n---\nbody text here\n", "occurred_at", None),
        (b"---\nsubject: x\noccurred_at: yesterday\n---\nbody text here\n", "ISO 8601", 3),
        (
            b"---\nsubject: x\nkeywords: {a: 1}\noccurred_at: 2025-01-01\n---\nbody text here\n",
            "list of strings",
            3,
        ),
        (b"---\nsubject: x\noccurred_at: 2025-01-01\n---\nbody \xff\xfe here\n", "UTF-8", 5),
        (b"\x00\x01binary", "binary", None),
    ],
)
def test_bad_files_raise_one_line_errors_with_file_and_line(raw, message, line):
    with pytest.raises(ValidationError) as err:
        markdown.parse(raw, ".lore/memory/bad.md")
    text = str(err.value)
    assert message in text and "\n" not in text and text.startswith(".lore/memory/bad.md")
    if line:
        assert err.value.line == line


@pytest.mark.parametrize(
    "title, slug",
    [
        ("Fix OAuth Timeout", "fix-oauth-timeout"),
        ("  --Hello,   World!!  ", "hello-world"),
        ("Add user authentication page", "add-user-authentication-page"),
        ("Refactor payment processing", "refactor-payment-processing"),
        ("Café crème brûlée", "cafe-creme-brulee"),
        ("a" * 60, "a" * 50),
        # 50-char cut falls inside "boundary": break at the previous hyphen.
        (
            "this title is long enough that it must break at a word boundary",
            "this-title-is-long-enough-that-it-must-break-at-a",
        ),
        (
            "exactly-fifty-characters-long-slug-for-testing-ok",
            "exactly-fifty-characters-long-slug-for-testing-ok",
        ),
        ("!!!", ""),
    ],
)
def test_slug_rules_of_seed_000(title, slug):
    assert markdown.slugify(title) == slug
    assert len(markdown.slugify(title)) <= 50


def test_file_names_follow_seed_000():
    with_task = Memory(
        title="Fix OAuth timeout",
        body="x" * 20,
        tags=["a"],
        task="jat-abc",
        occurred_at="2026-02-10T15:30:00Z",
    )
    assert markdown.file_name(with_task) == "2026-02-10-jat-abc-fix-oauth-timeout.md"
    without = Memory(title="Fix OAuth timeout", body="x" * 20, tags=["a"], occurred_at="2026-02-10T15:30:00Z")
    assert markdown.file_name(without) == "2026-02-10-fix-oauth-timeout.md"
    assert (
        markdown.file_name(Memory(title="???", body="x" * 20, occurred_at="2026-02-10T00:00:00Z"))
        == "2026-02-10-memory.md"
    )


def test_write_new_never_overwrites(tmp_path):
    first = markdown.write_new(tmp_path, "a.md", "one")
    second = markdown.write_new(tmp_path, "a.md", "two")
    assert first.name == "a.md" and second.name == "a-2.md"
    assert first.read_text() == "one" and second.read_text() == "two"
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


@pytest.mark.parametrize(
    "secret, kind",
    [
        ("sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4", "openai-key"),
        ("sk-ant-api03-" + "x" * 30, "anthropic-key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("ghp_" + "a" * 36, "github-token"),
        ("AIza" + "B" * 35, "google-api-key"),
        ("xoxb-1234567890-abcdefghij", "slack-token"),
        ("sk_live_" + "a1" * 12, "stripe-key"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----", "private-key"),
        ("Authorization: Bearer abcdefghijklmnop1234.xyz", "bearer-token"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
        ),
    ],
)
def test_secrets_are_redacted(secret, kind):
    clean, found = redact(f"before {secret} after")
    assert secret not in clean and f"[REDACTED:{kind}]" in clean
    assert found[kind] == 1 and clean.startswith("before ") and clean.endswith(" after")


def test_url_passwords_keep_user_and_host_and_assignments_keep_key():
    clean, found = redact("db: postgres://admin:s3cretPass@db.example.com:5432/app")
    assert clean == "db: postgres://admin:[REDACTED:url-password]@db.example.com:5432/app"
    clean, _ = redact('API_KEY="a8f9d7s6f5g4h3j2k1"')
    assert clean == 'API_KEY="[REDACTED:assigned-secret]"'


def test_ordinary_prose_is_not_redacted():
    text = (
        "The password reset flow sends a token by email. Use Bearer auth for the API; "
        "the secret is stored in Vault. See https://example.com/docs and task-1234."
    )
    assert redact(text) == (text, {})


def test_from_frontmatter_first_alias_wins_and_type_defaults():
    memory = from_frontmatter(
        {"subject": "S", "title": "T", "createdAt": "2024-01-01", "tags": "a, b"}, "body text long enough"
    )
    assert memory.title == "S" and memory.tags == ["a", "b"] and memory.type == "fact"
    assert memory.occurred_at == "2024-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("line", "named", "value"),
    [
        ("created_at: 1700000000", "created_at", "'1700000000'"),  # an epoch number, not text
        ("date: 2023/05/01", "date", "'2023/05/01'"),
        ("title: [a, b]", "title", None),
    ],
)
def test_an_error_in_an_aliased_field_names_the_field_the_file_wrote(line, named, value):
    """A hand-written file says `created_at:` or `date:` or `title:`; the error
    names that field, its line and the value, not the canonical name the file
    never wrote (`occurred_at`, `subject`)."""
    date = "" if line.startswith(("created_at", "date")) else "occurred_at: 2024-01-01\n"
    text = f"---\nid: mem-1\ntype: fact\n{date}{line}\n---\nThe body of a hand-written memory.\n"
    with pytest.raises(ValidationError) as caught:
        markdown.parse(text.encode(), ".lore/memory/hand.md")
    message = str(caught.value)
    at_line = 5 if date else 4
    assert f"hand.md:{at_line}: field '{named}': {value or ''}" in message, message


@given(
    st.text(
        alphabet=st.sampled_from(["a", " ", "\u200b", "\ufeff", "\u00ad", "\u2060", "界", "\n", "\u0301"])
    )
    | st.text()
)
def test_visible_length_leaves_out_format_characters_and_the_spaces_at_either_end(text):
    import unicodedata

    assert visible_length(text) == len("".join(c for c in text if unicodedata.category(c) != "Cf").strip())


def test_a_comma_separates_keywords_in_a_file_and_in_a_write(tmp_path):
    """A keyword holding a comma ("a,b", through the JSON API or MCP) was stored
    whole; the web form then saved it back as two and `?tag=a,b` found nothing."""
    import lore

    raw = (
        b"---\nid: m1\nsubject: A memory\noccurred_at: 2024-01-01\nkeywords: ['x,y', 'Y', z]\n---\n\nBody.\n"
    )
    memory, _ = markdown.parse(raw, "x.md")
    assert memory.tags == ["x", "y", "z"]
    # A file whose keywords, split, would pass the limit keeps them as written (valid before).
    many = ", ".join(f"'k{i},x{i}'" for i in range(12))
    many_raw = raw.replace(b"['x,y', 'Y', z]", f"[{many}]".encode()).replace(b"Body.", b"A body long enough.")
    memory, _ = markdown.parse(many_raw, "x.md")
    memory.validate()
    assert memory.tags[:2] == ["k0,x0", "k1,x1"]
    with lore.init(tmp_path / "p") as project:
        added = project.add(title="Comma keywords", body="Tags with commas.", tags=["a,b", " c "])
        assert project.load(added.path).tags == ["a", "b", "c"]
        assert [h.title for h in project.search("commas", tags=["b"])] == ["Comma keywords"]
        text = (tmp_path / "p" / added.path).read_text()
    assert "- a\n- b\n- c\n" in text


def test_a_summary_stops_before_code_and_says_it_was_cut():
    """A Decision section's code block was flattened into the summary, one line
    of stray backticks, with no sign the body went on."""
    from lore.memory.model import summarize

    body = (
        "## Context\nColours break.\n\n## Decision\nUse `less -R` through `PAGER`, else write directly.\n\n"
        "```python\ndef _pipepager(generator, cmd, color):\n    c = subprocess.Popen(cmd)\n```\n\n## Consequences\nFine."
    )
    assert summarize(body) == "Use `less -R` through `PAGER`, else write directly. …"
    assert summarize("First line of prose.\n```\ncode()\n```\n") == "First line of prose. …"
    assert summarize("```\ncode()\n```\nThe prose after it.") == "The prose after it."
