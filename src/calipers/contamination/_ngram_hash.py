"""Word tokens and hashed word n-grams, vectorised with numpy.

Tokenisation (``TOKENISATION``, recorded in every index): the text is NFKC-normalised; a
token is a maximal run of characters for which ``str.isalnum()`` is true, so punctuation,
spaces and ``_`` separate tokens and are dropped; each character is lower-cased on its own
(the first character of ``str.lower()``: "İ" becomes "i", not "i" and a combining dot). This
is the lower-cased word n-gram convention of GPT-3's and lm-evaluation-harness's 13-gram
decontamination, made Unicode-aware.

Hashes (not cryptographic, stable across runs and machines): a token's hash is the polynomial
``sum c_i B**i mod 2**64`` over its code points, passed through MurmurHash3's 64-bit finaliser;
an n-gram's hash is the polynomial over its n token hashes with a second base, finalised again.
Both polynomials are computed for a whole block of text at once (prefix sums and shifted
slices), never with a Python loop per token or per n-gram.

Documents: an n-gram never spans two documents. :class:`NgramStream` carries the last n - 1
token hashes of the open document from one block to the next, so no n-gram is lost at a block
boundary; blocks must be cut between tokens (the corpus reader cuts at whitespace).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "TOKENISATION",
    "U64",
    "NgramStream",
    "fmix64",
    "ngram_keys",
    "normalise",
    "text_ngrams",
    "token_hashes",
]

TOKENISATION = "words-v1:nfkc-lower-isalnum;hash=poly64-fmix64"
"""Changes whenever tokens or hashes would change: an index built under another id is refused."""

U64 = npt.NDArray[np.uint64]
_B = 0x100000001B3  # FNV-1a's 64-bit prime: odd, so invertible mod 2**64
_M = 0x9E3779B97F4A7C15  # the golden-ratio constant, the n-gram polynomial's base
_SEP = "\x00"  # joins documents in one block; where they start is known from their lengths


def fmix64(x: U64) -> U64:
    """MurmurHash3's 64-bit finaliser (an invertible bit mixer), on a uint64 array."""
    x = x ^ (x >> np.uint64(33))
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


class _Tables:
    """Tables built once per process and grown on demand: powers of the polynomials' bases
    and their inverses mod 2**64 (for prefix sums), and ``word[c]``: the lower-case form of
    code point ``c`` if it is alphanumeric, else 0 (filled in lazily for the non-ASCII code
    points a text uses)."""

    def __init__(self) -> None:
        self._powers: dict[int, tuple[U64, U64]] = {}
        self.word = np.zeros(0x110000, dtype=np.uint64)
        self._known = np.zeros(0x110000, dtype=np.bool_)
        self._learn(np.arange(0x100, dtype=np.uint32))

    def powers(self, base: int, size: int) -> tuple[U64, U64]:
        """``base**i`` and ``base**-i`` mod 2**64 for i < size (``base`` odd)."""
        pw, inv = self._powers.get(base, (np.ones(1, np.uint64),) * 2)
        if pw.size < size:
            grow = max(size, 2 * pw.size)
            pw, inv = _geometric(base, grow), _geometric(pow(base, -1, 1 << 64), grow)
            self._powers[base] = (pw, inv)
        return pw[:size], inv[:size]

    def learn(self, cp: npt.NDArray[np.uint32]) -> None:
        """Make sure the tables know every non-ASCII code point in ``cp``."""
        high = cp[cp >= 0x80]
        if high.size:
            new = high[~self._known[high]]
            if new.size:
                self._learn(np.unique(new))

    def _learn(self, new: npt.NDArray[np.uint32]) -> None:
        for c in new.tolist():
            ch = chr(c)
            # Simple (one-to-one) case mapping: only U+0130 lower-cases to two characters.
            self.word[c] = ord(ch.lower()[0]) if ch.isalnum() else 0
        self._known[new] = True


def _geometric(base: int, size: int) -> U64:
    out = np.full(size, base, dtype=np.uint64)
    out[0] = 1
    return np.cumprod(out, dtype=np.uint64)  # wraps mod 2**64, as intended


_TABLES = _Tables()
_LATIN1 = _TABLES.word[:0x100].copy()


