"""Sentence embeddings from a BERT-style ONNX encoder, run in-process.

Used by both the default model (bundled MiniLM) and the `onnx` provider (any
directory with `model.onnx` + `tokenizer.json`). numpy, onnxruntime and
tokenizers are imported only when the first text is embedded.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.embed._files import cache_dir
from lore.embed._vectors import l2_normalise
from lore.errors import ProviderError

if TYPE_CHECKING:
    import numpy as np

# Texts tokenised at once: bounds memory (tokenizers' Encoding objects are
# large) while leaving enough texts to sort into length-homogeneous batches.
_WINDOW = 512
_QUERY_CHARS = 16_384  # far past 128 tokens of any text but runs of spaces

# Loaded models, shared by every encoder of the process with the same files and
# settings: a team server holds one Lore per user, and each would otherwise load
# its own copy. ONNX Runtime sessions and tokenizers are safe to call from
# several threads once configured.
_LOADED: dict[tuple[object, ...], tuple[Any, Any]] = {}
_LOADING = threading.Lock()
_TOKENIZERS: dict[tuple[object, ...], Any] = {}  # the same for tokenizers, whatever the model
_TOKENIZING = threading.Lock()  # not _LOADING: a model is loaded holding that one
# Sessions on one thread for queries, opened before a fork (see open_for_queries).
_FOR_QUERIES: dict[tuple[object, ...], Any] = {}


def _after_a_fork() -> None:
    """A forked child has none of its parent's threads.

    - A lock one of them held (a query's worker loading the model) would
      never be let go there: the locks are made again.
    - A session with a thread pool, inherited, still runs, but destroying it
      waits for its pool's threads: a child that ended normally (``sys.exit``,
      the end of a script) hung in its last breath. Such sessions are kept for
      the child's life, never freed; the child's own work loads a session of
      its own (:meth:`OnnxEncoder._load`).
    """
    global _LOADING, _TOKENIZING
    _LOADING, _TOKENIZING = threading.Lock(), threading.Lock()
    if _LOADED:
        import ctypes

        for session, _tokenizer in _LOADED.values():  # a reference no one lets go
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(session))
        _LOADED.clear()


os.register_at_fork(after_in_child=_after_a_fork)


def load_tokenizer(path: Path, max_tokens: int) -> Any:
    """The Hugging Face tokenizer of `path` (as the file is now), cutting at
    `max_tokens`, without padding; read once a process. Tokenizing nothing
    here, a process may fork after loading it (the tests' fork server does)."""
    from tokenizers import Tokenizer

    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size, max_tokens)
    with _TOKENIZING:
        found = _TOKENIZERS.get(key)
        if found is None:
            found = Tokenizer.from_file(str(path))
            found.no_padding()
            found.enable_truncation(max_length=max_tokens)
            _TOKENIZERS[key] = found
    return found


