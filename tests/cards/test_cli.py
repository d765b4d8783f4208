"""``calipers model``: list, show, check and factors through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


CARD = """\
name: local-model
provider: Me
spec: fake:m
as_of: 2026-11-30
pricing: {hardware_usd_per_hour: 3.6}
openness:
  weights: {level: open, evidence: my disk}
  documentation: {level: partial, evidence: this card}
"""


def test_list_json_has_every_builtin_with_its_classes() -> None:
    code, out, _ = invoke("model", "list", "--json")
    assert code == 0
    rows = {m["name"]: m for m in json.loads(out)["models"]}
    assert {k: v["openness_class"] for k, v in rows.items()} == {
        "smollm2-135m-instruct": "fully open",
        "olmo-2-7b": "fully open",
        "llama-3.1-8b-instruct": "inspectable",
        "mistral-7b-v0.1": "inspectable",
        "gpt-4o": "opaque",
    }
    assert rows["gpt-4o"]["pricing"]["input_usd_per_mtok"] == 2.5
    assert rows["smollm2-135m-instruct"]["pricing"]["input_usd_per_mtok"] is None
    assert rows["olmo-2-7b"]["mof_class"] is None
    assert rows["olmo-2-7b"]["mof_potential_class"] == "Class I"


def test_list_table_shows_missing_not_zero() -> None:
    code, out, _ = invoke("model", "list")
    assert code == 0 and "fully open" in out and "opaque" in out
    assert "missing" in out and "$0" not in out


def test_show_prints_evidence_and_mof_gaps() -> None:
    code, out, _ = invoke("model", "show", "smollm2")
    assert code == 0
    assert "Openness: fully open" in out and "arXiv:2502.02737" in out
    assert "Missing for Class III" in out and "Technical report (licence not established)" in out
    code, out, _ = invoke("model", "show", "llama-3.1-8b-instruct", "--json")
    d = json.loads(out)
    assert d["openness_class"] == "inspectable"
    assert d["openness_decided_by"] == ["weights", "training_methods", "training_data", "licence"]
    assert {
        "component": "model_parameters_final",
        "name": "Model parameters (final)",
        "class": "Class III",
        "reason": "licence not open",
    } in d["mof_missing_for_next"]


def test_unknown_name_suggests_close_names() -> None:
    code, _, err = invoke("model", "show", "gpt-5o")
    assert code == 2 and "Did you mean 'gpt-4o'" in err and "Traceback" not in err


def test_check_good_and_bad_cards(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(CARD)
    code, out, _ = invoke("model", "check", str(good))
    assert code == 0 and "ok" in out and "inspectable" in out
    code, out, _ = invoke("model", "check", str(good), "--json")
    assert json.loads(out)["card"]["openness_class"] == "inspectable"
    bad = tmp_path / "bad.yaml"
    bad.write_text(CARD.replace("level: partial", "level: some") + "price: 3\n")
    code, _, err = invoke("model", "check", str(bad))
    assert code == 2
    assert f"{bad}:8: field 'openness.documentation.level'" in err
    assert f"{bad}:9: field 'price'" in err
    code, out, _ = invoke("model", "check", str(bad), "--json")
    assert code == 2
    problems = json.loads(out)["problems"]
    assert [p["field"] for p in problems] == ["openness.documentation.level", "price"]


def test_user_cards_in_calipers_home_are_listed(calipers_home: Path) -> None:
    (calipers_home / "models").mkdir(parents=True)
    (calipers_home / "models" / "local.yaml").write_text(CARD)
    code, out, _ = invoke("model", "list", "--json")
    rows = {m["name"]: m for m in json.loads(out)["models"]}
    assert code == 0 and rows["local-model"]["source"].endswith("local.yaml")


def test_factors_and_show_with_runs(capitals_task: Path, tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        code, out, _ = invoke(
            "run", "-m", "fake:const=Paris,name=m", "-t", str(capitals_task), "--json", "--no-cache"
        )
        assert code == 0, out
        ids.append(json.loads(out)["run_id"])
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "local.yaml").write_text(CARD.replace("spec: fake:m", "spec: fake:const=Paris,name=m"))
    # the run's spec finds the card by itself; its hardware price gives the cost
    code, out, _ = invoke("model", "factors", *ids, "--cards", str(cards), "--json")
    assert code == 0, out
    d = json.loads(out)
    f = d["factors"][0]
    assert f["card"] == "local-model" and f["n_ok"] == 8 and f["n_timed"] == 8
    want = 3.6 * f["wall_s"] / 3600 / 8 * 1000
    assert abs(f["cost_per_1000_usd"]["value"] - want) < 1e-12
    assert f["latency_p50_s"]["method"] == "order-statistic"
    [stab] = d["stability"]
    assert stab["n_runs"] == 2 and stab["sd"] == 0.0 and stab["values"] == [0.125, 0.125]
    # no card, no price: missing, not zero
    code, out, _ = invoke("model", "factors", ids[0], "--json")
    f = json.loads(out)["factors"][0]
    assert f["cost_per_1000_usd"] is None and f["cost_basis"].startswith("missing")
    code, out, _ = invoke("model", "factors", ids[0])
    assert code == 0 and "missing" in out and "Stability" in out
    code, out, _ = invoke("model", "show", "gpt-4o", "--run", ids[0], "--json")
    f = json.loads(out)["factors"][0]
    assert f["card"] == "gpt-4o" and f["cost_per_1000_usd"]["value"] > 0
