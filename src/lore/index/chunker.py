"""Split a file into search-sized chunks along its logical units.

Source code is parsed with tree-sitter: each function, method or class becomes
a chunk that starts with its leading comments, decorators or doc comments, so
the signature and docstring are always in it. Markdown is split by headings.
Everything else, and any file that cannot be parsed, is cut into line windows.

One algorithm serves code and prose alike. A file (or an oversized unit) is a
*level*: the units found in it plus the *gaps* between them (module code,
a class header, a section's intro). At each level:

- a unit that fits in `max_tokens` is one chunk;
- a larger unit is split into its own members (methods of a class, nested
  functions, subsections), recursively, or else into overlapping line windows
  that all keep its symbol;
- consecutive pieces smaller than `min_tokens` are merged up to `max_tokens`,
  their symbols joined with ", ".

A chunk's `text` is exactly the file's lines `start_line..end_line`, so it can
be shown with line numbers; continuation windows of a split unit do not repeat
its signature, so the index should embed `symbol` alongside `text`.

`import lore.index.chunker` does not import tree_sitter: grammars load on the
first file that needs them, and parsers are cached per thread.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lore.index.tokens import count_tokens
from lore.records import datarecord

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",  # C++ headers named .h parse as C well enough: tree-sitter recovers the units
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".cs": "csharp",
    ".php": "php",
    # Line windows (no grammar bundled), but labelled, so `--lang` finds them.
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".m": "objc",
    ".mm": "objc",
    ".ex": "elixir",
    ".exs": "elixir",
    ".dart": "dart",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".sql": "sql",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
}

# What users type for a language (`--lang js`), as the index names it.
_ALIASES = {
    "py": "python",
    "js": "javascript",
    "ts": "typescript",
    "golang": "go",
    "rs": "rust",
    "c++": "cpp",
    "cxx": "cpp",
    "rb": "ruby",
    "cs": "csharp",
    "c#": "csharp",
    "kt": "kotlin",
    "sh": "shell",
    "bash": "shell",
    "md": "markdown",
    "objective-c": "objc",
}


def language_name(given: str) -> str | None:
    """The index's name for a language a user typed (`JS`, `jsx` -> javascript), or None if unknown."""
    name = given.strip().lower()
    name = _ALIASES.get(name) or _EXTENSIONS.get(f".{name}") or name
    return name if name in _EXTENSIONS.values() or name == "text" else None


def extensions_of(language: str) -> list[str]:
    """The extensions (without their dot) of the files chunked as `language`."""
    return [ext[1:] for ext, name in _EXTENSIONS.items() if name in language_family(language)]


def language_family(name: str) -> list[str]:
    """The stored languages a language filter takes in: TypeScript includes TSX."""
    return [name, "tsx"] if name == "typescript" else [name]


def known_languages() -> list[str]:
    return sorted({*_EXTENSIONS.values(), "text"})


# A gap that only closes what is above it joins the piece above: brackets
# (`}`, `});`), Ruby's `end`, with a trailing comment (`}  // namespace geo`),
# and `#endif`.
_CLOSING = re.compile(r"\s*(?:#\s*endif\b.*|(?:(?:[\])};,]|\bend\b)\s*)+(?:(?://|#).*)?)")
_WORD = re.compile(r"\w")
_BLANK_RUN = 16  # blank lines in a row that cost nothing; each further one costs a token


@datarecord
class CodeChunk:
    """A slice of a file: whole lines `start_line..end_line` (1-based, inclusive).

    `symbol` is the qualified name of the unit(s) covered ("Class.method",
    "outer.inner", "Install > From source"; names of merged neighbours joined
    with ", "), or None for plain line windows and top-level code outside any
    definition. `kind` is "function", "method", "class", "module" (top-level
    code, namespaces), "section" (Markdown) or "lines" (unstructured windows).
    """

    text: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str


def language_for(path: str) -> str | None:
    """The language chunk_file uses for `path`, or None (plain line windows)."""
    dot = path.rfind(".")
    if dot <= path.rfind("/"):
        return None
    return _EXTENSIONS.get(path[dot:].lower())


# Interpreters a script without an extension names on its first line (`#!/usr/bin/env python3`).
_INTERPRETERS = {"python": "python", "node": "javascript", "ruby": "ruby"}
_SHEBANG = re.compile(r"#![ \t]*\S*?/(?:env[ \t]+(?:-\S+[ \t]+)*)?(?P<name>[A-Za-z]+)[\d.]*(?=\s|$)")


