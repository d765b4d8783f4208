"""A word-blocked Bloom filter of 64-bit keys, and its exact false-positive rate.

The filter is ``2**log2_words`` 64-bit words. A key picks ``g`` words, each from an
independent 64-bit mix of the key (top bits: the word; low bits: the positions), and sets
``kw`` bits in each, at 6-bit positions drawn with replacement. Adding or testing a batch of
keys is one gather and one scatter per word of the key, in numpy, whatever ``kw`` is: a
classical Bloom filter with ``k = g kw`` bits would touch ``k`` random cache lines per key
(about three times slower here). Blocking costs some false positives at equal memory, because
words fill unevenly (Putze, Sanders & Singler 2007, "Cache-, hash- and space-efficient Bloom
filters"); with ``g`` of 2 or 3 the loss is small, and the rate is computed exactly:

- from the filter as built (what an index reports): a new key's ``g`` words are uniform and
  its bit positions uniform, so ``P(FP) = (mean over words of (set bits / 64) ** kw) ** g``.
  This needs only the uniform-hash assumption, not the number of distinct keys.
- from the number ``n`` of distinct keys (to choose ``g`` and ``kw`` before building): a word
  receives ``X ~ Binomial(n g, 1/words)`` placements; after ``X kw`` uniform draws among 64
  positions the number ``S`` of set bits follows the occupancy distribution, and
  ``P(FP) = E[(S / 64) ** kw] ** g`` (treating a key's ``g`` words as independent).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import stats

from calipers.contamination._ngram_hash import U64, fmix64

__all__ = [
    "MAX_KW",
    "MAX_WORDS_PER_KEY",
    "BloomFilter",
    "Layout",
    "best_layout",
    "expected_fp_rate",
]

MAX_WORDS_PER_KEY = 3
MAX_KW = 10
NEGLIGIBLE_FP = 1e-8
"""Below this rate a layout is good enough: the cheapest one that reaches it is chosen."""
_SALTS = (0x9E3779B97F4A7C15, 0xD6E8FEB86659FD93, 0xA0761D6478BD642F)
_EXTRA_SALT = np.uint64(0xE7037ED1A0B428DB)
_POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@dataclass(frozen=True)
class Layout:
    """``words_per_key`` (g) words per key, ``bits_per_word`` (kw) bits in each."""

    words_per_key: int
    bits_per_word: int

    def __post_init__(self) -> None:
        if not 1 <= self.words_per_key <= MAX_WORDS_PER_KEY:
            raise ValueError(f"words_per_key must be in 1..{MAX_WORDS_PER_KEY}")
        if not 1 <= self.bits_per_word <= MAX_KW:
            raise ValueError(f"bits_per_word must be in 1..{MAX_KW}")


class BloomFilter:
    """``words`` (uint64, a power-of-two length of at least 64; in memory, or a read-only
    ``np.memmap``) holding keys added with ``layout``."""

    def __init__(self, words: U64, layout: Layout) -> None:
        size = int(words.size)
        if words.ndim != 1 or words.dtype != np.uint64 or size < 64 or size & (size - 1):
            raise ValueError("words must be a 1-D uint64 array whose length is a power of 2")
        self.words = words
        self.layout = layout
        self._shift = np.uint64(64 - (size.bit_length() - 1))
        self._slices = (64 - (size.bit_length() - 1)) // 6  # positions below the word bits

    @classmethod
    def empty(cls, n_words: int, layout: Layout) -> BloomFilter:
        return cls(_populated_zeros(n_words), layout)

    @classmethod
    def open(cls, path: Path, n_words: int, layout: Layout) -> BloomFilter:
        """Memory-map a filter written by :meth:`save` (read-only; pages load on use)."""
        return cls(np.memmap(path, dtype="<u8", mode="r", shape=(n_words,)), layout)

    def save(self, path: Path) -> None:
        """Write the raw words (little-endian uint64)."""
        self.words.astype("<u8", copy=False).tofile(path)

    @property
    def n_words(self) -> int:
        return int(self.words.size)

    def _locate(self, keys: U64) -> tuple[npt.NDArray[np.intp], U64]:
        """The words each key uses and the bits it sets in them (``g`` rows, flattened)."""
        g, kw = self.layout.words_per_key, self.layout.bits_per_word
        index = np.empty((g, keys.size), dtype=np.intp)
        masks = np.zeros((g, keys.size), dtype=np.uint64)
        one, low6 = np.uint64(1), np.uint64(63)
        for j in range(g):
            mixed = fmix64(keys ^ np.uint64(_SALTS[j]))
            index[j] = mixed >> self._shift
            source, first = mixed, 0
            for i in range(kw):
                if i == self._slices:  # the low bits are used up: mix again
                    source, first = fmix64(mixed ^ _EXTRA_SALT), i
                masks[j] |= one << ((source >> np.uint64(6 * (i - first))) & low6)
        return index.reshape(-1), masks.reshape(-1)

    def add(self, keys: U64) -> None:
        """Set the bits of every key (the filter must be writable). Batches of a few
        thousand keys keep the touched words in cache for the check below."""
        index, masks = self._locate(keys)
        while index.size:
            self.words[index] |= masks
            # A word named twice in one batch keeps only the last write: redo the others.
            lost = (self.words[index] & masks) != masks
            index, masks = index[lost], masks[lost]

    def contains(self, keys: U64) -> npt.NDArray[np.bool_]:
        """True where every bit of the key is set: added, or a false positive."""
        if keys.size == 0:
            return np.zeros(0, dtype=np.bool_)
        index, masks = self._locate(keys)
        hit = (self.words[index] & masks) == masks
        found: npt.NDArray[np.bool_] = hit.reshape(-1, keys.size).all(axis=0)
        return found

    def fill_and_fp_rate(self, chunk: int = 1 << 22) -> tuple[float, float]:
        """``(share of bits set, false-positive rate)`` of the filter as it is (see the
        module docstring), read ``chunk`` words at a time."""
        power = (np.arange(65) / 64.0) ** self.layout.bits_per_word
        ones, per_word = 0, 0.0
        for start in range(0, self.n_words, chunk):
            counts = _popcount(np.asarray(self.words[start : start + chunk]))
            ones += int(counts.sum(dtype=np.int64))
            per_word += float(power[counts].sum())
        fp = (per_word / self.n_words) ** self.layout.words_per_key
        return ones / (64 * self.n_words), fp


def _populated_zeros(n: int) -> U64:
    """``n`` zero words with every page mapped in at once (Linux MAP_POPULATE): faulting
    pages in one at a time, at random, made adding keys 3 times slower."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if not populate:
        words = np.zeros(n, dtype=np.uint64)
        words.fill(0)
        return words
    area = mmap.mmap(-1, 8 * n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return np.frombuffer(area, dtype=np.uint64)


def _popcount(words: U64) -> npt.NDArray[np.uint8]:
    """Set bits of each word (``np.bitwise_count`` where numpy has it, numpy >= 2)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return np.asarray(count(words), dtype=np.uint8)
    as_bytes = np.ascontiguousarray(words).view(np.uint8).reshape(-1, 8)
    counts: npt.NDArray[np.uint8] = _POP8[as_bytes].sum(axis=1, dtype=np.uint8)
    return counts


@lru_cache(maxsize=64)
def _hit_probability(draws: int, kw: int) -> npt.NDArray[np.float64]:
    """``E[(S_t / 64) ** kw]`` for t = 0 .. ``draws``, ``S_t`` the number of distinct
    positions after t uniform draws among 64 (occupancy distribution, by recursion)."""
    s = np.arange(65, dtype=np.float64)
    stay, weight = s / 64, (s / 64) ** kw
    dist = np.zeros(65)
    dist[0] = 1.0
    out = np.empty(draws + 1)
    for t in range(draws + 1):
        out[t] = float(dist @ weight)
        moved = dist * (1 - stay)
        dist = dist * stay
        dist[1:] += moved[:-1]
    return out


def expected_fp_rate(n_keys: int, n_words: int, layout: Layout) -> float:
    """False-positive rate after adding ``n_keys`` distinct keys to an empty filter of
    ``n_words`` words (see the module docstring)."""
    if n_keys <= 0:
        return 0.0
    g, kw = layout.words_per_key, layout.bits_per_word
    placements = n_keys * g
    load = stats.binom(placements, 1.0 / n_words)
    mean = placements / n_words
    top = min(placements, int(mean + 10 * np.sqrt(mean) + 40))  # P(X > top) < 1e-17
    x = np.arange(top + 1)
    per_word = float(load.pmf(x) @ _hit_probability(top * kw, kw)[x * kw])
    per_word += float(load.sf(top))  # the tail, counted as all hits (an upper bound)
    return float(min(1.0, max(0.0, per_word)) ** g)


def best_layout(n_keys: int, n_words: int) -> Layout:
    """The layout for about ``n_keys`` distinct keys: the cheapest (fewest words, then fewest
    bits) whose rate is at most ``NEGLIGIBLE_FP``, else the one with the lowest rate."""
    rated = [
        (expected_fp_rate(max(n_keys, 1), n_words, Layout(g, kw)), Layout(g, kw))
        for g in range(1, MAX_WORDS_PER_KEY + 1)
        for kw in range(1, MAX_KW + 1)
    ]
    good = [layout for rate, layout in rated if rate <= NEGLIGIBLE_FP]
    return good[0] if good else min(rated, key=lambda pair: pair[0])[1]
