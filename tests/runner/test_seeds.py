"""A run's seeds: the user's seed, turned once into two streams (items, bootstrap), recorded on
the card; each sample row stores the seed its item was made with."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import numpy.typing as npt
import pytest

import calipers
from calipers.models import FakeModel
from calipers.reports import methodology_rows
from calipers.runner import Methodology, RunConfig, RunSeeds, comparable_hash, make_plan
from calipers.stats import bootstrap_mean
from calipers.store import SampleRecord, Store
from calipers.tasks.dynamic import make_arithmetic


def stream_seed(*parts: str) -> int:
    """The 32-bit seed of a named stream, as the docs define it (sha256 of the NUL-joined
    names, first 8 hex digits), computed here without calipers."""
    return int(hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8], 16)


def test_the_streams_are_apart_and_reproducible() -> None:
    seeds = RunSeeds.derive(7)
    assert seeds.items == 7  # the items of --seed 7 are the ones it always generated
    assert seeds.bootstrap == stream_seed("7", "bootstrap") != seeds.items
    assert RunSeeds.derive(7) == seeds
    assert RunSeeds.derive(8) == RunSeeds(items=8, bootstrap=stream_seed("8", "bootstrap"))
    assert RunSeeds.derive(8).bootstrap != seeds.bootstrap


def _latencies(samples: list[SampleRecord]) -> npt.NDArray[np.float64]:
    return np.array([s.latency_s for s in samples], dtype=float)


def test_a_run_records_both_streams_and_each_sample_row_its_seed() -> None:
    result = calipers.run(FakeModel(name="echo"), "dyn_arithmetic", limit=6, seed=7)
    with Store.open() as store:
        run = store.get_run(result.run_id)
        samples = store.get_samples(run.id)
    card = Methodology.model_validate(run.methodology)
    assert card.seeds == RunSeeds(items=7, bootstrap=stream_seed("7", "bootstrap"))
    assert run.seed == 7 and "seed" not in run.methodology["tasks"]["dyn_arithmetic"]
    assert [s.seed for s in samples] == [7] * 6
    rows = dict(methodology_rows(run.methodology))
    assert "· 6 items · dynamic, seed 7 ·" in rows["task"]
    assert rows["seeds"] == f"items=7, bootstrap={stream_seed('7', 'bootstrap')}"
    # the items are today's items of seed 7: item i from random.Random("calipers/<task>/eval/7/i")
    assert [s.sample_id for s in samples] == [f"7-{i}" for i in range(6)]
    for i, s in enumerate(samples):
        item = make_arithmetic(random.Random(f"calipers/dyn_arithmetic/eval/7/{i}"), f"7-{i}")
        assert s.target == item.target_text
    # the bootstrap (latency's interval) drew from the bootstrap stream, reproducibly from the
    # stored records and the card alone ...
    lat = _latencies(samples)
    assert len(set(lat.tolist())) > 1  # else any stream gives the same interval
    stored = result.summary.tasks["dyn_arithmetic"].latency_s

    def interval(seed: int) -> tuple[float, float]:
        rng = np.random.default_rng([seed, stream_seed("latency", "dyn_arithmetic")])
        est = bootstrap_mean(lat, rng, 0.95)
        return est.low, est.high

    assert (stored.low, stored.high) == pytest.approx(interval(card.seeds.bootstrap))
    # ... and not from the items' seed (the single stream of earlier versions)
    assert (stored.low, stored.high) != pytest.approx(interval(card.seeds.items))


def test_the_same_seed_gives_the_same_streams_and_items() -> None:
    config = RunConfig(model="fake:echo", tasks=("dyn_arithmetic",), limit=3, seed=11)
    a, b = make_plan(config, FakeModel()), make_plan(config, FakeModel())
    assert a.methodology.seeds == b.methodology.seeds
    assert [p.sample for p in a.tasks[0].samples] == [p.sample for p in b.tasks[0].samples]
    assert {p.seed for p in a.tasks[0].samples} == {11}
    other = make_plan(config.model_copy(update={"seed": 12}), FakeModel())
    assert other.methodology.seeds.bootstrap != a.methodology.seeds.bootstrap
    assert other.tasks[0].samples[0].sample != a.tasks[0].samples[0].sample


def test_a_card_stored_before_the_streams_reads_with_one_stream() -> None:
    config = RunConfig(model="fake:echo", tasks=("dyn_arithmetic", "dyn_dates"), limit=2, seed=5)
    card = make_plan(config, FakeModel()).methodology
    old = card.model_dump(mode="json")
    del old["seeds"]
    for task in old["tasks"].values():  # earlier versions copied the seed into every task
        task["seed"] = 5
    read = Methodology.model_validate(old)
    # both streams drew from the user's seed then: finalize with bootstrap=5 reproduces it
    assert read.seeds == RunSeeds(items=5, bootstrap=5)
    assert "seed" not in read.tasks["dyn_dates"].model_dump()
    assert all(comparable_hash(read, t) == comparable_hash(card, t) for t in card.tasks)
