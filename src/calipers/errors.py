"""The one error hierarchy of calipers.

Every error a user can cause or meet is a :class:`CalipersError`; the CLI prints its message
as one sentence (with ``hint`` on the next line) and exits non-zero, and shows the traceback
only with ``--debug``::

    CalipersError
    ├── ConfigError            bad option, bad spec string, unknown name
    │   ├── UnknownNameError   unknown task / model / scorer (with "did you mean")
    │   ├── TaskSpecError      malformed task file (file, line/field, what is expected)
    │   └── CardError          malformed model card (every problem: file, line, field)
    ├── DataError              a data file is missing or unreadable
    ├── ModelError             a model cannot be loaded or called
    │   ├── ModelLoadError     missing file, not a GGUF, missing optional package
    │   ├── ModelCallError     a call failed (after retries); recorded per sample, not raised
    │   └── NotSupportedError  the backend cannot do this (e.g. log-likelihoods)
    ├── StoreError             the store cannot be opened or is inconsistent
    │   └── RunNotFoundError   no run with that id or prefix
    ├── ResumeError            a run cannot be resumed as asked
    ├── DeadlineError          a run reached its --deadline; what is left waits for --resume
    ├── ExecutorError          the Ray executor cannot reach its cluster or lost its workers
    └── SandboxError           the sandbox could not start a program (an error, not a verdict)

The one exit-code table. Most commands: 0 done, 1 a bug in calipers, 2 an error (any
CalipersError, a usage error), 130 interrupted (Ctrl-C); ``calipers run`` adds 3 (finished,
but every sample of some task failed) and 4 (``--deadline`` reached; resumable). Commands
whose exit code is a decision for CI (``gate``, ``ab``, ``trend``, ``fingerprint check``,
``monitor --fail-on-drift``, ``monitor fingerprint --fail-on-change``) use 0, 1 and 2 for the
decision (pass / fail / inconclusive; promote / roll back / keep watching; no drift / drift; no
regression / regression; same / changed / inconclusive), so their error is 3 and their bug is
4: an error never reads as a decision.
The table is :data:`EXIT_CODES` (drawn here by :func:`format_exit_codes`, a test keeps the two
equal; ``calipers --help`` prints it)::

    code  most commands  run                       gate/ab/trend/fingerprint/monitor --fail-on-*
    0     done           finished                  pass / promote / no drift / same
    1     bug            bug                       fail / roll back / drift / changed
    2     error          error                     inconclusive / keep watching
    3     -              every sample of a task    error
                         failed
    4     -              --deadline reached        bug
    130   interrupted    interrupted (resumable)   interrupted
"""

from __future__ import annotations

import difflib
import itertools
import textwrap
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = [
    "EXIT_CODES",
    "EXIT_DECISION_ERROR",
    "EXIT_DECISION_INTERNAL",
    "EXIT_ERROR",
    "EXIT_FAIL",
    "EXIT_INCOMPLETE",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PASS",
    "EXIT_RUN_FAILED",
    "CalipersError",
    "CardError",
    "ConfigError",
    "DataError",
    "DeadlineError",
    "ExecutorError",
    "ExitCode",
    "ModelCallError",
    "ModelError",
    "ModelLoadError",
    "NotSupportedError",
    "ResumeError",
    "RunNotFoundError",
    "SandboxError",
    "StoreError",
    "TaskSpecError",
    "UnknownNameError",
    "format_exit_codes",
]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_ERROR = 2  # any CalipersError, and click's usage error (a bad option)
EXIT_RUN_FAILED = 3  # `calipers run`: every sample of some task failed (stored and reported)
EXIT_INCOMPLETE = 4  # `calipers run`: --deadline reached; resumable with --resume
EXIT_PASS = 0  # gate: pass; ab: promote; monitor --fail-on-drift: no drift
EXIT_FAIL = 1  # gate: fail; ab: roll back; monitor --fail-on-drift: drift
EXIT_INCONCLUSIVE = 2  # gate: inconclusive; ab: keep watching
EXIT_DECISION_ERROR = (
    3  # gate, ab, monitor --fail-on-drift: usage, configuration, data or model error: no decision
)
EXIT_DECISION_INTERNAL = 4  # gate, ab, monitor --fail-on-drift: a bug in calipers: no decision
EXIT_INTERRUPTED = 130


