"""Private key blocks: PEM, OpenSSH, PGP, with or without their END line.

A block runs from its BEGIN line over its headers and base64 body to the END
line. Pasted keys are often cut short, so without an END line the block still
runs to the end of the base64 body. Lines may be separated by real newlines or
by ``\\n`` escapes (a key inside JSON, as in a GCP service-account file), and
wrapped in quotes, ``+`` concatenations, comment marks or list items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_\-]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# Between body lines: line breaks (or their escapes), quotes, concatenation, and
# what quotes a line (`# `, `// `, `-- `, ` * `, `> `, `- `, `; `, `% `, `! `).
_GLUE = r"(?:\\[rn]|\\|//|-+(?=[ \t])|[ \t\r\n\"'+,#>;*%!])*"
_STEP = re.compile(
    _GLUE
    + r"""(?:
        (?P<end>-----END[ A-Z0-9_\-]{0,40}PRIVATE\ KEY(?:\ BLOCK)?-----)
      | (?P<header>(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\n\\]{0,200})
      | (?P<chunk>[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2}|=[A-Za-z0-9+/]{4})
      | (?P<short>[A-Za-z0-9+/]{1,15})
    )""",
    re.X,
)


def find(text: str) -> Iterator[tuple[int, int]]:
    """Spans of private key blocks in `text`, from BEGIN to END or to the last body line."""
    pos = 0
    while (begin := _BEGIN.search(text, pos)) is not None:
        end = begin.end()
        cursor = end
        while (step := _STEP.match(text, cursor)) is not None:
            cursor = step.end()
            if step.group("end"):
                end = cursor
                break
            if step.group("short"):
                # A short unpadded piece is the body's last line only if END follows;
                # otherwise it is the next word of the surrounding text.
                following = _STEP.match(text, cursor)
                if following is None or not following.group("end"):
                    break
                end = following.end()
                break
            end = cursor
        yield begin.start(), end
        pos = max(end, begin.end())
