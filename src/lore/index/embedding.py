"""Filling in vectors for chunks that have none yet.

Chunks are searchable by BM25 the moment they are indexed; vectors follow.
Each batch is committed on its own, so an interrupted run (Ctrl-C, kill)
keeps everything embedded so far and the next run resumes where it stopped.
Vectors are keyed by chunk content hash, so text that was embedded once —
before a rename, on another branch, in another file — is never embedded again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lore.storage import Store

if TYPE_CHECKING:
    from lore.embed import Embedder

BATCH = 64


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
        with store.transaction():
            store.put_embeddings(model, [h for h, _ in batch], vectors)
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
