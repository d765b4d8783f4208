"""``calipers run``: evaluate a model on tasks, store the run, print and write the report."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from calipers._util.home import calipers_home
from calipers.cli._app import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_RUN_FAILED,
    Context,
    cli,
    store_option,
)
from calipers.cli._duration import DURATION
from calipers.cli._progress import BarProgress
from calipers.cli._render import judge_marks, judge_scored, summary_table
from calipers.cli._run_config import config_option, save_config, save_config_option
from calipers.cli._run_options import (
    DECODING,
    LLAMACPP,
    PROMPT,
    SERVER,
    run_config,
    run_fields,
    run_options,
)
from calipers.errors import ConfigError, DeadlineError

if TYPE_CHECKING:
    from calipers.runner import RayExecutor, RunConfig, RunResult
    from calipers.store import Store

__all__ = ["run_cmd"]


def _report_dir(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    return calipers_home() / "reports"


def _config(opts: dict[str, Any]) -> RunConfig:
    try:
        return run_config(opts)
    except ValueError as e:
        raise ConfigError(f"Invalid run option: {e}") from None


def _executor(opts: dict[str, Any]) -> RayExecutor | None:
    if opts["executor"] == "ray":
        from calipers.runner import RayExecutor

        return RayExecutor(address=opts["address"], workers=opts["workers"])
    given = [f"--{k}" for k in ("address", "workers") if opts[k] is not None]
    if given:
        raise ConfigError(
            f"{' and '.join(given)} apply only to the Ray executor.",
            hint="Add --executor ray, or drop them.",
        )
    return None


def _request_options(opts: dict[str, Any]) -> dict[str, Any]:
    """--timeout, --max-retries and the servers (--base-url, --fleet): how requests are made,
    never what is measured (so a resumed run may change them; the servers must serve the
    run's model, which the resume checks)."""
    given = run_fields({k: opts[k] for k in ("timeout", "max_retries")})
    options = dict(given.get("model_options", {}))
    servers = run_fields({k: opts[k] for k in ("base_url", "fleet")}).get("model_options", {})
    if servers:  # resumed on this fleet (one --base-url: a fleet of one)
        options["fleet"] = servers.get("fleet") or ({"url": servers["base_url"]},)
    return options


_JSON_TASK_KEYS = (
    "primary",
    "n_samples",
    "n_scored",
    "n_errors",
    "n_cached",
    "metrics",
    "categories",
    "latency_s",
    "input_tokens",
    "output_tokens",
    "top_error",
    "calls",
)


def _as_json(result: RunResult, store: Store, reports: tuple[Path, Path] | None) -> str:
    summary = result.summary.model_dump(mode="json")
    tasks = {t: {k: ts[k] for k in _JSON_TASK_KEYS} for t, ts in summary["tasks"].items()}
    return json.dumps(
        {
            "run_id": result.run_id,
            "status": result.status,
            "store": store.url,
            "model": result.methodology.model.model_dump(mode="json"),
            "report": {"html": str(reports[0]), "markdown": str(reports[1])} if reports else None,
            "elapsed_s": summary.get("elapsed_s"),
            "tasks": tasks,
            "calls": summary["calls"],
            "failed_tasks": result.failed_tasks,
        },
        indent=2,
    )


@cli.command("run")
@config_option
@run_options("model", "task", "formulation", "limit", "seed", *PROMPT, "data_dir", *SERVER)
@click.option(
    "--deadline",
    type=DURATION,
    metavar="DURATION",
    help="Stop the run after this long (90s, 30m, 2h); what is left stays pending "
    "for --resume (exit code 4).",
)
@run_options(*DECODING, *LLAMACPP, "cache")
@click.option("--resume", metavar="RUN", help="Finish an interrupted run (id or prefix).")
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where samples run: this process, or actors on a Ray cluster (calipers[ray]; "
    "docs/ray.md). Not part of what is measured: a run may resume on the other.",
)
@click.option(
    "--address",
    metavar="ADDR",
    help="--executor ray: the cluster (auto, HOST:PORT, ray://HOST:PORT) [default: start "
    "Ray in this process].",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="--executor ray: model replicas, one actor each [default: one per cluster CPU].",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    help="Where HTML/Markdown reports go [default: .calipers/reports].",
)
@click.option("--no-report", is_flag=True, help="Do not write report files.")
@click.option("--json", "as_json", is_flag=True, help="Print the run id and estimates as JSON.")
@save_config_option
@store_option
@click.pass_context
def run_cmd(ctx: click.Context, /, **opts: Any) -> None:
    """Evaluate a model on tasks and store the run.

    With no options: the embedded SmolLM2-135M-Instruct on the built-in dynamic suite
    (items generated fresh from --seed, so they cannot have been memorized).

    \b
    Examples:
      calipers run
      calipers run -t dyn_arithmetic -n 20 --seed 7
      calipers run -m llamacpp:./model.gguf -t my_task.yaml --no-chat-template
      calipers run -m openai:my-model --base-url http://127.0.0.1:8080/v1
      calipers run --resume 20261130-0512
      calipers run -m fake:echo,delay=0.1 -n 200 --executor ray --workers 4
      calipers run -m openai:my-model -t gsm8k -n 200 --no-cache --save-config nightly.yaml
      calipers run --config nightly.yaml        the same run again (cron, CI)
    """
    from calipers.runner import aresume, arun
    from calipers.store import Store

    obj: Context = ctx.obj
    if opts["resume"] and (opts["config"] or opts["save_config"]):
        raise ConfigError(
            "--resume finishes a stored run with its own options: --config and "
            "--save-config do not apply.",
            hint="Drop --config/--save-config, or start a new run without --resume.",
        )
    if opts["save_config"]:
        _config(opts)  # refuse options RunConfig refuses before writing them down
        saved = save_config(opts["save_config"], ctx, opts)
        obj.err.print(f"Options saved to {escape(str(saved))}: calipers run --config {saved}")

    executor = _executor(opts)
    with Store.open(obj.store_url) as store:
        progress = BarProgress(obj.err, enabled=sys.stderr.isatty() or not opts["as_json"])
        try:
            with progress:
                if opts["resume"]:
                    result = asyncio.run(
                        aresume(
                            opts["resume"],
                            store,
                            progress=progress,
                            deadline_s=opts["deadline"],
                            model_options=_request_options(opts),
                            executor=executor,
                        )
                    )
                else:
                    result = asyncio.run(
                        arun(
                            _config(opts),
                            store,
                            progress=progress,
                            deadline_s=opts["deadline"],
                            executor=executor,
                        )
                    )
        except DeadlineError as e:
            obj.err.print(f"[yellow]Deadline reached.[/] {escape(e.message)}")
            obj.err.print(f"[dim]{escape(e.hint or '')}[/]")
            sys.exit(EXIT_INCOMPLETE)
        except KeyboardInterrupt:
            rid = progress.run_id or opts["resume"] or "RUN"
            obj.err.print(
                f"[yellow]Interrupted.[/] Finished samples are stored; "
                f"resume with: calipers run --resume {rid}"
            )
            sys.exit(EXIT_INTERRUPTED)
        reports = None
        if not opts["no_report"]:
            from calipers.analysis import StoredRun
            from calipers.reports import write_report

            stored = store.get_run(result.run_id)
            reports = write_report(
                stored,
                StoredRun(stored, store=store),  # reads only the records it lists
                _report_dir(opts["report_dir"]),
            )
        if opts["as_json"]:
            click.echo(_as_json(result, store, reports))
        else:
            _print_result(obj, result, store, reports)
    if result.failed_tasks:
        _fail_tasks(obj, result)


def _fail_tasks(obj: Context, result: RunResult) -> None:
    """A task none of whose samples succeeded measured nothing: say why, exit non-zero."""
    for task in result.failed_tasks:
        top = result.summary.tasks[task].top_error
        assert top is not None  # every sample failed, so one error is the commonest
        obj.err.print(
            f"[bold red]Every sample of {escape(task)} failed[/] (commonest error, "
            f"{top.count}×: {escape(top.message)}); it has no score. Fix the "
            "cause and run again."
        )
    sys.exit(EXIT_RUN_FAILED)


def _print_result(
    obj: Context, result: RunResult, store: Store, reports: tuple[Path, Path] | None
) -> None:
    card = result.methodology
    title = f"{card.model.name} · run {result.run_id}"
    judged = judge_scored(t.scorers for t in card.tasks.values())  # else no second read
    marks = judge_marks(store.get_run(result.run_id), store.list_runs) if judged else {}
    obj.out.print(summary_table(result.summary, title=title, marks=marks))
    errors = sum(ts.n_errors for ts in result.summary.tasks.values())
    if errors:
        obj.out.print(
            f"[red]{errors} sample(s) failed[/] and are excluded from the scores "
            f"(not counted as wrong): calipers show {result.run_id}"
        )
    obj.out.print(
        f"Stored in {store.url} as run [bold]{result.run_id}[/] ({result.elapsed_s:.1f}s)."
    )
    if reports:
        obj.out.print(f"Report: {reports[0]}  (Markdown: {reports[1]})")
