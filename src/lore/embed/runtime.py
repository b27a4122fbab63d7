"""The embedder's life in a process: loaded once, lazily; never mixed with other vectors.

:class:`EmbeddingRuntime` owns the configured provider for one project:
loading it on first use (a failure means BM25-only search and one notice),
checking that the index's vectors were made by the same model, embedding
pending chunks, and caching query vectors (recall embeds one query for
several searches). A query can be embedded ahead, on a worker thread
(:meth:`EmbeddingRuntime.prefetch`), while the keyword passes run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import ProviderError, UsageError

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    import numpy as np

    from lore.embed import Embedder
    from lore.storage import Store

# Pending chunks of one kind embedded inline before a search (more: `lore index`).
INLINE_EMBED_LIMIT = 256
_QUERY_CACHE = 64
_PREFETCHED = 4  # queries embedded ahead and not asked for yet, kept at most
_WORKER: ThreadPoolExecutor | None = None
_WORKER_LOCK = threading.Lock()


def _worker() -> ThreadPoolExecutor:
    """The process's one thread for queries embedded ahead (made on first use)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            from concurrent.futures import ThreadPoolExecutor  # (~4 ms: not for a one-shot command)

            _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lore-query")
        return _WORKER


def _no_worker_in_a_fork() -> None:
    """A forked child has no thread of its parent's: work handed to the parent's
    executor would never run (and a search wait for it). The child makes its own."""
    global _WORKER, _WORKER_LOCK
    _WORKER, _WORKER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_no_worker_in_a_fork)


