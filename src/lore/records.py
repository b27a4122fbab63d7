"""One serialisation for every public record.

CLI ``--json``, MCP results, the HTTP API and the Python API's ``to_dict()``
all print the same shapes: a record's dataclass fields, **snake_case**, with
seed 003's names where 003 defines the schema (``file_path``, ``start_line``,
``memory_type``, ``source_work_item_id``, ``created_at``...). A field marked
``internal()`` stays out; nested records and lists of them are converted too.
"""

from __future__ import annotations

import dataclasses
from typing import Any


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
