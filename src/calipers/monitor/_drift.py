"""Drift of one window of traffic against the reference period, feature by feature.

Every feature is tested with a test whose false-alarm rate is controlled (``calipers.stats``
drift tests: each p-value is valid), and the tests of one window are corrected together with
Holm, so a window with no drift raises *any* alarm at most ``alpha`` of the time. That is a
per-window rate: over 30 windows without drift expect about ``30 * alpha`` windows with an
alarm (the report says so). Features:

==================  ======  =================================================================
prompt_length       input   KS, and PSI with a permutation-calibrated threshold
language            input   chi-square on the shares of the languages identified (``und``,
                            unsure, left out: it never alarms)
topic               input   chi-square on topic-cluster shares (k-means on the vectors)
embedding           input   MMD permutation test, or a domain-classifier two-sample test
response_length     output  KS (answered calls of the served arm)
refusal_rate        output  chi-square on refused yes/no
error_rate          output  chi-square on failed yes/no
score:NAME          output  KS on that online score's values
rag_unsupported_    output  chi-square on answered-without-support yes/no, and on abstained
rate, rag_abst...           yes/no, of the answered calls of requests carrying passages
                            (``calipers_rag``); only when either side has such requests
==================  ======  =================================================================

Topic clusters and embeddings use vectors fit on the reference and the window together (see
:mod:`calipers.monitor._vectors`); texts beyond ``max_texts`` per side are subsampled.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.monitor._features import Features
from calipers.monitor._language import UNDETERMINED
from calipers.monitor._vectors import Embedder, cluster_vectors
from calipers.stats import (
    DriftTest,
    adjust_drift,
    chi2_drift,
    classifier_drift,
    ks_drift,
    mmd_drift,
    psi_drift,
)

__all__ = ["DriftOptions", "DriftRow", "WindowDrift", "drift_tests"]

EmbeddingTest = Literal["mmd", "classifier"]


@dataclass(frozen=True, slots=True)
class DriftOptions:
    alpha: float = 0.05
    embedding_test: EmbeddingTest = "mmd"
    n_permutations: int = 1000
    max_texts: int = 1000
    topics: bool = True


@dataclass(frozen=True, slots=True)
class DriftRow:
    """One feature's test in one window; ``detail`` says what moved, in words."""

    feature: str
    kind: Literal["input", "output"]
    test: DriftTest
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        t = self.test

        def f(v: float) -> float | None:
            return v if math.isfinite(v) else None

        return {
            "feature": self.feature,
            "kind": self.kind,
            "test": t.test,
            "statistic": f(t.statistic),
            "threshold": f(t.threshold),
            "p_value": f(t.p_value),
            "p_adjusted": f(t.p_adjusted),
            "alpha": t.alpha,
            "drifted": t.drifted,
            "n_reference": t.n_reference,
            "n_current": t.n_current,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class WindowDrift:
    """The drift tests of one window (Holm-adjusted together)."""

    start: datetime
    end: datetime
    rows: tuple[DriftRow, ...]
    sample: tuple[int, int] | None = None
    """``(k, n)``: tested on a uniform sample of ``k`` of the window's ``n`` requests."""

    @property
    def alarms(self) -> list[DriftRow]:
        return [r for r in self.rows if r.test.drifted]

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "drifted": bool(self.alarms),
            "tests": [r.to_dict() for r in self.rows],
            **({"sample": {"n": self.sample[0], "of": self.sample[1]}} if self.sample else {}),
        }


def _median_detail(ref: npt.NDArray[np.float64], cur: npt.NDArray[np.float64], unit: str) -> str:
    if ref.size == 0 or cur.size == 0:
        return ""
    return f"median {np.median(ref):.0f} -> {np.median(cur):.0f} {unit}"


def _share_detail(
    ref: Sequence[Hashable], cur: Sequence[Hashable], names: dict[Hashable, str] | None = None
) -> str:
    """The category whose share moved most."""
    if not ref or not cur:
        return ""
    a, b = Counter(ref), Counter(cur)
    moves = {k: b[k] / len(cur) - a[k] / len(ref) for k in set(a) | set(b)}
    k = max(moves, key=lambda c: (abs(moves[c]), str(c)))
    label = (names or {}).get(k, str(k))
    return f"{label}: {a[k] / len(ref):.0%} -> {b[k] / len(cur):.0%}"


def _language_row(
    ref: Sequence[str], cur: Sequence[str], rng: np.random.Generator, o: DriftOptions
) -> DriftRow:
    """Shares of the languages identified; prompts the identifier was unsure of (``und``)
    are left out of the test, so an unsure label never raises an alarm (their share is
    said in the detail)."""
    a = [x for x in ref if x != UNDETERMINED]
    b = [x for x in cur if x != UNDETERMINED]
    test = chi2_drift(a, b, rng=rng, alpha=o.alpha, n_permutations=o.n_permutations)
    detail = _share_detail(a, b)
    if ref and cur and (len(a) < len(ref) or len(b) < len(cur)):
        unsure = f"unsure (left out) {1 - len(a) / len(ref):.0%} -> {1 - len(b) / len(cur):.0%}"
        detail = f"{detail}; {unsure}" if detail else unsure
    return DriftRow("language", "input", test, detail)


