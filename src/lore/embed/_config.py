"""Checking the `[embedding]` table of `.lore/config.toml`.

Each provider declares the settings it accepts; anything else (a typo, a
setting of another provider) is refused with the list of allowed names, so a
mistake never silently falls back to a default.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from lore.errors import ProviderError

_WHERE = "check [embedding] in .lore/config.toml"


class Option(NamedTuple):
    """One accepted setting: its type, default, bounds (numbers) or choices (strings)."""

    kind: type
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None


def read_options(provider: str, settings: dict, spec: dict[str, Option]) -> dict[str, Any]:
    """Validate `settings` against `spec` and fill in defaults.

    Raises:
        ProviderError: unknown setting, wrong type or out-of-range number.
    """
    unknown = sorted(set(settings) - set(spec) - {"provider"})
    if unknown:
        hint = " (keys belong in an environment variable: set api_key_env)" if "api_key" in unknown else ""
        raise ProviderError(
            f"unknown [embedding] setting(s) {', '.join(unknown)} for provider '{provider}'{hint}; "
            f"allowed: {', '.join(sorted(spec))} — {_WHERE}"
        )
    values = {}
    for name, option in spec.items():
        value = settings.get(name, option.default)
        if value is not None:
            value = _check(name, value, option)
        values[name] = value
    return values


def _check(name: str, value: Any, option: Option) -> Any:
    kind, is_bool = option.kind, isinstance(value, bool)
    if kind is float and isinstance(value, int) and not is_bool:
        value = float(value)  # TOML writes `timeout = 30` as an integer
    if not isinstance(value, kind) or (is_bool and kind is not bool):
        raise ProviderError(f"[embedding] {name} must be {kind.__name__}, got {value!r} — {_WHERE}")
    if option.minimum is not None and value < option.minimum:
        raise ProviderError(f"[embedding] {name} must be at least {option.minimum}, got {value!r} — {_WHERE}")
    if option.maximum is not None and value > option.maximum:
        raise ProviderError(f"[embedding] {name} must be at most {option.maximum}, got {value!r} — {_WHERE}")
    if option.choices is not None and value not in option.choices:
        raise ProviderError(
            f"[embedding] {name} must be one of {', '.join(option.choices)}, got {value!r} — {_WHERE}"
        )
    return value
