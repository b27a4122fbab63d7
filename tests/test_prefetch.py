"""A query embedded ahead on a worker thread (EmbeddingRuntime.prefetch) while
the keyword passes run: the same results as a query embedded when its vector
pass needs it. A real project, a real git repository, the bundled model."""

from __future__ import annotations

import threading

import numpy as np

import lore
from lore.embed import runtime
from test_retrieval_v2 import commit, write

TOPICS = {
    "invoices": "Compute invoice totals and round each line to cents",
    "accounts": "Create user accounts and hash their passwords",
    "mailer": "Send the weekly digest email to every subscriber",
    "search": "Rank products by how well their names match the query",
    "reports": "Render the monthly sales report as a PDF",
}
TASKS = [
    "Round invoice lines to cents",
    "hash passwords with a stronger algorithm",
    "the digest email goes out twice",
    "rank products by name similarity",
    "monthly report totals are wrong",
]


def _project(repo) -> lore.Lore:
    for name, summary in TOPICS.items():
        write(repo, f"app/{name}.py", f"def {name}_job(rows):\n    '''{summary}.'''\n    return rows\n")
        commit(repo, summary)
    lore.init(repo).close()
    project = lore.open(repo)
    project.index_code()
    for name, summary in TOPICS.items():
        project.add(
            body=f"{summary}: keep the {name} job idempotent.", type="convention", title=f"{name} rule"
        )
    return project


def _results(project: lore.Lore, task: str) -> tuple[object, ...]:
    """Every kind of search for `task`, code first (a memory search embeds on the
    spot: its vector pass comes first; it takes a vector embedded ahead, though)."""
    files = [(h.file_path, h.similarity) for h in project.code_search(task, files_only=True, fresh=False)]
    chunks = [(h.file_path, h.start_line, h.similarity) for h in project.code_search(task, fresh=False)]
    work = [(c.sha, c.relevance) for c in project.history(task, fresh=False)]
    pack = project.recall(task, fresh=False)  # (its order moves with each recall's access to a memory)
    memories = [(h.id, h.score) for h in project.search(task)]
    return memories, files, chunks, work, sorted((it.kind, it.key) for it in pack.items)


def test_a_query_embedded_ahead_gives_what_one_embedded_on_the_spot(repo):
    with _project(repo) as project:
        project.search("load the model")  # prefetch is for a model already loaded
        embedding = project.embedding
        embedder = embedding.embedder
        assert embedder is not None and embedder.concurrent_queries
        embedded_on = []
        real = embedder.embed_query_beside

        def beside(text: str) -> np.ndarray:
            embedded_on.append(threading.current_thread().name)
            return real(text)

        embedder.embed_query_beside = beside
        ahead = [_results(project, task) for task in TASKS]
        assert embedded_on and all(name.startswith("lore-query") for name in embedded_on)
        embedder.concurrent_queries = False  # every query embedded where its vector pass asks
        embedding._queries.clear()
        on_the_spot = [_results(project, task) for task in TASKS]
        assert len(embedded_on) == len(set(TASKS))  # none of these went to the worker
    assert ahead == on_the_spot


def test_the_one_thread_session_gives_the_same_vector(repo):
    with _project(repo) as project:
        embedder = project.embedding.embedder
        for task in TASKS:
            assert np.array_equal(embedder.embed_query(task), embedder.embed_query_beside(task))


def test_queries_embedded_ahead_and_never_asked_for_are_dropped(repo):
    with _project(repo) as project:
        project.search("load the model")
        embedding = project.embedding
        texts = [f"{task} ({n})" for n, task in enumerate(TASKS * 2)]
        for text in texts:
            assert embedding.prefetch(project.store, text)
        assert list(embedding._ahead) == texts[-runtime._PREFETCHED :]
        vector, model = embedding.query_vector(project.store, texts[-1])  # taken from the worker
        assert texts[-1] not in embedding._ahead and model and vector is not None
        assert np.array_equal(vector, embedding.embedder.embed_query(texts[-1]))


def test_no_prefetch_without_a_loaded_model_or_with_vectors_off(repo):
    with _project(repo) as project:
        fresh = lore.open(repo)  # this process has the model; this project's runtime has not loaded it
        try:
            assert not fresh.embedding.prefetch(fresh.store, "anything at all")
        finally:
            fresh.close()
        project.store.set_meta("embed_model", "another-model")  # the index's vectors are another model's
        assert not project.embedding.prefetch(project.store, "anything else")


def _search_in_child(project, queue) -> None:
    queue.put([h.id for h in project.search("invoice totals in cents")])


def test_a_process_forked_while_a_query_was_embedded_ahead_embeds_its_own(repo):
    """A fork has none of its parent's threads: a query handed to the parent's
    worker is never embedded there, and the child's search must not wait for it."""
    import multiprocessing

    with _project(repo) as project:
        project.search("load the model")
        assert project.embedding.prefetch(project.store, "invoice totals in cents")
        expected = [h.id for h in project.search("invoice totals in cents")]
        assert project.embedding.prefetch(project.store, "invoice totals in cents")  # (cached: at once)
        project.embedding._queries.clear()
        assert project.embedding.prefetch(project.store, "invoice totals in cents")
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_search_in_child, args=(project, queue))
        child.start()
        child.join(timeout=60)
        alive = child.is_alive()
        if alive:
            child.kill()
        assert not alive and child.exitcode == 0
        assert queue.get(timeout=5) == expected


def test_a_query_the_worker_failed_to_embed_is_embedded_on_the_spot(repo):
    """The worker's one-thread session failing (it did not open, say) must not
    cost the search its vectors, nor hang it."""
    with _project(repo) as project:
        project.search("load the model")
        embedder = project.embedding.embedder
        expected = _results(project, TASKS[0])
        project.embedding._queries.clear()

        def broken(text: str) -> np.ndarray:
            raise RuntimeError("the one-thread session did not open")

        embedder.embed_query_beside = broken
        assert _results(project, TASKS[0])[1:4] == expected[1:4]  # files, chunks, past work
        assert project.embedding._queries  # embedded, on this thread


def test_no_prefetch_once_the_worker_is_shut_down(repo):
    """At interpreter shutdown no new work can start: a search then embeds its
    query itself, and leaves no promise of a vector behind it."""
    with _project(repo) as project:
        project.search("load the model")
        worker = runtime._worker()
        worker.shutdown()
        try:
            assert not project.embedding.prefetch(project.store, "invoice totals")
            assert "invoice totals" not in project.embedding._ahead
            assert [h.file_path for h in project.code_search("invoice totals", fresh=False)]
        finally:
            runtime._WORKER = None


def _product_in_child(vectors, query, queue) -> None:
    queue.put(vectors.similarities(query, 2).tolist())


def test_a_fork_does_not_wait_for_a_product_its_parent_was_working_out():
    """A VectorSet forked while the worker worked a product out: the child's
    search waited for it forever (its thread is not in the child)."""
    import multiprocessing

    from lore.storage.sqlite.vectors import VectorSet, _Product

    matrix = np.eye(4, dtype=np.float32)
    vectors = VectorSet(1, np.arange(4), matrix, None)
    query = np.array([1, 0, 0, 0], dtype=np.float32)
    vectors._product = _Product(query.tobytes(), 4)  # claimed by the parent's worker, not done
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_product_in_child, args=(vectors, query, queue))
    child.start()
    child.join(timeout=30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and queue.get(timeout=5) == [1.0, 0.0, 0.0, 0.0]
