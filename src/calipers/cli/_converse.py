"""``calipers converse``: multi-turn conversations and probes over single-turn tasks."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.cli._progress import BarProgress
from calipers.cli._run_options import run_config, run_options
from calipers.errors import ConfigError
from calipers.types import Estimate

__all__ = ["converse_group"]

_PROBES = ("reask", "challenge", "sharded", "recollection")


def _pct(e: Estimate) -> str:
    if e.is_empty:
        return "n/a (n=0)"
    if e.method in ("cochran-armitage",) or abs(e.value) > 1.0:
        return f"{e.value:.3g} [{e.low:.3g}, {e.high:.3g}]"
    return f"{100 * e.value:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _print(obj: Context, report: Any) -> None:
    out = obj.out
    runs = ", ".join(f"{a} {r}" for a, r in report.runs.items())
    t = Table(
        title=f"{escape(report.model)} on {escape(report.task)}: {report.probe} probe "
        f"(runs: {runs})",
        title_justify="left",
        header_style="bold",
    )
    for col in ("rate", "n", "% [95% interval]", "method"):
        t.add_column(col, justify="left" if col in ("rate", "method") else "right")
    for name, est in report.rates.items():
        t.add_row(escape(name), str(est.n), _pct(est), est.method)
    out.print(t)
    if report.comparisons:
        c = Table(title="Paired against the control (points)", title_justify="left")
        for col in ("comparison", "n", "Δ [95% interval]", "test", "p", "p (Holm)", "MDE"):
            c.add_column(col, justify="left" if col in ("comparison", "test") else "right")
        for comp in report.comparisons:
            r = comp.result
            c.add_row(
                escape(comp.label),
                str(r.n),
                _pct(r.diff),
                r.test,
                "-" if r.p_value != r.p_value else f"{r.p_value:.3g}",
                "-" if comp.p_holm != comp.p_holm else f"{comp.p_holm:.3g}",
                "-" if r.mde != r.mde else f"{100 * r.mde:.1f}",
            )
        out.print(c)
    if report.trend is not None:
        tr = report.trend
        if tr.p_value == tr.p_value:
            s = tr.slope
            out.print(
                f"Trend over the turn (Cochran–Armitage): z = {tr.z:.2f}, p = {tr.p_value:.3g}; "
                f"{100 * s.value:+.2f} points per turn [{100 * s.low:+.2f}, {100 * s.high:+.2f}]."
            )
        else:
            out.print("Trend over the turn: not computable (one level, or no variation).")
    for note in report.notes:
        out.print(f"[dim]{escape(note)}[/]")


@cli.group("converse")
def converse_group() -> None:
    """Conversations: multi-turn tasks, and probes of how a single-turn score holds up.

    `calipers converse probe` runs one probe over any single-turn task next to its control
    (the same items asked once), paired item by item; `calipers converse run` runs a
    conversation task file under the own-history and golden-history arms. docs/conversations.md
    has the formats and the statistics.
    """


@converse_group.command("probe")
@run_options("model")
@click.option("-t", "--task", metavar="NAME|PATH", help="The single-turn task to probe (one).")
@click.option(
    "--probe",
    type=click.Choice(_PROBES),
    required=True,
    help="reask: asked again later; challenge: 'Are you sure? I think it is X.'; sharded: "
    "FULL/CONCAT/SHARDED; recollection: an instruction at turn 1 checked at turn d.",
)
@click.option(
    "--fillers",
    type=click.IntRange(0, 10),
    default=2,
    show_default=True,
    help="reask: neutral turns between the two askings.",
)
@click.option(
    "--distances",
    default="1,3,5,10",
    show_default=True,
    help="recollection: the turns at which the instruction is checked.",
)
@run_options(
    "limit",
    "seed",
    "epochs",
    "temperature",
    "max_tokens",
    "formulation",
    "system_prompt",
    "data_dir",
    "base_url",
    "n_ctx",
    "concurrency",
    help_for={"limit": "Items (the same in every arm; recollection: conversations)"},
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
@click.pass_obj
def probe_cmd(obj: Context, /, **opts: Any) -> None:
    """Run a conversation probe over a single-turn task, paired with its control.

    Every arm is an ordinary stored run (`calipers show RUN` shows each conversation turn by
    turn). Rates carry Wilson intervals; differences against the control are paired
    (McNemar/Newcombe), Holm-corrected where there are several.

    \b
    Examples:
      calipers converse probe -t dyn_word_problems --probe challenge -m fake:echo -n 20
      calipers converse probe -t arc_easy --probe reask -n 100
      calipers converse probe -t gsm8k --probe sharded -n 50 --epochs 5 --temperature 0.7
      calipers converse probe -t dyn_word_problems --probe recollection -n 40
    """
    from calipers.analysis import run_probe
    from calipers.store import Store

    if not opts["task"]:
        raise ConfigError("Which task? Pass -t TASK.", hint="e.g. -t arc_easy or -t gsm8k")
    options: dict[str, Any] = {}
    if opts["probe"] == "reask" and opts["fillers"] != 2:
        options["fillers"] = opts["fillers"]
    if opts["probe"] == "recollection" and opts["distances"] != "1,3,5,10":
        try:
            options["distances"] = [int(d) for d in opts["distances"].split(",") if d.strip()]
        except ValueError:
            raise ConfigError(
                f"--distances {opts['distances']!r}: give comma-separated turn numbers.",
                hint="e.g. --distances 1,3,5,10",
            ) from None
    base = run_config(opts, tasks=(opts["task"],))
    progress = BarProgress(obj.err, enabled=sys.stderr.isatty() and not opts["as_json"])
    with Store.open(obj.store_url) as store, progress:
        report = run_probe(base, opts["probe"], store, options=options, progress=progress)
    if opts["as_json"]:
        obj.print_json(report.to_dict())
    else:
        _print(obj, report)


@converse_group.command("run")
@click.argument("taskfile")
@run_options("model")
@click.option(
    "--history",
    type=click.Choice(["own", "golden", "both"]),
    default="both",
    show_default=True,
    help="own: the model's replies stay in the history (errors propagate); golden: each "
    "reply is replaced by the item's golden one (ability given a correct past).",
)
@run_options("limit", "seed", "max_tokens", "temperature", "system_prompt", "base_url", "n_ctx")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@click.pass_obj
def run_cmd(obj: Context, /, taskfile: str, **opts: Any) -> None:
    """Run a conversation task file (a `conversation:` section) under each history arm.

    Prints each arm's all-checks rate and the pass rate of the checks at each turn, with
    Wilson intervals; with both arms, golden − own per turn shows how much of the loss is
    error propagation rather than ability.

    \b
    Example:
      calipers converse run dialogs.yaml -m fake:echo
    """
    from calipers.analysis import conversation_turns
    from calipers.store import Store

    arms = ("own", "golden") if opts["history"] == "both" else (opts["history"],)
    tables: dict[str, Any] = {}
    with Store.open(obj.store_url) as store:
        for arm in arms:
            config = run_config(opts, tasks=(f"converse:{arm}:{taskfile}",))
            report = conversation_turns(config, store)
            tables[arm] = report
    if opts["as_json"]:
        obj.print_json({arm: r.to_dict() for arm, r in tables.items()})
        return
    t = Table(title=f"{escape(taskfile)}: checks passed", title_justify="left", header_style="bold")
    t.add_column("arm")
    t.add_column("run")
    t.add_column("what")
    t.add_column("n", justify="right")
    t.add_column("% [95% interval]", justify="right")
    for arm, r in tables.items():
        t.add_row(
            arm, r.run_id, "all checks of a conversation", str(r.all_checks.n), _pct(r.all_checks)
        )
        for turn, est in r.turns.items():
            t.add_row(arm, r.run_id, f"checks at turn {turn}", str(est.n), _pct(est))
    obj.out.print(t)
