"""The sandbox's first process, run as ``python -I -S -c <this file's source> <config>``.

It is the supervisor: inside the new namespaces (when the harness could create them) it
mounts a private ``/tmp`` (the work directory), fresh tmpfs on the other world-writable
directories and a ``/proc`` of the new PID namespace; then it forks the program's process,
which sets the resource limits, drops to the unprivileged user, forbids new privileges and
execs ``python -I -S main.py [args]``, keeping only the descriptors in ``keep_fds`` (the test
harness's nonce and report pipes) and closing its own copies of them. The supervisor waits
for it and writes its exit status as one JSON line to the status pipe, which the program
itself never holds, and exits with the same status (the harness requires both to say 0 for
a pass). When the supervisor is the PID namespace's init, its exit kills every process the
program left behind.

Only the standard library, and nothing from calipers: the interpreter running this file may
not be the one calipers is installed in.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
from typing import Any

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
TMPFS_DIRS = ("/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    def b(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    if _libc().mount(b(src), b(target), b(fstype), flags, b(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _private_filesystem(workdir: str, tmpfs_mb: int, proc: bool) -> None:
    """The work directory becomes ``/tmp``; other world-writable places get an empty tmpfs."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    _mount(workdir, "/tmp", None, MS_BIND | MS_REC, None)
    for d in TMPFS_DIRS:
        if os.path.isdir(d) and not os.path.islink(d):
            _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_mb}m,mode=1777")
    if proc:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    os.chdir("/tmp")


def _set_limits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        which = getattr(resource, name)
        soft = value
        _cur_soft, cur_hard = resource.getrlimit(which)
        hard = value + 1 if name == "RLIMIT_CPU" else value  # SIGXCPU first, then SIGKILL
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(which, (soft, hard))


def _program(cfg: dict[str, Any], status_fd: int) -> None:
    """In the forked child: limits, unprivileged user, no new privileges, exec the program."""
    os.set_inheritable(status_fd, False)  # closed by exec: the program never holds it
    try:
        _set_limits(cfg["limits"])
        if cfg["uid"] is not None:
            os.setgroups([])
            os.setgid(cfg["gid"])
            os.setuid(cfg["uid"])
        if sys.platform.startswith("linux") and _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        exe = sys.executable
        os.execve(exe, [exe, "-I", "-S", cfg["main"], *cfg["args"]], dict(os.environ))
    except BaseException as e:
        msg = json.dumps({"start_error": f"{type(e).__name__}: {e}"}) + "\n"
        os.write(status_fd, msg.encode())
        os._exit(127)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    status_fd = int(cfg["status_fd"])
    try:
        if cfg["mounts"]:
            _private_filesystem(cfg["workdir"], int(cfg["tmpfs_mb"]), bool(cfg["proc"]))
    except OSError as e:
        os.write(status_fd, (json.dumps({"start_error": str(e)}) + "\n").encode())
        os._exit(126)
    pid = os.fork()
    if pid == 0:
        _program(cfg, status_fd)
    for fd in cfg["keep_fds"]:
        os.close(fd)  # the program's alone: the nonce is read by it, the report written by it
    # A backstop for the harness's own timeout (say the harness itself was killed): past the
    # deadline the program is killed; as the PID namespace's init, exiting ends the rest.
    signal.signal(signal.SIGALRM, lambda _sig, _frame: os.kill(pid, signal.SIGKILL))
    signal.setitimer(signal.ITIMER_REAL, float(cfg["deadline_s"]))
    status = None
    while status is None:
        try:
            wpid, st = os.wait()  # as init, this also reaps orphans the program left
        except ChildProcessError:
            break
        if wpid == pid:
            status = st
    code = os.waitstatus_to_exitcode(status) if status is not None else 125
    os.write(status_fd, (json.dumps({"returncode": code}) + "\n").encode())
    os._exit(min(code, 255) if code >= 0 else 128 - code)  # the harness checks both agree


if __name__ == "__main__":
    main()
