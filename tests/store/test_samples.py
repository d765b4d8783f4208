"""Samples and the response cache, on every backend: nothing lost, nothing duplicated."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from calipers.errors import StoreError
from calipers.store import SampleRecord, Store
from tests.store.conftest import run_record, sample_record


@pytest.fixture
def run_id(store: Store) -> str:
    store.create_run(run_record("r1"))
    return "r1"


def test_sample_round_trips_every_field(store: Store, run_id: str) -> None:
    rec = SampleRecord(
        run_id=run_id,
        task="mmlu",
        sample_id="q-1",
        epoch=2,
        position=7,
        category="virology",
        cluster="passage-3",
        prompt={"messages": [{"role": "user", "content": '¿Qué? 文字 \u2028 "quoted"'}]},
        response="(B) because…",
        answer="B",
        target="C",
        scores={"acc": 0.0, "acc_norm": float("nan"), "f1": 0.25},
        score_details={"logprobs": [-1.5, -0.25], "note": None},
        latency_s=0.125,
        input_tokens=31,
        output_tokens=4,
        cost_usd=1.5e-5,
        cached=True,
        created_at=datetime(2024, 5, 1, 12, 0, 0, 500000, tzinfo=UTC),
    )
    assert store.add_samples([rec]) == 1
    [got] = store.get_samples(run_id)
    assert got.id is not None
    assert got.scores is not None and math.isnan(got.scores["acc_norm"])
    assert list(got.scores) == ["acc", "acc_norm", "f1"]  # metric order kept
    same_nan = {**got.scores, "acc_norm": 0.0}
    assert rec.scores is not None
    assert got.model_copy(update={"id": None, "scores": same_nan}) == rec.model_copy(
        update={"scores": {**rec.scores, "acc_norm": 0.0}}
    )


def test_error_sample_keeps_everything_but_a_score(store: Store, run_id: str) -> None:
    rec = sample_record(run_id, 0, response=None, answer=None, scores=None, error="timeout")
    store.add_samples([rec])
    [got] = store.get_samples(run_id)
    assert (got.error, got.scores, got.response, got.ok) == ("timeout", None, None, False)
    assert got.prompt == rec.prompt and got.target == rec.target and got.cached is False


def test_add_samples_skips_stored_successes(store: Store, run_id: str) -> None:
    first = [sample_record(run_id, i) for i in range(4)]
    assert store.add_samples(first) == 4
    changed = [sample_record(run_id, i, response="different") for i in range(6)]
    assert store.add_samples(changed) == 2
    got = store.get_samples(run_id)
    assert [s.sample_id for s in got] == [f"s{i:03d}" for i in range(6)]
    assert [s.response for s in got[:4]] == [f"answer {i}" for i in range(4)]  # not replaced
    assert store.add_samples([]) == 0


def test_a_retry_replaces_the_error_row_and_a_success_is_final(store: Store, run_id: str) -> None:
    failed = sample_record(run_id, 0, scores=None, response=None, error="503")
    store.add_samples([failed, sample_record(run_id, 1)])
    before = store.get_samples(run_id)[0]
    assert store.done_keys(run_id) == {("capitals", "s001", 0)}
    # the retry fails again: the newer error replaces the older one, still one row
    assert store.add_samples([failed.model_copy(update={"error": "504"})]) == 1
    assert [s.error for s in store.get_samples(run_id)] == ["504", None]
    # the retry succeeds: it replaces the error row, keeping the row id
    assert store.add_samples([sample_record(run_id, 0, response="ok")]) == 1
    after = store.get_samples(run_id)[0]
    assert (after.id, after.error, after.response) == (before.id, None, "ok")
    assert store.done_keys(run_id) == {("capitals", "s000", 0), ("capitals", "s001", 0)}
    # a success is never replaced, not even by an error
    assert store.add_samples([failed, sample_record(run_id, 0, response="later")]) == 0
    assert store.get_samples(run_id)[0].response == "ok"


def test_duplicates_within_one_batch_follow_the_same_rule(store: Store, run_id: str) -> None:
    err = sample_record(run_id, 0, scores=None, error="first failure")
    good = sample_record(run_id, 0, response="good")
    later = sample_record(run_id, 0, response="later")
    assert store.add_samples([err, good, later, err]) == 1
    [got] = store.get_samples(run_id)
    assert (got.error, got.response) == (None, "good")


def test_epochs_and_tasks_are_part_of_the_key(store: Store, run_id: str) -> None:
    recs = [
        sample_record(run_id, i, task=task, epoch=epoch, position=i)
        for task in ("b", "a")
        for epoch in (1, 0)
        for i in (1, 0)
    ]
    assert store.add_samples(recs) == 8
    got = store.get_samples(run_id)
    assert [(s.task, s.position, s.epoch) for s in got] == [
        (t, p, e) for t in ("a", "b") for p in (0, 1) for e in (0, 1)
    ]
    assert [s.task for s in store.get_samples(run_id, task="b")] == ["b"] * 4
    assert len(store.done_keys(run_id)) == 8
    assert ("a", "s000", 1) in store.done_keys(run_id)


def test_samples_of_an_unknown_run_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="no such run"):
        store.add_samples([sample_record("ghost", 0)])
    assert store.get_samples("ghost") == [] and store.done_keys("ghost") == set()


def test_a_failed_batch_stores_nothing(store: Store, run_id: str) -> None:
    with pytest.raises(StoreError):
        store.add_samples([sample_record(run_id, 0), sample_record("ghost", 1)])
    assert store.get_samples(run_id) == []


def test_samples_of_two_runs_do_not_mix(store: Store, run_id: str) -> None:
    store.create_run(run_record("r2"))
    assert store.add_samples([sample_record(run_id, 0), sample_record("r2", 0)]) == 2
    assert [s.run_id for s in store.get_samples("r2")] == ["r2"]


def test_response_cache_get_and_upsert(store: Store) -> None:
    key = "a" * 64
    assert store.cache_get(key) is None
    store.cache_put(key, {"text": "Paris", "input_tokens": 5, "nested": {"x": [1, None]}})
    assert store.cache_get(key) == {"text": "Paris", "input_tokens": 5, "nested": {"x": [1, None]}}
    store.cache_put(key, {"text": "Rome"})
    assert store.cache_get(key) == {"text": "Rome"}
    assert store.cache_get("b" * 64) is None


def test_response_cache_many_at_once(store: Store) -> None:
    items = {f"{i:064d}": {"text": f"t{i}", "n": i} for i in range(1200)}
    store.cache_put_many(items)
    store.cache_put_many({})
    asked = [*items, "missing", "0" * 64]  # more keys than one query takes, one repeated
    assert store.cache_get_many(asked) == items
    store.cache_put_many({"0" * 64: {"text": "new"}, "x": {"text": "x"}})
    assert store.cache_get_many(["0" * 64, "x", "y"]) == {
        "0" * 64: {"text": "new"},
        "x": {"text": "x"},
    }
    assert store.cache_get_many([]) == {}


def test_a_nul_character_in_a_model_answer_is_stored(store: Store, run_id: str) -> None:
    """PostgreSQL refuses NUL in text (and \\u0000 in JSON): a model that emits one must not
    lose its batch. NUL becomes U+FFFD in every text the record carries, on every store."""
    rec = sample_record(
        run_id,
        0,
        prompt={"prompt": "say \x00", "params": {}},
        response="a\x00b",
        answer="\x00",
        error=None,
        score_details={"exact_match": {"note": "x\x00y"}},
    )
    assert store.add_samples([rec, sample_record(run_id, 1)]) == 2
    (got, other) = store.get_samples(run_id)
    assert (got.response, got.answer) == ("a\ufffdb", "\ufffd")
    assert got.prompt["prompt"] == "say \ufffd"
    assert got.score_details == {"exact_match": {"note": "x\ufffdy"}}
    assert other.response == "answer 1"
