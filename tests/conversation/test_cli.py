"""``calipers converse``: the probe's JSON report, a conversation file's arms, clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from calipers.cli import cli


def test_probe_json_pairs_the_control_with_the_probe() -> None:
    r = CliRunner().invoke(
        cli,
        [
            "converse",
            "probe",
            "-t",
            "dyn_word_problems",
            "--probe",
            "reask",
            "-m",
            "fake:echo",
            "-n",
            "6",
            "--fillers",
            "1",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert list(out["runs"]) == ["control", "reask"]
    assert out["rates"]["control correct"]["n"] == 6
    # fake:echo repeats the prompt: its last number is an item's number, never "#### N" right
    assert out["rates"]["first_correct"]["value"] == 0.0
    assert [c["label"] for c in out["comparisons"]] == [
        "reask: final − control",
        "reask: first − control",
    ]


def test_conversation_file_runs_both_arms(tmp_path: Path) -> None:
    row: dict[str, Any] = {"id": "a", "turns": ["Say 7.", "Say 7 again."], "golden": ["7", "7"]}
    row["checks"] = [{"turn": 2, "number": 7}]
    (tmp_path / "d.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text("name: d\ndata: d.jsonl\nconversation: {}\n")
    r = CliRunner().invoke(
        cli, ["converse", "run", str(tmp_path / "d.yaml"), "-m", "fake:echo", "--json"]
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # echo's reply to turn 2 is "Say 7 again." (its last number 7) in either arm
    assert out["own"]["turns"]["2"]["value"] == 1.0 and out["golden"]["turns"]["2"]["n"] == 1


def test_missing_task_and_bad_distances_are_clear_errors() -> None:
    r = CliRunner().invoke(cli, ["converse", "probe", "--probe", "challenge", "-m", "fake:echo"])
    assert r.exit_code == 2 and "Which task? Pass -t TASK." in r.output
    r = CliRunner().invoke(
        cli,
        [
            "converse",
            "probe",
            "-t",
            "dyn_word_problems",
            "--probe",
            "recollection",
            "-m",
            "fake:echo",
            "--distances",
            "1,30",
        ],
    )
    assert r.exit_code == 2 and "give distinct turns from 1 to 10" in r.output
