"""Runs: create, find by id / prefix / "latest", list, update, delete — on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from calipers.errors import RunNotFoundError, StoreError
from calipers.store import Store
from calipers.types import RunSummary
from tests.store.conftest import run_record, sample_record

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_run_round_trips_every_field(store: Store) -> None:
    run = run_record(
        "20240501-120000-abcdef",
        tasks=["capitals", "gsm8k"],
        methodology={"model": {"name": "oracle", "sha256": None}, "nested": [1, 2.5, "ü"]},
        config={"tasks": ["a.yaml"], "seed": 3},
        created_at=T0,
        calipers_version="0.1.0",
    )
    store.create_run(run)
    got = store.get_run(run.id)
    assert got == run
    assert got.created_at.tzinfo is not None and got.created_at == T0
    assert (got.status, got.finished_at, got.summary, got.error) == ("running", None, None, None)


def test_naive_and_foreign_zone_times_are_stored_as_utc(store: Store) -> None:
    plus2 = timezone(timedelta(hours=2))
    store.create_run(run_record("r1", created_at=datetime(2024, 5, 1, 14, 0, tzinfo=plus2)))
    store.update_run("r1", finished_at=datetime(2024, 5, 1, 13, 0))  # naive means UTC
    got = store.get_run("r1")
    assert got.created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.finished_at == datetime(2024, 5, 1, 13, 0, tzinfo=UTC)


def test_duplicate_run_id_is_a_store_error(store: Store) -> None:
    store.create_run(run_record("r1"))
    with pytest.raises(StoreError, match="already stored"):
        store.create_run(run_record("r1"))


def test_get_run_by_exact_id_prefix_and_latest(store: Store) -> None:
    store.create_run(run_record("20240101-000000-aaaaaa", created_at=T0))
    store.create_run(run_record("20240102-000000-bbbbbb", created_at=T0 + timedelta(days=1)))
    store.create_run(run_record("20240102-000000-bbbbcc", created_at=T0 + timedelta(days=2)))
    assert store.get_run("20240101-000000-aaaaaa").id == "20240101-000000-aaaaaa"
    assert store.get_run("20240101").id == "20240101-000000-aaaaaa"
    assert store.get_run("20240102-000000-bbbbc").id == "20240102-000000-bbbbcc"
    assert store.get_run("latest").id == "20240102-000000-bbbbcc"


def test_no_match_says_how_to_list_runs(store: Store) -> None:
    with pytest.raises(RunNotFoundError, match="No runs are stored yet"):
        store.get_run("latest")
    store.create_run(run_record("20240101-000000-aaaaaa"))
    for key in ("2025", "", "2024010%", "2024010_", "20240101-000000-AAAAAA"):
        with pytest.raises(RunNotFoundError) as err:
            store.get_run(key)
        assert err.value.message == f"No run matches {key!r}."
        assert err.value.hint == "`calipers runs` lists stored runs."


def test_ambiguous_prefix_names_up_to_five_candidates(store: Store) -> None:
    for i in range(7):
        store.create_run(run_record(f"20240101-00000{i}-abcdef", created_at=T0 + timedelta(i)))
    with pytest.raises(RunNotFoundError) as err:
        store.get_run("20240101-00000")
    newest_five = ", ".join(f"20240101-00000{i}-abcdef" for i in (6, 5, 4, 3, 2))
    assert err.value.message == (
        f"'20240101-00000' matches more than one run: {newest_five} and others."
    )
    store.create_run(run_record("20240101-000001-abcdeg", created_at=T0 - timedelta(1)))
    with pytest.raises(RunNotFoundError) as err:
        store.get_run("20240101-000001-abcde")
    assert err.value.message.endswith("run: 20240101-000001-abcdef, 20240101-000001-abcdeg.")
    assert err.value.hint == "Type more of the run id."


def test_list_runs_newest_first_with_filters(store: Store) -> None:
    store.create_run(run_record("r1", created_at=T0, tasks=["mmlu", "gsm8k"]))
    store.create_run(
        run_record(
            "r2",
            created_at=T0 + timedelta(1),
            tasks=["gsm8k"],
            model="openai:gpt-x",
            model_name="gpt-x",
        )
    )
    store.create_run(run_record("r3", created_at=T0 + timedelta(2), tasks=['a"gsm8k']))
    store.create_run(run_record("r4", created_at=T0 + timedelta(3), tasks=["GSM8K"]))
    assert [r.id for r in store.list_runs()] == ["r4", "r3", "r2", "r1"]
    assert [r.id for r in store.list_runs(limit=2)] == ["r4", "r3"]
    assert [r.id for r in store.list_runs(task="gsm8k")] == ["r2", "r1"]
    assert [r.id for r in store.list_runs(task="gsm8k", limit=1)] == ["r2"]
    assert [r.id for r in store.list_runs(task="nope")] == []
    assert [r.id for r in store.list_runs(model="gpt-x")] == ["r2"]
    assert [r.id for r in store.list_runs(model="openai:gpt-x")] == ["r2"]
    assert [r.id for r in store.list_runs(model="oracle", task="mmlu")] == ["r1"]
    assert [r.id for r in store.list_runs(limit=0)] == []


def test_update_run_sets_only_what_is_given(store: Store) -> None:
    store.create_run(run_record("r1", created_at=T0))
    store.update_run("r1", status="interrupted")
    store.update_run("r1", config={"tasks": ["b"], "resumed": 1})
    store.update_run("r1")  # nothing to set: a no-op, but the run must exist
    end = T0 + timedelta(minutes=5)
    summary = RunSummary(tasks={}, calls=None, elapsed_s=1.5)
    store.update_run("r1", status="finished", finished_at=end, summary=summary)
    got = store.get_run("r1")
    assert (got.status, got.finished_at, got.summary) == ("finished", end, summary)
    assert got.config == {"tasks": ["b"], "resumed": 1}
    store.update_run("r1", status="failed", error="model server went away")
    assert store.get_run("r1").error == "model server went away"


def test_update_run_rejects_unknown_run_and_status(store: Store) -> None:
    with pytest.raises(RunNotFoundError, match="No run has the id 'nope'"):
        store.update_run("nope", status="finished")
    with pytest.raises(RunNotFoundError):
        store.update_run("nope")
    store.create_run(run_record("r1"))
    with pytest.raises(ValueError, match="status"):
        store.update_run("r1", status="done")  # type: ignore[arg-type]  # not a status, on purpose


def test_delete_run_removes_its_samples_only(store: Store) -> None:
    store.create_run(run_record("r1"))
    store.create_run(run_record("r2"))
    store.add_samples([sample_record("r1", i) for i in range(3)])
    store.add_samples([sample_record("r2", i) for i in range(2)])
    assert store.delete_run("r1") == 3
    assert [r.id for r in store.list_runs()] == ["r2"]
    assert store.get_samples("r1") == []
    assert len(store.get_samples("r2")) == 2
    with pytest.raises(RunNotFoundError):
        store.delete_run("r1")


def test_the_model_columns_are_copies_of_the_config_and_the_card() -> None:
    from calipers.store import RunRecord

    card = {"model": {"name": "SmolLM2-135M-Instruct"}}
    run = RunRecord(
        id="r", tasks=[], methodology=card, methodology_hash="h", config={"model": "smollm2"}
    )
    assert (run.model, run.model_name) == ("smollm2", "SmolLM2-135M-Instruct")
    with pytest.raises(ValueError, match="model_name 'other' is not the methodology card's"):
        RunRecord(
            id="r",
            model_name="other",
            tasks=[],
            methodology=card,
            methodology_hash="h",
            config={"model": "smollm2"},
        )
    with pytest.raises(ValueError, match="model 'fake:echo' is not config"):
        RunRecord(
            id="r",
            model="fake:echo",
            tasks=[],
            methodology=card,
            methodology_hash="h",
            config={"model": "smollm2"},
        )
    with pytest.raises(ValueError, match="a run names its model"):
        RunRecord(id="r", tasks=[], methodology={}, methodology_hash="h", config={})
