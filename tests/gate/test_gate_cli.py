"""calipers gate end to end on scripted fake models: verdicts, exit codes, items needed and
baseline reuse, checked against independently computed intervals and sample sizes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store
from tests.gate._helpers import inputs, items_needed, newcombe, right_on, task_file


def gate(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["gate", *args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def gate_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = gate(*args, "--json")
    assert out.startswith("{"), err
    return code, json.loads(out)


def n_runs() -> int:
    with Store.open() as store:
        return len(store.list_runs())


def test_clearly_worse_candidate_fails_with_a_junit_failure(tmp_path: Path) -> None:
    spec = task_file(tmp_path, "qa", 60)
    base = right_on(tmp_path, "base", inputs("qa", range(60)))
    cand = right_on(tmp_path, "cand", inputs("qa", range(30)))
    code, out, _ = gate(
        "-s",
        str(spec),
        "--baseline",
        base,
        "--candidate",
        cand,
        "--junit",
        "out/gate.xml",
        "--markdown",
        "out/gate.md",
    )
    assert code == 1, out
    low, high = newcombe(30, 30, 0, 0)  # both right 30, only the baseline right 30
    assert high < -0.02
    assert f"{100 * low:+.1f}, {100 * high:+.1f}" in out and "regression" in out
    suite = ET.parse(tmp_path / "out/gate.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "1"
    [case] = suite.findall("testcase")
    failure = case.find("failure")
    assert case.get("name") == "qa/exact_match" and failure is not None
    assert "regression" in (failure.get("message") or "")
    md = (tmp_path / "out/gate.md").read_text()
    assert md.startswith("## calipers gate: FAIL") and "| qa | exact_match | 60 |" in md


def test_identical_candidate_on_enough_items_passes(tmp_path: Path) -> None:
    spec = task_file(tmp_path, "qa", 400)
    right = inputs("qa", range(300))
    base, cand = right_on(tmp_path, "base", right), right_on(tmp_path, "cand", right)
    code, res = gate_json(
        "-s", str(spec), "--baseline", base, "--candidate", cand, "--max-drop", "0.02"
    )
    low, high = newcombe(300, 0, 0, 100)
    assert -0.02 < low < 0 < high  # diff 0, interval narrower than the margin
    [row] = res["rows"]
    assert (row["diff"]["value"], row["diff"]["low"], row["diff"]["high"]) == pytest.approx(
        (0.0, low, high), abs=1e-12
    )
    assert code == 0 and res["verdict"] == "pass" and row["verdict"] == "pass"
    assert row["items_needed"] is None and res["exit_code"] == 0


@pytest.mark.parametrize(
    ("base_right", "cand_right", "margin"),
    [
        (range(40), range(38), 0.1),  # 2 items lost: the m(1 - m) floor decides
        (range(30), [*range(28), 30, 31], 0.05),  # 2 lost, 2 gained: the observed variance does
    ],
)
def test_small_suite_is_inconclusive_and_says_how_many_items(
    tmp_path: Path, base_right: range, cand_right: list[int], margin: float
) -> None:
    spec = task_file(tmp_path, "qa", 40)
    base = right_on(tmp_path, "base", inputs("qa", base_right))
    cand = right_on(tmp_path, "cand", inputs("qa", cand_right))
    code, out, _ = gate(
        "-s", str(spec), "--baseline", base, "--candidate", cand, "--max-drop", str(margin)
    )
    a = [1.0 if i in base_right else 0.0 for i in range(40)]
    b = [1.0 if i in cand_right else 0.0 for i in range(40)]
    need = items_needed([y - x for x, y in zip(a, b, strict=True)], margin)
    assert need > 40
    assert code == 2, out
    assert f"needs about {need:,} items; the suite has 40" in " ".join(out.split())


def test_baseline_run_is_reused_when_the_methodology_matches(tmp_path: Path) -> None:
    spec = task_file(tmp_path, "qa", 50)
    base = right_on(tmp_path, "base", inputs("qa", range(50)))
    cand = right_on(tmp_path, "cand", inputs("qa", range(50)))
    args = ["-s", str(spec), "--baseline", base, "--candidate", cand, "--max-drop", "0.2"]
    _, first = gate_json(*args)
    assert first["baseline"]["source"] == "ran" and n_runs() == 2
    _, second = gate_json(*args)
    assert second["baseline"] == {**first["baseline"], "source": "reused"}
    assert second["candidate"]["source"] == "ran" and n_runs() == 3
    _, third = gate_json(*args, "--system-prompt", "Answer yes or no.")  # other methodology
    assert third["baseline"]["source"] == "ran" and n_runs() == 5
    # both sides stored runs: nothing runs, the settings come from the runs
    code, fourth = gate_json(
        "--baseline",
        first["baseline"]["run_id"],
        "--candidate",
        second["candidate"]["run_id"],
        "--max-drop",
        "0.2",
    )
    assert code == 0 and n_runs() == 5
    assert [fourth[k]["source"] for k in ("baseline", "candidate")] == ["given", "given"]


def test_a_stored_baseline_run_gives_the_candidate_its_settings(tmp_path: Path) -> None:
    spec = task_file(tmp_path, "qa", 50)
    base = right_on(tmp_path, "base", inputs("qa", range(50)))
    cand = right_on(tmp_path, "cand", inputs("qa", range(50)))
    _, first = gate_json(
        "-s", str(spec), "-n", "20", "--baseline", base, "--candidate", cand, "--max-drop", "0.2"
    )
    code, res = gate_json(
        "--baseline", first["baseline"]["run_id"], "--candidate", cand, "--max-drop", "0.2"
    )
    assert res["rows"][0]["n"] == 20 and res["candidate"]["source"] == "ran", res
    assert res["baseline"]["source"] == "given" and code in (0, 2)


def test_errors_exit_3_and_still_write_the_outputs(tmp_path: Path) -> None:
    code, _, err = gate(
        "-s",
        "dyn_arithmatic",
        "--baseline",
        "fake:echo",
        "--candidate",
        "fake:echo",
        "--junit",
        "g.xml",
        "--markdown",
        "g.md",
    )
    assert code == 3 and "Unknown task 'dyn_arithmatic'" in err
    suite = ET.parse(tmp_path / "g.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("tests") == "1"
    assert (tmp_path / "g.md").read_text().startswith("## calipers gate: ERROR")
    code, _, err = gate("-s", "dyn_arithmetic", "--candidate", "fake:echo")  # usage error
    assert code == 3 and "--baseline" in err
    code, _, err = gate(
        "-s",
        "dyn_arithmetic",
        "--baseline",
        "fake:echo",
        "--candidate",
        "fake:echo",
        "--max-drop",
        "0",
    )
    assert code == 3
