"""``calipers gate``: a regression gate for CI (exit 0 pass, 1 regression, 2 inconclusive).

The verdicts are the gate's own exit codes, so an error here never exits 1 or 2: a usage,
configuration, data or model error exits 3 (nothing was decided), a bug exits 4.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from calipers._util.home import make_folder
from calipers.cli._app import EXIT_INTERRUPTED, Context, cli, store_option
from calipers.cli._run_options import run_fields, run_options
from calipers.errors import EXIT_DECISION_ERROR, EXIT_DECISION_INTERNAL, CalipersError
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis import GateResult, GateRow

__all__ = ["EXIT_GATE_ERROR", "EXIT_GATE_INTERNAL", "gate_cmd", "junit_xml", "markdown_summary"]

EXIT_GATE_ERROR = EXIT_DECISION_ERROR  # errors.py: the one exit-code table
EXIT_GATE_INTERNAL = EXIT_DECISION_INTERNAL
_MARK = {
    "pass": "[green]PASS[/]",
    "fail": "[bold red]FAIL[/]",
    "inconclusive": "[yellow]INCONCLUSIVE[/]",
}
_BULLET = {"pass": "[green]●[/]", "fail": "[red]✗[/]", "inconclusive": "[yellow]?[/]"}


class _GateUsageError(click.UsageError):
    exit_code = EXIT_GATE_ERROR


class GateCommand(click.Command):
    """Usage errors (a bad option) exit 3, not click's 2, which means "inconclusive" here."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise _GateUsageError(e.format_message(), e.ctx) from None


# -- outputs for CI ---------------------------------------------------------------------------


def _num(est: Estimate, points: bool, signed: bool = False) -> str:
    if est.is_empty:
        return "n/a"
    k, f = (100.0, ".1f") if points else (1.0, ".4g")
    s = "+" if signed else ""
    return f"{est.value * k:{s}{f}} [{est.low * k:{s}{f}}, {est.high * k:{s}{f}}]"


def _drop(r: GateRow) -> str:
    if r.metric.startswith("error:"):  # an error type's rate may grow by at most this
        return f"+{100 * r.max_drop:.1f} points"
    return f"-{100 * r.max_drop:.1f} points" if r.points else f"-{r.max_drop:g}"


def _needed(r: GateRow) -> str:
    if r.verdict != "inconclusive":
        return ""
    return f"~{r.items_needed:,}" if r.items_needed else "n/a"


def junit_xml(
    result: GateResult | None,
    *,
    error: str | None = None,
    seconds: float = 0.0,
    name: str = "calipers gate",
) -> str:
    """One ``testsuite``, one ``testcase`` per task/metric: ``failure`` for a regression,
    ``skipped`` (with the items needed) for inconclusive; an error is one ``error`` case."""
    cases: list[ET.Element] = []
    rows = result.rows if result else []
    for r in rows:
        case = ET.Element(
            "testcase", classname="calipers.gate", name=f"{r.task}/{r.metric}", time="0"
        )
        if r.verdict == "fail":
            ET.SubElement(
                case, "failure", message=r.explanation, type="regression"
            ).text = r.explanation
        elif r.verdict == "inconclusive":  # GitLab shows the text, Jenkins the message
            ET.SubElement(case, "skipped", message=r.explanation).text = r.explanation
        ET.SubElement(case, "system-out").text = r.explanation
        cases.append(case)
    if result is not None and result.refused:
        case = ET.Element("testcase", classname="calipers.gate", name="suite size", time="0")
        ET.SubElement(case, "skipped", message=result.summary).text = result.summary
        cases.append(case)
    if error is not None:
        case = ET.Element("testcase", classname="calipers.gate", name="gate", time="0")
        ET.SubElement(case, "error", message=error, type="error").text = error
        cases.append(case)
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(c.find("failure") is not None for c in cases)),
        "errors": str(sum(c.find("error") is not None for c in cases)),
        "skipped": str(sum(c.find("skipped") is not None for c in cases)),
        "time": f"{seconds:.3f}",
    }
    root = ET.Element("testsuites", {"name": name, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts})
    if result is not None:
        props = ET.SubElement(suite, "properties")
        for k, v in _properties(result).items():
            ET.SubElement(props, "property", name=k, value=v)
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _properties(result: GateResult) -> dict[str, str]:
    props = {
        "verdict": result.verdict,
        "max_drop": f"{result.max_drop:g}",
        "alpha": f"{result.alpha:g}",
        "confidence": f"{result.confidence:.6g}",
        "correction": result.correction,
    }
    for role, used in (("baseline", result.baseline), ("candidate", result.candidate)):
        if used is not None:
            props.update(
                {
                    f"{role}_run": used.run_id,
                    f"{role}_model": used.model,
                    f"{role}_source": used.source,
                }
            )
    return props