def _interpreted(text: str) -> str | None:
    """The language of a script by its `#!` line (``bin/rackup``: ruby), or None."""
    found = _SHEBANG.match(text[:200])
    return _INTERPRETERS.get(found.group("name")) if found else None


def chunk_file(
    path: str, text: str, *, max_tokens: int = 500, overlap_tokens: int = 50, min_tokens: int = 100
) -> list[CodeChunk]:
    """Split `text` (the content of `path`) into chunks; never raises on bad input.

    Args:
        path: used only to pick the language from its extension.
        text: the file's content.
        max_tokens: target upper size of a chunk (a single longer line is cut).
        overlap_tokens: lines repeated between consecutive windows of one unit.
        min_tokens: neighbours smaller than this are merged.

    Returns:
        Chunks in file order; [] for an empty or whitespace-only file.
    """
    if not text.strip():
        return []
    sizes = {"max_tokens": max_tokens, "overlap_tokens": overlap_tokens, "min_tokens": min_tokens}
    if path.lower().endswith(".ipynb"):  # its cells' source, at the notebook's lines
        from lore.index.notebook import chunk_notebook

        try:
            cells = chunk_notebook(text, lambda body, language: chunk_text(body, language, **sizes))
        except Exception:  # a notebook written oddly is chunked as the text it is
            cells = None
        if cells is not None:
            return cells
    return chunk_text(text, language_for(path) or _interpreted(text) or "text", **sizes)


def chunk_text(
    text: str, language: str, *, max_tokens: int = 500, overlap_tokens: int = 50, min_tokens: int = 100
) -> list[CodeChunk]:
    """:func:`chunk_file` for `text` in `language` (the chunker's name for it, or "text")."""
    if not text.strip():
        return []
    if "\r" in text and "\n" not in text:
        # Classic Mac line ends: as one "\n" line, the whole file was cut at random
        # characters under its first unit's name. Editors number these lines too.
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    sizes = _Sizes(lines, language, max(1, max_tokens), max(0, overlap_tokens), min_tokens)
    last = len(lines) - 1
    try:
        if language in _GRAMMARS:
            units = _CodeUnits.find(language, text)
            if units is not None:
                return sizes.level(units, 0, last, None, "module")
        elif language in ("markdown", "rst"):
            return sizes.level(_section_units(lines, language == "rst"), 0, last, None, "section")
    except Exception:
        pass
    return sizes.windows(0, last, None, "lines")


@datarecord
class _Unit:
    """A definition or section: rows `start..end` (0-based, inclusive)."""

    start: int
    end: int
    symbol: str | None
    kind: str
    members: Callable[[], list[_Unit]] | None = None  # finds sub-units on demand
    # Rows that start a statement, with their depth in the syntax tree (on demand).
    depths: Callable[[], dict[int, int]] | None = None


_COMMENT = re.compile(r"\s*(?:#|//|/\*|\*|--|;|%)")
# A comment line in any of the chunked languages, `#include`, `#!` and `#[attr]` not counted.
_REMARK = re.compile(r"\s*(?:#(?![A-Za-z!\[])|//|/\*|\*|--\s|<!--)")
_DEEP = 1 << 20  # the depth of a line that starts no statement (inside a string, a `}`)
# A node's counted ancestors, innermost first: (start row, how many, the rest).
_Chain = tuple[int, int, "_Chain"] | None


def _statement_depths(node: Node) -> dict[int, int]:
    """Rows of `node` that a named node begins (first on its line), each with
    how deeply the line is nested: the enclosing nodes that began on earlier
    rows (a block, which begins where its first statement does, not counted). A
    function's own statements are at 2, those inside an `if` or a call's
    arguments deeper; a line inside a string, or a bare bracket, begins none."""
    first_column: dict[int, int] = {}
    base_row, base_column = node.start_point
    for offset, line in enumerate((node.text or b"").split(b"\n")):
        first_column[base_row + offset] = len(line) - len(line.lstrip()) + (base_column if offset == 0 else 0)
    depths: dict[int, int] = {}
    stack: list[tuple[Node, _Chain]] = [(node, None)]
    while stack:
        current, chain = stack.pop()
        row, column = current.start_point
        if chain is not None and first_column.get(row) == column:
            link: _Chain = chain
            while link is not None and link[0] >= row:  # enclosing nodes begun on this very row
                link = link[2]
            depth = link[1] if link is not None else 0
            if depth < depths.get(row, _DEEP):
                depths[row] = depth
        # A wrapper that begins where its first child does (a block) adds no depth.
        lead = current.named_children[0] if current.named_child_count else None
        if lead is None or lead.start_point != current.start_point:
            chain = (row, (chain[1] if chain else 0) + 1, chain)
        stack += [(child, chain) for child in current.named_children]
    return depths


