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


def test_the_size_of_the_index_s_vectors_is_read_from_one_of_them(project, monkeypatch):
    """An index without the size on record (made before it was kept, or moved
    from another backend by `lore db import`) reads one vector for it: reading
    every vector took PostgreSQL ~1 s a query on the flask clone."""
    import numpy as np

    from lore.errors import ProviderError
    from lore.index.embedding import check_dim, indexed_dim

    store = project.store
    assert store.embedding_dim("test-model") is None and indexed_dim(store, "test-model") is None
    project.add(title="Rollback", body="Roll the deploy back when the canary fails.")
    hashes = [h for h, _text in store.pending_embeddings("test-model", 10)]
    with store.transaction():
        store.put_embeddings("test-model", hashes, np.full((len(hashes), 12), 0.5, dtype=np.float32))

    def every_vector(*args, **kwargs):
        raise AssertionError("every vector read to learn their size")

    monkeypatch.setattr(type(store), "dump_embeddings", every_vector)
    assert store.embedding_dim("test-model") == 12 and store.embedding_dim("other-model") is None
    assert indexed_dim(store, "test-model") == 12
    check_dim(store, "test-model", 12)
    with pytest.raises(ProviderError, match="12-dimensional"):
        check_dim(store, "test-model", 24)
