"""The three grades, each able to fail on its own: a trajectory that changes state before the
user confirmed fails procedure although its end state is right; skipping verification,
claiming an amount before reading it, and leaving out the required information each fail
their grade; a refusal task done as asked fails the end state."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from calipers.scorers import procedure_violations
from calipers.scorers._agent import claims_in, missing_info
from calipers.tasks.worlds import WORLDS, world_samples
from calipers.types import Sample, Step, ToolCall, Transcript
from tests.worlds._agents import plan_agent, play, without

N = 30


def _changes(world: str) -> list[Sample]:
    return [s for s in world_samples(world, 1, N) if s.metadata["outcome"] == "change"]


def _is_confirm(step: dict[str, Any]) -> bool:
    return "Shall I" in step.get("say", "")


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_changing_before_confirming_fails_procedure_though_the_end_state_is_right(
    world: str,
) -> None:
    for s in _changes(world):
        hasty = plan_agent(without(s.metadata["plan"], _is_confirm))
        score, t = play(world, s, hasty)
        write = next(st.tool_call.name for st in t.steps if st.tool_call and st.error is None
                     and st.tool_call.name in s.metadata["rules"]["write_tools"])  # fmt: skip
        assert score.values["end_state"] == 1.0, s.id
        assert score.values["procedure"] == 0.0, s.id
        assert score.values["success"] == 0.0
        assert f"changed_before_confirmation:{write}" in score.metadata["violations"]


def test_changing_without_verification_fails_procedure() -> None:
    for s in _changes("accounts"):
        plan = without(s.metadata["plan"], lambda st: st.get("tool") == "verify_identity")
        score, _t = play("accounts", s, plan_agent(plan))
        assert score.values["end_state"] == 1.0 and score.values["procedure"] == 0.0
        assert any(
            v.startswith("changed_before_verification:") for v in score.metadata["violations"]
        )
        assert not any(
            v.startswith("changed_before_confirmation") for v in score.metadata["violations"]
        )


def test_an_amount_stated_before_any_tool_returned_it_fails_read_before_claiming() -> None:
    refunds = [s for s in _changes("orders") if s.metadata["kind"] == "refund"]
    assert refunds
    for s in refunds:
        blind = plan_agent(without(s.metadata["plan"], lambda st: st.get("tool") == "get_order"))
        score, _t = play("orders", s, blind)
        price = s.metadata["required_info"][0]["value"]
        assert score.values["end_state"] == 1.0 and score.values["info"] == 1.0
        assert f"claim_before_read:money:{round(price, 2)}" in score.metadata["violations"]
        assert score.values["success"] == 0.0


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_leaving_out_the_required_information_fails_info(world: str) -> None:
    """Confirmation asked by naming only what the user wants (no amount, no time read from
    the tools), and a bare "Done." at the end."""
    tested = 0
    for s in _changes(world):
        terms = s.metadata["user"]["confirm_terms"]
        if any(str(i["value"]) in terms for i in s.metadata["required_info"]):
            continue  # the information is what the user asked for: any confirmation states it
        plan = [
            {"say": f"Shall I go ahead: {', '.join(terms)}?"} if _is_confirm(st) else st
            for st in s.metadata["plan"][:-1]
        ]
        score, _t = play(world, s, plan_agent([*plan, {"say": "Done."}]))
        assert score.values == {"end_state": 1.0, "procedure": 1.0, "info": 0.0, "success": 0.0}
        tested += 1
    assert tested >= 5


def test_doing_a_forbidden_change_after_a_yes_fails_the_end_state() -> None:
    """A refund outside the window, asked for, confirmed by the user, done: procedure is
    kept, the end state is wrong (the policy said no)."""
    late = [s for s in world_samples("orders", 1, 60) if s.metadata["kind"] == "refund_late"]
    assert late
    for s in late:
        order = s.metadata["initial"]["orders"][s.metadata["user"]["facts"]["order_id"]]
        item = order["items"][0]
        plan = [
            *[st for st in s.metadata["plan"] if "tool" in st or "order number" in st["say"]],
            {"say": f"Shall I refund the {item['name']} from order {order['id']} "
                    f"(${item['price']:.2f})?"},
            {"tool": "refund_items",
             "arguments": {"order_id": order["id"], "item_ids": [item["id"]]}},
            {"say": f"Refunded ${item['price']:.2f}."},
        ]  # fmt: skip
        score, t = play("orders", s, plan_agent(plan))
        assert [u.text for u in t.steps if u.kind == "user"][-1] == "Yes, please go ahead."
        assert score.values["procedure"] == 1.0 and score.values["end_state"] == 0.0
        assert score.metadata["state_diff"] == ["orders", "refunds"]
        assert t.state is not None and t.state["refunds"] == [
            {"order_id": order["id"], "item_ids": [item["id"]], "amount": item["price"]}
        ]


def test_the_expected_state_of_a_refund_is_what_the_policy_says() -> None:
    """Independently of the world's handlers: the refunded item is marked refunded, one
    refund row holds its price, and nothing else changed."""
    s = next(x for x in world_samples("orders", 2, 60) if x.metadata["kind"] == "refund")
    init, exp = s.metadata["initial"], s.metadata["expected"]
    oid = s.metadata["user"]["facts"]["order_id"]
    item = init["orders"][oid]["items"][0]
    assert exp["refunds"] == [{"order_id": oid, "item_ids": [item["id"]], "amount": item["price"]}]
    assert exp["orders"][oid]["items"][0]["status"] == "refunded"
    assert {k: v for k, v in exp["orders"].items() if k != oid} == {
        k: v for k, v in init["orders"].items() if k != oid
    }
    assert s.metadata["required_info"] == [{"kind": "money", "value": item["price"]}]


def test_claims_and_required_info_by_value() -> None:
    assert claims_in("Refunded $1,234.50 on 2026-03-01 at 9:05; see you.") == {
        ("money", 1234.5),
        ("date", "2026-03-01"),
        ("time", (9, 5)),
    }
    req: list[dict[str, Any]] = [
        {"kind": "money", "value": 44.49},
        {"kind": "time", "value": "09:30"},
    ]
    assert missing_info(req, ["That is 44.49 dollars", "booked at 9:30"]) == []
    assert missing_info(req, ["That is $44.50", "booked at 19:30"]) == ["money:44.49", "time:09:30"]


def _step(
    i: int, kind: Literal["model", "tool", "user"], text: str = "", call: ToolCall | None = None
) -> Step:
    return Step(index=i, kind=kind, text=text, tool_call=call)


def test_a_refused_write_attempt_still_counts_and_a_no_resets_confirmation() -> None:
    rules = {"write_tools": ["cancel_order"], "verify_tool": None, "verify_guards": []}
    call = ToolCall(id="1", name="cancel_order", arguments={"order_id": "O-1"})
    steps = (
        _step(0, "model"),
        _step(1, "user", "Yes, please go ahead."),
        _step(2, "model"),
        _step(3, "tool", '{"cancelled": "O-1"}', call),
        _step(4, "model"),
        _step(5, "user", "No, please don't do that."),
        _step(6, "model"),
        _step(7, "tool", '{"error": "no"}', call),
    )
    assert procedure_violations(rules, Transcript(steps=steps)) == [
        "changed_before_confirmation:cancel_order"
    ]