def markdown_summary(result: GateResult | None, *, error: str | None = None) -> str:
    """A Markdown summary (for ``$GITHUB_STEP_SUMMARY`` or a merge-request comment)."""
    if result is None:
        return f"## calipers gate: ERROR\n\n{error}\n\nNo verdict: nothing was decided.\n"
    lines = [f"## calipers gate: {result.verdict.upper()}", "", result.summary, ""]
    for role, used in (("Baseline", result.baseline), ("Candidate", result.candidate)):
        if used is not None:
            how = {"given": "stored run", "reused": "reused stored run", "ran": "run now"}
            lines.append(f"- {role}: `{used.model}` ({how[used.source]} `{used.run_id}`)")
    if result.size is not None and result.size.message:
        lines.append(f"- Size check: {result.size.message}")
    lines += [
        f"- Allowed drop: {result.max_drop:g} (score units; 0.02 = 2 points); "
        f"{100 * result.confidence:.4g}% intervals (alpha {result.alpha:g}, Bonferroni "
        f"over {result.comparisons})",
        "",
    ]
    if result.rows:
        lines += [
            "| task | metric | n | baseline | candidate | candidate − baseline | "
            "allowed drop | verdict | items needed |",
            "|" + "---|" * 9,
        ]
    for r in result.rows:
        lines.append(
            f"| {r.task} | {r.metric} | {r.n:,} | {_num(r.baseline, r.points)} | "
            f"{_num(r.candidate, r.points)} | {_num(r.diff, r.points, True)} | {_drop(r)} | "
            f"{r.verdict} | {_needed(r)} |"
        )
    lines += ["", *[f"- **{r.task}/{r.metric}**: {r.explanation}" for r in result.rows]]
    return "\n".join(lines).rstrip() + "\n"


def _write(path: str | None, text: str) -> None:
    if path:
        p = Path(path)
        make_folder(p.parent, f"the folder of {p.name}")
        p.write_text(text, encoding="utf-8")


# -- terminal ------------------------------------------------------------------------------------


def _table(result: GateResult) -> Table:
    over = f" (Bonferroni over {result.comparisons})" if result.comparisons > 1 else ""
    t = Table(
        header_style="bold",
        title_justify="left",
        title=(f"candidate − baseline, {100 * result.confidence:.4g}% intervals{over}"),
    )
    for col in (
        "task",
        "metric",
        "n",
        "baseline",
        "candidate",
        "diff",
        "allowed drop",
        "verdict",
        "items needed",
    ):
        t.add_column(col, justify="left" if col in ("task", "metric", "verdict") else "right")
    for r in result.rows:
        t.add_row(
            r.task,
            r.metric,
            f"{r.n:,}",
            _num(r.baseline, r.points),
            _num(r.candidate, r.points),
            _num(r.diff, r.points, True),
            _drop(r),
            _MARK[r.verdict],
            _needed(r),
        )
    return t


def _print(obj: Context, result: GateResult) -> None:
    how = {"given": "stored run", "reused": "reused run", "ran": "new run"}
    for role, used in (("baseline", result.baseline), ("candidate", result.candidate)):
        if used is not None:
            obj.out.print(f"{role}: {escape(used.model)} ({how[used.source]} {used.run_id})")
    if result.rows:
        obj.out.print(_table(result))
    for r in result.rows:
        excluded = sum(r.excluded.values())
        note = f" [dim]({excluded} unpaired or errored items excluded)[/]" if excluded else ""
        obj.out.print(
            f"{_BULLET[r.verdict]} {escape(r.task)}/{escape(r.metric)}: "
            f"{escape(r.explanation)}{note}"
        )
    colour = {"pass": "green", "fail": "red", "inconclusive": "yellow"}[result.verdict]
    obj.out.print(f"[bold {colour}]{escape(result.summary)}[/] (exit {result.exit_code})")


# -- the command --------------------------------------------------------------------------------


def _growth(rules: tuple[str, ...]) -> dict[str, float]:
    """``("calculation_slip=0.02",)`` -> ``{"calculation_slip": 0.02}``."""
    from calipers.errors import ConfigError

    out: dict[str, float] = {}
    for rule in rules:
        name, _, value = rule.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(
                f"--max-error-growth {rule!r} is not TYPE=POINTS.",
                hint="e.g. --max-error-growth calculation_slip=0.02 (2 points)",
            ) from None
        if not name.strip() or not out[name.strip()] > 0:
            raise ConfigError(f"--max-error-growth {rule!r}: give a type and a growth > 0.")
    return out


def _config(opts: dict[str, Any]) -> Any:
    from calipers.analysis import GateConfig

    run = run_fields(opts)  # only the options given: the rest come from a stored run
    metrics = tuple(opts["metrics"]) or ("primary",)
    try:
        return GateConfig(
            baseline=opts["baseline"],
            candidate=opts["candidate"],
            suite=tuple(opts["suite"]),
            max_drop=opts["max_drop"],
            metrics=metrics,
            alpha=opts["alpha"],
            power=opts["power"],
            assumed_discordance=opts["assumed_discordance"],
            strict_size=opts["strict_size"],
            run_options=run,
            baseline_base_url=opts["baseline_base_url"],
            max_error_growth=_growth(opts["error_growth"]),
        )
    except ValueError as e:
        from calipers.errors import ConfigError

        raise ConfigError(f"Invalid gate option: {e}") from None


