"""Links between memories, as written in the files: parsing and rewriting.

A memory names another in four ways, all indexed at sync time (both ways:
see :mod:`lore.memory.graph`):

- a standard Markdown link to the other file, relative to this one:
  ``[UTC decision](2026-02-10-store-times-in-utc.md)``;
- a ``[[wikilink]]`` by title, id, 8-character id prefix or file name:
  ``[[Store times in UTC]]``, ``[[73fae3a7]]`` (``[[X|shown text]]`` and
  ``[[X#heading]]`` work too);
- a typed relation in the frontmatter, as a mapping or a list::

      relations:
        supersedes: [[Old timeout policy]]
        depends_on: [73fae3a7, Store times in UTC]

      relations:
        - supersedes [[Old timeout policy]]
        - {type: implements, target: 2026-02-10-auth-design.md}

- a ``## Relations`` section whose list items start with the relation:
  ``- supersedes [[Old timeout policy]]`` (or ``- depends_on: 73fae3a7``).

Relations are free-form words (``relates to`` → ``relates_to``); Lore acts on
:data:`SUPERSEDES` (recall shows the newer memory instead of the older one)
and follows :data:`STRONG` ones one hop. A word that is a near miss of a
known relation (``supercedes``, ``depend_on``: :func:`near_miss`) is a typo,
not a custom relation: writes refuse it and `lore doctor` reports it. A plain
link in the text is a ``links_to``. Code blocks and inline code are never
read for links.

Rewriting (when a memory is renamed or retitled) changes only the link
targets that named the old path, file name or title, nothing else.
"""

from __future__ import annotations

import difflib
import functools
import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

from lore.records import datarecord
from lore.storage import LinkInput, MemoryRecord

SUPERSEDES = "supersedes"
LINKS_TO = "links_to"
KNOWN_RELATIONS = ("supersedes", "relates_to", "depends_on", "contradicts", "implements")
# Followed one hop by recall: the neighbour is brought in beside the memory found.
STRONG = ("supersedes", "depends_on", "contradicts", "implements")
# How a relation reads from its target's side (show, graph).
INVERSE = {
    "supersedes": "superseded_by",
    "depends_on": "required_by",
    "implements": "implemented_by",
    "contradicts": "contradicts",
    "relates_to": "relates_to",
    LINKS_TO: "linked_from",
}

