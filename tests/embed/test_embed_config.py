"""Choosing a provider from `[embedding]` settings."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lore.embed import PROVIDERS, load_embedder
from lore.errors import ProviderError

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip


def test_none_disables_embeddings():
    assert load_embedder({"provider": "none"}) is None


def test_unknown_provider_names_the_allowed_values():
    with pytest.raises(ProviderError) as info:
        load_embedder({"provider": "word2vec"})
    assert all(name in str(info.value) for name in PROVIDERS)


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"provider": "local", "max_token": 128},
            r"unknown \[embedding\] setting\(s\) max_token.*allowed:.*max_tokens",
        ),
        ({"provider": "openai", "api_key": "sk-..."}, "set api_key_env"),
        ({"provider": "local", "batch_size": "8"}, "batch_size must be int"),
        ({"provider": "local", "batch_size": True}, "batch_size must be int"),
        ({"provider": "local", "batch_size": 0}, "batch_size must be at least 1"),
        ({"provider": "local", "max_tokens": 4096}, "max_tokens must be at most 512"),
        # ONNX Runtime starts every thread it is given: 10,000 never let a search exit
        ({"provider": "local", "threads": 10_000}, "threads must be at most 256"),
        ({"provider": "local", "batch_size": 100_000}, "batch_size must be at most 256"),
        ({"provider": "onnx", "path": "m", "threads": 10_000}, "threads must be at most 256"),
        (
            {"provider": "openai-compatible", "model": "m", "base_url": "localhost:11434"},
            "must start with http",
        ),
    ],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ProviderError, match=message):
        load_embedder(settings)


def test_integers_are_accepted_for_float_settings():  # TOML writes `timeout = 30`
    embedder = load_embedder(
        {"provider": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:9", "timeout": 30}
    )
    assert embedder.timeout == 30.0 and isinstance(embedder.timeout, float)


def test_importing_lore_embed_is_light():
    code = (
        "import sys, lore.embed; heavy = {'numpy', 'onnxruntime', 'tokenizers', 'onnx'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
