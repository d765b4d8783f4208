"""Timing a step of a benchmark: wall seconds, this process's CPU seconds, and the share of the
machine's CPU that other processes used meanwhile (they share these cores)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["measured"]


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU jiffies of the whole machine since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


@contextmanager
def measured(out: dict[str, Any]) -> Iterator[None]:
    """Wall seconds, load average and other processes' share of CPU during the block."""
    tick = os.sysconf("SC_CLK_TCK")
    busy0, total0 = _cpu_jiffies()
    own0 = sum(os.times()[:4])
    load0 = os.getloadavg()[0]
    start = time.perf_counter()
    yield
    out["seconds"] = time.perf_counter() - start
    busy1, total1 = _cpu_jiffies()
    own = sum(os.times()[:4]) - own0
    out["cpu_seconds"] = own  # this process's CPU time: less sensitive to other load
    others = max(0.0, (busy1 - busy0) / tick - own)
    out["others_cpu_share"] = others / max(1e-9, (total1 - total0) / tick)
    out["loadavg_before"], out["loadavg_after"] = load0, os.getloadavg()[0]
