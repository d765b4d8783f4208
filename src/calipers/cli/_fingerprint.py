"""``calipers fingerprint``: record a model's output distribution, check later that it is the
same (docs/fingerprint.md).

``check`` is a decision for cron and CI: exit 0 same, 1 changed, 2 inconclusive; an error
exits 3 and a bug 4 (calipers.errors' table), never a verdict.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import DECISION_EXIT_CODES, Context, cli
from calipers.errors import EXIT_DECISION_ERROR, ConfigError

if TYPE_CHECKING:
    from calipers.analysis import FingerprintCheck, Progress
    from calipers.types import Fingerprint

__all__ = ["fingerprint_group"]


class _DecisionUsageError(click.UsageError):
    exit_code = EXIT_DECISION_ERROR


class _DecisionCommand(click.Command):
    """A bad option exits 3, not click's 2, which means "inconclusive" here."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[DECISION_EXIT_CODES] = True
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise _DecisionUsageError(e.format_message(), e.ctx) from None


@cli.group("fingerprint")
def fingerprint_group() -> None:
    """Is it still the same model? Record its output distribution, check it later.

    \b
      record  sample every probe of a versioned probe set several times at a fixed
              temperature and save the completions as a reference
      check   sample the model again the same way and test whether its output
              distribution is still the reference's (exit 0 same, 1 changed,
              2 inconclusive, 3 error)
      list    the recorded references
      show    one reference: model, settings, probes and example completions

    The test is model equality testing (Gao, Liang & Guestrin, ICLR 2025): an MMD test
    with a string kernel and a rank test, both with a permutation null. A "changed"
    verdict means the output distribution differs (weights, quantization, system prompt,
    decoding or routing), not that another model was swapped in. See docs/fingerprint.md.
    """


@contextmanager
def _bar(obj: Context, label: str, enabled: bool) -> Iterator[Progress]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        label,
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=obj.err,
        disable=not enabled,
    ) as bar:
        job = bar.add_task(label, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total)

        yield progress


def _server_options(f: Any) -> Any:
    """``--base-url`` and ``--api-key-env``: where an ``openai:NAME`` model is served."""
    f = click.option(
        "--api-key-env",
        default="OPENAI_API_KEY",
        show_default=True,
        metavar="VAR",
        help="Environment variable holding the API key (openai:NAME).",
    )(f)
    return click.option(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible server for openai:NAME, e.g. http://127.0.0.1:8000/v1.",
    )(f)


def _provider(model: str, opts: dict[str, Any]) -> Any:
    from calipers.models import ModelOptions, resolve_model

    return resolve_model(
        model, ModelOptions(base_url=opts["base_url"], api_key_env=opts["api_key_env"])
    )


@fingerprint_group.command("record")
@click.argument("model")
@click.option("--name", metavar="NAME", help="Save as <home>/fingerprints/NAME.json.")
@click.option(
    "-o", "--out", type=click.Path(dir_okay=False), help="Save to this file instead of --name."
)
@click.option(
    "--samples",
    type=click.IntRange(min=2),
    default=10,
    show_default=True,
    help="Completions per probe (the paper's budget is about 10; more detects smaller changes).",
)
@click.option(
    "--temperature",
    type=float,
    default=1.0,
    show_default=True,
    help="Sampling temperature (above 0: a fingerprint is a distribution).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=32,
    show_default=True,
    help="Tokens per completion (the kernel reads the first 100 characters).",
)
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=1.0, hidden=True)
@click.option(
    "--logprobs",
    is_flag=True,
    help="Also record each token's log-probability (OpenAI-compatible servers that give them; "
    "llama_cpp.server needs --logits_all true). Kept with the fingerprint for later analysis.",
)
@click.option("--system", metavar="TEXT", help="System prompt to record with (a check reuses it).")
@_server_options
@click.option("--probe-set", default="fp-v1", show_default=True, help="Versioned probe set.")
@click.option("--seed", type=int, help="Base seed of the samples (default: a fresh one).")
@click.option("--force", is_flag=True, help="Replace an existing fingerprint of that name.")
@click.option("--json", "as_json", is_flag=True, help="Print where it was saved, as JSON.")
@click.pass_obj
def record_cmd(obj: Context, /, model: str, **opts: Any) -> None:
    """Record MODEL's fingerprint: every probe sampled --samples times.

    Each completion is its own request with its own seed (never served from the response
    cache), at --temperature, with --system if given. Saved as JSON under the calipers
    home (fingerprints/NAME.json; NAME defaults to the model spec made file-safe) or -o.

    \b
    Examples:
      calipers fingerprint record smollm2 --name smollm2-ref
      calipers fingerprint record openai:gpt-4o-mini --base-url ... --samples 20 -o ref.json
    """
    from calipers.analysis import not_sampling, record_fingerprint

    path = _target(opts["name"], opts["out"], model)
    if path.exists() and not opts["force"]:
        raise ConfigError(
            f"A fingerprint already exists at {path}.",
            hint="Pass --force to replace it, or choose another --name.",
        )
    with _bar(obj, "sampling", sys.stderr.isatty()) as progress:
        fingerprint, drawn = asyncio.run(
            record_fingerprint(
                model,
                samples=opts["samples"],
                temperature=opts["temperature"],
                max_tokens=opts["max_tokens"],
                system=opts["system"],
                top_p=opts["top_p"],
                probe_set_name=opts["probe_set"],
                seed=opts["seed"],
                progress=progress,
                logprobs=opts["logprobs"],
                provider=_provider(model, opts),
            )
        )
    fingerprint.save(path)
    count = sum(len(v) for v in fingerprint.completions.values())
    if opts["as_json"]:
        obj.print_json(
            {
                "path": str(path),
                "completions": count,
                "failed": drawn.failed,
                "logprobs": fingerprint.logprobs is not None,
            }
        )
        return
    obj.out.print(
        f"Recorded {count} completions of {len(fingerprint.probes)} probes "
        f"({fingerprint.probe_set}) from {escape(model)} into {escape(str(path))}."
    )
    if drawn.failed:
        obj.err.print(f"[yellow]Note:[/] {drawn.failed} calls failed and were left out.")
    if opts["logprobs"] and fingerprint.logprobs is None:
        obj.err.print(
            "[yellow]Note:[/] the model gave no log-probabilities for some completions; "
            "none were recorded (completions only)."
        )
    if not_sampling(fingerprint):
        obj.err.print(
            "[yellow]Note:[/] every probe gave the same completion every time: the model "
            "does not seem to sample (is the temperature ignored?). A check can then only tell "
            "identical answers from different ones."
        )


