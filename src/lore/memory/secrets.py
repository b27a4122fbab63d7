"""Keep credentials out of memory files.

Memories are committed to git, so anything that looks like a secret is
replaced by ``[REDACTED:<kind>]`` before a file is written, and the caller is
told what was redacted. The patterns cover the shapes leaked most often; they
favour precision (a redacted word in prose is cheap, a leaked key is not, but
redacting ordinary text would make memories useless).
"""

from __future__ import annotations

import re
from collections import Counter

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
            re.S,
        ),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer-token", re.compile(r"(?<=Bearer )[A-Za-z0-9._~+/\-]{16,}=*")),
    # scheme://user:password@host — keep the user and host, drop the password.
    ("url-password", re.compile(r"(?<=://)(?P<user>[^\s:/@]+):(?P<secret>[^\s@/]{3,})(?=@)")),
    # key = "value" assignments whose value looks machine-made (no spaces, 12+ chars, mixed).
    (
        "assigned-secret",
        re.compile(
            r"(?i)(?P<key>\b[\w.-]*(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)[\w.-]*"
            r"\s*[:=]\s*['\"]?)(?P<secret>(?=[^\s'\"]*\d)(?=[^\s'\"]*[A-Za-z])[^\s'\"<>\[\]]{12,})"
        ),
    ),
]


def redact(text: str) -> tuple[str, Counter]:
    """Replace secrets in `text`. Returns the clean text and counts per kind."""
    found: Counter = Counter()
    for kind, pattern in _PATTERNS:

        def _sub(match: re.Match[str], kind: str = kind) -> str:
            found[kind] += 1
            groups = match.groupdict()
            if "user" in groups and groups["user"]:
                return f"{groups['user']}:[REDACTED:{kind}]"
            if "key" in groups and groups["key"]:
                return f"{groups['key']}[REDACTED:{kind}]"
            return f"[REDACTED:{kind}]"

        text = pattern.sub(_sub, text)
    return text, found


def redact_values(values: list[str]) -> tuple[list[str], Counter]:
    """`redact` over each value of a list field (tags, files, links)."""
    found: Counter = Counter()
    out = []
    for value in values:
        clean, more = redact(value)
        out.append(clean)
        found += more
    return out, found


def describe(found: Counter) -> str:
    """'2 openai-key, 1 private-key' for messages to the user."""
    return ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
