"""Lore: project memory for AI coding agents.

Use :func:`open` to get a :class:`~lore.service.Lore` for a project::

    import lore
    project = lore.open(".")
    project.add(title="Use UTC everywhere", body="...", type="convention", tags=["time"])
    for hit in project.search("timezone"):
        print(hit.path, hit.score)

Every error Lore raises on purpose is a :class:`LoreError` (one-line message
saying what to do; ``code``: usage, not_found, invalid, conflict, permission,
storage, provider): see :mod:`lore.errors`. A :class:`~lore.service.Lore` is
closed with ``close()`` or a ``with`` block, and serves one thread at a time.
"""

from __future__ import annotations

import os as _os

# Vector search is matrix-vector products, which are memory-bound: OpenBLAS's
# threads only add contention (10k x 384: 11 ms threaded vs 0.3 ms single, on
# a busy 2-core machine). Set before numpy is first imported; respects the user's.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Offline means offline: onnxruntime would otherwise keep a device id and
# telemetry events under ~/.cache/Microsoft (read when it is first imported).
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# Not `from typing import TYPE_CHECKING`: the `lore` command's warm-start client
# (lore.interfaces.warm) imports this package, and typing alone costs it ~20 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from lore.errors import (
        Conflict,
        LoreError,
        NotFound,
        PermissionDenied,
        ProjectNotFound,
        ProviderError,
        StorageError,
        UsageError,
        ValidationError,
    )
    from lore.memory.edits import Edit
    from lore.service import Lore  # imported on first use (`lore --help` stays fast)

_ERRORS = frozenset(
    {
        "Conflict",
        "LoreError",
        "NotFound",
        "PermissionDenied",
        "ProjectNotFound",
        "ProviderError",
        "StorageError",
        "UsageError",
        "ValidationError",
    }
)

__version__ = "0.1.0"
__all__ = [
    "open",
    "init",
    "Lore",
    "Edit",
    "LoreError",
    "UsageError",
    "NotFound",
    "ProjectNotFound",
    "ValidationError",
    "Conflict",
    "PermissionDenied",
    "StorageError",
    "ProviderError",
    "__version__",
]


def open(path: str | _os.PathLike[str] = ".", *, agent: str | None = None, watch: bool = False) -> Lore:
    """Open the Lore project containing `path` (searching parents like git).

    Args:
        agent: the acting agent's identity (sees its private memories).
        watch: for long-running processes (see :class:`~lore.service.Lore`).
    """
    from lore.service import Lore

    return Lore.open(path, agent=agent, watch=watch)


def init(path: str | _os.PathLike[str] = ".", *, agent: str | None = None) -> Lore:
    """Create (idempotently) the `.lore/` layout in `path` and open it."""
    from lore.service import Lore

    return Lore.init(path, agent=agent)


def __getattr__(name: str) -> type:
    """`Lore`, `Edit` (for :meth:`Lore.edit`) and the error classes, imported on first use."""
    if name == "Lore":
        from lore.service import Lore

        return Lore
    if name == "Edit":
        from lore.memory.edits import Edit

        return Edit
    if name in _ERRORS:
        import lore.errors

        return getattr(lore.errors, name)  # type: ignore[no-any-return]
    raise AttributeError(name)
