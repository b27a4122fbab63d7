"""Tests for lore.index.chunker: logical-unit chunking of source and prose."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lore.index import chunker
from lore.index.chunker import CodeChunk, chunk_file, language_for
from lore.index.tokens import count_tokens

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

PYTHON = '''\
"""Billing helpers."""

import decimal

RATE = decimal.Decimal("0.2")


# Tax is charged on the net amount.
@functools.cache
def tax(amount):
    """Return the tax due on `amount`."""
    return amount * RATE


class Invoice:
    """An invoice with lines."""

    currency = "EUR"

    def __init__(self, lines):
        self.lines = lines

    # Sum of the lines, before tax.
    def total(self):
        def line_total(line):
            return line.price * line.qty
        return sum(map(line_total, self.lines))
'''

JAVASCRIPT = """\
import { api } from "./api";

/**
 * Fetch a user by id.
 */
export async function getUser(id) {
  return api.get(`/users/${id}`);
}

export const formatName = (user) =>
  `${user.first} ${user.last}`;

export class UserStore {
  users = new Map();

  // Cache a user.
  add(user) {
    this.users.set(user.id, user);
  }

  get(id) {
    return this.users.get(id);
  }
}
"""

TYPESCRIPT = """\
export interface User {
  id: number;
  name: string;
}

type UserId = User["id"];

export enum Role {
  Admin,
  Guest,
}

/** Repository of users. */
export class UserRepo {
  private users: User[] = [];

  constructor(private readonly db: Db) {}

  find(id: UserId): User | undefined {
    return this.users.find((u) => u.id === id);
  }
}

export function isAdmin(role: Role): boolean {
  return role === Role.Admin;
}
"""

TSX = """\
import React from "react";

type Props = { title: string };

// The page header.
export const Header = ({ title }: Props) => (
  <header className="top">
    <h1>{title}</h1>
  </header>
);

export default function App() {
  const onClick = () => alert("hi");
  return <Header title="Lore" onClick={onClick} />;
}
"""

GO = """\
package store

import "sync"

// Store keeps values in memory.
type Store struct {
	mu   sync.Mutex
	data map[string]string
}

// Get returns the value for key.
func (s *Store) Get(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[key]
}

func New() *Store {
	return &Store{data: map[string]string{}}
}
"""

RUST = """\
use std::collections::HashMap;

/// A cache of computed values.
#[derive(Debug, Default)]
pub struct Cache {
    values: HashMap<String, u64>,
}

impl Cache {
    /// Look a value up.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.values.get(key).copied()
    }

    pub fn put(&mut self, key: String, value: u64) {
        self.values.insert(key, value);
    }
}

pub trait Store {
    fn load(&self) -> Cache;
}

fn main() {
    let _ = Cache::default();
}
"""

JAVA = """\
package app;

import java.util.List;

/** A shopping cart. */
public class Cart {
    private final List<Item> items;

    public Cart(List<Item> items) {
        this.items = items;
    }

    /** Total price in cents. */
    @Override
    public long total() {
        return items.stream().mapToLong(Item::price).sum();
    }

    static class Item {
        long price() { return 0; }
    }
}
"""

C = """\
#include <stdlib.h>

/* A growable buffer. */
struct buffer {
    char *data;
    size_t len;
};

typedef struct {
    int code;
} status;

/* Append `n` bytes to `buf`. */
static int buffer_append(struct buffer *buf, const char *bytes, size_t n)
{
    buf->data = realloc(buf->data, buf->len + n);
    buf->len += n;
    return 0;
}

#ifdef WITH_DEBUG
char *buffer_dump(const struct buffer *buf) {
    return buf->data;
}
#endif
"""

CPP = """\
#include <vector>

namespace geo {

// A 2-D shape.
class Shape {
public:
    virtual ~Shape() = default;

    // Area in square units.
    virtual double area() const {
        return 0.0;
    }

    double scaled(double k) const {
        return area() * k * k;
    }
};

template <typename T>
T clamp(T v, T lo, T hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

double Circle::area() const {
    return 3.14159 * r * r;
}

}  // namespace geo
"""

RUBY = """\
require "set"

module Shop
  # A shopping cart.
  class Cart
    def initialize(items)
      @items = items
    end

    # Total price in cents.
    def total
      @items.sum(&:price)
    end

    def self.empty
      new([])
    end
  end
end
"""

CSHARP = """\
using System.Collections.Generic;

namespace Shop.Billing
{
    /// <summary>A shopping cart.</summary>
    public class Cart
    {
        private readonly List<Item> items;

        public Cart(List<Item> items)
        {
            this.items = items;
        }

        /// <summary>Total price in cents.</summary>
        public long Total()
        {
            long sum = 0;
            foreach (var item in items) { sum += item.Price; }
            return sum;
        }
    }

    public interface IPriced { long Price { get; } }
}
"""

PHP = """\
<?php

namespace App\\Billing;

use App\\Models\\Item;

/** A shopping cart. */
class Cart
{
    private array $items;