def _evaluate(obj: Context, opts: dict[str, Any]) -> GateResult:
    from calipers.analysis import prepare_gate, run_gate
    from calipers.cli._progress import BarProgress
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        gp = prepare_gate(_config(opts), store)
        if gp.size.message:
            obj.err.print(
                f"[yellow]size check:[/] {escape(gp.size.message)}"
                + (" — refused (--strict-size)" if gp.refused else "")
            )
        progress = BarProgress(obj.err, enabled=sys.stderr.isatty() and not opts["as_json"])
        with progress:
            return asyncio.run(run_gate(gp, store, progress=progress))


def _fail(
    obj: Context, opts: dict[str, Any], message: str, hint: str | None, code: int, started: float
) -> None:
    if obj.debug:
        obj.err.print(traceback.format_exc(), markup=False)
    obj.err.print(f"[bold red]Error:[/] {escape(message)}")
    if hint:
        obj.err.print(f"[dim]{escape(hint)}[/]")
    _write(opts["junit"], junit_xml(None, error=message, seconds=time.perf_counter() - started))
    _write(opts["markdown"], markdown_summary(None, error=message))
    sys.exit(code)


@cli.command("gate", cls=GateCommand)
@click.option(
    "-s",
    "--suite",
    multiple=True,
    metavar="NAME|PATH",
    help="Task, suite (e.g. dynamic, suite:NAME) or task file; repeatable. Needed "
    "unless a side is a stored run (then its tasks and settings are used).",
)
@click.option(
    "--baseline",
    required=True,
    metavar="RUN|MODEL",
    help="A stored run (id, prefix or latest) or a model spec (its latest comparable "
    "run is reused, else it is run).",
)
@click.option(
    "--candidate",
    required=True,
    metavar="MODEL|RUN",
    help="A model spec (run now) or a stored run.",
)
@click.option(
    "--max-drop",
    type=click.FloatRange(0, min_open=True),
    default=0.02,
    show_default=True,
    help="Allowed drop in score units (0.02 = 2 points).",
)
@click.option(
    "--max-error-growth",
    "error_growth",
    multiple=True,
    metavar="TYPE=POINTS",
    help="An error type's rate may not grow by more than this (calculation_slip=0.02: 2 "
    "points); repeatable. Types: calipers errors RUN.",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="Metric to gate on; repeatable; 'all' for every metric. [default: primary]",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Family-wise error rate (Bonferroni).",
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="Power behind 'items needed'.",
)
@click.option(
    "--assumed-discordance",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.25,
    show_default=True,
    help="Share of items the models are assumed to disagree on, for the size check.",
)
@click.option(
    "--strict-size",
    is_flag=True,
    help="Exit 2 before running anything if the suite is too small for --max-drop.",
)
@run_options(
    "limit",
    "seed",
    "few_shot",
    "formulation",
    "system_prompt",
    "data_dir",
    "base_url",
    overrides=True,
    help_for={"base_url": "OpenAI-compatible server for the models"},
)
@click.option("--baseline-base-url", metavar="URL", help="Server of the baseline, if another.")
@run_options(
    "api_key_env", "concurrency", "max_tokens", "temperature", "n_ctx", "cache", overrides=True
)
@click.option("--junit", metavar="FILE", help="Write JUnit XML here (also on failure).")
@click.option("--markdown", metavar="FILE", help="Write a Markdown summary here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@store_option
@click.pass_obj
def gate_cmd(obj: Context, /, **opts: Any) -> None:
    """Fail CI when the candidate is worse than the baseline by more than --max-drop.

    Runs what is missing, pairs the two runs item by item and tests non-inferiority per task
    and metric: PASS (exit 0) when the whole interval of candidate − baseline is above
    −max-drop, FAIL (exit 1) when it is all below, INCONCLUSIVE (exit 2) otherwise, with the
    items needed to decide. Errors exit 3 (4 for a bug). A run option left out (--limit to
    --cache) takes a stored side's setting, else the default shown.

    \b
    Examples:
      calipers gate -s dyn_arithmetic -n 400 --baseline fake:echo --candidate fake:echo,name=new
      calipers gate -s my_suite.yaml --baseline 20261130-0545 --candidate openai:new \\
          --base-url http://127.0.0.1:8080/v1 --junit gate.xml --markdown gate.md
      calipers gate --baseline RUN_A --candidate RUN_B --max-error-growth calculation_slip=0.02
    """
    started = time.perf_counter()
    try:
        result = _evaluate(obj, opts)
    except CalipersError as e:
        _fail(obj, opts, e.message, e.hint, EXIT_GATE_ERROR, started)
        return
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:
        _fail(
            obj,
            opts,
            f"Internal error: {type(e).__name__}: {e}",
            "This is a bug in calipers; run with --debug for the traceback.",
            EXIT_GATE_INTERNAL,
            started,
        )
        return
    _write(opts["junit"], junit_xml(result, seconds=time.perf_counter() - started))
    _write(opts["markdown"], markdown_summary(result))
    if opts["as_json"]:
        obj.print_json(result.model_dump(mode="json"))
    else:
        _print(obj, result)
    sys.exit(result.exit_code)
