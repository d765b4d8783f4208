"""A judge-based score with no calibration on record is marked "uncalibrated" in every view
(show, compare, leaderboard, the HTML report, the dashboard and their JSON); a calibration
saved for the same judge model, scorer and task (in any run) lifts the mark."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from fastapi.testclient import TestClient

from calipers.cli import cli
from calipers.reports import render_html
from calipers.store import Store
from calipers.web import create_app
from tests.web.conftest import LOOPBACK

from .conftest import run_task, write_task
from .test_calibration import HUMAN, ROWS, _answer, _labels


def _run(tmp: Path, judge: str = "judgetest:grader") -> str:
    args = {"judge": judge, "rubric": "Right?", "mode": "pass_fail"}
    task = write_task(tmp, "capq", ROWS, [{"name": "llm_judge", "args": args}])
    run_id, _recs, _summary = run_task(task, _answer, use_cache=False)
    return run_id


def _views(a: str, b: str, tmp: Path) -> dict[str, str]:
    """What each view prints about run a (and a against b)."""
    inv = CliRunner().invoke
    out = {
        "show": inv(cli, ["show", a]).output,
        "compare": inv(cli, ["compare", a, b]).output,
        "leaderboard": inv(cli, ["leaderboard", "--resamples", "100"]).output,
    }
    with Store.open() as store:
        run, recs, saved = store.get_run(a), store.get_samples(a), store.list_runs()
    out["report"] = render_html(run, recs, saved=saved)
    with TestClient(create_app(), base_url=LOOPBACK) as c:
        out["dashboard"] = c.get(f"/runs/{a}").text
        out["dashboard compare"] = c.get(f"/compare?run={a}&run={b}").text
        out["dashboard leaderboard"] = c.get("/leaderboard").text
        out["dashboard report"] = c.get(f"/runs/{a}/report").text
    done = CliRunner().invoke(cli, ["report", a, "--json", "--out", str(tmp / "rep")])
    paths = json.loads(done.stdout)
    out["report html"] = Path(paths["html"]).read_text(encoding="utf-8")
    out["report md"] = Path(paths["markdown"]).read_text(encoding="utf-8")
    return {k: " ".join(v.split()) for k, v in out.items()}


def _json(a: str, b: str) -> dict[str, object]:
    inv = CliRunner().invoke
    show = json.loads(inv(cli, ["show", a, "--json"]).stdout)
    cmp = json.loads(inv(cli, ["compare", a, b, "--json"]).stdout)
    board = json.loads(inv(cli, ["leaderboard", "--resamples", "100", "--json"]).stdout)
    with TestClient(create_app(), base_url=LOOPBACK) as c:
        api = c.get(f"/api/runs/{a}").json()
        api_cmp = c.get(f"/api/compare?run={a}&run={b}").json()
        api_board = c.get("/api/leaderboard").json()
    return {
        "show": show["judge_calibration"]["capq"]["calibrated"],
        "compare": cmp["rows"][0]["calibrated"],
        "leaderboard": board[0]["entries"][0]["calibrated"],
        "dashboard": api["judge_calibration"]["capq"]["calibrated"],
        "dashboard compare": api_cmp["rows"][0]["calibrated"],
        "dashboard leaderboard": api_board[0]["entries"][0]["calibrated"],
    }


def test_marked_in_every_view_until_a_calibration_is_saved(tmp_path: Path) -> None:
    a, b = _run(tmp_path), _run(tmp_path)
    for view, text in _views(a, b, tmp_path).items():
        assert "uncalibrated" in text, view
    assert set(_json(a, b).values()) == {False}
    assert "(uncalibrated)" in _views(a, b, tmp_path)["compare"]
    assert "│ judge (uncalibrated) │" in _views(a, b, tmp_path)["show"]  # in the score table
    assert "uncalibrated judge" in _views(a, b, tmp_path)["leaderboard"]

    # calibrate run b: a calibration of the same judge, scorer and task counts for run a too
    res = CliRunner().invoke(cli, ["judge-calibrate", b, "--labels", str(_labels(tmp_path, HUMAN))])
    assert res.exit_code == 0, res.output
    for view, text in _views(a, b, tmp_path).items():
        assert "uncalibrated" not in text, view
    assert set(_json(a, b).values()) == {True}
    shown = _views(a, b, tmp_path)["show"]
    assert f"calibrated on run {b}" in shown and "Cohen's kappa 0.400" in shown
    show = json.loads(CliRunner().invoke(cli, ["show", a, "--json"]).stdout)
    assert show["judge_calibration"]["capq"]["calibration"]["run_id"] == b
    # a report given no other runs knows only run a's own record
    with Store.open() as store:
        assert "uncalibrated" in render_html(store.get_run(a), store.get_samples(a))


def test_another_judge_or_no_judge(tmp_path: Path) -> None:
    a = _run(tmp_path)
    other = _run(tmp_path, "judgetest:prose")
    res = CliRunner().invoke(cli, ["judge-calibrate", a, "--labels", str(_labels(tmp_path, HUMAN))])
    assert res.exit_code == 0, res.output
    shown = CliRunner().invoke(cli, ["show", other]).output
    assert "uncalibrated" in shown  # another judge model: a's calibration is not its own
    plain = write_task(tmp_path, "plain", ROWS, ["exact_match"])
    plain_id, _r, _s = run_task(plain, _answer)
    res = CliRunner().invoke(cli, ["show", plain_id])
    assert "uncalibrated" not in res.output
    got = json.loads(CliRunner().invoke(cli, ["show", plain_id, "--json"]).stdout)
    assert got["judge_calibration"] == {}
