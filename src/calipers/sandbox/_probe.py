"""Finding, once per process, the strongest isolation this machine allows.

Each candidate is tried by running a small program through the real launch path, strongest
first: namespaces (network, PID, mount; an unprivileged user namespace when not root) with an
unprivileged user, then fewer namespaces, then none. As root the program runs as ``nobody``,
which needs an interpreter that ``nobody`` can read: the running one if it can, else a system
``python3``.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading

from calipers.sandbox._exec import Isolation, Limits, execute
from calipers.sandbox._result import SandboxError

__all__ = ["NOBODY", "detect_isolation"]

NOBODY = 65534
_CHECK = "import hashlib, json, math, socket, subprocess\nprint('calipers-sandbox-ok')\n"
_PROBE_LIMITS = Limits(timeout_s=20.0, cpu_s=10, memory_mb=512, max_processes=32)
_LOCK = threading.Lock()
_FOUND: list[Isolation] = []


def _works(iso: Isolation) -> bool:
    try:
        r = execute(_CHECK, iso, _PROBE_LIMITS, network=False)
    except (SandboxError, OSError):
        return False
    return r.passed and "calipers-sandbox-ok" in r.stdout


def _interpreters() -> list[str]:
    found = [
        sys.executable,
        "/usr/bin/python3",
        "/usr/local/bin/python3",
        shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or "",
    ]
    out: list[str] = []
    for p in found:
        if p and os.path.isfile(p) and os.path.realpath(p) not in map(os.path.realpath, out):
            out.append(p)
    return out


def _user_and_python() -> tuple[int | None, str]:
    """As root: ``nobody`` and the first interpreter it can run; else no user change."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None, sys.executable
    for py in _interpreters():
        if _works(Isolation(python=py, uid=NOBODY, gid=NOBODY)):
            return NOBODY, py
    return None, sys.executable


def _detect() -> Isolation:
    uid, python = _user_and_python()
    plain = Isolation(python=python, uid=uid, gid=uid)
    unshare = shutil.which("unshare") if sys.platform.startswith("linux") else None
    if unshare is None:
        return plain
    user: tuple[str, ...] = () if os.geteuid() == 0 else ("user",)
    for ns in (("net", "pid", "mount"), ("net", "pid"), ("net",)):
        iso = Isolation(python=python, unshare=unshare, namespaces=user + ns, uid=uid, gid=uid)
        if _works(iso):
            return iso
    return plain


def detect_isolation(*, refresh: bool = False) -> Isolation:
    """The isolation programs get on this machine (probed once, then cached)."""
    with _LOCK:
        if refresh or not _FOUND:
            _FOUND[:] = [_detect()]
        return _FOUND[0]
