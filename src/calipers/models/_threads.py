"""How many threads llama.cpp computes with: as many as there are cores nobody else is using.

llama.cpp splits every matrix product of a forward pass between its threads and waits for all
of them at a barrier after each one, spinning. When another process is busy on the same cores,
one of the threads is descheduled for a whole time slice while the others spin at the barrier:
on a 2-core machine with one CPU-bound neighbour, three generations with 2 threads took 10x as
long as with 1 thread, where an even share of the machine would cost 2x. Alone, 2 threads
evaluate a prompt nearly twice as fast as 1. No fixed count is right for both, so by default
:class:`ThreadGovernor` chooses before every llama.cpp call, from the CPU time other processes
used since its previous choice: ``threads = cores - others' cores``, rounded (n threads once
at least ``n - SLACK`` cores are free), at least 1. The thread count changes speed only: the
logits are bit-for-bit the same with 1 or 2 threads (a test checks it), because every dot
product is computed whole by one thread.

The usable cores are the CPUs this process may run on (``os.sched_getaffinity``, so
``taskset`` and container CPU sets count), capped by a cgroup CPU quota (``docker --cpus``).
``ModelOptions.n_threads`` / ``n_threads_batch`` (``--threads``, the spec's ``threads=`` and
``threads_batch=``) fix the counts instead. ``benchmarks/threads_under_load.py`` measures the
default alone and next to a busy neighbour.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SLACK", "CpuSample", "ThreadGovernor", "Threads", "read_cpu", "usable_cores"]

SLACK = 0.25  # n threads once n - SLACK cores are free
MIN_WINDOW_S = 0.2  # decide on at least this much history (shorter: keep the last choice)
_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
_PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class Threads:
    decode: int  # generating one token at a time (Llama n_threads)
    batch: int  # prompts and multi-token batches (Llama n_threads_batch)


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU seconds of the CPUs this process may run on (busy, and in total: busy
    plus idle) and of this process, all its threads."""

    busy_s: float
    total_s: float
    own_s: float
    n_cpus: int


def _affinity() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def read_cpu(proc_stat: Path = _PROC_STAT) -> CpuSample | None:
    """The counters of this process's CPUs (the ``cpuN`` lines of ``/proc/stat``) and its own
    CPU time; None where they cannot be read (not Linux)."""
    try:
        lines = proc_stat.read_text().splitlines()
    except OSError:
        return None
    cpus = _affinity()
    busy = total = n = 0
    for line in lines:
        name, *values = line.split()
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        if cpus is not None and int(name[3:]) not in cpus:
            continue
        fields = [int(v) for v in values[:8]]  # guest time is already in user time
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        busy, total, n = busy + sum(fields) - idle, total + sum(fields), n + 1
    if not n:
        return None
    tick = float(os.sysconf("SC_CLK_TCK"))
    own = os.times()
    return CpuSample(busy / tick, total / tick, own.user + own.system, n)


def _quota_cores(cpu_max: Path) -> int | None:
    """Cores allowed by a cgroup v2 CPU quota (``"200000 100000"`` -> 2), None without one."""
    try:
        quota, period = cpu_max.read_text().split()[:2]
        return None if quota == "max" else max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):
        return None


def usable_cores(cpu_max: Path = _CGROUP_CPU_MAX) -> int:
    """CPUs this process may run on, capped by a cgroup CPU quota; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    quota = _quota_cores(cpu_max)
    return max(1, min(cores, quota) if quota else cores)


class ThreadGovernor:
    """Chooses the thread counts for each llama.cpp call; fixed counts are kept as given.

    ``pick()`` looks at the window since the last decision: the busy CPU seconds of this
    process's CPUs minus its own are what others used there, ``others / window`` cores.
    ``sample`` reads the counters (tests pass a fake)."""

    def __init__(
        self,
        decode: int | None = None,
        batch: int | None = None,
        *,
        cores: int | None = None,
        sample: Callable[[], CpuSample | None] = read_cpu,
    ) -> None:
        self.cores = cores or usable_cores()
        self.fixed = Threads(decode or 0, batch or 0)
        self._sample = sample
        self._base = sample()
        self._free = float(self.cores)  # until a window says otherwise
        self.used: Counter[Threads] = Counter()  # calls per choice, for reports and tests

    @property
    def adaptive(self) -> bool:
        return not (self.fixed.decode and self.fixed.batch)

    def free_cores(self) -> float:
        """Cores other processes left free over the window since the last decision."""
        now = self._sample()
        if now is None or self._base is None or now.n_cpus != self._base.n_cpus:
            self._base = now
            return self._free
        wall = (now.total_s - self._base.total_s) / now.n_cpus  # seconds the window lasted
        if wall < MIN_WINDOW_S:
            return self._free
        others = (now.busy_s - self._base.busy_s) - (now.own_s - self._base.own_s)
        self._base = now
        self._free = self.cores - min(float(self.cores), max(0.0, others) / wall)
        return self._free

    def pick(self) -> Threads:
        n = self.cores
        if self.adaptive:
            n = max(1, min(self.cores, math.floor(self.free_cores() + SLACK)))
        choice = Threads(self.fixed.decode or n, self.fixed.batch or n)
        self.used[choice] += 1
        return choice

    def describe(self) -> dict[str, int | str]:
        """For the methodology card: the fixed counts, or how they are chosen."""
        auto = f"adaptive: 1-{self.cores} by free cores"
        return {
            "n_threads": self.fixed.decode or auto,
            "n_threads_batch": self.fixed.batch or auto,
            "usable_cores": self.cores,
        }
