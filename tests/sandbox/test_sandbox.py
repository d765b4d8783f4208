"""The sandbox against hostile programs: each is contained, reported as not passed, and the
test process (the harness) keeps running. Layers this machine lacks skip with the reason."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import calipers
from calipers.errors import ConfigError
from calipers.sandbox import (
    SandboxResult,
    SandboxWarning,
    _run,
    detect_isolation,
    run_python,
    run_python_async,
)

LAYERS = detect_isolation().layers(False)
REPO = Path(calipers.__file__).resolve().parents[2]
ISO = detect_isolation()


def needs(*layers: str) -> pytest.MarkDecorator:
    missing = [x for x in layers if x not in LAYERS]
    return pytest.mark.skipif(bool(missing), reason=f"isolation layer(s) {missing} unavailable")


def _left_behind(token: str) -> int:
    """Processes whose working directory holds ``token`` (marked programs chdir into it)."""
    n = 0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                n += token in os.readlink(d / "cwd")
    return n


def marked(token: str, code: str) -> str:
    """``code`` run from a directory named ``token``, so its processes can be found."""
    return f"import os\nos.mkdir({token!r})\nos.chdir({token!r})\n{code}"


@pytest.fixture
def harness_survives() -> Iterator[str]:
    """After a hostile program: this process is alive, a normal program still runs, and no
    process of a program marked with the yielded token is left."""
    token = f"calipers-mark-{secrets.token_hex(6)}"
    yield token
    os.kill(os.getpid(), 0)
    assert run_python("print('still fine')", timeout_s=5).stdout == "still fine\n"
    deadline = time.monotonic() + 3
    while _left_behind(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _left_behind(token) == 0


def failed(r: SandboxResult, *expected_in_stderr: str) -> None:
    assert not r.passed, r
    for text in expected_in_stderr:
        assert text in r.stderr, r.stderr


def test_normal_program_passes() -> None:
    r = run_python("import math\nprint(math.factorial(5))\n", timeout_s=5)
    assert (r.passed, r.returncode, r.stdout, r.timed_out, r.killed_reason) == (
        True,
        0,
        "120\n",
        False,
        None,
    )
    assert {"rlimits", "tmpdir", "empty-env", "new-session"} <= set(r.isolation)
    assert r.wall_s < 5


def test_failing_assert_is_not_passed() -> None:
    r = run_python("assert 1 + 1 == 3, 'wrong'\n", timeout_s=5)
    assert (r.passed, r.returncode, r.killed_reason) == (False, 1, None)
    assert "AssertionError: wrong" in r.stderr


@pytest.mark.parametrize(
    "code",
    [
        "import os\nwhile True:\n    os.fork()\n",
        "import subprocess, sys\nkids = []\nwhile True:\n"
        "    kids.append(subprocess.Popen(\n"
        "        [sys.executable, '-c', 'import time; time.sleep(60)']))\n",
    ],
    ids=["os.fork", "subprocess"],
)
def test_fork_bomb_hits_the_process_limit(code: str, harness_survives: str) -> None:
    r = run_python(marked(harness_survives, code), timeout_s=5)
    failed(r, "BlockingIOError")
    assert not r.timed_out and r.wall_s < 5


def test_fork_bomb_that_keeps_trying_is_killed_at_the_timeout(harness_survives: str) -> None:
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    r = run_python(marked(harness_survives, code), timeout_s=2)
    assert (r.passed, r.timed_out, r.killed_reason) == (False, True, "timeout")
    assert r.wall_s < 4


@pytest.mark.usefixtures("harness_survives")
@pytest.mark.parametrize(
    "code",
    [
        "x = bytearray(10 * 1024 ** 3)\n",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 ** 2))\n",
    ],
    ids=["10GB-at-once", "grow"],
)
def test_memory_bomb_hits_the_memory_limit(code: str) -> None:
    r = run_python(code, timeout_s=5, memory_mb=256)
    failed(r, "MemoryError")
    assert r.killed_reason == "memory"


@pytest.mark.usefixtures("harness_survives")
def test_infinite_sleep_is_killed_at_the_wall_clock_timeout() -> None:
    r = run_python("import time\nprint('start', flush=True)\ntime.sleep(600)\n", timeout_s=2)
    assert (r.passed, r.timed_out, r.killed_reason, r.stdout) == (False, True, "timeout", "start\n")
    assert 2 <= r.wall_s < 4


@pytest.mark.usefixtures("harness_survives")
def test_cpu_spin_is_killed_at_the_cpu_limit() -> None:
    r = run_python("while True:\n    pass\n", timeout_s=5, cpu_s=1)
    assert (r.passed, r.timed_out, r.killed_reason) == (False, False, "cpu")
    assert r.wall_s < 4


@needs("mountns")
@pytest.mark.usefixtures("harness_survives")
def test_writing_to_tmp_lands_in_the_private_work_dir() -> None:
    target = Path(f"/tmp/calipers_escape_{secrets.token_hex(8)}")
    code = f"open({str(target)!r}, 'w').write('x')\nimport os\nprint(sorted(os.listdir('/tmp')))\n"
    r = run_python(code, timeout_s=5)
    assert target.name in r.stdout and "main.py" in r.stdout  # the sandbox's /tmp = work dir
    assert not target.exists()


@needs("unprivileged-user")
@pytest.mark.usefixtures("harness_survives")
@pytest.mark.parametrize("where", ["repo", "home"])
def test_writing_outside_the_work_dir_is_denied(where: str) -> None:
    target = (REPO if where == "repo" else Path.home()) / f"calipers_escape_{secrets.token_hex(8)}"
    r = run_python(f"open({str(target)!r}, 'w').write('x')\n", timeout_s=5)
    failed(r)
    # Denied by permissions, or (a checkout under /tmp) not even visible in the private /tmp.
    assert "PermissionError" in r.stderr or "FileNotFoundError" in r.stderr, r.stderr
    assert not target.exists()


@pytest.mark.usefixtures("harness_survives")
def test_environment_secrets_are_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIPERS_TEST_SECRET", "hunter2-" + secrets.token_hex(4))
    r = run_python("import json, os\nprint(json.dumps(dict(os.environ)))\n", timeout_s=5)
    env = json.loads(r.stdout)
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR"}
    assert env["HOME"] != os.path.expanduser("~") and "hunter2" not in r.stdout
    r = run_python("import os\nprint(os.environ['CALIPERS_TEST_SECRET'])\n", timeout_s=5)
    failed(r, "KeyError")


@pytest.mark.skipif(
    not ({"pidns", "unprivileged-user"} & set(LAYERS)),
    reason="neither a PID namespace nor an unprivileged user",
)
@pytest.mark.usefixtures("harness_survives")
def test_the_harness_environment_cannot_be_read_through_proc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CALIPERS_TEST_SECRET", "hunter2")
    r = run_python(f"print(open('/proc/{os.getpid()}/environ').read())\n", timeout_s=5)
    assert not r.passed and "hunter2" not in r.stdout
    assert "PermissionError" in r.stderr or "FileNotFoundError" in r.stderr


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        srv.listen()
        yield srv.getsockname()[1]


def _connect(port: int) -> str:
    return (
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "print('connected')\n"
    )


@needs("netns")
@pytest.mark.usefixtures("harness_survives")
def test_a_socket_to_a_local_listener_fails(listener: int) -> None:
    r = run_python(_connect(listener), timeout_s=5)
    failed(r, "OSError")
    assert "connected" not in r.stdout and r.warnings == ()


def test_without_a_network_namespace_the_run_warns_loudly(
    listener: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weaker = dataclasses.replace(ISO, namespaces=(), unshare=None)
    monkeypatch.setattr(_run, "_isolation", lambda: weaker)
    with pytest.warns(SandboxWarning) as caught:
        r = run_python(_connect(listener), timeout_s=5)
    assert any("NO NETWORK ISOLATION" in str(w.message) for w in caught)
    assert r.passed and "connected" in r.stdout  # the fallback really is weaker
    assert "netns" not in r.isolation and any("NETWORK" in w for w in r.warnings)


def test_network_true_keeps_the_host_network(listener: int) -> None:
    r = run_python(_connect(listener), timeout_s=5, network=True)
    assert r.passed and "netns" not in r.isolation and r.warnings == ()


@pytest.mark.skipif(
    not ({"pidns", "unprivileged-user"} & set(LAYERS)),
    reason="neither a PID namespace nor an unprivileged user: the program could kill the harness",
)
@pytest.mark.usefixtures("harness_survives")
@pytest.mark.parametrize(
    "attack",
    [
        "os.kill(os.getppid(), signal.SIGKILL)",
        "os.kill({pid}, signal.SIGKILL)",
        "os.killpg(os.getpgid({pid}), signal.SIGKILL)",
        "os.killpg({pgid}, signal.SIGKILL)",
        "os.kill(-1, signal.SIGKILL)",
    ],
    ids=["getppid", "harness-pid", "harness-pgid-lookup", "harness-pgid", "everything"],
)
def test_killing_the_parent_is_denied(attack: str) -> None:
    stmt = attack.format(pid=os.getpid(), pgid=os.getpgid(0))
    r = run_python(f"import os, signal\n{stmt}\nprint('survived the attack')\n", timeout_s=5)
    assert not r.passed and "survived the attack" not in r.stdout
    assert "PermissionError" in r.stderr or "ProcessLookupError" in r.stderr


@pytest.mark.usefixtures("harness_survives")
def test_output_is_clipped_and_file_size_limited() -> None:
    r = run_python("print('x' * 1_000_000)\nraise SystemExit('the end')\n", timeout_s=5)
    assert len(r.stdout) < 70_000 and "bytes omitted" in r.stdout
    assert r.stderr.strip() == "the end" and r.returncode == 1
    r = run_python("open('big', 'wb').write(b'0' * (8 * 1024 ** 2))\n", timeout_s=5, file_mb=4)
    assert (r.passed, r.killed_reason) == (False, "file-size")


def test_concurrent_async_runs() -> None:
    async def many() -> list[SandboxResult]:
        return await asyncio.gather(
            *(run_python_async(f"print({i})", timeout_s=10) for i in range(6))
        )

    results = asyncio.run(many())
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(6)]


def test_bad_limits_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="timeout_s"):
        run_python("pass", timeout_s=0)
    with pytest.raises(ConfigError, match="memory_mb"):
        run_python("pass", memory_mb=0)


@pytest.fixture
def without_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback where ``unshare`` is unavailable: limits and the unprivileged user only."""
    weaker = dataclasses.replace(ISO, namespaces=(), unshare=None)
    monkeypatch.setattr(_run, "_isolation", lambda: weaker)


