"""``calipers audit`` and ``calipers items`` on stored fake runs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli

from .conftest import make_run, mc_model, right_on, write_mc_task, write_yes_task

GOLD = {i: (i % 4 + 1) % 4 if i in (3, 7) else i % 4 for i in range(30)}


def truth(i: int) -> int:
    return i % 4


def test_audit_prints_the_flags_and_escapes_model_names(folder: Path) -> None:
    spec = write_mc_task(folder, GOLD)
    ids = [make_run(spec, mc_model(name, truth, {})) for name in ("m[red]1", "m2", "m3")]
    res = CliRunner().invoke(cli, ["audit", *ids, "--limit-items", "1"])
    assert res.exit_code == 0, res.output
    assert "Flagged: 2 of 30 items (6.7%)" in res.output
    assert "m[red]1" in res.output  # printed as text, not read as markup
    assert "Flagged items (first 1 of 2)" in res.output and "q3" in res.output
    assert "q7" not in res.output
    assert "Annotations: none in the task data" in res.output
    as_json = CliRunner().invoke(cli, ["audit", *ids, "--json", "--task", "mcq"])
    data = json.loads(as_json.output)
    assert [f["id"] for f in data["flagged"]] == ["q3", "q7"]
    assert data["runs"][0]["audited"]["value"] == 1.0 and data["runs"][0]["audited"]["n"] == 28


def test_audit_refuses_a_generation_task(folder: Path) -> None:
    spec = write_yes_task(folder, 5)
    ids = [make_run(spec, right_on(range(3), "a")), make_run(spec, right_on(range(2), "b"))]
    res = CliRunner().invoke(cli, ["audit", *ids])
    assert res.exit_code == 2
    assert "needs multiple-choice answers" in res.output


def test_items_reports_the_verdict(folder: Path) -> None:
    spec = write_yes_task(folder, 40)
    ids = [make_run(spec, right_on(range(8), "weak")), make_run(spec, right_on(range(32), "s"))]
    res = CliRunner().invoke(cli, ["items", *ids])
    assert res.exit_code == 0, res.output
    assert "separates the models: 2 tie groups" in res.output and "Flags: none" in res.output
    # 2 runs: an item is +1 (only the strong run right) or undefined (both alike)
    assert "Least discriminating items" in res.output and "+1.00" in res.output
    assert "-1.00" not in res.output and "only 2 runs" in res.output
    data = json.loads(CliRunner().invoke(cli, ["items", *ids, "--json"]).output)
    assert data["separates"] and data["flags"] == []
    assert data["items"]["all_right"]["value"] == 8 / 40
    assert data["items"]["all_wrong"]["value"] == 8 / 40
