"""One way to derive an independent random stream from a seed and names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from calipers._util.hashing import text_hash

if TYPE_CHECKING:
    import numpy as np

__all__ = ["derived_rng", "derived_seed"]


def derived_seed(*parts: str) -> int:
    """A 32-bit integer from ``parts`` (joined by NUL), stable across runs and machines."""
    return int(text_hash("\x00".join(parts), length=8), 16)


def derived_rng(seed: int, *parts: str) -> np.random.Generator:
    """The generator for the stream ``parts`` of ``seed`` (e.g. ``(seed, task, metric)``):
    reproducible, and independent of the streams other ``parts`` name."""
    import numpy as np

    return np.random.default_rng([seed, derived_seed(*parts)])
