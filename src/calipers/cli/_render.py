"""Terminal tables: a number is never printed without its interval, n and method."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from calipers.types import Estimate

__all__ = ["summary_table"]


def _pct(e: Estimate) -> tuple[str, str]:
    if e.is_empty:
        return "n/a", "(n=0)"
    return f"{100 * e.value:.1f}%", f"[{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _num(e: Estimate) -> tuple[str, str]:
    if e.is_empty:
        return "n/a", "(n=0)"
    return f"{e.value:.3g}", f"[{e.low:.3g}, {e.high:.3g}]"


def summary_table(summary: dict[str, Any], *, title: str | None = None) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for col, kw in [
        ("task", {}), ("metric", {}), ("n", {"justify": "right"}),
        ("score", {"justify": "right"}), ("95% interval", {"justify": "right"}),
        ("method", {}), ("errors", {"justify": "right"}),
        ("mean latency", {"justify": "right"}), ("tokens in/out", {"justify": "right"}),
    ]:
        t.add_column(col, **kw)  # type: ignore[arg-type]
    for task, ts in summary.get("tasks", {}).items():
        primary = ts.get("primary")
        if primary is None:
            t.add_row(task, "-", str(ts["n_samples"]), "n/a", "", "", str(ts["n_errors"]), "", "")
            continue
        est = Estimate.from_dict(ts["metrics"][primary])
        binary = est.method.startswith(("wilson", "beta"))
        value, interval = _pct(est) if binary or _is_fraction(est) else _num(est)
        lat = Estimate.from_dict(ts["latency_s"])
        t.add_row(
            task, primary, str(est.n), value, interval, est.method,
            f"[red]{ts['n_errors']}[/]" if ts["n_errors"] else "0",
            "n/a" if lat.is_empty else f"{lat.value:.2f}s [{lat.low:.2f}, {lat.high:.2f}]",
            f"{ts['input_tokens']:,}/{ts['output_tokens']:,}",
        )
    return t


def _is_fraction(e: Estimate) -> bool:
    return e.low >= 0.0 and e.high <= 1.0
