"""POSTing JSON to a provider's HTTP API, with retries (embedding and summary providers).

Standard library only (urllib + json), so providers add no dependency. 429
and 5xx responses and connection failures are retried with exponential
back-off (honouring Retry-After); every other failure becomes a
:class:`~lore.errors.ProviderError` that says what to fix. API keys are sent
in headers only and never appear in messages (not even when a server echoes
them back). Redirects are refused, so a key never follows one to another
host; a response is read only up to :data:`MAX_RESPONSE_BYTES`, and within
`timeout` seconds however slowly it arrives.
"""

from __future__ import annotations

import email.message
import email.utils
import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lore.errors import ProviderError

MAX_WAIT = 60.0  # seconds; caps Retry-After and back-off
#: The most of a response read (64 texts of 3,072 dimensions are ~4 MB of JSON).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_ERROR_BYTES = 64 * 1024  # the most of an error response read for its message
# Headers whose values are credentials: never shown, even when a server echoes them.
_SECRET_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are errors: urllib would replay the request's headers, the API
    key among them, to whatever host the `Location` names."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


@dataclass(frozen=True)
class Endpoint:
    """Who is called and how failures are explained.

    Args:
        provider: the provider's name, as configured (used in messages).
        config: where its settings live, e.g. "[embedding] in .lore/config.toml".
        key_env: the environment variable holding the key (named in messages, never its value).
        timeout: seconds per attempt.
        max_retries: retries after the first attempt (429, 5xx, connection failures).
        retry_backoff: first back-off in seconds; doubles each retry.
        refused_fix: what to check when the server refuses a request (4xx).
        rate_limit_fix: what to do about a rate limit that outlasted the retries.
    """

    provider: str
    config: str
    key_env: str | None = None
    timeout: float = 60.0
    max_retries: int = 5
    retry_backoff: float = 1.0
    refused_fix: str = "check model and base_url"
    rate_limit_fix: str = "wait, or raise max_retries"


def post_json(endpoint: Endpoint, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """POST `body` as JSON to `url` with retries; return the decoded response.

    Raises:
        ProviderError: refused (4xx), still failing after the retries, or not JSON.
    """
    data = json.dumps(body).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "lore",
        **headers,
    }
    secrets = [v for k, v in headers.items() if k.lower() in _SECRET_HEADERS and v]
    attempts = endpoint.max_retries + 1
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        wait = None
        try:
            with _OPENER.open(request, timeout=endpoint.timeout) as response:
                raw = _read_body(response, url, endpoint)
            break
        except urllib.error.HTTPError as exc:
            detail = _without(secrets, error_detail(exc))
            if 300 <= exc.code < 400:
                where = exc.headers.get("Location") if exc.headers else None
                raise ProviderError(
                    f"{endpoint.provider}: {url} redirects (HTTP {exc.code}"
                    f"{f' to {_without(secrets, where)}' if where else ''}); Lore does not follow "
                    f"redirects with an API key — set base_url to the final address in {endpoint.config}"
                ) from None
            if exc.code != 429 and exc.code < 500:
                refused = ProviderError(_refused(endpoint, url, exc.code, detail))
                refused.refused_input = exc.code in (400, 413, 422)
                raise refused from exc
            wait = retry_after(exc.headers)
            what, fix = (
                ("rate limit", f"{endpoint.rate_limit_fix} in {endpoint.config}")
                if exc.code == 429
                else ("server error", "try again later")
            )
            failure = (
                f"{endpoint.provider} {what} (HTTP {exc.code} from {url}, {attempts} attempt(s)): "
                f"{detail} — {fix}"
            )
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = _without(secrets, str(getattr(exc, "reason", None) or exc))
            failure = (
                f"cannot reach {url}: {reason} — is the server running? check base_url in .lore/config.toml"
            )
        if attempt + 1 < attempts:
            backoff = endpoint.retry_backoff * 2**attempt * (1 + random.random() / 4)
            time.sleep(min(wait if wait is not None else backoff, MAX_WAIT))
    else:
        raise ProviderError(failure)
    try:
        payload: dict[str, Any] = json.loads(raw)
        return payload
    except ValueError as exc:
        raise ProviderError(
            f"{url} did not return JSON ({exc}) — is base_url pointing at a "
            f"{endpoint.provider} API? check {endpoint.config}"
        ) from exc


def _read_body(response: http.client.HTTPResponse, url: str, endpoint: Endpoint) -> bytes:
    """The response's body: at most MAX_RESPONSE_BYTES, within `timeout` seconds in all
    (the socket's timeout bounds each read only, and a server may send a byte at a time).

    Raises:
        ProviderError: the body is larger.
        TimeoutError: it takes longer (retried like any connection failure).
    """
    deadline = time.monotonic() + endpoint.timeout
    parts: list[bytes] = []
    size = 0
    while True:
        part = response.read1(1 << 16)
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
        if size > MAX_RESPONSE_BYTES:
            raise ProviderError(
                f"{url} sent more than {MAX_RESPONSE_BYTES // (1024 * 1024)} MB — is base_url pointing at "
                f"a {endpoint.provider} API? check {endpoint.config}"
            )
        if time.monotonic() > deadline:
            raise TimeoutError(f"the response took over {endpoint.timeout:g} s (timeout)")


def _without(secrets: list[str], text: str) -> str:
    """`text` with each credential (a header's value, and the key in `Bearer <key>`) masked."""
    for secret in secrets:
        for value in (secret, secret.removeprefix("Bearer ").strip()):
            if len(value) >= 4:
                text = text.replace(value, "[REDACTED]")
    return text


def _refused(endpoint: Endpoint, url: str, code: int, detail: str) -> str:
    if code in (401, 403):
        fix = f"check the key in ${endpoint.key_env}" if endpoint.key_env else "set api_key_env"
        return f"{endpoint.provider} rejected the API key (HTTP {code} from {url}): {detail} — {fix}"
    return (
        f"{endpoint.provider} refused the request (HTTP {code} from {url}): {detail} — "
        f"{endpoint.refused_fix} in {endpoint.config}"
    )


def error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's error message, short (OpenAI, Anthropic, Gemini and Voyage all
    nest it under "error" or "detail")."""
    try:
        text = exc.read(_ERROR_BYTES).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return exc.reason or ""
    try:
        payload = json.loads(text)
        error = payload.get("error", payload.get("detail", payload))
        text = error.get("message", json.dumps(error)) if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        pass
    text = " ".join(text.split())
    return (text[:300] + "…") if len(text) > 300 else (text or str(exc.reason))


def retry_after(headers: Mapping[str, str] | email.message.Message | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date)."""
    value = headers.get("Retry-After") if headers else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
