"""``calipers monitor fingerprint``: take fingerprint-canary looks now (for cron, without the
gateway) and print the sequential verdict. The work is in :mod:`calipers.monitor`."""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from calipers.cli._app import DECISION_EXIT_CODES, Context, store_option
from calipers.cli._monitor import monitor_group
from calipers.errors import EXIT_FAIL, ConfigError

if TYPE_CHECKING:
    from calipers.models import ModelProvider
    from calipers.monitor import FingerprintCanaryStatus, Sampler
    from calipers.types import Fingerprint

__all__ = ["fingerprint_cmd", "load_reference"]


def load_reference(path: Path) -> Fingerprint:
    """The fingerprint at ``path``, or a ConfigError that says what to do."""
    from pydantic import ValidationError

    from calipers.types import Fingerprint

    try:
        return Fingerprint.load(path)
    except OSError as e:
        raise ConfigError(
            f"Cannot read the fingerprint {path}: {e.strerror}.",
            hint="Record one with `calipers fingerprint record MODEL` (docs/fingerprint.md).",
        ) from None
    except ValidationError as e:
        raise ConfigError(
            f"{path} is not a calipers fingerprint: {e.errors()[0]['msg']}.",
            hint="Give a file written by `calipers fingerprint record`.",
        ) from None


def model_sampler(provider: ModelProvider) -> Sampler:
    """Sample one completion of a probe from ``provider`` with the reference's settings
    (unseeded: each look is a fresh sample)."""
    from calipers.analysis import probe_request

    async def sample(probe: Any, settings: Any) -> str:
        return (await provider.generate(probe_request(probe, settings, None))).text

    return sample


@monitor_group.command("fingerprint")
@click.option(
    "--reference",
    "reference_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The recorded fingerprint (JSON) to test against.",
)
@click.option(
    "-m", "--model", "model", metavar="SPEC", help="Model to look at (see `calipers models`)."
)
@click.option("--base-url", metavar="URL", help="OpenAI-compatible server (openai:NAME).")
@click.option(
    "--api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    help="Environment variable holding the API key.",
)
@click.option(
    "--looks",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Looks to take now (0: only show the verdict so far).",
)
@click.option(
    "--probes-per-look",
    type=click.IntRange(min=1),
    help="Probes per look, drawn at random [default: all of the reference's].",
)
@click.option(
    "--name",
    "canary",
    default="fingerprint",
    show_default=True,
    help="The canary's name (its looks are kept under it; the gateway's is "
    "`fingerprint` unless configured).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Chance of ever raising a false alarm, however many looks (fixed at the first look).",
)
@click.option(
    "--fail-on-change",
    is_flag=True,
    help="Exit 1 when the model changed (for cron); an error then exits 3, a bug 4.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the looks and verdict as JSON.")
@store_option
@click.pass_context
def fingerprint_cmd(
    ctx: click.Context,
    /,
    reference_path: Path,
    model: str | None,
    base_url: str | None,
    api_key_env: str,
    looks: int,
    probes_per_look: int | None,
    canary: str,
    alpha: float,
    fail_on_change: bool,
    as_json: bool,
) -> None:
    """Is it still the same model? Take fingerprint-canary looks now and test, always-valid.

    Each look samples the reference's probes once with its settings (system prompt,
    temperature, max_tokens) and is stored, failed or not; the verdict tests every ok look
    so far against the reference, so running this every hour does not inflate false alarms
    (docs/fingerprint-canary.md). A look where any probe fails is recorded as failed and not
    counted.

    \b
    Examples:
      calipers monitor fingerprint --reference ref.json -m openai:my-model \\
          --base-url http://127.0.0.1:8000/v1 --fail-on-change     # hourly from cron
      calipers monitor fingerprint --reference ref.json --looks 0    # the verdict so far
    """
    obj = ctx.find_object(Context)
    assert obj is not None
    ctx.meta[DECISION_EXIT_CODES] = fail_on_change
    if looks and not model:
        raise ConfigError(
            "Which model? Pass -m SPEC to take a look (or --looks 0 to see the verdict).",
            hint="e.g. -m openai:my-model --base-url http://127.0.0.1:8000/v1",
        )
    fp = load_reference(reference_path)
    from calipers.monitor import CanaryDesign, fingerprint_canary_status
    from calipers.store import Store

    design = CanaryDesign(alpha=alpha, probes_per_look=probes_per_look)
    with Store.open(obj.store_url) as store:
        taken = _take(fp, store, model, base_url, api_key_env, looks, canary, design)
        status = fingerprint_canary_status(store, canary, fp)
    if as_json:
        obj.print_json(
            {"looks_taken": taken, "status": status.to_dict() if status is not None else None}
        )
    else:
        _render(obj, taken, status)
    if fail_on_change and status is not None and status.alarm:
        sys.exit(EXIT_FAIL)


def _take(
    fp: Fingerprint, store: Any, model: str | None, base_url: str | None, api_key_env: str,
    looks: int, canary: str, design: Any,
) -> list[dict[str, Any]]:  # fmt: skip
    if not looks or model is None:
        return []
    from calipers.models import ModelOptions, resolve_model
    from calipers.monitor import take_fingerprint_look

    provider = resolve_model(
        model, ModelOptions(base_url=base_url, api_key_env=api_key_env, max_retries=1)
    )
    sampler = model_sampler(provider)

    async def go() -> list[dict[str, Any]]:
        out = []
        for _ in range(looks):
            rec = await take_fingerprint_look(
                fp, sampler, store, model=model, canary=canary, design=design
            )
            out.append({"id": rec.id, "ts": rec.ts.isoformat(), "status": rec.status,
                        "statistic": rec.statistic, "error": rec.error})  # fmt: skip
        return out

    return asyncio.run(go())


def _render(
    obj: Context, taken: list[dict[str, Any]], status: FingerprintCanaryStatus | None
) -> None:
    from rich.markup import escape

    # number the looks as the canary counts them (its ok looks, then this call's), not by row id
    total = (status.verdict.looks + status.n_failed) if status is not None else len(taken)
    for i, t in enumerate(taken, start=total - len(taken) + 1):
        if t["status"] == "ok":
            obj.out.print(f"look {i}: ok, statistic {t['statistic']['value']:.4f}")
        else:
            obj.out.print(f"look {i}: [yellow]FAILED[/] ({escape(str(t['error']))}), not counted")
    if status is None:
        obj.out.print("No looks yet for this canary and reference.")
        return
    style = "bold red" if status.alarm else "bold"
    obj.out.print(
        f"[{style}]Fingerprint canary {escape(status.canary)}[/]: {escape(status.headline())}"
    )
    v = status.verdict
    if v.looks:
        e, r = v.estimate, v.reference
        cs = (
            "empty (no single mean fits every look: it moved)"
            if e.method.endswith("-empty")
            else "not yet"
            if math.isnan(e.low)
            else f"[{e.low:.4f}, {e.high:.4f}]"
        )
        obj.out.print(
            f"  looks' mean {e.value:.4f}, confidence sequence {cs}; reference "
            f"{r.value:.4f} [{r.low:.4f}, {r.high:.4f}] ({e.confidence:.1%} each)"
        )
