"""The Hamming string kernel of model equality testing (Gao, Liang & Guestrin, ICLR 2025).

Two completions of the same prompt are compared position by position over their first
``length`` characters: ``k(x, y) = (1/L) * #{i < L : x_i = y_i}``, where a string shorter than
``L`` is padded with a character no text contains (so two completions that both stop early
match on the padding, as the paper's padded token sequences do). Completions of different
prompts have kernel 0, which makes the kernel over (prompt, completion) pairs the product of a
prompt indicator and this one; a sum of indicator kernels, it is positive semi-definite.
Characters, not tokens: a black-box API's tokenizer is unknown, and characters need none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["hamming_codes", "hamming_kernel"]

PAD = 0  # code points start at 1 below, so the pad never equals a character


def hamming_codes(texts: Sequence[str], length: int = 100) -> npt.NDArray[np.int32]:
    """``texts`` as an ``(n, length)`` array of code points + 1, padded with 0."""
    if length <= 0:
        raise ValueError(f"length must be positive, got {length}")
    out = np.full((len(texts), length), PAD, dtype=np.int32)
    for i, text in enumerate(texts):
        head = text[:length]
        if head:
            out[i, : len(head)] = np.frombuffer(head.encode("utf-32-le"), dtype=np.uint32) + 1
    return out


def hamming_kernel(
    a: Sequence[str] | npt.NDArray[np.int32],
    b: Sequence[str] | npt.NDArray[np.int32],
    *,
    length: int = 100,
) -> npt.NDArray[np.float64]:
    """The ``(len(a), len(b))`` matrix of ``k(a_i, b_j)`` in [0, 1]; ``a``/``b`` are texts or
    :func:`hamming_codes` arrays (pass codes when the same texts are compared many times)."""
    ca = a if isinstance(a, np.ndarray) else hamming_codes(a, length)
    cb = b if isinstance(b, np.ndarray) else hamming_codes(b, length)
    if ca.shape[1] != cb.shape[1]:
        raise ValueError(f"codes of different lengths: {ca.shape[1]} and {cb.shape[1]}")
    matches = np.zeros((ca.shape[0], cb.shape[0]), dtype=np.int64)
    for i in range(ca.shape[1]):  # one column at a time keeps memory at n*m, not n*m*L
        matches += ca[:, i, None] == cb[None, :, i]
    out: npt.NDArray[np.float64] = matches / ca.shape[1]
    return out
