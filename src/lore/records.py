"""One serialisation for every public record.

CLI ``--json``, MCP results, the HTTP API and the Python API's ``to_dict()``
all print the same shapes: a record's dataclass fields, **snake_case**, with
seed 003's names where 003 defines the schema (``file_path``, ``start_line``,
``memory_type``, ``source_work_item_id``, ``created_at``...). A field marked
``internal()`` stays out; nested records and lists of them are converted too.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")


@overload
def datarecord(cls: type[_T], /) -> type[_T]: ...
@overload
def datarecord(*, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field,))
def datarecord(cls: type[_T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclass``, with one ``__eq__`` and ``__repr__`` shared by every class.

    Equal to what ``@dataclass`` makes (the same fields compared and shown,
    unhashable), but ``@dataclass`` compiles source for each class's three
    methods when its module is imported: a cold ``lore recall`` loads ~60
    such classes, and compiling ``__eq__`` and ``__repr__`` was a third of
    their cost. ``__init__`` stays generated, as fast as hand-written.
    """

    def wrap(klass: type[_T]) -> type[_T]:
        made = dataclasses.dataclass(eq=False, repr=False, kw_only=kw_only)(klass)
        own = vars(klass)
        if "__eq__" not in own:
            made.__eq__ = _eq  # type: ignore[method-assign]
            made.__hash__ = None  # type: ignore[assignment]  # as @dataclass(eq=True) leaves it
        if "__repr__" not in own:
            made.__repr__ = _repr  # type: ignore[method-assign]
        return made

    return wrap if cls is None else wrap(cls)


def _compared(cls: type) -> tuple[str, ...]:
    names = cls.__dict__.get("_compared_fields")
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.compare)
        cls._compared_fields = names  # type: ignore[attr-defined]
    return names


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _compared(self.__class__)
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = (f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{self.__class__.__qualname__}({', '.join(shown)})"


def internal(**kwargs: Any) -> Any:
    """A dataclass field that is not part of the record's public shape."""
    metadata = {**kwargs.pop("metadata", {}), "public": False}
    return dataclasses.field(metadata=metadata, repr=False, **kwargs)


def to_dict(value: Any) -> Any:
    """The JSON-ready form of `value`: records become dicts, recursively."""
    if isinstance(value, Record):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_dict(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.metadata.get("public", True)
        }
    if isinstance(value, dict):
        return {str(k): to_dict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_dict(v) for v in value]
    if isinstance(value, float):
        return round(value, 4)
    return value


class Record:
    """Base of public dataclass records: ``to_dict()`` is their one JSON shape."""

    def to_dict(self) -> dict[str, Any]:
        assert dataclasses.is_dataclass(self)
        return {
            f.name: to_dict(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.metadata.get("public", True)
        }