_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+?)(#[^\]|\n]*)?(\|[^\]\n]*)?\]\]")
_MDLINK = re.compile(
    r"(?<!!)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^>\n]+>|[^)\s]+)(\s+\"[^\"\n]*\")?\s*\)"
)
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


@datarecord
class Target:
    """A link's target as written, and the key it is looked up by."""

    text: str
    key: str
    kind: str  # path | name


# -- keys -----------------------------------------------------------------------------


def name_key(name: str) -> str:
    """How a name is compared: casefolded, inner whitespace collapsed."""
    return " ".join(name.split()).casefold()


def relation_name(text: str) -> str:
    """``Relates to`` → ``relates_to``; empty → ``links_to``."""
    return re.sub(r"[^\w]+", "_", text.casefold()).strip("_") or LINKS_TO


# Words Lore itself uses for links, never typos of a known relation: a
# backlink's name (``superseded_by``) means the opposite of its near miss.
_NOT_TYPOS = frozenset({LINKS_TO, *INVERSE.values()})
# Backlink names of the directed relations, to the relation they turn around.
_BACKLINKS = {back: known for known, back in INVERSE.items() if known not in (back, LINKS_TO)}
_FORWARD = frozenset(_BACKLINKS.values())
# How close (difflib ratio) a word must be to a known relation to be its typo:
# ``depends`` (0.82) is, ``contrasts`` (0.80 to contradicts) is a word of its own.
_TYPO_CUTOFF = 0.82


@functools.lru_cache(maxsize=512)
def near_miss(relation: str) -> str | None:
    """The known relation that `relation` (normalised, see :func:`relation_name`)
    is a near miss of, if it is one: a close spelling (``supercedes``,
    ``depend_on``), another form of the same word (``depend``, ``related``,
    ``implemented``) or a misspelt backlink name (``superceded_by``, which
    names `supersedes`); None for a known relation or a word of its own."""
    if relation in KNOWN_RELATIONS or relation in _NOT_TYPOS:
        return None
    close = difflib.get_close_matches(relation, [*KNOWN_RELATIONS, *_BACKLINKS], n=1, cutoff=_TYPO_CUTOFF)
    if close:
        return _BACKLINKS.get(close[0], close[0])
    if relation.endswith("_by"):
        return None
    stems = _stems(relation)
    return next((known for known in KNOWN_RELATIONS if stems & _stems(known)), None)


def _stems(word: str) -> set[str]:
    """`word` without its ``_on``/``_to`` and with its -s, -es, -d or -ed cut off."""
    base = re.sub(r"_(?:on|to|upon)$", "", word)
    cut = {base[: -len(end)] for end in ("es", "s", "ed", "d") if base.endswith(end)}
    return {base} | {stem for stem in cut if len(stem) >= 4}


def reads_backwards(relation: str) -> bool:
    """Whether `relation` names a link from the other memory's side
    (``superseded``, ``implemented_by``): writing the known relation here
    instead would turn the link around."""
    return relation.endswith(("ed", "_by")) and relation not in KNOWN_RELATIONS


def typo_advice(relation: str, known: str) -> str:
    """What to write instead of `relation`, a near miss of `known`."""
    if reads_backwards(relation) and known in _FORWARD:
        return (
            f"'{relation}' reads from the other side: write {known} on the other memory, pointing to this one"
        )
    return f"did you mean {known}?"


def typo_message(relation: str, known: str) -> str:
    """The one line a write refusing `relation` (a near miss of `known`) says."""
    return (
        f"relation '{relation}' is not one Lore knows: {typo_advice(relation, known)} "
        "(custom relation names are allowed when they are not this close to a known one)"
    )


def relation_typos(body: str, relations: Any, source: str) -> list[tuple[str, str]]:
    """(relation, the known one it is a near miss of) for every distinct typo
    among a memory's relations (frontmatter ``relations`` and ``## Relations``)."""
    out: dict[str, str] = {}
    for link in parse_links(body, relations, source):
        known = near_miss(link.relation)
        if known is not None:
            out.setdefault(link.relation, known)
    return list(out.items())


def stem_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


def keys_of(memory: MemoryRecord) -> list[str]:
    """Every key a link may use to name `memory`: its path, id, 8-character id
    prefix, file name (without .md) and title."""
    keys = [memory.path, name_key(memory.id), name_key(stem_of(memory.path)), name_key(memory.title)]
    if len(memory.id) > 8:
        keys.append(name_key(memory.id[:8]))
    return list(dict.fromkeys(k for k in keys if k))


# -- parsing ------------------------------------------------------------------------------


def parse_links(body: str, relations: Any, source: str, body_line: int = 1) -> list[LinkInput]:
    """Every link in a memory: its body (``links_to`` or, in a ``## Relations``
    section, the item's relation) and its frontmatter ``relations``.

    Args:
        body: the memory's body.
        relations: the frontmatter's ``relations`` value (mapping, list or None).
        source: the memory file's project-relative path (Markdown links are relative to it).
        body_line: the file's line where the body starts, so links carry real line numbers.
    """
    links = [
        LinkInput(relation, t.text, t.key, t.kind, line=None, origin="frontmatter")
        for relation, t in _front_relations(relations, source)
    ]
    section_level: int | None = None
    for index, line in _prose_lines(body):
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            if name_key(heading.group(2)) == "relations":
                section_level = level
            elif section_level is not None and level <= section_level:
                section_level = None
            continue
        relation, origin = LINKS_TO, "body"
        text = line
        if section_level is not None and (item := _ITEM.match(line)):
            relation, text, origin = _item_relation(item.group(1)), item.group(1), "section"
        found = list(targets_in(text, source))
        if origin == "section" and not found:
            bare = _bare_target(item.group(1)) if item else None
            if bare:
                found = [Target(bare, name_key(bare), "name")]
        links += [LinkInput(relation, t.text, t.key, t.kind, body_line + index, origin) for t in found]
    return links


def targets_in(text: str, source: str) -> list[Target]:
    """The memory targets of the wikilinks and Markdown links in one line of prose."""
    clean = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)
    found: list[tuple[int, Target]] = []
    for match in _WIKILINK.finditer(clean):
        name = match.group(1).strip()
        if name:
            found.append((match.start(), Target(name, name_key(name), "name")))
    for match in _MDLINK.finditer(clean):
        path = link_path(match.group(2), source)
        if path is not None:
            found.append((match.start(), Target(match.group(2).strip("<>"), path, "path")))
    return [target for _, target in sorted(found, key=lambda pair: pair[0])]