def _closing(line: str) -> bool:
    return not _WORD.search(line) or _CLOSING.fullmatch(line) is not None


class _Sizes:
    """Turns a level of units into chunks, sizing with per-line token counts."""

    def __init__(
        self, lines: list[str], language: str, max_tokens: int, overlap_tokens: int, min_tokens: int
    ):
        self.lines, self.language = lines, language
        self.max, self.min = max_tokens, min_tokens
        self.overlap = min(overlap_tokens, max_tokens // 2)
        self.slack = min(overlap_tokens, max_tokens // 10)  # allowed overrun of a window
        self.prefix = [0]
        blank = 0  # blank lines just above
        for line in lines:
            cost = count_tokens(line)
            blank = 0 if cost or line.strip() else blank + 1
            # A blank line is free, but not past a run of them: 1,000,000 newlines
            # between two lines were one chunk of ~31,000 real tokens.
            self.prefix.append(self.prefix[-1] + (cost or int(blank > _BLANK_RUN)))

    def tokens(self, start: int, end: int) -> int:
        return self.prefix[end + 1] - self.prefix[start]

    def level(
        self, units: list[_Unit], lo: int, hi: int, scope: str | None, gap_kind: str
    ) -> list[CodeChunk]:
        """Chunks for rows lo..hi holding `units`; gaps get `scope` and `gap_kind`."""
        pieces: list[_Unit] = []
        cursor = lo
        for unit in units:
            before = len(pieces)
            self._add_gap(pieces, cursor, unit.start - 1, scope, gap_kind)
            first = self._remarks_from(pieces[-1]) if len(pieces) > before else None
            if first is not None:
                # A divider (`# -- anchors ----`) or remarks closing the gap above the
                # unit, a blank line apart, open it: alone, a one-line chunk named
                # after the class outranked the definitions in name lookups.
                gap = pieces.pop()
                start, end = self._trim(gap.start, first - 1)
                if start <= end:
                    pieces.append(replace(gap, start=start, end=end))
                unit = replace(unit, start=first)
            pieces.append(unit)
            cursor = unit.end + 1
        self._add_gap(pieces, cursor, hi, scope, gap_kind)

        chunks: list[CodeChunk] = []
        small: list[_Unit] = []
        for piece in pieces:
            size = self.tokens(piece.start, piece.end)
            if size < self.min:
                if small and self.tokens(small[0].start, piece.end) > self.max:
                    chunks += self._merge(small, gap_kind)
                    small = []
                small.append(piece)
                continue
            chunks += self._merge(small, gap_kind)
            small = []
            if size <= self.max:
                chunks += self._chunk(piece.start, piece.end, piece.symbol, piece.kind)
            else:
                chunks += self._split(piece)
        return chunks + self._merge(small, gap_kind)

    def _add_gap(self, pieces: list[_Unit], start: int, end: int, scope: str | None, kind: str) -> None:
        """Append the non-blank rows start..end; bare closing brackets join the piece above."""
        start, end = self._trim(start, end)
        if start > end:
            return
        if pieces and all(_closing(self.lines[row]) for row in range(start, end + 1)):
            pieces[-1].end = end
        else:
            pieces.append(_Unit(start, end, scope, kind))

    def _remarks_from(self, piece: _Unit) -> int | None:
        """The first row of the comments that end `piece` (blank rows between them
        allowed; a C preprocessor line is no comment), or None when it ends in code."""
        first = None
        for row in range(piece.end, piece.start - 1, -1):
            line = self.lines[row]
            if _REMARK.match(line):
                first = row
            elif line.strip():
                break
        return first

    def _split(self, piece: _Unit) -> list[CodeChunk]:
        members = piece.members() if piece.members else None
        if members:
            return self.level(members, piece.start, piece.end, piece.symbol, piece.kind)
        depths = piece.depths() if piece.depths else None
        return self.windows(piece.start, piece.end, piece.symbol, piece.kind, depths)

    def _merge(self, pieces: list[_Unit], mixed_kind: str) -> list[CodeChunk]:
        if not pieces:
            return []
        names = [p.symbol for p in pieces if p.symbol]
        kinds = {p.kind for p in pieces}
        return self._chunk(
            pieces[0].start,
            pieces[-1].end,
            ", ".join(dict.fromkeys(names)) or None,
            kinds.pop() if len(kinds) == 1 else mixed_kind,
        )

    def windows(
        self, start: int, end: int, symbol: str | None, kind: str, depths: dict[int, int] | None = None
    ) -> list[CodeChunk]:
        """Overlapping windows of about max_tokens over rows start..end; with the
        `depths` of a parsed unit's statements, cut before the shallowest one."""
        chunks: list[CodeChunk] = []
        first = start
        while first <= end:
            last = self._window_end(first, end, depths)
            if last == first and self.tokens(first, first) > self.max:
                chunks += self._cut_line(first, symbol, kind)
            else:
                if last < end and self.tokens(last + 1, end) <= self.slack:
                    last = end  # no last window holding little more than a `}`
                chunks += self._chunk(first, last, symbol, kind)
            if last >= end:
                break
            # Restart so that about `overlap` tokens of this window repeat.
            target = self.prefix[last + 1] - self.overlap
            first = max(first + 1, bisect.bisect_left(self.prefix, target, first + 1, last + 1))
        return chunks

    def _window_end(self, first: int, end: int, depths: dict[int, int] | None = None) -> int:
        """Last row of a window from `first`: as far as fits, cut in its second
        half before a statement as shallow as any there (a long function is not
        cut inside an `if`, a call or a string), ideally at a blank line and
        not between a comment and its statement."""
        limit = self.prefix[first] + self.max
        last = bisect.bisect_right(self.prefix, limit, first + 1, end + 2) - 2
        if last < first:
            return first
        if last >= end:
            return last
        best, best_key = last, None
        following = None  # depth of the statement the next non-blank line starts
        for row in range(last + 1, first + (last - first) // 2, -1):
            line = self.lines[row]
            if row <= last:
                # A comment stays with the statement below it.
                key = (
                    -following if following is not None else -_DEEP,
                    not line.strip(),
                    _COMMENT.match(line) is None,
                )
                if best_key is None or key > best_key:
                    best, best_key = row, key
            if line.strip() and not (following is not None and _COMMENT.match(line)):
                # A comment takes the depth of the statement it comments on.
                following = depths.get(row) if depths else 0
        return best

    def _cut_line(self, row: int, symbol: str | None, kind: str) -> list[CodeChunk]:
        """A single line longer than max_tokens, cut into pieces (minified code)."""
        line = self.lines[row]
        parts = -(-self.tokens(row, row) // self.max)
        step = -(-len(line) // parts)
        return [
            CodeChunk(line[i : i + step], row + 1, row + 1, symbol, kind, self.language)
            for i in range(0, len(line), step)
            if line[i : i + step].strip()
        ]

    def _trim(self, start: int, end: int) -> tuple[int, int]:
        while start <= end and not self.lines[start].strip():
            start += 1
        while end >= start and not self.lines[end].strip():
            end -= 1
        return start, end

    def _chunk(self, start: int, end: int, symbol: str | None, kind: str) -> list[CodeChunk]:
        start, end = self._trim(start, end)
        if start > end:
            return []
        text = "\n".join(self.lines[start : end + 1])
        return [CodeChunk(text, start + 1, end + 1, symbol, kind, self.language)]


# --- Code: tree-sitter ---------------------------------------------------------


@dataclass(frozen=True)
class _Grammar:
    """Where the units are in one tree-sitter grammar, as node types by role.

    roles: node type -> "function", "method", "class" or "namespace".
    wrappers: nodes whose first defining child is the unit (decorators,
        `export`, `const f = ...`); the unit spans the wrapper.
    bindings: node type -> (name field, value field) for a name bound to a
        function or class (`const f = () => {}`, `handler = () => {}`).
    attached: comments and attributes that belong to the unit below them.
    transparent: member lists nested inside a body (Java enum methods).
    type_names: node type -> field naming it by a type (`impl Foo<T>` -> Foo).
    receivers: node type -> field whose type qualifies it (Go `func (s *T) M`).
    declarators: node types named through their `declarator` chain (C and
        C++: `int *(*f)(void)` -> f, `Box::size` -> Box.size).
    file_scopes: declarations without a body that put the rest of the file
        in a namespace (C# `namespace A.B;`, PHP `namespace App\\Http;`).
    """

    package: str
    loader: str
    roles: dict[str, str]
    attached: frozenset[str]
    wrappers: frozenset[str] = frozenset()
    bindings: dict[str, tuple[str, str]] = field(default_factory=dict)
    transparent: frozenset[str] = frozenset()
    type_names: dict[str, str] = field(default_factory=dict)
    receivers: dict[str, str] = field(default_factory=dict)
    declarators: frozenset[str] = frozenset()
    file_scopes: frozenset[str] = frozenset()


_JS_ROLES = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "function_expression": "function",
    "function": "function",
    "generator_function": "function",
    "arrow_function": "function",
    "method_definition": "method",
    "class_declaration": "class",
    "class": "class",
}
_JS_WRAPPERS = frozenset(
    {"export_statement", "lexical_declaration", "variable_declaration", "expression_statement"}
)
_JS_BINDINGS = {
    "variable_declarator": ("name", "value"),
    "field_definition": ("property", "value"),
    "assignment_expression": ("left", "right"),
}
_TS_ROLES = _JS_ROLES | {
    "abstract_class_declaration": "class",
    "interface_declaration": "class",
    "enum_declaration": "class",
    "type_alias_declaration": "class",
    "function_signature": "function",
    "abstract_method_signature": "method",
    "internal_module": "namespace",
    "module": "namespace",
}
_TS: dict[str, Any] = dict(
    roles=_TS_ROLES,
    attached=frozenset({"comment"}),
    wrappers=_JS_WRAPPERS | {"ambient_declaration"},
    bindings=_JS_BINDINGS | {"public_field_definition": ("name", "value")},
)

_C_ROLES = {
    "function_definition": "function",
    "struct_specifier": "class",
    "union_specifier": "class",
    "enum_specifier": "class",
    "type_definition": "class",
}
# Preprocessor conditionals and `extern "C" { }` hold definitions: looked through.
_C_TRANSPARENT = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"})

_GRAMMARS: dict[str, _Grammar] = {
    "python": _Grammar(
        "tree_sitter_python",
        "language",
        roles={"function_definition": "function", "class_definition": "class"},
        attached=frozenset({"comment"}),
        wrappers=frozenset({"decorated_definition"}),
    ),
    "javascript": _Grammar(
        "tree_sitter_javascript",
        "language",
        roles=_JS_ROLES,
        attached=frozenset({"comment"}),
        wrappers=_JS_WRAPPERS,
        bindings=_JS_BINDINGS,
    ),
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript", **_TS),
    "tsx": _Grammar("tree_sitter_typescript", "language_tsx", **_TS),
    "go": _Grammar(
        "tree_sitter_go",
        "language",
        roles={
            "function_declaration": "function",
            "method_declaration": "method",
            "type_declaration": "class",
        },
        attached=frozenset({"comment"}),
        receivers={"method_declaration": "receiver"},
    ),
    "rust": _Grammar(
        "tree_sitter_rust",
        "language",
        roles={
            "function_item": "function",
            "function_signature_item": "function",
            "macro_definition": "function",
            "struct_item": "class",
            "enum_item": "class",
            "union_item": "class",
            "trait_item": "class",
            "impl_item": "class",
            "type_item": "class",
            "mod_item": "namespace",
        },
        attached=frozenset({"line_comment", "block_comment", "attribute_item"}),
        type_names={"impl_item": "type"},
    ),
    "java": _Grammar(
        "tree_sitter_java",
        "language",
        roles={
            "method_declaration": "method",
            "constructor_declaration": "method",
            "compact_constructor_declaration": "method",
            "class_declaration": "class",
            "interface_declaration": "class",
            "enum_declaration": "class",
            "record_declaration": "class",
            "annotation_type_declaration": "class",
        },
        attached=frozenset({"line_comment", "block_comment"}),
        transparent=frozenset({"enum_body_declarations"}),
    ),
    "c": _Grammar(
        "tree_sitter_c",
        "language",
        roles=_C_ROLES,
        attached=frozenset({"comment"}),
        transparent=_C_TRANSPARENT,
        declarators=frozenset({"function_definition", "type_definition"}),
    ),
    "cpp": _Grammar(
        "tree_sitter_cpp",
        "language",
        roles=_C_ROLES | {"class_specifier": "class", "namespace_definition": "namespace"},
        attached=frozenset({"comment"}),
        wrappers=frozenset({"template_declaration"}),
        transparent=_C_TRANSPARENT | {"linkage_specification", "declaration_list"},
        declarators=frozenset({"function_definition", "type_definition"}),
    ),
    "ruby": _Grammar(
        "tree_sitter_ruby",
        "language",
        roles={
            "method": "function",
            "singleton_method": "function",
            "class": "class",
            "module": "namespace",
        },
        attached=frozenset({"comment"}),
    ),
    "csharp": _Grammar(
        "tree_sitter_c_sharp",
        "language",
        roles={
            "method_declaration": "method",
            "constructor_declaration": "method",
            "destructor_declaration": "method",
            "operator_declaration": "method",
            "local_function_statement": "function",
            "class_declaration": "class",
            "struct_declaration": "class",
            "interface_declaration": "class",
            "enum_declaration": "class",
            "record_declaration": "class",
            "namespace_declaration": "namespace",
        },
        attached=frozenset({"comment"}),
        file_scopes=frozenset({"file_scoped_namespace_declaration"}),
    ),
    "php": _Grammar(
        "tree_sitter_php",
        "language_php",
        roles={
            "function_definition": "function",
            "method_declaration": "method",
            "class_declaration": "class",
            "interface_declaration": "class",
            "trait_declaration": "class",
            "enum_declaration": "class",
            "namespace_definition": "namespace",
        },
        attached=frozenset({"comment"}),
        file_scopes=frozenset({"namespace_definition"}),
    ),
}

_KINDS = {"function": "function", "method": "method", "class": "class", "namespace": "module"}
_local = threading.local()


def _parser(language: str) -> Parser | None:
    """The cached tree-sitter parser for `language`, or None if unavailable."""
    parsers: dict[str, Parser | None] = _local.__dict__.setdefault("parsers", {})
    if language not in parsers:
        try:
            import tree_sitter

            grammar = _GRAMMARS[language]
            module = importlib.import_module(grammar.package)
            pointer = getattr(module, grammar.loader)()
            parsers[language] = tree_sitter.Parser(tree_sitter.Language(pointer))
        except Exception:
            parsers[language] = None
    return parsers[language]


def _rows(node: Node) -> tuple[int, int]:
    """First and last row of a node (one ending at column 0 ends on the row above)."""
    start, end = node.start_point, node.end_point
    return start[0], end[0] - 1 if end[1] == 0 and end[0] > start[0] else end[0]


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _type_name(text: str) -> str:
    """`*Server[T]` -> Server, `&'a mut Foo<T>` -> Foo, `fmt::Display` -> Display."""
    names = re.findall(r"[A-Za-z_]\w*", re.split(r"[<\[]", text, maxsplit=1)[0])
    return names[-1] if names else text.strip()


def _declared_name(node: Node) -> str | None:
    """The name at the end of a C/C++ declarator chain (`*(*f)(int)` -> f,
    `Box<std::vector<T>>::size` -> Box.size, `~Box` -> ~Box); None if there is none."""
    for _ in range(16):  # declarators nest a few levels; never loop on a strange tree
        inner = node.child_by_field_name("declarator")
        if inner is None and node.type == "parenthesized_declarator" and node.named_child_count:
            inner = node.named_children[0]  # `(*f)`: no field name, one declarator inside
        if inner is None:
            break
        node = inner
    if node.type not in _DECLARED_NAMES:
        return None
    name, count = _text(node), 1
    while count:  # template arguments, nested ones too
        name, count = re.subn(r"<[^<>]*>", "", name)
    return re.sub(r"\s+", "", name).replace("::", ".") or None


_DECLARED_NAMES = frozenset(
    {
        "identifier",
        "field_identifier",
        "type_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
    }
)


class _CodeUnits:
    """Finds the units of one parsed source file with its grammar's tables."""

    def __init__(self, grammar: _Grammar):
        self.grammar = grammar

    @classmethod
    def find(cls, language: str, text: str) -> list[_Unit] | None:
        """Top-level units of `text`, or None if the grammar is unavailable."""
        parser = _parser(language)
        if parser is None:
            return None
        tree = parser.parse(text.encode("utf-8", "surrogatepass"))
        return cls(_GRAMMARS[language]).units(tree.root_node, None, False)

    def units(self, parent: Node, scope: str | None, in_class: bool) -> list[_Unit]:
        """Units among the children of `parent`, with attached comments, disjoint."""
        units: list[_Unit] = []
        outer = scope
        comments_from = None  # first row of the comment run just above
        comments_to = prev_end = -2
        for child in self._children(parent):
            start, end = _rows(child)
            if child.type in self.grammar.attached:
                if start <= prev_end:  # trails code on the same line
                    comments_from = None
                elif comments_from is None or start > comments_to + 1:
                    comments_from = start
                comments_to = prev_end = max(prev_end, end)
                continue
            if child.type in self.grammar.file_scopes and child.child_by_field_name("body") is None:
                # `namespace App\Billing;` (PHP), `namespace Shop.Billing;` (C#): what follows is in it.
                named = child.child_by_field_name("name")
                if named is not None:  # a second one replaces the first
                    scope = f"{outer}.{_text(named)}" if outer else _text(named)
                comments_from = None
                prev_end = max(prev_end, end)
                continue
            found = self._classify(child)
            if found:
                if comments_from is not None and comments_to >= start - 1:
                    start = comments_from
                units.append(self._unit(found, start, end, scope, in_class))
            comments_from = None
            prev_end = max(prev_end, end)
        return _disjoint(units)

    def _children(self, parent: Node) -> Iterator[Node]:
        for child in parent.named_children:
            # ERROR nodes are looked into too: the units tree-sitter recovered stay units.
            if child.type in self.grammar.transparent or child.type == "ERROR":
                yield from self._children(child)  # `#ifdef` inside `#ifndef`, `extern "C" { }`
            else:
                yield child

    def _classify(self, node: Node) -> tuple[str, str, Node] | None:
        """(name, role, definition node) if `node` defines a named unit."""
        grammar, kind = self.grammar, node.type
        if kind in grammar.wrappers:
            for child in node.named_children:
                found = self._classify(child)
                if found:
                    return found
            return None
        if kind in grammar.bindings:
            name_field, value_field = grammar.bindings[kind]
            name_node = node.child_by_field_name(name_field)
            value = node.child_by_field_name(value_field)
            if name_node is None or value is None or value.type not in grammar.roles:
                return None
            return _text(name_node), grammar.roles[value.type], value
        role = grammar.roles.get(kind)
        if role is None:
            return None
        name = self._name(node)
        return (name, role, node) if name else None

    def _name(self, node: Node) -> str | None:
        grammar = self.grammar
        if node.type in grammar.declarators:
            return _declared_name(node)
        if node.type in grammar.type_names:
            named = node.child_by_field_name(grammar.type_names[node.type])
            return _type_name(_text(named)) if named else None
        named = node.child_by_field_name("name")
        if named is None:  # Go `type ( A int; B string )`: names of the specs
            names = [
                _text(n) for c in node.named_children if (n := c.child_by_field_name("name")) is not None
            ]
            return ", ".join(names) or None
        name = _text(named).strip("\"'`")
        receiver = grammar.receivers.get(node.type)
        qualifier = node.child_by_field_name(receiver) if receiver else None
        return f"{_type_name(_text(qualifier))}.{name}" if qualifier else name

    def _unit(
        self, found: tuple[str, str, Node], start: int, end: int, scope: str | None, in_class: bool
    ) -> _Unit:
        name, role, node = found
        symbol = f"{scope}.{name}" if scope else name
        kind = "method" if role == "function" and in_class else _KINDS[role]
        body = node.child_by_field_name("body")
        members = functools.partial(self.units, body, symbol, role == "class") if body else None
        return _Unit(start, end, symbol, kind, members, functools.partial(_statement_depths, node))


def _disjoint(units: list[_Unit]) -> list[_Unit]:
    """Fold units that share a row with the previous one into it (`}; function g`)."""
    out: list[_Unit] = []
    for unit in units:
        if out and unit.start <= out[-1].end:
            prev = out[-1]
            if unit.end > prev.end:
                prev.end, prev.members = unit.end, None
                prev.symbol = f"{prev.symbol}, {unit.symbol}"
            continue
        out.append(unit)
    return out


# --- Prose: Markdown and reStructuredText headings -----------------------------

_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_RST_RULE = re.compile(r"([=\-~^\"'`#*+_:.<>])\1{2,}[ \t]*$")


def _section_units(lines: list[str], rst: bool) -> list[_Unit]:
    """Sections as nested units: each runs to the next heading of its level or higher."""
    headings = [
        (_label_above(lines, row), level, title)
        for row, level, title in (_rst_headings(lines) if rst else _markdown_headings(lines))
    ]
    top: list[_Unit] = []
    stack: list[tuple[int, _Unit, list[_Unit]]] = []  # (level, unit, its subsections)
    for i, (row, level, title) in enumerate(headings):
        # Scanning (not slicing) the headings below: each scan stops at the end of
        # its section, so the whole loop is linear (a slice each made it quadratic).
        after = (headings[j] for j in range(i + 1, len(headings)))
        end = next((r for r, lv, _ in after if lv <= level), len(lines)) - 1
        while stack and stack[-1][0] >= level:
            stack.pop()
        symbol = f"{stack[-1][1].symbol} > {title}" if stack else title
        children: list[_Unit] = []
        unit = _Unit(row, end, symbol, "section", functools.partial(list, children))
        (stack[-1][2] if stack else top).append(unit)
        stack.append((level, unit, children))
    return top


def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(row, level, title) of ATX and setext headings outside code fences."""
    headings = []
    fence = ""
    start = _front_matter_end(lines)
    for row in range(start, len(lines)):
        line = lines[row]
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = ""
            continue
        if opener:
            fence = opener.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((row, len(atx.group(1)), _heading_text(atx.group(2))))
        elif line.strip() and row + 1 < len(lines) and (rule := _SETEXT.match(lines[row + 1])):
            if not _SETEXT.match(line) and not line.lstrip().startswith(("-", "*", "|", ">")):
                headings.append((row, 1 if rule.group(1)[0] == "=" else 2, line.strip()))
    return headings


# Cross-reference targets written above a heading: MyST `(shell-completion)=`, reST `.. _api:`.
_LABEL = re.compile(r"[ \t]*(?:\([^()\s]+\)=|\.\. _[^:]+:)[ \t]*$")


def _label_above(lines: list[str], row: int) -> int:
    """The first row of the labels just above heading `row` (blank lines between
    allowed), else `row`: click's docs open with `(label)=`, once a chunk alone."""
    first, above = row, row - 1
    while above >= 0 and (not lines[above].strip() or _LABEL.match(lines[above])):
        if lines[above].strip():
            first = above
        above -= 1
    return first


_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def _heading_text(title: str) -> str:
    """A heading as read: images and links by their text (rack's README is titled
    `# ![Rack](contrib/logo.webp)`, which prefixed every section's name)."""
    return _IMAGE_OR_LINK.sub(r"\1", title).strip() or title.strip()


def _front_matter_end(lines: list[str]) -> int:
    """Row after a leading `---` YAML front matter block (0 if there is none)."""
    if lines and lines[0].strip() == "---":
        for row in range(1, len(lines)):
            if lines[row].strip() in ("---", "..."):
                return row + 1
    return 0


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(row, level, title) of underlined (optionally overlined) reST titles.

    reST has no fixed levels: each new adornment style is one level deeper.
    """
    styles: list[tuple[str, bool]] = []
    headings = []
    row = 0
    while row + 1 < len(lines):
        title, rule = lines[row].strip(), lines[row + 1].rstrip()
        if title and not _RST_RULE.match(lines[row]) and _RST_RULE.match(rule) and len(rule) >= len(title):
            over = row > 0 and lines[row - 1].rstrip() == rule
            style = (rule[0], over)
            if style not in styles:
                styles.append(style)
            headings.append((row - 1 if over else row, styles.index(style) + 1, title))
            row += 2
        else:
            row += 1
    return headings
