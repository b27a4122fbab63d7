"""Vector helpers shared by every provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike


def l2_normalise(rows: ArrayLike) -> np.ndarray:
    """Return `rows` ([n, d] or [d]) as float32 scaled to unit length (zero rows stay zero)."""
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    result: np.ndarray = matrix / np.maximum(norms, np.float32(1e-12))
    return result
