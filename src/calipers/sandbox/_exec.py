"""One sandboxed run at a given isolation: the launch, the limits, the kill, the verdict."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from calipers.sandbox._end import end_run
from calipers.sandbox._result import SandboxError, SandboxResult

__all__ = ["BOOT_SOURCE", "Isolation", "Limits", "execute", "launch"]

BOOT_SOURCE = (Path(__file__).parent / "_boot.py").read_text(encoding="utf-8")
_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 512
    max_processes: int = 32
    file_mb: int = 16
    max_output: int = 64 * 1024  # bytes kept of each of stdout and stderr

    def rlimits(self) -> dict[str, int]:
        mib = 1024 * 1024
        return {
            "RLIMIT_CPU": self.cpu_s,
            "RLIMIT_AS": self.memory_mb * mib,
            "RLIMIT_NPROC": self.max_processes,
            "RLIMIT_FSIZE": self.file_mb * mib,
            "RLIMIT_NOFILE": 256,
            "RLIMIT_CORE": 0,
        }


@dataclass(frozen=True)
class Isolation:
    """How programs are isolated on this machine (found once by :func:`detect_isolation`).

    ``namespaces`` is a subset of ``user`` (an unprivileged user namespace, when not root),
    ``net``, ``pid`` and ``mount``, created by ``unshare``; ``uid``/``gid``, when set, is the
    unprivileged user the program runs as (root drops to ``nobody``); ``python`` is an
    interpreter that user can run.
    """

    python: str
    unshare: str | None = None
    namespaces: tuple[str, ...] = ()
    uid: int | None = None
    gid: int | None = None

    def active_namespaces(self, network: bool) -> tuple[str, ...]:
        ns = tuple(n for n in self.namespaces if not (network and n == "net"))
        return ns if self.unshare and set(ns) - {"user"} else ()

    def command(self, network: bool) -> list[str]:
        ns = self.active_namespaces(network)
        if not ns:
            return []
        flags = ["--user", "--map-root-user"] if "user" in ns else []
        flags += [f"--{n}" for n in ("net", "pid", "mount") if n in ns]
        if "pid" in ns:
            flags += ["--fork", "--kill-child"]
        return [str(self.unshare), *flags, "--"]

    def layers(self, network: bool) -> tuple[str, ...]:
        ns = self.active_namespaces(network)
        names = {"user": "userns", "net": "netns", "pid": "pidns", "mount": "mountns"}
        out = [names[n] for n in ("user", "net", "pid", "mount") if n in ns]
        if self.uid is not None:
            out.append("unprivileged-user")
        return (*out, "rlimits", "no-new-privs", "tmpdir", "empty-env", "new-session")


def _read_stream(f: IO[bytes], limit: int) -> str:
    """At most about ``limit`` bytes of a captured stream: a quarter from the head, the rest
    from the tail (tracebacks end a stream), with the count of bytes left out in between."""
    size = os.fstat(f.fileno()).st_size
    f.seek(0)
    if size <= limit:
        return f.read().decode("utf-8", errors="replace")
    head = f.read(limit // 4)
    f.seek(size - (limit - limit // 4))
    tail = f.read()
    omitted = size - len(head) - len(tail)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[... {omitted} bytes omitted ...]\n"
        + tail.decode("utf-8", errors="replace")
    )


def _drain(fd: int, limit: int = 65536) -> bytes:
    """What is in the pipe now (at most ``limit`` bytes), without waiting; closes ``fd``."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while len(data) < limit and (chunk := os.read(fd, limit - len(data))):
            data += chunk
    except BlockingIOError:
        pass  # a writer the program left behind still holds it: what is there is all
    finally:
        os.close(fd)
    return data


class _UserBusy(SandboxError):
    """The program could not start because its user had ``RLIMIT_NPROC`` processes."""


def _status(fd: int) -> tuple[int | None, bool]:
    """The program's exit status from the supervisor's pipe (None if it wrote none, or
    something that is not what it writes), and whether the supervisor ended it at the
    deadline."""
    code, timed_out = None, False
    for line in _drain(fd).decode("utf-8", errors="replace").splitlines():
        try:
            msg = json.loads(line)
            if "start_error" in msg:
                busy = msg.get("errno") == errno.EAGAIN
                raise (_UserBusy if busy else SandboxError)(
                    f"The sandbox could not start the program: {msg['start_error']}"
                )
            code, timed_out = int(msg["returncode"]), msg.get("timed_out") is True
        except (ValueError, TypeError, KeyError, AttributeError):
            return None, False
    return code, timed_out


def _reason(timed_out: bool, code: int, stderr: str) -> str | None:
    if timed_out:
        return "timeout"
    if code < 0:
        named = {signal.SIGXCPU: "cpu", signal.SIGXFSZ: "file-size", signal.SIGKILL: "killed"}
        try:
            sig = signal.Signals(-code)
        except ValueError:
            return f"signal:{-code}"
        return named.get(sig, f"signal:{sig.name}")
    if code != 0 and "MemoryError" in stderr[-2000:]:
        return "memory"
    if code != 0 and "[Errno 27] File too large" in stderr[-2000:]:
        return "file-size"  # Python ignores SIGXFSZ: the write fails with EFBIG instead
    return None


