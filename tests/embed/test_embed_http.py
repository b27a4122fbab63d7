"""HTTP providers against a real local server speaking each wire format."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from lore.embed import load_embedder
from lore.embed.http import _retry_after
from lore.errors import ProviderError

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

KEY = "sk-test-123"
FAST = {"retry_backoff": 0.0, "timeout": 5}


def fake_vector(text: str) -> list[float]:
    """What the server returns for `text`: not unit length, so normalisation shows."""
    return [float(len(text) + 1), float(sum(map(ord, text)) % 97), 1.0, 2.0]


def expected(texts: list[str]) -> np.ndarray:
    rows = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class FakeAPI(ThreadingHTTPServer):
    """Records requests; `failures` are served first, one per request."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.failures: list[tuple] = []  # (status, headers, body) or ("sleep", seconds)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):  # what urllib turns a redirected POST into
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": None})
        self._reply(404, {}, {"error": {"message": "no GET here"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if self.server.failures:
            failure = self.server.failures.pop(0)
            if failure[0] == "sleep":
                time.sleep(failure[1])
            elif failure[0] == "drip":  # a byte at a time, each well inside the socket's timeout
                return self._drip(failure[1], failure[2])
            else:
                return self._reply(*failure)
        try:
            self._reply(200, {}, self._answer(body))
        except AssertionError as exc:  # a malformed request is a 400, like the real APIs
            self._reply(400, {}, {"error": {"message": f"bad request: {exc}"}})

    def _answer(self, body: dict):
        if self.path == "/v1/embeddings":  # OpenAI, compatible and Voyage share it
            assert isinstance(body["model"], str) and isinstance(body["input"], list)
            items = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t)}
                for i, t in enumerate(body["input"])
            ]
            return {"object": "list", "data": items[::-1], "model": body["model"]}  # out of order on purpose
        if self.path.startswith("/v1beta/models/") and self.path.endswith(":batchEmbedContents"):
            model = self.path.removeprefix("/v1beta/models/").removesuffix(":batchEmbedContents")
            assert self.headers.get("x-goog-api-key") == KEY, "missing x-goog-api-key"
            for request in body["requests"]:
                assert request["model"] == f"models/{model}"
            return {
                "embeddings": [
                    {"values": fake_vector(r["content"]["parts"][0]["text"])} for r in body["requests"]
                ]
            }
        raise AssertionError(f"unknown path {self.path}")

    def _drip(self, count: int, pause: float):
        self.send_response(200)
        self.send_header("Content-Length", str(count + 2))
        self.end_headers()
        try:
            for _ in range(count):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass  # the client gave up

    def _reply(self, status: int, headers: dict, payload):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass  # the client stopped reading (a response over its limit)


@pytest.fixture
def api():
    server = FakeAPI()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("LORE_TEST_KEY", KEY)
    return "LORE_TEST_KEY"


TEXTS = ["alpha", "a longer second text", "3", "fourth text here", "five"]


def test_openai_batches_and_auth(api, key):
    embedder = load_embedder(
        {
            "provider": "openai",
            "base_url": f"{api.url}/v1",
            "api_key_env": key,
            "dimensions": 4,
            "batch_size": 2,
            **FAST,
        }
    )
    assert embedder.model_id == "openai:text-embedding-3-small:d4" and embedder.dim == 4
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (5, 4)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert [len(r["body"]["input"]) for r in api.requests] == [2, 2, 1]
    for request in api.requests:
        assert request["headers"]["Authorization"] == f"Bearer {KEY}"
        assert request["body"]["model"] == "text-embedding-3-small" and request["body"]["dimensions"] == 4


def test_compatible_needs_no_key_and_learns_dim(api):
    embedder = load_embedder(
        {"provider": "openai-compatible", "base_url": f"{api.url}/v1", "model": "nomic-embed-text", **FAST}
    )
    assert embedder.model_id == "openai-compatible:nomic-embed-text"
    assert api.requests == []  # model_id needs no network call
    assert embedder.dim == 4
    query = embedder.embed_query("where is the config?")
    np.testing.assert_allclose(query, expected(["where is the config?"])[0], rtol=1e-6)
    assert "Authorization" not in api.requests[-1]["headers"]
    assert "dimensions" not in api.requests[-1]["body"]


