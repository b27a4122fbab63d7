"""The bundled MiniLM model and the ONNX-directory provider (real model, offline)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil

import numpy as np
import pytest

from lore.embed import load_embedder, local
from lore.embed._files import file_sha256
from lore.errors import ProviderError

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

TEXTS = [
    "def parse(path): return open(path).read()",
    "x",
    "how to reset a password",
    "Caroline went to the LGBTQ support group on 7 May 2023 and told Melanie about it afterwards.",
    "",
    "banana bread recipe with walnuts",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A private, initially empty Lore cache for this module."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("lore-cache")
        patch.setenv("LORE_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="module")
def embedder(cache):
    return load_embedder({})


@pytest.fixture(scope="module")
def plain(cache):
    return load_embedder({"requantize": False})


@pytest.fixture
def model_dir(tmp_path):
    """A copy of the bundled model + tokenizer, as the `onnx` provider expects."""
    folder = tmp_path / "minilm"
    folder.mkdir()
    shutil.copy(local._bundled_model(), folder / "model.onnx")
    shutil.copy(local.TOKENIZER, folder / "tokenizer.json")
    return folder


def test_default_model(embedder, cache):
    assert embedder.model_id == "local:all-MiniLM-L6-v2-int8:8199be6f:pcq8:t128"
    assert embedder.dim == 384
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors, embedder.embed_documents(TEXTS))  # deterministic
    query = embedder.embed_query("password")
    assert query.shape == (384,) and query.dtype == np.float32
    # Built once, published atomically: no build leftovers in the cache.
    assert [p.name for p in (cache / "models").iterdir()] == [
        f"8199be6f699a395f-ort{__import__('onnxruntime').__version__}-{platform.machine()}-pcq8-x.onnx"
    ]


def test_the_cached_model_is_saved_optimised(embedder):
    """The re-quantised model is saved after the graph optimisations and loaded
    without them: the vectors equal those of optimising it again at load (so
    an index embedded before keeps its vectors' meaning), only faster to open."""
    from lore.embed.onnx_encoder import OnnxEncoder

    assert embedder.optimized
    reoptimised = OnnxEncoder(
        model_path=embedder.model_path,
        tokenizer_path=embedder.tokenizer_path,
        model_id="reoptimised",
        max_tokens=embedder.max_tokens,
    )
    assert not reoptimised.optimized
    np.testing.assert_array_equal(embedder.embed_documents(TEXTS), reoptimised.embed_documents(TEXTS))


def test_when_the_optimised_save_fails_the_requantised_model_still_runs(embedder, tmp_path, monkeypatch):
    """A failed optimised save (here: its name is taken by a folder) keeps the
    re-quantised model, optimised at load: same model id, same vectors."""
    monkeypatch.setenv("LORE_CACHE_DIR", str(tmp_path))
    stem = f"8199be6f699a395f-ort{__import__('onnxruntime').__version__}-{platform.machine()}-pcq8"
    (tmp_path / "models" / f"{stem}-x.onnx").mkdir(parents=True)
    fallback = load_embedder({})
    assert fallback.model_id == embedder.model_id and not fallback.optimized
    assert fallback.model_path == tmp_path / "models" / f"{stem}.onnx"
    np.testing.assert_array_equal(fallback.embed_documents(TEXTS), embedder.embed_documents(TEXTS))


def test_order_is_preserved_across_length_sorted_batches(embedder, plain):
    texts = [f"item {i}: " + "word " * ((i * 7) % 23) for i in range(21)]  # lengths shuffled
    for model in (embedder, plain):
        batched = model.embed_documents(texts)
        alone = np.stack([model.embed_query(t) for t in texts])
        # Each row matches its own text best (the re-quantised path varies slightly with batch mates).
        assert list(np.argmax(batched @ alone.T, axis=1)) == list(range(len(texts)))
        assert np.min(np.sum(batched * alone, axis=1)) > 0.98
    np.testing.assert_array_equal(
        plain.embed_documents(texts), np.stack([plain.embed_query(t) for t in texts])
    )


def test_semantics(embedder):
    query = embedder.embed_query("how to reset a password")
    near, far = embedder.embed_documents(["password reset instructions", "banana bread recipe"])
    assert query @ near > query @ far + 0.3


def test_requantised_matches_plain(embedder, plain):
    assert plain.model_id == "local:all-MiniLM-L6-v2-int8:8199be6f:t128"
    texts = [t for t in TEXTS if len(t) > 5]
    cosines = [embedder.embed_query(t) @ plain.embed_query(t) for t in texts]
    assert min(cosines) > 0.98 and np.mean(cosines) > 0.99


def test_truncation_is_part_of_the_model_id(cache):
    long = "token " * 400
    short, wide = load_embedder({"max_tokens": 32}), load_embedder({"max_tokens": 256})
    assert short.model_id.endswith(":t32") and wide.model_id.endswith(":t256")
    assert short.embed_query(long) @ wide.embed_query(long) < 0.999


def test_encoders_of_one_model_share_the_loaded_session_across_threads(embedder, cache):
    """A team server holds one Lore per user: they share one loaded model, and
    calling it from several threads at once gives each caller its own vectors."""
    from concurrent.futures import ThreadPoolExecutor

    again = load_embedder({})
    assert again is not embedder
    expected = embedder.embed_documents(TEXTS)
    again.embed_query("load it")
    assert again._session is embedder._session and again._tokenizer is embedder._tokenizer
    other = load_embedder({"max_tokens": 64})
    other.embed_query("load it")
    assert other._session is not embedder._session  # other settings, its own load
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: (embedder, again)[i % 2].embed_documents(TEXTS), range(8)))
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_onnx_directory_provider(model_dir, plain):
    embedder = load_embedder({"provider": "onnx", "path": "minilm", "max_tokens": 128}, root=model_dir.parent)
    assert embedder.model_id == "onnx:8199be6f:tokbe50c362:mean:t128"
    assert embedder.dim == 384
    # Same weights, same code path as the plain default: the same vectors.
    np.testing.assert_allclose(embedder.embed_documents(TEXTS), plain.embed_documents(TEXTS), atol=1e-5)
    cls = load_embedder({"provider": "onnx", "path": str(model_dir), "pooling": "cls"})
    assert cls.model_id == "onnx:8199be6f:tokbe50c362:cls:t256"
    np.testing.assert_allclose(np.linalg.norm(cls.embed_documents(TEXTS), axis=1), 1.0, atol=1e-5)


