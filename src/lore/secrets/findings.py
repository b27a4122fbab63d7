"""A secret's place in the text, and writing the redacted text."""

from __future__ import annotations

from dataclasses import dataclass

# Priorities when findings overlap: the most specific kind names the merged span.
PRIORITY_PEM, PRIORITY_TOKEN, PRIORITY_CONTEXT, PRIORITY_URL, PRIORITY_ASSIGNED = 5, 4, 3, 2, 1


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret at text[start:end]."""

    start: int
    end: int
    kind: str
    priority: int


def merge(found: list[Finding]) -> list[Finding]:
    """Overlapping findings become one span named by the most specific kind."""
    if not found:
        return []
    merged: list[Finding] = []
    for finding in sorted(found, key=lambda f: (f.start, -f.priority, -f.end)):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            best = last if last.priority >= finding.priority else finding
            merged[-1] = Finding(last.start, max(last.end, finding.end), best.kind, best.priority)
        else:
            merged.append(finding)
    return merged


def replace(text: str, findings: list[Finding], *, keep_lines: bool = False) -> str:
    """`text` with each finding replaced by ``[REDACTED:<kind>]`` (`keep_lines`:
    followed by the line breaks the finding spanned, so later lines keep their numbers)."""
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for finding in findings:
        parts.append(text[pos : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        if keep_lines:
            parts.append("\n" * text.count("\n", finding.start, finding.end))
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)
