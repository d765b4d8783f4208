"""``calipers sensitivity``: how much a score moves when only the format changes."""

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

__all__ = ["sensitivity_cmd"]

_AXES_HELP = (
    "labels, separators, instruction, chat, system, fewshot, formulation, rotations, permutations"
)


def _pts(est: Estimate | None) -> str:
    if est is None:
        return "-"
    if est.is_empty:
        return "n/a (n=0)"
    return f"{100 * est.value:.1f} [{100 * est.low:.1f}, {100 * est.high:.1f}]"


def _table(report: Any) -> Table:
    t = Table(
        header_style="bold",
        title_justify="left",
        title=f"{escape(report.model)} on {report.task} ({report.metric}): score per "
        "formulation, and its paired difference from the reference (points)",
    )
    for col in ("formulation", "run", "n", "score [95%]", "Δ vs reference [95%]", "p"):
        t.add_column(col, justify="left" if col in ("formulation", "run") else "right")
    for r in report.rows:
        t.add_row(
            escape(r.label),
            r.run_id,
            str(r.n_paired),
            _pts(r.score),
            _pts(r.diff),
            "-" if r.p_value is None else f"{r.p_value:.3g}",
        )
    return t


def _print(obj: Context, report: Any, skipped: list[tuple[str, str]]) -> None:
    out = obj.out
    out.print(_table(report))
    for label, why in skipped:
        out.print(f"[dim]skipped {escape(label)}: {escape(why)}[/]")
    sp = report.spread
    if sp["n"]:
        sd = "n/a" if sp["sd"] is None else f"{100 * sp['sd']:.1f}"
        out.print(
            f"Spread over {sp['n']} formulations: min {100 * sp['min']:.1f}, max "
            f"{100 * sp['max']:.1f}, sd {sd} points."
        )
    if report.noise_floor is not None:
        out.print(
            f"[bold]Format noise floor: {100 * report.noise_floor:.1f} points[/] — a "
            "difference between two models smaller than this could come from the "
            "format alone; comparisons and leaderboards flag it."
        )
    if report.circular:
        out.print(f"CircularEval: {_pts(report.circular)} ({report.circular_note}).")
    else:
        out.print(f"[dim]CircularEval: not computed ({escape(report.circular_note)}).[/]")
    pb = report.position_bias
    if pb:
        cells = ", ".join(
            f"{chr(65 + i)} {100 * c.value:.0f}% (right {100 * r:.0f}%)"
            for i, (c, r) in enumerate(zip(pb.chosen, pb.correct, strict=True))
        )
        over = ", ".join(chr(65 + j) for j in pb.over_chosen)
        verdict = (
            f"; chosen more often than right, beyond the interval: {over}"
            if over
            else "; no position chosen more often than right beyond the interval"
        )
        out.print(
            f"Position bias over {pb.n} answers to {pb.n_items} items: chosen {cells}{verdict}."
        )
    for note in report.notes:
        out.print(f"[yellow]{escape(note)}[/]")


