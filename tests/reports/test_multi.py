"""calipers report over several runs: runs of the fake model through the real runner, and
hand-built records for the cases the fake model cannot produce (non-binary scores, no data).
Facts are checked against values computed here from the stored samples."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import calipers.cli._report  # noqa: F401 - registers `calipers report` before the lead wires it
from calipers.analysis import ComparisonSet, StoredRun, compare, load_runs
from calipers.cli import cli
from calipers.models import FakeModel
from calipers.reports import write_multi_report
from calipers.reports._axis import FAR, count_axis, diff_axis, score_axis
from calipers.reports._svg import L, R
from calipers.runner import RunConfig, arun
from calipers.store import Store
from calipers.types import Estimate, ModelRequest, RunSummary, TaskSummary
from tests.reports.test_reports import SCRIPT, parse
from tests.reports.test_reports import make_run as hand_run
from tests.reports.test_reports import make_samples as hand_samples

N = 30
CATS = ("alpha", "beta", "gamma")


def _task_file(tmp: Path, name: str, target: str) -> Path:
    rows = [
        {"id": f"{name}{i}", "input": f"item {i}", "target": target, "cat": CATS[i % 3]}
        for i in range(N)
    ]
    (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp / f"{name}.yaml"
    spec.write_text(
        f"name: {name}\ndata: {name}.jsonl\n"
        "fields: {id: id, input: input, target: target, category: cat}\n"
        "scorers: [exact_match]\n"
    )
    return spec


@pytest.fixture
def specs(tmp_path: Path) -> tuple[Path, Path]:
    """Two tasks of N items in three categories; every target is "yes"."""
    return _task_file(tmp_path, "answers", "yes"), _task_file(tmp_path, "checks", "yes")


def model(right: range, name: str, errors: tuple[int, ...] = ()) -> FakeModel:
    """Answers "yes" (right) on ``right`` items, "no" elsewhere, and fails on ``errors``."""

    def answer(req: ModelRequest) -> str:
        assert req.messages is not None
        i = int(req.messages[-1].content.split()[1])
        if i in errors:
            raise RuntimeError("server hiccup")
        return "yes" if i in right else "no"

    return FakeModel(answer, name=name)


def make_run(specs: tuple[Path, ...], m: FakeModel, **cfg: Any) -> str:
    config = RunConfig(model=f"fake:{m.identity().name}", tasks=tuple(map(str, specs)), **cfg)
    with Store.open() as store:
        return asyncio.run(arun(config, store, provider=m)).run_id


def stored(*ids: str) -> list[StoredRun]:
    with Store.open() as store:
        return load_runs(store, ids)


ERRS = (3, 29)


@pytest.fixture
def two(specs: tuple[Path, Path]) -> list[StoredRun]:
    """A: right on 0-14. B: right on 0-23, errors on items 3 and 29."""
    a = make_run(specs, model(range(0, 15), "model-a"))
    b = make_run(specs, model(range(0, 24), "model-b", errors=ERRS))
    return stored(a, b)


@pytest.fixture
def report(two: list[StoredRun], tmp_path: Path) -> tuple[str, str, ComparisonSet]:
    cs = compare(two)
    html_path, md_path = write_multi_report(two, tmp_path / "out", comparison=cs)
    return html_path.read_text("utf-8"), md_path.read_text("utf-8"), cs


def summary(r: StoredRun) -> RunSummary:
    assert r.record.summary is not None
    return r.record.summary


def section(html: str, task: str) -> str:
    i = html.index(f"<h2>{task} ")
    j = html.find("<section", i)
    return html[i : j if j >= 0 else len(html)]


def svgs(html: str, kind: str) -> list[str]:
    return re.findall(rf'<svg class="plot {kind}".*?</svg>', html, re.S)


def xs(svg: str, cls: str, attr: str) -> list[float]:
    return [float(v) for v in re.findall(rf'class="{cls}"[^>]*? {attr}="([-\d.]+)"', svg)]


def ticks(svg: str) -> dict[str, float]:
    return {t: float(x) for x, t in re.findall(r'class="tick" x="([-\d.]+)"[^>]*>([^<]+)<', svg)}


# -- files and self-containment -----------------------------------------------------------------


def test_file_names(two: list[StoredRun], tmp_path: Path) -> None:
    a = two[0].record.id
    both = write_multi_report(two, tmp_path)
    assert both == (tmp_path / f"report-{a}-vs-1.html", tmp_path / f"report-{a}-vs-1.md")
    one = write_multi_report(two[:1], tmp_path / "one")
    assert one == (tmp_path / "one" / f"report-{a}.html", tmp_path / "one" / f"report-{a}.md")
    assert all(p.stat().st_size > 0 for p in (*both, *one))


def test_html_is_self_contained_and_well_formed(report: tuple[str, str, ComparisonSet]) -> None:
    html = report[0]
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert "<script" not in html and "<img" not in html
    c = parse(html)
    assert c.problems == [] and c.stack == []


def test_text_is_escaped(tmp_path: Path) -> None:
    run = hand_run().model_copy(update={"model_name": SCRIPT})
    other = run.model_copy(update={"id": "20240501-130000-bbbbbb"})
    runs = [StoredRun(run, tuple(hand_samples())), StoredRun(other, tuple(hand_samples()))]
    html = write_multi_report(runs, tmp_path)[0].read_text("utf-8")
    assert SCRIPT not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert parse(html).problems == []


# -- forest plots -------------------------------------------------------------------------------


def test_forest_has_one_interval_per_run_per_task_on_a_full_axis(
    report: tuple[str, str, ComparisonSet], two: list[StoredRun]
) -> None:
    html = report[0]
    for task in ("answers", "checks"):
        [svg] = svgs(section(html, task), "forest")
        assert svg.count('<line class="ci"') == 2
        assert 'data-lo="0"' in svg and 'data-hi="1"' in svg
        t = ticks(svg)
        assert list(t) == ["0%", "25%", "50%", "75%", "100%"]
        assert (t["0%"], t["100%"]) == (L, R)
        for r, cx, x1, x2 in zip(
            two, xs(svg, "pt", "cx"), xs(svg, "ci", "x1"), xs(svg, "ci", "x2"), strict=True
        ):
            e = summary(r).tasks[task].metrics["exact_match"]
            for got, v in ((cx, e.value), (x1, e.low), (x2, e.high)):
                assert got == pytest.approx(L + v * (R - L), abs=0.06)
            assert e.format(percent=True) in svg and f"n={e.n}" in svg


def test_no_data_is_na_never_a_point(tmp_path: Path) -> None:
    nothing = TaskSummary(
        primary="acc",
        n_samples=0,
        n_scored=0,
        n_errors=0,
        n_cached=0,
        metrics={"acc": Estimate.empty()},
        categories={},
        latency_s=Estimate.empty(),
        input_tokens=0,
        output_tokens=0,
        errors=(),
        top_error=None,
        calls=None,
        n_tampering=0,
        tampering=(),
    )
    empty = RunSummary(tasks={"arith": nothing}, calls=None)
    a = hand_run()
    b = a.model_copy(update={"id": "20240501-130000-bbbbbb", "summary": empty})
    runs = [StoredRun(a, tuple(hand_samples())), StoredRun(b, ())]
    html = write_multi_report(runs, tmp_path)[0].read_text("utf-8")
    [svg] = svgs(section(html, "arith"), "forest")
    assert svg.count('<line class="ci"') == 1 and svg.count("<circle") == 1
    assert "n/a (n=0)" in svg and not re.search(r"(?<![\d.])0\.0%", svg)


def test_axis_choice() -> None:
    unit = score_axis([Estimate(0.9, 0.85, 0.95, 100, "wilson")])
    assert (unit.lo, unit.hi, unit.unit) == (0.0, 1.0, "percent")  # never zoomed to 85-95%
    near = score_axis([Estimate(3.0, 2.0, 5.0, 10, "t")])
    assert near.lo == 0 and near.hi >= 5 and near.unit == "raw"
    far = score_axis([Estimate(1250.0, 1200.0, 1300.0, 10, "t")])
    assert far.lo > 0 and far.lo <= 1200 and far.hi >= 1300 and "not 0" in far.note
    edge = score_axis([Estimate(350.0, 100 * FAR, 100 * FAR + 100, 10, "t")])
    assert edge.lo == 0  # zero exactly FAR spans away: still on the axis
    neg = score_axis([Estimate(-2.2, -2.3, -2.1, 10, "t")])
    assert neg.hi < 0 and "not 0" in neg.note
    d = diff_axis(
        [Estimate(0.03, -0.02, 0.08, 50, "x"), Estimate(-0.1, -0.17, -0.04, 50, "x")], points=True
    )
    assert d.lo == -d.hi and d.hi >= 0.17 and 0.0 in d.ticks
    assert d.label(0.1) == "+10" and d.label(-0.1) == "−10" and d.label(0.0) == "0"


# -- comparison ---------------------------------------------------------------------------------


def test_differences_plot_has_zero_line_and_symmetric_axis(
    report: tuple[str, str, ComparisonSet],
) -> None:
    html, _md, cs = report
    comparison = html[html.index('<section id="comparison">') : html.index('class="task"')]
    [svg] = svgs(comparison, "forest")
    m = re.search(r'data-lo="([-\d.e]+)" data-hi="([-\d.e]+)"', svg)
    assert m, svg
    lo, hi = (float(v) for v in m.groups())
    assert lo == -hi
    for r in cs.rows:
        d = r.diff
        assert hi >= max(abs(d.low), abs(d.high))
    [zero] = xs(svg, "zero", "x1")
    assert zero == pytest.approx((L + R) / 2)
    assert ticks(svg)["0"] == pytest.approx(zero)
    assert svg.count('<line class="ci"') == len(cs.rows) >= 2
    for r in cs.rows:
        assert r.verdict in html.replace("&#39;", "'")
    assert "mcnemar-exact" in comparison and "p adjusted" in comparison and "MDE" in comparison


def test_not_comparable_runs_get_no_comparison_unless_forced(
    specs: tuple[Path, Path], tmp_path: Path
) -> None:
    a = make_run(specs, model(range(0, 15), "model-a"))
    b = make_run(specs, model(range(0, 15), "model-b"), system_prompt="Say yes.")
    plain = CliRunner().invoke(cli, ["report", a, b, "--out", str(tmp_path / "p"), "--json"])
    assert plain.exit_code == 0, plain.output
    assert "No comparison in the report" in plain.stderr and "--force" in plain.stderr
    html = Path(json.loads(plain.stdout)["html"]).read_text("utf-8")
    assert 'id="comparison"' not in html and "differs" in html
    forced = CliRunner().invoke(cli, ["report", a, b, "--force", "--out", str(tmp_path / "f")])
    assert forced.exit_code == 0, forced.output
    html = next((tmp_path / "f").glob("*.html")).read_text("utf-8")
    assert 'id="comparison"' in html and "FORCED" in html and "system_prompt" in html


# -- averages hide failures ---------------------------------------------------------------------


def _wrong_everywhere(runs: list[StoredRun], task: str) -> list[str]:
    """Items scored 0 (no error) in every run, computed straight from the samples."""

    def wrong(r: StoredRun) -> set[str]:
        return {
            s.sample_id
            for s in r.samples
            if s.task == task
            and s.error is None
            and s.scores is not None
            and s.scores["exact_match"] == 0.0
        }

    both = set.intersection(*(wrong(r) for r in runs))
    return sorted(both, key=lambda i: int(i.removeprefix(task)))


def test_items_every_run_fails_are_exact_and_exclude_errors(
    report: tuple[str, str, ComparisonSet], two: list[StoredRun]
) -> None:
    html, md, _cs = report
    for task in ("answers", "checks"):
        expected = _wrong_everywhere(two, task)
        assert expected == [f"{task}{i}" for i in range(24, 29)]  # 29 errored in B: not counted
        part = section(html, task)
        table = part[part.index('<table class="allfail">') :]
        assert re.findall(r"<code>([a-z]+\d+)</code></td>", table) == expected
        assert f"{len(expected)} of {N - len(ERRS)} items scored by every run fail" in part
        assert "Not counted: 1 more item fail" in part
        md_part = md[md.index(f"## {task} ") :]
        md_part = md_part[md_part.index("### Items every run fails") :]
        md_part = md_part[: md_part.index("## ", 4)]
        assert re.findall(r"^\| #\d+ ([a-z]+\d+) \|", md_part, re.M) == expected


def test_errors_are_their_own_count_never_wrong(
    report: tuple[str, str, ComparisonSet], two: list[StoredRun]
) -> None:
    html, md, _cs = report
    b = two[1]
    part = section(html, "answers")
    [svg] = svgs(part, "stacked")
    mine = [s for s in b.samples if s.task == "answers"]
    scored = [s.scores["exact_match"] for s in mine if s.error is None and s.scores]
    wrong = scored.count(0.0)
    assert (wrong, scored.count(1.0), len(mine) - len(scored)) == (5, 23, 2)  # 3, 29 errored
    assert f"<title>error: 2 of {N}</title>" in svg
    assert f"<title>wrong: {wrong} of {N}</title>" in svg
    assert f"30 samples: 23 right, {wrong} wrong, 2 errors (not counted as wrong)" in part
    assert re.search(
        rf"^\| model-b \({b.record.id}\) \| 30 \| 23 \| {wrong} \| 2 \| 0 \|$", md, re.M
    )


def test_categories_worst_first_by_mean_over_runs(
    report: tuple[str, str, ComparisonSet], two: list[StoredRun]
) -> None:
    html = report[0]

    def mean(cat: str) -> float:
        vals = [
            summary(r).tasks["answers"].categories[cat].metrics["exact_match"].value for r in two
        ]
        return sum(vals) / len(vals)

    expected = sorted(CATS, key=lambda c: (mean(c), c))
    part = section(html, "answers")
    cats = part[part.index("By category") : part.index("Per-item scores")]
    assert re.findall(r"<tr><td>([a-z]+)</td>", cats) == expected


def test_histogram_for_non_binary_scores_keeps_errors_apart(tmp_path: Path) -> None:
    values = [0.05, 0.15, 0.15, 0.55, 0.95, 1.0, math.nan]
    samples = [
        s.model_copy(update={"scores": {"acc": v}, "error": None})
        for s, v in zip(hand_samples(), values, strict=False)
    ]
    errored = hand_samples()[4]
    assert errored.error is not None
    samples.append(errored.model_copy(update={"sample_id": "arith-9", "position": 9}))
    a = hand_run()
    b = a.model_copy(update={"id": "20240501-130000-bbbbbb"})
    runs = [StoredRun(a, tuple(samples)), StoredRun(b, tuple(samples))]
    html, md = (p.read_text("utf-8") for p in write_multi_report(runs, tmp_path))
    part = section(html, "arith")
    hists = svgs(part, "hist")
    assert len(hists) == 2
    counts = [int(c) for c in re.findall(r"\]: (\d+)</title>", hists[0])]
    assert counts == [1, 2, 0, 0, 0, 1, 0, 0, 0, 2]  # 1.0 falls in the last bin
    assert "<title>errors: 1</title>" in hists[0]
    assert "8 samples: 6 scored, 1 error (not counted as wrong), 1 unscorable (NaN)" in part
    assert "| errors |" in md and "Errored items are counted on their own" in md


# -- one run, Markdown, CLI ---------------------------------------------------------------------


def test_one_run_is_the_run_report_plus_the_distribution(
    two: list[StoredRun], tmp_path: Path
) -> None:
    html, md = (
        p.read_text("utf-8") for p in write_multi_report(two[1:], tmp_path, title="Nightly <check>")
    )
    assert "<h1>Nightly &lt;check&gt;</h1>" in html and "# Nightly &lt;check&gt;" in md
    for text in ("<h3>Failing items</h3>", "<h3>Errors</h3>", "<h3>Per-item scores"):
        assert html.count(text) == 2, text  # one per task
    assert 'id="methodology"' in html and 'id="comparison"' not in html
    assert (
        html.index("<h3>By category")
        < html.index("<h3>Per-item scores")
        < html.index("<h3>Failing items</h3>")
    )
    assert svgs(html, "stacked") and "30 samples: 23 right, 5 wrong, 2 errors" in html
    assert md.count("### Per-item scores (exact_match)") == 2 and "### Failing items" in md


def test_markdown_mirrors_the_facts(
    report: tuple[str, str, ComparisonSet], two: list[StoredRun]
) -> None:
    _html, md, cs = report
    for r in two:
        for task, s in summary(r).tasks.items():
            text = s.metrics["exact_match"].format(percent=True)
            assert re.search(
                rf"^\| {re.escape(r.record.model_name)} .*\| {re.escape(text)} "
                rf"· n=\d+ \|",
                md,
                re.M,
            ), (r.record.id, task)
    for row in cs.rows:
        assert row.verdict in md
        d = row.diff
        assert f"{100 * d.value:+.1f} [{100 * d.low:.1f}, {100 * d.high:.1f}] points" in md
    assert re.search(
        r"^\| model \| model-a \(provider fake\) \| model-b \(provider fake\) "
        r"\| \*\*differs\*\* \|$",
        md,
        re.M,
    )
    assert "## Comparison" in md and "http://" not in md and "https://" not in md


def test_cli_report_json(two: list[StoredRun], calipers_home: Path) -> None:
    a, b = (r.record.id for r in two)
    out = CliRunner().invoke(cli, ["report", a, b, "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    paths = json.loads(out.stdout)
    assert paths == {
        "html": str(calipers_home / "reports" / f"report-{a}-vs-1.html"),
        "markdown": str(calipers_home / "reports" / f"report-{a}-vs-1.md"),
    }
    html = Path(paths["html"]).read_text("utf-8")
    assert 'id="comparison"' in html and "model-b is better by" in html
    plain = CliRunner().invoke(cli, ["report", a, b, "--no-compare"], catch_exceptions=False)
    assert plain.exit_code == 0 and "Report: " in plain.stdout
    assert 'id="comparison"' not in Path(paths["html"]).read_text("utf-8")


def test_a_count_axis_starts_at_0_in_whole_numbers() -> None:
    def count(n: int) -> Estimate:
        return Estimate(float(n), float(n), float(n), n, "count")

    axis = count_axis([count(20_833), count(20_834)])  # one request apart: not a cliff
    assert (axis.lo, axis.hi, axis.ticks) == (
        0.0,
        25_000.0,
        (0, 5_000, 10_000, 15_000, 20_000, 25_000),
    )
    assert count_axis([count(3)]).ticks == (0.0, 1.0, 2.0, 3.0)  # whole numbers, never 0.5
    assert count_axis([]).ticks == (0.0, 1.0)
