"""Judge calibration against human labels: kappa checked by hand, biases, storage, CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy.stats import norm

from calipers.analysis._judge_calibration import (
    JudgeCalibrationReport,
    calibrate_judge,
    judge_agreement_line,
)
from calipers.cli import cli
from calipers.errors import ConfigError, DataError
from calipers.store import Store

from .conftest import run_task, write_task

RIGHT = {"a": "Paris", "b": "Berlin", "c": "Rome", "d": "Tokyo", "e": "Cairo", "f": "Lima"}
WRONG = {"g": "Oslo", "h": "Bern", "i": "Kyiv", "j": "Doha"}
ROWS = [
    {"id": k, "question": f"Capital number {k}?", "answer": v}
    for k, v in {**RIGHT, **WRONG}.items()
]
# judge pass on a-f (the model is right), fail on g-j; people disagree on e, f (fail) and g
HUMAN = {
    "a": "pass",
    "b": "pass",
    "c": "pass",
    "d": "pass",
    "e": "fail",
    "f": "fail",
    "g": "pass",
    "h": "fail",
    "i": "fail",
    "j": "fail",
}


def _answer(question: str) -> str:
    key = question.split()[-1].rstrip("?")
    return RIGHT.get(key, "I do not know")


def _judged_run(tmp: Path, **args: object) -> tuple[str, Path]:
    spec = {"name": "llm_judge", "args": {"judge": "judgetest:grader", "rubric": "Right?", **args}}
    task = write_task(tmp, "capq", ROWS, [spec])
    run_id, _recs, _summary = run_task(task, _answer)
    return run_id, task


def _labels(tmp: Path, labels: Mapping[str, object], name: str = "human.jsonl") -> Path:
    path = tmp / name
    path.write_text(
        "".join(json.dumps({"sample_id": k, "label": v}) + "\n" for k, v in labels.items()),
        encoding="utf-8",
    )
    return path


def fleiss_cohen_everitt(p: list[list[float]], n: int) -> tuple[float, float]:
    """Unweighted kappa and its large-sample SE, Fleiss, Cohen & Everitt (1969), eq. (13)."""
    row = [sum(r) for r in p]
    col = [sum(p[i][j] for i in range(2)) for j in range(2)]
    po, pe = p[0][0] + p[1][1], row[0] * col[0] + row[1] * col[1]
    k = (po - pe) / (1 - pe)
    diag = sum(p[i][i] * (1 - (row[i] + col[i]) * (1 - k)) ** 2 for i in range(2))
    off = sum(p[i][j] * (col[i] + row[j]) ** 2 for i in range(2) for j in range(2) if i != j)
    var = (diag + (1 - k) ** 2 * off - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
    return k, math.sqrt(var)


def test_pass_fail_kappa_matches_the_hand_computation(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path, mode="pass_fail")
    with Store.open() as store:
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    rep = calibrate_judge(run, recs, _labels(tmp_path, HUMAN))
    # rows human (fail, pass), columns judge (fail, pass)
    assert rep.categories == [0.0, 1.0] and rep.confusion == [[3, 2], [1, 4]]
    k, se = fleiss_cohen_everitt([[0.3, 0.2], [0.1, 0.4]], 10)
    assert k == pytest.approx(0.4)  # po 0.7, pe 0.5*0.4 + 0.5*0.6 = 0.5
    assert rep.statistic == "cohens_kappa" and rep.agreement.value == pytest.approx(0.4)
    z = norm.ppf(0.975)
    assert rep.agreement.low == pytest.approx(0.4 - z * se)
    assert rep.agreement.high == pytest.approx(0.4 + z * se)
    assert rep.exact_agreement.value == pytest.approx(0.7)
    assert rep.judge_score is not None and rep.judge_score.value == pytest.approx(0.6)
    assert rep.n_matched == 10 and rep.position_bias is None
    assert "krippendorff_alpha_nominal" in rep.secondary
    assert any("only 10 labelled" in c for c in rep.caveats)


def test_scale_agreement_is_ordinal_alpha(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path)
    same = {k: (5 if k in RIGHT else 1) for k in HUMAN}
    flipped = {k: (1 if k in RIGHT else 5) for k in HUMAN}
    with Store.open() as store:
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    rep = calibrate_judge(run, recs, _labels(tmp_path, same))
    assert rep.statistic == "krippendorff_alpha_ordinal"
    assert rep.agreement.value == pytest.approx(1.0)
    assert rep.categories == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert rep.confusion[0][0] == 4 and rep.confusion[4][4] == 6
    assert rep.secondary["cohens_kappa_quadratic"].value == pytest.approx(1.0)
    assert calibrate_judge(run, recs, _labels(tmp_path, flipped)).agreement.value < 0
    with pytest.raises(DataError, match="from 1 to 5"):
        calibrate_judge(run, recs, _labels(tmp_path, {"a": 7}))


def test_length_bias_is_measured(tmp_path: Path) -> None:
    rows = [
        {"id": str(i), "question": f"q{i}", "answer": "ref", "baseline": "b" * 20}
        for i in range(12)
    ]
    task = write_task(
        tmp_path,
        "pairs",
        rows,
        [{"name": "llm_judge_pairwise", "args": {"judge": "judgetest:longer"}}],
        extra=["baseline"],
    )
    run_id, _r, _s = run_task(task, lambda q: "x" * (int(q[1:]) * 4))  # 0..44 characters
    with Store.open() as store:
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    labels = _labels(tmp_path, {str(i): "tie" for i in range(12)})
    rep = calibrate_judge(run, recs, labels)
    assert rep.mode == "pairwise" and rep.length_bias is not None
    assert rep.length_bias.estimate.value > 0.8  # longer wins, whatever its content
    assert rep.length_bias_vs_human is not None
    assert rep.length_bias_vs_human.estimate.value > 0.8  # people saw ties


def test_position_bias_of_a_first_position_judge(tmp_path: Path) -> None:
    rows = [
        {"id": str(i), "question": f"q{i}", "answer": "ref", "baseline": f"base {i}"}
        for i in range(8)
    ]
    task = write_task(
        tmp_path,
        "pairs",
        rows,
        [{"name": "llm_judge_pairwise", "args": {"judge": "judgetest:first"}}],
        extra=["baseline"],
    )
    run_id, recs, summary = run_task(task, lambda q: f"answer to {q}")
    assert summary.tasks["pairs"].metrics["win"].value == 0.5  # every pair a tie
    assert summary.tasks["pairs"].metrics["consistent"].value == 0.0
    with Store.open() as store:
        run = store.get_run(run_id)
    labels = _labels(tmp_path, {str(i): ("win" if i % 2 else "loss") for i in range(8)})
    rep = calibrate_judge(run, recs, labels)
    pb = rep.position_bias
    assert pb is not None and pb.n_pairs == 8
    assert pb.first_share.value == 1.0 and pb.consistency.value == 0.0
    assert pb.p_value == pytest.approx(2 / 2**8)  # two-sided exact binomial, 8 of 8
    assert rep.confusion == [[0, 4, 0], [0, 0, 0], [0, 4, 0]]  # judge: all ties


def test_cli_stores_the_agreement_for_reports(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path, mode="pass_fail")
    with Store.open() as store:
        line = judge_agreement_line(store.get_run(run_id), "capq")
    assert line is not None and "not measured" in line
    csv = tmp_path / "human.csv"
    csv.write_text("sample_id,label\n" + "".join(f"{k},{v}\n" for k, v in HUMAN.items()))
    res = CliRunner().invoke(cli, ["judge-calibrate", run_id[:10], "--labels", str(csv)])
    assert res.exit_code == 0, res.output
    assert "cohens_kappa" in res.output and "0.400" in res.output
    assert "Stored in run" in res.output
    with Store.open() as store:
        run = store.get_run(run_id)
    assert run.summary is not None
    assert run.summary.judge_calibration is not None
    stored = run.summary.judge_calibration["capq"]
    assert stored["agreement"]["value"] == pytest.approx(0.4) and stored["n_matched"] == 10
    # the stored dict (JSON) reads back as the typed report, and dumps to the same JSON
    back = JudgeCalibrationReport.model_validate(stored)
    assert back.agreement.value == pytest.approx(0.4) and back.model_dump(mode="json") == stored
    assert run.summary.tasks["capq"].metrics["judge"]
    line = judge_agreement_line(run, "capq")
    assert line is not None and "Cohen's kappa 0.400" in line and "n=10" in line
    # the reports and `calipers show` carry it next to the judge-based scores
    from calipers.reports._html import render_html
    from calipers.reports._markdown import render_markdown

    with Store.open() as store:
        recs = store.get_samples(run_id)
        shown = CliRunner().invoke(cli, ["show", run_id]).output
    assert f"Judge-based scores: {line}." in render_markdown(run, recs)
    assert "Cohen&#39;s kappa 0.400" in render_html(run, recs)
    assert "Cohen's kappa 0.400" in " ".join(shown.split())
    res = CliRunner().invoke(
        cli, ["judge-calibrate", run_id, "--labels", str(csv), "--json", "--no-save"]
    )
    assert res.exit_code == 0 and json.loads(res.stdout)["confusion"] == [[3, 2], [1, 4]]
    res = CliRunner().invoke(cli, ["judge-calibrate", run_id, "--labels", "missing.csv"])
    assert res.exit_code == 2 and "does not exist" in res.stderr


def test_unmatched_and_bad_labels(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path, mode="pass_fail")
    with Store.open() as store:
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    rep = calibrate_judge(run, recs, _labels(tmp_path, {"a": "pass", "zz": "fail"}))
    assert (rep.n_labels, rep.n_matched, rep.n_unmatched) == (2, 1, 1)
    assert math.isnan(rep.agreement.value)  # one item: undefined, not 0
    with pytest.raises(DataError, match="not one of"):
        calibrate_judge(run, recs, _labels(tmp_path, {"a": "maybe"}))
    other = write_task(tmp_path, "plain", ROWS, ["exact_match"])
    plain_id, plain_recs, _s = run_task(other, _answer)
    with Store.open() as store, pytest.raises(ConfigError, match="llm_judge"):
        calibrate_judge(store.get_run(plain_id), plain_recs, tmp_path / "human.jsonl")
