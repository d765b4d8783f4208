"""Helpers for the gate tests: task files, scripted fake models, and the statistics the gate
must reproduce, written out independently of calipers (from the published formulas)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

from scipy.stats import norm


def task_file(folder: Path, name: str, n: int) -> Path:
    """A task of ``n`` items ``<name>-000``..., every target "yes", scored by exact match."""
    rows = [{"id": f"{name}{i}", "input": f"{name}-{i:03d}", "target": "yes"} for i in range(n)]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / f"{name}.yaml"
    spec.write_text(f"name: {name}\ndata: {name}.jsonl\nscorers: [exact_match]\n")
    return spec


def right_on(folder: Path, model: str, items: Iterable[str]) -> str:
    """A fake model spec that answers "yes" (right) on the given inputs, "no" elsewhere."""
    script = folder / f"{model}.json"
    script.write_text(json.dumps({**{i: "yes" for i in items}, "*": "no"}))
    return f"fake:script={script},name={model}"


def inputs(name: str, idx: Iterable[int]) -> list[str]:
    return [f"{name}-{i:03d}" for i in idx]


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    # (2k + z^2 -+ z sqrt(z^2 + 4k(1 - k/n))) / (2(n + z^2))  (Wilson 1927)
    root = z * math.sqrt(z * z + 4 * k * (1 - k / n))
    return (2 * k + z * z - root) / (2 * (n + z * z)), (2 * k + z * z + root) / (2 * (n + z * z))


def newcombe(
    both: int, only_a: int, only_b: int, neither: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Newcombe (1998) method 10 for p_b - p_a from a paired 2x2 table."""
    n = both + only_a + only_b + neither
    z = float(norm.ppf(0.5 + confidence / 2))
    pa, pb = (both + only_a) / n, (both + only_b) / n
    la, ua = _wilson(both + only_a, n, z)
    lb, ub = _wilson(both + only_b, n, z)
    a = both * neither - only_a * only_b
    c = a - n / 2 if a > n / 2 else (a if a < 0 else 0.0)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = c / math.sqrt(margins) if margins else 0.0
    d = pb - pa
    low = d - math.sqrt((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
    high = d + math.sqrt((ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2)
    return low, high


def items_needed(diffs: list[float], margin: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Paired non-inferiority sample size (normal theory, e.g. Julious 2004): the observed
    drop taken as the truth (a gain counts as 0), the sample variance of the per-item
    differences floored at m(1 - m) for 0/1 scores."""
    n = len(diffs)
    mean = sum(diffs) / n
    var = sum((x - mean) ** 2 for x in diffs) / (n - 1)
    var = max(var, margin * (1 - margin))
    delta = margin + min(mean, 0.0)
    k = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    return math.ceil(k * k * var / delta**2 - 1e-9)


def size_needed(
    margin: float, discordance: float = 0.25, alpha: float = 0.05, power: float = 0.8
) -> int:
    k = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    return math.ceil(k * k * discordance / margin**2 - 1e-9)