def default_threads() -> int:
    """CPU cores available to this process (respects affinity / containers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class OnnxEncoder:
    """An :class:`~lore.embed.Embedder` over an ONNX transformer encoder.

    Texts are tokenised, sorted by length and run in batches padded to the
    longest member (so short texts do not pay for long ones), pooled over the
    attention mask (or the [CLS] token) and L2-normalised; output rows are in
    input order.

    Args:
        model_path: the `.onnx` file to run (already verified by the caller).
        tokenizer_path: a Hugging Face `tokenizer.json`.
        model_id: identifier recorded with the vectors.
        pooling: "mean" (over the attention mask) or "cls".
        max_tokens: truncation length, special tokens included.
        batch_size: texts per model call.
        threads: intra-op threads (default: all available cores).
        dim: vector size if known; otherwise read from the loaded model.
    """

    concurrent_queries = True  # ONNX Runtime's sessions run from any thread

    def __init__(
        self,
        *,
        model_path: Path,
        tokenizer_path: Path,
        model_id: str,
        pooling: str = "mean",
        max_tokens: int = 128,
        batch_size: int = 8,
        threads: int | None = None,
        dim: int | None = None,
        optimized: bool = False,
    ):
        """`optimized`: the model file was saved after ORT's graph
        optimisations, so it is loaded without running them again."""
        self.model_id = model_id
        self.optimized = optimized
        self.model_path, self.tokenizer_path = Path(model_path), Path(tokenizer_path)
        self.pooling, self.max_tokens, self.batch_size = pooling, max_tokens, batch_size
        self.threads = threads or default_threads()
        self._dim = dim
        self._session: Any = None
        self._loaded_in = 0  # the process that loaded _session (a fork loads its own)
        self._tokenizer: Any = None

    @property
    def dim(self) -> int:
        """Vector size (loads the model if it was not given)."""
        if self._dim is None:
            self._load()
        if self._dim is None:  # symbolic output size: run the model once
            self._dim = int(self.embed_query("dimension probe").shape[0])
        return self._dim

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: float32 [dim], unit length. The model reads its
        first 128 tokens: a pasted 100 KB log is not tokenized whole (~0.5 s)."""
        text = text[:_QUERY_CHARS]
        session = _FOR_QUERIES.get(self._files_key()) if self._session is None else None
        if session is not None:  # opened before this process forked: the model is not loaded again
            self._set_loaded(session, load_tokenizer(self.tokenizer_path, self.max_tokens), keep=False)
            row: np.ndarray = self._run([self._tokenizer.encode(text).ids], session)[0]
        else:
            row = self.embed_documents([text])[0]
        return row

    def embed_query_beside(self, text: str) -> np.ndarray:
        """:meth:`embed_query` on the one-thread session (opened on first use): for
        a query embedded beside other work (``EmbeddingRuntime.prefetch``), where
        the pool's second thread would take the core that work runs on (recall's
        first pass: 66 → 55 ms, docs/benchmarks.md). The same vector."""
        key = self._files_key()
        if key not in _FOR_QUERIES:
            self.open_for_queries()
        session = _FOR_QUERIES[key]
        if self._tokenizer is None:
            self._set_loaded(session, load_tokenizer(self.tokenizer_path, self.max_tokens), keep=False)
        row: np.ndarray = self._run([self._tokenizer.encode(text[:_QUERY_CHARS]).ids], session)[0]
        return row

    def open_for_queries(self) -> None:
        """Open this model on one thread for the queries of this process and of
        the processes it forks. A session without a thread pool survives a
        fork (one with a pool does not: its threads stay behind), and a query
        runs on one thread about as fast (~1 ms more); the warm server
        (lore.interfaces.warm) opens it once for every command it forks, so
        each saves opening the model (~70 ms). Texts to index still load the
        session of `threads` threads."""
        key = self._files_key()
        with _LOADING:
            if key not in _FOR_QUERIES:
                _FOR_QUERIES[key] = self._open(threads=1)[0]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed texts: float32 [len(texts), dim], unit-length rows, input order."""
        import numpy as np

        self._load()
        texts = list(texts)
        parts = [self._embed_window(texts[i : i + _WINDOW]) for i in range(0, len(texts), _WINDOW)]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _embed_window(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        rows: list[Any] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            members = order[start : start + self.batch_size]
            for i, row in zip(members, self._run([encodings[i].ids for i in members])):
                rows[i] = row
        return np.stack(rows)

    def _run(self, ids: list[list[int]], session: Any = None) -> np.ndarray:
        """Run one padded batch (on `session`, else the loaded one); return its pooled, normalised vectors."""
        import numpy as np

        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        out = (session or self._session).run(
            [self._output], {k: v for k, v in feeds.items() if k in self._inputs}
        )[0]
        if out.ndim == 3:  # token states [B, T, D] → one vector per text
            if self.pooling == "cls":
                out = out[:, 0]
            else:
                weights = mask[:, :, None].astype(np.float32)
                out = (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return l2_normalise(out)

    def _load(self) -> None:
        if self._session is not None and self._loaded_in == os.getpid():
            return
        with _LOADING:
            key = self._load_key()
            if key not in _LOADED:
                _LOADED[key] = self._open()
            session, tokenizer = _LOADED[key]
        self._set_loaded(session, tokenizer)

    def _load_key(self) -> tuple[object, ...]:
        """What makes two loaded models the same: the files (as they are now) and the settings."""
        return (*self._files_key(), self.threads)

    def _files_key(self) -> tuple[object, ...]:
        """:meth:`_load_key` but the threads: the same vectors whatever runs them."""
        stamps = []
        for path in (self.model_path, self.tokenizer_path):
            try:
                st = path.stat()
                stamps.append((str(path), st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append((str(path), 0, 0))
        return (*stamps, self.max_tokens, self.optimized)

    def _open(self, threads: int | None = None) -> tuple[Any, Any]:
        """Load the tokenizer and the ONNX session on `threads` (else this
        encoder's) intra-op threads; ProviderError naming the file on failure."""
        try:
            import onnxruntime as ort
            import tokenizers  # noqa: F401  (load_tokenizer's; missing, it is named here)
        except ImportError as exc:
            raise ProviderError(
                f"local embeddings need {exc.name}: pip install onnxruntime tokenizers numpy "
                f'(or set provider = "none" in [embedding] of .lore/config.toml)'
            ) from exc
        try:
            tokenizer = load_tokenizer(self.tokenizer_path, self.max_tokens)
        except Exception as exc:
            raise ProviderError(
                f"cannot load tokenizer {self.tokenizer_path}: {exc} — "
                f"it must be a Hugging Face tokenizer.json"
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or self.threads
        options.inter_op_num_threads = 1
        # Idle intra-op threads sleep instead of spinning: a one-query run is
        # 2x faster when the cores are shared (agents, editors, other
        # processes), and batches lose nothing (docs/benchmarks.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only; ORT warns about benign graph details
        if self.optimized:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            session = ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            fix = (
                "delete it (a cached, derived file; it is rebuilt)"
                if cache_dir() in self.model_path.parents
                else "check that it is a valid .onnx file"
            )
            raise ProviderError(f"cannot load ONNX model {self.model_path}: {exc} — {fix}") from exc
        inputs = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise ProviderError(
                f"ONNX model {self.model_path} has inputs {sorted(inputs)}; "
                f"expected input_ids and attention_mask (a BERT-style encoder)"
            )
        return session, tokenizer

    def _set_loaded(self, session: Any, tokenizer: Any, *, keep: bool = True) -> None:
        """Read `session`'s inputs, output and size; `keep`: it is this encoder's session."""
        self._inputs = {i.name for i in session.get_inputs()}
        outputs = [o.name for o in session.get_outputs()]
        self._output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        self._tokenizer = tokenizer
        if keep:
            self._session, self._loaded_in = session, os.getpid()
        if self._dim is None:
            shape = next(o.shape for o in session.get_outputs() if o.name == self._output)
            self._dim = shape[-1] if isinstance(shape[-1], int) else None