def _tamper(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_tampered_model_is_refused(model_dir, monkeypatch, cache):
    _tamper(model_dir / "model.onnx")
    with pytest.raises(ProviderError, match="sha256 mismatch"):
        load_embedder({"provider": "onnx", "path": str(model_dir), "sha256": local.MODEL_SHA256})
    monkeypatch.setattr(local, "_bundled_model", lambda: model_dir / "model.onnx")
    with pytest.raises(ProviderError, match="sha256 mismatch.*reinstall"):
        load_embedder({"provider": "local"})


def test_onnx_directory_errors(tmp_path):
    with pytest.raises(ProviderError, match="needs path"):
        load_embedder({"provider": "onnx"})
    with pytest.raises(ProviderError, match="model.onnx not found"):
        load_embedder({"provider": "onnx", "path": str(tmp_path)})
    with pytest.raises(ProviderError, match="pooling must be one of mean, cls"):
        load_embedder({"provider": "onnx", "path": str(tmp_path), "pooling": "max"})


def test_hash_is_remembered_until_the_file_changes(tmp_path, cache):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"one")
    first = file_sha256(path)
    stat = path.stat()
    path.write_bytes(b"two")  # same size; restore the mtime: treated as unchanged
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_sha256(path) == first
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert file_sha256(path) != first


