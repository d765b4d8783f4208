"""A real two-node Ray cluster on 127.0.0.1 for the Ray executor's tests.

Each node is ``ray start --block`` in a session of its own, under a short temporary directory
of its own; teardown signals exactly those process groups (TERM, then KILL), never ``ray stop``,
which would stop every Ray instance on the machine. Token authentication is off for this
loopback cluster (the test's own environment; nothing else joins it), so it never reads or
writes a shared ``~/.ray`` token.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


@dataclass
class RayCluster:
    address: str
    temp_dir: Path
    client_address: str = ""  # ray://127.0.0.1:PORT: the head's Ray Client server
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def processes(self) -> dict[int, str]:
        """Every process this cluster started (the nodes and all their descendants: Ray's
        workers run in sessions of their own, so a process group does not hold them)."""
        table = _process_table()
        mine = {p.pid for p in self.procs}
        grew = True
        while grew:
            more = {pid for pid, (ppid, _a) in table.items() if ppid in mine} - mine
            mine |= more
            grew = bool(more)
        return {pid: table[pid][1] for pid in mine if pid in table}

    def worker_pids(self, name: str = "ShardWorker") -> list[int]:
        """The processes of this cluster's actors of class ``name``."""
        return [pid for pid, args in self.processes().items() if args.startswith(f"ray::{name}")]

    def stop(self) -> None:
        started = set(self.processes())
        for p in reversed(self.procs):
            _signal_group(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
        for p in self.procs:  # what did not stop in time
            _signal_group(p.pid, signal.SIGKILL)
            p.wait()
        alive = set(_process_table())
        for pid in started & alive:  # workers left behind, by their own pids
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not os.environ.get("CALIPERS_KEEP_RAY_LOGS"):  # set it to read the nodes' logs after
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def _process_table() -> dict[int, tuple[int, str]]:
    out = subprocess.run(
        ["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True, check=True
    ).stdout
    table = {}
    for line in out.splitlines():
        pid, ppid, *args = line.split(None, 2)
        table[int(pid)] = (int(ppid), args[0] if args else "")
    return table


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _start_node(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as fh:
        return subprocess.Popen(
            [_ray_bin(), "start", "--block", "--disable-usage-stats", *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _wait_started(proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "Ray runtime started" in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"ray start did not come up:\n{log.read_text(errors='replace')[-3000:]}")


def start_cluster(head_cpus: int = 2, node_cpus: int = 1) -> RayCluster:
    """A head (``head_cpus``, with a Ray Client server) and a second node (``node_cpus``),
    200 MB object stores each."""
    env = {**os.environ, **RAY_ENV}
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # Ray's socket paths must be short
    port, client_port = free_port(), free_port()
    cluster = RayCluster(f"127.0.0.1:{port}", temp, f"ray://127.0.0.1:{client_port}")
    common = ["--node-ip-address", "127.0.0.1", "--object-store-memory", str(200 * 2**20)]
    try:
        head = _start_node(
            [
                "--head",
                f"--port={port}",
                f"--ray-client-server-port={client_port}",
                f"--num-cpus={head_cpus}",
                f"--temp-dir={temp}",
                "--include-dashboard=false",
                *common,
            ],
            temp / "head.log",
            env,
        )
        cluster.procs.append(head)
        _wait_started(head, temp / "head.log")
        node = _start_node(
            [
                f"--address={cluster.address}",
                f"--num-cpus={node_cpus}",
                f"--temp-dir={temp}",
                *common,
            ],
            temp / "node.log",
            env,
        )
        cluster.procs.append(node)
        _wait_started(node, temp / "node.log")
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def running_cluster() -> Iterator[RayCluster]:
    """A cluster for a test module (its fixture), torn down however the tests end."""
    pytest.importorskip("ray", reason="the Ray executor: pip install 'calipers[ray]'")
    saved = {k: os.environ.get(k) for k in RAY_ENV}
    os.environ.update(RAY_ENV)  # this process is the driver of some tests
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