class ExitCode(NamedTuple):
    """One row of the exit-code table: what ``code`` means for most commands, for
    ``calipers run``, and for the decision commands (``gate``, ``ab``, and ``monitor`` with
    ``--fail-on-drift``)."""

    code: int
    most: str
    run: str
    decision: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(EXIT_OK, "done", "finished", "pass / promote / no drift / same"),
    ExitCode(EXIT_INTERNAL, "bug", "bug", "fail / roll back / drift / changed"),
    ExitCode(EXIT_ERROR, "error", "error", "inconclusive / keep watching"),
    ExitCode(EXIT_RUN_FAILED, "-", "every sample of a task failed", "error"),
    ExitCode(EXIT_INCOMPLETE, "-", "--deadline reached", "bug"),
    ExitCode(EXIT_INTERRUPTED, "interrupted", "interrupted (resumable)", "interrupted"),
)
_HEADER = ExitCode(0, "most commands", "run", "gate/ab/trend/fingerprint/monitor --fail-on-*")
_WIDTHS = (6, 15, 26)  # the last column takes what it needs


def format_exit_codes() -> str:
    """:data:`EXIT_CODES` as a plain-text table (drawn in this module's docstring, and at the
    end of ``calipers --help``)."""
    lines = []
    for i, row in enumerate((_HEADER, *EXIT_CODES)):
        *cells, last = ["code" if i == 0 else str(row.code), row.most, row.run, row.decision]
        wrapped = [textwrap.wrap(c, w - 2) for c, w in zip(cells, _WIDTHS, strict=True)]
        for *parts, tail in itertools.zip_longest(*wrapped, [last], fillvalue=""):
            padded = "".join(p.ljust(w) for p, w in zip(parts, _WIDTHS, strict=True))
            lines.append((padded + tail).rstrip())
    return "\n".join(lines)


class CalipersError(Exception):
    """Base of every calipers error. ``hint`` says what the user can do about it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class ConfigError(CalipersError):
    """An option, spec string or configuration value is wrong."""


class UnknownNameError(ConfigError):
    """A name (task, model, scorer, ...) is not registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str], *, hint: str | None = None):
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=3)
        msg = f"Unknown {kind} {name!r}."
        if close:
            msg += f" Did you mean {', '.join(repr(c) for c in close)}?"
        super().__init__(msg, hint=hint or f"Known {kind}s: {', '.join(known) or '(none)'}.")
        self.kind = kind
        self.name = name


class TaskSpecError(ConfigError):
    """A task spec file (YAML/JSON) or its data file is malformed."""


class CardError(ConfigError):
    """A model card file is malformed. ``problems`` lists every ``(where, field, message)``."""

    def __init__(self, problems: Sequence[tuple[str, str, str]], *, hint: str | None = None):
        where, field, msg = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        prefix = f"{where}: field '{field}'" if field else where
        super().__init__(f"{prefix}: {msg}{more}.", hint=hint)
        self.problems = list(problems)


class DataError(CalipersError):
    """A data file or directory is missing or unreadable."""


class ModelError(CalipersError):
    """A model cannot be loaded or called."""


class ModelLoadError(ModelError):
    """The model cannot be loaded: missing file, not a GGUF, missing package, bad server."""


class ModelCallError(ModelError):
    """A model call failed after retries. Recorded on the sample as an error, never a score."""


class NotSupportedError(ModelError):
    """The backend cannot do what was asked (for example, log-likelihood scoring)."""


class StoreError(CalipersError):
    """The store cannot be opened, migrated or read."""


class RunNotFoundError(StoreError):
    """No run matches the given id or prefix."""


class ResumeError(CalipersError):
    """A run cannot be resumed as asked (finished, changed data, different config)."""


class DeadlineError(CalipersError):
    """A run reached its wall-clock deadline. Finished samples are stored; the ``pending``
    others (not started, cut off, or failed) are left for ``calipers run --resume``."""

    def __init__(self, message: str, *, run_id: str, pending: int, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.run_id = run_id
        self.pending = pending


class ExecutorError(CalipersError):
    """The executor cannot carry out the run: no Ray cluster at the address, or every worker
    died. Finished samples are stored; the run resumes with ``calipers run --resume``."""


class SandboxError(CalipersError):
    """The sandbox itself could not run the program (not a verdict on the program): a scorer
    lets it propagate, so the sample is recorded as an error rather than as a failure."""
