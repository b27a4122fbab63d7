"""Issue 3: embeddings and hybrid search, end to end.

Real things only: the bundled MiniLM model (offline), real projects in temp
dirs, the CLI as a subprocess, and a tiny OpenAI-compatible embedding server
on 127.0.0.1 (a thread in this process) that records every text it embeds.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import lore
from lore.errors import UsageError
from lore.index.embedding import BATCH

# -- shared helpers --------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def model_cache(tmp_path_factory):
    """A private Lore cache (the requantized MiniLM copy) for this module, in-process and in subprocesses."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("lore-cache")
        patch.setenv("LORE_CACHE_DIR", str(path))
        yield path


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)


def configure(root: Path, embedding: dict) -> None:
    """Replace the `[embedding]` table of the project's config.toml."""
    path = root / ".lore" / "config.toml"
    text = path.read_text("utf-8")
    table = "\n".join(["[embedding]", *(f"{k} = {_toml(v)}" for k, v in embedding.items())]) + "\n\n"
    new, count = re.subn(r"^\[embedding\]\n(?:(?!\[).*\n)*", table, text, flags=re.M)
    assert count == 1, text
    path.write_text(new, "utf-8")


def add_memories(root: Path, items: list[dict]) -> list[str]:
    """Write memories through the Python API (fast; it never embeds); returns their paths."""
    with lore.open(root) as project:
        return [project.add(**item).path for item in items]


def distinct_embedding_texts(root: Path) -> set[str]:
    """The texts Lore embeds for the project's chunks (one per distinct content hash),
    read through the storage interface, so on either backend: every chunk lacks a
    vector of a model that does not exist."""
    with lore.open(root) as project:
        return {text for _, text in project.store.pending_embeddings("no-such-model", 1_000_000)}


def vector_models(root: Path, *models: str) -> set[str]:
    """Which of `models` the project's index holds vectors of."""
    with lore.open(root) as project:
        return {m for m in models if project.store.count_embeddings(m)}


def notices(stderr: str, needle: str) -> list[str]:
    return [line for line in stderr.splitlines() if needle in line]


# -- a local OpenAI-compatible embedding server ----------------------------------------------

DIM = 64


def fake_vector(model: str, text: str, dim: int = DIM) -> list[float]:
    """Hashed bag of words, salted by the model name: deterministic, meaningful enough for
    keyword-like vector search, and a different (same-sized) space for each model."""
    vector = [0.0] * dim
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        digest = hashlib.md5(f"{model}|{word}".encode()).digest()
        vector[digest[0] % (dim - 1)] += 1.0 if digest[1] % 2 else -1.0
    vector[dim - 1] = 0.01  # never a zero vector
    return vector


class EmbeddingServer(ThreadingHTTPServer):
    """Serves POST /v1/embeddings. Records (model, texts, status) per request.

    fail_from: requests numbered ≥ this (0-based) get HTTP 500.
    block_from: requests numbered ≥ this wait for `release` and are never answered;
        `blocked` is set when the first one arrives.
    """

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _EmbeddingHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.fail_from: int | None = None
        self.refuse: str | None = None  # a request holding a text with this in it gets HTTP 400
        self.block_from: int | None = None
        self.blocked = threading.Event()
        self.release = threading.Event()
        self.dim = DIM  # what the model answers with (a model pulled under the same name may differ)
        self.before: dict[int, Callable[[], object]] = {}  # request number -> run before answering it

    def settings(self, model: str = "a", **extra) -> dict:
        return {
            "provider": "openai-compatible",
            "base_url": self.url,
            "model": model,
            "batch_size": BATCH,
            "max_retries": 0,
            "retry_backoff": 0.0,
            "timeout": 30,
            **extra,
        }

    def answered(self, model: str | None = None) -> list[str]:
        """Every text embedded successfully, in order (duplicates kept)."""
        with self.lock:
            return [
                t
                for r in self.requests
                if r["status"] == 200 and model in (None, r["model"])
                for t in r["texts"]
            ]

    def mark(self) -> int:
        with self.lock:
            return len(self.requests)

    def since(self, mark: int) -> list[dict]:
        with self.lock:
            return self.requests[mark:]

    def handle_error(self, request, client_address):  # a killed client: nothing to report
        pass


