"""Keep credentials out of everything Lore stores.

Memories are committed to git and shared by a team, and the code index keeps
repository text in index.db, so a secret that gets through is copied to every
clone and every snippet. Three entry points:

* :func:`redact` for memory text (titles, bodies, commit messages, session
  digests): every secret becomes ``[REDACTED:<kind>]``, the surrounding text
  stays (``key = value`` keeps the key, ``scheme://user:pass@host`` keeps the
  user and host), and the caller gets a Counter of kinds to report.
* :func:`redact_values` for list fields (tags, keywords, files, links).
* :func:`mask_code` for source code chunks: only machine-made secret values,
  with a stricter bar, because a false positive in code hurts search.

The rules are data (rules.toml): known token formats indexed by prefix, plus
key names with entropy for values assigned to secret-like keys, plus private
key blocks and URL passwords. See docs/secrets.md for what is caught and the
measured detection and false-positive rates.
"""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any

__all__ = [
    "describe",
    "mask_code",
    "redact",
    "redact_name",
    "redact_nested",
    "redact_values",
    "refuse_as_name",
    "secrets_in",
]

_scan_module: ModuleType | None = None


def _scan() -> ModuleType:
    """The scanner, imported on first use: its rules cost ~25 ms to compile, and
    commands that never redact (``lore --help``) should not pay for them."""
    global _scan_module
    if _scan_module is None:
        from . import scan

        _scan_module = scan
    return _scan_module


def redact(text: str) -> tuple[str, Counter[str]]:
    """Replace every secret in `text` by ``[REDACTED:<kind>]``.

    Returns the clean text and how many secrets of each kind were replaced.
    Idempotent: redacting redacted text changes nothing.
    """
    scan = _scan()
    findings = scan.find(text, strict=False)
    return scan.replace(text, findings), Counter(f.kind for f in findings)


def secrets_in(text: str) -> set[str]:
    """The secrets :func:`redact` would replace in `text`, as written there."""
    return {text[f.start : f.end] for f in _scan().find(text, strict=False)}


# A token in a name (a file's, a commit author's) is a run of 16 letters and
# digits or more, digits among them; a name without one is not scanned (a long
# word, "subdomaintestmodule", would load the scanner for nothing).
_LONG_RUN: Any = None


def redact_name(name: str) -> tuple[str, Counter[str]]:
    """:func:`redact` for names (file paths, commit authors and emails), read
    by the thousand while indexing: only a name holding a long run of
    letters and digits with a digit in it is scanned (~40 µs, and the
    scanner's rules are loaded once), the others pass as they are."""
    global _LONG_RUN
    if _LONG_RUN is None:
        import re

        _LONG_RUN = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]*[0-9])[A-Za-z0-9]{16}")
    if _LONG_RUN.search(name) is None:
        return name, Counter()
    return redact(name)


def redact_values(values: list[str]) -> tuple[list[str], Counter[str]]:
    """:func:`redact` over each item of a list field (tags, keywords, files, links)."""
    found: Counter[str] = Counter()
    clean: list[str] = []
    for value in values:
        text, kinds = redact(value)
        clean.append(text)
        found.update(kinds)
    return clean, found


def redact_nested(value: Any) -> tuple[Any, Counter[str]]:
    """:func:`redact` over every string in parsed YAML or JSON (text, lists,
    tuples, mappings; mapping keys too), as a new value; and what was found.

    A mapping's text value is read with its key, as the line ``key: value``
    it was written as: ``{"password": "Tr0ub4dor"}`` is a password, where
    the value alone is a word like any other."""
    found: Counter[str] = Counter()

    def walk(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            clean, kinds = redact(item)
            found.update(kinds)
            return clean
        if depth > 50:  # deeper than a memory file may nest (validation refuses it)
            return item
        if isinstance(item, list | tuple):
            return [walk(child, depth + 1) for child in item]
        if isinstance(item, dict):
            return {walk(key, depth + 1): keyed(key, child, depth + 1) for key, child in item.items()}
        return item

    def keyed(key: Any, child: Any, depth: int) -> Any:
        # YAML reads `db_password: 839201746512` as a number: a secret all the same
        number = isinstance(child, int | float) and not isinstance(child, bool)
        if isinstance(key, str) and (number or isinstance(child, str)) and "\n" not in key + str(child):
            line = f"{key}: "
            clean, kinds = redact(line + str(child))
            if clean.startswith(line):  # (a key that is a secret itself: the value alone, below)
                found.update(kinds)
                return clean[len(line) :] if kinds or not number else child
        return walk(child, depth)

    return walk(value, 0), found


def mask_code(text: str) -> tuple[str, int]:
    """Mask secret-shaped values in source code; returns the text and how many were masked.

    For the code index (stored chunks and snippets). Stricter than
    :func:`redact`: token formats must have a random-looking body, assigned
    values must be quoted (or on an env/config line) and high in entropy, and
    prose-only rules (headers in comments) are not applied; command lines and
    SQL (`mysql -p…`, `IDENTIFIED BY …`) are, for random-looking values.
    """
    scan = _scan()
    findings = scan.find(text, strict=True)
    return scan.replace(text, findings), len(findings)


def mask_lines(text: str, *, code: bool) -> str:
    """`text` (a whole file) with its secrets masked as :func:`mask_code` (`code`)
    or :func:`redact` mask them, each marker followed by the line breaks its
    secret spanned, so every other line keeps its number. For a file about to
    be cut into chunks: a private key block runs over several, and masking
    chunk by chunk left its later lines, in the chunks after its BEGIN line, in clear."""
    scan = _scan()
    masked: str = scan.replace(text, scan.find(text, strict=code), keep_lines=True)
    return masked


def describe(found: Counter[str]) -> str:
    """'2 openai-key, 1 private-key' for messages to the user."""
    return ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))


def refuse_as_name(value: str, what: str, why: str) -> None:
    """Refuse `value` as a name written in clear (a folder's, an owner file's)
    when it looks like a secret: "that `what` looks like a secret (...); `why`".

    Raises:
        UsageError: one line, naming the kinds found, never the value.
    """
    _, found = redact(value)
    if found:
        from lore.errors import UsageError

        raise UsageError(f"that {what} looks like a secret ({describe(found)}); {why}")
