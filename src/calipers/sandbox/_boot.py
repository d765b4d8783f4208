"""The sandbox's first process, run as ``python -I -S -c <this file's source> <config>``.

It is the supervisor: inside the new namespaces (when the harness could create them) it
mounts a private ``/tmp`` (the work directory), fresh tmpfs on the other world-writable
directories and a ``/proc`` of the new PID namespace; then it forks the program's process,
which sets the resource limits, drops to the unprivileged user, forbids new privileges and
execs ``python -I -S main.py [args]``, keeping only the descriptors in ``keep_fds`` (the test
harness's nonce and report pipes) and closing its own copies of them. The program gets its
own process group. The supervisor waits for it (until the harness's deadline, when it kills
the program's group), then kills every process the program left and reaps them all: as the
PID namespace's init with ``kill(-1)``, else as a child subreaper (orphans are handed back
to it) by killing the group and each child left. Only then does it write the exit status as
one JSON line to the status pipe, which the program itself never holds, and exit with the
same status (the harness requires both to say 0 for a pass). A run's processes are thus
gone, not only signalled, when the harness sees the supervisor end: a zombie left to a lazy
``init`` would still count against the next run's ``RLIMIT_NPROC``.

Only the standard library, and nothing from calipers: the interpreter running this file may
not be the one calipers is installed in.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys
import time
from typing import Any

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 38, 36
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
        os.setpgid(0, 0)  # its own group, which the supervisor can kill without itself
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
        errno = e.errno if isinstance(e, OSError) else None
        msg = json.dumps({"start_error": f"{type(e).__name__}: {e}", "errno": errno}) + "\n"
        os.write(status_fd, msg.encode())
        os._exit(127)


def _kill(pid: int, group: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)


def _children() -> list[int]:
    """This process's children, zombies included (Linux: from /proc; elsewhere none)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    out = []  # a kernel without CONFIG_PROC_CHILDREN: each process's parent, from its stat
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            out.append(int(name))
    return out


def _wait_for(pid: int) -> None:
    """Until ``pid`` has ended (left unreaped, so its group id stays ours), reaping the
    orphans handed to this process meanwhile."""
    while True:
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        if info is None or info.si_pid == pid:
            return
        os.waitpid(info.si_pid, 0)


def _end_all(pid: int) -> int:
    """Kill what the program ``pid`` left and reap every child; ``pid``'s wait status.

    As a PID namespace's init (pid 1), ``kill(-1)`` reaches exactly the namespace's processes.
    Otherwise the program's group is killed (atomically: a fork in progress is undone), and
    each child left, which as the subreaper includes anything that escaped the group, with
    its own group when it leads one; repeated until no child but ``pid`` is left."""
    if os.getpid() == 1:  # never elsewhere: kill(-1) would reach all the user may signal
        status = 125 << 8  # (not seen: pid is this process's child, unreaped until here)
        while True:
            _kill(-1)
            try:
                wpid, st = os.wait()
            except ChildProcessError:
                break
            status = st if wpid == pid else status
        return status
    while True:
        _kill(pid, group=True)
        left = [c for c in _children() if c != pid]
        if not left:
            return os.waitpid(pid, 0)[1]
        for c in left:
            _kill(c, group=_group_of(c) == c)
            _kill(c)
        for c in left:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(c, 0)


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def main() -> None:
    cfg = json.loads(sys.argv[1])
    status_fd = int(cfg["status_fd"])
    try:
        if cfg["mounts"]:
            _private_filesystem(cfg["workdir"], int(cfg["tmpfs_mb"]), bool(cfg["proc"]))
    except OSError as e:
        os.write(status_fd, (json.dumps({"start_error": str(e)}) + "\n").encode())
        os._exit(126)
    if sys.platform.startswith("linux"):
        _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans come here, to be reaped
    pid = os.fork()
    if pid == 0:
        _program(cfg, status_fd)
    with contextlib.suppress(OSError):  # it has exec'd already: then it did so itself
        os.setpgid(pid, pid)  # as the child does: whichever runs first
    for fd in cfg["keep_fds"]:
        os.close(fd)  # the program's alone: the nonce is read by it, the report written by it
    timed_out: list[bool] = []

    def deadline(_sig: int, _frame: Any) -> None:
        timed_out.append(True)
        _kill(pid, group=True)  # safe: pid is not reaped before _end_all, so still ours

    signal.signal(signal.SIGALRM, deadline)
    signal.setitimer(signal.ITIMER_REAL, max(float(cfg["deadline"]) - time.monotonic(), 0.001))
    _wait_for(pid)
    signal.setitimer(signal.ITIMER_REAL, 0)
    code = os.waitstatus_to_exitcode(_end_all(pid))
    msg = json.dumps({"returncode": code, "timed_out": bool(timed_out)}) + "\n"
    os.write(status_fd, msg.encode())
    os._exit(min(code, 255) if code >= 0 else 128 - code)  # the harness checks both agree


if __name__ == "__main__":
    main()
