"""Through the runner: the oracle agent passes every seeded task of every world, and the
do-nothing agent passes exactly the tasks whose right outcome is to change nothing (which are
neither none nor all of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from calipers.models import ModelProvider
from calipers.runner import run
from calipers.store import SampleRecord, Store
from calipers.tasks import get_task
from calipers.tasks.worlds import WORLDS, world_samples
from tests.worlds._agents import OracleProvider, do_nothing

N = 50


def _records(tmp_path: Path, model: ModelProvider, task: str) -> list[SampleRecord]:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(model, task, store=store, limit=N)
        assert result.summary.tasks[task].n_errors == 0
        return list(store.get_samples(result.run_id))


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_the_oracle_passes_every_task(tmp_path: Path, world: str) -> None:
    recs = _records(tmp_path, OracleProvider(), f"world_{world}")
    assert len(recs) == N
    scores = [r.scores or {} for r in recs]
    failed = [r.sample_id for r, s in zip(recs, scores, strict=True) if s["success"] != 1.0]
    assert failed == []
    assert all(s["procedure"] == 1.0 and s["end_state"] == 1.0 for s in scores)
    ep = (recs[0].score_details or {})["episode"]
    assert ep["stopped"] == "done" and any(s["kind"] == "tool" for s in ep["steps"])


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_doing_nothing_passes_exactly_the_no_change_tasks(tmp_path: Path, world: str) -> None:
    recs = _records(tmp_path, do_nothing(), f"world_{world}")
    outcome = {s.id: s.metadata["outcome"] for s in world_samples(world, 0, N)}
    passed = {r.sample_id for r in recs if (r.scores or {})["success"] == 1.0}
    no_change = {i for i, o in outcome.items() if o == "refuse"}
    assert passed == no_change
    assert 0.1 <= len(no_change) / N <= 0.4  # some tasks, never all: doing nothing is not enough


def test_the_tasks_are_registered_with_their_card() -> None:
    task = get_task("world_orders")
    assert task.kind == "episode" and task.dynamic and task.default_n == 50
    assert task.episode_card == {"world": "orders", "version": "1", "user": "scripted"}
    assert task.metrics == ["success", "end_state", "info", "procedure", "user_error_rate"]
    assert get_task("world_calendar").name == "world_calendar"
    assert get_task("world_accounts").episode_card["world"] == "accounts"
