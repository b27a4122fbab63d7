"""LLM summary providers over HTTP: OpenAI-compatible chat completions, Anthropic Messages.

Configured like the embedding providers, in `.lore/config.toml`::

    [sessions.summary]
    provider = "openai-compatible"        # Ollama, LM Studio, vLLM, llama.cpp, OpenAI...
    base_url = "http://localhost:11434/v1"
    model = "qwen2.5:7b-instruct"
    # api_key_env = "OPENAI_API_KEY"      # only if the server wants a key

    [sessions.summary]
    provider = "anthropic"
    model = "claude-haiku-4-5"
    # api_key_env = "ANTHROPIC_API_KEY"   (the default)   base_url = "https://api.anthropic.com"

Other settings: timeout (seconds, default 120), max_retries (3), retry_backoff
(1.0 s, doubling), max_output_tokens (1500), max_input_tokens (60000: longer
transcripts are summarised in parts), temperature (0). Keys come from the
environment only. Requests go through :mod:`lore.http_post` (retries on 429,
5xx and connection failures; ProviderError with a fix otherwise).
"""

from __future__ import annotations

import os
from typing import Any

from lore.embed.config import MAX_SECONDS, Option, check_endpoint, read_options
from lore.errors import ProviderError
from lore.http_post import Endpoint, post_json
from lore.index.tokens import count_tokens
from lore.sessions.events import RawEvent, render_event, to_record
from lore.sessions.summary import TextSummarizer

PROVIDERS = ("extractive", "openai-compatible", "anthropic")
_TABLE = "[sessions.summary]"
_CONFIG = f"{_TABLE} in .lore/config.toml"
MAX_EVENT_CHARS = 2000  # one tool result can be a whole file; the summary needs its gist

_SPEC = {
    "model": Option(str),
    "api_key_env": Option(str),
    "base_url": Option(str),
    "timeout": Option(float, 120.0, minimum=0.001, maximum=MAX_SECONDS),
    "max_retries": Option(int, 3, minimum=0),
    "retry_backoff": Option(float, 1.0, minimum=0.0),
    "max_output_tokens": Option(int, 1500, minimum=64),
    "max_input_tokens": Option(int, 60000, minimum=500),
    "temperature": Option(float, 0.0, minimum=0.0, maximum=2.0),
}

INSTRUCTIONS = """\
You summarise part of a coding agent's session. The summary replaces these events in the \
agent's context and is indexed so a later search finds them, so keep exact names, paths, \
commands, error messages and numbers. Write Markdown with these sections, in this order, \
leaving out empty ones:

## Decided
Decisions and their reasons.
## Done
What was changed or completed.
## Learned
Facts about the project learned along the way.
## Errors and fixes
Each error message and what fixed it.
## Corrections
What the user corrected or said they prefer.
## Files
Paths read or changed.
## Open
What is unfinished or still to decide.

Bullets only, one fact per bullet; cite events by their [id]. No preamble. At most {words} words."""


def load_summarizer(settings: dict[str, Any] | None) -> TextSummarizer | None:
    """The provider described by a `[sessions.summary]` table (None: extractive).

    Raises:
        ProviderError: unknown provider or setting, missing model, base_url or key.
    """
    settings = dict(settings or {})
    provider = settings.get("provider", "extractive")
    if provider == "extractive":
        read_options(provider, settings, {}, table=_TABLE)  # refuses stray settings
        return None
    if provider == "openai-compatible":
        return ChatCompletionsSummarizer(provider, read_options(provider, settings, _SPEC, table=_TABLE))
    if provider == "anthropic":
        return AnthropicSummarizer(provider, read_options(provider, settings, _SPEC, table=_TABLE))
    raise ProviderError(
        f"unknown summary provider {provider!r}; use one of: {', '.join(PROVIDERS)} (provider in {_CONFIG})"
    )