def link_path(url: str, source: str) -> str | None:
    """The project-relative path a Markdown link in `source` points at, if it
    points at a memory file (a ``.md`` under ``.lore/``); else None."""
    url = url.strip().strip("<>")
    if not url or url.startswith("#") or _SCHEME.match(url):
        return None
    url = unquote(url.split("#", 1)[0].split("?", 1)[0])
    if not url.endswith(".md"):
        return None
    base = "" if url.startswith("/") else posixpath.dirname(source)
    path = posixpath.normpath(posixpath.join(base, url.lstrip("/")))
    if path.startswith("../") or path == ".." or not path.startswith(".lore/"):
        return None
    return path


def _front_relations(value: Any, source: str) -> list[tuple[str, Target]]:
    """(relation, target) pairs of a frontmatter ``relations`` value."""
    out: list[tuple[str, Target]] = []
    if isinstance(value, dict):
        for relation, targets in value.items():
            for text in _flat(targets):
                target = _front_target(text, source)
                if target is not None:
                    out.append((relation_name(str(relation)), target))
    elif isinstance(value, list):
        for entry in value:
            if isinstance(entry, dict):
                relation = entry.get("type") or entry.get("relation") or LINKS_TO
                text = entry.get("target") or entry.get("to") or entry.get("id")
                target = _front_target(text, source)
                if target is not None:
                    out.append((relation_name(str(relation)), target))
            elif isinstance(entry, str):
                found = list(targets_in(entry, source))
                if found:
                    relation = relation_name(entry[: entry.index("[")] if "[" in entry else "")
                    out += [(relation, t) for t in found]
                elif " " in entry.strip():
                    relation, _, rest = entry.strip().partition(" ")
                    target = _front_target(rest.strip(), source)
                    if target is not None:
                        out.append((relation_name(relation), target))
    return out


def _flat(value: Any) -> list[Any]:
    """YAML reads ``supersedes: [[Old title]]`` as a list in a list: flatten it."""
    if isinstance(value, list):
        return [item for entry in value for item in _flat(entry)]
    return [value]


def _front_target(value: Any, source: str) -> Target | None:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        return None
    text = str(value).strip()
    wiki = _WIKILINK.fullmatch(text)
    if wiki:
        text = wiki.group(1).strip()
    if not text:
        return None
    if text.endswith(".md"):
        path = link_path(text, source)
        return Target(text, path, "path") if path else None
    return Target(text, name_key(text), "name")


def _item_relation(item: str) -> str:
    """The relation a ``## Relations`` item starts with (the words before its link)."""
    cut = len(item)
    for mark in ("[[", "["):
        if mark in item:
            cut = min(cut, item.index(mark))
    words = item[:cut].strip().rstrip(":").strip()
    if not words and ":" in item:
        words = item.split(":", 1)[0]
    if cut == len(item):  # a bare target: "depends_on: 73fae3a7"
        words = item.split(":", 1)[0] if ":" in item else item.split(" ", 1)[0]
    return relation_name(words)


def _bare_target(item: str) -> str | None:
    """The target of an item without a link: ``depends_on: 73fae3a7`` → 73fae3a7."""
    if ":" in item:
        rest = item.split(":", 1)[1]
    elif " " in item.strip():
        rest = item.strip().split(" ", 1)[1]
    else:
        return None
    rest = rest.strip().strip("`").strip()
    return rest or None


def _prose_lines(body: str) -> Iterable[tuple[int, str]]:
    """(0-based index, line) of the body's lines outside fenced code blocks."""
    fence: str | None = None
    for index, line in enumerate(body.split("\n")):
        stripped = line.lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        yield index, line


