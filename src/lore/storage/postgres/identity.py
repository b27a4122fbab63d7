"""Which project a clone belongs to in a shared database, and which clone it is.

Several clones of one repository (two laptops, a CI runner, a second work
tree) must share one project, and two unrelated repositories must not. A
clone names its project by, in order:

1. ``[project] id`` in the committed `.lore/config.toml` (written by
   `lore init`): survives renames, forks, moved remotes, https vs ssh URLs;
2. else the git remote ``origin`` (or the first remote), normalised to
   ``host/owner/repo`` so ``git@host:o/r.git`` and ``https://host/o/r`` agree;
3. else the clone's own folder on this host: a project no one else shares.

The clone itself is (host name, absolute root): code, history and local
memories belong to it, committed memories to the project.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")


@dataclass(frozen=True)
class ProjectIdentity:
    id: str
    name: str
    remote_url: str | None
    host: str
    repo_path: str


def identify(root: Path, settings: dict[str, Any]) -> ProjectIdentity:
    """The project and clone identity of the project at `root` (see the module doc)."""
    section = settings.get("project", {}) if isinstance(settings.get("project"), dict) else {}
    remote = git_remote(root)
    normalised = normalise_remote(remote) if remote else None
    configured = str(section.get("id") or "").strip()
    host = socket.gethostname()
    folder = storable(str(root))
    if configured:
        project_id = configured
    elif normalised:
        project_id = f"git:{normalised}"
    else:
        project_id = f"path:{host}:{folder}"
    name = str(section.get("name") or "").strip() or (
        normalised.rsplit("/", 1)[-1] if normalised else storable(root.name)
    )
    return ProjectIdentity(project_id, name, without_credentials(remote) if remote else None, host, folder)


_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][\w+.-]*://)(?P<user>[^/@]*)@(?P<rest>.*)$", re.S)


def without_credentials(url: str) -> str:
    """A remote's URL as the shared database may keep it: an HTTP(S) URL without
    its user part (a CI clone's `https://x-access-token:ghp_…@github.com/…`, a
    token given as the user name), any other without a password (`ssh://git@…`
    stays)."""
    found = _USERINFO.match(url)
    if found is None:
        return url
    scheme, user = found["scheme"], found["user"]
    if scheme.lower().startswith("http"):
        return scheme + found["rest"]
    if ":" in user:
        return f"{scheme}{user.split(':', 1)[0]}@{found['rest']}"
    return url


def storable(path: str) -> str:
    """A file system path as text a database can hold: bytes that are not UTF-8
    (Python's surrogate escapes) become ``\\xNN``, the same way every time."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def git_remote(root: Path) -> str | None:
    """The URL of remote `origin`, else of the first remote, else None."""
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "remote", "-v"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    remotes: dict[str, str] = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            remotes.setdefault(parts[0], parts[1])
    return remotes.get("origin") or next(iter(remotes.values()), None)


def normalise_remote(url: str) -> str:
    """``host/path`` of a git URL, lower-case host, no scheme, user, port or ``.git``."""
    url = url.strip()
    scp = _SCP_LIKE.match(url) if "://" not in url else None
    if scp:
        host, path = scp.group(1), scp.group(2)
    else:
        rest = url.split("://", 1)[-1]
        netloc, _, path = rest.partition("/")
        host = netloc.rsplit("@", 1)[-1].split(":", 1)[0]
    path = path.strip("/")
    path = path.removesuffix(".git")
    return f"{host.lower()}/{path}" if host else path
