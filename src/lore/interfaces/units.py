"""Sizes as people read them, for every interface (CLI tables, web pages)."""

from __future__ import annotations


def file_size(n: int | None) -> str:
    """Bytes in B, KiB, MiB or GiB: ``0 B``, ``812 B``, ``30.9 MiB``, ``1.6 GiB``."""
    if not n:
        return "0 B"
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
