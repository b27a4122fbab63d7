"""Vector helpers shared by every provider."""

from __future__ import annotations


def l2_normalise(rows):
    """Return `rows` ([n, d] or [d]) as float32 scaled to unit length (zero rows stay zero)."""
    import numpy as np

    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / np.maximum(norms, np.float32(1e-12))