class _EmbeddingHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        server: EmbeddingServer = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/embeddings", self.path
        with server.lock:
            number = len(server.requests)
            entry = {"model": body["model"], "texts": list(body["input"]), "status": None}
            server.requests.append(entry)
            block = server.block_from is not None and number >= server.block_from
            fail = server.fail_from is not None and number >= server.fail_from
            refused = server.refuse is not None and any(server.refuse in t for t in body["input"])
            entry["status"] = "blocked" if block else 500 if fail else 400 if refused else 200
        if number in server.before:
            server.before[number]()
        if block:
            server.blocked.set()
            server.release.wait(60)
            return  # never answered
        if fail:
            return self._reply(500, {"error": {"message": "embedding backend crashed"}})
        if entry["status"] == 400:
            return self._reply(400, {"error": {"message": "input is too long for the context"}})
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(body["model"], text, server.dim)}
            for i, text in enumerate(body["input"])
        ]
        self._reply(200, {"object": "list", "data": data, "model": body["model"]})

    def _reply(self, status: int, payload: dict):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = EmbeddingServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()


# -- 1. hybrid ranking with the real default model ---------------------------------------------

CORPUS = {
    "utc": (
        "Store timestamps in UTC",
        "Always persist timestamps as UTC in the database and convert to "
        "the user's local timezone only when rendering.",
    ),
    "pool": (
        "Database connection pool",
        "The Postgres connection pool is capped at twenty connections; "
        "raise PGPOOL_MAX only after load testing.",
    ),
    "pets": ("Office pet policy", "Cats and dogs may visit the office on Fridays if they are vaccinated."),
    "deploy": (
        "Deploy with blue-green",
        "Production releases use blue-green deployment behind the load balancer so rollback is instant.",
    ),
    "password": (
        "Password reset flow",
        "Users who forget their password receive a reset link by email that expires after one hour.",
    ),
    "theme": (
        "Dark mode colours",
        "The dark theme uses slate backgrounds and amber accents; never pure black.",
    ),
    "flaky": (
        "Flaky payment tests",
        "The payment integration tests are flaky on CI because the sandbox rate-limits; retry them once.",
    ),
    "redis": ("Redis cache keys", "Cache keys are namespaced by tenant and expire after ten minutes."),
    "i18n": (
        "Translations",
        "User-facing strings live in locales/*.po files and are translated by the localisation team.",
    ),
    "flag": (
        "Feature flag naming",
        "The experimental checkout is behind the flag zqx_checkout_v7; remove it after the launch.",
    ),
}

# Paraphrases sharing no keyword with any memory (checked by the bm25 assertion).
PARAPHRASES = [
    ("animals allowed at work", "pets"),
    ("how do we ship new versions without downtime", "deploy"),
]
IDENTIFIER = ("zqx_checkout_v7", "flag")


@pytest.fixture(scope="module")
def ranked(tmp_path_factory, model_cache):
    """A project with CORPUS indexed and embedded by the bundled MiniLM model."""
    project = lore.init(tmp_path_factory.mktemp("ranked") / "proj")
    paths = {key: project.add(title=title, body=body).path for key, (title, body) in CORPUS.items()}
    assert project.embed() == len(CORPUS)
    yield project, paths
    project.close()


def test_default_model_is_used_and_everything_is_embedded(ranked):
    project, _ = ranked
    status = project.embedding_status()
    assert status["search"] == "hybrid"
    assert (
        status["embedding"].startswith("local:all-MiniLM-L6-v2")
        and status["indexed_model"] == status["embedding"]
    )
    assert status["vectors"] == len(CORPUS) and status["pending_embeddings"] == 0
    assert status["embedding_problem"] is None


def test_status_names_the_model_without_loading_it(ranked):
    """`lore status` imported onnxruntime and numpy (~250 ms) to learn the model
    id from the cached model's name; its version comes from package metadata."""
    project, _ = ranked
    proc = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-m", "lore", "status", "--json"],
        cwd=project.project.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert status["search"] == "hybrid" and status["embedding"] == project.embedding_status()["embedding"]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "onnxruntime" not in imported and "numpy" not in imported


@pytest.mark.parametrize("query, expected", PARAPHRASES)
def test_paraphrase_is_found_by_meaning_not_by_keywords(ranked, query, expected):
    project, paths = ranked
    assert project.search(query, mode="bm25") == []
    vector = project.search(query, mode="vector")
    assert vector[0].path == paths[expected] and vector[0].source == "vector"
    assert all(h.source == "vector" for h in vector)
    for fusion in ("rrf", "weighted"):
        hybrid = project.search(query, mode="hybrid", fusion=fusion)
        assert hybrid[0].path == paths[expected], fusion
        assert all(h.source == "vector" for h in hybrid), fusion  # no keyword list to fuse with
    # RRF: first by vectors alone scores the vector weight's share of the maximum.
    from lore.search.fusion import RRF_WEIGHTS

    assert project.search(query, fusion="rrf")[0].score == pytest.approx(RRF_WEIGHTS[1] / sum(RRF_WEIGHTS))
    # Weighted: 0.7 x cosine when there is no keyword match.
    assert project.search(query, fusion="weighted")[0].score == pytest.approx(0.7 * vector[0].score, abs=2e-4)