@pytest.mark.parametrize(
    "damage", [b"\xff\xfe" * 40, b"not a hash at all, but 64 characters long, like a real one......", b""]
)
def test_a_damaged_hash_marker_is_hashed_again(tmp_path, cache, damage):
    # Bytes that are not UTF-8 in a marker (a crash, a bad disk) made every search fail
    # with "text is not valid UTF-8; give UTF-8 input"; 64 characters of anything were
    # taken for the model's sha256 (a new model id: vector search off, "re-embed").
    path = tmp_path / "weights.bin"
    path.write_bytes(b"weights")
    truth = hashlib.sha256(b"weights").hexdigest()
    before = set((cache / "hashes").iterdir()) if (cache / "hashes").is_dir() else set()
    assert file_sha256(path) == truth
    [marker] = set((cache / "hashes").iterdir()) - before
    marker.write_bytes(damage)
    assert file_sha256(path) == truth
    assert marker.read_text() == truth  # remembered again


def test_an_unwritable_cache_keeps_the_model_in_the_temp_folder(tmp_path, monkeypatch, embedder):
    """A file where the cache should be: the model ran as shipped, whose id is
    another, so every vector of the index was left out until a re-embed."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("LORE_CACHE_DIR", str(blocker))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    spare = load_embedder({})
    assert spare.model_id == embedder.model_id
    assert spare.model_path.parent == tmp_path / "tmp" / f"lore-{os.getuid()}" / "models"
    np.testing.assert_array_equal(spare.embed_documents(TEXTS), embedder.embed_documents(TEXTS))


def test_a_tokenizer_is_read_once_per_file_and_length_and_again_when_the_file_changes(tmp_path):
    from lore.embed.onnx_encoder import load_tokenizer

    text = " ".join(["walrus"] * 100)
    short, longer = load_tokenizer(local.TOKENIZER, 8), load_tokenizer(local.TOKENIZER, 16)
    assert len(short.encode(text).ids) == 8 and len(longer.encode(text).ids) == 16
    assert load_tokenizer(local.TOKENIZER, 8) is short
    copy = tmp_path / "tokenizer.json"
    shutil.copy(local.TOKENIZER, copy)
    first = load_tokenizer(copy, 8)
    copy.write_text(copy.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # another size: read again
    assert load_tokenizer(copy, 8) is not first


def test_a_broken_tokenizer_file_is_one_provider_error_naming_it(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(local._bundled_model(), folder / "model.onnx")
    (folder / "tokenizer.json").write_text("not a tokenizer", encoding="utf-8")
    encoder = local.load_onnx_dir({"path": str(folder)})
    with pytest.raises(ProviderError, match=r"cannot load tokenizer .*tokenizer\.json.*Hugging Face"):
        encoder.embed_query("walrus")


def test_a_session_for_queries_opened_before_a_fork_serves_the_forked_process(embedder, monkeypatch):
    """The warm server (lore.interfaces.warm) opens the model for queries once,
    on one thread; each command it forks embeds its query with that session,
    without opening the model, and gets the same vector bit for bit."""
    import signal

    from lore.embed import onnx_encoder

    monkeypatch.setattr(onnx_encoder, "_FOR_QUERIES", {})
    query = "how to reset a password"
    expected = embedder.embed_documents([query])[0]
    load_embedder({}).open_for_queries()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the forked command
        try:
            signal.alarm(60)  # a session whose threads stayed behind would hang here
            encoder = load_embedder({})
            vector = encoder.embed_query(query)
            os.write(write, b"%d %d" % (encoder._session is None, vector.tobytes() == expected.tobytes()))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        got = answer.read()
    os.waitpid(pid, 0)
    assert got == b"1 1"  # not loaded again; the same vector
    fresh = load_embedder({"max_tokens": 64})
    fresh.embed_query(query)
    assert fresh._session is not None  # other settings: the model is opened as before


def test_a_forked_child_that_ends_normally_does_not_hang_on_the_parents_model(cache):
    """A process that loaded the model (a session with a thread pool) forks —
    gunicorn's preloaded app, a script's os.fork(). The child embeds the same
    vectors and exits normally; freeing the inherited session had waited for
    its pool's threads, which the fork did not copy, for ever."""
    from forking import forked_child_outcome

    prepare = """
        from lore.embed import load_embedder
        encoder = load_embedder({})
        def embed():
            return encoder.embed_documents(["a text embedded by the parent", "on the session's thread pool"])
    """
    assert forked_child_outcome(prepare, {"LORE_CACHE_DIR": str(cache)}) == "exit 0"
