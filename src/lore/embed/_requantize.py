"""One-time per-channel dynamic re-quantisation of an ONNX encoder.

The shipped MiniLM stores int8 weights that are cast back to float at run
time, so every MatMul runs in fp32. Folding the graph (ORT basic
optimisations) and re-quantising it dynamically, per channel, gives real
int8 MatMuls — several times faster on long inputs (see bench/embed_speed.py)
at cosine ≈ 0.99 to the original. The result is cached per (model hash,
onnxruntime version, machine) and published by an atomic rename, so
concurrent processes either see a complete file or build their own.

The cached file is saved after ORT's extended graph optimisations, so a
process loads it with optimisations off: the same vectors bit for bit as
optimising at every load, and ~30-50 ms less of a cold CLI's start.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from lore.embed._files import cache_dir

log = logging.getLogger(__name__)

#: Tag of this transformation in file names and model ids.
TAG = "pcq8"


def requantized_path(model: Path, sha256: str) -> tuple[Path, bool] | None:
    """The cached re-quantised copy of `model`, built on first use.

    Args:
        model: the verified source model.
        sha256: its hash (the cache key).

    Returns:
        (path, whether it was saved optimised), or None when the `onnx`
        package is missing or re-quantising fails (callers then run the
        model as shipped). When only the optimised save fails, the
        re-quantised file is returned, to be optimised at every load.
    """
    folder = _models_folder()
    # Found by the installed version without importing onnxruntime (~150 ms with
    # numpy): `lore status` and a run with nothing to embed never load the model.
    installed = _installed_version()
    if installed is not None and (folder / f"{_stem(sha256, installed)}-x.onnx").is_file():
        return folder / f"{_stem(sha256, installed)}-x.onnx", True
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    stem = _stem(sha256, ort.__version__)
    optimized, quantized = folder / f"{stem}-x.onnx", folder / f"{stem}.onnx"
    if optimized.is_file():
        return optimized, True
    if not quantized.is_file() and not _publish(quantized, lambda out: _quantize(ort, model, out)):
        return None
    extended = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    if not _publish(optimized, lambda out: _optimize(ort, quantized, out, extended)):
        return quantized, False
    with suppress(OSError):  # the re-quantised file, and its name before it was saved optimised
        quantized.unlink(missing_ok=True)
        (folder / f"{sha256[:16]}-ort{ort.__version__}-{TAG}.onnx").unlink(missing_ok=True)
    return optimized, True


def _stem(sha256: str, version: str) -> str:
    """The cached model's name: the source model, onnxruntime's version and the
    machine (a cache folder may be shared: a mounted home, a copied CI cache)."""
    return f"{sha256[:16]}-ort{version}-{platform.machine() or 'cpu'}-{TAG}"


def _installed_version() -> str | None:
    """onnxruntime's version as its ``__init__.py`` states it, read without
    importing it (or importlib.metadata, ~30 ms); None when it can't be read.
    A wrong guess only misses the cached file: the import path then looks again."""
    import importlib.util
    import re

    try:
        spec = importlib.util.find_spec("onnxruntime")
        if spec is None or spec.origin is None:
            return None
        with open(spec.origin, encoding="utf-8") as handle:
            found = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", handle.read(), re.M)
    except (OSError, ValueError, ImportError):
        return None
    return found.group(1) if found else None


def _models_folder() -> Path:
    """Where re-quantised models are kept: the user cache, or, when it can't be
    written (a file in its place, no rights), a private folder in the temp
    folder. Running the model as shipped instead would change the model id,
    and with it every vector of the index (search fell back to keywords, asking
    for `lore index --reembed`)."""
    folder = cache_dir() / "models"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK | os.X_OK):
            return folder
    except OSError:
        pass
    spare = Path(tempfile.gettempdir()) / f"lore-{os.getuid()}" / "models"
    log.warning("cannot write the model cache %s; using %s", folder, spare)
    with suppress(OSError):
        spare.mkdir(mode=0o700, parents=True, exist_ok=True)
    return spare


def _publish(target: Path, make: Callable[[Path], None]) -> bool:
    """Build `target` with `make(path)` in a private folder beside it, then
    rename it into place (atomic: readers see a complete file or none).
    False, logged, when building fails and no other process published it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    except OSError as exc:
        log.warning("cannot write the model cache %s (%s)", target.parent, exc)
        return False
    try:
        built = work / "model.onnx"
        make(built)
        built.replace(target)
        return True
    except Exception as exc:
        log.warning("building the cached model %s failed (%s)", target.name, exc)
        return target.is_file()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _quantize(ort: Any, model: Path, out: Path) -> None:
    """Fold `model` (ORT basic optimisations), then re-quantise it dynamically per channel."""
    try:
        import onnx  # noqa: F401 - quantize_dynamic needs it
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise RuntimeError("the onnx package is not installed") from exc
    folded = out.with_name("folded.onnx")
    _optimize(ort, model, folded, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    with _quiet_root_logger():
        quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=True)


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
