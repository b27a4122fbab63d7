"""The users of a team server (`lore serve --users FILE`): who may call it, as
which agent, and as which database role.

The users file is TOML, owner-only (like an SSH key: a file other users of
the machine can read or write is refused)::

    # lore serve --users: one table per user (tokens are stored hashed)
    [users.alice]
    token_sha256 = "9f86d0…"   # SHA-256 of the token, never the token itself
    agent = "alice"           # the agent identity requests act as (default: the name)
    role = "alice"            # PostgreSQL: the database role to SET ROLE to (optional)

`lore users add NAME` writes an entry and prints its token once. Tokens are
256 random bits, so one SHA-256 is as strong as a slow hash would be here
and costs nothing per request; the clear token is nowhere on the server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from lore.errors import Conflict, NotFound, UsageError, ValidationError

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z")
ROLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
MAX_AGENT = 100
HEADER = "# lore serve --users: one table per user; tokens are stored as SHA-256 hashes, never in clear\n"


@dataclass(frozen=True)
class User:
    """One person or agent allowed to call the server.

    Args:
        name: the user's name in the file (shown in messages).
        token_sha256: hex SHA-256 of their token.
        agent: the agent identity their requests act as.
        role: the PostgreSQL role their requests act as (None: the server's own login role).
    """

    name: str
    token_sha256: str
    agent: str
    role: str | None = None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class UserTable:
    """The users of one server, read once at start-up."""

    path: Path
    users: tuple[User, ...]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> UserTable:
        """Read and check the users file: owner-only, well-formed, each agent acting as one role."""
        file = Path(path)
        users = _parse(file, _read_private(file))
        if not users:
            raise UsageError(f"{file} has no users; add one with `lore users add NAME --users {file}`")
        return cls(file, tuple(users))

    def match(self, token: str) -> User | None:
        """The user whose token this is (every entry compared in constant time), else None."""
        given = token_hash(token)
        found = None
        for user in self.users:
            if hmac.compare_digest(given, user.token_sha256):
                found = user
        return found

    def roles(self) -> list[str]:
        """Every database role the server must be able to act as, once each."""
        return sorted({u.role for u in self.users if u.role})


def add_user(
    path: str | os.PathLike[str], name: str, *, agent: str | None = None, role: str | None = None
) -> str:
    """Add `name` to the users file at `path` (created owner-only if missing); returns
    the new token, which is stored only as its hash: show it to the user once."""
    file = Path(path)
    _check_name(name, role, agent)
    users = _parse(file, _read_private(file)) if file.exists() else []
    if any(u.name == name for u in users):
        raise Conflict(f"user '{name}' is already in {file}; remove it first (`lore users remove {name}`)")
    token = secrets.token_urlsafe(32)
    users.append(User(name, token_hash(token), agent or name, role))
    _check_agents(file, users)
    _write(file, users)
    return token


def remove_user(path: str | os.PathLike[str], name: str) -> None:
    """Remove `name` from the users file (their token stops working when the server restarts)."""
    file = Path(path)
    users = _parse(file, _read_private(file))
    kept = [u for u in users if u.name != name]
    if len(kept) == len(users):
        raise NotFound(f"no user '{name}' in {file}")
    _write(file, kept)


def list_users(path: str | os.PathLike[str]) -> list[dict[str, str | None]]:
    """Name, agent and role of each user (never their token's hash)."""
    file = Path(path)
    return [{"name": u.name, "agent": u.agent, "role": u.role} for u in _parse(file, _read_private(file))]


def _read_private(file: Path) -> bytes:
    try:
        info = file.stat()
    except FileNotFoundError:
        raise UsageError(
            f"no users file at {file}; create it with `lore users add NAME --users {file}`"
        ) from None
    except OSError as err:
        raise UsageError(f"cannot read the users file {file} ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"the users file {file} is not a regular file")
    if info.st_mode & 0o077:
        raise UsageError(
            f"the users file {file} is open to other users (mode {stat.S_IMODE(info.st_mode):04o}); "
            f"run `chmod 600 {file}`"
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise UsageError(f"the users file {file} belongs to another user; it must be yours (chown it)")
    return file.read_bytes()


def _parse(file: Path, raw: bytes) -> list[User]:
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ValidationError(
            f"{file} is not valid TOML ({err}); fix it or recreate it with `lore users add`"
        ) from None
    table = data.get("users", {})
    if not isinstance(table, dict) or set(data) - {"users"}:
        raise ValidationError(f"{file} must hold only [users.NAME] tables")
    users: list[User] = []
    for name, entry in table.items():
        if not isinstance(entry, dict) or set(entry) - {"token_sha256", "agent", "role"}:
            raise ValidationError(f"{file}: [users.{name}] may hold token_sha256, agent and role only")
        digest, agent, role = entry.get("token_sha256"), entry.get("agent", name), entry.get("role")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValidationError(f"{file}: [users.{name}] needs token_sha256, 64 hex digits")
        if not isinstance(agent, str) or (role is not None and not isinstance(role, str)):
            raise ValidationError(f"{file}: [users.{name}] agent and role must be strings")
        try:
            _check_name(name, role, agent)
        except UsageError as err:
            raise ValidationError(f"{file}: {err}") from None
        same = next((u for u in users if u.token_sha256 == digest), None)
        if same is not None:  # one token would act as whichever came last
            raise ValidationError(
                f"{file}: users '{same.name}' and '{name}' have the same token_sha256; "
                f"give one a new token (`lore users remove {name}`, then `lore users add {name}`)"
            )
        users.append(User(name, digest, agent, role))
    _check_agents(file, users)
    return users


def _check_name(name: str, role: str | None, agent: str | None) -> None:
    if not USER_NAME.match(name):
        raise UsageError(f"user name '{name[:80]}' must be letters, digits, '.', '_' or '-' (at most 63)")
    if role is not None and not ROLE_NAME.match(role):
        raise UsageError(f"database role '{role[:80]}' must be a plain SQL name (letters, digits, '_')")
    if agent is not None and not (0 < len(agent.strip()) <= MAX_AGENT):
        raise UsageError(f"agent name for '{name}' must be 1-{MAX_AGENT} characters")


def _check_agents(file: Path, users: list[User]) -> None:
    """An agent's private memories belong to one database role: two roles may not share an agent."""
    from lore.project import agent_key

    roles: dict[str, str | None] = {}
    for user in users:
        key = agent_key(user.agent)
        if key in roles and roles[key] != user.role:
            raise ValidationError(
                f"{file}: agent '{user.agent}' acts as two database roles ({roles[key]}, {user.role}); "
                "give each role its own agent"
            )
        roles[key] = user.role


def _write(file: Path, users: list[User]) -> None:
    from lore.atomic import write_atomic

    lines = [HEADER]
    for user in users:
        lines += ["", f"[users.{json.dumps(user.name)}]", f"token_sha256 = {json.dumps(user.token_sha256)}"]
        lines.append(f"agent = {json.dumps(user.agent, ensure_ascii=False)}")
        if user.role:
            lines.append(f"role = {json.dumps(user.role)}")
    write_atomic(file, "\n".join(lines) + "\n", mode=0o600)
