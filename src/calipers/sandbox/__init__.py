"""Running model-written code in isolation: a separate process with time, CPU, memory,
process and file-size limits, a fresh work directory, an empty environment, and (where the OS
allows) no network, its own PID and mount namespaces and an unprivileged user.

:func:`run_tests` runs unit tests against such code and passes only on positive evidence
that the tests ran and returned. See ``docs/sandbox.md`` for what is isolated, how, and what is not.
"""

from calipers.sandbox._exec import Isolation
from calipers.sandbox._probe import detect_isolation
from calipers.sandbox._result import SandboxError, SandboxResult, SandboxWarning
from calipers.sandbox._run import max_concurrency, missing_layers, run_python, run_python_async
from calipers.sandbox._tests import TAMPERING, run_tests, run_tests_async

__all__ = [
    "TAMPERING",
    "Isolation",
    "SandboxError",
    "SandboxResult",
    "SandboxWarning",
    "detect_isolation",
    "max_concurrency",
    "missing_layers",
    "run_python",
    "run_python_async",
    "run_tests",
    "run_tests_async",
]
