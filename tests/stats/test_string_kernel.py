"""The Hamming string kernel against hand-counted matches."""

import numpy as np
import pytest

from calipers.stats import hamming_codes, hamming_kernel


def test_matches_hand_counts() -> None:
    # "abc" vs "abd" over 4 positions: a, b and the padding match; c/d does not.
    k = hamming_kernel(["abc", "ab", ""], ["abd", "ab"], length=4)
    assert k.tolist() == [[0.75, 0.75], [0.75, 1.0], [0.25, 0.5]]


def test_only_the_first_length_characters_count() -> None:
    assert hamming_kernel(["hello world"], ["hello there"], length=5)[0, 0] == 1.0
    assert hamming_kernel(["hello world"], ["hello there"], length=11)[0, 0] == 6 / 11


def test_non_ascii_characters_are_single_positions() -> None:
    assert hamming_kernel(["été"], ["ete"], length=3)[0, 0] == pytest.approx(1 / 3)


def test_gram_matrix_is_positive_semidefinite() -> None:
    rng = np.random.default_rng(0)
    texts = ["".join(rng.choice(list("abc "), size=rng.integers(0, 12))) for _ in range(30)]
    codes = hamming_codes(texts, 10)
    gram = hamming_kernel(codes, codes)
    assert np.allclose(np.diag(gram), 1.0)
    assert np.linalg.eigvalsh(gram).min() > -1e-9


def test_rejects_bad_lengths() -> None:
    with pytest.raises(ValueError, match="positive"):
        hamming_codes(["a"], 0)
    with pytest.raises(ValueError, match="different lengths"):
        hamming_kernel(hamming_codes(["a"], 3), hamming_codes(["a"], 4))
