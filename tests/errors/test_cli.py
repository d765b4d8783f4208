"""calipers errors, compare and gate end to end on scripted fake models: planted error types
recovered with their Wilson intervals, a type planted to grow flagged by compare (one left
unchanged not), and gate rules on an error type passing and failing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from statsmodels.stats.proportion import proportion_confint

from calipers.cli import cli

N = 60
NO_ANSWER = "I'm sorry, I can't help with that."
RIGHT = "3 * 4 = 12\n#### 12"
SLIP = "3 * 4 = 13\n#### 13"
PLAN = "3 + 4 = 7\n#### 7"


STORE: list[str] = []  # the module's store URL, set by the runs fixture


def _invoke(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, [*args, "--store", STORE[0]], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = _invoke(*args, "--json")
    assert out.startswith("{"), err
    return code, json.loads(out)


def _model(folder: Path, name: str, middle: str, options: str = "") -> str:
    """Item i (of every three): a refusal, ``middle``, a wrong plan."""
    answers = {f"ITEM-{i:03d}": (NO_ANSWER, middle, PLAN)[i % 3] for i in range(N)}
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**answers, "*": "?"}))
    return f"fake:script={path},name={name}{options}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Three runs of 60 items made once for the module, in their own store."""
    tmp_path = tmp_path_factory.mktemp("errors")
    STORE[:] = [f"sqlite:///{tmp_path / 'store.db'}"]
    rows = [{"id": f"q{i}", "input": f"ITEM-{i:03d}: 3 * 4?", "target": "12"} for i in range(N)]
    (tmp_path / "calc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "calc.yaml"
    spec.write_text("name: calc\ndata: calc.jsonl\nscorers: [numeric_match]\n")
    out = {}
    for name, middle, options in (("a", RIGHT, ""), ("b", SLIP, ""), ("c", RIGHT, ",fail=0.2")):
        model = _model(tmp_path, name, middle, options)
        code, res = _json("run", "-m", model, "-t", str(spec), "--no-report")
        assert code in (0, 1), res
        out[name] = res["run_id"]
    return out


def _wilson(k: int, n: int) -> tuple[float, float]:
    low, high = proportion_confint(k, n, method="wilson")
    return float(low), float(high)


def test_errors_json_recovers_the_planted_types(runs: dict[str, str]) -> None:
    code, rep = _json("errors", runs["a"])
    assert code == 0
    [task] = rep["tasks"]
    assert (task["n_scored"], task["n_failed"], task["n_errored"], task["rule"]) == (
        60,
        40,
        0,
        "numeric",
    )
    types = {t["type"]: t for t in task["types"]}
    assert set(types) == {"no_answer", "wrong_plan"}
    for t in types.values():
        assert t["count"] == 20
        assert t["share"]["value"] == pytest.approx(0.5)
        assert (t["share"]["low"], t["share"]["high"]) == pytest.approx(_wilson(20, 40))
        assert (t["rate"]["low"], t["rate"]["high"]) == pytest.approx(_wilson(20, 60))
        assert len(t["examples"]) == 3
    assert "refused" in types["no_answer"]["examples"][0]["detail"]


def test_errored_samples_are_counted_apart(runs: dict[str, str]) -> None:
    _code, rep = _json("errors", runs["c"], "--examples", "0")
    [task] = rep["tasks"]
    assert task["n_errored"] > 0
    assert task["n_scored"] + task["n_errored"] == N
    assert sum(t["count"] for t in task["types"]) == task["n_failed"]
    assert all(t["examples"] == [] for t in task["types"])


def test_errors_text_worst_first(runs: dict[str, str]) -> None:
    code, out, _ = _invoke("errors", runs["b"], "--task", "calc")
    assert code == 0
    lines = [ln for ln in out.splitlines() if ln.startswith("│")]
    assert [ln.split("│")[1].strip() for ln in lines] == [
        "calculation_slip",
        "no_answer",
        "wrong_plan",
    ]  # 20 each: ties by name
    assert "step 1: 3 * 4 = 13, should be 12" in out


def test_errors_unknown_task_is_a_clear_error(runs: dict[str, str]) -> None:
    code, _out, err = _invoke("errors", runs["a"], "--task", "nope")
    assert code == 2 and "has no task 'nope'" in err


def test_compare_flags_the_type_that_grew_only(runs: dict[str, str]) -> None:
    _code, res = _json("compare", runs["a"], runs["b"])
    [changes] = res["error_types"]
    rows = {r["type"]: r for r in changes["rows"]}
    assert set(rows) == {"calculation_slip", "no_answer", "wrong_plan"}
    slip = rows["calculation_slip"]
    assert slip["change"] == "grew" and slip["significant"]
    assert slip["diff"]["value"] == pytest.approx(20 / 60)
    # McNemar exact: 20 discordant pairs, all one way: p = 2 * 0.5^20, Holm over 3 (two = 1)
    assert slip["p_value"] == pytest.approx(2 * 0.5**20)
    assert slip["p_adjusted"] == pytest.approx(3 * 2 * 0.5**20)
    for unchanged in ("no_answer", "wrong_plan"):
        assert rows[unchanged]["change"] == "no change shown"
        assert rows[unchanged]["diff"]["value"] == 0


def test_compare_text_shows_the_section(runs: dict[str, str]) -> None:
    _code, out, _ = _invoke("compare", runs["a"], runs["b"])
    assert "Error types" in out and "grew" in out


def test_gate_on_an_error_type(runs: dict[str, str]) -> None:
    code, res = _json(
        "gate",
        "--baseline",
        runs["a"],
        "--candidate",
        runs["b"],
        "--max-error-growth",
        "calculation_slip=0.02",
        "--max-error-growth",
        "no_answer=0.2",
    )
    rows = {r["metric"]: r for r in res["rows"]}
    assert res["comparisons"] == 3 and code == 1
    slip, refusals = rows["error:calculation_slip"], rows["error:no_answer"]
    assert slip["verdict"] == "fail" and "calculation_slip grew" in slip["explanation"]
    assert slip["diff"]["value"] == pytest.approx(20 / 60)
    assert slip["baseline"]["value"] == 0 and slip["candidate"]["value"] == pytest.approx(1 / 3)
    assert slip["diff"]["low"] > 0.02
    assert refusals["verdict"] == "pass" and refusals["diff"]["high"] < 0.2


def test_gate_unknown_error_type_is_an_error(runs: dict[str, str]) -> None:
    code, _out, err = _invoke(
        "gate", "--baseline", runs["a"], "--candidate", runs["b"], "--max-error-growth", "slip=0.02"
    )
    assert code == 3 and "No task of this gate can have the error type 'slip'" in err


def test_run_report_shows_the_types_worst_first(runs: dict[str, str]) -> None:
    from calipers.reports import render_html, render_markdown
    from calipers.store import Store

    with Store.open(STORE[0]) as store:
        rec = store.get_run(runs["b"])
        samples = store.get_samples(rec.id)
    md = render_markdown(rec, samples)
    section = md.split("### Error types (worst first)")[1].split("### Failing items")[0]
    rows = [ln.split("|")[1].strip() for ln in section.splitlines() if ln.startswith("| ")]
    assert rows == ["error type", "calculation_slip", "no_answer", "wrong_plan"]
    assert "Error types (worst first)" in render_html(rec, samples)


def test_position_bias_on_a_planted_multiple_choice_run(
    runs: dict[str, str], tmp_path: Path
) -> None:
    """80 four-option items, answers spread evenly; the model answers A on 7 items in 10
    whatever the question, right on the rest but one in ten (the next letter)."""
    rows, script, expected = [], {}, {}
    for i in range(80):
        target = i % 4
        pick = 0 if i % 10 < 7 else (target if i % 10 < 9 else (target + 1) % 4)
        tag = f"MC-{i:03d}"
        rows.append({"input": tag, "choices": list("wxyz"), "target": target})
        script[tag] = f"Answer: {'ABCD'[pick]}"
        if pick != target:
            expected[str(i)] = "position_bias" if pick == 0 else "distractor"
    (tmp_path / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "mc.yaml"
    spec.write_text(
        "name: mc\ndata: mc.jsonl\ntarget_type: index\n"
        "fields: {choices: choices}\nscorers: [choice_letter]\n"
    )
    (tmp_path / "mc.json").write_text(json.dumps(script))
    model = f"fake:script={tmp_path / 'mc.json'},name=mc"
    _code, res = _json("run", "-m", model, "-t", str(spec), "--no-report")
    _code, rep = _json("errors", res["run_id"], "--examples", "100")
    [task] = rep["tasks"]
    got = {ex["sample_id"]: t["type"] for t in task["types"] for ex in t["examples"]}
    assert task["rule"] == "choice" and got == expected
    assert task["types"][0]["type"] == "position_bias"  # the worst type first
