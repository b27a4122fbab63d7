"""The memory model: one canonical shape for every seed schema.

Lore reads the frontmatter of all four seed formats (000 task memories, 001
Chati memories, 002 memory format, 004 Jarvis memories) into one
:class:`Memory` and writes one canonical form, which is 002's field names plus
the optional fields of the others. The mapping (see docs/memory-format.md):

=================  ==================================================
canonical          also read from
=================  ==================================================
``subject``        ``title``; else the body's first ``# H1``; else first line
``keywords``       ``tags`` (merged, order kept, duplicates dropped)
``occurred_at``    ``created_at`` (001), ``createdAt`` (004), ``completed`` (000), ``date``
``type``           000's task types (bug, feature, ...) become ``summary`` with
                   ``task_type``; 001's sector names in ``type`` set ``sector``
``source``         ``source_work_item_id`` (003)
=================  ==================================================

Anything else in the frontmatter is kept in :attr:`Memory.extra` and written
back unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import uuid
from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import field
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeAlias

from lore.errors import ValidationError
from lore.filenames import in_lore_folder
from lore.memory.values import (
    check_int,
    check_line,
    check_plain,
    check_text,
    clip,
    fold_line,
    quoted,
    safe_line,
)
from lore.records import datarecord

__all__ = ["Memory", "derive_keywords", "derive_title", "from_frontmatter", "normalized", "safe_line"]

MEMORY_TYPES = (
    "decision",
    "pattern",
    "convention",
    "lesson",
    "architecture",
    "warning",
    "preference",
    "gotcha",
    "fact",
    "summary",
)
# A frontmatter mapping as YAML parsed it: keys are usually text, but YAML also
# allows numbers and booleans (read as text by :func:`from_frontmatter`); values
# are any plain YAML data.
Frontmatter: TypeAlias = dict[Hashable, Any]

SECTORS = ("episodic", "semantic", "procedural", "reflective")
TASK_TYPES = ("bug", "feature", "task", "chore", "epic", "fix", "refactor")

# What kind of knowledge each type is (001's cognitive sectors).
SECTOR_OF_TYPE = {
    "decision": "episodic",
    "summary": "episodic",
    "pattern": "procedural",
    "convention": "procedural",
    "preference": "procedural",
    "lesson": "reflective",
    "warning": "reflective",
    "gotcha": "reflective",
    "architecture": "semantic",
    "fact": "semantic",
}
TYPE_OF_SECTOR = {"episodic": "summary", "semantic": "fact", "procedural": "pattern", "reflective": "lesson"}

SCOPE_RE = re.compile(r"^(global|file:.+|area:.+)\Z")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")
UUID4_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")

# Fields Lore.update may set besides body, title and type.
UPDATABLE = frozenset(
    {
        "tags",
        "applies_to",
        "confidence",
        "files",
        "labels",
        "agent",
        "project",
        "priority",
        "risk",
        "task_type",
    }
)

MAX_SUBJECT = 200
MAX_KEYWORDS = 20
MAX_KEYWORD_LEN = 50
MIN_BODY = 10

# Canonical frontmatter order; fields not listed go after, in their own order.
CANONICAL_ORDER = (
    "id",
    "subject",
    "type",
    "sector",
    "keywords",
    "applies_to",
    "occurred_at",
    "updated_at",
    "content_hash",
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
)
_ALIASES = {
    "title": "subject",
    "created_at": "occurred_at",
    "createdAt": "occurred_at",
    "completed": "occurred_at",
    "date": "occurred_at",
    "source_work_item_id": "source",
}
# Names an extra field can't have: Lore reads them as its own fields.
RESERVED_FIELDS = frozenset({*CANONICAL_ORDER, *_ALIASES, "tags", "keywords"})
# Optional one-line fields; empty means absent (they are not written).
_OPTIONAL_LINES = ("agent", "task", "project", "risk", "task_type", "source")


def visible_length(text: str) -> int:
    """The length of `text` without its format characters (zero-width spaces and
    joiners, byte-order marks) and without the spaces at either end."""
    import unicodedata

    # Each distinct character is looked up once (a 5 MB body took 0.8 s char by char).
    hidden = {ord(c): None for c in set(text) if not c.isascii() and unicodedata.category(c) == "Cf"}
    return len((text.translate(hidden) if hidden else text).strip())


def project_relative(path: str) -> bool:
    """Is `path` written relative to a project root and inside it (no leading
    ``/``, ``\\`` or drive, no ``..`` that climbs out)?"""
    import posixpath

    text = path.replace("\\", "/")
    if not text or text.startswith("/") or re.match(r"[A-Za-z]:", text):
        return False
    normal = posixpath.normpath(text)
    return normal != ".." and not normal.startswith("../")


def content_hash(body: str) -> str:
    """First 16 hex digits of the SHA-256 of the (stripped) body, as 002 defines."""
    return hashlib.sha256(body.strip().encode("utf-8")).hexdigest()[:16]


def new_id() -> str:
    return str(uuid.uuid4())


def now_iso() -> str:
    return format_time(datetime.now(UTC).replace(microsecond=0))


def format_time(value: datetime) -> str:
    """UTC ISO 8601 with a trailing Z: seconds, or milliseconds when there
    are any (finer digits are dropped, so formatting twice gives the same text)."""
    value = value.astimezone(UTC)
    value = value.replace(microsecond=value.microsecond // 1000 * 1000)
    spec = "milliseconds" if value.microsecond else "seconds"
    return value.isoformat(timespec=spec).replace("+00:00", "Z")


def parse_time(value: object, *, field_name: str = "occurred_at") -> str:
    """Normalise an ISO 8601 string (or YAML-parsed date/datetime) to UTC ``...Z``.

    Naive times are taken as UTC, a bare date as midnight UTC.
    """
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        text = value.strip()
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValidationError(
                f"{quoted(value)} is not an ISO 8601 time; use e.g. 2026-02-10T15:30:00Z", field=field_name
            ) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
    else:
        raise ValidationError(
            f"{quoted(value)} is not an ISO 8601 time; use e.g. 2026-02-10T15:30:00Z", field=field_name
        )
    try:
        return format_time(dt)
    except (OverflowError, ValueError):  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise ValidationError(
            f"{quoted(value)} is outside years 0001-9999 once converted to UTC; give a time in that range",
            field=field_name,
        ) from None


# How far ahead a time a person gives may be: clocks of machines (and their
# zones) disagree a little; a memory from next year is a typing mistake.
FUTURE_SLACK = timedelta(days=1)


def ahead(stored: str, now: datetime) -> bool:
    """Is `stored` (a UTC time as :func:`parse_time` gives it) more than
    :data:`FUTURE_SLACK` after `now`? A clock gone wrong: what it dates would
    never grow old, so `lore add`, captures and live session events refuse it."""
    return datetime.fromisoformat(stored.replace("Z", "+00:00")) > now + FUTURE_SLACK


def parse_given_time(value: object, *, field_name: str = "occurred_at", now: datetime | None = None) -> str:
    """A time a person gives (``lore add --occurred-at``, the Python and HTTP
    APIs) as stored: UTC ``...Z``. Without an offset it is the user's local
    time, and a bare date that local day's midnight: the rule ``--since`` and
    ``--until`` follow too (docs/cli.md, "Dates and times"). Files keep UTC
    (:func:`parse_time`), whoever reads them.

    Raises:
        ValidationError: blank, not ISO 8601, or more than a day in the future.
    """
    if isinstance(value, str) and not value.strip():
        raise ValidationError(
            "it is empty; give an ISO 8601 time (2026-02-10T15:30) or leave it out", field=field_name
        )
    if isinstance(value, str):
        try:  # naive, it is read in the local zone below; anything else: parse_time's message
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            pass
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if isinstance(value, datetime) and value.tzinfo is None:
        try:
            value = value.astimezone()  # a naive datetime is local time
        except (OverflowError, ValueError):
            pass  # at the edge of the calendar: parse_time says so
    stored = parse_time(value, field_name=field_name)
    if ahead(stored, now or datetime.now(UTC)):
        raise ValidationError(
            f"{quoted(stored)} is in the future; give when it happened (at most a day ahead)",
            field=field_name,
        )
    return stored


@datarecord
class Memory:
    """One memory, in canonical form. ``path`` is relative to the project root."""

    title: str
    body: str
    type: str = "fact"
    tags: list[str] = field(default_factory=list)
    applies_to: str = "global"
    occurred_at: str = field(default_factory=now_iso)
    id: str = field(default_factory=new_id)
    sector: str | None = None
    updated_at: str | None = None
    agent: str | None = None
    task: str | None = None
    project: str | None = None
    files: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    priority: int | None = None
    risk: str | None = None
    task_type: str | None = None
    confidence: float = 1.0
    source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    visibility: str = "shared"  # shared (memory/) or private (local/<agent>/)
    storage: str = "durable"  # durable, or session (local/session/)
    declared_hash: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.sector is None:
            self.sector = SECTOR_OF_TYPE.get(self.type, "semantic")

    @property
    def content_hash(self) -> str:
        return content_hash(self.body)

    @property
    def summary(self) -> str:
        """A one-paragraph summary: the Summary section, else the first paragraph."""
        return summarize(self.body)

    def frontmatter(self) -> dict[str, Any]:
        """Canonical frontmatter, in canonical order, extras last."""
        data = {
            "id": self.id,
            "subject": self.title,
            "type": self.type,
            "sector": self.sector,
            "keywords": list(self.tags),
            "applies_to": self.applies_to,
            "occurred_at": self.occurred_at,
            "updated_at": self.updated_at,
            "content_hash": self.content_hash,
            "agent": self.agent,
            "task": self.task,
            "project": self.project,
            "files": list(self.files),
            "labels": list(self.labels),
            "priority": self.priority,
            "risk": self.risk,
            "task_type": self.task_type,
            "confidence": None if self.confidence == 1.0 else self.confidence,
            "source": self.source,
        }
        out = {k: v for k, v in data.items() if v not in (None, [], "")}
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def validate(self, *, strict: bool = False) -> None:
        """Check 002's rules, and that every value can be written and read
        back exactly; raises :class:`ValidationError` naming the field.

        ``strict`` (memories Lore creates) demands a UUID v4 id and at least
        one keyword. Files written by hand or by other tools may use ids like
        001's ``mem-2026-02-12-001`` and may lack keywords; `lore doctor`
        reports those as warnings instead.
        """
        path = self.path
        self._check_values()
        if strict and not UUID4_RE.fullmatch(self.id):
            raise ValidationError(
                f"{quoted(self.id)} is not a UUID v4; omit it to have one generated", field="id", path=path
            )
        if not ID_RE.fullmatch(self.id):
            raise ValidationError(
                f"{quoted(self.id)} is not a valid id (letters, digits, . _ : -)", field="id", path=path
            )
        if not 1 <= len(self.title) <= MAX_SUBJECT:
            raise ValidationError(
                f"must be 1-{MAX_SUBJECT} characters (has {len(self.title)})", field="subject", path=path
            )
        if not visible_length(self.title):
            raise ValidationError(
                "has no visible character (only spaces or zero-width ones); give a title",
                field="subject",
                path=path,
            )
        if self.type not in MEMORY_TYPES:
            raise ValidationError(
                f"unknown type {quoted(self.type)}; use one of: {', '.join(MEMORY_TYPES)}",
                field="type",
                path=path,
            )
        if self.sector not in SECTORS:
            raise ValidationError(
                f"unknown sector {quoted(self.sector)}; use one of: {', '.join(SECTORS)}",
                field="sector",
                path=path,
            )
        if not (1 if strict else 0) <= len(self.tags) <= MAX_KEYWORDS:
            raise ValidationError(
                f"needs 1-{MAX_KEYWORDS} keywords (has {len(self.tags)})", field="keywords", path=path
            )
        for tag in self.tags:
            if not 1 <= len(tag) <= MAX_KEYWORD_LEN:
                raise ValidationError(
                    f"keyword {quoted(tag)} must be 1-{MAX_KEYWORD_LEN} characters",
                    field="keywords",
                    path=path,
                )
        if not SCOPE_RE.fullmatch(self.applies_to):
            raise ValidationError(
                f"{quoted(self.applies_to)} must be global, file:<path> or area:<name>",
                field="applies_to",
                path=path,
            )
        if strict:
            self.check_project_paths()
        if not 0.0 <= self.confidence <= 1.0:
            raise ValidationError("must be between 0 and 1", field="confidence", path=path)
        if visible_length(self.body) < MIN_BODY:
            raise ValidationError(
                f"body must be at least {MIN_BODY} characters; say what to remember in a sentence",
                field="body",
                path=path,
            )

    def check_project_paths(self) -> None:
        """Paths a memory Lore writes (or an edit sets) points at are the
        project's: relative to its root and staying inside it (the file is
        committed and shared; an absolute or escaping path names something on
        one machine only)."""
        scoped = [self.applies_to[5:]] if self.applies_to.startswith("file:") else []
        for name, values in (("files", self.files), ("applies_to", scoped)):
            for value in values:
                if not project_relative(value):
                    raise ValidationError(
                        f"{quoted(value)} is not a path inside the project; give it relative to the "
                        "project root (e.g. src/app.py)",
                        field=name,
                        path=self.path,
                    )
                if in_lore_folder(value):
                    raise ValidationError(
                        f"{quoted(value)} is in .lore/, Lore's own folder; a memory names the project's "
                        "files (link another memory with a relation instead)",
                        field=name,
                        path=self.path,
                    )

    def _check_values(self) -> None:
        """Types and representable values of every field (any input, never a crash)."""
        path = self.path
        if not isinstance(self.body, str):
            raise ValidationError("must be text", field="body", path=path)
        check_text(self.body, "body", path=path)
        for name in ("title", "id", "type", "applies_to", "occurred_at"):
            value = getattr(self, name)
            label = "subject" if name == "title" else name
            if not isinstance(value, str):
                raise ValidationError("must be text", field=label, path=path)
            check_line(value, label, path=path)
        for name in ("sector", "updated_at", *_OPTIONAL_LINES):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, str):
                    raise ValidationError("must be text", field=name, path=path)
                check_line(value, name, path=path)
        for name, label in (("tags", "keywords"), ("files", "files"), ("labels", "labels")):
            items = getattr(self, name)
            if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
                raise ValidationError("must be a list of strings", field=label, path=path)
            for item in items:
                check_line(item, label, path=path)
        for name in ("occurred_at", "updated_at"):
            value = getattr(self, name)
            if value is not None and parse_time(value, field_name=name) != value:
                raise ValidationError(
                    f"{quoted(value)} is not in canonical form (UTC, e.g. 2026-02-10T15:30:00Z)",
                    field=name,
                    path=path,
                )
        if self.priority is not None:
            if not isinstance(self.priority, int) or isinstance(self.priority, bool):
                raise ValidationError("must be a whole number", field="priority", path=path)
            check_int(self.priority, "priority", path=path)
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, (int, float)):
            raise ValidationError("must be a number between 0 and 1", field="confidence", path=path)
        if not isinstance(self.extra, dict):
            raise ValidationError("must be a mapping of field names to values", field="extra", path=path)
        for key, value in self.extra.items():
            if not isinstance(key, str):
                raise ValidationError(f"field name {quoted(key)} must be text", field="extra", path=path)
            check_line(key, "extra", path=path)
            if key in RESERVED_FIELDS:
                raise ValidationError(
                    f"{quoted(key)} is one of Lore's own field names; set it directly or rename it",
                    field="extra",
                    path=path,
                )
            check_plain(value, key, path=path)


def from_frontmatter(meta: Frontmatter, body: str, *, path: str | None = None) -> Memory:
    """Build a :class:`Memory` from any seed schema's frontmatter.

    Raises :class:`ValidationError` for wrong types or unusable values; the
    stricter 002 rules are applied separately by :meth:`Memory.validate`.
    """
    data: dict[str, Any] = {}
    given_as: dict[str, str] = {}  # canonical field -> the name the file used (errors name it)
    extra: dict[str, Any] = {}
    tags: list[str] = []
    for key, value in meta.items():
        key = str(key)
        canonical = _ALIASES.get(key, key)
        if canonical in ("keywords", "tags"):
            tags.extend(string_list(value, key, path))
        elif canonical in CANONICAL_ORDER and canonical not in data:
            data[canonical] = value
            given_as[canonical] = key
        elif canonical in CANONICAL_ORDER:
            continue  # an alias of a field already given: the first one wins
        else:
            check_line(key, "frontmatter", path=path)
            check_plain(value, key, path=path)
            extra[key] = value

    kind = _opt_str(data.pop("type", None), "type", path)
    sector = _opt_str(data.pop("sector", None), "sector", path)
    task_type = _opt_str(data.pop("task_type", None), "task_type", path)
    if kind is None:
        kind = TYPE_OF_SECTOR.get(sector or "", "fact")
    elif kind in SECTORS:  # 001 puts the sector in `type`
        sector = sector or kind
        kind = TYPE_OF_SECTOR[kind]
    elif kind in TASK_TYPES:  # 000's `type` is the task's type
        task_type = task_type or kind
        kind = "summary"

    when = data.pop("occurred_at", None)
    if when is None:
        raise ValidationError(
            "missing; add e.g. `occurred_at: 2026-02-10T15:30:00Z` "
            "(created_at, createdAt or completed also work)",
            field="occurred_at",
            path=path,
        )
    updated = data.pop("updated_at", None)
    title = _opt_str(data.pop("subject", None), given_as.get("subject", "subject"), path) or derive_title(
        body
    )
    memory = Memory(
        title=title.strip(),
        body=body,
        type=kind,
        tags=_read_keywords(tags),
        applies_to=_opt_str(data.pop("applies_to", None), "applies_to", path) or "global",
        occurred_at=_at(when, given_as.get("occurred_at", "occurred_at"), path),
        updated_at=_at(updated, "updated_at", path) if updated is not None else None,
        id=_opt_str(data.pop("id", None), "id", path) or (_stem(path) if path else new_id()),
        sector=sector,
        task_type=task_type,
        agent=_opt_str(data.pop("agent", None), "agent", path),
        task=_opt_str(data.pop("task", None), "task", path),
        project=_opt_str(data.pop("project", None), "project", path),
        files=string_list(data.pop("files", None) or [], "files", path),
        labels=string_list(data.pop("labels", None) or [], "labels", path),
        priority=_opt_int(data.pop("priority", None), "priority", path),
        risk=_opt_str(data.pop("risk", None), "risk", path),
        confidence=_confidence(data.pop("confidence", None), path),
        source=_opt_str(data.pop("source", None), given_as.get("source", "source"), path),
        extra=extra,
        path=path,
    )
    declared = data.pop("content_hash", None)  # always recomputed; kept for `lore doctor`
    memory.declared_hash = _opt_str(declared, "content_hash", path)
    return memory


def derive_title(body: str) -> str:
    """A title from the body: its first ``# H1``, else its first non-empty
    line that is not a heading or a code fence, else its first text at all.

    Always a valid title for a body with any text: line breaks and tabs fold
    to spaces, control characters go, at most 200 characters. A body with no
    text at all (only markup) gives ``Untitled``.
    """
    first = fallback = ""
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and fold_line(stripped).startswith("# "):
            title = _clip_title(fold_line(stripped)[2:])
            if title:
                return title
        if stripped and not first and not stripped.startswith(("```", "#")):
            first = _clip_title(fold_line(stripped).lstrip("-*> "))
        if stripped and not fallback:
            fallback = _clip_title(fold_line(stripped).strip("#`-*> "))
    return first or fallback or "Untitled"


def _clip_title(text: str) -> str:
    return text[:MAX_SUBJECT].strip()


_NOISE_WORD = re.compile(r"^(\d+|[0-9a-f]{7,40})$")  # numbers and commit shas say nothing
_REDACTED = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")  # where a secret was: not what the memory is about
_BODY_WORD = re.compile(r"[a-z][a-z0-9_]+")


def derive_keywords(title: str, body: str, limit: int = 5) -> list[str]:
    """Keywords for a memory given none: the title's terms, then the body's
    most frequent words. Always valid: 1 to ``limit`` (at most 20) distinct
    keywords of 2-50 word characters, ``["note"]`` when nothing qualifies."""
    from lore.search.text import STOPWORDS, terms  # the search's own notion of a term

    limit = max(1, min(limit, MAX_KEYWORDS))
    title, body = _REDACTED.sub(" ", title), _REDACTED.sub(" ", body)

    def usable(word: str) -> bool:
        return 2 <= len(word) <= MAX_KEYWORD_LEN and not _NOISE_WORD.match(word)

    words = [w for w in terms(fold_line(title)) if usable(w)]
    if len(words) < limit:
        # Counted in C, then the distinct words checked (a 5 MB body holds ~700k words, a few distinct).
        counts = Counter(_BODY_WORD.findall(body.lower()))
        for word in [w for w in counts if len(w) <= 3 or w in STOPWORDS or not usable(w)]:
            del counts[word]
        words += [w for w, _ in counts.most_common(limit * 2) if w not in words]
    return _unique(words)[:limit] or ["note"]


def normalize_body(text: str) -> str:
    """The body as Lore stores it: line endings as ``\\n``, surrounding
    whitespace (leading blank lines, trailing spaces) removed, one final newline."""
    return split_body(text)[1]


def split_body(text: str) -> tuple[int, str]:
    """(number of lines dropped before the body's first text, normalised body)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    body = text.lstrip()
    return text[: len(text) - len(body)].count("\n"), body.rstrip() + "\n"


def normalized(memory: Memory) -> Memory:
    """A copy of `memory` in the form it takes once written and read back.

    The documented normalisations (docs/memory-format.md): the title is
    stripped; the body per :func:`normalize_body`; keywords split at commas,
    stripped, empty and case-insensitive duplicates dropped; empty optional
    fields absent; times in canonical UTC form; confidence a float; extra
    field names text.
    Values of the wrong type are left for :meth:`Memory.validate` to report.
    """
    changes: dict[str, Any] = {}
    if isinstance(memory.title, str):
        changes["title"] = memory.title.strip()
    if isinstance(memory.body, str):
        changes["body"] = normalize_body(memory.body)
    if isinstance(memory.tags, (list, tuple)) and all(isinstance(t, str) for t in memory.tags):
        changes["tags"] = keywords_of(memory.tags)
    for name in ("files", "labels"):
        value = getattr(memory, name)
        if isinstance(value, tuple):
            changes[name] = list(value)
    for name in _OPTIONAL_LINES:
        if getattr(memory, name) == "":
            changes[name] = None
    for name in ("occurred_at", "updated_at"):
        value = getattr(memory, name)
        if isinstance(value, str) and value:
            try:
                changes[name] = parse_time(value, field_name=name)
            except ValidationError:
                pass  # validate() says what is wrong
    if isinstance(memory.confidence, int) and not isinstance(memory.confidence, bool):
        changes["confidence"] = float(memory.confidence)
    if isinstance(memory.extra, dict):
        changes["extra"] = {str(k) if isinstance(k, (int, float)) else k: v for k, v in memory.extra.items()}
    copy = dataclasses.replace(memory, **changes)
    copy.declared_hash = memory.declared_hash
    return copy


def summarize(body: str, limit: int = 400) -> str:
    """The Summary section if there is one, else an ADR's Decision section, else
    the first paragraph that is not only headings or an ADR's metadata lines
    (``Date: 2022-01-15``, ``Status: Accepted``); at most `limit` chars."""
    lines = body.strip().splitlines()
    for name in ("summary", "decision"):
        text = _section(lines, name)
        if text:
            return clip(text, limit)
    para: list[str] = []
    first: list[str] = []  # when every paragraph is metadata, the first one still
    fenced = False
    for line in [*lines, ""]:
        if line.strip().startswith("```"):  # code is no summary: the prose before it is
            if para and not fenced:
                return clip(" ".join(para), limit - 2) + " …"
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.strip().startswith("#") and not para:
            continue
        if not line.strip():
            if para and not all(_ADR_META.match(p) for p in para):
                break
            first, para = first or para, []
            continue
        para.append(line.strip())
    return clip(" ".join(para or first), limit)


# A line of an ADR's metadata: not what the memory says.
_ADR_META = re.compile(
    r"(?:date|status|authors?|deciders|created|updated|supersedes|superseded by)\s*:", re.I
)


def _section(lines: list[str], name: str) -> str:
    """The text of the first ``# name`` / ``## name`` section (one line), or ""."""
    for i, line in enumerate(lines):
        if re.fullmatch(rf"#{{1,3}}\s*{name}\s*", line.strip(), re.I):
            section = []
            cut = ""
            for rest in lines[i + 1 :]:
                if rest.startswith("#"):
                    break
                if rest.strip().startswith("```"):  # code, flattened on one line, is no summary
                    cut = " …"
                    break
                section.append(rest)
            text = " ".join(s.strip() for s in section if s.strip())
            return text + cut if text else ""
    return ""


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


def keywords_of(tags: Iterable[str]) -> list[str]:
    """Keywords as stored: a comma separates two (as in ``--tag a,b``, the web
    form and ``?tag=``, so one holding a comma could not be written back or
    asked for), stripped, empty and case-insensitive duplicates dropped."""
    return _unique([part for tag in tags for part in tag.split(",")])


def _read_keywords(tags: list[str]) -> list[str]:
    """:func:`keywords_of` for a file as it is read; one whose keywords,
    split at commas, would pass the limit keeps them as written (a file valid
    before the split must not drop out of search)."""
    split = keywords_of(tags)
    return split if len(split) <= MAX_KEYWORDS else _unique(tags)


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        item = item.strip()
        if item and item.lower() not in {s.lower() for s in seen}:
            seen[item] = None
    return list(seen)


def string_list(value: object, name: str, path: str | None) -> list[str]:
    """A list of strings (numbers as written) from a field's value, or one comma-separated string."""
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, (list, tuple)) and all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
    ):
        items = [v if isinstance(v, str) else _number_text(v, name, path) for v in value]
    else:
        raise ValidationError("must be a list of strings, e.g. [auth, timeout]", field=name, path=path)
    for item in items:
        check_line(item, name, path=path)
    return items


def _opt_str(value: object, name: str, path: str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        check_line(value, name, path=path)
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number_text(value, name, path)
    raise ValidationError("must be a single string", field=name, path=path)


def _number_text(value: int | float, name: str, path: str | None) -> str:
    """A number written where text is expected (``id: 12345``), as text."""
    if isinstance(value, int):
        check_int(value, name, path=path)
    return str(value)


def _opt_int(value: object, name: str, path: str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        check_int(value, name, path=path)
        return value
    raise ValidationError("must be a whole number", field=name, path=path)


def _confidence(value: object, path: str | None) -> float:
    if value is None:
        return 1.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise ValidationError("must be a number between 0 and 1", field="confidence", path=path)


def _at(value: object, name: str, path: str | None) -> str:
    try:
        return parse_time(value, field_name=name)
    except ValidationError as err:
        raise ValidationError(err.reason, field=name, path=path) from None
