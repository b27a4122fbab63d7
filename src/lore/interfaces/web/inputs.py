"""Reading requests: declared parameters with types and size limits.

Every endpoint declares its query, path and body parameters as :class:`Param`
specs. One parser reads them from a query string, a JSON object or a form,
so the API, the HTML forms and the OpenAPI document agree; anything too big
or of the wrong shape is a 413 or a 422 naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from lore.errors import LoreError, UsageError, ValidationError

MAX_REQUEST_BYTES = 6 * 1024 * 1024  # whole request body
MAX_TEXT = 1000  # default limit of a string field, in characters
MAX_BODY_TEXT = 5 * 1024 * 1024  # a memory's Markdown body
MAX_ITEMS = 100  # default limit of a list field


class PayloadTooLarge(LoreError):
    """The request body is over the server's limit."""

    code = "too_large"
    http_status = 413


class UnsupportedMediaType(LoreError):
    """The body is not in a format this endpoint reads."""

    code = "unsupported_media_type"
    http_status = 415


@dataclass(frozen=True)
class Param:
    """One input of an endpoint.

    Args:
        kind: str, int, float, bool or list (of strings).
        dest: the core argument it becomes (default: the name).
        max_len: at most this many characters (per item for lists).
        max_items: at most this many items (lists).
        choices: allowed values (per item for lists).
        minimum, maximum: bounds of a number.
    """

    name: str
    kind: str = "str"
    description: str = ""
    required: bool = False
    default: Any = None
    dest: str | None = None
    max_len: int = MAX_TEXT
    max_items: int = MAX_ITEMS
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def target(self) -> str:
        return self.dest or self.name

    def schema(self) -> dict:
        """This parameter as a JSON Schema (for the OpenAPI document)."""
        base = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
        item: dict = {"type": "string", "maxLength": self.max_len}
        if self.kind == "list":
            if self.choices:
                item["enum"] = list(self.choices)
            out: dict = {"type": "array", "items": item, "maxItems": self.max_items}
        else:
            out = {"type": base[self.kind]}
            if self.kind == "str":
                out["maxLength"] = self.max_len
            if self.choices:
                out["enum"] = list(self.choices)
            if self.minimum is not None:
                out["minimum"] = self.minimum
            if self.maximum is not None:
                out["maximum"] = self.maximum
        if self.default is not None:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        return out

    def convert(self, value: Any, *, from_text: bool) -> Any:
        """Check and convert one value (text from a query string or form, or JSON)."""
        if self.kind == "list":
            if not from_text and not isinstance(value, list):
                raise self._invalid('must be a list of strings, e.g. ["a", "b"]')
            items = value if isinstance(value, list) else [value]
            if from_text:  # --tag a --tag b,c on the command line; ?tag=a&tag=b,c here
                items = [p.strip() for v in items for p in str(v).split(",") if p.strip()]
            if len(items) > self.max_items:
                raise self._invalid(f"at most {self.max_items} items (got {len(items)})")
            return [self._text(item) for item in items]
        if self.kind == "str":
            return self._text(value)
        if self.kind == "bool":
            return self._bool(value, from_text)
        return self._number(value, from_text)

    def _text(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self._invalid("must be a string")
        if len(value) > self.max_len:
            raise self._invalid(f"at most {self.max_len} characters (got {len(value)})")
        if "\x00" in value:
            raise self._invalid("must not contain NUL characters")
        if self.choices and value not in self.choices:
            raise self._invalid(f"must be one of: {', '.join(self.choices)}")
        return value

    def _bool(self, value: Any, from_text: bool) -> bool:
        if isinstance(value, bool):
            return value
        if (
            from_text
            and isinstance(value, str)
            and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off", "")
        ):
            return value.lower() in ("1", "true", "yes", "on")
        raise self._invalid("must be true or false")

    def _number(self, value: Any, from_text: bool) -> float | int:
        number: float | int
        if isinstance(value, bool):
            raise self._invalid(f"must be {'a whole number' if self.kind == 'int' else 'a number'}")
        if from_text and isinstance(value, str):
            try:
                number = int(value) if self.kind == "int" else float(value)
            except ValueError:
                raise self._invalid(
                    f"must be {'a whole number' if self.kind == 'int' else 'a number'}"
                ) from None
        elif isinstance(value, int) or (self.kind == "float" and isinstance(value, float)):
            number = value
        else:
            raise self._invalid(f"must be {'a whole number' if self.kind == 'int' else 'a number'}")
        if not math.isfinite(number):
            raise self._invalid("must be a finite number")
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            raise self._invalid(f"must be between {self.minimum:g} and {self.maximum:g}")
        return number

    def _invalid(self, message: str) -> ValidationError:
        return ValidationError(message, field=self.name)


def parse_pairs(pairs: list[tuple[str, str]], params: tuple[Param, ...], *, strict: bool = False) -> dict:
    """Arguments from (name, value) pairs: a query string or a submitted form.

    Unknown names are ignored (forms carry buttons and tokens) unless `strict`.
    An empty value means "not given".
    """
    by_name = {p.name: p for p in params}
    values: dict[str, list[str]] = {}
    for name, value in pairs:
        if name in by_name:
            values.setdefault(name, []).append(value)
        elif strict:
            raise ValidationError("unknown parameter", field=name)
    out = {}
    for param in params:
        given = [v for v in values.get(param.name, []) if v != ""]
        if not given:
            if param.kind == "bool" and param.name in values:
                given = [""]  # an unchecked-box style "name=" means false
            elif param.required:
                raise ValidationError("is required", field=param.name)
            else:
                if param.default is not None:
                    out[param.target] = param.default
                continue
        out[param.target] = param.convert(given if param.kind == "list" else given[-1], from_text=True)
    return out


def parse_json_object(raw: bytes, params: tuple[Param, ...]) -> dict:
    """Arguments from a JSON object body; unknown fields are a 422 naming the field."""
    if not raw.strip():
        data: Any = {}
    else:
        try:
            data = json.loads(raw)
        except UnicodeDecodeError:
            raise UsageError("the request body is not UTF-8; send UTF-8 JSON") from None
        except ValueError as err:
            raise UsageError(f"the request body is not valid JSON ({err}); send a JSON object") from None
    if not isinstance(data, dict):
        raise UsageError('the request body must be a JSON object, e.g. {"body": "..."}')
    by_name = {p.name: p for p in params}
    for name in data:
        if name not in by_name:
            allowed = ", ".join(by_name) or "none"
            raise ValidationError(f"unknown field (fields: {allowed})", field=str(name)[:100])
    out = {}
    for param in params:
        if data.get(param.name) is None:
            if param.required:
                raise ValidationError("is required", field=param.name)
            if param.default is not None:
                out[param.target] = param.default
            continue
        _no_lone_surrogates(param.name, data[param.name])
        out[param.target] = param.convert(data[param.name], from_text=False)
    return out


def _no_lone_surrogates(name: str, value: Any) -> None:
    """JSON can spell half a UTF-16 pair ("\\ud800"); no file or index can hold it."""
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise ValidationError(
                    "holds half of a UTF-16 surrogate pair (a \\udXXX escape alone); send whole characters",
                    field=name,
                ) from None


def parse_form(raw: bytes) -> list[tuple[str, str]]:
    """The (name, value) pairs of an application/x-www-form-urlencoded body."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise UsageError("the form is not URL-encoded; submit it from the page") from None
    try:
        return parse_qsl(text, keep_blank_values=True, errors="strict", max_num_fields=20_000)
    except (UnicodeDecodeError, ValueError):
        raise UsageError(
            "the form is not valid UTF-8 or has too many fields; submit it from the page"
        ) from None


async def read_body(request, limit: int = MAX_REQUEST_BYTES) -> bytes:
    """The request body, refusing (413) more than `limit` bytes however it is sent."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(too_large_message(int(declared), limit))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(too_large_message(size, limit))
        chunks.append(chunk)
    return b"".join(chunks)


def too_large_message(size: int, limit: int) -> str:
    return (
        f"the request body is over {limit // (1024 * 1024)} MiB (at least {size:,} bytes); "
        "send less (a memory's body may be up to 5 MiB)"
    )