# -- rewriting ------------------------------------------------------------------------------


@datarecord
class Rename:
    """A memory's old and new names: its path, and its title or file name.

    ``names`` maps old name keys (casefolded) to the new name written instead.
    """

    old_path: str
    new_path: str
    names: dict[str, str]

    @property
    def empty(self) -> bool:
        return self.old_path == self.new_path and not self.names


def rewrite_body(body: str, source: str, rename: Rename, *, new_source: str | None = None) -> str:
    """`body` with its links to the renamed memory pointing at its new name.

    Markdown links that resolved to ``rename.old_path`` get the new path,
    relative to the (possibly moved: `new_source`) file; wikilinks by an old
    title or file name get the new one (alias and heading kept). Links by id
    never change. Code is left alone.
    """
    lines = body.split("\n")
    prose = {index for index, _ in _prose_lines(body)}
    where = new_source or source

    def wiki(match: re.Match[str]) -> str:
        new = rename.names.get(name_key(match.group(1)))
        if new is None:
            return match.group(0)
        return f"[[{new}{match.group(2) or ''}{match.group(3) or ''}]]"

    def markdown(match: re.Match[str]) -> str:
        url = match.group(2)
        path = link_path(url, source)
        if path is not None and path == rename.old_path:
            target = relative_link(rename.new_path, where) + _fragment(url)
            if url.startswith("<"):
                target = f"<{target}>"
        elif path is not None and where != source:  # this file moved: keep its other links working
            target = relative_link(path, where) + _fragment(url)
        else:
            return match.group(0)
        return f"[{match.group(1)}]({target}{match.group(3) or ''})"

    for index in sorted(prose):
        lines[index] = _outside_code(
            lines[index], lambda text: _MDLINK.sub(markdown, _WIKILINK.sub(wiki, text))
        )
    return "\n".join(lines)


def rewrite_relations(value: Any, source: str, rename: Rename, *, new_source: str | None = None) -> Any:
    """A frontmatter ``relations`` value with targets naming the renamed memory updated."""
    where = new_source or source

    def fix(text: Any) -> Any:
        if isinstance(text, list):
            return [fix(item) for item in text]
        if not isinstance(text, str):
            return text
        stripped = text.strip()
        wiki = _WIKILINK.fullmatch(stripped)
        inner = wiki.group(1).strip() if wiki else stripped
        if inner.endswith(".md"):
            path = link_path(inner, source)
            if path is not None and (path == rename.old_path or where != source):
                new = relative_link(rename.new_path if path == rename.old_path else path, where)
                return f"[[{new}]]" if wiki else new
            return text
        renamed = rename.names.get(name_key(inner))
        if renamed is None:
            return text
        return f"[[{renamed}]]" if wiki else renamed

    if isinstance(value, dict):
        return {k: fix(t) for k, t in value.items()}
    if isinstance(value, list):
        out: list[Any] = []
        for entry in value:
            if isinstance(entry, dict):
                out.append({k: fix(v) if k in ("target", "to", "id") else v for k, v in entry.items()})
            elif isinstance(entry, str):
                fixed = rewrite_body(entry, source, rename, new_source=new_source)
                if fixed == entry and " " in entry.strip():
                    relation, _, rest = entry.strip().partition(" ")
                    new_rest = fix(rest)
                    fixed = entry if new_rest == rest else f"{relation} {new_rest}"
                out.append(fixed)
            else:
                out.append(entry)
        return out
    return value


def relative_link(path: str, source: str) -> str:
    """The Markdown link target for `path` written in the file `source`."""
    return posixpath.relpath(path, posixpath.dirname(source) or ".")


def _fragment(url: str) -> str:
    url = url.strip("<>")
    return "#" + url.split("#", 1)[1] if "#" in url else ""


def _outside_code(line: str, change: Callable[[str], str]) -> str:
    """Apply `change` to the parts of `line` outside inline code spans."""
    out, last = [], 0
    for match in _INLINE_CODE.finditer(line):
        out += [change(line[last : match.start()]), match.group(0)]
        last = match.end()
    out.append(change(line[last:]))
    return "".join(out)
