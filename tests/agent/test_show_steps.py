"""``calipers show RUN --sample ID`` shows an episode step by step; ``--json`` carries the
steps; ``--steps`` shows every episode of the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.models import FakeModel
from calipers.runner import run
from calipers.store import Store
from calipers.types import ModelRequest, ModelResponse, ToolCall
from tests.agent import _world


def clumsy(request: ModelRequest) -> ModelResponse:
    """Refunds a wrong order id first (the tool refuses it), then the right one, then says so."""
    msgs = request.messages or ()
    tools = [m for m in msgs if m.role == "tool"]
    if not tools:
        return ModelResponse(
            text="Let me try.",
            tool_calls=(ToolCall(id="t1", name="refund", arguments={"order_id": "Z9"}),),
        )
    if len(tools) == 1:
        return ModelResponse(
            text="", tool_calls=(ToolCall(id="t2", name="refund", arguments={"order_id": "A1"}),)
        )
    return ModelResponse(text="Refunded A1.")


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str]:
    _world.register()
    store = f"sqlite:///{tmp_path / 's.db'}"
    with Store.open(store) as s:
        result = run(FakeModel(clumsy, name="clumsy"), "till", store=s, limit=2)
    return store, result.run_id


def test_one_item_step_by_step(stored: tuple[str, str]) -> None:
    store, run_id = stored
    r = CliRunner().invoke(cli, ["--store", store, "show", run_id, "--sample", "r1"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    text = "\n".join(lines)
    assert "till/r1 epoch 0: success=1" in text
    assert '"Please refund order A1."' in text  # the opening user turn
    assert "3 model call(s), 2 tool call(s)" in text
    step = next(line for line in lines if 'refund(order_id="Z9")' in line and "tool" in line)
    assert "error: no order 'Z9'" in step
    assert any('model "Let me try." calls refund(order_id="Z9")' in line for line in lines)
    assert any('"Refunded A1."' in line and "in /" in line for line in lines)  # tokens shown
    assert 'final state: {"refunded": ["A1"]}' in text


def test_json_carries_the_steps(stored: tuple[str, str]) -> None:
    store, run_id = stored
    r = CliRunner().invoke(cli, ["--store", store, "show", run_id, "--steps", "--json"])
    d = json.loads(r.stdout)
    assert [s["sample_id"] for s in d["samples"]] == ["r1", "r2"]
    steps = d["samples"][0]["episode"]["steps"]
    assert [s["kind"] for s in steps] == ["model", "tool", "model", "tool", "model"]
    assert steps[1]["tool_call"]["arguments"] == {"order_id": "Z9"}
    assert steps[1]["error"] == "no order 'Z9'"
    assert steps[4]["text"] == "Refunded A1."
    plain = json.loads(CliRunner().invoke(cli, ["--store", store, "show", run_id, "--json"]).stdout)
    assert "samples" not in plain


def test_an_unknown_item_is_a_clear_error(stored: tuple[str, str]) -> None:
    store, run_id = stored
    r = CliRunner().invoke(cli, ["--store", store, "show", run_id, "--sample", "nope"])
    assert r.exit_code == 2
    assert "has no item 'nope'" in r.stderr and "r1, r2" in r.stderr
