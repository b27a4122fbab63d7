"""LLM summary providers against a real local HTTP server speaking each wire format
(OpenAI-compatible chat completions, Anthropic Messages), and the extractive fallback."""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lore.errors import ProviderError
from lore.memory import markdown
from lore.sessions import message, tool_call, tool_result
from lore.sessions.llm import load_summarizer
from sessions.session_helpers import open_store, sessions_config

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

KEY = "sk-test-summaries-123"
FAST = "timeout = 5\nretry_backoff = 0.0\nmax_retries = 2\n"


class FakeLLM(ThreadingHTTPServer):
    """Records requests; `failures` are served first, one per request."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.failures: list[tuple] = []  # (status, body)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if self.server.failures:
            return self._reply(*self.server.failures.pop(0))
        try:
            self._reply(200, self._answer(body))
        except (AssertionError, KeyError) as exc:
            self._reply(400, {"error": {"type": "invalid_request_error", "message": f"bad request: {exc}"}})

    def _answer(self, body: dict) -> dict:
        if self.path == "/v1/chat/completions":
            assert body["messages"][0]["role"] == "system" and body["messages"][1]["role"] == "user"
            assert isinstance(body["max_tokens"], int)
            text = summary_of(body["messages"][1]["content"])
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
            }
        if self.path == "/v1/messages":
            assert self.headers.get("x-api-key") == KEY, "missing x-api-key"
            assert self.headers.get("anthropic-version") == "2023-06-01", "missing anthropic-version"
            assert isinstance(body["system"], str) and body["messages"][0]["role"] == "user"
            text = summary_of(body["messages"][0]["content"])
            return {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
            }
        raise AssertionError(f"unknown path {self.path}")

    def _reply(self, status: int, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def summary_of(transcript: str) -> str:
    """What the fake model answers: sections naming the event ids it was shown."""
    ids = re.findall(r"^\[(\d+)\]", transcript, re.M)
    return f"## Decided\n\n- Use Decimal for money [{ids[0]}]\n\n## Open\n\n- Events {ids[0]}-{ids[-1]} seen by the model"


@pytest.fixture
def api():
    server = FakeLLM()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("LORE_TEST_LLM_KEY", KEY)
    return "LORE_TEST_LLM_KEY"


def events(n: int = 30) -> list[dict]:
    out = []
    for i in range(n):
        if i % 3 == 2:
            out.append(tool_call("Read", {"file_path": f"src/m{i}.py"}))
            out.append(tool_result(None, "x = 1\n" * 50))
        else:
            out.append(
                message("user" if i % 2 else "assistant", f"Turn {i}: we decided to use Decimal for money.")
            )
    return out


def compact_with(root, summary_settings: str):
    sessions_config(root, soft=100_000, hard=200_000, protected=100, summary=summary_settings)
    store = open_store(root)
    store.append_many("s", events(), create=True)
    return store, store.compact("s")


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_llm_summary_replaces_the_old_part(root, api, key, provider):
    base = f"{api.url}/v1" if provider == "openai-compatible" else api.url
    store, result = compact_with(
        root,
        f'provider = "{provider}"\nbase_url = "{base}"\nmodel = "small-model"\napi_key_env = "{key}"\n{FAST}',
    )
    assert result.compacted and result.summarizer == provider and result.notice is None
    assert len(api.requests) == 1
    request = api.requests[0]
    if provider == "openai-compatible":
        assert request["path"] == "/v1/chat/completions"
        assert request["headers"]["Authorization"] == f"Bearer {KEY}"
        prompt, transcript = (
            request["body"]["messages"][0]["content"],
            request["body"]["messages"][1]["content"],
        )
    else:
        assert request["path"] == "/v1/messages"
        prompt, transcript = request["body"]["system"], request["body"]["messages"][0]["content"]
    assert request["body"]["model"] == "small-model"
    assert "## Errors and fixes" in prompt and "## Corrections" in prompt
    assert transcript.startswith(f"Session events 1-{result.last_event}:")
    assert "[1] assistant: Turn 0: we decided to use Decimal for money." in transcript
    assert "[3] tool call Read" in transcript

    memory, _ = markdown.parse((root / result.summary_path).read_bytes(), result.summary_path)
    memory.validate(strict=True)
    assert memory.extra["summarizer"] == provider
    assert "- Use Decimal for money [1]" in memory.body
    assert f"Events 1-{result.last_event} seen by the model" in memory.body
    assert memory.body.startswith("Session s, events 1-")  # Lore's header, for search
    view = store.context("s", limit_tokens=10**6)
    assert "Use Decimal for money" in view.events[0].content


def test_long_transcripts_are_summarised_in_parts(root, api):
    store, result = compact_with(
        root,
        f'provider = "openai-compatible"\nbase_url = "{api.url}/v1"\nmodel = "m"\nmax_input_tokens = 500\n{FAST}',
    )
    assert result.compacted and len(api.requests) > 1
    firsts = [
        int(re.search(r"^Session events (\d+)-", r["body"]["messages"][1]["content"]).group(1))
        for r in api.requests
    ]
    assert firsts[0] == 1 and firsts == sorted(firsts)
    body = (root / result.summary_path).read_text()
    assert body.count("seen by the model") == len(api.requests)


@pytest.mark.parametrize(
    "failures, expect",
    [
        ([(500, {"error": {"message": "boom"}})] * 3, r"HTTP 500.*3 attempt.*boom"),
        ([(401, {"error": {"message": "invalid x-api-key"}})], r"rejected the API key.*\$LORE_TEST_LLM_KEY"),
        (
            [(404, {"error": {"type": "not_found_error", "message": "model: nope"}})],
            r"model: nope.*check model",
        ),
        ([(200, {"content": []})], r"empty summary"),
        ([(200, {"unexpected": True})], r"unexpected response"),
    ],
    ids=["server-error", "bad-key", "bad-model", "empty", "wrong-shape"],
)
def test_provider_failures_fall_back_to_extractive_with_a_notice(root, api, key, failures, expect):
    api.failures = list(failures)
    store, result = compact_with(
        root, f'provider = "anthropic"\nbase_url = "{api.url}"\nmodel = "m"\napi_key_env = "{key}"\n{FAST}'
    )
    assert result.compacted and result.summarizer == "extractive"
    assert re.search(expect, result.notice), result.notice
    assert result.notice.startswith("summary provider anthropic failed, used the extractive summary")
    assert any(re.search(expect, n) for n in store.notices)
    assert KEY not in result.notice
    memory, _ = markdown.parse((root / result.summary_path).read_bytes(), result.summary_path)
    assert memory.extra["summarizer"] == "extractive" and "## Decided" in memory.body


def test_unreachable_server_and_bad_settings_fall_back_too(root, key):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store, result = compact_with(
        root, f'provider = "openai-compatible"\nbase_url = "http://127.0.0.1:{port}/v1"\nmodel = "m"\n{FAST}'
    )
    assert result.summarizer == "extractive" and "cannot reach" in result.notice


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"provider": "gpt"}, "unknown summary provider 'gpt'"),
        ({"provider": "extractive", "model": "m"}, r"unknown \[sessions.summary\] setting\(s\) model"),
        ({"provider": "anthropic", "model": "m", "api_key": "sk-x"}, "set api_key_env"),
        ({"provider": "openai-compatible", "model": "m"}, "needs base_url"),
        ({"provider": "openai-compatible", "base_url": "http://127.0.0.1:1/v1"}, "needs model"),
        ({"provider": "anthropic", "model": "m", "api_key_env": "LORE_NO_SUCH_KEY"}, "LORE_NO_SUCH_KEY"),
        ({"provider": "openai-compatible", "model": "m", "base_url": "localhost:1"}, "must start with http"),
        (
            {"provider": "anthropic", "model": "m", "timeout": "fast"},
            r"\[sessions.summary\] timeout must be float",
        ),
        (
            {
                "provider": "anthropic",
                "model": "m",
                "api_key_env": "sk-ant-api03-Zq8xLm2Vt5Rb9Nc4Hd7Jf1Kp6Ws3Ye0Ua",
            },
            "api_key_env must be the name of an environment variable",
        ),
        (
            {
                "provider": "openai-compatible",
                "model": "m",
                "base_url": "http://me:Zq8xLm2Vt5Rb@127.0.0.1:1/v1",
            },
            "base_url must be a plain address",
        ),
    ],
)
def test_bad_summary_settings_are_refused_with_a_fix(settings, message, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderError, match=message) as info:
        load_summarizer(settings)
    assert "Zq8xLm2Vt5Rb" not in str(info.value)


def test_a_misconfigured_provider_never_stops_compaction(root, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    store, result = compact_with(root, 'provider = "anthropic"\nmodel = "m"\n')
    assert result.compacted and result.summarizer == "extractive"
    assert any("ANTHROPIC_API_KEY" in n and "[sessions.summary] is unusable" in n for n in store.notices)
