"""Filling in vectors for chunks that have none yet.

Chunks are searchable by BM25 the moment they are indexed; vectors follow.
Each batch is committed on its own, so an interrupted run (Ctrl-C, kill)
keeps everything embedded so far and the next run resumes where it stopped.
Vectors are keyed by chunk content hash, so text that was embedded once —
before a rename, on another branch, in another file — is never embedded again.

The index also remembers the size of its vectors: a model that changes under
the same name (another model served as "m" by a local server, another
base_url) returns vectors of another size, which are refused rather than
mixed with the old ones (their matrix would be garbage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lore.errors import ProviderError
from lore.storage import Store

if TYPE_CHECKING:
    from lore.embed import Embedder

BATCH = 64


def dim_key(model: str) -> str:
    """The meta key holding the size of the index's vectors of `model` ("" after a re-embed)."""
    return f"embed_dim:{model}"


def indexed_dim(store: Store, model: str) -> int | None:
    """The size of the index's vectors of `model`; None while it holds none."""
    known = store.get_meta(dim_key(model))
    if known:
        return int(known)
    if known is None:  # an index from before the key: its vectors tell
        for _, vector in store.dump_embeddings(model):
            return len(vector)
    return None


def check_dim(store: Store, model: str, dim: int) -> None:
    """Refuse vectors of `dim` for an index whose vectors of `model` are another size.

    Raises:
        ProviderError: the sizes differ; says to re-embed.
    """
    expected = indexed_dim(store, model)
    if expected is not None and dim != expected:
        raise ProviderError(
            f"{model} now returns {dim}-dimensional vectors, but the index's are {expected}-dimensional: "
            "the model behind this name changed; run `lore index --reembed` (BM25 only until then)"
        )


def embed_pending(
    store: Store,
    embedder: Embedder,
    *,
    progress: Callable[[int, int], None] | None = None,
    limit: int | None = None,
    kind: str | None = None,
) -> int:
    """Embed chunks lacking a vector for `embedder.model_id`. Returns how many were embedded.

    Args:
        progress: called with (done, total) after each batch.
        limit: stop after about this many (e.g. inline before a search).
        kind: only chunks of this kind (memory, code, commit).
    """
    import numpy as np

    model = embedder.model_id
    step = BATCH
    if getattr(embedder, "base_url", None) is not None:
        # A remote provider's request is what a failure loses: save after each one.
        step = min(BATCH, int(getattr(embedder, "batch_size", BATCH)))
    if store.all_embedded(model):
        return 0
    total = store.count_pending(model, kind, cap=limit)
    done = 0
    while done < total:
        batch = store.pending_embeddings(model, min(step, total - done), kind)
        if not batch:
            break
        vectors = np.asarray(embedder.embed_documents([text for _, text in batch]), dtype=np.float32)
        check_dim(store, model, int(vectors.shape[1]))
        with store.transaction():
            store.put_embeddings(model, [h for h, _ in batch], vectors)
            if not store.get_meta(dim_key(model)):
                store.set_meta(dim_key(model), str(vectors.shape[1]))
        done += len(batch)
        if limit is None and done >= total:
            # Chunks written meanwhile (another process's `lore add`) come first in
            # `pending_embeddings` and took part of this run's count: go on to the end.
            total += store.count_pending(model, kind)
        if progress:
            progress(done, total)
    if not store.count_pending(model, cap=1):
        with store.transaction():
            store.mark_all_embedded(model)  # later reads skip the pending scan
    return done
