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


@pytest.mark.parametrize(
    "setting",
    ["timeout = nan", "timeout = inf", "timeout = 1e300", "retry_backoff = nan", "retry_backoff = inf"],
)
def test_a_number_no_clock_can_wait_is_refused_with_one_line(cli, setting):
    """`timeout = nan` passed every bound (a NaN compares false) and crashed the
    search with an internal ValueError; inf and 1e300 overflowed the socket's
    clock. Now refused like any bad [embedding] value: search says so in one
    line and falls back to keywords."""
    config = cli.cwd / ".lore" / "config.toml"
    text = config.read_text().replace(
        'provider = "local"',
        f'provider = "openai-compatible"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n{setting}',
    )
    config.write_text(text)
    result = cli("search", "anything", ok=False)
    assert result.returncode == 0, result.stderr
    name = setting.split()[0]
    assert f"[embedding] {name} must be" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert config.read_text() == text