    public function __construct(array $items)
    {
        $this->items = $items;
    }

    /** Total price in cents. */
    public function total(): int
    {
        return array_sum(array_map(fn ($i) => $i->price, $this->items));
    }
}

function format_cents(int $cents): string
{
    return number_format($cents / 100, 2);
}
"""


def _chunks(tmp_path: Path, name: str, source: str, **options) -> list[CodeChunk]:
    """Chunk a real file, checking the invariants every chunk must keep."""
    path = tmp_path / name
    path.write_bytes(source.encode("utf-8"))
    text = path.read_bytes().decode("utf-8")
    chunks = chunk_file(name, text, **options)
    lines = text.replace("\r\n", "\n").split("\n")
    for chunk in chunks:
        assert chunk.text.strip(), chunk
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        if chunk.start_line != chunk.end_line or chunk.text == lines[chunk.start_line - 1]:
            assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        else:  # a piece of a single over-long line
            assert chunk.text in lines[chunk.start_line - 1]
    return chunks


def _table(chunks: list[CodeChunk]) -> list[tuple[str | None, str, int, int]]:
    return [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks]


def _covered(chunks: list[CodeChunk]) -> set[int]:
    return {n for c in chunks for n in range(c.start_line, c.end_line + 1)}


def _non_blank(source: str) -> set[int]:
    return {n for n, line in enumerate(source.split("\n"), 1) if line.strip()}


# --- One small file per language: units, qualified names, exact lines ----------

UNITS = {
    "billing.py": (
        PYTHON,
        [
            (None, "module", 1, 5),
            ("tax", "function", 8, 12),
            ("Invoice", "class", 15, 27),
        ],
    ),
    "users.js": (
        JAVASCRIPT,
        [
            (None, "module", 1, 1),
            ("getUser", "function", 3, 8),
            ("formatName", "function", 10, 11),
            ("UserStore", "class", 13, 24),
        ],
    ),
    "repo.ts": (
        TYPESCRIPT,
        [
            ("User", "class", 1, 4),
            ("UserId", "class", 6, 6),
            ("Role", "class", 8, 11),
            ("UserRepo", "class", 13, 22),
            ("isAdmin", "function", 24, 26),
        ],
    ),
    "app.tsx": (
        TSX,
        [
            (None, "module", 1, 1),
            ("Props", "class", 3, 3),
            ("Header", "function", 5, 10),
            ("App", "function", 12, 15),
        ],
    ),
    "store.go": (
        GO,
        [
            (None, "module", 1, 3),
            ("Store", "class", 5, 9),
            ("Store.Get", "method", 11, 16),
            ("New", "function", 18, 20),
        ],
    ),
    "cache.rs": (
        RUST,
        [
            (None, "module", 1, 1),
            ("Cache", "class", 3, 7),
            ("Cache", "class", 9, 18),
            ("Store", "class", 20, 22),
            ("main", "function", 24, 26),
        ],
    ),
    "Cart.java": (
        JAVA,
        [
            (None, "module", 1, 3),
            ("Cart", "class", 5, 22),
        ],
    ),
    "buffer.c": (
        C,
        [
            (None, "module", 1, 1),
            ("buffer", "class", 3, 7),
            ("status", "class", 9, 11),
            ("buffer_append", "function", 13, 19),
            (None, "module", 21, 21),  # #ifdef: the function inside is still a unit; #endif joins it
            ("buffer_dump", "function", 22, 25),
        ],
    ),
    "shapes.cpp": (CPP, [(None, "module", 1, 1), ("geo", "module", 3, 29)]),
    "cart.rb": (RUBY, [(None, "module", 1, 1), ("Shop", "module", 3, 19)]),
    "Cart.cs": (CSHARP, [(None, "module", 1, 1), ("Shop.Billing", "module", 3, 25)]),
    "Cart.php": (  # `namespace App\Billing;` puts the rest of the file in it
        PHP,
        [
            (None, "module", 1, 5),
            ("App\\Billing.Cart", "class", 7, 22),
            ("App\\Billing.format_cents", "function", 24, 27),
        ],
    ),
}

# The same files with max_tokens=40: classes and impl blocks split into a
# header chunk and their methods, methods qualified by their class.
SPLIT = {
    "billing.py": [
        ("Invoice", "class", 15, 18),
        ("Invoice.__init__", "method", 20, 21),
        ("Invoice.total", "method", 23, 27),
    ],
    "users.js": [
        ("UserStore", "class", 13, 14),
        ("UserStore.add", "method", 16, 19),
        ("UserStore.get", "method", 21, 24),
    ],
    "repo.ts": [
        ("UserRepo", "class", 13, 15),
        ("UserRepo.constructor", "method", 17, 17),
        ("UserRepo.find", "method", 19, 22),
    ],
    "cache.rs": [
        ("Cache", "class", 9, 9),
        ("Cache.get", "method", 10, 13),
        ("Cache.put", "method", 15, 18),
    ],
    "Cart.java": [
        ("Cart", "class", 5, 7),
        ("Cart.Cart", "method", 9, 11),
        ("Cart.total", "method", 13, 17),
        ("Cart.Item", "class", 19, 22),
    ],
    # Namespaces, templates, destructors and out-of-class definitions (`Circle::area`);
    # the closing `}  // namespace geo` joins the unit above it.
    "shapes.cpp": [
        ("geo", "module", 3, 3),
        ("geo.Shape", "class", 5, 7),
        ("geo.Shape.~Shape", "method", 8, 8),
        ("geo.Shape.area", "method", 10, 13),
        ("geo.Shape.scaled", "method", 15, 18),
        ("geo.clamp", "function", 20, 23),
        ("geo.Circle.area", "function", 25, 29),
    ],
    # Ruby's `end` lines join the unit above; `def self.empty` is a method too.
    "cart.rb": [
        ("Shop", "module", 3, 3),
        ("Shop.Cart", "class", 4, 5),  # its comment opens it
        ("Shop.Cart.initialize", "method", 6, 8),
        ("Shop.Cart.total", "method", 10, 13),
        ("Shop.Cart.empty", "method", 15, 19),
    ],
    "Cart.cs": [
        ("Shop.Billing", "module", 3, 4),
        ("Shop.Billing.Cart", "class", 5, 8),
        ("Shop.Billing.Cart.Cart", "method", 10, 13),
        ("Shop.Billing.Cart.Total", "method", 15, 19),
        ("Shop.Billing.Cart.Total", "method", 19, 22),
        ("Shop.Billing.IPriced", "class", 24, 25),
    ],
    "Cart.php": [
        ("App\\Billing.Cart", "class", 7, 10),
        ("App\\Billing.Cart.__construct", "method", 12, 15),
        ("App\\Billing.Cart.total", "method", 17, 22),
    ],
}

LANGUAGES = {
    "billing.py": "python",
    "users.js": "javascript",
    "repo.ts": "typescript",
    "app.tsx": "tsx",
    "store.go": "go",
    "cache.rs": "rust",
    "Cart.java": "java",
    "buffer.c": "c",
    "shapes.cpp": "cpp",
    "cart.rb": "ruby",
    "Cart.cs": "csharp",
    "Cart.php": "php",
}


@pytest.mark.parametrize("name", UNITS)
def test_each_language_yields_its_units_with_exact_lines(tmp_path, name):
    source, expected = UNITS[name]
    chunks = _chunks(tmp_path, name, source, min_tokens=0)
    assert _table(chunks) == expected
    assert {c.language for c in chunks} == {LANGUAGES[name]}


@pytest.mark.parametrize("name", SPLIT)
def test_a_class_over_max_tokens_splits_into_header_and_methods(tmp_path, name):
    source, units = UNITS[name]
    table = _table(_chunks(tmp_path, name, source, min_tokens=0, max_tokens=40))
    first, last = SPLIT[name][0][2], SPLIT[name][-1][3]
    assert [row for row in table if first <= row[2] <= last] == SPLIT[name]
    # Units that fit are untouched.
    assert [u for u in units if u[3] < first or u[2] > last] == [
        row for row in table if row[3] < first or row[2] > last
    ]


def test_nested_functions_are_qualified_by_their_parent(tmp_path):
    chunks = _chunks(tmp_path, "billing.py", PYTHON, min_tokens=0, max_tokens=20)
    assert _table(chunks)[-3:] == [
        ("Invoice.total", "method", 23, 24),
        ("Invoice.total.line_total", "function", 25, 26),
        ("Invoice.total", "method", 27, 27),
    ]
    tsx = _chunks(tmp_path, "app.tsx", TSX, min_tokens=0, max_tokens=20)
    assert ("App.onClick", "function", 13, 13) in _table(tsx)


@pytest.mark.parametrize(
    "name, line, marker",
    [
        ("billing.py", 8, "# Tax is charged"),
        ("users.js", 3, "/**"),
        ("repo.ts", 13, "/** Repository of users. */"),
        ("store.go", 11, "// Get returns"),
        ("cache.rs", 3, "/// A cache"),
        ("Cart.java", 13, "/** Total price"),
    ],
)
def test_chunks_start_with_their_comments_and_docstrings(tmp_path, name, line, marker):
    source = UNITS[name][0]
    chunks = _chunks(tmp_path, name, source, min_tokens=0, max_tokens=40)
    chunk = next(c for c in chunks if c.start_line == line)
    assert chunk.text.lstrip().startswith(marker)


def test_python_chunk_holds_decorator_signature_and_docstring(tmp_path):
    chunk = _chunks(tmp_path, "billing.py", PYTHON, min_tokens=0)[1]
    assert chunk.text.splitlines()[1:4] == [
        "@functools.cache",
        "def tax(amount):",
        '    """Return the tax due on `amount`."""',
    ]


def test_rust_attributes_and_go_receivers(tmp_path):
    rust = _chunks(tmp_path, "cache.rs", RUST, min_tokens=0)[1]
    assert rust.text.splitlines()[:3] == [
        "/// A cache of computed values.",
        "#[derive(Debug, Default)]",
        "pub struct Cache {",
    ]
    source = "package p\n\nfunc (s *Server[T]) Run() {}\n\nfunc (Server[T]) Stop() {}\n"
    assert [c.symbol for c in _chunks(tmp_path, "s.go", source, min_tokens=0)] == [
        None,
        "Server.Run",
        "Server.Stop",
    ]


def test_javascript_bindings_and_commonjs_exports(tmp_path):
    source = (
        "module.exports.parse = function (text) {\n  return text;\n};\n"
        "\n"
        "class Button {\n  onClick = () => {\n    this.clicked = true;\n  };\n}\n"
    )
    table = _table(_chunks(tmp_path, "b.js", source, min_tokens=0, max_tokens=15))
    assert table[0] == ("module.exports.parse", "function", 1, 3)
    assert ("Button.onClick", "method", 6, 9) in table


# --- Merging and splitting -----------------------------------------------------


def test_tiny_neighbours_merge_into_one_chunk(tmp_path):
    source = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(5))
    chunks = _chunks(tmp_path, "small.py", source)
    assert _table(chunks) == [("f0, f1, f2, f3, f4", "function", 1, 18)]


def test_merging_stops_at_a_large_unit_and_mixed_kinds_are_module(tmp_path):
    body = "".join(f"    total += compute_value(item, {i}) * weight\n" for i in range(30))
    source = (
        "import os\n\n\ndef a():\n    return 1\n\n\n"
        f"def big(items):\n    total = 0\n{body}    return total\n\n\n"
        "def b():\n    return 2\n\n\ndef c():\n    return 3\n"
    )
    table = _table(_chunks(tmp_path, "mix.py", source, max_tokens=500))
    assert table == [("a", "module", 1, 5), ("big", "function", 8, 40), ("b, c", "function", 43, 48)]


def test_huge_function_splits_into_overlapping_windows(tmp_path):
    body = "".join(f"    value_{i} = compute(value_{i - 1}, factor={i})\n" for i in range(1, 201))
    source = f"import math\n\n\n# Big one.\ndef huge(value_0):\n{body}    return value_200\n"
    chunks = _chunks(tmp_path, "huge.py", source, max_tokens=200, overlap_tokens=30)
    windows = [c for c in chunks if c.symbol == "huge"]
    assert len(windows) > 5
    assert all(c.kind == "function" for c in windows)
    assert windows[0].start_line == 4 and windows[0].text.startswith("# Big one.\ndef huge")
    assert windows[-1].end_line == 206
    for prev, nxt in zip(windows, windows[1:]):
        assert prev.start_line < nxt.start_line <= prev.end_line  # overlap, progress
        overlap = "\n".join(prev.text.split("\n")[nxt.start_line - prev.start_line :])
        assert 0 < count_tokens(overlap) <= 30
    for window in windows:
        assert count_tokens(window.text) <= 200 + 20
    assert _covered(chunks) == _non_blank(source)


PY_STEP = """\
    # Step {i}: clamp the running value.
    if value > {i}:
        value = compute(value, {i}, {i} * 3)
        value = adjust(value, {i} * 7)
    else:
        value = rescue(value, {i})
"""
GO_STEP = """\
\t// Step {i}: clamp the running value.
\tif value > {i} {{
\t\tvalue = compute(value, {i}, {i}*3)
\t\tvalue = adjust(value, {i}*7)
\t}} else {{
\t\tvalue = rescue(value, {i})
\t}}
"""


@pytest.mark.parametrize(
    ("name", "source", "statement"),
    [
        (
            "steps.py",
            "def long_one(value):\n" + "".join(PY_STEP.format(i=i) for i in range(40)) + "    return value\n",
            "    # Step",
        ),
        (
            "steps.go",
            "package p\n\nfunc longOne(value int) int {\n"
            + "".join(GO_STEP.format(i=i) for i in range(40))
            + "\treturn value\n}\n",
            "\t// Step",
        ),
    ],
)
def test_a_long_function_is_cut_between_its_own_statements(tmp_path, name, source, statement):
    """Windows of an over-long function end where one of its own statements
    does: not inside an `if`, before its `else`, or between a comment and the
    statement it belongs to (it ended anywhere that fit, or at a blank line)."""
    chunks = [
        c for c in _chunks(tmp_path, name, source, max_tokens=200, overlap_tokens=30) if c.kind == "function"
    ]
    assert len(chunks) > 4
    lines = source.split("\n")
    for chunk in chunks[:-1]:
        assert lines[chunk.end_line].startswith(statement), (chunk.end_line, lines[chunk.end_line])


def test_an_over_long_line_is_cut_into_pieces(tmp_path):
    line = ";".join(f"var a{i}=b{i}+c{i}" for i in range(2000))
    chunks = _chunks(tmp_path, "bundle.js", line + "\n", max_tokens=500)
    assert len(chunks) > 5
    assert all(c.start_line == c.end_line == 1 for c in chunks)
    assert "".join(c.text for c in chunks) == line
    assert max(count_tokens(c.text) for c in chunks) < 700


# --- Markdown and plain text -----------------------------------------------------

MARKDOWN = """\
---
title: Lore
---
Intro text.

# Lore

Some words.

## Install

```sh
# not a heading
pip install lore
```

### From source

Clone it.

Usage
-----

Run it.

# Other
"""


def test_markdown_sections_follow_the_heading_tree(tmp_path):
    chunks = _chunks(tmp_path, "README.md", MARKDOWN, min_tokens=0, max_tokens=12)
    assert _table(chunks) == [
        (None, "section", 1, 4),
        ("Lore", "section", 6, 8),
        ("Lore > Install", "section", 10, 15),
        ("Lore > Install > From source", "section", 17, 19),
        ("Lore > Usage", "section", 21, 24),
        ("Other", "section", 26, 26),
    ]
    assert {c.language for c in chunks} == {"markdown"}


def test_markdown_headings_are_named_by_their_text_not_their_image_or_link_markup(tmp_path):
    source = "# ![Rack](contrib/logo.webp)\n\nIntro.\n\n## Configuration of [Rack](https://rack.github.io)\n\nText.\n"
    source += "\n## ![](badge.svg)\n\nBadges.\n"
    chunks = _chunks(tmp_path, "README.md", source, min_tokens=0, max_tokens=30)
    assert [c.symbol for c in chunks] == [
        "Rack",
        "Rack > Configuration of Rack",
        "Rack > ![](badge.svg)",  # nothing but markup: kept as written, never an empty name
    ]


def test_a_label_above_a_heading_belongs_to_its_section(tmp_path):
    """Click's docs open with a MyST target, `(shell-completion)=`: that line was a
    chunk alone, the top hit of `lore code` for shell completion, with nothing in it."""
    body = "\n\n".join(f"Completion detail {i} for bash, zsh and fish." for i in range(12))
    source = f"(shell-completion)=\n\n# Shell Completion\n\n{body}\n\n(enabling)=\n## Enabling\n\n{body}\n"
    chunks = _chunks(tmp_path, "shell-completion.md", source, max_tokens=200)
    assert chunks[0].start_line == 1 and chunks[0].symbol == "Shell Completion", _table(chunks)
    assert all(c.text.strip() != "(shell-completion)=" for c in chunks)
    enabling = next(c for c in chunks if c.symbol == "Shell Completion > Enabling")
    assert enabling.text.startswith("(enabling)=\n## Enabling"), enabling.text[:40]
    rst = "Intro text.\n\n.. _api:\n\nAPI\n===\n\nText here.\n"
    assert _table(_chunks(tmp_path, "api.rst", rst, min_tokens=0)) == [
        (None, "section", 1, 1),
        ("API", "section", 3, 8),
    ]


def test_markdown_section_that_fits_is_one_chunk_and_small_ones_merge(tmp_path):
    assert _table(_chunks(tmp_path, "README.md", MARKDOWN, min_tokens=0)) == [
        (None, "section", 1, 4),
        ("Lore", "section", 6, 24),
        ("Other", "section", 26, 26),
    ]
    assert _table(_chunks(tmp_path, "README.md", MARKDOWN)) == [("Lore, Other", "section", 1, 26)]


def test_oversized_markdown_section_splits_with_overlap(tmp_path):
    paragraphs = "\n\n".join(f"Paragraph {i} explains one more detail of the setup." for i in range(60))
    chunks = _chunks(tmp_path, "guide.md", f"# Guide\n\n{paragraphs}\n", max_tokens=100)
    assert {c.symbol for c in chunks} == {"Guide"}
    assert len(chunks) > 5
    assert chunks[0].start_line == 1
    assert all(a.start_line < b.start_line <= a.end_line + 1 for a, b in zip(chunks, chunks[1:]))


def test_rst_titles_are_sections(tmp_path):
    source = "=====\nTitle\n=====\n\nIntro.\n\nSection\n-------\n\nText.\n\nOther\n-----\nx\n"
    table = _table(_chunks(tmp_path, "index.rst", source, min_tokens=0, max_tokens=8))
    assert table == [
        ("Title", "section", 1, 5),
        ("Title > Section", "section", 7, 10),
        ("Title > Other", "section", 12, 14),
    ]


def test_plain_text_is_cut_into_overlapping_line_windows(tmp_path):
    source = "".join(f"line {i} of the notes, with a few words\n" for i in range(300))
    chunks = _chunks(tmp_path, "notes.txt", source, max_tokens=100, overlap_tokens=20)
    assert {(c.kind, c.symbol, c.language) for c in chunks} == {("lines", None, "text")}
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 300
    assert all(a.start_line < b.start_line <= a.end_line for a, b in zip(chunks, chunks[1:]))


# --- Robustness ------------------------------------------------------------------


@pytest.mark.parametrize("source", ["", "   \n\n\t\n"])
@pytest.mark.parametrize("name", ["a.py", "a.md", "a.txt", "a.go"])
def test_empty_or_blank_files_yield_nothing(tmp_path, name, source):
    assert _chunks(tmp_path, name, source) == []


@pytest.mark.parametrize(
    "name, source, good",
    [
        (
            "broken.py",
            "def ok():\n    return 1\n\ndef broken(:\n    x = [1, 2\n    return x\n\n"
            "class Fine:\n    def m(self):\n        pass\n",
            ("ok", 1, 2),
        ),
        (
            "broken.js",
            "function ok() { return 1 }\n\nfunction broken( {\n  const x = [1, 2\n"
            "  return x\n}}}\n\nclass Fine { m() {} }\n",
            ("Fine", 8, 8),
        ),
        ("broken.rs", "fn ok() -> u8 { 1 }\n\nimpl Broken for {\n  fn x(&self { }\n", ("ok", 1, 1)),
    ],
)
def test_broken_source_keeps_good_units_and_covers_every_line(tmp_path, name, source, good):
    chunks = _chunks(tmp_path, name, source, min_tokens=0)
    assert good in [(c.symbol, c.start_line, c.end_line) for c in chunks]
    assert _covered(chunks) >= _non_blank(source)


def test_missing_grammar_falls_back_to_line_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(chunker, "_parser", lambda language: None)
    chunks = _chunks(tmp_path, "store.go", GO)
    assert _table(chunks) == [(None, "lines", 1, 20)]
    assert chunks[0].language == "go"


def test_crlf_line_endings_keep_line_numbers_and_drop_carriage_returns(tmp_path):
    source = "import os\r\n\r\n\r\ndef a():\r\n    return 1\r\n"
    chunks = _chunks(tmp_path, "crlf.py", source, min_tokens=0)
    assert _table(chunks) == [(None, "module", 1, 1), ("a", "function", 4, 5)]
    assert "\r" not in chunks[1].text


def test_language_for_maps_extensions():
    assert language_for("src/app.py") == "python"
    assert language_for("web/App.JSX") == "javascript"
    assert language_for("lib/x.mjs") == "javascript"
    assert language_for("types/index.d.ts") == "typescript"
    assert language_for("ui/Page.tsx") == "tsx"
    assert language_for("main.go") == "go"
    assert language_for("lib.rs") == "rust"
    assert language_for("A.java") == "java"
    assert language_for("README.md") == "markdown"
    assert language_for("docs/index.rst") == "rst"
    assert language_for("src/jv.c") == language_for("src/jv.h") == "c"
    assert language_for("geo/Shape.HPP") == language_for("a.cc") == "cpp"
    assert language_for("lib/rack.rb") == language_for("rack.gemspec") == "ruby"
    assert language_for("Cart.cs") == "csharp" and language_for("index.php") == "php"
    assert language_for("App.kt") == "kotlin" and language_for("run.sh") == "shell"  # labelled, windows
    assert language_for("notes.txt") is None
    assert language_for("Makefile") is None
    assert language_for("dir.d/file") is None


def test_language_names_take_common_aliases():
    assert chunker.language_name("JS") == "javascript"
    assert chunker.language_name("c++") == chunker.language_name("cpp") == "cpp"
    assert chunker.language_name("C#") == "csharp" and chunker.language_name("rb") == "ruby"
    assert chunker.language_name("text") == "text"
    assert chunker.language_name("jsx") == "javascript" and chunker.language_name("h") == "c"
    assert chunker.language_name("hpp") == "cpp" and chunker.language_name("zsh") == "shell"
    assert chunker.language_family("typescript") == ["typescript", "tsx"]
    assert chunker.language_name("cobol") is None


def test_c_units_inside_nested_conditionals_and_extern_blocks(tmp_path):
    source = (
        "#ifndef SHAPES_H\n#define SHAPES_H\n#ifdef WITH_AREA\n"
        "static int guarded(void) { return 1; }\n#endif\n#endif\n"
        'extern "C" { int get_handler(void) { return 0; } }\n'
        "int *(*get_fp(int x))(void) { return 0; }\n"
        "template <typename T> int Box<std::vector<T>>::size() { return 1; }\n"
    )
    symbols = [c.symbol for c in _chunks(tmp_path, "shapes.cpp", source, min_tokens=0)]
    assert symbols == [None, "guarded", "get_handler", "get_fp", "Box.size"]


def test_a_file_scoped_namespace_qualifies_what_follows(tmp_path):
    source = "using System;\n\nnamespace Shop.Billing;\n\n/// A cart.\npublic class Cart\n{\n    public long Total() { return 0; }\n}\n"
    table = _table(_chunks(tmp_path, "Cart.cs", source, min_tokens=0, max_tokens=20))
    assert table == [(None, "module", 1, 3), ("Shop.Billing.Cart", "class", 5, 9)]


def test_every_language_the_chunker_knows_is_in_the_current_chunker_version():
    """Adding a language means bumping CHUNKER_VERSION (indexes chunk its
    files again) and listing what the new version knows."""
    from lore.index.code_sync import CHUNKER_LANGUAGES, CHUNKER_VERSION

    assert set(chunker._EXTENSIONS.values()) | {"notebook"} == CHUNKER_LANGUAGES[CHUNKER_VERSION]


def test_a_declarator_chain_names_c_functions(tmp_path):
    source = "char **split(const char *s, int *n) {\n  return 0;\n}\n\nstatic const struct op *find_op(int c) {\n  return 0;\n}\n"
    assert [c.symbol for c in _chunks(tmp_path, "ops.c", source, min_tokens=0)] == ["split", "find_op"]


def test_importing_the_chunker_does_not_import_tree_sitter():
    code = "import sys, lore.index.chunker; sys.exit('tree_sitter' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_markdown_file_of_many_headings_is_chunked_whole():
    # Each heading's section was once found by slicing the list of headings below
    # it: quadratic, 200,000 headings (800 KB) took minutes. How the time grows is
    # measured by bench/chunk_growth.py (a timing here failed on a busy machine);
    # this checks that every line of such a file lands in exactly one chunk.
    text = "# h\n" * 20_000
    chunks = chunk_file("notes.md", text)
    lines = text.split("\n")
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 20_000
    assert all(a.end_line + 1 == b.start_line for a, b in zip(chunks, chunks[1:]))
    assert all(c.text == "\n".join(lines[c.start_line - 1 : c.end_line]) for c in chunks)


def test_a_file_with_classic_mac_line_ends_is_chunked_by_its_lines():
    functions = [
        "\r".join(
            [f"def handler_{i}(event):", *(f"    step_{j} = event.get('k{j}') or {j}" for j in range(20)), ""]
        )
        for i in range(3)
    ]
    text = "\r".join(functions)  # CR only, no "\n" anywhere
    chunks = chunk_file("handlers.py", text)
    assert [c.symbol for c in chunks] == ["handler_0", "handler_1", "handler_2"]
    lines = text.split("\r")
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.text.startswith(f"def {chunk.symbol}(event):")


def test_a_long_run_of_punctuation_after_a_space_is_cut_like_any_long_line():
    # " " + 300,000 braces was priced as one token, so it stayed one 300 KB chunk
    # (an embedding API refuses such a text; a pack's budget let it through).
    text = "<?php " + "{" * 300_000
    chunks = chunk_file("page.php", text)
    assert len(chunks) > 100 and max(len(c.text) for c in chunks) < 5_000
    assert "".join(c.text for c in chunks) == text
    assert count_tokens(" " + "}" * 10_000) >= 1_000


def test_a_long_run_of_whitespace_inside_a_line_is_priced_by_its_length():
    # 100,000 tabs are ~6,250 cl100k tokens; priced as one, the line stayed one 100 KB chunk.
    text = "x = 1" + "\t" * 100_000 + "# end\n"
    assert count_tokens(text) > 5_000
    chunks = chunk_file("pad.py", text)
    assert len(chunks) > 1 and max(len(c.text) for c in chunks) < 10_000
    assert count_tokens("        return x\n") == count_tokens("    return x\n")  # indentation: unchanged


def test_a_long_run_of_blank_lines_between_two_lines_is_not_one_chunk():
    # Blank lines cost nothing, so 300,000 of them (~9,000 real tokens of newlines)
    # between two lines of text made one chunk an embedding API refuses.
    text = "first = 1" + "\n" * 300_000 + "last = 2\n"
    chunks = chunk_file("gap.py", text)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [
        (1, 1, "first = 1"),
        (300_001, 300_001, "last = 2"),
    ]


def test_a_divider_comment_opens_the_definition_below_it(tmp_path):
    """`# -- anchors ----` a blank line above a method was a one-line chunk named
    after the class: `lore code SQLiteStore` found three dividers before the class."""
    body = "".join(f"        total += {n} * value\n" for n in range(12))
    source = (
        "import os\n\n\n"
        "class Store:\n"
        "    # -- reading --------------------------------\n\n"
        f"    def read(self, value):\n        total = 0\n{body}        return total\n\n"
        "    # -- writing --------------------------------\n\n"
        f"    def write(self, value):\n        total = 1\n{body}        return total\n"
    )
    chunks = _chunks(tmp_path, "store.py", source, min_tokens=20, max_tokens=120)
    assert not [
        c
        for c in chunks
        if all(not line.strip() or line.strip().startswith("#") for line in c.text.splitlines())
    ]
    by_symbol = {c.symbol: c for c in chunks}
    assert by_symbol["Store.read"].text.lstrip().startswith("# -- reading")
    assert by_symbol["Store.write"].text.lstrip().startswith("# -- writing")
    assert _covered(chunks) >= _non_blank(source)


def test_a_preprocessor_line_is_no_comment_to_fold(tmp_path):
    body = "".join(f"    total += {n};\n" for n in range(12))
    source = f"#include <stdio.h>\n\nint add(int value) {{\n    int total = 0;\n{body}    return total;\n}}\n"
    chunks = _chunks(tmp_path, "add.c", source, min_tokens=5, max_tokens=120)
    assert not any(c.text.startswith("#include") and "int add" in c.text for c in chunks)


def _notebook(cells: list[dict], metadata: dict | None = None, indent: int | None = 1) -> str:
    import json

    full = [{"metadata": {}, **cell} for cell in cells]
    for cell in full:
        if cell["cell_type"] == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    meta = {"kernelspec": {"language": "python", "name": "python3"}} if metadata is None else metadata
    return json.dumps({"cells": full, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=indent)


def test_a_notebook_is_chunked_by_its_cells_in_its_kernels_language_at_the_notebooks_lines():
    """A notebook was left out (or, named by `include`, JSON cut into line
    windows: its code's words split across escaped strings, its plots' base64
    indexed). Its cells' source is chunked as code and Markdown, and each
    chunk cites the lines of the .ipynb holding it, so an agent opening
    `analysis.ipynb:36` lands on that code."""
    plot = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo" * 500}, "metadata": {}}
    text = _notebook(
        [
            {"cell_type": "markdown", "source": ["# Churn model\n", "\n", "We predict churn from usage."]},
            {
                "cell_type": "code",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ['"source": [\n']}, plot],
                "source": ["import pandas as pd\n", 'df = pd.read_csv("usage.csv")'],
            },
            {
                "cell_type": "code",
                "source": [
                    "def churn_score(row):\n",
                    '    """Score one customer."""\n',
                    "    return row.logins / (row.days + 1)\n",
                ],
            },
            {"cell_type": "code", "source": "df['score'] = df.apply(churn_score, axis=1)"},
        ]
    )
    lines = text.split("\n")
    chunks = chunk_file("analysis.ipynb", text, min_tokens=5)
    assert [(c.kind, c.language, c.symbol) for c in chunks] == [
        ("section", "markdown", "Churn model"),
        ("module", "python", None),
        ("function", "python", "churn_score"),
        ("module", "python", None),
    ]
    assert all("iVBOR" not in c.text and '"outputs"' not in c.text for c in chunks)
    score = chunks[2]
    assert score.text.startswith("def churn_score(row):") and score.text.endswith("(row.days + 1)")
    assert lines[score.start_line - 1].strip() == '"def churn_score(row):\\n",'
    assert lines[score.end_line - 1].strip() == '"    return row.logins / (row.days + 1)\\n"'
    # A source written as one string is cited at its key's line.
    assert lines[chunks[3].start_line - 1].strip().startswith('"source": "df')
    # Small cells in a row are one module to the chunker: merged into a chunk of a useful size.
    merged = chunk_file("analysis.ipynb", text)
    assert len(merged) == 2 and "import pandas" in merged[1].text and "churn_score(row)" in merged[1].text


def test_a_notebooks_kernel_language_and_odd_notebooks():
    r_cells = [{"cell_type": "code", "source": ["score <- function(x) {\n", "  x * 2\n", "}\n"]}]
    r_kernel = {"kernelspec": {"language": "R", "name": "ir"}}
    assert {c.language for c in chunk_file("a.ipynb", _notebook(r_cells, r_kernel))} == {"text"}
    js = {"language_info": {"name": "javascript"}}
    js_cells = [{"cell_type": "code", "source": ["function add(a, b) {\n", "  return a + b;\n", "}\n"]}]
    assert [c.symbol for c in chunk_file("a.ipynb", _notebook(js_cells, js), min_tokens=1)] == ["add"]
    # Written on one line (no indent): every chunk is cited at line 1, the only line.
    flat = chunk_file("a.ipynb", _notebook(js_cells, js, indent=None), min_tokens=1)
    assert [(c.start_line, c.end_line) for c in flat] == [(1, 1)]
    # Not a notebook after all: chunked as the text it is, never an error.
    for text in ("{not json", '{"cells": 3}', "[1, 2]"):
        assert chunk_file("a.ipynb", text) == chunk_file("a.txt", text) != []
    assert chunk_file("a.ipynb", '{"cells": [{"source": [1, 2]}, 7, {"cell_type": "code"}]}') == []