def _target(name: str | None, out: str | None, model: str) -> Path:
    from calipers.analysis import fingerprint_path

    if name and out:
        raise ConfigError("Give --name or -o, not both.")
    if out:
        return Path(out).expanduser()
    if not name:
        name = "".join(c if c.isalnum() or c in "._-" else "-" for c in model).strip("-.")
    elif "/" in name or name.endswith(".json"):
        raise ConfigError(
            f"--name {name!r} is not a plain name.",
            hint="Use letters, digits, '.', '_' and '-'; to write a file, use -o PATH.",
        )
    return fingerprint_path(name)


@fingerprint_group.command("check", cls=_DecisionCommand)
@click.argument("model")
@click.option(
    "--against",
    "against",
    required=True,
    metavar="NAME|PATH",
    help="The reference: a recorded name or a fingerprint file.",
)
@click.option(
    "--samples",
    type=click.IntRange(min=2),
    help="Completions per probe. [default: the reference's]",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="False-alarm rate of 'changed'.",
)
@click.option(
    "--effect",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.16,
    show_default=True,
    help="Share of traffic from a model with unrelated answers that 'same' must have had "
    "80% power to notice; below that the verdict is 'inconclusive'.",
)
@click.option(
    "--permutations",
    type=click.IntRange(min=99),
    default=2000,
    show_default=True,
    help="Permutations of the null distribution (which probes moved needs about "
    "probes / alpha of them).",
)
@click.option(
    "--power-reps",
    type=click.IntRange(min=10),
    default=100,
    show_default=True,
    help="Resampled checks behind each power figure.",
)
@_server_options
@click.option("--probe-set", help="Refuse a reference recorded on another probe set.")
@click.option("--seed", type=int, help="Base seed of the samples (default: a fresh one).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def check_cmd(obj: Context, /, model: str, **opts: Any) -> None:
    """Is MODEL still the model --against recorded? Exit 0 same, 1 changed, 2 inconclusive.

    Samples MODEL with the reference's probes and settings (temperature, max tokens, system
    prompt) and tests whether the two sets of completions come from one distribution: an MMD
    test with the Hamming string kernel and a stratified rank test, permutation nulls, Holm
    over the two. CHANGED when they reject at --alpha, with the probes that moved. SAME when
    not, and the check had 80% power to notice --effect of the traffic coming from a model
    with unrelated answers. INCONCLUSIVE otherwise, with about how many more samples per probe
    would do. Errors exit 3, bugs 4.

    \b
    Examples:
      calipers fingerprint check smollm2 --against smollm2-ref
      calipers fingerprint check openai:llama-3-8b --base-url ... --against ref.json --json
    """
    from calipers.analysis import check_fingerprint, load_fingerprint

    reference = load_fingerprint(opts["against"])
    if opts["probe_set"] and opts["probe_set"] != reference.probe_set:
        raise ConfigError(
            f"The reference {opts['against']!r} was recorded on probe set "
            f"{reference.probe_set!r}, not {opts['probe_set']!r}.",
            hint="Check against a reference recorded on the same probe set, or record one.",
        )
    with _bar(obj, "sampling", sys.stderr.isatty()) as progress:
        result = asyncio.run(
            check_fingerprint(
                reference,
                model,
                samples=opts["samples"],
                alpha=opts["alpha"],
                effect=opts["effect"],
                permutations=opts["permutations"],
                power_repetitions=opts["power_reps"],
                seed=opts["seed"],
                progress=progress,
                provider=_provider(model, opts),
            )
        )
    if opts["as_json"]:
        obj.print_json(result.to_dict())
    else:
        _print_check(obj, result)
    sys.exit(result.exit_code)


_COLOUR = {"same": "green", "changed": "bold red", "inconclusive": "yellow"}


def _print_check(obj: Context, r: FingerprintCheck) -> None:
    out = obj.out
    out.print(
        f"{escape(r.model)} against {escape(r.reference_model)} (recorded "
        f"{r.reference_recorded_at}), {r.probes_tested} probes of {r.probe_set}, "
        f"{r.samples_per_probe} samples per probe at temperature {r.settings.temperature:g}."
    )
    out.print(
        f"  MMD (Hamming kernel)   {r.mmd_statistic:.4f}  p = {r.mmd_p_value:.3g}\n"
        f"  rank (van Elteren)     {r.rank_statistic:+.2f}  p = {r.rank_p_value:.3g}\n"
        f"  decision (Holm)        p = {r.p_value:.3g}  (alpha {r.alpha:g}, "
        f"{r.permutations} permutations)"
    )
    if r.moved:
        table = Table(title="Probes that moved (Holm over probes)", title_justify="left")
        for col in ("probe", "p adj.", "reference (most common)", "now (most common)"):
            table.add_column(col, overflow="fold")
        for m in r.moved[:10]:
            table.add_row(
                m.probe,
                f"{m.p_adjusted:.3g}",
                escape(m.reference_example[:60]),
                escape(m.candidate_example[:60]),
            )
        out.print(table)
        if len(r.moved) > 10:
            out.print(f"  ... and {len(r.moved) - 10} more (--json lists all).")
    power = Table(title="Power to notice traffic from a model with unrelated answers")
    for col in ("share", "samples per probe", "power [95% CI]"):
        power.add_column(col)
    for p in r.power:
        e = p.power
        power.add_row(
            f"{100 * p.epsilon:.0f}%",
            str(p.samples_per_probe),
            f"{100 * e.value:.0f}% [{100 * e.low:.0f}, {100 * e.high:.0f}]",
        )
    out.print(power)
    if r.identity_changed:
        out.print("[yellow]Note:[/] the model's identity (file hash or API model id) differs.")
    for note in r.notes:
        out.print(f"[yellow]Note:[/] {escape(note)}")
    out.print(f"[{_COLOUR[r.verdict]}]{escape(r.summary)}[/] (exit {r.exit_code})")


@fingerprint_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_obj
def list_cmd(obj: Context, /, as_json: bool) -> None:
    """The recorded fingerprints (under the calipers home), by name."""
    from calipers.analysis import fingerprint_dir, list_fingerprints

    found = list_fingerprints()
    if as_json:
        obj.print_json([_brief(name, fp) for name, fp in found])
        return
    if not found:
        obj.out.print(
            f"No fingerprints in {fingerprint_dir()}. Record one with "
            "`calipers fingerprint record MODEL --name NAME`."
        )
        return
    table = Table()
    for col in ("name", "model", "recorded", "probe set", "samples", "temperature", "system"):
        table.add_column(col)
    for name, fp in found:
        if fp is None:
            table.add_row(name, "[red]unreadable[/]", "", "", "", "", "")
            continue
        s = fp.settings
        table.add_row(
            name,
            escape(fp.model),
            fp.recorded_at,
            fp.probe_set,
            str(s.samples_per_probe),
            f"{s.temperature:g}",
            "yes" if s.system is not None else "",
        )
    obj.out.print(table)


def _brief(name: str, fp: Fingerprint | None) -> dict[str, Any]:
    if fp is None:
        return {"name": name, "error": "unreadable"}
    return {
        "name": name,
        "model": fp.model,
        "recorded_at": fp.recorded_at,
        "probe_set": fp.probe_set,
        "settings": fp.settings.model_dump(mode="json"),
    }


@fingerprint_group.command("show")
@click.argument("ref", metavar="NAME|PATH")
@click.option("--json", "as_json", is_flag=True, help="Print the whole fingerprint as JSON.")
@click.pass_obj
def show_cmd(obj: Context, /, ref: str, as_json: bool) -> None:
    """One fingerprint: model, identity, settings, and one completion per probe."""
    from calipers.analysis import load_fingerprint

    fp = load_fingerprint(ref)
    if as_json:
        obj.print_json(fp.model_dump(mode="json"))
        return
    s = fp.settings
    system = "none" if s.system is None else repr(s.system)
    obj.out.print(
        f"{escape(fp.model)}, recorded {fp.recorded_at} on {fp.probe_set}: "
        f"{s.samples_per_probe} samples per probe, temperature {s.temperature:g}, "
        f"max tokens {s.max_tokens}, system prompt {escape(system)}."
    )
    if fp.identity:
        obj.out.print(f"Identity: {escape(str(fp.identity))}")
    table = Table()
    for col in ("probe", "distinct", "first completion"):
        table.add_column(col, overflow="fold")
    for p in fp.probes:
        texts = fp.completions.get(p.id, ())
        first = texts[0][:70] if texts else ""
        table.add_row(p.id, f"{len(set(texts))}/{len(texts)}", escape(first))
    obj.out.print(table)