def test_exact_rare_identifier_is_found_by_bm25_and_hybrid(ranked):
    query, expected = IDENTIFIER
    project, paths = ranked
    bm25 = project.search(query, mode="bm25")
    assert [h.path for h in bm25] == [paths[expected]] and bm25[0].source == "bm25"
    vector = project.search(query, mode="vector")
    for fusion in ("rrf", "weighted"):
        hybrid = project.search(query, mode="hybrid", fusion=fusion)
        assert hybrid[0].path == paths[expected] and hybrid[0].source == "hybrid", fusion
        assert {h.source for h in hybrid[1:]} <= {"vector"}, fusion
    assert project.search(query, fusion="rrf")[0].score == pytest.approx(1.0)  # first in both lists
    vec_score = next(h.score for h in vector if h.path == paths[expected])
    weighted = project.search(query, fusion="weighted")[0].score
    assert weighted == pytest.approx(0.7 * vec_score + 0.3 * bm25[0].score, abs=5e-4)


def test_scores_are_0_to_1_and_sorted_in_every_mode(ranked):
    project, _ = ranked
    queries = [q for q, _ in PARAPHRASES] + [IDENTIFIER[0], "database timezone", "rollback the cache"]
    for query in queries:
        for mode, fusion in [("bm25", None), ("vector", None), ("hybrid", "rrf"), ("hybrid", "weighted")]:
            hits = project.search(query, mode=mode, fusion=fusion, limit=50)
            scores = [h.score for h in hits]
            assert all(0.0 <= s <= 1.0 for s in scores), (query, mode, fusion, scores)
            assert scores == sorted(scores, reverse=True), (query, mode, fusion, scores)
            assert len({h.path for h in hits}) == len(hits)  # best chunk per memory
            if mode == "vector":  # the nearest, down to the model's "no match at all" (not every memory at 0)
                assert 1 <= len(hits) <= len(CORPUS) and all(s >= 0.01 for s in scores), (query, scores)


def test_default_mode_is_hybrid_and_unknown_fusion_is_refused(ranked):
    project, paths = ranked
    default = project.search(IDENTIFIER[0])
    assert default[0].path == paths["flag"] and default[0].source == "hybrid"
    assert [h.to_dict() for h in default] == [
        h.to_dict() for h in project.search(IDENTIFIER[0], mode="hybrid")
    ]
    with pytest.raises((ValueError, UsageError), match="unknown fusion"):
        project.search(IDENTIFIER[0], fusion="max")
    with pytest.raises(UsageError, match="unknown search mode"):
        project.search(IDENTIFIER[0], mode="semantic")


# -- 2. BM25-only fallback -------------------------------------------------------------------

FALLBACK_MEMORIES = [
    {
        "title": "Postgres vacuum schedule",
        "body": "Autovacuum runs nightly; the orders table needs a manual VACUUM.",
    },
    {"title": "Release checklist", "body": "Bump the version, tag the commit, then publish the wheel."},
]


def test_provider_none_is_bm25_only(cli):
    configure(cli.cwd, {"provider": "none"})
    paths = add_memories(cli.cwd, FALLBACK_MEMORIES)
    proc = cli("search", "vacuum", "--json")
    hits = json.loads(proc.stdout)
    assert [h["path"] for h in hits] == [paths[0]] and hits[0]["source"] == "bm25"
    assert 0 < hits[0]["score"] <= 1
    assert proc.stderr == ""  # "none" is a choice, not a problem
    stats = cli.json("stats")
    assert stats["search"] == "bm25" and stats["embedding"] is None and stats["pending_embeddings"] is None
    indexed = cli.json("index")
    assert indexed["embedded"] == 0