def _rate_detail(ref: Sequence[int], cur: Sequence[int]) -> str:
    if not ref or not cur:
        return ""
    return f"{np.mean(ref):.1%} -> {np.mean(cur):.1%}"


def _sample(texts: list[str], max_n: int, rng: np.random.Generator) -> list[str]:
    if len(texts) <= max_n:
        return texts
    return [texts[i] for i in sorted(rng.choice(len(texts), max_n, replace=False))]


def _text_tests(
    ref: Features, cur: Features, embedder: Embedder, rng: np.random.Generator, o: DriftOptions
) -> list[DriftRow]:
    """Topic shares and embedding drift on vectors fit on both windows' texts together."""
    a, b = _sample(ref.texts, o.max_texts, rng), _sample(cur.texts, o.max_texts, rng)
    if len(a) < 2 or len(b) < 2:
        skip = DriftTest("mmd-permutation", math.nan, math.nan, math.nan, len(a), len(b), o.alpha)
        return [DriftRow("embedding", "input", skip, "too few texts")]
    x = embedder.dense(a + b)
    rows = []
    if o.topics:
        labels = cluster_vectors(x, seed=embedder.seed).tolist()
        both = a + b
        first = {lab: both[i] for i, lab in reversed(list(enumerate(labels)))}
        names: dict[Hashable, str] = {k: f"topic {k} (e.g. {v[:40]!r})" for k, v in first.items()}
        test = chi2_drift(
            labels[: len(a)],
            labels[len(a) :],
            rng=rng,
            alpha=o.alpha,
            n_permutations=o.n_permutations,
        )
        rows.append(
            DriftRow(
                "topic", "input", test, _share_detail(labels[: len(a)], labels[len(a) :], names)
            )
        )
    xa, xb = x[: len(a)], x[len(a) :]
    if o.embedding_test == "classifier":
        emb = classifier_drift(xa, xb, rng=rng, alpha=o.alpha, max_n=o.max_texts)
    else:
        emb = mmd_drift(
            xa,
            xb,
            rng=rng,
            alpha=o.alpha,
            max_n=o.max_texts,
            n_permutations=max(100, o.n_permutations // 2),
        )
    rows.append(DriftRow("embedding", "input", emb, embedder.name))
    return rows


def _rag_rows(
    ref: Features, cur: Features, rng: np.random.Generator, o: DriftOptions
) -> list[DriftRow]:
    """The RAG outcome rates (:mod:`calipers.monitor._rag`), when either side has RAG calls:
    traffic without passages keeps exactly the tests it had."""
    if not (ref.rag_unsupported or cur.rag_unsupported):
        return []
    pairs = (
        ("rag_unsupported_rate", ref.rag_unsupported, cur.rag_unsupported),
        ("rag_abstention_rate", ref.rag_abstained, cur.rag_abstained),
    )
    return [
        DriftRow(
            name,
            "output",
            chi2_drift(a, b, rng=rng, alpha=o.alpha, n_permutations=o.n_permutations),
            _rate_detail(a, b),
        )
        for name, a, b in pairs
    ]


def drift_tests(
    ref: Features,
    cur: Features,
    *,
    embedder: Embedder,
    rng: np.random.Generator,
    options: DriftOptions | None = None,
) -> list[DriftRow]:
    """Every feature's test of ``cur`` against ``ref``, Holm-adjusted together."""
    o = options or DriftOptions()
    a, perms = o.alpha, o.n_permutations
    rows = [
        DriftRow(
            "prompt_length",
            "input",
            ks_drift(ref.prompt_length, cur.prompt_length, alpha=a),
            _median_detail(ref.prompt_length, cur.prompt_length, "chars"),
        ),
        DriftRow(
            "prompt_length",
            "input",
            psi_drift(ref.prompt_length, cur.prompt_length, rng=rng, alpha=a, n_permutations=perms),
        ),
        _language_row(ref.language, cur.language, rng, o),
        *_text_tests(ref, cur, embedder, rng, o),
        DriftRow(
            "response_length",
            "output",
            ks_drift(ref.response_length, cur.response_length, alpha=a),
            _median_detail(ref.response_length, cur.response_length, "chars"),
        ),
        DriftRow(
            "refusal_rate",
            "output",
            chi2_drift(ref.refused, cur.refused, rng=rng, alpha=a, n_permutations=perms),
            _rate_detail(ref.refused, cur.refused),
        ),
        DriftRow(
            "error_rate",
            "output",
            chi2_drift(ref.errored, cur.errored, rng=rng, alpha=a, n_permutations=perms),
            _rate_detail(ref.errored, cur.errored),
        ),
    ]
    rows += _rag_rows(ref, cur, rng, o)
    for name in sorted(set(ref.scores) | set(cur.scores)):
        r = ref.scores.get(name, np.zeros(0))
        c = cur.scores.get(name, np.zeros(0))
        r, c = r[~np.isnan(r)], c[~np.isnan(c)]
        rows.append(
            DriftRow(
                f"score:{name}",
                "output",
                ks_drift(r, c, alpha=a),
                f"mean {np.mean(r):.3f} -> {np.mean(c):.3f}" if r.size and c.size else "",
            )
        )
    keyed = {f"{i}": row.test for i, row in enumerate(rows)}
    adjusted = adjust_drift(keyed)
    return [
        DriftRow(row.feature, row.kind, adjusted[f"{i}"], row.detail) for i, row in enumerate(rows)
    ]
