"""The tool_calls and bfcl tasks end to end through the runner with scripted fake models: an
oracle passes every item, a text-only model passes exactly the irrelevance items, a planted
share of wrong calls is recovered; BFCL's own file layout loads (types and dotted names
mapped); fake:tools=FILE scripts calls."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import ConfigError, DataError
from calipers.models import FakeModel, ModelOptions, resolve_model
from calipers.runner import run
from calipers.store import Store
from calipers.tasks import LoadContext
from calipers.tasks.toolcalls import SingleCallEnv, load_bfcl, load_builtin
from calipers.types import ChatMessage, ModelRequest, ModelResponse, Sample, ToolCall
from tests._data import DATA

ITEMS = load_builtin()
BY_INPUT = {s.input: s for s in ITEMS}


def oracle(request: ModelRequest) -> ModelResponse:
    users = [m.content for m in request.messages or () if m.role == "user"]
    reply = SingleCallEnv(BY_INPUT[users[-1]]).oracle(request.messages or ())
    assert reply is not None
    return reply


def run_task(tmp_path: Path, model: FakeModel, task: str = "tool_calls") -> list[Any]:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(model, task, store=store)
        return list(store.get_samples(result.run_id))


def test_the_builtin_set() -> None:
    assert len(ITEMS) == 42
    cats = Counter(s.category for s in ITEMS)
    assert cats == {"simple": 16, "multiple": 10, "parallel": 8, "irrelevance": 8}
    assert len({s.id for s in ITEMS}) == 42
    first20 = Counter(s.category for s in ITEMS[:20])  # --limit takes every category
    assert set(first20) == set(cats)


def test_the_oracle_passes_everything_and_every_call_is_stored(tmp_path: Path) -> None:
    recs = run_task(tmp_path, FakeModel(oracle))
    assert len(recs) == 42 and all(r.error is None for r in recs)
    assert [r.sample_id for r in recs if r.scores != {"call_acc": 1.0}] == []
    par = next(r for r in recs if r.category == "parallel")
    steps = par.score_details["episode"]["steps"]
    assert [s["kind"] for s in steps] == ["model", "tool", "tool"]  # one step, two calls
    assert par.score_details["episode"]["stopped"] == "max_steps"


def test_a_text_only_model_passes_only_irrelevance(tmp_path: Path) -> None:
    recs = run_task(tmp_path, FakeModel(lambda r: "I cannot call tools."))
    passed = Counter(r.category for r in recs if r.scores == {"call_acc": 1.0})
    assert passed == {"irrelevance": 8}
    reasons = {r.score_details["tool_call_match"]["metadata"]["reason"] for r in recs}
    assert reasons == {"ok", "no_call"}


def spoil(value: Any) -> Any:
    """Another value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return [*value, 99]
    return f"not {value}"


def test_a_planted_share_of_wrong_calls_is_recovered(tmp_path: Path) -> None:
    """Every third relevant item (by position in the file) gets its first argument changed:
    those items, and only those, fail with wrong_value or no_match."""
    relevant = [s for s in ITEMS if s.category != "irrelevance"]
    spoiled = {s.input for s in relevant[::3]}

    def model(request: ModelRequest) -> ModelResponse:
        reply = oracle(request)
        user = [m.content for m in request.messages or () if m.role == "user"][-1]
        if user not in spoiled:
            return reply
        first, *rest = reply.tool_calls
        args = dict(first.arguments or {})
        key = next(iter(args))
        args[key] = spoil(args[key])
        wrong = first.model_copy(update={"arguments": args})
        return reply.model_copy(update={"tool_calls": (wrong, *rest)})

    recs = run_task(tmp_path, FakeModel(model))
    failed = {r.sample_id for r in recs if r.scores == {"call_acc": 0.0}}
    assert failed == {BY_INPUT[q].id for q in spoiled}
    assert len(failed) == 12  # 34 relevant items, every third
    reasons = {r.score_details["tool_call_match"]["metadata"]["reason"] for r in recs}
    assert reasons == {"ok", "wrong_value", "no_match"}


