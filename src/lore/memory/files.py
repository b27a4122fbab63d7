"""Reading memory files safely: regular files inside the project only, bounded in size."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lore.errors import ValidationError

MAX_BYTES = 16 * 1024 * 1024


def read_memory_file(root: Path, rel: str, *, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of the memory file at `rel`: a regular file (or a link to one
    inside the project), at most `max_bytes`; else a ValidationError saying why."""
    path = root / rel
    real = Path(os.path.realpath(path))
    if real != root.resolve() and root.resolve() not in real.parents:
        raise ValidationError(
            "is a link to a file outside the project; replace it with the file itself", path=rel
        )
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise ValidationError(f"cannot read ({err.strerror}); check permissions", path=rel) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValidationError("is not a regular file (a pipe, device or socket); remove it", path=rel)
        if info.st_size > max_bytes:
            raise ValidationError(
                f"is {info.st_size} bytes, over the {max_bytes}-byte limit; split it", path=rel
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValidationError(f"is over the {max_bytes}-byte limit; split it", path=rel)
        return data
    finally:
        os.close(fd)
