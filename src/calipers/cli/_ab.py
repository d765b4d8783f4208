"""``calipers ab``: promote, keep watching or roll back the gateway's candidate.

Exit codes as ``calipers gate``: 0 promote, 1 roll back, 2 keep watching; an error (usage,
configuration, no traffic) exits 3, a bug 4: an error never reads as a decision.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import EXIT_INTERRUPTED, Context, cli, store_option
from calipers.cli._gate import EXIT_GATE_ERROR, EXIT_GATE_INTERNAL, GateCommand
from calipers.errors import CalipersError, ConfigError

if TYPE_CHECKING:
    from calipers.monitor import ABResult

__all__ = ["ab_cmd", "parse_time"]

_MARK = {
    "safe": "[green]safe[/]",
    "failing": "[bold red]FAILING[/]",
    "open": "[yellow]open[/]",
    "moved": "[bold yellow]moved[/]",
    "skipped": "[dim]skipped[/]",
    "better": "[green]better[/]",
    "worse": "[bold red]worse[/]",
}
_ACTION = {
    "promote": "[bold green]PROMOTE[/]",
    "roll_back": "[bold red]ROLL BACK[/]",
    "keep_watching": "[bold yellow]KEEP WATCHING[/]",
}


def parse_time(value: str, *, now: datetime | None = None) -> datetime:
    """An ISO time (naive = UTC), ``now``, or a span back from now: ``90m``, ``24h``, ``7d``."""
    from calipers.monitor import parse_when

    return parse_when(value, now or datetime.now(UTC))


def _prices(values: tuple[str, ...]) -> dict[str, dict[str, float]]:
    from calipers.monitor import arm_prices

    return arm_prices(values)


def _tolerances(values: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for v in values:
        name, _, tol = v.partition("=")
        try:
            out[name.strip()] = float(tol)
        except ValueError:
            raise ConfigError(
                f"Cannot read --guardrail {v!r}.",
                hint="Write NAME=TOLERANCE, e.g. --guardrail error_rate=0.02 "
                "--guardrail latency_p50=0.2.",
            ) from None
    return out


def _config(opts: dict[str, Any]) -> Any:
    from calipers.monitor import ABConfig

    try:
        return ABConfig(
            mode=opts["mode"],
            since=parse_time(opts["since"]) if opts["since"] else None,
            until=parse_time(opts["until"]) if opts["until"] else None,
            scorers=tuple(opts["scorers"]),
            judge_model=opts["judge_model"],
            # --no-score without a judge model: the specs are read as stored keys
            keys=tuple(opts["scorers"]) if opts["no_score"] and not opts["judge_model"] else None,
            sample=opts["sample"],
            seed=opts["seed"],
            alpha=opts["alpha"],
            min_improvement=opts["min_improvement"],
            max_n=opts["max_n"],
            prices=_prices(opts["prices"]),
            tolerances=_tolerances(opts["guardrails"]),
            concurrency=opts["concurrency"],
            score=not opts["no_score"],
            retry_failed=opts["retry_failed"],
        )
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"Invalid ab option: {e}") from None


def _table(result: ABResult) -> Table:
    t = Table(
        header_style="bold",
        title_justify="left",
        title=(
            f"candidate − baseline, always-valid {100 * (1 - result.alpha):.4g}% confidence "
            "sequences (alpha split: see docs/ab.md)"
        ),
    )
    for col in (
        "metric",
        "role",
        "n",
        "effect [confidence sequence]",
        "p (always valid)",
        "tolerance",
        "status",
    ):
        t.add_column(escape(col), justify="right" if col in ("n", "p (always valid)") else "left")
    rows = [("primary", result.primary)] if result.primary else []
    rows += [("guardrail", g) for g in result.guardrails]
    rows += [("secondary", s) for s in result.secondary]
    for role, r in rows:
        assert r is not None
        p = "" if r.skipped else f"{r.p_value:.3g}"
        t.add_row(
            escape(r.name) + (" [yellow](uncalibrated)[/]" if r.uncalibrated else ""),
            role,
            f"{r.effect.n:,}" if not r.skipped else "",
            r.effect_text(),
            p,
            escape(r.tolerance_text or ""),
            _MARK.get(r.status, r.status),
        )
    return t


def _print(obj: Context, result: ABResult) -> None:
    c = result.counts
    first = result.first_ts.isoformat(timespec="minutes") if result.first_ts else "?"
    last = result.last_ts.isoformat(timespec="minutes") if result.last_ts else "?"
    left = ", ".join(
        f"{v} {k.replace('_', ' ')}"
        for k, v in c.items()
        if k in ("other_mode", "not_mirrored", "no_user_key") and v
    )
    obj.out.print(
        f"mode {result.mode}: {c['used']:,} requests from {first} to {last} "
        f"(baseline {c['baseline']:,}, candidate {c['candidate']:,})"
        + (
            f"; {c['breaker_open']:,} candidate calls not sent, breaker open (counted as failures)"
            if c.get("breaker_open")
            else ""
        )
        + (f"; left out: {left}" if left else "")
    )
    for s in result.scoring:
        if s.scored or s.failed:
            note = f", {s.failed} could not be scored: {s.first_error}" if s.failed else ""
            obj.out.print(
                f"scored {escape(s.key)}: {s.scored} new, {s.reused} reused{escape(note)}"
            )
    obj.out.print(_table(result))
    if any(r.uncalibrated for r in [result.primary, *result.guardrails, *result.secondary] if r):
        obj.out.print(
            "[yellow]uncalibrated[/]: a model judge gave the llm_judge scores, and nobody has "
            "measured its agreement with people on this traffic (calipers review create "
            "--from traffic, then calipers review report; see docs/review.md)."
        )
    for r in [result.primary, *result.guardrails]:
        if r is not None and r.skipped:
            obj.out.print(f"[dim]{escape(r.name)} skipped: {escape(r.skipped)}[/]")
    obj.out.print(f"{_ACTION[result.action]} (exit {result.exit_code})")
    for reason in result.decision.reasons:
        obj.out.print(f"  - {escape(reason)}")


def _evaluate(obj: Context, opts: dict[str, Any]) -> ABResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from calipers.monitor import run_ab
    from calipers.store import Store

    cfg = _config(opts)
    bar = Progress(
        TextColumn("[bold]scoring {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=obj.err,
        disable=not sys.stderr.isatty() or opts["as_json"],
    )
    ids: dict[str, Any] = {}

    def progress(key: str, done: int, total: int) -> None:
        if key not in ids:
            ids[key] = bar.add_task(key, total=total)
        bar.update(ids[key], completed=done)

    with Store.open(obj.store_url) as store, bar:
        return asyncio.run(run_ab(store, cfg, progress=progress))


_SIDE = {"a": 0.0, "b": 1.0, "tie": 0.5}  # a pairwise campaign from traffic: a = the baseline


def _judge_corrected(obj: Context, opts: dict[str, Any]) -> Any:
    """The candidate's win rate corrected by a pairwise review campaign of the same traffic
    (``--judge-corrected NAME``), or None."""
    name = opts["judge_corrected"]
    if not name:
        return None
    from calipers.analysis import ab_judge_corrected
    from calipers.review import final_labels, parse_questions
    from calipers.store import Store

    cfg = _config(opts)
    with Store.open(obj.store_url) as store:
        camp = store.get_campaign(name)
        pref = parse_questions({"questions": camp.questions}).preference()
        items = [i for i in store.get_review_items(name) if not i.is_control]
        odd = [i.item_key for i in items if (i.source.get("a") or {}).get("role") != "baseline"]
        if camp.kind != "pairwise" or pref is None or odd:
            why = (
                "is not pairwise"
                if camp.kind != "pairwise"
                else f"holds items that are not traffic pairs ({odd[0]})"
                if odd
                else "has no preference question"
            )
            raise ConfigError(
                f"--judge-corrected needs a pairwise campaign of gateway traffic; {name!r} {why}.",
                hint="calipers review create NAME --from traffic --kind pairwise --since ...",
            )
        finals = final_labels(
            items, store.get_judgments(name), store.get_adjudications(name), pref.id
        )
        scores = store.get_online_scores(
            scorer="llm_judge_pairwise", since=cfg.since, until=cfg.until
        )
    human = {f.item_key: _SIDE[f.value] for f in finals if f.value in _SIDE}
    judge = {s.pair_id: s.value for s in scores if s.role == "candidate"}
    if not judge:
        raise ConfigError(
            "--judge-corrected: no llm_judge_pairwise scores are stored for this window.",
            hint="Score the shadow traffic first: calipers ab --scorer llm_judge_pairwise "
            "--judge-model MODEL.",
        )
    return ab_judge_corrected(judge, human, labels=f"campaign {name} ({pref.id})")


def _print_corrected(obj: Context, rep: Any) -> None:
    t = Table(
        header_style="bold",
        title_justify="left",
        title="Candidate's win rate over the baseline, corrected by people (PPI++)",
    )
    for col in ("estimate", "value [95% interval]", "human comparisons", "judge-only requests"):
        t.add_column(col, justify="left" if col == "estimate" else "right")
    n, big_n = rep.n, rep.n + rep.n_unlabelled
    t.add_row("pairwise judge only", rep.judge_only.format(), "0", f"{big_n:,}")
    t.add_row("people only", rep.human_only.format(), f"{n:,}", "0")
    t.add_row("judge-corrected", rep.corrected.format(), f"{n:,}", f"{rep.n_unlabelled:,}")
    obj.out.print(t)
    ratio = (
        ""
        if rep.width_ratio is None
        else f"; width ratio (corrected / people) {rep.width_ratio:.2f}"
    )
    obj.out.print(f"Labels: {escape(rep.labels)}{ratio}")
    for c in rep.caveats:
        obj.out.print(f"[dim]caveat: {escape(c)}[/]")


def _fail(obj: Context, message: str, hint: str | None, code: int) -> None:
    if obj.debug:
        obj.err.print(traceback.format_exc(), markup=False)
    obj.err.print(f"[bold red]Error:[/] {escape(message)}")
    if hint:
        obj.err.print(f"[dim]{escape(hint)}[/]")
    sys.exit(code)


@cli.command("ab", cls=GateCommand)
@click.option(
    "--since",
    metavar="TIME",
    help="Start of the window: ISO time (UTC unless an "
    "offset is given) or a span back from now (24h, 7d). For hourly looks, give the "
    "experiment's start time, not a sliding span.",
)
@click.option("--until", metavar="TIME", help="End of the window (exclusive). [default: now]")
@click.option(
    "--mode",
    type=click.Choice(["shadow", "canary"]),
    help="Which traffic to analyse. [default: the logged one; a mix is refused]",
)
@click.option(
    "--scorer",
    "scorers",
    multiple=True,
    metavar="SPEC",
    help="Quality scorer; repeatable; the first is the primary metric. refusal, "
    "llm_judge:helpfulness (also correctness, conciseness, safety, @RUBRIC_FILE), "
    "llm_judge_pairwise (shadow), feedback (stored by others), "
    "NAME:{JSON args}.",
)
@click.option("--judge-model", metavar="SPEC", help="Model for llm_judge scorers.")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    metavar="N",
    help="Score a seeded random sample of N requests with --scorer. [default: all]",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample.")
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Chance of any wrong call at any number of looks (split: half primary, "
    "half over the guardrails).",
)
@click.option(
    "--min-improvement",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Improvement of the primary metric needed to promote.",
)
@click.option(
    "--max-n",
    type=click.IntRange(min=1),
    metavar="N",
    help="Traffic budget: at N scored requests, an improvement not shown is a roll "
    "back; the tests are tuned to be sharpest there.",
)
@click.option(
    "--price",
    "prices",
    multiple=True,
    metavar="[ARM=]IN/OUT",
    help="USD per million input,output tokens, e.g. baseline=0.15,0.60; both arms "
    "needed for the cost guardrail.",
)
@click.option(
    "--guardrail",
    "guardrails",
    multiple=True,
    metavar="NAME=TOL",
    help="Tolerance of a guardrail: error_rate=0.01, refusal_rate=0.02, "
    "latency_p95=0.03 (rates), latency_p50=0.10, cost=0.10 (relative).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Parallel scorer calls.",
)
@click.option("--no-score", is_flag=True, help="Analyse stored scores only; score nothing.")
@click.option("--retry-failed", is_flag=True, help="Score again answers stored as NaN.")
@click.option(
    "--judge-corrected",
    metavar="CAMPAIGN",
    help="A pairwise review campaign of this traffic: also print the candidate's win rate "
    "corrected by those human comparisons (PPI++; needs llm_judge_pairwise scores).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@store_option
@click.pass_obj
def ab_cmd(obj: Context, /, **opts: Any) -> None:
    """Promote, keep watching or roll back the candidate, from the gateway's logged traffic.

    Scores what is not yet scored (stored: an hourly look never pays twice), then tests with
    always-valid confidence sequences: shadow traffic on the same requests, canary traffic
    between the user groups. Exit 0 promote, 1 roll back, 2 keep watching, 3 error.

    \b
    Examples:
      calipers ab --since 2026-11-01T08:00 --price baseline=0.15/0.6 --price candidate=0.3/1.2
      calipers ab --scorer llm_judge:helpfulness --judge-model openai:gpt-4o-mini --sample 500
    """
    try:
        result = _evaluate(obj, opts)
        corrected = _judge_corrected(obj, opts)
    except CalipersError as e:
        _fail(obj, e.message, e.hint, EXIT_GATE_ERROR)
        return
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:
        _fail(
            obj,
            f"Internal error: {type(e).__name__}: {e}",
            "This is a bug in calipers; run with --debug for the traceback.",
            EXIT_GATE_INTERNAL,
        )
        return
    if opts["as_json"]:
        data = result.to_dict()
        if corrected is not None:
            data["judge_corrected"] = corrected.model_dump(mode="json")
        obj.print_json(data)
    else:
        _print(obj, result)
        if corrected is not None:
            _print_corrected(obj, corrected)
    sys.exit(result.exit_code)
