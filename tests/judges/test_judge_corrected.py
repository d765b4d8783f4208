"""Judge-corrected scores (PPI) of a judge-scored run: checked against the formulas computed
by hand here, and `calipers show` / `calipers compare --judge-corrected`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calipers.analysis import judge_corrected, judge_corrected_comparison
from calipers.cli import cli
from calipers.store import Store

from .conftest import run_task, write_task

Z = 1.959963984540054
N_ITEMS = 90
N_LABELLED = 40
ROWS = [{"id": f"s{i:02d}", "question": f"Word number {i}?", "answer": f"w{i}"} for i in range(90)]
# the judge ("grader") passes an answer holding the reference: the model is right on odd
# items among the first 40 and on three in four of the rest
RIGHT = {i for i in range(N_ITEMS) if (i % 2 if i < N_LABELLED else i % 4)}
# people disagree with the judge on four labelled items
FLIPS = {0, 1, 3, 6}


def _answers(shift: int = 0) -> object:
    def answer(question: str) -> str:
        i = int(question.split()[-1].rstrip("?"))
        ok = i in RIGHT if shift == 0 else (i + shift) % 3 != 0
        return f"w{i}" if ok else "no idea"

    return answer


def _run(tmp: Path, shift: int = 0) -> str:
    spec = {
        "name": "llm_judge",
        "args": {"judge": "judgetest:grader", "rubric": "Right?", "mode": "pass_fail"},
    }
    task = write_task(tmp, "words", ROWS, [spec])
    run_id, _recs, _summary = run_task(task, _answers(shift), use_cache=False)  # type: ignore[arg-type]
    return run_id


def _judge(i: int, shift: int = 0) -> float:
    return float(i in RIGHT if shift == 0 else (i + shift) % 3 != 0)


def _human(i: int, shift: int = 0) -> float:
    j = _judge(i, shift)
    return 1.0 - j if i in FLIPS else j


def _labels(tmp: Path, shift: int = 0, name: str = "human.jsonl") -> Path:
    path = tmp / name
    rows = [
        {"sample_id": f"s{i:02d}", "label": "pass" if _human(i, shift) else "fail"}
        for i in range(N_LABELLED)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _hand(shift: int = 0, lam: float | None = None) -> tuple[float, float, float]:
    """(estimate, se, lambda) by the formulas of docs/judge-corrected.md."""
    y = np.array([_human(i, shift) for i in range(N_LABELLED)])
    f = np.array([_judge(i, shift) for i in range(N_LABELLED)])
    fu = np.array([_judge(i, shift) for i in range(N_LABELLED, N_ITEMS)])
    n, big_n = y.size, fu.size
    if lam is None:
        cov = float(np.sum((y - y.mean()) * (f - f.mean())) / (n - 1))
        var = float(np.var(np.concatenate([f, fu]), ddof=1))
        lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * var)))
    theta = float(lam * fu.mean() + (y - lam * f).mean())
    se = math.sqrt(np.var(lam * fu, ddof=1) / big_n + np.var(y - lam * f, ddof=1) / n)
    return theta, se, lam


def _wilson_width(k: int, n: int) -> float:
    p = k / n
    return 2 * Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)


def test_classic_ppi_is_the_hand_computation(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    with Store.open() as store:
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    rep = judge_corrected(run, recs, _labels(tmp_path), lam=1.0)
    # classic PPI: mean(yhat_unlabelled) + mean(y - yhat)
    fu = [_judge(i) for i in range(N_LABELLED, N_ITEMS)]
    rect = [_human(i) - _judge(i) for i in range(N_LABELLED)]
    theta = sum(fu) / len(fu) + sum(rect) / len(rect)
    se = math.sqrt(np.var(fu, ddof=1) / len(fu) + np.var(rect, ddof=1) / len(rect))
    assert (rep.n, rep.n_unlabelled) == (N_LABELLED, N_ITEMS - N_LABELLED)
    assert rep.corrected.value == pytest.approx(theta)
    assert rep.corrected.low == pytest.approx(max(0.0, theta - Z * se))
    assert rep.corrected.high == pytest.approx(min(1.0, theta + Z * se))
    assert rep.corrected.method == "ppi" and rep.lam == 1.0
    # judge only: every judged item; human only: the labels alone
    assert rep.judge_only.value == pytest.approx(len(RIGHT) / N_ITEMS)
    humans = [_human(i) for i in range(N_LABELLED)]
    assert rep.human_only.value == pytest.approx(sum(humans) / N_LABELLED)
    width = rep.corrected.high - rep.corrected.low
    assert rep.width_ratio == pytest.approx(width / _wilson_width(int(sum(humans)), N_LABELLED))


def test_ppi_plus_plus_lambda_is_the_hand_one(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    with Store.open() as store:
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    rep = judge_corrected(run, recs, _labels(tmp_path))
    theta, se, lam = _hand()
    assert 0 < lam < 1 and rep.lam == pytest.approx(lam)
    assert rep.corrected.value == pytest.approx(theta) and rep.se == pytest.approx(se)
    assert rep.corrected.method == "ppi++"


def test_two_runs_labelled_on_the_same_items_are_paired(tmp_path: Path) -> None:
    a, b = _run(tmp_path), _run(tmp_path, shift=1)
    with Store.open() as store:
        ra, sa = store.get_run(a), store.get_samples(a)
        rb, sb = store.get_run(b), store.get_samples(b)
    la, lb = _labels(tmp_path), _labels(tmp_path, 1, "b.jsonl")
    cmp = judge_corrected_comparison((ra, sa, la, None), (rb, sb, lb, None))
    assert cmp.pairing == "paired" and (cmp.n, cmp.n_unlabelled) == (40, 50)
    # PPI++ on the per-item differences B - A, by hand
    y = np.array([_human(i, 1) - _human(i) for i in range(N_LABELLED)])
    f = np.array([_judge(i, 1) - _judge(i) for i in range(N_LABELLED)])
    fu = np.array([_judge(i, 1) - _judge(i) for i in range(N_LABELLED, N_ITEMS)])
    var = float(np.var(np.concatenate([f, fu]), ddof=1))
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    lam = min(1.0, max(0.0, cov / ((1 + 40 / 50) * var)))
    theta = float(y.mean() + lam * (fu.mean() - f.mean()))
    se = math.sqrt(np.var(lam * fu, ddof=1) / 50 + np.var(y - lam * f, ddof=1) / 40)
    assert cmp.corrected.value == pytest.approx(theta)
    assert cmp.corrected.high - cmp.corrected.low == pytest.approx(2 * Z * se)
    # labelled on different items: independent arms, se^2 = se_a^2 + se_b^2
    half = tmp_path / "half.jsonl"
    half.write_text("".join(lb.read_text().splitlines(keepends=True)[:35]))
    ind = judge_corrected_comparison((ra, sa, la, None), (rb, sb, half, None))
    assert ind.pairing == "independent"
    assert ind.corrected.value == pytest.approx(ind.b.corrected.value - ind.a.corrected.value)
    assert ind.corrected.high - ind.corrected.low == pytest.approx(
        2 * Z * math.hypot(ind.a.se, ind.b.se)
    )


def test_show_and_compare_print_the_three_estimates(tmp_path: Path) -> None:
    a, b = _run(tmp_path), _run(tmp_path, shift=1)
    labels = _labels(tmp_path)
    res = CliRunner().invoke(cli, ["show", a, "--judge-corrected", str(labels)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    for row in ("judge only", "human only", "judge-corrected (PPI++)"):
        assert row in text
    theta, _se, _lam = _hand()
    assert f"{theta:.3f}" in text
    assert "n = 40 human labels, N = 50 judge-only items" in text and "width ratio" in text
    res = CliRunner().invoke(cli, ["show", a, "--judge-corrected", str(labels), "--json"])
    got = json.loads(res.stdout)["judge_corrected"]
    assert got["corrected"]["value"] == pytest.approx(theta) and got["n"] == 40
    lb = _labels(tmp_path, 1, "b.jsonl")
    args = ["compare", a, b, "--judge-corrected", str(labels), "--judge-corrected", str(lb)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "(paired)" in res.output and "judge-corrected (PPI++)" in res.output
    res = CliRunner().invoke(cli, [*args, "--json"])
    assert json.loads(res.stdout)["judge_corrected"]["pairing"] == "paired"
    bad = CliRunner().invoke(cli, ["show", a, "--judge-corrected", "nope.jsonl"])
    assert bad.exit_code == 2 and "no such labels file" in bad.output
