"""``calipers trend MODEL TASK``: a model's score over time, its changes, and an alert."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import DECISION_EXIT_CODES, Context, cli, store_option
from calipers.errors import EXIT_FAIL

if TYPE_CHECKING:
    from calipers.analysis import TrendReport
    from calipers.types import Estimate

__all__ = ["trend_cmd"]

CHART_W = 30  # characters of the terminal chart


def _unit(report: TrendReport) -> bool:
    """Every estimate on the 0–1 scale: shown in percent, thresholds in points."""
    return report.unit_scale


def _fmt(est: Estimate, unit: bool) -> str:
    return est.format(percent=unit)


def _delta(v: float, unit: bool) -> str:
    return f"{100 * v:+.1f} pts" if unit else f"{v:+.4g}"


def _shift(est: Estimate, unit: bool) -> str:
    if unit:
        return f"{100 * est.value:+.1f} pts [{100 * est.low:+.1f}, {100 * est.high:+.1f}]"
    return f"{est.value:+.4g} [{est.low:+.4g}, {est.high:+.4g}]"


def _axis(report: TrendReport) -> tuple[float, float]:
    lo = min(p.estimate.low for p in report.points)
    hi = max(p.estimate.high for p in report.points)
    pad = 0.05 * (hi - lo) or 0.01
    if all(p.estimate.method == "wilson" for p in report.points):  # a rate: never below 0%
        return max(0.0, lo - pad), min(1.0, hi + pad)
    return lo - pad, hi + pad


def _bar(est: Estimate, lo: float, hi: float) -> str:
    """The interval as ``─`` and the value as ``●`` on a CHART_W-character axis."""

    def col(v: float) -> int:
        return min(CHART_W - 1, max(0, round((v - lo) / (hi - lo) * (CHART_W - 1))))

    cells = [" "] * CHART_W
    for i in range(col(est.low), col(est.high) + 1):
        cells[i] = "─"
    cells[col(est.value)] = "●"
    return "".join(cells).rstrip()


def _marks(report: TrendReport, unit: bool) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for m in report.methodology_changes:
        out.setdefault(m.index, []).append(
            f"[yellow]⚑ methodology: {escape(', '.join(c.split(':')[0] for c in m.changes))}[/]"
        )
    for mc in report.model_changes:
        out.setdefault(mc.index, []).append(
            f"[cyan]◆ model: {escape(', '.join(c.split(':')[0] for c in mc.changes))}[/]"
        )
    for c in report.changes:
        arrow = "[red]▼" if c.shift.value < 0 else "[green]▲"
        out.setdefault(c.index, []).append(
            f"{arrow} {_delta(c.shift.value, unit)}, p={c.p_value:.2g}[/]"
        )
    return out


def _table(report: TrendReport) -> Table:
    unit = _unit(report)
    lo, hi = _axis(report)
    ends = (f"{100 * lo:.0f}%", f"{100 * hi:.0f}%") if unit else (f"{lo:.3g}", f"{hi:.3g}")
    t = Table(
        title=f"{report.model} · {report.task} · {report.metric} over time "
        f"({report.points[0].estimate.confidence:.0%} intervals)",
        title_justify="left",
    )
    t.add_column("#", justify="right")
    t.add_column("run", no_wrap=True)
    t.add_column("date (UTC)", no_wrap=True)
    t.add_column(report.metric, no_wrap=True)
    t.add_column("n", justify="right")
    t.add_column(
        f"{ends[0]} {'·' * (CHART_W - len(ends[0]) - len(ends[1]) - 2)} {ends[1]}",
        min_width=CHART_W,
        no_wrap=True,
    )
    t.add_column("marks", min_width=24)
    marks = _marks(report, unit)
    for i, p in enumerate(report.points):
        if i in {m.index for m in report.methodology_changes}:
            t.add_section()
        t.add_row(
            str(i + 1),
            p.run_id,
            f"{p.created_at:%Y-%m-%d %H:%M}",
            _fmt(p.estimate, unit),
            str(p.estimate.n),
            _bar(p.estimate, lo, hi),
            "; ".join(marks.get(i, [])),
        )
    return t


def _details(obj: Context, report: TrendReport) -> None:
    unit = _unit(report)
    for m in report.methodology_changes:
        obj.out.print(
            f"[yellow]Methodology change[/] at run {m.index + 1} ({m.run_id}): a new series "
            "starts; runs before it are not tested against runs after it."
        )
        for line in m.changes:
            obj.out.print(f"  {escape(line)}")
    for mc in report.model_changes:
        obj.out.print(
            f"[cyan]Model identity change[/] at run {mc.index + 1} ({mc.run_id}), same name: "
            "tested across (a silent model change is what a trend watches)."
        )
        for line in mc.changes:
            obj.out.print(f"  {escape(line)}")
    for s in report.stretches:
        seg = s.segmentation
        span = f"runs {s.start + 1}–{s.end}"
        if seg is None:
            obj.out.print(f"{span}: one run, nothing to test.")
            continue
        if not seg.changes:
            obj.out.print(
                f"{span}: no change (scan test p={seg.tests[0].p_value:.2g}; mean "
                f"{_fmt(seg.segments[0].mean, unit)})."
            )
        for c in seg.changes:
            a, b = c.where
            after = f"run {a + 1}" if a == b else f"runs {a + 1}–{b + 1}"
            obj.out.print(
                f"{span}: change at run {c.index + 1} ({report.points[c.index].run_id}): "
                f"{_shift(c.shift, unit)}, p={c.p_value:.2g} at level {c.level:.3g}; "
                f"first run after it: {after} (95% of re-located splits)."
            )
    obj.out.print(
        f"[dim]Changepoints: maximum likelihood-ratio scan over split points, null simulated "
        f"from the runs' standard errors (binomial under no change for proportions), binary "
        f"segmentation; chance of any false change "
        f"≤ {report.alpha:g} within each methodology. Left out: {len(report.left_out)} run(s)."
        "[/]"
    )
    for run_id, why in report.left_out:
        obj.out.print(f"[dim]  {run_id}: {escape(why)}[/]")
    for note in report.notes:
        obj.out.print(f"Note: {escape(note)}.")


def _verdict(obj: Context, report: TrendReport) -> None:
    unit = _unit(report)
    r = report.regression
    if r is None:
        obj.out.print(
            f"[green]No regression[/] in the latest runs of {escape(report.model)} on "
            f"{escape(report.task)} ({report.metric})."
        )
        return
    obj.out.print(
        f"[bold red]ALERT: regression.[/] {escape(report.model)} on {escape(report.task)}: "
        f"{report.metric} changed by {_shift(r.change.shift, unit)} from run "
        f"{r.change.index + 1} ({r.run_id}) on (p={r.change.p_value:.2g}); now "
        f"{_fmt(r.after, unit)}, before {_fmt(r.before, unit)}."
    )


@cli.command("trend")
@click.argument("model")
@click.argument("task")
@click.option("--metric", metavar="NAME", help="Metric to follow [default: the task's primary].")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only runs from then on: a date (2026-01-31), a date-time (UTC) or an age (30d, 12h).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Chance of any false change within one methodology (family-wise).",
)
@click.option(
    "--min-drop",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    metavar="POINTS",
    help="Smallest drop that is a regression: percentage points for a 0–1 metric, the "
    "metric's own units otherwise.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulations.")
@click.option("--json", "as_json", is_flag=True, help="Print the series and changes as JSON.")
@store_option
@click.pass_context
def trend_cmd(ctx: click.Context, /, **opts: Any) -> None:
    """A model's score on a task over time: intervals, methodology changes, changepoints.

    MODEL is the model spec given to -m, or the model's name (calipers runs lists both); every
    finished run of it on TASK is a point, oldest first. A change of methodology (prompt
    template, task version or items, few-shot, decoding, scorers, ...) starts a new series:
    changes are looked for within each one, never across. A change of the model's identity
    under the same name (another file hash or API model) is marked and tested across.

    Changepoints: a likelihood-ratio scan over split points whose null distribution is
    simulated from the runs' own standard errors, repeated on each side (binary segmentation),
    so the chance of any false change is at most --alpha. A regression: the latest change
    goes down by at least --min-drop.

    \b
    Exit codes (for cron and CI): 0 no regression, 1 a regression (an ALERT line says
    where and how much), 3 an error (no runs, unknown metric), 4 a bug: as gate's,
    an error never reads as a verdict.

    \b
    Examples:
      calipers trend smollm2 dyn_arithmetic
      calipers trend openai:my-model gsm8k --since 90d --min-drop 3
      calipers run --config nightly.yaml && calipers trend my-model gsm8k   # cron
    """
    ctx.meta[DECISION_EXIT_CODES] = True
    from calipers.analysis import trend
    from calipers.store import Store

    obj: Context = ctx.obj
    since = None
    if opts["since"]:
        from calipers._util.clock import utc_now
        from calipers.monitor import parse_when

        since = parse_when(opts["since"], utc_now())
    with Store.open(obj.store_url) as store:
        report = trend(
            store,
            opts["model"],
            opts["task"],
            metric=opts["metric"],
            since=since,
            alpha=opts["alpha"],
            min_drop=opts["min_drop"],
            seed=opts["seed"],
        )
    if opts["as_json"]:
        obj.print_json(report.to_dict())
    else:
        obj.out.print(_table(report))
        _details(obj, report)
        _verdict(obj, report)
    if report.regression is not None:
        if opts["as_json"]:
            obj.err.print(f"ALERT: regression of {escape(report.model)} on {escape(report.task)}")
        sys.exit(EXIT_FAIL)
