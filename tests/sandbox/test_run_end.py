"""A run is over only when every process it started is gone: killed and reaped, not left as
a zombie for a lazy ``init`` (it would still count against the sandbox user's RLIMIT_NPROC,
and the next program could not start). Processes are found by a name the program gives
itself (``comm``, kept by zombies and inherited across fork), whatever the isolation."""

from __future__ import annotations

import dataclasses
import os
import secrets
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from calipers.sandbox import Isolation, SandboxError, _run, detect_isolation, run_python

ISO = detect_isolation()
LAYERS = ISO.layers(False)
FALLBACK = dataclasses.replace(ISO, namespaces=(), unshare=None)
ISOLATIONS = {"namespaces": ISO, "fallback": FALLBACK}

BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
BOMB_THEN_EXIT = (  # children fork to the limit; the program itself ends at once
    "import os, time\nif os.fork() == 0:\n    while True:\n        try:\n            os.fork()\n"
    "        except OSError:\n            time.sleep(0.01)\ntime.sleep(0.5)\n"
)
ESCAPE = (  # a child in a session of its own, outside the program's process group
    "import os, time\nif os.fork() == 0:\n    os.setsid()\n    os.fork()\n    time.sleep(60)\n"
    "time.sleep(0.5)\n"
)

needs_user = pytest.mark.skipif(
    "unprivileged-user" not in LAYERS,
    reason="needs root and a separate sandbox user (RLIMIT_NPROC does not bind root)",
)


def named(name: str, code: str) -> str:
    """``code`` run under the process name ``name``."""
    return (
        "import ctypes\n"
        f"ctypes.CDLL(None).prctl(15, ctypes.c_char_p({name.encode()!r}), 0, 0, 0)\n{code}"
    )


def processes_named(name: str) -> list[str]:
    """The state of each process called ``name`` (zombies included: 'Z')."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            comm, rest = (d / "stat").read_text().rsplit(")", 1)
        except (OSError, ValueError):
            continue
        if comm.split("(", 1)[1] == name:
            out.append(rest.split()[0])
    return out


@pytest.fixture
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Isolation:
    iso = ISOLATIONS[request.param]
    if request.param == "namespaces" and "pidns" not in LAYERS:
        pytest.skip("no PID namespace on this machine")
    monkeypatch.setattr(_run, "_isolation", lambda: iso)
    return iso


@pytest.fixture
def name() -> Iterator[str]:
    token = f"cal{secrets.token_hex(5)}"
    yield token
    for pid in [d.name for d in Path("/proc").iterdir() if d.name.isdigit()]:
        try:  # a failed run's leftovers: not left to the tests that follow
            if Path(f"/proc/{pid}/comm").read_text().strip() == token:
                os.kill(int(pid), 9)
        except OSError:
            continue


@needs_user
@pytest.mark.filterwarnings("ignore::calipers.sandbox.SandboxWarning")
@pytest.mark.parametrize("isolation", ["namespaces", "fallback"], indirect=True)
@pytest.mark.parametrize(
    "code", [BOMB, BOMB_THEN_EXIT, ESCAPE], ids=["timeout", "exit", "setsid-escape"]
)
def test_no_process_of_a_run_outlives_it(isolation: Isolation, code: str, name: str) -> None:
    r = run_python(named(name, code), timeout_s=2)
    assert processes_named(name) == []  # at once: not after init gets round to reaping
    assert r.wall_s < 4, r
    after = run_python("print('next')", timeout_s=5)  # the symptom: EAGAIN at its start
    assert after.passed and after.stdout == "next\n", after


@pytest.fixture
def held_slots() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes of the sandbox user, holding its RLIMIT_NPROC slots (started as root,
    so not bound by the limit themselves)."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _hold(procs: list[subprocess.Popen[bytes]], n: int) -> None:
    for _ in range(n):
        procs.append(subprocess.Popen(["sleep", "60"], user=ISO.uid, group=ISO.gid))


@needs_user
def test_a_start_waits_for_slots_other_programs_of_the_user_hold(
    held_slots: list[subprocess.Popen[bytes]],
) -> None:
    _hold(held_slots, 20)

    def release() -> None:
        for p in held_slots:
            p.kill()

    timer = threading.Timer(0.5, release)
    timer.start()
    try:
        r = run_python("print('started')", timeout_s=5, max_processes=20)
    finally:
        timer.join()
    assert r.passed and r.stdout == "started\n", r


@needs_user
def test_a_start_that_never_gets_a_slot_is_an_error_that_says_why(
    held_slots: list[subprocess.Popen[bytes]],
) -> None:
    _hold(held_slots, 3)
    with pytest.raises(SandboxError, match=r"max_processes=2 processes for 1 s"):
        run_python("print('started')", timeout_s=1, max_processes=2)
