"""``calipers run --config FILE`` / ``--save-config FILE``: one command repeats a run."""

from __future__ import annotations

import json
from pathlib import Path

from calipers.store import Store
from tests.trend.conftest import Planter, invoke


def _config(store: str, run_id: str) -> dict[str, object]:
    with Store.open(store) as s:
        return s.get_run(run_id).config


def test_a_saved_configuration_repeats_the_run(planter: Planter, tmp_path: Path) -> None:
    saved = tmp_path / "saved.yaml"
    first = invoke(
        "--store", planter.store, "run", "-m", "fake:const=a1,name=bot", "-t",
        str(planter.root / "items.yaml"), "-n", "7", "--seed", "3", "--no-cache",
        "--temperature", "0", "--no-report", "--save-config", str(saved), "--json",
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    text = saved.read_text()
    assert "limit: 7" in text and "seed: 3" in text and "cache: false" in text
    assert "json" not in text and "save-config" not in text
    again = invoke("--store", planter.store, "run", "--config", str(saved), "--json")
    assert again.exit_code == 0, again.output
    a, b = json.loads(first.stdout)["run_id"], json.loads(again.stdout)["run_id"]
    assert _config(planter.store, a) == _config(planter.store, b)


def test_the_command_line_overrides_the_file(planter: Planter) -> None:
    planter.config.write_text(planter.config.read_text() + "limit: 9\nseed: 5\n")
    (planter.root / "bot.json").write_text(json.dumps({"*": "no"}))
    res = invoke(
        "--store", planter.store, "run", "--config", str(planter.config), "-n", "4", "--json"
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["tasks"]["items"]["n_samples"] == 4
    assert _config(planter.store, data["run_id"])["seed"] == 5


def test_unknown_keys_and_bad_values_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: fake:echo\n\nlimt: 3\n")
    res = invoke("run", "--config", str(bad))
    assert res.exit_code == 2
    assert f"{bad}:3: unknown option 'limt'" in res.stderr and "'limit'" in res.stderr
    bad.write_text("model: fake:echo\ntemperature: -1\n")
    res = invoke("run", "--config", str(bad))
    assert res.exit_code == 2 and f"{bad}:2: option 'temperature'" in res.stderr
    bad.write_text('{"model": "fake:echo", "json": true}')  # JSON works too; json is not a setting
    res = invoke("run", "--config", str(bad))
    assert res.exit_code == 2 and "unknown option 'json'" in res.stderr
    bad.write_text("- a list\n")
    res = invoke("run", "--config", str(bad))
    assert res.exit_code == 2 and "mapping of option: value" in res.stderr
    res = invoke("run", "--config", str(tmp_path / "missing.yaml"))
    assert res.exit_code == 2 and "Cannot read the run configuration" in res.stderr
    bad.write_text("model: fake:echo\n")
    res = invoke("run", "--resume", "x", "--config", str(bad))
    assert res.exit_code == 2 and "--resume" in res.stderr
