"""One-time per-channel dynamic re-quantisation of an ONNX encoder.

The shipped MiniLM stores int8 weights that are cast back to float at run
time, so every MatMul runs in fp32. Folding the graph (ORT basic
optimisations) and re-quantising it dynamically, per channel, gives real
int8 MatMuls — several times faster on long inputs (see bench/embed_speed.py)
at cosine ≈ 0.99 to the original. The result is cached per (model hash,
onnxruntime version) and published by an atomic rename, so concurrent
processes either see a complete file or build their own.

The cached file is saved after ORT's extended graph optimisations, so a
process loads it with optimisations off: the same vectors bit for bit as
optimising at every load, and ~30-50 ms less of a cold CLI's start.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from lore.embed._files import cache_dir

log = logging.getLogger(__name__)

#: Tag of this transformation in file names and model ids.
TAG = "pcq8"


def requantized_path(model: Path, sha256: str) -> Path | None:
    """The cached re-quantised copy of `model`, built on first use.

    Args:
        model: the verified source model.
        sha256: its hash (the cache key).

    Returns:
        The path, or None when the `onnx` package is missing or building fails
        (callers then run the model as shipped).
    """
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    target = cache_dir() / "models" / f"{sha256[:16]}-ort{ort.__version__}-{TAG}-x.onnx"
    if target.is_file():
        return target
    try:
        import onnx  # noqa: F401 - quantize_dynamic needs it
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        log.info("onnx is not installed; running %s without re-quantisation", model)
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    except OSError as exc:
        log.warning("cannot write the model cache %s (%s); running the model as shipped", target.parent, exc)
        return None
    try:
        folded, built, optimized = work / "folded.onnx", work / "quantized.onnx", work / "model.onnx"
        _optimize(ort, model, folded, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
        with _quiet_root_logger():
            quantize_dynamic(folded, built, weight_type=QuantType.QInt8, per_channel=True)
        _optimize(ort, built, optimized, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        optimized.replace(target)
    except Exception as exc:
        log.warning("re-quantising %s failed (%s); running the model as shipped", model, exc)
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with suppress(OSError):  # the copy cached before it was saved optimised
        target.with_name(f"{sha256[:16]}-ort{ort.__version__}-{TAG}.onnx").unlink(missing_ok=True)
    return target


def _optimize(ort: Any, source: Path, target: Path, level: Any) -> None:
    """Save `source` after ORT's graph optimisations up to `level`. (Extended
    is the highest level whose saved graph suits any CPU; "all" adds layout
    changes for this machine's.)"""
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.optimized_model_filepath = str(target)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Silence quantize_dynamic's advice, logged with `logging.warning()`.

    Logging to the root logger would also install a stderr handler on it
    (logging.basicConfig) for the rest of the process; a placeholder handler
    prevents that.
    """
    root, placeholder = logging.getLogger(), logging.NullHandler()
    added = not root.handlers
    if added:
        root.addHandler(placeholder)
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)
        if added:
            root.removeHandler(placeholder)
