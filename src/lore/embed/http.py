"""Embedding APIs over HTTP: OpenAI, OpenAI-compatible servers, Gemini, Voyage.

Standard library only (urllib + json, through :mod:`lore.http_post`), so these
providers add no dependency. Texts go out in batches; 429 and 5xx responses
and connection failures are retried with exponential back-off (honouring
Retry-After); every other failure becomes a :class:`~lore.errors.ProviderError`
that says what to fix.
API keys come from environment variables (named by `api_key_env`), never
from the config file, and never appear in messages.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lore.embed._vectors import l2_normalise
from lore.embed.config import MAX_SECONDS, Option, check_endpoint, read_options
from lore.errors import ProviderError
from lore.http_post import Endpoint, post_json
from lore.http_post import retry_after as _retry_after  # noqa: F401  (tests import it from here)

if TYPE_CHECKING:
    import numpy as np

_CONFIG = "[embedding] in .lore/config.toml"

_SPEC = {
    "model": Option(str),
    "api_key_env": Option(str),
    "base_url": Option(str),
    "dimensions": Option(int, None, minimum=1),
    "batch_size": Option(int, None, minimum=1),
    "timeout": Option(float, 60.0, minimum=0.001, maximum=MAX_SECONDS),
    "max_retries": Option(int, 5, minimum=0),
    "retry_backoff": Option(float, 1.0, minimum=0.0),
    # What a search (its query, and the few chunks it embeds on the spot) or an
    # add waits: seconds per attempt, and one retry. A hung server made a search
    # wait timeout x (max_retries + 1) plus back-off (over 6 minutes by default)
    # before it fell back to keywords; `lore index` keeps timeout and max_retries.
    "query_timeout": Option(float, 10.0, minimum=0.001, maximum=MAX_SECONDS),
}


class HttpEmbedder:
    """Shared machinery of the HTTP providers; subclasses define the wire format.

    Args:
        provider: the `[embedding] provider` value (used in model ids and messages).
        options: validated settings (see `_SPEC`).
    """

    default_model: str | None = None
    default_base_url: str | None = None
    default_key_env: str | None = None
    key_required = True
    default_batch_size = 64
    known_dims: dict[str, int] = {}

    def __init__(self, provider: str, options: dict[str, Any]):
        self.provider = provider
        model: str | None = options["model"] or self.default_model
        base_url: str | None = options["base_url"] or self.default_base_url
        if not model:
            raise ProviderError(f"provider '{provider}' needs model = \"<model name>\" in {_CONFIG}")
        if not base_url:
            raise ProviderError(
                f"provider '{provider}' needs base_url, e.g. \"http://localhost:11434/v1\" "
                f'(Ollama) or "http://localhost:1234/v1" (LM Studio), in {_CONFIG}'
            )
        self.model: str = model
        self.base_url: str = base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ProviderError(
                f"base_url must start with http:// or https://, got {self.base_url!r} — check {_CONFIG}"
            )
        self.key_env: str | None = options["api_key_env"] or self.default_key_env
        check_endpoint(self.base_url, self.key_env)
        self._key = os.environ.get(self.key_env) if self.key_env else None
        if not self._key and (self.key_required or options["api_key_env"]):
            raise ProviderError(
                f"{provider} embeddings need an API key: set the environment variable "
                f"{self.key_env} (or name another one with api_key_env in {_CONFIG})"
            )
        self.dimensions: int | None = options["dimensions"]
        self.batch_size: int = options["batch_size"] or self.default_batch_size
        self.timeout: float = options["timeout"]
        self.max_retries: int = options["max_retries"]
        self.retry_backoff: float = options["retry_backoff"]
        self.query_timeout: float = options["query_timeout"]
        self._waiting = threading.local()  # .interactive: a person is waiting on this thread
        self.model_id = f"{provider}:{self.model}" + (f":d{self.dimensions}" if self.dimensions else "")
        self._dim: int | None = self.dimensions or self.known_dims.get(self.model)

    @property
    def dim(self) -> int:
        """Vector size; unknown models are asked once (one short request)."""
        if self._dim is None:
            self.embed_query("dimension probe")
        return int(self._dim or 0)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches: float32 [len(texts), dim], unit-length rows."""
        import numpy as np

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [
            self._embed(texts[i : i + self.batch_size], "document")
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(batches)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query: float32 [dim], unit length."""
        with self.interactive():
            row: np.ndarray = self._embed([text], "query")[0]
        return row

    @contextmanager
    def interactive(self) -> Iterator[None]:
        """Requests made in the block have someone waiting on them (a search, an
        add): `query_timeout` per attempt and one retry, whatever `timeout` and
        `max_retries` say (they are for `lore index`)."""
        before = getattr(self._waiting, "interactive", False)
        self._waiting.interactive = True
        try:
            yield
        finally:
            self._waiting.interactive = before

    # -- wire format (subclasses) -------------------------------------------

    def _request(self, texts: list[str], kind: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        """(url, JSON body, extra headers) for one batch; kind is "document" or "query"."""
        raise NotImplementedError

    def _parse(self, payload: dict[str, Any]) -> list[list[float]]:
        """The vectors of a response, in request order."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        import numpy as np

        url, body, headers = self._request(texts, kind)
        payload = self._post(url, body, headers)
        try:
            vectors = self._parse(payload)
            with np.errstate(all="ignore"):  # NaN and infinity are refused below, not warned about
                rows = l2_normalise(vectors)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"unexpected response from {url} ({type(exc).__name__}: {exc}) — is base_url "
                f"pointing at a {self.provider} API? check {_CONFIG}"
            ) from exc
        if rows.ndim != 2 or rows.shape[0] != len(texts):
            raise ProviderError(
                f"{url} returned {len(vectors)} vectors for {len(texts)} texts — "
                f"check base_url and model in {_CONFIG}"
            )
        if rows.shape[1] == 0 or not np.isfinite(rows).all():
            raise ProviderError(
                f"{url} returned {'empty vectors' if rows.shape[1] == 0 else 'vectors holding NaN or infinity'}"
                f" — check model and base_url in {_CONFIG}"
            )
        if self._dim is None:
            self._dim = rows.shape[1]
        elif rows.shape[1] != self._dim:
            raise ProviderError(
                f"{self.provider} model {self.model} returned {rows.shape[1]}-dimensional vectors, "
                f"expected {self._dim} — set dimensions = {rows.shape[1]} (or the model's "
                f"size) in {_CONFIG}"
            )
        return rows

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """POST JSON with retries; return the decoded response."""
        waiting = getattr(self._waiting, "interactive", False)
        endpoint = Endpoint(
            provider=self.provider,
            config=_CONFIG,
            key_env=self.key_env,
            timeout=min(self.timeout, self.query_timeout) if waiting else self.timeout,
            max_retries=min(self.max_retries, 1) if waiting else self.max_retries,
            retry_backoff=self.retry_backoff,
            refused_fix="check model, dimensions and base_url",
            rate_limit_fix="wait, or lower batch_size / raise max_retries",
        )
        return post_json(endpoint, url, body, {"User-Agent": "lore-embed", **self._auth_headers(), **headers})


