"""The agent loop: tool calls run and answered, every step stored, user turns from the
environment, the golden history, limits, and failures that are errors (never passes, never
hangs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calipers.models import FakeModel
from calipers.runner import run
from calipers.store import Store
from calipers.tasks import LoadContext, Task, register_task
from calipers.types import ModelRequest, ModelResponse, Sample
from tests._episodes import agent, call, counter_task


def run_task(tmp_path: Path, task: Task, model: FakeModel) -> tuple[Any, list[Any]]:
    register_task(task.name, lambda: task)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(model, task.name, store=store)
        return result, store.get_samples(result.run_id)


def test_tool_calls_run_and_every_step_is_stored(tmp_path: Path) -> None:
    sample = Sample(id="a", input="Make it 3.", target=3)
    result, (rec,) = run_task(tmp_path, counter_task([sample]), FakeModel(agent))
    assert rec.error is None and rec.scores == {"reached": 1.0}
    ep = rec.score_details["episode"]
    kinds = [s["kind"] for s in ep["steps"]]
    assert kinds == ["model", "tool"] * 5 + ["model"]
    tools = [s for s in ep["steps"] if s["kind"] == "tool"]
    assert [t["error"] for t in tools] == [
        None,
        "n must be an integer",
        "not JSON",
        "there is no tool named 'nosuch' (tools: read, add, hang)",
        None,
    ]
    assert json.loads(tools[0]["text"]) == {"value": 2}
    assert ep["state"] == {"value": 3} and ep["stopped"] == "done"
    assert rec.response == "done after 5 calls"
    assert rec.prompt["tools"][1]["name"] == "add"  # the opening request as stored
    card = result.methodology.tasks["counter"].episode
    assert card["tools"] == ["add", "hang", "read"] and card["world"] == "counter"
    assert card["limits"]["max_steps"] == 6


def test_the_step_limit_stops_an_agent_that_never_finishes(tmp_path: Path) -> None:
    def forever(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="", tool_calls=(call("read"),))

    sample = Sample(id="a", input="Make it 3.", target=3)
    _r, (rec,) = run_task(tmp_path, counter_task([sample], name="c2"), FakeModel(forever))
    ep = rec.score_details["episode"]
    assert ep["stopped"] == "max_steps"
    assert sum(s["kind"] == "model" for s in ep["steps"]) == 6
    assert rec.error is None and rec.scores == {"reached": 0.0}  # not finished: a failure


def test_a_stuck_tool_is_an_error_not_a_pass_or_a_hang(tmp_path: Path) -> None:
    def hangs(request: ModelRequest) -> ModelResponse:
        if any(m.role == "tool" for m in request.messages or ()):
            return ModelResponse(text="done")
        return ModelResponse(text="", tool_calls=(call("add", n=3), call("hang")))

    sample = Sample(id="a", input="Make it 3.", target=3)
    _r, (rec,) = run_task(tmp_path, counter_task([sample], name="c3"), FakeModel(hangs))
    assert rec.scores is None
    assert rec.error == "tool: tool 'hang' did not answer within 0.2 s"
    ep = rec.score_details["episode"]
    assert ep["stopped"] == "error" and ep["state"] == {"value": 3}
    assert ep["steps"][-1]["error"].startswith("tool 'hang' did not answer")


def test_user_turns_and_the_golden_history(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def talker(request: ModelRequest) -> str:
        msgs = request.messages or ()
        seen.append([m.content for m in msgs if m.role == "assistant"])
        return f"reply {sum(m.role == 'user' for m in msgs)}"

    own = Sample(id="own", input="hi", target=0, metadata={"turns": 3})
    gold = Sample(id="gold", input="hi", target=0, metadata={"turns": 3, "golden": "GOLD"})
    _r, recs = run_task(tmp_path, counter_task([own, gold], name="c4"), FakeModel(talker))
    by = {r.sample_id: r.score_details["episode"] for r in recs}
    assert by["own"]["replies"] == ["reply 1", "reply 2", "reply 3"]
    assert by["gold"]["replies"] == ["reply 1", "reply 2", "reply 3"]
    assert ["reply 1", "reply 2"] in seen  # own history: the model sees its own replies
    assert ["GOLD", "GOLD"] in seen  # golden history: the reference replies stand in
    users = [s for s in by["gold"]["steps"] if s["kind"] == "user"]
    assert [u["replaced"] for u in users] == ["reply 1", "reply 2"]


def test_an_episode_task_needs_an_environment() -> None:
    with pytest.raises(ValueError, match="needs an environment"):
        Task(
            name="x",
            version="1",
            description="",
            kind="episode",
            load=lambda ctx: [],
            scorers=(),
        )
    assert LoadContext().seed == 0


def test_a_rerun_replays_every_step_from_the_cache(tmp_path: Path) -> None:
    sample = Sample(id="a", input="Make it 3.", target=3)
    task = counter_task([sample], name="c5")
    register_task(task.name, lambda: task)
    first, second = FakeModel(agent), FakeModel(agent)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        a = run(first, task.name, store=store)
        b = run(second, task.name, store=store)
        (ra,), (rb,) = store.get_samples(a.run_id), store.get_samples(b.run_id)
    assert first.calls == 6 and second.calls == 0  # all six model steps came from the cache
    assert rb.cached and not ra.cached
    assert rb.score_details and ra.score_details
    assert rb.score_details["episode"]["state"] == ra.score_details["episode"]["state"]
    assert rb.scores == ra.scores == {"reached": 1.0}
