"""Checking a provider's settings table in `.lore/config.toml` (`[embedding]`,
`[sessions.summary]`).

Each provider declares the settings it accepts; anything else (a typo, a
setting of another provider) is refused with the list of allowed names, so a
mistake never silently falls back to a default.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from typing import Any, NamedTuple

from lore.errors import ProviderError

# Bounds of the in-process encoders' settings: ONNX Runtime starts every
# thread it is given (10,000 never finished a search), and a batch's memory
# grows with its size (~14 MB a text at 128 tokens), so a huge value is a
# mistake to refuse, not a speed-up.
MAX_THREADS = 256
MAX_BATCH = 256
# Seconds an HTTP provider may wait for one attempt (a socket's clock overflows
# long before 1e300).
MAX_SECONDS = 86_400.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Option(NamedTuple):
    """One accepted setting: its type, default, bounds (numbers) or choices (strings)."""

    kind: type
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None


def read_options(
    provider: str, settings: dict[str, Any], spec: dict[str, Option], *, table: str = "[embedding]"
) -> dict[str, Any]:
    """Validate `settings` against `spec` and fill in defaults.

    Args:
        table: the settings' table, as messages name it.

    Raises:
        ProviderError: unknown setting, wrong type or out-of-range number.
    """
    unknown = sorted(set(settings) - set(spec) - {"provider"})
    if unknown:
        hint = " (keys belong in an environment variable: set api_key_env)" if "api_key" in unknown else ""
        raise ProviderError(
            f"unknown {table} setting(s) {', '.join(unknown)} for provider '{provider}'{hint}; "
            f"allowed: {', '.join(sorted(spec))} — check {table} in .lore/config.toml"
        )
    values = {}
    for name, option in spec.items():
        value = settings.get(name, option.default)
        if value is not None:
            value = _check(table, name, value, option)
        values[name] = value
    return values


def _number(value: Any) -> float:
    return float(value)


def _check(table: str, name: str, value: Any, option: Option) -> Any:
    where = f"check {table} in .lore/config.toml"
    name = f"{table} {name}"
    kind, is_bool = option.kind, isinstance(value, bool)
    if kind is float and isinstance(value, int) and not is_bool:
        value = float(value)  # TOML writes `timeout = 30` as an integer
    if not isinstance(value, kind) or (is_bool and kind is not bool):
        raise ProviderError(f"{name} must be {kind.__name__}, got {value!r} — {where}")
    if kind is float and not math.isfinite(_number(value)):
        raise ProviderError(f"{name} must be a finite number, got {value!r} — {where}")
    if option.minimum is not None and _number(value) < option.minimum:
        raise ProviderError(f"{name} must be at least {option.minimum}, got {value!r} — {where}")
    if option.maximum is not None and _number(value) > option.maximum:
        raise ProviderError(f"{name} must be at most {option.maximum}, got {value!r} — {where}")
    if option.choices is not None and value not in option.choices:
        raise ProviderError(f"{name} must be one of {', '.join(option.choices)}, got {value!r} — {where}")
    return value


def check_endpoint(base_url: str, key_env: str | None, table: str = "[embedding]") -> None:
    """Refuse credentials where a setting names an address or a variable: a
    base_url with ``user:password@``, a query or a fragment (``?key=...``), and
    an api_key_env that is not a variable's name (the key itself pasted there).
    Messages never repeat the value: it would be printed, and logged.

    Raises:
        ProviderError: one of those; says where the key belongs.
    """
    where = f"check {table} in .lore/config.toml"
    try:
        parts = urllib.parse.urlsplit(base_url)
        has_credentials = parts.username is not None or parts.password is not None
    except ValueError:
        raise ProviderError(f"{table} base_url is not a valid URL — {where}") from None
    if has_credentials or parts.query or parts.fragment:
        raise ProviderError(
            f"{table} base_url must be a plain address (no user:password@, ?query or #fragment); "
            f"keys belong in an environment variable named by api_key_env — {where}"
        )
    if key_env is not None:
        from lore.secrets import redact

        if not _ENV_NAME.fullmatch(key_env) or redact(key_env)[1]:
            raise ProviderError(
                f"{table} api_key_env must be the name of an environment variable (such as "
                f"OPENAI_API_KEY), not the key itself: put the key in a variable and name it there — {where}"
            )
