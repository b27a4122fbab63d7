"""Finding secrets in text: where they are and what kind they are.

Two modes share every rule:

* ``strict=False`` (memories, commit text, session digests): recall first. A
  redacted word in prose costs little; a leaked key in a file committed to git
  and shared by a team costs a lot.
* ``strict=True`` (source code chunks in the code index): precision first, and
  speed. Only machine-made values count: known token formats whose body is not
  a placeholder, private key blocks, URL passwords and high-entropy values
  assigned to secret-like keys.

One pass over the *runs* of token characters drives the token rules: a run's
first character selects the few rules whose prefix can start there, so the
cost does not grow with the number of providers.
"""

from __future__ import annotations

import re

from . import assignments, context, lines, pem, tokens, values
from .findings import PRIORITY_PEM, Finding, merge, replace
from .rules import load

__all__ = ["Finding", "find", "replace"]

_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")


def find(text: str, *, strict: bool) -> list[Finding]:
    """Every secret in `text`, overlapping findings merged, in order.

    ``[REDACTED:kind]`` markers already in the text are blanked out (same
    length, NUL characters) before scanning, so that a marker can neither be
    a secret nor lend its words to a key: redacting twice changes nothing.
    JSON that escapes slashes (``https:\\/\\/hooks.slack.com\\/services\\/…``, as
    PHP writes it) is also read with them unescaped.
    """
    if not text:
        return []
    if "\\/" in text:
        return merge(_find(text, strict) + _unescaped_slashes(text, strict))
    return _find(text, strict)


def _unescaped_slashes(text: str, strict: bool) -> list[Finding]:
    """The findings in `text` read with every ``\\/`` as ``/``, placed back in `text`."""
    parts = text.split("\\/")
    plain = "/".join(parts)
    origin: list[int] = []  # origin[i]: where plain[i] is in text
    pos = 0
    for n, part in enumerate(parts):
        origin.extend(range(pos, pos + len(part)))
        pos += len(part)
        if n < len(parts) - 1:
            origin.append(pos + 1)  # the "/" of "\\/"
            pos += 2
    origin.append(len(text))
    return [Finding(origin[f.start], origin[f.end - 1] + 1, f.kind, f.priority) for f in _find(plain, strict)]


def _find(text: str, strict: bool) -> list[Finding]:
    if values.MARKER in text:
        text = _MARKER.sub(lambda marker: "\0" * len(marker.group()), text)
    rules = load()
    found: list[Finding] = []
    if "PRIVATE KEY" in text:
        found.extend(Finding(s, e, "private-key", PRIORITY_PEM) for s, e in pem.find(text))
    found.extend(tokens.find(text, rules, strict))
    if strict:
        found.extend(assignments.quoted(text, rules))
    if "://" in text:
        found.extend(context.url_credentials(text, strict))
    lowered = lines.lower(text)
    if not strict or any(keyword in lowered for keyword in rules.code_context_keywords):
        found.extend(context.find(text, lowered, rules, strict))
    if not strict:
        found.extend(assignments.in_prose(text, lowered, rules))
    return merge(found) if found else found