def test_compatible_requires_base_url_and_model():
    with pytest.raises(ProviderError, match="base_url"):
        load_embedder({"provider": "openai-compatible", "model": "m"})
    with pytest.raises(ProviderError, match="model"):
        load_embedder({"provider": "openai-compatible", "base_url": "http://localhost:11434/v1"})


def test_gemini_wire_format(api, key):
    default = load_embedder({"provider": "gemini", "base_url": api.url, "api_key_env": key})
    assert default.model_id == "gemini:text-embedding-004" and default.dim == 768  # known: no request
    embedder = load_embedder(
        {"provider": "gemini", "base_url": api.url, "api_key_env": key, "dimensions": 4, **FAST}
    )
    np.testing.assert_allclose(embedder.embed_documents(TEXTS[:3]), expected(TEXTS[:3]), rtol=1e-6)
    embedder.embed_query("q")
    document, query = api.requests
    assert document["path"] == "/v1beta/models/text-embedding-004:batchEmbedContents"
    assert "key=" not in document["path"] and "Authorization" not in document["headers"]
    assert [r["taskType"] for r in document["body"]["requests"]] == ["RETRIEVAL_DOCUMENT"] * 3
    assert query["body"]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert document["body"]["requests"][0]["content"] == {"parts": [{"text": TEXTS[0]}]}
    assert document["body"]["requests"][0]["outputDimensionality"] == 4


def test_voyage_input_types(api, key):
    embedder = load_embedder(
        {
            "provider": "voyage",
            "base_url": api.url,
            "api_key_env": key,
            "model": "voyage-code-3",
            "dimensions": 4,
            **FAST,
        }
    )
    np.testing.assert_allclose(embedder.embed_documents(TEXTS), expected(TEXTS), rtol=1e-6)
    embedder.embed_query("find the parser")
    assert [r["body"]["input_type"] for r in api.requests] == ["document", "query"]
    assert api.requests[0]["body"]["model"] == "voyage-code-3"
    assert api.requests[0]["body"]["output_dimension"] == 4
    assert api.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


def _compatible(api, **settings):
    return load_embedder(
        {"provider": "openai-compatible", "base_url": f"{api.url}/v1", "model": "m", **FAST, **settings}
    )


def test_retries_429_then_succeeds(api):
    api.failures = [(429, {"Retry-After": "0"}, {"error": {"message": "slow down"}})]
    np.testing.assert_allclose(_compatible(api).embed_documents(["x"]), expected(["x"]), rtol=1e-6)
    assert len(api.requests) == 2


def test_retry_after_is_honoured(api):
    api.failures = [(503, {"Retry-After": "0.3"}, b"busy")]
    start = time.monotonic()
    _compatible(api).embed_query("x")
    assert time.monotonic() - start >= 0.3


def test_server_errors_exhaust_retries(api):
    api.failures = [(500, {}, {"error": {"message": "boom"}})] * 3
    with pytest.raises(ProviderError, match=r"HTTP 500.*3 attempt.*boom"):
        _compatible(api, max_retries=2).embed_documents(["x"])
    assert len(api.requests) == 3


def test_a_query_someone_waits_on_is_retried_once(api):
    """A search's query: one retry, whatever max_retries says (that is for `lore index`)."""
    api.failures = [(500, {}, {"error": {"message": "boom"}})] * 6
    with pytest.raises(ProviderError, match=r"HTTP 500.*2 attempt.*boom"):
        _compatible(api, max_retries=5).embed_query("x")
    assert len(api.requests) == 2


def test_client_errors_are_not_retried(api):
    api.failures = [(400, {}, {"error": {"message": "model 'm' not found"}})]
    with pytest.raises(ProviderError, match="model 'm' not found.*check model"):
        _compatible(api).embed_query("x")
    assert len(api.requests) == 1


def test_rejected_key_names_the_variable_not_the_key(api, key):
    api.failures = [(401, {}, {"error": {"message": "invalid api key"}})]
    embedder = load_embedder({"provider": "openai", "base_url": f"{api.url}/v1", "api_key_env": key, **FAST})
    with pytest.raises(ProviderError, match=r"\$LORE_TEST_KEY") as info:
        embedder.embed_query("x")
    assert KEY not in str(info.value)


