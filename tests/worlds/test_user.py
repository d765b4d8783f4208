"""The simulated users: the scripted one's rules, and a model-played user whose planted error
rate is recovered by the checks (interval over its messages covers the planted rate)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from calipers.models import FakeModel
from calipers.runner import run
from calipers.stats import wilson
from calipers.store import Store
from calipers.tasks import LoadContext, register_task
from calipers.tasks.worlds import ModelUser, ScriptedUser, check_user_message, world_task
from calipers.types import ChatMessage, ModelRequest, ModelResponse
from tests.worlds._agents import OracleProvider

SPEC = {
    "goal": "Get a refund for the Rain jacket from order O-12345.",
    "facts": {"order_id": "O-12345", "email": "ana.adler12@example.com"},
    "asks": {"order_id": ["order number"], "email": ["email"]},
    "confirm_terms": ["O-12345", "refund", "Rain jacket"],
}


def _say(user: ScriptedUser | ModelUser, text: str) -> str | None:
    return asyncio.run(user.next((ChatMessage(role="assistant", content=text),), text))


def test_the_scripted_user() -> None:
    u = ScriptedUser(SPEC, max_turns=5)
    assert _say(u, "What is your order number?") == "My order id is O-12345."
    assert _say(u, "Your email and order number?") == (
        "My order id is O-12345. My email is ana.adler12@example.com."
    )
    assert _say(u, "Shall I refund the Rain jacket from order O-12345?") == "Yes, please go ahead."
    assert _say(u, "Shall I refund the Backpack from order O-12345?") == "No, please don't do that."
    assert _say(u, "How is the weather?") == f"I'm not sure what you need. {SPEC['goal']}"
    assert _say(u, "Shall I refund the Rain jacket from order O-12345?") is None  # 5 turns used
    assert _say(ScriptedUser(SPEC), "Done: refunded.") is None  # no question: the agent is done


def test_user_message_checks() -> None:
    ask = "What is your order number?"
    assert check_user_message(SPEC, ask, "It is O-12345.") == []
    assert check_user_message(SPEC, ask, "It is O-54321.") == [
        "wrong_fact:order_id",
        "unanswered:order_id",
    ]
    assert check_user_message(SPEC, ask, "I'm a support agent.") == ["unanswered:order_id"]
    assert check_user_message(SPEC, ask, "O-12345, ana.adler12@example.com") == ["leak:email"]
    confirm = "Shall I refund the Backpack from order O-12345?"
    assert check_user_message(SPEC, confirm, "Yes, sure.") == ["wrong_confirmation"]
    assert check_user_message(SPEC, confirm, "No.") == []
    assert check_user_message(SPEC, "Done: refunded.", "Thanks! And my sweater?") == ["not_closing"]


def _planted(rate: float, seed: int) -> FakeModel:
    """A user model that gives a wrong order number with probability ``rate``."""
    rng = random.Random(seed)

    def respond(req: ModelRequest) -> str | ModelResponse:
        last = (req.messages or ())[-1].content
        if "order number" not in last:
            return "###STOP###"
        return "It is O-99999." if rng.random() < rate else "It is O-12345."

    return FakeModel(respond, name="planted-user")


def test_a_planted_user_error_rate_is_recovered() -> None:
    model = _planted(0.25, seed=7)
    user = ModelUser(SPEC, model, max_turns=1000)
    for _ in range(400):
        assert _say(user, "What is your order number?") is not None
    check = user.check()
    est = wilson(check["with_errors"], check["messages"])
    assert check["messages"] == 400
    assert est.low <= 0.25 <= est.high
    assert set(check["problems"]) == {"wrong_fact:order_id", "unanswered:order_id"}


def test_a_model_user_in_a_run_reports_its_error_rate(tmp_path: Path) -> None:
    """The oracle against a model-played user on the orders world: the user's checks land in
    the final state and the scorer's ``user_error_rate``; the card names the user model."""

    def always_wrong(req: ModelRequest) -> str:
        last = (req.messages or ())[-1].content
        return "It is O-99999." if "order number" in last else "Yes, please go ahead."

    task = world_task("orders", user=FakeModel(always_wrong, name="wrong-user"))
    task = type(task)(**{**task.__dict__, "name": "world_orders_model_user"})
    register_task(task.name, lambda: task)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(OracleProvider(), task.name, store=store, limit=20)
        recs = store.get_samples(result.run_id)
    card = result.methodology.tasks[task.name].episode
    assert card is not None and card["user"] == "fake:wrong-user"
    details = {r.sample_id: r.score_details or {} for r in recs}
    talked = [r for r in recs if details[r.sample_id]["episode"]["state"]["user_check"]["messages"]]
    asked = {s.id for s in task.load(LoadContext(n=20)) if "O-" not in s.input}
    assert asked and asked <= {r.sample_id for r in talked}  # the oracle asks for the order id
    for r in talked:
        check = details[r.sample_id]["episode"]["state"]["user_check"]
        assert r.scores is not None
        wrong = r.sample_id in asked
        assert ("wrong_fact:order_id" in check["problems"]) is wrong
        assert r.scores["user_error_rate"] == check["with_errors"] / check["messages"]
    summary = result.summary.tasks[task.name].metrics["user_error_rate"]
    assert summary.n == len(talked)