@cli.command("sensitivity")
@run_options("model")
@click.option("-t", "--task", metavar="NAME|PATH", help="The task to vary (one).")
@run_options(
    "formulation",
    "limit",
    "seed",
    help_for={
        "formulation": "Reference formulation (cloze | letter | generate)",
        "limit": "Items (the same in every run)",
    },
)
@click.option(
    "--axes",
    default=",".join(
        (
            "labels",
            "separators",
            "instruction",
            "chat",
            "system",
            "fewshot",
            "formulation",
            "rotations",
        )
    ),
    show_default=True,
    help=f"Comma-separated, from: {_AXES_HELP}.",
)
@click.option(
    "--permutations",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Random option orders, with the 'permutations' axis.",
)
@run_options(
    "chat_template",
    "few_shot",
    "data_dir",
    "base_url",
    help_for={
        "chat_template": "Reference: use the chat template or a plain prompt",
        "few_shot": "Reference few-shot k",
    },
)
@click.option("--study", "study", metavar="ID", help="Show a stored study instead of running.")
@click.option("--list", "list_studies", is_flag=True, help="List stored studies.")
@click.option("--dry-run", is_flag=True, help="Show the formulations that would run.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
@click.pass_obj
def sensitivity_cmd(obj: Context, /, **opts: Any) -> None:
    """Re-run a task under equivalent formulations and report how much the score moves.

    The reference run is the task as configured; each other formulation changes one thing:
    option labels ((A), [A], A), 1.), separators, the instruction line, chat template,
    system prompt, few-shot draws, cloze vs letter, option order (every rotation, for
    CircularEval; --axes ...,permutations for random orders). Prints each score with its
    paired difference from the reference, the spread, the format noise floor (max - min), the
    CircularEval score and position bias. Every formulation is a stored run.

    \b
    Examples:
      calipers sensitivity -t mmlu --formulation letter -n 100 --data-dir ../shared/data
      calipers sensitivity -m fake:echo -t dyn_dates_mc -n 20 --axes labels,rotations
      calipers sensitivity --list
      calipers sensitivity --study study-20261130-0800-ab12
    """
    from calipers.analysis import load_study, plan_study, run_study, sensitivity
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        if opts["list_studies"]:
            _list(obj, store, opts["as_json"])
            return
        skipped: list[tuple[str, str]] = []
        if opts["study"]:
            runs = load_study(store, opts["study"])
        else:
            if not opts["task"]:
                raise ConfigError("Which task? Pass -t TASK.", hint="calipers tasks lists them.")
            axes = [a.strip() for a in opts["axes"].split(",") if a.strip()]
            base = run_config(opts, tasks=(opts["task"],))
            plan = plan_study(base, axes, permutations=opts["permutations"])
            skipped = list(plan.skipped)
            if opts["dry_run"]:
                _dry_run(obj, plan, opts["as_json"])
                return
            progress = BarProgress(obj.err, enabled=sys.stderr.isatty() or not opts["as_json"])
            obj.err.print(
                f"Study {plan.study}: the reference and {len(plan.formulations)} formulations."
            )
            with progress:
                ids = run_study(plan, store, progress=progress)
            runs = [r for r in load_study(store, plan.study) if r.record.id in ids]
        task = runs[0].record.tasks[0]
        report = sensitivity(runs, task, seed=opts["seed"])
        study = (runs[0].record.config or {}).get("study")
        if opts["as_json"]:
            obj.print_json(
                {
                    "study": study,
                    **report.model_dump(mode="json"),
                    "skipped": [{"formulation": a, "why": b} for a, b in skipped],
                }
            )
            return
        obj.out.print(f"Study [bold]{study}[/]")
        _print(obj, report, skipped)


def _dry_run(obj: Context, plan: Any, as_json: bool) -> None:
    if as_json:
        obj.print_json(
            {
                "study": plan.study,
                "formulations": [label for label, _ in plan.formulations],
                "skipped": [{"formulation": a, "why": b} for a, b in plan.skipped],
            }
        )
        return
    obj.out.print(f"Study {plan.study} would run the reference and:")
    for label, _ in plan.formulations:
        obj.out.print(f"  {escape(label)}")
    for label, why in plan.skipped:
        obj.out.print(f"[dim]  skipped {escape(label)}: {escape(why)}[/]")


def _list(obj: Context, store: Any, as_json: bool) -> None:
    from calipers.analysis import list_studies

    studies = list_studies(store)
    if as_json:
        obj.print_json(studies)
        return
    t = Table(header_style="bold")
    for col in ("study", "model", "task", "runs", "created"):
        t.add_column(col)
    for s in studies:
        t.add_row(s["study"], escape(s["model"]), s["task"], str(s["runs"]), s["created_at"])
    obj.out.print(t)


@cli.command("robustness")
@run_options("model")
@click.option("-t", "--task", metavar="NAME|PATH", help="The task (one).")
@run_options("formulation", "limit", "seed", help_for={"limit": "Items (the same in every run)"})
@click.option(
    "--only",
    metavar="LIST",
    help="Comma-separated subset of: typos, case, "
    "whitespace, missing_context, two_questions, distractor.",
)
@run_options("chat_template", "data_dir", "base_url")
@click.option("--study", "study", metavar="ID", help="Show a stored study instead of running.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
@click.pass_obj
def robustness_cmd(obj: Context, /, **opts: Any) -> None:
    """How much worse is a model on questions written the way real users write?

    Runs the task clean, then with each perturbation of the question (seeded per item):
    typos, all lower case, stray whitespace, the first sentence missing, a second unrelated
    question appended, an irrelevant sentence first. The robustness gap is the paired
    difference from the clean run on the same items, with its interval; p-values are
    Holm-corrected across the perturbations.

    \b
    Examples:
      calipers robustness -t gsm8k -n 50 --data-dir ../shared/data
      calipers robustness -m fake:echo -t dyn_arithmetic -n 30 --only typos,case
    """
    from calipers.analysis import load_study, plan_study, robustness, run_study
    from calipers.store import Store
    from calipers.tasks import PERTURBATIONS

    with Store.open(obj.store_url) as store:
        if opts["study"]:
            runs = load_study(store, opts["study"])
        else:
            if not opts["task"]:
                raise ConfigError("Which task? Pass -t TASK.", hint="calipers tasks lists them.")
            only = [
                k.strip() for k in (opts["only"] or ",".join(PERTURBATIONS)).split(",") if k.strip()
            ]
            unknown = [k for k in only if k not in PERTURBATIONS]
            if unknown:
                raise ConfigError(
                    f"Unknown perturbation(s): {', '.join(unknown)}.",
                    hint=f"Use some of: {', '.join(PERTURBATIONS)}.",
                )
            base = run_config(opts, tasks=(opts["task"],))
            plan = plan_study(base, ["robustness"])
            wanted = {k.replace("_", " ") for k in only}
            plan = plan.__class__(
                plan.study,
                plan.reference,
                tuple(f for f in plan.formulations if f[0] in wanted),
                tuple(s for s in plan.skipped if s[0] in wanted),
            )
            progress = BarProgress(obj.err, enabled=sys.stderr.isatty() or not opts["as_json"])
            with progress:
                ids = run_study(plan, store, progress=progress)
            runs = [r for r in load_study(store, plan.study) if r.record.id in ids]
            for label, why in plan.skipped:
                obj.err.print(f"[dim]skipped {escape(label)}: {escape(why)}[/]")
        report = robustness(runs, runs[0].record.tasks[0], seed=opts["seed"])
        study = (runs[0].record.config or {}).get("study")
    if opts["as_json"]:
        obj.print_json({"study": study, **report.model_dump(mode="json")})
        return
    t = Table(
        header_style="bold",
        title_justify="left",
        title=f"{escape(report.model)} on {report.task} ({report.metric}): clean "
        f"{_pts(report.clean.score)}; robustness gap per perturbation (points)",
    )
    for col in ("perturbation", "run", "n", "score [95%]", "gap vs clean [95%]", "p (Holm)"):
        t.add_column(col, justify="left" if col in ("perturbation", "run") else "right")
    for r in report.rows:
        gap = _pts(r.gap)
        t.add_row(
            r.perturbation,
            r.run_id,
            str(r.n_paired),
            _pts(r.score),
            f"[bold]{gap}[/]" if r.significant else gap,
            "-" if r.p_adjusted is None else f"{r.p_adjusted:.3g}",
        )
    obj.out.print(f"Study [bold]{study}[/]")
    obj.out.print(t)
    worst = [r for r in report.rows if r.significant]
    if worst:
        names = ", ".join(r.perturbation for r in worst)
        obj.out.print(f"Significant drops (Holm, alpha {report.alpha}): {names}.")
    else:
        obj.out.print(
            "No perturbation changed the score detectably at this n "
            "(see the intervals for how large a gap could still hide)."
        )