def _prepare(work: Path, files: Mapping[str, str], iso: Isolation) -> None:
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
        (work / name).chmod(0o644)
    if iso.uid is not None and iso.gid is not None:
        os.chown(work, iso.uid, iso.gid)
    work.chmod(0o700)


def execute(code: str, iso: Isolation, limits: Limits, *, network: bool) -> SandboxResult:
    """Run ``code`` as ``main.py`` in a fresh work directory under ``iso`` and ``limits``."""
    return launch({"main.py": code}, iso, limits, network=network)[0]


def _pipes(secret: bytes | None) -> tuple[list[int], list[int]]:
    """(descriptors the program keeps, ours to read): with a secret, a pipe that holds it
    (only the read end goes to the program) and a report pipe back (``[nonce_r, report_w]``
    and ``[report_r]``); without, none."""
    if secret is None:
        return [], []
    nonce_r, nonce_w = os.pipe()
    try:
        os.write(nonce_w, secret)  # far below a pipe's capacity: never blocks
    finally:
        os.close(nonce_w)
    report_r, report_w = os.pipe()
    return [nonce_r, report_w], [report_r]


def launch(
    files: Mapping[str, str],
    iso: Isolation,
    limits: Limits,
    *,
    network: bool,
    args: Sequence[str] = (),
    secret: bytes | None = None,
) -> tuple[SandboxResult, bytes]:
    """Run ``files["main.py"]`` (the other files beside it) as ``python -I -S main.py
    [fds] [args]`` and return its verdict and what it wrote on its report pipe. With a
    ``secret``, the program's first two arguments are a descriptor to read the secret from
    and one to write its report to; without, the report is empty.

    ``RLIMIT_NPROC`` counts every process of the sandbox's user: while other programs of
    that user (other sandboxes running at the same time) hold ``max_processes`` of them, the
    program cannot start; that is retried for up to ``timeout_s``, then a SandboxError."""
    give_up = time.monotonic() + limits.timeout_s
    delay = 0.05
    while True:
        try:
            return _launch_once(files, iso, limits, network=network, args=args, secret=secret)
        except _UserBusy as e:
            if time.monotonic() + delay > give_up:
                raise SandboxError(
                    f"{e} (the sandbox's user had max_processes={limits.max_processes} "
                    f"processes for {limits.timeout_s:g} s: other programs of that user, such "
                    "as sandboxes running at the same time, hold them)"
                ) from e
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _config(
    work: Path, iso: Isolation, limits: Limits, network: bool, keep: list[int], w: int
) -> dict[str, object]:
    active = iso.active_namespaces(network)
    mounts = "mount" in active
    return {
        "status_fd": w,
        "mounts": mounts,
        "proc": mounts and "pid" in active,
        "workdir": str(work),
        "tmpfs_mb": limits.file_mb,
        "uid": iso.uid,
        "gid": iso.gid,
        "main": "main.py",
        "keep_fds": keep,
        "limits": limits.rlimits(),
    }


def _launch_once(
    files: Mapping[str, str],
    iso: Isolation,
    limits: Limits,
    *,
    network: bool,
    args: Sequence[str],
    secret: bytes | None,
) -> tuple[SandboxResult, bytes]:
    with (
        tempfile.TemporaryDirectory(prefix="calipers-sandbox-") as tmp,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        work = Path(tmp)
        _prepare(work, files, iso)
        home = "/tmp" if "mount" in iso.active_namespaces(network) else str(work)
        env = {"PATH": _PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": home, "TMPDIR": home}
        keep, ours = _pipes(secret)
        r, w = os.pipe()
        start = time.monotonic()
        cfg = _config(work, iso, limits, network, keep, w)
        cfg |= {"args": [*map(str, keep), *args], "deadline": start + limits.timeout_s}
        cmd = [*iso.command(network), iso.python, "-I", "-S", "-c", BOOT_SOURCE, json.dumps(cfg)]
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(w, *keep),
            )
        except OSError as e:
            for fd in (r, *ours):
                os.close(fd)
            raise SandboxError(f"The sandbox could not launch {cmd[0]}: {e}") from e
        finally:
            for fd in (w, *keep):
                os.close(fd)
        forced = end_run(proc, start + limits.timeout_s)
        wall = time.monotonic() - start
        report = _drain(ours[0]) if ours else b""
        status, timed_out = _status(r)
        stdout, stderr = _read_stream(out, limits.max_output), _read_stream(err, limits.max_output)
    layers = iso.layers(network)
    verdict = _verdict(proc.returncode, status, forced or timed_out, stdout, stderr, wall, layers)
    return verdict, report


def _verdict(
    exit_code: int,
    status: int | None,
    timed_out: bool,
    stdout: str,
    stderr: str,
    wall: float,
    layers: tuple[str, ...],
) -> SandboxResult:
    returncode = status if status is not None else exit_code
    reason = _reason(timed_out, returncode, stderr)
    # The supervisor's status line and its exit status must agree. No status, or a status the
    # exit contradicts, means the supervisor was disturbed (only possible under the weaker
    # fallbacks, where the program can reach it, or by the OOM killer): a failure, not a pass.
    consistent = status is not None and (exit_code == 0) == (status == 0)
    if not timed_out and not consistent:
        reason = "supervisor-lost"
    return SandboxResult(
        passed=status == 0 and exit_code == 0 and not timed_out,
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        killed_reason=reason,
        wall_s=wall,
        isolation=layers,
    )
