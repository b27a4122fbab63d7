"""Filling in vectors for chunks that have none yet.

Chunks are searchable by BM25 the moment they are indexed; vectors follow.
Each batch is committed on its own, so an interrupted run (Ctrl-C, kill)
keeps everything embedded so far and the next run resumes where it stopped.
Vectors are keyed by chunk content hash, so text that was embedded once —
before a rename, on another branch, in another file — is never embedded again.

A text the provider refuses on its own (HTTP 400/413/422 for it alone, while
the others of its batch are taken) is remembered as refused (meta
``embed_refused:<model>``, at most REFUSED_MAX) and left to BM25: it no longer
stops every later run at the same batch. A refusal no text escapes (a wrong
model name) is an error, as before.

The index also remembers the size of its vectors: a model that changes under
the same name (another model served as "m" by a local server, another
base_url) returns vectors of another size, which are refused rather than
mixed with the old ones (their matrix would be garbage).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lore.errors import ProviderError
from lore.storage import Store
from lore.storage.base import embed_dim_key

if TYPE_CHECKING:
    from lore.embed import Embedder

BATCH = 64
REFUSED_MAX = 10_000  # refused texts remembered per model


def refused_key(model: str) -> str:
    """The meta key holding the hashes of the texts the provider of `model` refuses."""
    return f"embed_refused:{model}"


def refused(store: Store, model: str) -> set[str]:
    """Text hashes the provider of `model` refused on their own (left to BM25)."""
    try:
        found = json.loads(store.get_meta(refused_key(model)) or "[]")
    except ValueError:
        return set()
    return {h for h in found if isinstance(h, str)} if isinstance(found, list) else set()


def indexed_dim(store: Store, model: str) -> int | None:
    """The size of the index's vectors of `model`; None while it holds none."""
    known = store.get_meta(embed_dim_key(model))
    if known:
        return int(known)
    if known is None:  # an index from before the key (or moved from another backend): a vector tells
        return store.embedding_dim(model)
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
    """Embed chunks lacking a vector for `embedder.model_id`. Returns how many were embedded
    (texts the provider refuses on their own are left out, see the module's docstring).

    Args:
        progress: called with (done, total) after each batch.
        limit: stop after about this many (e.g. inline before a search).
        kind: only chunks of this kind (memory, code, commit).
    """

    model = embedder.model_id
    step = BATCH
    if getattr(embedder, "base_url", None) is not None:
        # A remote provider's request is what a failure loses: save after each one.
        step = min(BATCH, int(getattr(embedder, "batch_size", BATCH)))
    if store.all_embedded(model):
        return 0
    skip = refused(store, model)
    total = store.count_pending(model, kind, cap=limit)
    done = embedded = 0
    while done < total:
        wanted = min(step, total - done)
        rows = store.pending_embeddings(model, wanted + len(skip), kind)
        batch = [row for row in rows if row[0] not in skip][:wanted]
        if not batch:
            break
        taken, vectors, refusals = _embed_isolating(embedder, batch)
        if refusals:
            skip |= set(refusals)
            with store.transaction():
                store.set_meta(refused_key(model), json.dumps(sorted(skip)[:REFUSED_MAX]))
        embedded += len(taken)
        if taken:
            check_dim(store, model, int(vectors.shape[1]))
            with store.transaction():
                store.put_embeddings(model, taken, vectors)
                if not store.get_meta(embed_dim_key(model)):
                    store.set_meta(embed_dim_key(model), str(vectors.shape[1]))
        done += len(batch)
        if limit is None and done >= total:
            # Chunks written meanwhile (another process's `lore add`) come first in
            # `pending_embeddings` and took part of this run's count: go on to the end.
            total += store.count_pending(model, kind)
        if progress:
            progress(done, total)
    if not _pending_beyond(store, model, skip):
        with store.transaction():
            store.mark_all_embedded(model)  # later reads skip the pending scan
    return embedded


def _pending_beyond(store: Store, model: str, skip: set[str]) -> bool:
    """Whether a chunk other than the refused ones still lacks a vector (of any
    len(skip) + 1 that do, one at least is not refused)."""
    if not skip:
        return bool(store.count_pending(model, cap=1))
    return any(h not in skip for h, _ in store.pending_embeddings(model, len(skip) + 1, None))


def _embed_isolating(
    embedder: Embedder, batch: Sequence[tuple[str, str]]
) -> tuple[list[str], Any, list[str]]:
    """Embed `batch`: (hashes embedded, their vectors, hashes refused alone).

    A batch the provider refuses is halved until the texts it refuses stand
    alone; they count as refused only when the refusal is theirs, that is when
    another text of the batch is taken (or, none being left, a one-word probe
    is). Otherwise (a wrong model name) the refusal is raised as it came.
    """
    import numpy as np

    try:
        vectors = np.asarray(embedder.embed_documents([text for _, text in batch]), dtype=np.float32)
        return [h for h, _ in batch], vectors, []
    except ProviderError as err:
        if not err.refused_input:
            raise
        first = err
    taken: list[str] = []
    parts: list[Any] = []
    alone: list[str] = []
    pending = [list(batch)]
    while pending:
        part = pending.pop()
        try:
            parts.append(np.asarray(embedder.embed_documents([t for _, t in part]), dtype=np.float32))
            taken.extend(h for h, _ in part)
        except ProviderError as err:
            if not err.refused_input:
                raise
            if len(part) == 1:
                alone.append(part[0][0])
            else:
                middle = len(part) // 2
                pending += [part[middle:], part[:middle]]
    if not taken:  # is it these texts, or every request (a wrong model name, say)?
        try:
            embedder.embed_documents(["text"])
        except ProviderError:
            raise first from None
    return taken, (np.concatenate(parts) if parts else None), alone
