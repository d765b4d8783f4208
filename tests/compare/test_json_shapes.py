"""``--json`` outputs keep their shape while the result models hold typed Estimates.

The golden files under tests/data/json_shapes were written by the code from before the
change (estimates held as ``Estimate.to_dict()`` dicts); the models now hold ``Estimate``
fields, and the JSON must be the same, key for key. Run ids and timestamps are masked.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from calipers.cli import cli
from tests.gate._helpers import inputs, right_on, task_file

GOLDEN = Path(__file__).parent.parent / "data" / "json_shapes"
_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")  # a run id
_VOLATILE = {"created_at", "started_at", "finished_at", "duration_s", "elapsed_s", "wall_s"}


def _mask(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: ("<t>" if k in _VOLATILE else _mask(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [_mask(v) for v in x]
    if isinstance(x, str):
        return _ID.sub("<id>", x)
    return x


def _check(name: str, out: str, tmp_path: Path) -> None:
    got = _mask(json.loads(out.replace(str(tmp_path), "<tmp>")))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("CALIPERS_WRITE_GOLDEN"):
        path.write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
    # the text, not only the value: the keys keep their order too
    assert json.dumps(got, indent=1) + "\n" == path.read_text(encoding="utf-8")


def _invoke(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code in (0, 1, 2), r.output
    return r.stdout


def test_gate_json_is_unchanged(tmp_path: Path) -> None:
    spec = task_file(tmp_path, "qa", 40)
    base = right_on(tmp_path, "base", inputs("qa", range(30)))
    cand = right_on(tmp_path, "cand", inputs("qa", [*range(27), 31, 33]))
    out = _invoke(
        "gate", "-s", str(spec), "--baseline", base, "--candidate", cand, "--max-drop", "0.1",
        "--json",
    )  # fmt: skip
    _check("gate", out, tmp_path)


def test_sensitivity_json_is_unchanged(tmp_path: Path, mc_task: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    spec = mc_task
    out = _invoke(
        "--store", store, "sensitivity", "-m", "fake:const=A", "-t", str(spec),
        "--axes", "rotations,instruction", "--no-chat-template", "--json",
    )  # fmt: skip
    _check("sensitivity", out, tmp_path)


def test_leaderboard_json_is_unchanged(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'l.db'}"
    spec = task_file(tmp_path, "qa", 30)
    for name, right in (("a", range(25)), ("b", range(18)), ("c", range(10))):
        model = right_on(tmp_path, name, inputs("qa", right))
        _invoke("--store", store, "run", "-m", model, "-t", str(spec), "--no-chat-template")
    _check("leaderboard", _invoke("--store", store, "leaderboard", "--json"), tmp_path)
