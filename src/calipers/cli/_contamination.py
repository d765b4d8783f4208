"""``calipers contamination``: is a benchmark score inflated by training on the benchmark?"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.cli._progress import BarProgress
from calipers.cli._run_options import run_config, run_options
from calipers.errors import ConfigError
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.runner import RunConfig

__all__ = ["PROBE_NAMES", "contamination_group"]


@cli.group("contamination")
def contamination_group() -> None:
    """Contamination checks, each a number with an interval and what it can and cannot prove.

    \b
      index         build a hashed 13-gram index of your training corpus (bounded memory)
      ngram         overlap of a task's items with that index; scores on clean vs overlapping
      perturbation  the drop on shuffled / "None of the other choices" variants, against a
                    fresh control task that cannot have been memorised
      probes        memorisation probes (Min-K%++, completion, TS-Guessing) for models with
                    log-probabilities

    A check that does not apply (no corpus, no log-probabilities) is skipped with the reason,
    never reported as zero contamination. See docs/contamination.md.
    """


@contamination_group.command("index")
@click.argument("corpus", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the index (filter.bin + index.json).",
)
@click.option(
    "--memory-mb",
    type=click.FloatRange(min=1),
    default=512,
    show_default=True,
    help="Size of the filter; memory stays bounded by it whatever the corpus size.",
)
@click.option("--text-field", default="text", show_default=True, help="JSONL field with text.")
@click.option("--overwrite", is_flag=True, help="Replace an existing index at --out.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def index_cmd(
    obj: Context,
    /,
    corpus: tuple[str, ...],
    out: str,
    memory_mb: float,
    text_field: str,
    overwrite: bool,
    as_json: bool,
) -> None:
    """Index CORPUS (files or directories: .txt, .jsonl, and their .gz) for n-gram checks.

    \b
    Example:
      calipers contamination index ./corpus/ --out ./corpus.idx --memory-mb 256
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from calipers.contamination import build_index

    with Progress(
        "indexing",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=obj.err,
        disable=as_json and not sys.stderr.isatty(),
    ) as bar:
        job = bar.add_task("index", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total)

        info = build_index(
            list(corpus),
            out,
            memory_mb=memory_mb,
            text_field=text_field,
            progress=progress,
            overwrite=overwrite,
        )
    if as_json:
        obj.print_json(info.model_dump(mode="json"))
        return
    obj.out.print(
        f"Indexed {len(info.files)} file(s), {info.documents:,} documents, "
        f"{info.text_bytes / 2**20:.1f} MiB of text into {escape(out)}: "
        f"{info.ngrams_inserted:,} {info.n}-grams in a {info.memory_bytes / 2**20:.0f} MiB "
        f"filter, false-positive rate {info.fp_rate:.2g} per {info.n}-gram, "
        f"{info.mb_per_s:.1f} MiB/s ({info.seconds:.1f} s)."
    )
    if info.skipped_files or info.skipped_records:
        obj.out.print(
            f"Skipped: {info.skipped_files} file(s), {info.skipped_records} "
            "record(s) (see --json for which)."
        )
    for w in info.warnings:
        obj.out.print(f"[yellow]{escape(w)}[/]")


@contamination_group.command("ngram")
@click.option("-t", "--task", required=True, metavar="NAME", help="The benchmark task.")
@click.option(
    "--index",
    "index_dir",
    type=click.Path(file_okay=False),
    help="An index from `calipers contamination index` (none: skipped, says why).",
)
@click.option(
    "--run",
    "run_id",
    metavar="RUN",
    help="A stored run of the task: scores on clean vs overlapping items.",
)
@run_options("data_dir")
@click.option("-n", "--limit", type=click.IntRange(min=1), help="Only the first N items.")
@click.option(
    "--min-ratio",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of an item's 13-grams found for it to count as overlapping (0: any).",
)
@click.option(
    "--keep-shared",
    is_flag=True,
    help="Count 13-grams shared by several items (the plain GPT-3 rule; default: set them aside).",
)
@click.option("--json", "as_json", is_flag=True)
@store_option
@click.pass_obj
def ngram_cmd(
    obj: Context,
    /,
    task: str,
    index_dir: str | None,
    run_id: str | None,
    data_dir: str | None,
    limit: int | None,
    min_ratio: float,
    keep_shared: bool,
    as_json: bool,
) -> None:
    """Overlap of TASK's items with your training corpus, and the score on clean vs
    overlapping items.

    \b
    Example:
      calipers contamination ngram -t mmlu --index ./corpus.idx --data-dir ../shared/data
    """
    from calipers.analysis import load_runs
    from calipers.contamination import ngram_check, render_ngram_report, task_item_texts
    from calipers.store import Store

    run = None
    if run_id:
        with Store.open(obj.store_url) as store:
            run = load_runs(store, [run_id])[0]
    items = task_item_texts(task, data_dir=data_dir, limit=limit)
    report = ngram_check(
        items, index_dir, run, task=task, min_ratio=min_ratio, ignore_shared=not keep_shared
    )
    if as_json:
        obj.print_json(report.model_dump(mode="json"))
        return
    obj.out.print(render_ngram_report(report))


def _pts(est: Estimate | None) -> str:
    if est is None:
        return "-"
    return f"{100 * est.value:+.1f} [{100 * est.low:+.1f}, {100 * est.high:+.1f}]"