class HttpSummarizer:
    """Shared settings and request machinery; subclasses define the wire format."""

    default_base_url: str | None = None
    default_key_env: str | None = None
    key_required = False

    def __init__(self, provider: str, options: dict[str, Any]):
        self.name = provider
        self.model = options["model"]
        if not self.model:
            raise ProviderError(f"summary provider '{provider}' needs model = \"<model name>\" in {_CONFIG}")
        base_url = options["base_url"] or self.default_base_url
        if not base_url:
            raise ProviderError(
                f"summary provider '{provider}' needs base_url, e.g. \"http://localhost:11434/v1\" "
                f'(Ollama) or "http://localhost:1234/v1" (LM Studio), in {_CONFIG}'
            )
        self.base_url = base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ProviderError(
                f"base_url must start with http:// or https://, got {base_url!r} — check {_CONFIG}"
            )
        self.key_env = options["api_key_env"] or self.default_key_env
        check_endpoint(self.base_url, self.key_env, _TABLE)
        self._key = os.environ.get(self.key_env) if self.key_env else None
        if not self._key and (self.key_required or options["api_key_env"]):
            raise ProviderError(
                f"{provider} summaries need an API key: set the environment variable {self.key_env} "
                f"(or name another one with api_key_env in {_CONFIG})"
            )
        self.max_output_tokens = options["max_output_tokens"]
        self.max_input_tokens = options["max_input_tokens"]
        self.temperature = options["temperature"]
        self.endpoint = Endpoint(
            provider=provider,
            config=_CONFIG,
            key_env=self.key_env,
            timeout=options["timeout"],
            max_retries=options["max_retries"],
            retry_backoff=options["retry_backoff"],
            refused_fix="check model and base_url",
            rate_limit_fix="wait, or raise max_retries",
        )

    @property
    def instructions(self) -> str:
        return INSTRUCTIONS.format(words=max(100, self.max_output_tokens * 2 // 3))

    def summarize_text(self, transcript: str) -> str:
        url, body, headers = self._request(transcript)
        payload = post_json(self.endpoint, url, body, headers)
        try:
            text = self._parse(payload)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(
                f"unexpected response from {url} ({type(exc).__name__}: {exc}) — is base_url "
                f"pointing at a {self.name} API? check {_CONFIG}"
            ) from exc
        if not isinstance(text, str) or not text.strip():
            raise ProviderError(
                f"{self.name} returned an empty summary from {url} — check model in {_CONFIG}"
            )
        return text.strip()

    def _request(self, transcript: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        raise NotImplementedError

    def _parse(self, payload: dict[str, Any]) -> object:
        """The summary text of a response (checked by the caller: servers may send anything)."""
        raise NotImplementedError


class ChatCompletionsSummarizer(HttpSummarizer):
    """OpenAI's ``/chat/completions`` format (OpenAI, Ollama, LM Studio, vLLM, llama.cpp)."""

    def _request(self, transcript: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.instructions},
                {"role": "user", "content": transcript},
            ],
            "max_tokens": self.max_output_tokens,
            "temperature": self.temperature,
        }
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        return f"{self.base_url}/chat/completions", body, headers

    def _parse(self, payload: dict[str, Any]) -> object:
        return payload["choices"][0]["message"]["content"]


class AnthropicSummarizer(HttpSummarizer):
    """Anthropic's Messages API (``/v1/messages``)."""

    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"
    key_required = True
    version = "2023-06-01"

    def _request(self, transcript: str) -> tuple[str, dict[str, Any], dict[str, str]]:
        body = {
            "model": self.model,
            "max_tokens": self.max_output_tokens,
            "temperature": self.temperature,
            "system": self.instructions,
            "messages": [{"role": "user", "content": transcript}],
        }
        headers = {"x-api-key": self._key or "", "anthropic-version": self.version}
        return f"{self.base_url}/v1/messages", body, headers

    def _parse(self, payload: dict[str, Any]) -> str:
        parts = [block["text"] for block in payload["content"] if block.get("type") == "text"]
        return "\n".join(parts)


def transcript_chunks(events: list[RawEvent], provider: TextSummarizer) -> list[str]:
    """The events as text lines (``[7] user: ...``), cut into parts that fit the provider's input."""
    budget = getattr(provider, "max_input_tokens", 60000)
    chunks: list[str] = []
    lines: list[str] = []
    used = 0
    first = events[0].get("id") if events else None
    for event in events:
        line = render_event(to_record(event))
        if len(line) > MAX_EVENT_CHARS:
            line = line[:MAX_EVENT_CHARS] + " […]"
        cost = count_tokens(line) + 1
        if lines and used + cost > budget:
            chunks.append(_chunk_text(first, lines))
            lines, used, first = [], 0, event.get("id")
        lines.append(line)
        used += cost
    if lines:
        chunks.append(_chunk_text(first, lines))
    return chunks


def _chunk_text(first: object, lines: list[str]) -> str:
    last = lines[-1].split("]", 1)[0].lstrip("[")
    return f"Session events {first}-{last}:\n\n" + "\n".join(lines)
