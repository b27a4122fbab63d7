"""Who may talk to `lore serve`, and the checks made before any handler runs.

- **Host**: only the hosts the operator configured (loopback names by
  default), so a DNS-rebinding page cannot reach a loopback server.
  Bound to a wildcard address with a token, any Host is accepted: the token
  is the protection then.
- **Token**: with a token (required off loopback), the API and MCP need
  ``Authorization: Bearer <token>``; a browser logs in once with it on
  ``/login`` and gets an HttpOnly, SameSite=Strict session cookie.
  With a users file (``--users``, :mod:`.users`) each person has a token of
  their own, and the token (or the session it opened) says who the request
  acts for: their agent and their database role.
- **CSRF**: every state-changing form carries a token that must equal the
  ``lore_csrf`` cookie (SameSite=Strict, so another site can neither read
  nor send it); JavaScript sends it as ``X-CSRF-Token``. Unsafe API calls
  without a bearer token need that header, or ``Content-Type:
  application/json``, which a cross-site page cannot send without a CORS
  preflight this server never grants. A foreign ``Origin`` is refused.
- **Failures** (wrong or malformed credentials) are counted per client;
  too many in a minute and that client gets 429 until the minute passes.
  Memory is bounded: at most :data:`MAX_CLIENTS` clients are remembered.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lore.errors import LoreError
from lore.records import datarecord

if TYPE_CHECKING:
    from lore.interfaces.web.users import User, UserTable

SESSION_COOKIE = "lore_session"
CSRF_COOKIE = "lore_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 1000
MAX_CLIENTS = 4096
FAILURE_WINDOW = 60.0
MAX_FAILURES = 10
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


class Unauthorized(LoreError):
    code = "unauthorized"
    http_status = 401


class Forbidden(LoreError):
    code = "forbidden"
    http_status = 403


class TooManyAttempts(LoreError):
    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class MisdirectedRequest(LoreError):
    code = "bad_host"
    http_status = 421


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "")


@datarecord
class Guard:
    """The server's security settings and state (sessions, failure counts).

    Args:
        token: the shared secret; None only when bound to loopback (or with `users`).
        allowed_hosts: Host header names accepted (no ports); "*" accepts any.
        users: per-user tokens (`lore serve --users`); a request with one acts as its user.
    """

    token: str | None
    allowed_hosts: frozenset[str]
    users: UserTable | None = None
    sessions: OrderedDict[str, tuple[float, User | None]] = field(default_factory=OrderedDict)
    failures: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    login_page: bool = True  # `lore serve` has /login; `lore mcp --http` serves /mcp only

    @classmethod
    def for_bind(
        cls,
        host: str,
        token: str | None,
        extra_hosts: Sequence[str] = (),
        users: UserTable | None = None,
        *,
        token_env: str = "LORE_TOKEN",
    ) -> Guard:
        """The guard for a server bound to `host`; refuses an exposed server without
        a token (`token_env`: the variable the command reads it from, for the message)."""
        if not is_loopback(host) and not token and users is None:
            from lore.errors import UsageError

            where = f"'{host}'" if host else "all addresses"  # quoted: "127.0.0.1 " is no loopback
            raise UsageError(
                f"binding to {where} exposes your project; set a token with --token "
                f"or {token_env} (or bind to 127.0.0.1)"
            )
        if token and not (token.isascii() and token.isprintable() and " " not in token):
            from lore.errors import UsageError

            # It travels as 'Authorization: Bearer <token>': ASCII, one word.
            raise UsageError(
                "the token must be letters, digits and punctuation without spaces (it is sent in an "
                "HTTP header); e.g. `openssl rand -hex 16`"
            )
        if token is not None and len(token) < 16 and not is_loopback(host):
            from lore.errors import UsageError

            raise UsageError(
                "the token is too short for a server off loopback; use at least 16 random characters "
                "(e.g. `openssl rand -hex 16`)"
            )
        extra = {h.lower().strip("[]") for h in extra_hosts}
        if "*" in extra and not token and users is None:
            from lore.errors import UsageError

            # "*" answers any Host: without a token nothing would stop a DNS-rebinding page.
            raise UsageError(
                "--allow-host '*' would let any web site reach this server (DNS rebinding); "
                f"name the hosts clients use, or set a token with --token or {token_env}"
            )
        hosts = set(LOOPBACK_NAMES) | extra
        if is_wildcard(host) and (token or users is not None):
            hosts.add("*")
        elif not is_wildcard(host):
            hosts.add(host.lower().strip("[]"))
        return cls(token, frozenset(hosts), users)

    @property
    def open(self) -> bool:
        """No token nor users: everything on loopback is allowed without logging in."""
        return self.token is None and self.users is None

    # -- headers ------------------------------------------------------------------

    def check_host(self, host_header: str | None) -> None:
        if "*" in self.allowed_hosts:
            return
        name = _host_name(host_header or "")
        if name not in self.allowed_hosts:
            raise MisdirectedRequest(
                f"this server does not answer for host '{(host_header or '')[:100]}'; "
                "use the address it was started with (or start it with --allow-host)"
            )

    def check_origin(self, origin: str | None, host_header: str | None) -> None:
        """A browser's cross-site request carries a foreign Origin: refuse it."""
        if not origin:
            return
        if origin == "null" or urlsplit(origin).netloc.lower() != (host_header or "").lower():
            raise Forbidden("cross-site request refused; use the Lore page itself")

    def check_fetch_site(self, site: str | None) -> None:
        """A browser says where a request comes from (``Sec-Fetch-Site``): only
        the page itself ("same-origin") or the user ("none": typed, bookmarked)
        may call the API; another site, or another port of this host
        ("same-site"), may not. Programs send no such header."""
        if site and site.lower() not in ("same-origin", "none"):
            raise Forbidden(f"{site} request refused; use the Lore page itself")

    # -- credentials ----------------------------------------------------------------

    def authenticate(
        self, client: str, authorization: bytes | None, session: str | None
    ) -> tuple[str, User | None]:
        """How the request is authenticated ("token", "session" or "open") and
        for whom: the user of a per-user token, None for the shared token.

        Raises Unauthorized for missing/wrong/malformed credentials (counted
        against the client) and TooManyAttempts when the client failed too often.
        """
        if authorization is not None:
            self.check_rate(client)
            token = _bearer(authorization)
            if token is not None and self.open:
                return "open", None  # no token configured: a header is harmless
            if token is not None:
                known, user = self.identify(token)
                if known:
                    return "token", user
            self.fail(client)
            raise Unauthorized(
                "the Authorization header must be 'Bearer <token>' with this server's token"
                if token is None
                else self._wrong_token()
            )
        if session:
            valid, user = self.session_user(session)
            if valid:
                return "session", user
        if self.open:
            return "open", None
        raise Unauthorized(
            "log in first: send 'Authorization: Bearer <token>'"
            + (" or sign in at /login" if self.login_page else "")
        )

    def identify(self, token: str) -> tuple[bool, User | None]:
        """(known, user): the shared token is known with no user; a per-user token is its user."""
        user = self.users.match(token) if self.users is not None else None
        if user is not None:
            return True, user
        return self.token_matches(token), None

    def _wrong_token(self) -> str:
        if self.users is not None:
            return "unknown token; use the token `lore users add` printed for you"
        return "wrong token; use the token the server was started with"

    def token_matches(self, candidate: str) -> bool:
        return self.token is not None and hmac.compare_digest(candidate.encode(), self.token.encode())

    def check_rate(self, client: str) -> None:
        recent = self._recent_failures(client)
        if len(recent) >= MAX_FAILURES:
            retry = int(FAILURE_WINDOW - (time.monotonic() - recent[0])) + 1
            raise TooManyAttempts(
                f"too many failed attempts from {client}; wait {retry} s and try again", retry
            )

    def fail(self, client: str) -> None:
        recent = self._recent_failures(client)
        recent.append(time.monotonic())
        self.failures[client] = recent[-MAX_FAILURES:]
        self.failures.move_to_end(client)
        while len(self.failures) > MAX_CLIENTS:
            self.failures.popitem(last=False)

    def _recent_failures(self, client: str) -> list[float]:
        cutoff = time.monotonic() - FAILURE_WINDOW
        return [t for t in self.failures.get(client, []) if t > cutoff]

    # -- sessions -------------------------------------------------------------------

    def login(self, client: str, token: str) -> str:
        """A new session id for a correct token; Unauthorized (counted) otherwise."""
        self.check_rate(client)
        known, user = self.identify(token)
        if not known:
            self.fail(client)
            raise Unauthorized(self._wrong_token())
        session = secrets.token_urlsafe(32)
        self.sessions[session] = (time.monotonic() + SESSION_SECONDS, user)
        while len(self.sessions) > MAX_SESSIONS:
            self.sessions.popitem(last=False)
        return session

    def logout(self, session: str | None) -> None:
        if session:
            self.sessions.pop(session, None)

    def session_user(self, session: str) -> tuple[bool, User | None]:
        """(valid, the user who opened it: None for the shared token)."""
        found = self.sessions.get(session)
        if found is None:
            return False, None
        if found[0] < time.monotonic():
            del self.sessions[session]
            return False, None
        return True, found[1]

    # -- CSRF -----------------------------------------------------------------------

    @staticmethod
    def new_csrf() -> str:
        return secrets.token_urlsafe(24)

    @staticmethod
    def csrf_matches(cookie: str | None, given: str | None) -> bool:
        return bool(cookie) and bool(given) and hmac.compare_digest(str(cookie).encode(), str(given).encode())


def _bearer(header: bytes) -> str | None:
    """The token of a well-formed 'Bearer <token>' header, else None (never raises)."""
    try:
        text = header.decode("ascii")
    except UnicodeDecodeError:
        return None
    scheme, _, token = text.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def _host_name(host_header: str) -> str:
    """The name part of a Host header ('[::1]:8766' → '::1', 'Example:80' → 'example')."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def safe_next(target: str | None) -> str:
    """A local path to go to after login (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