class OpenAIEmbedder(HttpEmbedder):
    """OpenAI `/embeddings` (also the format of the `openai-compatible` provider)."""

    default_model: str | None = "text-embedding-3-small"
    default_base_url: str | None = "https://api.openai.com/v1"
    default_key_env: str | None = "OPENAI_API_KEY"
    known_dims = {
        "text-embedding-3-small": 1536,
        "text-embedding-3-large": 3072,
        "text-embedding-ada-002": 1536,
    }

    def _request(self, texts: list[str], kind: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return f"{self.base_url}/embeddings", body, {}

    def _parse(self, payload: dict[str, Any]) -> list[list[float]]:
        items = sorted(payload["data"], key=lambda item: item["index"])
        if [item["index"] for item in items] != list(range(len(items))):
            raise ValueError("the vectors' indices are not 0, 1, 2, ...")
        return [item["embedding"] for item in items]


class CompatibleEmbedder(OpenAIEmbedder):
    """Any server speaking OpenAI's format (Ollama, LM Studio, vLLM, llama.cpp)."""

    default_model: str | None = None
    default_base_url: str | None = None
    default_key_env: str | None = None
    key_required = False
    default_batch_size = 32  # local servers: keep each request well inside the timeout
    known_dims = {}


class GeminiEmbedder(HttpEmbedder):
    """Google Gemini `batchEmbedContents`; the key travels in a header, not the URL."""

    default_model = "text-embedding-004"
    default_base_url = "https://generativelanguage.googleapis.com"
    default_key_env = "GEMINI_API_KEY"
    default_batch_size = 100  # the API's per-call limit
    known_dims = {"text-embedding-004": 768, "gemini-embedding-001": 3072}
    _TASK = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}

    def __init__(self, provider: str, options: dict[str, Any]):
        super().__init__(provider, options)
        self.model = self.model.removeprefix("models/")

    def _request(self, texts: list[str], kind: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        base: dict[str, Any] = {"model": f"models/{self.model}", "taskType": self._TASK[kind]}
        if self.dimensions:
            base["outputDimensionality"] = self.dimensions
        body = {"requests": [{**base, "content": {"parts": [{"text": text}]}} for text in texts]}
        return f"{self.base_url}/v1beta/models/{self.model}:batchEmbedContents", body, {}

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key or ""}

    def _parse(self, payload: dict[str, Any]) -> list[list[float]]:
        return [item["values"] for item in payload["embeddings"]]


class VoyageEmbedder(HttpEmbedder):
    """Voyage AI `/v1/embeddings`, with its document/query input types."""

    default_model = "voyage-3"
    default_base_url = "https://api.voyageai.com"
    default_key_env = "VOYAGE_API_KEY"
    known_dims = {"voyage-3": 1024, "voyage-3-lite": 512, "voyage-3-large": 1024, "voyage-code-3": 1024}

    def _request(self, texts: list[str], kind: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        body: dict[str, Any] = {"input": texts, "model": self.model, "input_type": kind}
        if self.dimensions:
            body["output_dimension"] = self.dimensions
        return f"{self.base_url}/v1/embeddings", body, {}

    _parse = OpenAIEmbedder._parse


_CLASSES = {
    "openai": OpenAIEmbedder,
    "openai-compatible": CompatibleEmbedder,
    "gemini": GeminiEmbedder,
    "voyage": VoyageEmbedder,
}


def load_http(provider: str, settings: dict[str, Any]) -> HttpEmbedder:
    """Create the HTTP embedder for `provider` from its `[embedding]` settings.

    Settings: model, api_key_env, base_url, dimensions, batch_size, timeout
    (seconds), max_retries, retry_backoff (first back-off, seconds; doubles).
    """
    return _CLASSES[provider](provider, read_options(provider, settings, _SPEC))
