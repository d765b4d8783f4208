"""calipers select: three-valued hard constraints, reuse of stored runs, weighted paired
differences, the Pareto front and the recommendation, against values worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cards import CardCatalog
from calipers.cli import cli
from calipers.errors import ConfigError
from calipers.selection import load_selection, select, to_html, to_markdown
from calipers.store import Store

OPEN = "\n".join(
    f"  {d}: {{level: open, evidence: test}}"
    for d in (
        "weights",
        "architecture",
        "training_methods",
        "training_data",
        "inference_code",
        "documentation",
        "licence",
    )
)


def card(
    tmp: Path,
    name: str,
    spec: str,
    price: float | None,
    licence: str = "Apache-2.0",
) -> None:
    pricing = (
        f"pricing: {{input_usd_per_mtok: {price}, output_usd_per_mtok: {price}}}\n"
        if price is not None
        else ""
    )
    (tmp / f"{name}.yaml").write_text(
        f"name: {name}\nprovider: tests\nspec: '{spec}'\nas_of: 2026-11-30\n"
        f"licence: {licence}\n{pricing}openness:\n{OPEN}\n",
        encoding="utf-8",
    )


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, CardCatalog]:
    cards = tmp_path / "cards"
    cards.mkdir()
    # fake models score log-likelihood tasks identically (the scores depend on the text only)
    card(cards, "pricey", "fake:echo,name=pricey", 100.0)
    card(cards, "cheap", "fake:echo,name=cheap", 1.0)
    card(cards, "closed", "fake:echo,name=closed", 0.5, licence="proprietary")
    card(cards, "unpriced", "fake:echo,name=unpriced", None)
    sel = tmp_path / "sel.yaml"
    sel.write_text(
        "name: dates\ncandidates:\n  - card: pricey\n  - card: cheap\n  - card: closed\n"
        "  - card: unpriced\nrequire:\n  openness: inspectable\n  licences: [Apache-2.0]\n"
        "tasks: {dyn_dates_mc: 1}\nlimits: {cost_per_1000_usd: 1.0}\nrun: {limit: 20}\n",
        encoding="utf-8",
    )
    return sel, CardCatalog.load([cards], user=False)


def test_constraints_ties_and_the_recommendation(
    setup: tuple[Path, CardCatalog], tmp_path: Path
) -> None:
    sel_path, catalog = setup
    sel = load_selection(sel_path)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = select(sel, store, catalog=catalog)
        n_runs = len(store.list_runs())
        again = select(sel, store, catalog=catalog)  # measured the same way: reused
        assert len(store.list_runs()) == n_runs == 3  # 'closed' fails its licence: not run
    by = {m.label: m for m in result.models}
    assert [m.label for m in again.models] == list(by)
    assert by["closed"].run_id is None and not by["closed"].eligible
    assert [(c.name, c.status) for c in by["closed"].checks] == [
        ("openness", "pass"),
        ("licence", "fail"),
    ]
    # cost per 1,000 items = 1,000 x mean input tokens x price / 1e6 (no output tokens
    # for log-likelihood scoring); pricey costs 100x cheap's, and only cheap is under $1
    cheap, pricey = by["cheap"].cost_per_1000_usd, by["pricey"].cost_per_1000_usd
    assert cheap is not None and pricey is not None
    assert pricey["value"] == pytest.approx(100 * cheap["value"])
    assert cheap["value"] < 1.0
    assert by["cheap"].eligible and not by["pricey"].eligible
    unpriced = {c.name: c for c in by["unpriced"].checks}["cost per 1,000 items"]
    assert unpriced.status == "unknown" and "missing" in unpriced.detail
    # identical scores: a tie, said in words; only 'cheap' is eligible, so it is recommended
    assert by["cheap"].weighted == by["pricey"].weighted
    assert result.recommendation.startswith("cheap scores highest")
    # same scores; 'cheap' costs less beyond noise, so it dominates 'pricey'; 'unpriced' has no
    # cost to compare and its latency interval overlaps: it stays on the front
    assert {m.label for m in result.models if m.pareto} == {"cheap", "unpriced"}


def test_reports_render_missing_as_missing(setup: tuple[Path, CardCatalog], tmp_path: Path) -> None:
    sel_path, catalog = setup
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = select(load_selection(sel_path), store, catalog=catalog)
    md = to_markdown(result)
    assert "| closed | proprietary | fully open |" in md
    assert "| unpriced |" in md and "missing" in md.split("| unpriced |")[1].splitlines()[0]
    page = to_html(result)
    assert (
        "<svg" in page
        and "<script" not in page
        and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )


def test_bad_selection_files_say_what_and_where(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("candidates: []\ntasks: {dyn_dates_mc: 1}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="field 'candidates'"):
        load_selection(bad)
    bad.write_text("candidates: [{card: x}]\ntasks: {dyn_dates_mc: 0}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="weights must be positive"):
        load_selection(bad)
    bad.write_text(
        "candidates: [{card: nosuchmodel}]\ntasks: {dyn_dates_mc: 1}\n", encoding="utf-8"
    )
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store, pytest.raises(ConfigError):
        select(load_selection(bad), store)


def test_cli_writes_both_reports_and_json(setup: tuple[Path, CardCatalog], tmp_path: Path) -> None:
    sel_path, _ = setup
    res = CliRunner().invoke(
        cli,
        [
            "--store",
            f"sqlite:///{tmp_path / 'c.db'}",
            "select",
            str(sel_path),
            "--cards",
            str(tmp_path / "cards"),
            "--out",
            str(tmp_path / "out"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output[res.output.index("{") :])
    assert Path(data["report"]["html"]).exists() and Path(data["report"]["markdown"]).exists()
    assert [m["label"] for m in data["models"] if m["eligible"]] == ["cheap"]
