"""Every backend implements the whole Store protocol (storage/base.py), with
the protocol's parameters: a method added to the protocol fails here until
each backend has it (docs/postgres.md, "Adding a Store method")."""

from __future__ import annotations

import inspect

import pytest

from lore.storage.base import Store
from lore.storage.postgres.store import PostgresStore
from lore.storage.sqlite.store import SQLiteStore

BACKENDS = [SQLiteStore, PostgresStore]


def protocol_methods() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(Store).items()
        if callable(member) and not name.startswith("_")
    }


def shape(signature: inspect.Signature) -> list[tuple[str, object, object]]:
    """Parameter names, kinds and defaults (annotations are strings, spelled freely)."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.storage_independent
def test_the_protocol_is_read_whole():
    methods = protocol_methods()
    assert {"memory_page", "source_counts", "code_files", "paths_changed", "repair"} <= set(methods)
    assert {"notices", "on_rebuild"} <= set(Store.__annotations__)


@pytest.mark.storage_independent
@pytest.mark.parametrize("backend", BACKENDS, ids=lambda cls: cls.__name__)
def test_backend_has_every_protocol_method_with_its_parameters(backend):
    wrong = []
    for name, expected in protocol_methods().items():
        found = getattr(backend, name, None)
        if not callable(found):
            wrong.append(f"{backend.__name__}.{name} is missing")
        elif shape(inspect.signature(found)) != shape(expected):
            wrong.append(f"{backend.__name__}.{name}{inspect.signature(found)} != Store.{name}{expected}")
    assert wrong == []


def test_the_open_store_has_the_protocols_attributes(project):
    """On whichever backend this run uses (./scripts/test --backend ...)."""
    store = project.store
    assert isinstance(store, Store)
    for name in Store.__annotations__:
        assert hasattr(store, name), name
    assert store.on_rebuild is not None  # the service hands every store its refill
