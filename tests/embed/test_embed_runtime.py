"""The embedding runtime's background start: the model loads and the query is
embedded while the index is checked, and searches get the same vector."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from test_embed_http import FAST, api  # noqa: F401 - `api` is a fixture

from lore.embed.runtime import EmbeddingRuntime

TASK = "how are url routes registered"


def local(notices: list[str] | None = None) -> EmbeddingRuntime:
    post = notices.append if notices is not None else print
    return EmbeddingRuntime({"provider": "local"}, root=None, notice=post)  # type: ignore[arg-type]


def test_prefetch_embeds_in_the_background_and_search_gets_the_same_vector(project):
    rt = local()
    rt.prefetch(project.store, TASK)
    assert rt._prefetch is not None
    rt._prefetch.join(timeout=60)
    assert TASK in rt._queries  # embedded by the background thread
    vector, model = rt.query_vector(project.store, TASK)
    assert vector is rt._queries[TASK]
    plain, plain_model = local().query_vector(project.store, TASK)
    assert model == plain_model and np.array_equal(vector, plain)


def test_prefetch_does_not_embed_for_an_index_of_another_model(project):
    with project.store.transaction():
        project.store.set_meta("embed_model", "openai:text-embedding-3-small")
    notices: list[str] = []
    rt = local(notices)
    rt.prefetch(project.store, TASK)
    rt._prefetch.join(timeout=60)
    assert rt._queries == {}
    assert rt.query_vector(project.store, TASK) == (None, None)
    assert len(notices) == 1 and "--reembed" in notices[0]


def test_prefetch_skips_empty_queries_and_remote_providers(api, project):  # noqa: F811
    rt = local()
    rt.prefetch(project.store, "   ")
    remote = EmbeddingRuntime(
        {"provider": "openai-compatible", "base_url": f"{api.url}/v1", "model": "m", **FAST},
        root=None,  # type: ignore[arg-type]
        notice=print,
    )
    remote.prefetch(project.store, TASK)  # a query goes to the network once, from the search
    off = EmbeddingRuntime({"provider": "none"}, root=None, notice=print)  # type: ignore[arg-type]
    off.prefetch(project.store, TASK)
    assert rt._prefetch is None and remote._prefetch is None and off._prefetch is None
    assert api.requests == []


@pytest.mark.parametrize("delay", [0.1, 0.2, 0.25, 0.3, 0.4, 0.6])
def test_a_process_that_ends_while_the_model_loads_exits_cleanly(project, delay):
    """The CLI may fail on bad input right after the background load began;
    the process must end with its own exit code, not an abort from a thread
    stopped inside onnxruntime's start-up (as a daemon thread was: exit 134
    about half the time with a 0.2-0.3 s delay)."""
    code = (
        "import sys, time, lore\n"
        "from lore.embed.runtime import EmbeddingRuntime\n"
        f"project = lore.open({str(project.project.root)!r})\n"
        "EmbeddingRuntime({'provider': 'local'}, root=None, notice=print).prefetch(project.store, 'a task')\n"
        f"time.sleep({delay})\n"
        "sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