def test_provider_none_vector_mode_says_why(cli):
    configure(cli.cwd, {"provider": "none"})
    add_memories(cli.cwd, FALLBACK_MEMORIES)
    proc = cli("search", "--mode", "vector", "vacuum", ok=False)
    assert proc.returncode == 2
    assert "vector search is unavailable" in proc.stderr
    # Nothing else was printed, so the reason must be in this message ("see above" points at nothing).
    assert "none" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "embedding, problem",
    [
        ({"provider": "onnx", "path": "models/does-not-exist"}, "not found"),
        ({"provider": "openai", "api_key_env": "LORE_TEST_UNSET_KEY_1234"}, "LORE_TEST_UNSET_KEY_1234"),
    ],
    ids=["onnx-missing-dir", "openai-missing-key"],
)
def test_provider_that_cannot_load_falls_back_to_bm25(cli, embedding, problem, monkeypatch):
    monkeypatch.delenv("LORE_TEST_UNSET_KEY_1234", raising=False)
    configure(cli.cwd, embedding)
    paths = add_memories(cli.cwd, FALLBACK_MEMORIES)

    proc = cli("search", "wheel", "version", "--json")
    assert proc.returncode == 0
    hits = json.loads(proc.stdout)
    assert [h["path"] for h in hits] == [paths[1]] and hits[0]["source"] == "bm25"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # one line, once
    assert lines[0].startswith("lore: vector search off, BM25 only:") and problem in lines[0]

    proc = cli("search", "wheel")  # the human output too
    assert "Release checklist" in proc.stdout and len(notices(proc.stderr, "BM25 only")) == 1

    proc = cli("stats", "--json")
    stats = json.loads(proc.stdout)
    assert stats["search"] == "bm25" and stats["embedding"] is None
    assert problem in stats["embedding_problem"]
    assert len(notices(proc.stderr, "BM25 only")) == 1

    proc = cli("index", "--json")  # text index still works; nothing to embed with
    assert json.loads(proc.stdout)["embedded"] == 0 and len(notices(proc.stderr, "BM25 only")) == 1

    proc = cli("search", "--mode", "vector", "wheel", ok=False)
    assert proc.returncode == 2 and problem in proc.stderr


def test_unreachable_server_at_query_time_falls_back_to_bm25(cli):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configure(
        cli.cwd,
        {
            "provider": "openai-compatible",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "model": "m",
            "max_retries": 0,
            "timeout": 5,
        },
    )
    paths = add_memories(cli.cwd, FALLBACK_MEMORIES)
    proc = cli("search", "vacuum", "--json")
    hits = json.loads(proc.stdout)
    assert [h["path"] for h in hits] == [paths[0]] and hits[0]["source"] == "bm25"
    found = notices(proc.stderr, "BM25 only")
    assert len(found) == 1 and "cannot reach" in found[0]


# -- 3. model change ---------------------------------------------------------------------------

MODEL_MEMORIES = [
    {
        "title": "Blue-green deploys",
        "body": "Production releases switch traffic between blue and green pools; rollback is a switch back.",
    },
    {"title": "Timezone rule", "body": "Persist timestamps in UTC and convert at render time."},
    {
        "title": "Redis namespaces",
        "body": "Cache keys are namespaced by tenant id and expire after ten minutes.",
    },
]


def test_model_change_falls_back_until_reembed(cli, server):
    root = cli.cwd
    configure(root, server.settings("a"))
    paths = add_memories(root, MODEL_MEMORIES)
    assert cli.json("index")["embedded"] == 3
    assert sorted(server.answered("a")) == sorted(distinct_embedding_texts(root))
    hits = cli.json("search", "--mode", "vector", "rollback", "traffic")
    assert hits[0]["path"] == paths[0] and hits[0]["source"] == "vector"
    stats = cli.json("stats")
    assert (
        stats["embedding"] == stats["indexed_model"] == "openai-compatible:a" and stats["search"] == "hybrid"
    )

    configure(root, server.settings("b"))
    mark = server.mark()
    proc = cli("search", "rollback", "traffic", "--json")
    hits = json.loads(proc.stdout)
    assert hits and {h["source"] for h in hits} == {"bm25"} and hits[0]["path"] == paths[0]
    found = notices(proc.stderr, "lore index --reembed")
    assert len(found) == 1 and "openai-compatible:a" in found[0] and "openai-compatible:b" in found[0]
    proc = cli("search", "--mode", "vector", "rollback", ok=False)
    assert proc.returncode == 2
    stats = cli.json("stats")
    assert stats["search"] == "bm25" and stats["embedding"] is None
    assert stats["indexed_model"] == "openai-compatible:a" and "--reembed" in stats["embedding_problem"]
    # A plain `lore index` does not quietly mix model b vectors into model a's index.
    proc = cli("index", "--json")
    assert json.loads(proc.stdout)["embedded"] == 0 and notices(proc.stderr, "--reembed")
    assert server.since(mark) == []  # model b was never asked for anything
    assert vector_models(root, "openai-compatible:a", "openai-compatible:b") == {"openai-compatible:a"}

    # A provider that can't embed (a typo, a wrong key) leaves model a's vectors in place.
    configure(root, {**server.settings("b"), "base_url": "http://127.0.0.1:1/v1"})
    proc = cli("index", "--reembed", ok=False)
    assert proc.returncode != 0 and "cannot reach" in proc.stderr and "Traceback" not in proc.stderr
    assert vector_models(root, "openai-compatible:a", "openai-compatible:b") == {"openai-compatible:a"}
    assert cli.json("stats")["indexed_model"] == "openai-compatible:a"
    configure(root, server.settings("b"))

    result = cli.json("index", "--reembed")
    assert result["embedded"] == 3
    assert sorted(server.answered("b")) == sorted([*distinct_embedding_texts(root), "lore"])  # and its probe
    assert vector_models(root, "openai-compatible:a", "openai-compatible:b") == {"openai-compatible:b"}
    stats = cli.json("stats")
    assert stats["search"] == "hybrid" and stats["embedding_problem"] is None
    assert stats["embedding"] == stats["indexed_model"] == "openai-compatible:b"
    assert stats["vectors"] == 3 and stats["pending_embeddings"] == 0

    proc = cli("search", "rollback", "traffic", "--json")
    hits = json.loads(proc.stdout)
    assert hits[0]["path"] == paths[0] and hits[0]["source"] == "hybrid"
    assert "{" not in proc.stderr and notices(proc.stderr, "reembed") == []
    assert server.since(mark)[-1]["model"] == "b" and server.since(mark)[-1]["texts"] == ["rollback traffic"]
    hits = cli.json("search", "--mode", "vector", "tenant", "namespaced")
    assert hits[0]["path"] == paths[2]


