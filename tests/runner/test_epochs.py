"""Several generations per item (``epochs``): seeded apart, stored per epoch, never replayed
from the cache, and summarised with the item as the cluster (epochs of one item are not
independent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calipers.analysis import compare, load_runs
from calipers.errors import ConfigError
from calipers.models import FakeModel
from calipers.runner import run
from calipers.stats import clustered_mean
from calipers.store import Store
from calipers.types import ModelRequest


def by_seed(request: ModelRequest) -> str:
    """Right ("#### <answer>" is never known) -> answer from the seed: epoch 0 and 2 say 4."""
    return "#### 4" if (request.params.seed or 0) % 2 == 0 else "#### 5"


def test_each_epoch_is_a_stored_sample_with_its_own_seed(tmp_path: Path) -> None:
    model = FakeModel(by_seed)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(model, "dyn_arithmetic", store=store, limit=6, epochs=3, temperature=0.7)
        recs = store.get_samples(result.run_id)
        assert len(recs) == 18 and model.calls == 18
        assert sorted({r.epoch for r in recs}) == [0, 1, 2]
        seeds = {(r.sample_id, r.epoch): r.prompt["params"]["seed"] for r in recs}
        assert all(seeds[(i, e)] == e for i, e in seeds)  # default seed 0, plus the epoch
        # sampled answers are never replayed from the cache: a second run asks again
        again = run(model, "dyn_arithmetic", store=store, limit=6, epochs=3, temperature=0.7)
        assert model.calls == 36
        assert not any(r.cached for r in store.get_samples(again.run_id))
        card = result.methodology.tasks["dyn_arithmetic"]
        assert card.epochs == 3


def test_summary_clusters_the_epochs_of_an_item(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(
            FakeModel(by_seed), "dyn_arithmetic", store=store, limit=8, epochs=3, temperature=0.7
        )
        recs = store.get_samples(result.run_id)
    est = result.summary.tasks["dyn_arithmetic"].metrics["acc"]
    values = [r.scores["acc"] for r in recs if r.scores]
    expected = clustered_mean(values, [r.sample_id for r in recs if r.scores])
    assert est.method == "cluster-t"
    assert est.value == pytest.approx(np.mean(values))
    assert (est.low, est.high) == pytest.approx((expected.low, expected.high))


def test_epochs_are_refused_where_they_would_all_be_the_same(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        with pytest.raises(ConfigError, match="greedy decoding"):
            run(FakeModel(), "dyn_arithmetic", store=store, limit=2, epochs=2)
        with pytest.raises(ConfigError, match="log-likelihood"):
            run(FakeModel(), "dyn_dates_mc", store=store, limit=2, epochs=2)


def test_compare_pairs_item_means_over_epochs(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        a = run(
            FakeModel(by_seed, name="a"),
            "dyn_arithmetic",
            store=store,
            limit=5,
            epochs=2,
            temperature=0.7,
        )
        b = run(
            FakeModel(by_seed, name="b"),
            "dyn_arithmetic",
            store=store,
            limit=5,
            epochs=2,
            temperature=0.7,
        )
        runs = load_runs(store, [a.run_id, b.run_id])
    row = compare(runs).rows[0]
    assert row.n == 5  # items, not records
    per_item_a: dict[str, list[float]] = {}
    for s in runs[0].samples:
        assert s.scores is not None
        per_item_a.setdefault(s.sample_id, []).append(s.scores["acc"])
    assert row.score_a.value == pytest.approx(np.mean([np.mean(v) for v in per_item_a.values()]))