@needs("unprivileged-user")
@pytest.mark.filterwarnings("ignore::calipers.sandbox.SandboxWarning")
@pytest.mark.usefixtures("without_namespaces")
@pytest.mark.parametrize(
    "code",
    [
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        f"import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill({os.getpid()}, 9)\n",
        "x = bytearray(10 * 1024 ** 3)\n",
    ],
    ids=["fork-bomb", "kill-parent", "memory-bomb"],
)
def test_the_fallback_without_namespaces_still_contains(
    code: str,
    harness_survives: str,
) -> None:
    r = run_python(marked(harness_survives, code), timeout_s=2)
    assert not r.passed and "netns" not in r.isolation and r.warnings


def test_missing_layers_name_what_the_program_could_do() -> None:
    from calipers.sandbox import Isolation, missing_layers

    bare = Isolation(python="python3")
    warnings = " ".join(missing_layers(bare, network=False))
    assert "NO NETWORK ISOLATION" in warnings and "NO PROCESS ISOLATION" in warnings
    assert "NO PRIVATE /tmp" in warnings
    assert not any("NETWORK" in w for w in missing_layers(bare, network=True))


def test_docs_example_runs_and_its_comments_are_true() -> None:
    import contextlib
    import io
    import re

    doc = REPO / "docs" / "sandbox.md"
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {})
    promised = [m.group(1) for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    assert out.getvalue().splitlines() == promised


@pytest.mark.skipif(os.geteuid() != 0 or ISO.uid is None, reason="needs root and a user drop")
def test_a_sandbox_that_cannot_start_is_an_error_not_a_failure(tmp_path: Path) -> None:
    from calipers.errors import CalipersError
    from calipers.sandbox import SandboxError
    from calipers.sandbox._exec import Limits, execute

    hidden = tmp_path / "hidden"
    hidden.mkdir(mode=0o700)
    exe = hidden / "python3"
    exe.symlink_to(ISO.python)  # nobody cannot traverse 'hidden': exec fails
    broken = dataclasses.replace(ISO, python=str(exe))
    with pytest.raises(SandboxError, match="could not start the program") as e:
        execute("print(1)", broken, Limits(timeout_s=5), network=False)
    assert isinstance(e.value, CalipersError)