class EmbeddingRuntime:
    """The configured embedder for one project, and the vectors it may use.

    Args:
        settings: the `[embedding]` table.
        root: the project root (relative model paths).
        notice: called with one-line messages for the user.
    """

    def __init__(self, settings: dict[str, Any], root: Path, notice: Callable[[str], None]):
        self.settings = dict(settings)
        self.root = root
        self._post = notice
        self.last_notice: str | None = None
        self._embedder: Embedder | None = None
        self.problem: str | None = None
        self._queries: dict[str, np.ndarray] = {}
        self._ahead: dict[str, Future[np.ndarray]] = {}
        self._ahead_in = os.getpid()  # the process whose worker makes them (a fork's are never made)

    def _notice(self, message: str) -> None:
        self.last_notice = message
        self._post(message)

    @property
    def provider(self) -> str:
        return str(self.settings.get("provider", "local"))

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, or None (provider "none", or it failed to load:
        then search is BM25-only and a notice says why, once)."""
        if self._embedder is None and self.problem is None:
            from lore.embed import load_embedder

            try:
                self._embedder = load_embedder(self.settings, root=self.root)
                if self._embedder is None:
                    self.problem = "embedding provider is 'none' ([embedding] in .lore/config.toml)"
            except ProviderError as err:
                self.problem = str(err)
                self._notice(f"vector search off, BM25 only: {err}")
        return self._embedder

    def model(self, store: Store, *, load: bool = True) -> str | None:
        """The model id vector search can use now, or None.

        The index remembers which model made its vectors; if the configured
        model differs, vectors are not mixed: search falls back to BM25 and
        the user is told to run `lore index --reembed`.
        """
        if self.provider == "none":
            self.problem = "embedding provider is 'none' ([embedding] in .lore/config.toml)"
            return None
        embedder = self.embedder if load else self._embedder
        if embedder is None:
            return None
        indexed = store.get_meta("embed_model")
        if indexed is None:
            with store.transaction():
                store.set_meta("embed_model", embedder.model_id)
            return embedder.model_id
        if indexed != embedder.model_id:
            self._notice(
                f"the index's vectors were made with {indexed} but the configured model is "
                f"{embedder.model_id}; run `lore index --reembed` (BM25 only until then)"
            )
            return None
        return embedder.model_id

    def embed_pending(
        self,
        store: Store,
        *,
        progress: Callable[[int, int], None] | None = None,
        limit: int | None = None,
        kind: str | None = None,
    ) -> int:
        """Embed chunks that have no vector yet; returns how many."""
        if self.model(store) is None:
            return 0
        from lore.index.embedding import embed_pending, refused

        assert self._embedder is not None
        model = self._embedder.model_id
        before = len(refused(store, model))
        done = embed_pending(store, self._embedder, progress=progress, limit=limit, kind=kind)
        now = len(refused(store, model))
        if now > before:
            self._notice(
                f"{self.provider} refused {now - before} text(s) on their own (too long for the model?); "
                "keyword search finds them, vector search leaves them out"
            )
        return done

    def embed_fresh(self, store: Store, kind: str = "memory") -> int:
        """Embed what was just written (at most INLINE_EMBED_LIMIT chunks of `kind`),
        so it is found by meaning at once; a provider failure is a notice, not an
        error (BM25 finds it meanwhile, `lore index` embeds it later)."""
        try:
            with _interactive(self._embedder):
                return self.embed_pending(store, kind=kind, limit=INLINE_EMBED_LIMIT)
        except ProviderError as err:
            self._notice(f"not embedded yet (BM25 finds it): {err}")
            return 0

    def reembed(self, store: Store, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every chunk again with the configured model (after a model
        change, or when its files changed under the same name): all vectors
        are dropped first, once the model has embedded a first text. Returns
        how many texts were embedded."""
        embedder = self.embedder
        if embedder is None:
            raise UsageError(
                f"no embedding model available ({self.problem}); "
                "set [embedding] provider in .lore/config.toml"
            )
        from lore.index.embedding import refused_key
        from lore.storage.base import embed_dim_key

        # A provider that cannot embed (unreachable, a wrong key or model name)
        # fails here, before a vector is dropped: trying one out must not cost
        # the index its search by meaning.
        embedder.embed_query("lore")
        with store.transaction():
            store.set_meta("embed_model", embedder.model_id)
            store.set_meta(embed_dim_key(embedder.model_id), "")  # the new vectors' size is theirs
            store.set_meta(refused_key(embedder.model_id), "")  # and so are its refusals
            store.drop_embeddings(None)
        return self.embed_pending(store, progress=progress)

    @property
    def similarity_levels(self) -> tuple[float, float, float] | None:
        """The model's cosine levels, if its embedder declares them: relevance
        0 and 1 (search maps similarities to 0-1 between them) and the level
        below which a vector-only hit is no match; None: the default model's."""
        return getattr(self._embedder, "similarity_levels", None)

    def query_vector(
        self, store: Store, text: str, kind: str = "memory"
    ) -> tuple[np.ndarray | None, str | None]:
        """The query's embedding and the model it belongs to, or (None, None)
        when vector search is unavailable."""
        model = self.model(store)
        if model is None:
            return None, None
        try:
            # Chunks written since the last `lore index` are few: embed them now,
            # so a fresh memory is found by meaning straight away.
            if (
                not store.all_embedded(model)
                and store.count_pending(model, kind, cap=INLINE_EMBED_LIMIT + 1) <= INLINE_EMBED_LIMIT
            ):
                with _interactive(self._embedder):
                    self.embed_pending(store, kind=kind)
            if text not in self._queries:
                if len(self._queries) > _QUERY_CACHE:
                    self._queries.clear()
                assert self._embedder is not None
                from lore.index.embedding import check_dim

                vector = self._taken(self._handed_over().pop(text, None))
                if vector is None:
                    vector = self._embedder.embed_query(text)
                check_dim(store, model, len(vector))
                self._queries[text] = vector
            return self._queries[text], model
        except ProviderError as err:
            self._notice(f"vector search off, BM25 only: {err}")
            return None, None

    def prefetch(self, store: Store, text: str, kinds: Sequence[str] = ()) -> bool:
        """Start embedding `text` as a query on the worker thread, so that it is
        ready when a search asks :meth:`query_vector` for it; meanwhile this
        thread runs the keyword passes (the model, numpy and SQLite all let go
        of the interpreter while they work). The worker then does what the
        store can do ahead of the vector passes of `kinds`
        (:meth:`~lore.storage.Store.vectors_ahead`). Only for a model already
        loaded that takes queries from any thread; whether it started (or
        was ready)."""
        embedder = self._embedder
        if text in self._queries or text in self._handed_over():
            return True
        if embedder is None or not getattr(embedder, "concurrent_queries", False):
            return False
        model = self.model(store, load=False)
        if model is None:
            return False
        while len(self._ahead) >= _PREFETCHED:  # never asked for: dropped, oldest first
            self._ahead.pop(next(iter(self._ahead))).cancel()
        # A model with a one-thread session embeds on it: two threads would take both cores.
        embed = getattr(embedder, "embed_query_beside", embedder.embed_query)
        then = [ahead for kind in kinds if (ahead := store.vectors_ahead(kind, model)) is not None]
        from concurrent.futures import Future

        vector: Future[np.ndarray] = Future()
        try:
            _worker().submit(_embed_then, embed, text, vector, then)
        except RuntimeError:  # the interpreter is shutting down: no new threads
            return False
        self._ahead[text] = vector
        return True

    def _handed_over(self) -> dict[str, Future[np.ndarray]]:
        """The queries handed to this process's worker (a fork's parent's never come)."""
        if self._ahead_in != os.getpid():
            self._ahead, self._ahead_in = {}, os.getpid()
        return self._ahead

    def _taken(self, ahead: Future[np.ndarray] | None) -> np.ndarray | None:
        """The vector embedded ahead, or None when that failed (the one-thread
        session did not open, say): the query is then embedded here, where a
        failure of the model itself is met and told as before."""
        if ahead is None:
            return None
        try:
            return ahead.result()
        except Exception:  # embedded again on this thread
            return None

    def status(self, store: Store, *, load: bool = True) -> dict[str, Any]:
        """Search mode, model, vectors and pending embeddings (for stats/status)."""
        model = self.model(store, load=load)
        indexed = store.get_meta("embed_model")
        return {
            "search": "hybrid" if model else "bm25",
            "embedding": model,
            "indexed_model": indexed,
            "embedding_problem": None if model else (self.problem or self.last_notice),
            "vectors": store.count_embeddings(indexed) if indexed else 0,
            "pending_embeddings": store.count_pending(model) if model else None,
        }


def _embed_then(
    embed: Callable[[str], np.ndarray],
    text: str,
    out: Future[np.ndarray],
    then: Sequence[Callable[[np.ndarray], None]],
) -> None:
    """Give `out` `text`'s query vector (or the embedder's failure), then each of
    `then` the vector: the search takes the vector as soon as it is made. Work
    done ahead that fails is left for the search, which meets the failure itself."""
    if not out.set_running_or_notify_cancel():
        return
    try:
        vector = embed(text)
    except BaseException as err:
        out.set_exception(err)
        return
    out.set_result(vector)
    for work in then:
        try:
            work(vector)
        except Exception:  # only work done ahead is lost
            continue


def _interactive(embedder: object) -> AbstractContextManager[object]:
    """The embedder's short-wait mode, for work a person waits on (HTTP
    providers: `query_timeout`, one retry); a local model has none."""
    from contextlib import nullcontext

    interactive = getattr(embedder, "interactive", None)
    return interactive() if interactive is not None else nullcontext()