def test_a_model_that_changes_size_under_the_same_name_is_never_mixed_in(cli, server):
    root = cli.cwd
    configure(root, server.settings("a"))
    paths = add_memories(root, MODEL_MEMORIES[:2])
    assert cli.json("index")["embedded"] == 2
    server.dim = DIM // 2  # the server now serves another model as "a"

    proc = cli("search", "rollback", "traffic", "--json")
    hits = json.loads(proc.stdout)
    assert hits and {h["source"] for h in hits} == {"bm25"} and hits[0]["path"] == paths[0]
    found = notices(proc.stderr, "lore index --reembed")
    assert len(found) == 1 and f"{DIM // 2}-dimensional" in found[0] and "internal error" not in proc.stderr

    add_memories(root, MODEL_MEMORIES[2:])
    proc = cli("index", ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(notices(proc.stderr, "lore index --reembed")) == 1
    with lore.open(root) as project:
        assert project.store.count_embeddings("openai-compatible:a") == 2  # none of the new size

    assert cli.json("index", "--reembed")["embedded"] == 3
    proc = cli("search", "--mode", "vector", "rollback", "traffic", "--json")
    hits = json.loads(proc.stdout)
    assert hits and {h["source"] for h in hits} == {"vector"} and notices(proc.stderr, "reembed") == []


PASTED_KEY = "sk-proj-Zq8xLm2Vt5Rb9Nc4Hd7Jf1Kp6Ws3Ye0Ua"


@pytest.mark.parametrize(
    "setting",
    [
        {"api_key_env": PASTED_KEY},  # the key pasted where its variable's name belongs
        {"base_url": f"http://me:{PASTED_KEY}@127.0.0.1:9/v1"},
        {"base_url": f"http://127.0.0.1:9/v1?key={PASTED_KEY}"},
    ],
)
def test_a_key_pasted_into_the_embedding_settings_is_never_printed_or_stored(cli, server, setting):
    root = cli.cwd
    configure(root, server.settings("a", **setting))
    add_memories(root, MODEL_MEMORIES[:1])
    outputs = [
        cli("index", ok=False),
        cli("search", "rollback"),
        cli("stats", "--json"),
        cli("doctor", ok=False),
    ]
    for proc in outputs:
        assert PASTED_KEY not in proc.stdout + proc.stderr
    assert any("api_key_env" in proc.stderr for proc in outputs)
    for path in (root / ".lore").rglob("*"):
        if path.is_file() and path.name != "config.toml":
            assert PASTED_KEY.encode() not in path.read_bytes(), path
    assert server.requests == []


# -- 4. embedding cache ------------------------------------------------------------------------


def test_embedding_cache_by_content(cli, server):
    root = cli.cwd
    configure(root, server.settings())
    paths = add_memories(
        root,
        [
            {"title": "Blue-green deploys", "body": "Releases switch traffic between blue and green pools."},
            {"title": "Timezone rule", "body": "Persist timestamps in UTC and convert at render time."},
            {
                "title": "Service layout",
                "body": "## Summary\nThe API lives in api/.\n\n## Decisions\nWe picked SQLite for the index.",
            },
        ],
    )
    result = cli.json("index")
    assert result["embedded"] == 4  # the third memory has two sections
    assert len(server.answered()) == 4 and set(server.answered()) == distinct_embedding_texts(root)

    # Rename a file (same bytes): nothing to embed, and vector search finds it at its new path.
    mark = server.mark()
    renamed = ".lore/memory/renamed-deploys.md"
    (root / paths[0]).rename(root / renamed)
    result = cli.json("index")
    assert result["added"] == [renamed] and result["removed"] == [paths[0]] and result["embedded"] == 0
    assert server.since(mark) == []
    hits = cli.json("search", "--mode", "vector", "blue", "green", "traffic")
    assert hits[0]["path"] == renamed

    # A second memory with the same title and body shares the vector.
    mark = server.mark()
    twin = add_memories(
        root,
        [
            {
                "title": "Timezone rule",
                "body": "Persist timestamps in UTC and convert at render time.",
                "occurred_at": "2020-01-01T00:00:00Z",
            }
        ],
    )[0]
    assert twin != paths[1]
    assert cli.json("index")["embedded"] == 0
    assert server.since(mark) == []
    hits = cli.json("search", "--mode", "vector", "timestamps", "utc")
    assert {h["path"] for h in hits[:2]} == {paths[1], twin}
    assert hits[0]["score"] == pytest.approx(hits[1]["score"])

    # Editing one section re-embeds that section only.
    mark = server.mark()
    with lore.open(root) as project:
        project.update(
            Path(paths[2]).stem,
            body="## Summary\nThe API lives in api/.\n\n## Decisions\nWe picked Postgres.",
        )
    assert cli.json("index")["embedded"] == 1
    sent = [t for r in server.since(mark) for t in r["texts"]]
    assert len(sent) == 1 and "Postgres" in sent[0]

    # --force re-reads every file but sends no unchanged chunk.
    mark = server.mark()
    result = cli.json("index", "--force")
    assert len(result["updated"]) == 4 and result["embedded"] == 0
    assert server.since(mark) == []
    stats = cli.json("stats")
    assert stats["pending_embeddings"] == 0

    # Over the whole test, no text was ever embedded twice.
    answered = server.answered()
    assert len(answered) == len(set(answered))


# -- 5. interrupted indexing resumes ---------------------------------------------------------

TOPICS = [
    "parser",
    "scheduler",
    "billing",
    "uploader",
    "renderer",
    "mailer",
    "auth",
    "search",
    "cache",
    "queue",
]
BULK = 3 * BATCH + 8  # four embedding batches: 64, 64, 64, 8


def bulk_memories(n: int = BULK) -> list[dict]:
    return [
        {
            "title": f"Note {i} about the {TOPICS[i % len(TOPICS)]}",
            "body": f"Memory number {i}: the {TOPICS[i % len(TOPICS)]} module keeps setting x{i} at {i * 7}.",
        }
        for i in range(n)
    ]


def test_failed_indexing_resumes_where_it_stopped(cli, server):
    root = cli.cwd
    configure(root, server.settings())
    add_memories(root, bulk_memories())
    expected = distinct_embedding_texts(root)
    assert len(expected) == BULK

    server.fail_from = 2  # the third batch and everything after: HTTP 500
    proc = cli("index", ok=False)
    assert proc.returncode == 1
    assert "HTTP 500" in proc.stderr and "Traceback" not in proc.stderr
    assert [r["status"] for r in server.requests] == [200, 200, 500]
    stats = cli.json("stats")
    assert stats["vectors"] == 2 * BATCH and stats["pending_embeddings"] == BULK - 2 * BATCH
    # While the server is still down, search tries to embed inline, fails, and falls back to BM25.
    proc = cli("search", "scheduler", "module", "--json")
    assert json.loads(proc.stdout) and {h["source"] for h in json.loads(proc.stdout)} == {"bm25"}
    assert len(notices(proc.stderr, "BM25 only")) == 1
    assert cli.json("stats")["pending_embeddings"] == BULK - 2 * BATCH

    server.fail_from = None
    mark = server.mark()
    result = cli.json("index")
    assert result["embedded"] == BULK - 2 * BATCH
    resumed = [t for r in server.since(mark) for t in r["texts"]]
    assert len(resumed) == BULK - 2 * BATCH  # only the rest was sent
    answered = server.answered()
    assert len(answered) == len(set(answered)) == BULK  # no chunk embedded twice
    assert set(answered) == expected
    stats = cli.json("stats")
    assert stats["pending_embeddings"] == 0 and stats["vectors"] == BULK


def test_failed_indexing_with_the_providers_default_batch_size_loses_nothing(cli, server):
    """openai-compatible sends 32 texts per request (its default batch_size) while Lore commits
    every 64 chunks: a failure on the second request of a batch must not throw away the vectors
    the first request already returned (they were paid for), nor send those texts again."""
    root = cli.cwd
    settings = server.settings()
    del settings["batch_size"]  # the provider's default: 32
    configure(root, settings)
    add_memories(root, bulk_memories())

    server.fail_from = 3  # requests 0-2 answered (96 texts), then HTTP 500
    assert cli("index", ok=False).returncode == 1
    assert [len(r["texts"]) for r in server.requests] == [32, 32, 32, 32]
    assert len(server.answered()) == 96

    server.fail_from = None
    assert cli.json("index")["embedded"] > 0
    assert cli.json("stats")["pending_embeddings"] == 0
    answered = server.answered()
    assert len(answered) - len(set(answered)) == 0, (
        f"{len(answered) - len(set(answered))} texts embedded twice"
    )
    assert len(answered) == BULK


def test_a_hung_server_holds_a_search_for_query_timeout_not_timeout(cli, server):
    """Searches embed their query (and the few chunks written since the last index)
    on the spot: with the defaults (timeout 60 s, 5 retries) a hung server held a
    search over six minutes before it fell back to keywords."""
    root = cli.cwd
    configure(root, server.settings(timeout=120, max_retries=3, query_timeout=0.5))
    paths = add_memories(root, MODEL_MEMORIES)
    assert cli.json("index")["embedded"] == 3
    add_memories(root, [{"title": "Late note", "body": "Rollback drills run every quarter."}])
    server.block_from = len(server.requests)  # from now on, nothing is answered
    try:
        started = time.monotonic()
        proc = cli("search", "rollback", "traffic", "--json")
        hits = json.loads(proc.stdout)
        assert hits[0]["path"] == paths[0] and {h["source"] for h in hits} == {"bm25"}
        assert notices(proc.stderr, "vector search off")
        # Two attempts of 0.5 s, where timeout and max_retries would take 8 minutes.
        assert time.monotonic() - started < 60
        assert [r["status"] for r in server.requests[server.block_from :]] == ["blocked", "blocked"]
    finally:
        server.block_from = None
        server.release.set()


def test_one_text_the_provider_refuses_is_left_to_bm25_and_stops_nothing(cli, server):
    """One chunk a provider refuses (too long for its context, say) failed its
    batch, and every later `lore index` hit the same batch first: the index
    never got its vectors."""
    root = cli.cwd
    configure(root, server.settings(batch_size=4))
    paths = add_memories(root, MODEL_MEMORIES)
    poisoned = add_memories(root, [{"title": "Huge paste", "body": "POISON " + "rollback log line " * 20}])
    more = add_memories(
        root, [{"title": f"Note {n}", "body": f"Quarterly drill number {n}."} for n in range(5)]
    )
    server.refuse = "POISON"
    proc = cli("index", "--json")
    assert json.loads(proc.stdout)["embedded"] == len(paths) + len(more)
    assert notices(proc.stderr, "refused 1 text(s) on their own")
    with lore.open(root) as project:
        assert project.store.count_embeddings("openai-compatible:a") == len(paths) + len(more)
    mark = server.mark()
    assert cli.json("index")["embedded"] == 0
    assert server.since(mark) == []  # the refused text is not sent again
    # Alone in its batch: a one-word probe tells the text from the request.
    add_memories(root, [{"title": "Second paste", "body": "POISON again " * 10}])
    proc = cli("index", "--json")
    assert json.loads(proc.stdout)["embedded"] == 0 and notices(proc.stderr, "refused 1 text(s)")
    hits = cli.json("search", "--mode", "vector", "rollback", "traffic")
    assert hits[0]["path"] == paths[0] and poisoned[0] not in [h["path"] for h in hits]
    assert cli.json("search", "--mode", "bm25", "huge", "paste")[0]["path"] == poisoned[0]


def test_a_refusal_no_text_escapes_is_an_error_not_a_skip(cli, server):
    """A wrong model name refuses every text: that is the request's fault, said as an error."""
    root = cli.cwd
    configure(root, server.settings())
    add_memories(root, MODEL_MEMORIES)
    server.refuse = ""  # every text
    proc = cli("index", ok=False)
    assert proc.returncode != 0 and "refused the request (HTTP 400" in proc.stderr, proc.stderr
    with lore.open(root) as project:
        assert project.store.get_meta("embed_refused:openai-compatible:a") in (None, "", "[]")


def test_killed_indexing_resumes_where_it_stopped(cli, server):
    root = cli.cwd
    configure(root, server.settings())
    add_memories(root, bulk_memories())
    expected = distinct_embedding_texts(root)

    server.block_from = 2  # hang on the third batch
    proc = subprocess.Popen(
        [sys.executable, "-m", "lore", "index"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert server.blocked.wait(60), "lore index never reached the third batch"
    finally:
        proc.kill()  # SIGKILL: no cleanup of any kind
        proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert [r["status"] for r in server.requests] == [200, 200, "blocked"]

    server.block_from = None
    server.release.set()
    stats = cli.json("stats")
    assert stats["vectors"] == 2 * BATCH and stats["pending_embeddings"] == BULK - 2 * BATCH
    mark = server.mark()
    assert cli.json("index")["embedded"] == BULK - 2 * BATCH
    assert sum(len(r["texts"]) for r in server.since(mark)) == BULK - 2 * BATCH
    answered = server.answered()
    assert len(answered) == len(set(answered)) == BULK and set(answered) == expected
    assert cli.json("stats")["pending_embeddings"] == 0


def test_memories_written_while_indexing_are_embedded_by_the_same_run(cli, server):
    # A memory added (by another process) while `lore index` embeds comes first in the
    # pending queue and took one place of the count the run had made at its start: the
    # run stopped one chunk short and said it was done, with embeddings still pending.
    root = cli.cwd
    configure(root, server.settings())
    add_memories(root, bulk_memories())
    late = {"title": "Written meanwhile", "body": "A memory another process added during the index."}
    server.before[1] = lambda: add_memories(root, [late])
    assert cli.json("index")["embedded"] == BULK + 1
    assert cli.json("stats")["pending_embeddings"] == 0
    assert set(server.answered()) == distinct_embedding_texts(root)


# -- 6. fresh memories are searchable by meaning at once -----------------------------------------


def test_memory_added_after_index_is_found_by_vector_search(project):
    for key in ("utc", "pool", "deploy", "theme"):
        title, body = CORPUS[key]
        project.add(title=title, body=body)
    assert project.embed() == 4  # what `lore index` does
    fresh = project.add(title=CORPUS["pets"][0], body=CORPUS["pets"][1]).path
    assert project.embedding_status()["pending_embeddings"] == 1
    hits = project.search("animals allowed at work", mode="vector")
    assert hits[0].path == fresh and hits[0].source == "vector"
    assert project.embedding_status()["pending_embeddings"] == 0


def test_memory_added_after_index_is_found_by_vector_search_cli(cli):
    add_memories(cli.cwd, [{"title": t, "body": b} for k, (t, b) in CORPUS.items() if k != "deploy"])
    assert cli.json("index")["embedded"] == len(CORPUS) - 1
    added = cli.json("add", "--title", CORPUS["deploy"][0], "--body", CORPUS["deploy"][1])
    assert cli.json("stats")["pending_embeddings"] == 1
    hits = cli.json("search", "--mode", "vector", "how do we ship new versions without downtime")
    assert hits[0]["path"] == added["path"] and hits[0]["source"] == "vector"
    stats = cli.json("stats")
    assert stats["pending_embeddings"] == 0 and stats["vectors"] == len(CORPUS)


def test_inline_embedding_only_covers_memory_chunks_added_since(cli, server):
    """Search embeds pending memory chunks inline; a new memory is found at once with an HTTP model too."""
    root = cli.cwd
    configure(root, server.settings())
    add_memories(root, MODEL_MEMORIES[:2])
    assert cli.json("index")["embedded"] == 2
    mark = server.mark()
    fresh = add_memories(root, MODEL_MEMORIES[2:])[0]
    hits = cli.json("search", "--mode", "vector", "tenant", "namespaced")
    assert hits[0]["path"] == fresh
    sent = server.since(mark)
    assert [len(r["texts"]) for r in sent] == [1, 1]  # the new chunk, then the query
    assert "Redis namespaces" in sent[0]["texts"][0] and sent[1]["texts"] == ["tenant namespaced"]


# -- found while writing these tests -------------------------------------------------------------


def test_python_api_accepts_the_path_add_returned_from_any_cwd(tmp_path, monkeypatch):
    """`add()` returns a project-relative path; `show`/`update` must take it back even when the
    process's cwd is outside the project (resolve() tries cwd, then the project root)."""
    project = lore.init(tmp_path / "proj")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    try:
        path = project.add(title="Timezone rule", body="Persist timestamps in UTC.").path
        assert project.show(path).path == path
    finally:
        project.close()
