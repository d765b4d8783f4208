"""``calipers agent``: run an agent with trials beside its baselines; report its reliability."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.cli._progress import BarProgress
from calipers.cli._run_options import SERVER, run_config, run_options
from calipers.errors import ConfigError
from calipers.types import Estimate

__all__ = ["agent_group"]


@cli.group("agent")
def agent_group() -> None:
    """Agents: success, pass^k and flip rate over repeated trials, beside trivial baselines.

    `calipers agent run` runs a model K times on every item of an agent task (a tool world or
    a conversation), and on the same items the baselines: do-nothing and random-tool (every
    item one of them passes is flagged invalid) and the task's oracle (which must pass 100%).
    `calipers agent report` shows a stored study again; `calipers agent export-swebench`
    writes a run's patches for SWE-bench's own harness. docs/agents.md explains the numbers.
    """


def _metric_option(f: Any) -> Any:
    return click.option(
        "--metric",
        metavar="NAME",
        help="The pass/fail metric (1 = pass); default: 'success' if the scorer reports it, "
        "else the task's primary metric.",
    )(f)


@agent_group.command("run")
@run_options("model")
@click.option(
    "-t",
    "--task",
    "agent_tasks",
    metavar="NAME",
    multiple=True,
    help="Agent task (kind episode: a tool world or a conversation); repeatable.",
)
@click.option(
    "-k",
    "--trials",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Trials per item (the runner's epochs); more than 1 needs --temperature above 0.",
)
@run_options("temperature", "limit", "seed", "max_tokens", "system_prompt", "data_dir", *SERVER)
@_metric_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
@click.pass_obj
def run_cmd(obj: Context, /, **opts: Any) -> None:
    """Run MODEL with K trials per item, then the baselines on the same items, and report.

    The baselines always run: baseline:do-nothing (one trial), baseline:random-tool (K
    trials) and, where the task's environment has an oracle, baseline:oracle (one trial).
    The runs are stored as one study (`calipers agent list`).

    A scripted user is deterministic, so K trials only differ when the model samples:
    --trials above 1 needs --temperature above 0.

    \b
    Examples:
      calipers agent run -t world_orders -m openai:MODEL --base-url URL -k 4 --temperature 0.7
      calipers agent run -t world_orders -m smollm2 -n 20
      calipers agent report agent-... --json
    """
    from calipers.analysis import (
        agent_report,
        load_agent_study,
        plan_agent_study,
        run_agent_study,
    )
    from calipers.store import Store

    if not opts["agent_tasks"]:
        raise ConfigError("Which task? Pass -t TASK.", hint="calipers tasks lists agent tasks.")
    plan = plan_agent_study(run_config(opts, tasks=tuple(opts["agent_tasks"])), opts["trials"])
    err = obj.err
    err.print(
        f"Agent study {plan.study}: {escape(plan.agent.model)} x {opts['trials']} trial(s), "
        f"then {', '.join(c.model for c in plan.baselines)}."
    )
    for task in plan.no_oracle:
        err.print(
            f"[yellow]{task}: its environment gives no oracle; the oracle check is skipped.[/]"
        )
    progress = BarProgress(err, enabled=sys.stderr.isatty() and not opts["as_json"])
    with Store.open(obj.store_url) as store:
        with progress:
            ids = run_agent_study(
                plan, store, progress=progress, on_run=lambda who, rid: err.print(f"{who}: {rid}")
            )
        runs = [r for r in load_agent_study(store, plan.study) if r.record.id in ids]
    _show(obj, agent_report(runs, metric=opts["metric"], seed=opts["seed"] or 0), opts["as_json"])


@agent_group.command("report")
@click.argument("ref", metavar="STUDY|RUN")
@_metric_option
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_option
@click.pass_obj
def report_cmd(obj: Context, /, ref: str, metric: str | None, seed: int, as_json: bool) -> None:
    """Show an agent study: success and its components, pass^k and pass@k for k = 1..K,
    the flip rate, the baselines, invalid and broken items, and the minimum detectable
    difference. STUDY is an agent study id (`calipers agent list`); a RUN id works too."""
    from calipers.analysis import agent_report, load_agent_study
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        runs = load_agent_study(store, ref)
    _show(obj, agent_report(runs, metric=metric, seed=seed), as_json)


@agent_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@click.pass_obj
def list_cmd(obj: Context, /, as_json: bool) -> None:
    """List stored agent studies, newest first."""
    from calipers.analysis import list_agent_studies
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        studies = list_agent_studies(store)
    if as_json:
        obj.print_json(studies)
        return
    if not studies:
        obj.out.print("No agent studies stored. Run one: calipers agent run -t TASK -m MODEL")
        return
    t = Table(header_style="bold")
    for col in ("study", "agent", "tasks", "runs", "created"):
        t.add_column(col)
    for s in studies:
        t.add_row(
            s["study"], escape(s["model"]), ", ".join(s["tasks"]), str(s["runs"]), s["created_at"]
        )
    obj.out.print(t)


@agent_group.command("export-swebench")
@click.argument("run_id", metavar="RUN")
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The predictions JSONL to write.",
)
@click.option("--task", help="Only this task of the run (default: every task).")
@click.option(
    "--epoch", type=click.IntRange(min=0), default=0, show_default=True, help="Which trial."
)
@click.option(
    "--model-name", metavar="NAME", help="model_name_or_path (default: the run's model name)."
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@store_option
@click.pass_obj
def export_swebench_cmd(
    obj: Context,
    /,
    run_id: str,
    out: Path,
    task: str | None,
    epoch: int,
    model_name: str | None,
    as_json: bool,
) -> None:
    """Write a run's patches as SWE-bench predictions, one JSON object per line:
    {"instance_id", "model_name_or_path", "model_patch"}.

    The run's item ids are the instance ids; the patch is the last ```diff block of the
    final reply (or the reply itself when it is a diff). Score it with SWE-bench's harness,
    which needs Docker (docs/agents.md):

    \b
      python -m swebench.harness.run_evaluation --dataset_name princeton-nlp/SWE-bench_Lite \\
          --predictions_path predictions.jsonl --max_workers 4 --run_id calipers
    """
    from calipers.analysis import swebench_predictions
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        run = store.get_run(run_id)
        samples = store.get_samples(run.id)
    export = swebench_predictions(samples, model_name or run.model_name, task=task, epoch=epoch)
    if not export.predictions:
        raise ConfigError(
            f"Run {run.id} has no scored item"
            + (f" of task {task!r}" if task else "")
            + f" at epoch {epoch} to export.",
            hint="Check the run with: calipers show " + run.id,
        )
    out.write_text("".join(json.dumps(p) + "\n" for p in export.predictions), encoding="utf-8")
    if as_json:
        obj.print_json(
            {
                "out": str(out),
                "predictions": len(export.predictions),
                "no_patch": export.no_patch,
                "errors": export.errors,
            }
        )
        return
    obj.out.print(f"Wrote {len(export.predictions)} predictions to {out}.")
    if export.no_patch:
        obj.out.print(
            f"[yellow]{len(export.no_patch)} had no diff in the reply (empty patch: "
            f"unresolved): {escape(', '.join(export.no_patch[:10]))}[/]"
        )
    if export.errors:
        obj.out.print(
            f"[yellow]{len(export.errors)} errored and were left out: "
            f"{escape(', '.join(export.errors[:10]))}[/]"
        )


# -- printing -------------------------------------------------------------------------------


def _pct(e: Estimate | None) -> str:
    return "-" if e is None or e.is_empty else e.format(percent=True)


def _show(obj: Context, report: Any, as_json: bool) -> None:
    if as_json:
        obj.print_json(report.to_dict())
        return
    out = obj.out
    head = f"[bold]Agent {escape(report.model)}[/] (run {report.agent_run})"
    out.print(head + (f", study {report.study}" if report.study else ""))
    for t in report.tasks:
        _show_task(obj, t, report.alpha, report.power)
    for note in report.notes:
        out.print(f"[yellow]{escape(note)}[/]")


def _show_task(obj: Context, t: Any, alpha: float, power: float) -> None:
    out = obj.out
    rel = t.all_items
    out.print(
        f"\n[bold]{escape(t.task)}[/]: {rel.n_items} items x {rel.trials} trial(s); "
        f"pass = {escape(t.metric)} is 1"
        + (f"; {t.errors} errored trial(s) left out" if t.errors else "")
    )
    if t.mdd is not None:
        var = (
            f", between-item variance {t.between_task_var:.3f}"
            if t.between_task_var is not None
            else ", all-or-nothing items assumed (one trial cannot tell)"
        )
        out.print(
            f"Before comparing: another agent on these items must differ by at least "
            f"{100 * t.mdd:.1f} points in success to be detected (alpha {alpha:g}, power "
            f"{power:g}{var})."
        )
    table = Table(header_style="bold", title_justify="left")
    table.add_column("")
    table.add_column("all items [95% interval]", justify="right")
    if t.valid_items is not None:
        table.add_column(f"without {len(t.invalid)} invalid", justify="right")
    valid = t.valid_items

    def row(label: str, a: Estimate | None, b: Estimate | None) -> None:
        table.add_row(label, _pct(a), *([_pct(b)] if valid is not None else []))

    row("success", rel.success, valid.success if valid else None)
    for k in sorted(rel.pass_hat_k):
        if k > 1:
            row(f"pass^{k}", rel.pass_hat_k[k], valid.pass_hat_k.get(k) if valid else None)
    for k in sorted(rel.pass_at_k):
        if k > 1:
            row(f"pass@{k}", rel.pass_at_k[k], valid.pass_at_k.get(k) if valid else None)
    if rel.flip_rate is not None:
        row("flip rate", rel.flip_rate, valid.flip_rate if valid else None)
    out.print(table)
    if len(t.components) > 1:
        parts = [f"{escape(m)} {_pct(e)}" for m, e in t.components.items()]
        out.print("Grading components (items' mean over trials): " + "; ".join(parts))
    for name, b in t.baselines.items():
        extra = f", {b.errors} errored" if b.errors else ""
        out.print(f"Baseline {escape(name)}: {_pct(b.success)} (run {b.run_id}{extra})")
    if t.invalid:
        out.print(
            f"[bold red]Invalid items[/] ({len(t.invalid)}; a trivial baseline passes them, so "
            f"they grade nothing the agent did): {escape(', '.join(t.invalid))}"
        )
    if t.oracle == "passed":
        out.print("Oracle: passes every item.")
    elif t.oracle == "failed":
        out.print(
            f"[bold red]Broken items[/] ({len(t.broken)}; the oracle does not pass them: the "
            f"task, its scorer or its oracle is wrong): {escape(', '.join(t.broken))}"
        )
    if rel.trials >= 2 and not math.isnan(rel.success.value):
        k = rel.trials
        out.print(
            f"[dim]pass^{k}: all {k} trials of an item succeed; pass@{k}: at least one does; "
            "flip rate: share of pairs of identical trials that disagree.[/]"
        )