def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("LORE_NO_SUCH_KEY", raising=False)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        load_embedder({"provider": "openai"})
    for provider in ("voyage", "gemini", "openai-compatible"):
        with pytest.raises(ProviderError, match="LORE_NO_SUCH_KEY"):
            load_embedder(
                {
                    "provider": provider,
                    "api_key_env": "LORE_NO_SUCH_KEY",
                    "model": "m",
                    "base_url": "http://127.0.0.1:1",
                }
            )


def test_unreachable_server():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = load_embedder(
        {
            "provider": "openai-compatible",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "model": "m",
            "max_retries": 1,
            **FAST,
        }
    )
    with pytest.raises(
        ProviderError,
        match=rf"cannot reach http://127.0.0.1:{port}/v1/embeddings.*"
        r"is the server running\? check base_url",
    ):
        embedder.embed_query("x")


def test_timeout_is_reported(api):
    api.failures = [("sleep", 1.0)]
    with pytest.raises(ProviderError, match="cannot reach.*timed out"):
        _compatible(api, timeout=0.2, max_retries=0).embed_query("x")


def test_non_json_and_wrong_shape_responses(api):
    api.failures = [(200, {}, b"<html>not an API</html>")]
    with pytest.raises(ProviderError, match="did not return JSON"):
        _compatible(api).embed_query("x")
    api.failures = [(200, {}, {"unexpected": []})]
    with pytest.raises(ProviderError, match="unexpected response"):
        _compatible(api).embed_query("x")


def test_empty_input_makes_no_request(api):
    embedder = _compatible(api, dimensions=4)
    assert embedder.embed_documents([]).shape == (0, 4)
    assert api.requests == []


def test_retry_after_formats():
    assert _retry_after({"Retry-After": "2"}) == 2.0
    assert _retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert _retry_after({}) is None and _retry_after({"Retry-After": "soon"}) is None


def test_a_redirect_is_refused_and_the_key_never_reaches_the_other_host(api, key):
    other = FakeAPI()
    thread = threading.Thread(target=other.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        api.failures = [(302, {"Location": f"{other.url}/v1/embeddings"}, b"")]
        embedder = load_embedder(
            {"provider": "openai", "base_url": f"{api.url}/v1", "api_key_env": key, **FAST}
        )
        with pytest.raises(
            ProviderError, match=r"redirects \(HTTP 302 to .*set base_url to the final address"
        ):
            embedder.embed_query("x")
        assert other.requests == []
    finally:
        other.shutdown()
        other.server_close()


def test_a_key_the_server_echoes_back_is_not_shown(api, key):
    api.failures = [(400, {}, {"error": {"message": f"malformed header: Bearer {KEY}"}})]
    embedder = load_embedder({"provider": "openai", "base_url": f"{api.url}/v1", "api_key_env": key, **FAST})
    with pytest.raises(ProviderError, match="malformed header") as info:
        embedder.embed_query("x")
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    ("values", "problem"),
    [([float("nan"), 1.0], "NaN or infinity"), ([1e39, 1.0], "NaN or infinity"), ([], "empty vectors")],
)
def test_vectors_holding_nan_infinity_or_nothing_are_refused(api, values, problem):
    api.failures = [(200, {}, b'{"data": [{"index": 0, "embedding": %s}]}' % json.dumps(values).encode())]
    with pytest.raises(ProviderError, match=problem):
        _compatible(api, max_retries=0).embed_query("x")


def test_vectors_with_repeated_indices_are_refused(api):
    api.failures = [(200, {}, {"data": [{"index": 0, "embedding": [1.0, 0.0]}] * 2})]
    with pytest.raises(ProviderError, match="indices"):
        _compatible(api, max_retries=0).embed_documents(["a", "b"])


def test_a_response_larger_than_the_limit_is_refused_without_reading_it_all(api, monkeypatch):
    monkeypatch.setattr("lore.http_post.MAX_RESPONSE_BYTES", 1000)
    api.failures = [(200, {}, b" " * 5000 + b"{}")]
    with pytest.raises(ProviderError, match="sent more than"):
        _compatible(api, max_retries=0).embed_query("x")


def test_a_response_trickling_in_is_cut_at_the_timeout(api):
    api.failures = [("drip", 40, 0.05)]  # 2 s in all, no pause near the socket's 0.5 s
    start = time.monotonic()
    with pytest.raises(ProviderError, match="took over 0.5 s"):
        _compatible(api, timeout=0.5, max_retries=0).embed_query("x")
    assert time.monotonic() - start < 1.5