def normalise(text: str) -> str:
    """NFKC (ASCII text already is). Lower-casing is done per code point in
    :func:`_tokenise`."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _codepoints(text: str) -> U64:
    """``word[c]`` for every code point of ``text``: lower case if alphanumeric, else 0."""
    if text.isascii():
        return _LATIN1[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    _TABLES.learn(cp)
    return _TABLES.word[cp]


@dataclass(frozen=True)
class _Tokens:
    hashes: U64  # one per token
    doc: npt.NDArray[np.intp]  # document index of each token within the block (0, 1, ...)


def _tokenise(text: str, breaks: npt.NDArray[np.intp] | None = None) -> _Tokens:
    """Tokens of an already normalised block; ``breaks`` are the positions of the
    separators between documents (see :func:`_join`)."""
    cp = _codepoints(text)
    if cp.size == 0:
        return _Tokens(np.empty(0, np.uint64), np.empty(0, np.intp))
    word = (cp != 0).view(np.int8)
    bounds = np.flatnonzero(np.diff(word, prepend=np.int8(0), append=np.int8(0)))
    starts, ends = bounds[0::2], bounds[1::2]
    pw, inv = _TABLES.powers(_B, cp.size)
    prefix = np.zeros(cp.size + 1, dtype=np.uint64)
    cp *= pw
    np.cumsum(cp, out=prefix[1:])
    diff = prefix[ends]
    diff -= prefix[starts]
    diff *= inv[starts]
    doc = np.zeros(diff.size, np.intp) if breaks is None else np.searchsorted(breaks, starts)
    return _Tokens(fmix64(diff), doc)


def _join(texts: Sequence[str]) -> tuple[str, npt.NDArray[np.intp]]:
    """Normalised ``texts`` joined by ``_SEP``, and the separators' positions (code points)."""
    normed = [normalise(t) for t in texts]
    lengths = np.fromiter((len(t) for t in normed), dtype=np.intp, count=len(normed))
    breaks = np.cumsum(lengths)[:-1] + np.arange(len(normed) - 1, dtype=np.intp)
    return _SEP.join(normed), breaks


def token_hashes(text: str) -> U64:
    """The hash of every token of ``text`` (normalised here), in order."""
    return _tokenise(normalise(text)).hashes


def ngram_keys(hashes: U64, n: int) -> U64:
    """Hash of every window of ``n`` consecutive token hashes (empty if fewer than ``n``)."""
    windows = hashes.size - n + 1
    if windows <= 0:
        return np.empty(0, dtype=np.uint64)
    pw, inv = _TABLES.powers(_M, hashes.size)
    prefix = np.zeros(hashes.size + 1, dtype=np.uint64)
    np.cumsum(hashes * pw, out=prefix[1:])
    return fmix64((prefix[n:] - prefix[:windows]) * inv[:windows])


def _valid(doc: npt.NDArray[np.intp], n: int) -> npt.NDArray[np.bool_]:
    """Windows whose first and last token are in the same document."""
    same: npt.NDArray[np.bool_] = doc[: doc.size - n + 1] == doc[n - 1 :]
    return same


def text_ngrams(
    texts: Sequence[str], n: int
) -> tuple[U64, npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """All n-gram keys of several short texts at once: ``(keys, text index of each key,
    token count of each text)``. Used to check benchmark items."""
    if not texts:
        return np.empty(0, np.uint64), np.empty(0, np.intp), np.empty(0, np.intp)
    toks = _tokenise(*_join(texts))
    counts = np.bincount(toks.doc, minlength=len(texts)).astype(np.intp)
    if toks.hashes.size < n:
        return np.empty(0, np.uint64), np.empty(0, np.intp), counts
    keep = _valid(toks.doc, n)
    return ngram_keys(toks.hashes, n)[keep], toks.doc[: keep.size][keep], counts


class NgramStream:
    """Turns a stream of text blocks into n-gram keys, handed to ``sink`` block by block.

    ``feed`` continues the open document (the block must begin and end between tokens, e.g.
    at whitespace); ``add_documents`` closes it and adds whole documents in one vectorised
    pass; ``end_document`` closes it. Counts tokens, n-grams and documents.
    """

    def __init__(self, n: int, sink: Callable[[U64], object]) -> None:
        if n < 1:
            raise ValueError(f"n must be positive, got {n}")
        self.n = n
        self._sink = sink
        self._carry = np.empty(0, dtype=np.uint64)  # last n - 1 tokens of the open document
        self._open = False
        self.tokens = 0
        self.ngrams = 0
        self.documents = 0

    def feed(self, text: str) -> None:
        if not self._open:
            self.documents += 1
            self._open = True
        self._process(normalise(text), keep_tail=True)

    def add_documents(self, texts: Sequence[str]) -> None:
        self.end_document()
        if texts:
            self.documents += len(texts)
            self._process(*_join(texts), keep_tail=False)

    def end_document(self) -> None:
        self._carry = np.empty(0, dtype=np.uint64)
        self._open = False

    def _process(
        self, text: str, breaks: npt.NDArray[np.intp] | None = None, *, keep_tail: bool
    ) -> None:
        toks = _tokenise(text, breaks)
        self.tokens += int(toks.hashes.size)
        hashes = np.concatenate((self._carry, toks.hashes)) if self._carry.size else toks.hashes
        if hashes.size >= self.n:
            keys = ngram_keys(hashes, self.n)
            if breaks is not None:  # several documents: drop the n-grams that span two
                keys = keys[_valid(toks.doc, self.n)]  # (the carry is empty here)
            self.ngrams += int(keys.size)
            if keys.size:
                self._sink(keys)
        # A fed block holds one document (NUL was replaced), so its tail continues it.
        tail = hashes if keep_tail else hashes[:0]
        self._carry = tail[max(0, tail.size - (self.n - 1)) :].copy()
