"""``calipers rag``: RAG stress tests — the same questions while the context degrades."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from calipers.cli._app import Context, cli, store_option
from calipers.cli._progress import BarProgress
from calipers.cli._run_options import run_config, run_options
from calipers.errors import ConfigError

__all__ = ["rag_group"]


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(
            f"--{what} {text!r}: give comma-separated numbers.", hint="e.g. 0.2,0.4,0.6"
        ) from None


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _report_outputs(f: Callable[..., Any]) -> Callable[..., Any]:
    """--json, --html FILE and --markdown FILE: where the report goes besides the terminal."""
    f = click.option(
        "--markdown",
        "md_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Also write the report as Markdown to this file.",
    )(f)
    f = click.option(
        "--html",
        "html_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Also write the report as HTML (plots included) to this file.",
    )(f)
    return click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")(f)


@cli.group("rag")
def rag_group() -> None:
    """RAG stress tests: how a model's answers change as retrieval degrades.

    `calipers rag stress` runs a RAG task clean and under each degradation (distractor noise,
    the gold passage missing or moved, passage order, top-k of a real retriever, the context
    window filled), each a stored run paired with the clean one; `calipers rag report` shows a
    stored stress test again, as text, JSON, HTML or Markdown; `calipers rag import` turns
    traces or gateway traffic into a RAG task.
    """


@rag_group.command("stress")
@run_options("model")
@click.option("-t", "--task", metavar="NAME|PATH", help="The RAG task (one).")
@run_options(
    "limit",
    "seed",
    help_for={"limit": "Questions (the same in every arm)", "seed": "Seed of every draw"},
)
@click.option(
    "--factors",
    default="noise,gold,position,order,k,retriever,fill",
    show_default=True,
    help="Comma-separated degradations: noise, gold, position, order, k, retriever, fill.",
)
@click.option(
    "--noise",
    "noise_levels",
    default="0.2,0.4,0.6,0.8",
    show_default=True,
    help="Noise ratios (share of the k passages that are distractors).",
)
@click.option(
    "--distractors",
    default="random,hard,counterfactual",
    show_default=True,
    help="Distractor types for the noise factor.",
)
@click.option(
    "--fill",
    "fill_levels",
    default="0.1,0.25,0.5,0.6,0.75,0.9",
    show_default=True,
    help="Context-fill levels (share of the model's window).",
)
@click.option(
    "--k",
    "k",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Passages shown in the noise, gold, position and order arms.",
)
@click.option(
    "--k-levels",
    default="1,3,5,10",
    show_default=True,
    help="Top-k of the real retriever for the k factor.",
)
@click.option(
    "--retriever",
    type=click.Choice(["bm25", "embedding"]),
    default="bm25",
    show_default=True,
    help="The real retriever of the k and retriever factors.",
)
@click.option(
    "--judge",
    "rag_judge",
    metavar="SPEC",
    help="Also score claim faithfulness with this judge model (rag_faithfulness), for "
    "free-form answers; calibrate it: calipers judge-calibrate RUN --planted (dyn_rag).",
)
@run_options("chat_template", "system_prompt", "max_tokens", "n_ctx", "data_dir", "base_url")
@click.option(
    "--dry-run", is_flag=True, help="List the arms that would run, and why any is skipped."
)
@_report_outputs
@store_option
@click.pass_obj
def stress_cmd(obj: Context, /, **opts: Any) -> None:
    """Run a RAG task clean and under each degradation; report every outcome per arm.

    Outcomes per item, judge-free: correct (an answer alias; abstaining where no gold passage
    is shown), abstained, unsupported (an answer no shown passage supports), distractor
    adopted, counterfactual followed. Each arm's rate has its interval and its paired
    difference from the clean arm (Holm-corrected across arms); the fill curve gets a knee
    estimate with a bootstrap interval and a test of whether the slope really changes.

    \b
    Examples:
      calipers rag stress -t dyn_rag -m fake:echo -n 20 --factors noise,gold
      calipers rag stress -t nq_open_oracle -n 100 --factors fill --n-ctx 8192
      calipers rag stress -t nq_open_oracle -n 50 --html rag.html
    """
    from calipers.analysis import StressGrid, load_study, plan_rag_stress, run_study
    from calipers.store import Store

    if not opts["task"]:
        raise ConfigError("Which task? Pass -t TASK.", hint="e.g. -t dyn_rag or -t nq_open_oracle")
    base = run_config(opts, tasks=(opts["task"],), rag_judge=opts["rag_judge"])
    grid = StressGrid(
        noise=_floats(opts["noise_levels"], "noise"),
        distractors=_names(opts["distractors"]),
        fill=_floats(opts["fill_levels"], "fill"),
        k=opts["k"],
        k_levels=[int(v) for v in _floats(opts["k_levels"], "k-levels")],
        retriever=opts["retriever"],
        seed=opts["seed"],
    )
    plan = plan_rag_stress(base, _names(opts["factors"]), grid)
    if opts["dry_run"]:
        _dry_run(obj, plan, opts["as_json"])
        return
    obj.err.print(f"RAG stress test {plan.study}: the clean arm and {len(plan.formulations)} arms.")
    for label, why in plan.skipped:
        obj.err.print(f"[yellow]skipped {escape(label)}: {escape(why)}[/]")
    progress = BarProgress(obj.err, enabled=sys.stderr.isatty() or not opts["as_json"])
    with Store.open(obj.store_url) as store:
        with progress:
            ids = run_study(plan, store, progress=progress)
        runs = [r for r in load_study(store, plan.study) if r.record.id in ids]
        saved = store.list_runs(limit=100_000)
    _show(obj, runs, opts, saved)


@rag_group.command("report")
@click.argument("study")
@_report_outputs
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@store_option
@click.pass_obj
def report_cmd(obj: Context, /, study: str, **opts: Any) -> None:
    """Show a stored RAG stress test (`calipers rag list` names them)."""
    from calipers.analysis import load_study
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        runs = load_study(store, study)
        saved = store.list_runs(limit=100_000)
    _show(obj, runs, opts, saved)


@rag_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@click.pass_obj
def list_cmd(obj: Context, /, as_json: bool) -> None:
    """List stored RAG stress tests."""
    from rich.table import Table

    from calipers.analysis import list_studies
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        studies = [
            {"arms": s.pop("runs"), **s} for s in list_studies(store, rag=True)
        ]  # a RAG stress test's runs are its arms
    if as_json:
        obj.print_json(studies)
        return
    if not studies:
        obj.out.print("No RAG stress tests stored. Run one: calipers rag stress -t dyn_rag")
        return
    t = Table(header_style="bold")
    for col in ("study", "model", "task", "arms", "created"):
        t.add_column(col)
    for s in studies:
        t.add_row(s["study"], escape(s["model"]), s["task"], str(s["arms"]), s["created_at"])
    obj.out.print(t)


def _dry_run(obj: Context, plan: Any, as_json: bool) -> None:
    if as_json:
        obj.print_json(
            {
                "study": plan.study,
                "arms": [label for label, _ in plan.formulations],
                "skipped": [{"arm": a, "why": b} for a, b in plan.skipped],
            }
        )
        return
    obj.out.print(f"RAG stress test {plan.study} would run the clean arm and:")
    for label, _ in plan.formulations:
        obj.out.print(f"  {escape(label)}")
    for label, why in plan.skipped:
        obj.out.print(f"[dim]  skipped {escape(label)}: {escape(why)}[/]")


def _show(obj: Context, runs: Any, opts: dict[str, Any], saved: Any = ()) -> None:
    from calipers.analysis import rag_report
    from calipers.cli._rag_render import print_report
    from calipers.reports import write_rag_report

    report = rag_report(runs, saved=saved, seed=opts.get("seed") or 0)
    if opts.get("html_path") is not None:
        write_rag_report(report, opts["html_path"], "html")
        obj.err.print(f"Wrote {opts['html_path']}")
    if opts.get("md_path") is not None:
        write_rag_report(report, opts["md_path"], "markdown")
        obj.err.print(f"Wrote {opts['md_path']}")
    if opts["as_json"]:
        obj.print_json(report.model_dump(mode="json"))
        return
    print_report(obj.out, report)


@rag_group.command("import")
@click.option(
    "--otel",
    "otel_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An OTLP JSON file of traces that recorded retrieved documents.",
)
@click.option("--traffic", is_flag=True, help="Gateway traffic that carried calipers_rag passages.")
@click.option("--since", metavar="WHEN", help="With --traffic: from (24h, 7d or an ISO time).")
@click.option("--until", metavar="WHEN", help="With --traffic: until (default: now).")
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The RAG JSONL to write; a task file beside it runs it (printed).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@store_option
@click.pass_obj
def import_cmd(
    obj: Context,
    /,
    otel_path: Path | None,
    traffic: bool,
    since: str | None,
    until: str | None,
    out: Path,
    as_json: bool,
) -> None:
    """Turn RAG traces into a RAG task: the question, the passages the retriever returned and
    the answer the user got, one row per trace or request.

    Traces have no reference answer: on them a stress test measures abstention and
    unsupported answers (and claim faithfulness with a calibrated judge), not correctness.

    \b
    Examples:
      calipers rag import --otel traces.json -o rag_traces.jsonl
      calipers rag import --traffic --since 7d -o rag_traffic.jsonl
      calipers rag stress -t rag_traffic.yaml --factors noise,gold
    """
    from calipers.suites import rag_records_from_otel, rag_records_from_traffic, write_rag_jsonl

    if (otel_path is None) == (not traffic):
        raise ConfigError(
            "Import from one source: --otel FILE or --traffic.",
            hint="calipers rag import --traffic --since 7d -o rag.jsonl",
        )
    skipped: dict[str, int] = {}
    if otel_path is not None:
        rows, report = rag_records_from_otel(otel_path)
        skipped = dict(report.skipped)
    else:
        rows = rag_records_from_traffic(_traffic(obj, since, until))
    n = write_rag_jsonl(rows, out)
    spec = out.with_suffix(".yaml")
    if not spec.exists():
        spec.write_text(f"name: {out.stem}\ndata: {out.name}\nrag: {{}}\n", encoding="utf-8")
    if as_json:
        obj.print_json({"rows": n, "out": str(out), "task_file": str(spec), "skipped": skipped})
        return
    obj.out.print(f"Wrote {n} RAG rows to {out}; task file {spec}.")
    for why, count in skipped.items():
        obj.out.print(f"[dim]skipped {count}: {escape(why)}[/]")
    if n:
        obj.out.print(f"Run it: calipers rag stress -t {spec} --factors noise,gold")


def _traffic(obj: Context, since: str | None, until: str | None) -> list[Any]:
    """The stored gateway records of ``[since, until)``."""
    from calipers._util.clock import utc_now
    from calipers.monitor import parse_when
    from calipers.store import Store

    now = utc_now()
    with Store.open(obj.store_url) as store:
        return store.get_traffic(
            since=parse_when(since, now) if since else None,
            until=parse_when(until, now) if until else None,
        )
