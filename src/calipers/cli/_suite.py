"""``calipers suite``: build evaluation suites from production logs (import, build, show,
list). The work is done in :mod:`calipers.suites`; this module parses options and prints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import click

from calipers.cli._app import Context, cli
from calipers.errors import ConfigError

if TYPE_CHECKING:
    from calipers.suites import (
        Backend,
        ImportReport,
        LogFormat,
        Manifest,
        References,
        SizeRationale,
    )

__all__ = ["suite_group"]

_LISTED = 5  # locations printed per reason (the JSON and the stored report list more)


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"Bad {what} {v!r}: expected KEY=VALUE.")
        out[key.strip()] = val
    return out


@cli.group("suite")
def suite_group() -> None:
    """Evaluation suites built from your own production logs.

    \b
    Import logs (redacted before anything is stored), then build a versioned suite:
      calipers suite import logs.jsonl --name support --field input=question
      calipers suite build support --delta 0.05 --baseline-acc 0.7
      calipers suite show support
      calipers run -m openai:my-model -t suite:support
    """


@suite_group.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--name", required=True, help="Suite to import into (created if new).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv", "openai", "otel"]),
    help="Log format [default: detected from the extension and the first record].",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="KEY=NAME",
    help="Field mapping for jsonl/csv: input, output, id, conversation, accepted, "
    "system; dotted paths reach nested fields. Repeatable.",
)
@click.option(
    "--redact-pattern",
    "patterns",
    multiple=True,
    metavar="KIND=REGEX",
    help="Extra redaction: matches become [KIND]. Repeatable.",
)
@click.option(
    "--redact-config",
    type=click.Path(dir_okay=False, exists=True),
    help="YAML with `patterns: {KIND: REGEX}` and `disable: [PHONE, ...]`.",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=32_000,
    show_default=True,
    help="Longest message kept; longer ones are truncated (and counted).",
)
@click.option("--skip-long", is_flag=True, help="Skip records with a longer message instead.")
@click.option("--replace", is_flag=True, help="Import a file already in the suite again.")
@click.option("--json", "as_json", is_flag=True, help="Print the import reports as JSON.")
@click.pass_obj
def import_cmd(
    obj: Context,
    /,
    files: tuple[str, ...],
    name: str,
    fmt: str | None,
    fields: tuple[str, ...],
    patterns: tuple[str, ...],
    redact_config: str | None,
    max_chars: int,
    skip_long: bool,
    replace: bool,
    as_json: bool,
) -> None:
    """Import log FILES into a suite's pool: parse, redact, account for every record.

    Formats: JSON Lines or CSV with a field mapping; OpenAI chat logs (request.messages and
    response.choices); OpenTelemetry GenAI spans exported as OTLP JSON. E-mail addresses,
    phone numbers, card numbers, API keys and tokens are replaced by [EMAIL], [PHONE], ...
    before anything is written; the report counts them, never shows them. Broken lines,
    missing fields and undecodable records are skipped and reported with their line.

    \b
    Examples:
      calipers suite import chats.jsonl --name support
      calipers suite import export.csv --name support --field input=question \\
          --field output=answer --field id=req_id --field accepted=thumbs_up
      calipers suite import traces.json --name agent --format otel
      calipers suite import logs.jsonl --name support --redact-pattern ORDER=ORD-\\d{6}
    """
    from pydantic import ValidationError

    from calipers.suites import FieldMapping, RedactConfig, Redactor, import_logs

    try:
        mapping = FieldMapping(**_pairs(fields, "--field"))
    except ValidationError as e:
        raise ConfigError(
            f"Bad --field: {e.errors()[0]['msg']}.",
            hint="Keys: input, output, id, conversation, accepted, system.",
        ) from None
    redactor = Redactor.create(
        RedactConfig.load(redact_config, _pairs(patterns, "--redact-pattern"))
    )
    reports = [
        import_logs(
            f,
            name,
            fmt=cast("LogFormat | None", fmt),
            mapping=mapping,
            redactor=redactor,
            max_chars=max_chars,
            on_long="skip" if skip_long else "truncate",
            replace=replace,
        )
        for f in files
    ]
    if as_json:
        obj.print_json([r.model_dump(mode="json") for r in reports])
        return
    for r in reports:
        _print_report(obj, r)
    obj.out.print(f"Next: calipers suite build {name}")


def _print_report(obj: Context, r: ImportReport) -> None:
    out = obj.out
    out.print(
        f"[bold]{r.file}[/] ({r.format}): {r.n_read:,} records read, "
        f"[bold]{r.n_imported:,}[/] imported, {r.n_skipped:,} skipped"
    )
    for reason, n in sorted(r.skipped.items(), key=lambda x: -x[1]):
        where = [s.where for s in r.skips if s.reason == reason][:_LISTED]
        more = " ..." if n > len(where) else ""
        out.print(
            f"  [yellow]skipped {n:,}[/]: {reason} — {', '.join(where)}{more}",
            markup=True,
            highlight=False,
        )
    if r.n_truncated:
        out.print(
            f"  truncated {r.n_truncated:,} message(s) over the size limit: "
            f"{', '.join(r.truncated_at[:_LISTED])}{' ...' if r.n_truncated > 5 else ''}"
        )
    if r.redactions:
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(r.redactions.items()))
        out.print(
            f"  redacted in {r.n_redacted_records:,} record(s): {kinds} (originals not stored)"
        )
    for note in r.notes:
        out.print(f"  [dim]note:[/] {note}")


def _size(
    delta: float | None,
    size: int | None,
    baseline_acc: float | None,
    correlation: float | None,
    alpha: float,
    power: float,
) -> Any:
    from calipers.suites import SizeRationale

    if delta is not None and size is not None:
        raise ConfigError("Give --size or --delta, not both.")
    if size is not None:
        return SizeRationale(method="size", requested=size, available=0, chosen=0)
    if delta is None:
        return None
    from calipers.analysis import plan_size

    p = plan_size(
        delta=delta, baseline_acc=baseline_acc, correlation=correlation, alpha=alpha, power=power
    )
    return SizeRationale(
        method="plan",
        requested=p.n_paired,
        delta=delta,
        baseline_acc=p.baseline_acc,
        correlation=p.correlation,
        alpha=alpha,
        power=power,
        available=0,
        chosen=0,
        notes=list(p.notes),
    )


@suite_group.command("build")
@click.argument("name")
@click.option("--size", type=click.IntRange(min=1), help="Items in the suite.")
@click.option(
    "--delta",
    type=float,
    help="Size the suite with `calipers plan`: the smallest accuracy difference "
    "between two models it must detect (paired, 80%% power, alpha 0.05).",
)
@click.option(
    "--baseline-acc",
    type=click.FloatRange(0, 1),
    help="Expected baseline accuracy for --delta [default: 0.5, the most items].",
)
@click.option(
    "--correlation",
    type=click.FloatRange(-1, 1),
    help="Correlation of two models' per-item scores for --delta [default: 0].",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
)
@click.option(
    "--floor",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Items kept from every cluster (all of a smaller one).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=0.8,
    show_default=True,
    help="Jaccard similarity at which two queries are near duplicates.",
)
@click.option(
    "--clusters",
    type=click.IntRange(min=1),
    help="Number of intent clusters [default: best silhouette over 2..sqrt(n/2), at most 12].",
)
@click.option(
    "--backend",
    type=click.Choice(["auto", "tfidf", "embeddings"]),
    default="auto",
    show_default=True,
    help="Clustering features: sentence embeddings when installed (auto), or TF-IDF.",
)
@click.option(
    "--references",
    type=click.Choice(["accepted", "logged", "none"]),
    default="accepted",
    show_default=True,
    help="Take the logged answer as the reference where the user accepted it, "
    "wherever one was logged (unless rejected), or never.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.pass_obj
def build_cmd(
    obj: Context,
    /,
    name: str,
    size: int | None,
    delta: float | None,
    baseline_acc: float | None,
    correlation: float | None,
    alpha: float,
    power: float,
    floor: int,
    threshold: float,
    clusters: int | None,
    backend: str,
    references: str,
    seed: int,
    as_json: bool,
) -> None:
    """Build the next version of suite NAME from its imported records: drop exact and near
    duplicates, cluster by intent, sample stratified by cluster (every cluster keeps at least
    --floor items), and store it as an immutable, content-hashed version.

    \b
    Examples:
      calipers suite build support                     # every distinct record
      calipers suite build support --size 300 --seed 1
      calipers suite build support --delta 0.05 --baseline-acc 0.7
    """
    from calipers.suites import build_suite

    rationale = _size(delta, size, baseline_acc, correlation, alpha, power)
    res = build_suite(
        name,
        size=rationale,
        floor=floor,
        threshold=threshold,
        clusters=clusters,
        backend=cast("Backend", backend),
        seed=seed,
        references=cast("References", references),
    )
    m = res.manifest
    if as_json:
        obj.print_json(
            {
                **m.model_dump(mode="json"),
                "unchanged": res.unchanged,
                "size": res.size.model_dump(mode="json"),
            }
        )
        return
    head = "[bold]unchanged[/]: same items as" if res.unchanged else "Built"
    obj.out.print(
        f"{head} suite [bold]{m.name} v{m.version}[/]: {m.n_items:,} items, "
        f"content sha256 {m.content_hash[:16]}"
    )
    _print_summary(obj, m, res.size)
    obj.out.print(f"Run it: calipers run -m MODEL -t suite:{m.name}@v{m.version}")


def _print_summary(obj: Context, m: Manifest, size: SizeRationale | None = None) -> None:
    out, d, s = obj.out, m.dedupe, size or m.size
    out.print(
        f"  traffic {d['n_traffic']:,} records: {d['n_exact']:,} exact and "
        f"{d['n_near']:,} near duplicates (Jaccard >= {d['threshold']:g}) left "
        f"{d['n_unique']:,} distinct"
    )
    c = m.clustering
    sil = "n/a" if c.get("silhouette") is None else f"{c['silhouette']:.2f}"
    out.print(
        f"  {c['k']} clusters ({c['backend']}, silhouette {sil}); "
        f"size: {s.chosen:,} of {s.available:,} ({s.method}"
        + (f", delta={s.delta:g} needs {s.requested:,}" if s.method == "plan" else "")
        + f"), floor {m.floor} per cluster"
    )
    for note in c.get("notes", []):
        out.print(f"  [dim]note:[/] {note}")
    for note in s.notes:
        colour = "red" if s.too_small and note.startswith("too small") else "yellow"
        out.print(f"  [{colour}]{'FLAGGED: ' if colour == 'red' else 'note: '}{note}[/]")
    r = m.references
    if r["n_with_reference"] == 0:
        out.print(
            "  [yellow]No references:[/] a run stores every response, but scores cannot "
            "be computed until references are added."
        )
    else:
        out.print(
            f"  references: {r['n_with_reference']:,} of {m.n_items:,} items "
            f"(policy {r['policy']}); items without one are not scored"
        )


def _est(d: dict[str, Any] | None, pct: bool = False) -> str:
    from calipers.types import Estimate

    if not d:
        return "n/a"
    # the profile is read from the suite's JSON file (written by any version)
    e = Estimate.from_dict({k: (v if v is not None else float("nan")) for k, v in d.items()})
    if e.is_empty:
        return "n/a"
    if pct:
        return e.format(percent=True)
    return f"{e.value:.0f} [{_num(e.low)}, {_num(e.high)}]"


def _num(x: float) -> str:
    return "?" if x != x else f"{x:.0f}"


def _profile_table(m: Manifest) -> Any:
    from rich.table import Table

    p = m.profile
    t = Table(
        title="How realistic: suite vs the traffic it was drawn from",
        title_justify="left",
        header_style="bold",
    )
    for col in ("", "traffic", "suite", "suite - traffic"):
        t.add_column(col, justify="right" if col else "left")
    ks = p["length_ks"]
    ks_txt = (
        "n/a" if ks.get("p_value") is None else f"KS D={ks['statistic']:.2f}, p={ks['p_value']:.3g}"
    )
    t.add_row("records", f"{p['traffic']['n']:,}", f"{p['suite']['n']:,}", "")
    t.add_row(
        "query length, median (chars)",
        _est(p["traffic"]["length_median"]),
        _est(p["suite"]["length_median"]),
        ks_txt,
    )
    t.add_row(
        "query length, 90th percentile",
        _est(p["traffic"]["length_p90"]),
        _est(p["suite"]["length_p90"]),
        "",
    )
    for key, label in (("multi_turn", "multi-turn share"), ("likely_typo", "likely-typo share")):
        t.add_row(
            label,
            _est(p["traffic"][key], True),
            _est(p["suite"][key], True),
            _est(p["difference"][key], True),
        )
    cov = p["coverage"]
    t.add_row(
        "production clusters covered", f"{cov['clusters_total']}", f"{cov['clusters_covered']}", ""
    )
    t.add_row("traffic in covered clusters", "", _est(cov["traffic_share"], True), "")
    return t


def _cluster_table(m: Manifest) -> Any:
    from rich.table import Table

    t = Table(title="Clusters (category in run reports)", title_justify="left", header_style="bold")
    for col, j in (
        ("id", "right"),
        ("name", "left"),
        ("traffic", "right"),
        ("distinct", "right"),
        ("in suite", "right"),
    ):
        t.add_column(col, justify=j)  # type: ignore[arg-type]
    for c in m.clusters:
        t.add_row(str(c.id), c.name, f"{c.traffic:,}", f"{c.unique:,}", f"{c.in_suite:,}")
    return t


@suite_group.command("show")
@click.argument("ref", metavar="NAME[@vN]")
@click.option(
    "--items",
    "n_items",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Example items to print.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.pass_obj
def show_cmd(obj: Context, /, ref: str, n_items: int, as_json: bool) -> None:
    """How a suite was made and how realistic it is: the share of production clusters it
    covers, and its length, typo and multi-turn profile next to the traffic.

    \b
    Examples:
      calipers suite show support
      calipers suite show support@v2 --items 0 --json
    """
    from calipers.suites import load_suite, parse_suite_ref

    name, version = parse_suite_ref(ref)
    m, items = load_suite(name, version)
    if as_json:
        obj.print_json(m.model_dump(mode="json"))
        return
    obj.out.print(
        f"[bold]Suite {m.name} v{m.version}[/]: {m.n_items:,} items, created "
        f"{m.created_at[:19]}, content sha256 {m.content_hash[:16]}, seed {m.seed}"
    )
    for src in m.sources:
        obj.out.print(f"  source {src['file']} ({src['format']}, sha256 {src['sha256'][:12]})")
    _print_summary(obj, m)
    obj.out.print(_profile_table(m))
    obj.out.print(f"[dim]likely typo: {m.profile.get('typo_rule', '')}[/]")
    obj.out.print(_cluster_table(m))
    for it in items[:n_items]:
        turns = (
            f" ({sum(t.role == 'user' for t in it.turns)} user turns)" if len(it.turns) > 1 else ""
        )
        q = it.query if len(it.query) <= 100 else it.query[:97] + "..."
        obj.out.print(
            f"  [dim]{it.id} [{it.cluster.name}]{turns}[/] {q}", markup=True, highlight=False
        )


@suite_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_obj
def list_cmd(obj: Context, /, as_json: bool) -> None:
    """Suites under $CALIPERS_HOME/suites: versions, items and imported records.

    \b
    Example:
      calipers suite list
    """
    from rich.table import Table

    from calipers.suites import list_suites, load_suite, suites_home

    rows: list[dict[str, Any]] = []
    for name, vers, n_pool in list_suites():
        m = load_suite(name)[0] if vers else None
        rows.append(
            {
                "name": name,
                "versions": vers,
                "pool_records": n_pool,
                "latest": None
                if m is None
                else {
                    "version": m.version,
                    "n_items": m.n_items,
                    "content_hash": m.content_hash,
                    "created_at": m.created_at,
                    "too_small": m.size.too_small,
                },
            }
        )
    if as_json:
        obj.print_json(rows)
        return
    if not rows:
        obj.out.print(
            f"No suites in {suites_home()}. Start with: calipers suite import FILE --name NAME"
        )
        return
    t = Table(header_style="bold")
    for col in ("suite", "versions", "latest items", "content", "imported records", "flag"):
        t.add_column(col)
    for r in rows:
        latest = r["latest"]
        t.add_row(
            r["name"],
            ", ".join(f"v{v}" for v in r["versions"]) or "(not built)",
            "" if latest is None else f"{latest['n_items']:,}",
            "" if latest is None else latest["content_hash"][:12],
            f"{r['pool_records']:,}",
            "too small" if latest and latest["too_small"] else "",
        )
    obj.out.print(t)