@contamination_group.command("perturbation")
@run_options("model")
@click.option(
    "-t", "--task", required=True, metavar="NAME|PATH", help="The benchmark (multiple choice)."
)
@click.option(
    "--control",
    default="dyn_dates_mc",
    show_default=True,
    metavar="NAME|PATH",
    help="A task whose items cannot have been memorised ('none': no control).",
)
@run_options(
    "formulation",
    "limit",
    "seed",
    "chat_template",
    "data_dir",
    help_for={
        "formulation": "cloze | letter | generate, for the benchmark and (if it has it) the control"
    },
)
@click.option("--json", "as_json", is_flag=True)
@store_option
@click.pass_obj
def perturbation_cmd(obj: Context, /, **opts: Any) -> None:
    """Do benchmark items lose more than fresh items when their surface form changes?

    Runs the benchmark and the control as they are, with the options shuffled, and with one
    wrong option replaced by "None of the other choices" (the answer stays right), and
    reports each drop with the excess drop on the benchmark (a difference in differences).

    \b
    Example:
      calipers contamination perturbation -t mmlu --formulation letter -n 100 \\
          --data-dir ../shared/data
    """
    from calipers.analysis import load_study, plan_study, run_study
    from calipers.contamination import perturbation_gap
    from calipers.store import Store
    from calipers.tasks import formulations

    task, control, formulation, as_json = (
        opts["task"],
        opts["control"],
        opts["formulation"],
        opts["as_json"],
    )

    def config(name: str) -> RunConfig:
        form = formulation if (formulation and formulation in formulations(name)) else None
        return run_config(opts, tasks=(name,), formulation=form)

    from calipers._util.ids import new_run_id
    from calipers.contamination import GAP_PREFIX

    names = [task] + ([] if control == "none" else [control])
    gap_id = f"{GAP_PREFIX}{new_run_id()}"  # the control's study is gap_id + "-control"
    with Store.open(obj.store_url) as store:
        studies = []
        progress = BarProgress(obj.err, enabled=sys.stderr.isatty() or not as_json)
        with progress:
            for i, name in enumerate(names):
                plan = plan_study(
                    config(name), ["perturbation_gap"], study=gap_id + ("-control" if i else "")
                )
                if i and not plan.formulations:
                    obj.err.print(
                        f"[yellow]No perturbation applies to the control {name}; "
                        "reporting without a control.[/]"
                    )
                    continue
                if not plan.formulations:
                    why = "; ".join(f"{a}: {b}" for a, b in plan.skipped)
                    raise ConfigError(
                        f"{name}: no perturbation applies ({why}).",
                        hint="The perturbation gap needs multiple-choice items "
                        "with three or more options.",
                    )
                run_study(plan, store, progress=progress)
                studies.append(load_study(store, plan.study))
    report = perturbation_gap(
        studies[0], studies[1] if len(studies) > 1 else None, seed=opts["seed"]
    )
    if as_json:
        obj.print_json(report.model_dump(mode="json"))
        return
    t = Table(
        header_style="bold",
        title_justify="left",
        title=f"{escape(report.model)}: perturbation gap on {report.task} "
        f"({report.metric}), control {report.control_task or 'none'} (points)",
    )
    for col in ("perturbation", "benchmark drop", "control drop", "excess drop", "reading"):
        t.add_column(col)
    for r in report.rows:
        t.add_row(
            escape(r.perturbation),
            _pts(r.benchmark_gap),
            _pts(r.control_gap),
            _pts(r.excess_drop),
            escape(r.verdict),
        )
    obj.out.print(t)
    obj.out.print(f"[dim]{escape(report.caveat)}[/]")


PROBE_NAMES = ("min-k%++", "completion", "ts-guessing")  # calipers.contamination.PROBES


def _probe_names(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    from calipers.contamination import probe_name

    try:
        return tuple(probe_name(v) for v in values)
    except ConfigError as e:
        raise click.BadParameter(f"{e.message} {e.hint or ''}".strip()) from None


@contamination_group.command("probes")
@run_options(
    "model", help_for={"model": "A model with log-probabilities for Min-K%++ (llamacpp, fake)"}
)
@click.option("-t", "--task", required=True, metavar="NAME|PATH", help="The benchmark.")
@click.option(
    "--reference",
    default="dyn_word_problems",
    show_default=True,
    metavar="NAME",
    help="Fresh items the model cannot have seen ('none': no reference).",
)
@click.option(
    "--probe",
    "probes",
    multiple=True,
    metavar="[" + "|".join(PROBE_NAMES) + "]",
    callback=_probe_names,
    help="Only these probes (repeatable; default: all three).",
)
@click.option("-n", "--limit", type=click.IntRange(min=1), default=60, show_default=True)
@run_options("seed", "data_dir")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def probes_cmd(
    obj: Context,
    /,
    model: str,
    task: str,
    reference: str,
    probes: tuple[str, ...],
    limit: int,
    seed: int,
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Memorisation probes: Min-K%++ (item vs its shuffled words), completion of the
    question's second half, and TS-Guessing (produce a hidden wrong option), each against a
    control and, with --reference, against fresh items. A model without log-probabilities
    skips Min-K%++ with the reason.

    \b
    Example:
      calipers contamination probes -t arc_easy -n 60 --data-dir ../shared/data
    """
    import asyncio
    from pathlib import Path

    from calipers.contamination import PROBES, render_probe, run_probes
    from calipers.models import resolve_model
    from calipers.tasks import LoadContext, resolve_task

    def items(name: str) -> list[Any]:
        (t,) = resolve_task(name)
        ctx = LoadContext(seed=seed, n=limit, data_dir=Path(data_dir) if data_dir else None)
        return list(t.load(ctx))[:limit]

    provider = resolve_model(model)
    ref = None if reference == "none" else items(reference)
    results = asyncio.run(
        run_probes(provider, items(task), probes=probes or PROBES, reference=ref, seed=seed)
    )
    if as_json:
        obj.print_json([r.to_dict() for r in results])
        return
    for r in results:
        obj.out.print(render_probe(r))
