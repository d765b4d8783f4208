"""``calipers monitor``: windowed metrics, drift alarms and uncovered traffic from the gateway's
log; ``monitor export`` sends the uncovered requests to a suite or a review queue;
``monitor simulate`` measures the false-alarm rate. The work is in :mod:`calipers.monitor`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from calipers.cli._app import DECISION_EXIT_CODES, Context, cli, store_option
from calipers.errors import EXIT_FAIL, ConfigError

if TYPE_CHECKING:
    from calipers.suites import Backend

__all__ = ["monitor_group"]

_META = "calipers.monitor.options"


def _options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options shared by ``monitor`` and ``monitor export`` (unset: None/empty, so that
    options given before the subcommand carry over to it)."""
    opts = [
        click.option(
            "--since",
            help="Start: ISO time, or back from now (24h, 7d; rounded "
            "down to a whole window) [default: the first window with traffic in the "
            "24h before --until].",
        ),
        click.option(
            "--until", help="End (exclusive): ISO time, back from now, or 'now' [default: now]."
        ),
        click.option("--window", help="Window width: 15m, 1h, 1d [default: 1h]."),
        click.option(
            "--reference",
            metavar="START..END",
            help="Reference period [default: the first windows with traffic, until "
            "they hold 100 requests and a quarter of all, leaving the last window "
            "with traffic to test].",
        ),
        click.option(
            "--alpha",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            help="False-alarm rate per window [default: 0.05].",
        ),
        click.option(
            "--price",
            "prices",
            multiple=True,
            metavar="[ARM=]IN/OUT",
            help="Dollars per million input/output tokens, for an arm (baseline, "
            "candidate) or all: --price baseline=0.15/0.60. Repeatable.",
        ),
        click.option(
            "--suite",
            "suites",
            multiple=True,
            metavar="NAME[@vN]",
            help="Suite(s) whose items count as covered. Repeatable.",
        ),
        click.option(
            "--embeddings",
            type=click.Choice(["auto", "tfidf", "sentence-transformers"]),
            help="Text vectors [default: auto = sentence-transformers if installed].",
        ),
        click.option(
            "--embedding-test",
            type=click.Choice(["mmd", "classifier"]),
            help="Embedding drift test [default: mmd].",
        ),
        click.option(
            "--latest", is_flag=True, default=None, help="Test only the latest window for drift."
        ),
        click.option(
            "--novelty",
            type=click.Choice(["latest", "all"]),
            help="Look for outliers in the latest window or all after the reference "
            "[default: latest].",
        ),
        click.option(
            "--outlier-quantile",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            help="Share of ordinary traffic flagged as outliers [default: 0.01].",
        ),
        click.option(
            "--min-cluster",
            type=click.IntRange(min=2),
            help="Outliers that make a new cluster [default: 3].",
        ),
        click.option(
            "--mode",
            "modes",
            multiple=True,
            type=click.Choice(["shadow", "canary", "off"]),
            help="Keep requests made in these gateway modes. Repeatable.",
        ),
        click.option(
            "--sample",
            type=click.IntRange(min=10),
            help="Requests per window read whole for refusals, cost, scores, drift and "
            "novelty; a busier window uses a uniform sample of this many, and says so "
            "(counts, error rates and latencies use every call) [default: 150].",
        ),
        click.option("--seed", type=int, help="Seed of the permutations [default: 0]."),
        click.option(
            "--json", "as_json", is_flag=True, default=None, help="Print the report as JSON."
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _merge(ctx: click.Context, opts: dict[str, Any]) -> dict[str, Any]:
    """Options of the subcommand, falling back to those given before it."""
    parent = ctx.meta.get(_META, {})
    return {k: (v if v not in (None, ()) else parent.get(k, v)) for k, v in opts.items()}


def _config(o: dict[str, Any]) -> Any:
    from calipers._util.clock import utc_now
    from calipers.monitor import (
        MonitorConfig,
        floor_time,
        is_relative,
        parse_duration,
        parse_prices,
        parse_range,
        parse_when,
    )

    now = utc_now()
    width = parse_duration(o["window"]) if o["window"] else timedelta(hours=1)
    since = parse_when(o["since"], now) if o["since"] else None
    if since is not None and is_relative(o["since"]):
        since = floor_time(since, width)  # --since 24h: windows start on whole windows
    fields: dict[str, Any] = {
        "since": since,
        "window": width,
        "until": parse_when(o["until"], now) if o["until"] else None,
        "reference": parse_range(o["reference"], now) if o["reference"] else None,
        "prices": parse_prices(o["prices"]),
        "suites": list(o["suites"]),
        "modes": list(o["modes"]) or None,
        "latest_only": bool(o["latest"]),
    }
    for key in (
        "alpha",
        "embeddings",
        "embedding_test",
        "novelty",
        "outlier_quantile",
        "min_cluster",
        "sample",
        "seed",
    ):
        if o[key] is not None:
            fields[key] = o[key]
    return MonitorConfig(**fields)


def _run(obj: Context, o: dict[str, Any]) -> Any:
    from calipers.monitor import monitor
    from calipers.store import Store

    config = _config(o)
    with Store.open(obj.store_url) as store:
        return monitor(store, config)


@cli.group("monitor", invoke_without_command=True)
@store_option
@_options
@click.option(
    "--fail-on-drift",
    is_flag=True,
    help="Exit 1 when any window raised a drift alarm or a fingerprint canary says the model "
    "changed, 0 otherwise (for cron and CI); an error then exits 3 and a bug 4, never 1.",
)
@click.pass_context
def monitor_group(ctx: click.Context, /, fail_on_drift: bool, **opts: Any) -> None:
    """Monitor the gateway's traffic: metrics per window, drift, uncovered requests.

    Per window and arm: volume, latency p50/p95, error and refusal rates, cost, online scores
    and feedback, each with its interval. Drift: every window after the reference period is
    tested feature by feature (prompt length, language, topic shares, embeddings, response
    length, refusals, errors, scores), Holm-corrected, so a window without drift alarms at
    most --alpha of the time. Not covered: recent prompts unlike the reference traffic and
    the --suite items (outliers) and groups of them (new clusters). Fingerprint canaries
    (the gateway's fingerprint_canary, `monitor fingerprint`): same so far, or changed.

    \b
    Examples:
      calipers monitor --since 24h --window 1h
      calipers monitor --since 7d --window 1d --reference 7d..6d --suite support
      calipers monitor --since 24h --price baseline=0.15/0.60 --price candidate=1/4 --json
      calipers monitor --since 2h --latest --fail-on-drift          # cron: exit 1 on drift
      calipers monitor export --since 24h --suite support --to-suite support
      calipers monitor simulate --reps 200 --n 100
      calipers monitor fingerprint --reference ref.json -m openai:m --base-url URL
    """
    if ctx.invoked_subcommand is not None:
        ctx.meta[_META] = opts
        return
    obj = ctx.find_object(Context)
    assert obj is not None
    ctx.meta[DECISION_EXIT_CODES] = fail_on_drift
    report = _run(obj, opts)
    if opts["as_json"]:
        obj.print_json(report.to_dict())
    else:
        from calipers.monitor import render_report

        render_report(report, obj.out)
    if fail_on_drift and (report.alarms or any(f.alarm for f in report.fingerprint)):
        sys.exit(EXIT_FAIL)


@monitor_group.command("export")
@store_option
@_options
@click.option(
    "--to-suite",
    metavar="NAME",
    help="Import the flagged requests into this suite's pool (created if new).",
)
@click.option(
    "--to-review",
    type=click.Path(dir_okay=False),
    metavar="FILE.jsonl",
    help="Append the flagged requests to this review queue.",
)
@click.option("--build", is_flag=True, help="With --to-suite: build the next suite version.")
@click.pass_context
def export_cmd(
    ctx: click.Context, /, to_suite: str | None, to_review: str | None, build: bool, **opts: Any
) -> None:
    """Export the requests `calipers monitor` flags as outliers or new clusters.

    \b
    Examples:
      calipers monitor export --since 24h --suite support --to-suite support --build
      calipers monitor export --since 24h --suite support --to-review queue.jsonl
    """
    from calipers.monitor import export_to_review, export_to_suite, render_export

    if (to_suite is None) == (to_review is None):
        raise ConfigError("Give one of --to-suite NAME or --to-review FILE.jsonl.")
    if build and to_suite is None:
        raise ConfigError("--build goes with --to-suite.")
    o = _merge(ctx, opts)
    obj = ctx.find_object(Context)
    assert obj is not None
    report = _run(obj, o)
    assert report.novelty is not None
    backend: Backend = "auto"
    if o["embeddings"] in ("tfidf", "sentence-transformers"):
        backend = "tfidf" if o["embeddings"] == "tfidf" else "embeddings"
    result = (
        export_to_suite(report.novelty, to_suite, build=build, backend=backend)
        if to_suite
        else export_to_review(report.novelty, str(to_review))
    )
    if o["as_json"]:
        obj.print_json(result.to_dict())
    else:
        render_export(result, obj.out)


_DRIFTS = ("none", "longer-prompts", "topic-mix", "new-topic", "refusals", "retriever")


@monitor_group.command("simulate")
@click.option(
    "--reps",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Independent (reference, window) pairs.",
)
@click.option(
    "--n",
    "n",
    type=click.IntRange(min=4),
    default=100,
    show_default=True,
    help="Requests per window.",
)
@click.option(
    "--drift",
    type=click.Choice(_DRIFTS),
    default="none",
    show_default=True,
    help="Drift injected into the current window (retriever: RAG traffic whose retriever's "
    "recall falls from 0.95 to 0.73, so unsupported answers go from 3.75% to 20%).",
)
@click.option(
    "--rag",
    is_flag=True,
    help="RAG traffic (passages in calipers_rag, a retriever of recall 0.95) in both windows.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option("--permutations", type=click.IntRange(min=99), default=500, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def simulate_cmd(
    obj: Context,
    /,
    reps: int,
    n: int,
    drift: str,
    rag: bool,
    alpha: float,
    permutations: int,
    seed: int,
    as_json: bool,
) -> None:
    """How often do the drift tests alarm without drift? (And with it.)

    Synthetic traffic (TF-IDF vectors) is drawn for a
    reference and a current window, every drift test runs as `calipers monitor` runs it, and
    windows with any alarm are counted, next to the rule "PSI > 0.1 on prompt length".
    """
    import numpy as np

    from calipers.monitor import (
        DriftOptions,
        RagProfile,
        TrafficProfile,
        render_simulation,
        simulate_alarms,
    )

    base = TrafficProfile(rag=RagProfile() if rag or drift == "retriever" else None)
    current = {
        "none": base,
        "longer-prompts": base.replace(mean_words=12.0),
        "topic-mix": base.replace(
            topics={"billing": 0.2, "shipping": 0.3, "account": 0.2, "product": 0.3}
        ),
        "new-topic": base.replace(topics={**base.topics, "cooking": 0.15}),
        "refusals": base.replace(refusal_rate=0.15),
        "retriever": base.replace(rag=RagProfile(recall=0.73)),
    }[drift]
    result = simulate_alarms(
        reps=reps,
        n=n,
        rng=np.random.default_rng(seed),
        reference=base,
        current=current,
        options=DriftOptions(alpha=alpha, n_permutations=permutations),
    )
    if as_json:
        obj.print_json({"drift": drift, "rag": base.rag is not None, **result.to_dict()})
    else:
        render_simulation(result, obj.out, "no drift" if drift == "none" else f"drift: {drift}")


from calipers.cli import _monitor_fingerprint  # noqa: E402, F401  (registers `monitor fingerprint`)