def test_the_run_records_the_episode_card(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(FakeModel(oracle), "tool_calls", store=store, limit=3)
    card = result.methodology.tasks["tool_calls"].episode
    assert card is not None
    assert card["limits"]["max_steps"] == 1
    assert card["items"] == "calipers built-in (BFCL format)"


def write_bfcl(folder: Path) -> None:
    """BFCL's layout: BFCL_v4_<category>.json (JSON lines) and possible_answer/."""
    fn = {
        "name": "math.factorial",
        "description": "Factorial.",
        "parameters": {
            "type": "dict",
            "properties": {"number": {"type": "integer"}, "scale": {"type": "float"}},
            "required": ["number"],
        },
    }
    (folder / "possible_answer").mkdir(parents=True)
    for part in ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance"):
        q = {"id": f"{part}_0", "question": [[{"role": "user", "content": f"5! ({part})"}]]}
        (folder / f"BFCL_v4_{part}.json").write_text(json.dumps({**q, "function": [fn]}) + "\n")
        if part != "irrelevance":
            truth = [{"math.factorial": {"number": [5], "scale": ["", 1.0]}}]
            line = json.dumps({"id": f"{part}_0", "ground_truth": truth})
            (folder / "possible_answer" / f"BFCL_v4_{part}.json").write_text(line + "\n")


def test_bfcl_files_load_with_types_and_names_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)  # not installed
    with pytest.raises(DataError, match="bfcl-eval is not installed"):
        load_bfcl(LoadContext(data_dir=tmp_path))
    write_bfcl(tmp_path / "bfcl")
    samples = {s.id: s for s in load_bfcl(LoadContext(data_dir=tmp_path))}
    assert set(samples) == {
        "simple_python_0", "multiple_0", "parallel_0", "parallel_multiple_0", "irrelevance_0"
    }  # fmt: skip
    simple = samples["simple_python_0"]
    assert simple.category == "simple"
    tool = simple.fields["tools"][0]
    assert tool["name"] == "math_factorial"
    assert tool["parameters"]["type"] == "object"
    assert tool["parameters"]["properties"]["scale"] == {"type": "number"}
    assert json.loads(simple.target_text) == [
        {"math_factorial": {"number": [5], "scale": ["", 1.0]}}
    ]
    assert json.loads(samples["irrelevance_0"].target_text) == []


def test_fake_tools_script(tmp_path: Path) -> None:
    script = tmp_path / "calls.json"
    script.write_text(
        json.dumps(
            {
                "weather": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                "broken": [{"name": "get_weather", "arguments": "{city: Paris"}],
                "*": "no tool for that",
            }
        )
    )
    model = resolve_model(f"fake:tools={script}", ModelOptions())

    def ask(text: str) -> ModelResponse:
        req = ModelRequest(messages=(ChatMessage(role="user", content=text),))
        return asyncio.run(model.generate(req))

    good = ask("the weather in Paris?")
    assert good.tool_calls == (
        ToolCall(id="fake_0", name="get_weather", arguments={"city": "Paris"}),
    )
    assert good.finish_reason == "tool_calls"
    bad = ask("a broken call").tool_calls[0]
    assert bad.arguments is None and bad.raw == "{city: Paris" and bad.error
    plain = ask("hello")
    assert plain.text == "no tool for that" and plain.tool_calls == ()
    script.write_text(json.dumps({"x": [{"arguments": {}}]}))
    with pytest.raises(ConfigError, match="a reply is a text or a list"):
        resolve_model(f"fake:tools={script}", ModelOptions())


def test_builtin_samples_are_well_formed() -> None:
    """Every expected call names one of the item's tools, with arguments the tool has."""
    for s in ITEMS:
        tools = {t["name"]: t["parameters"] for t in s.fields["tools"]}
        for c in json.loads(s.target_text):
            ((name, args),) = c.items()
            assert name in tools, s.id
            assert set(args) <= set(tools[name]["properties"]), s.id
            assert set(tools[name]["required"]) <= set(args), s.id
    assert isinstance(ITEMS[0], Sample)


def test_the_oracle_passes_bfcls_own_answers() -> None:
    """With BFCL's files at hand (bfcl-eval installed, or <data-dir>/bfcl): each argument at
    its first allowed value passes all but the items whose answer contradicts the tool's
    schema (4 of 1,240 in bfcl-eval 2026.3.23)."""
    try:
        samples = load_bfcl(LoadContext(data_dir=DATA))
    except DataError:
        pytest.skip("BFCL's files are not installed (pip install bfcl-eval)")
    from calipers.scorers._toolcall import expected_calls, match_calls

    failed = []
    for s in samples:
        reply = SingleCallEnv(s).oracle(())
        assert reply is not None
        tools = {t["name"]: t["parameters"] for t in s.fields["tools"]}
        if not match_calls(reply.tool_calls, expected_calls(s), tools).ok:
            failed.append(s.id)
    assert len(failed) <= len(samples) // 200, failed
