"""Code generation scored by running unit tests in the sandbox (HumanEval convention).

The program is the problem's prompt (imports, helpers and the function's signature and
docstring), then the model's completion, then the test code and ``check(<entry point>)``:
what ``openai/human-eval`` runs, through :func:`calipers.sandbox.run_tests`, which passes only
on evidence that ``check`` returned (an early ``os._exit(0)`` fails and is flagged as
tampering). A reply that does not run as a continuation of the prompt but holds a markdown
fence (a chat reply) is unwrapped first; one that does (a plain completion, even with a
fence in a comment) runs as written. A completion that defines the entry point itself at
top level replaces the prompt's stub (the stub stays defined above it, so helpers and
imports from the prompt remain available). The default time limit is human-eval's, 3 s.
"""

from __future__ import annotations

import math
import re

from calipers.errors import ConfigError, DataError
from calipers.sandbox import TAMPERING, SandboxResult, run_tests_async
from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._error_rules import exception_name
from calipers.types import Sample, SampleOutput, Score

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "code_tests",
    "extract_code",
    "solution_code",
]

_FENCE = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\r?\n(.*?)(?:```|\Z)", re.S)
_ANSWER_CHARS = 2000
DEFAULT_TIMEOUT_S = 3.0  # openai/human-eval's evaluate_functional_correctness default


def _defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.M) is not None


def extract_code(text: str, entry_point: str | None = None, prompt: str | None = None) -> str:
    """The code in a reply: the fenced block that defines ``entry_point`` (else the first
    fenced block; an unclosed fence runs to the end), or the reply itself when unfenced.
    With the ``prompt`` it continues, a reply that already compiles after it is kept as is
    (a plain completion may hold a fence in a comment or a string)."""
    blocks = _FENCE.findall(text)
    if not blocks or (prompt is not None and _compiles(solution_code(prompt, text, entry_point))):
        return text
    if entry_point:
        for b in blocks:
            if _defines(b, entry_point):
                return str(b)
    return str(blocks[0])


def _compiles(code: str) -> bool:
    try:
        compile(code, "<completion>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def solution_code(prompt: str, completion: str, entry_point: str | None) -> str:
    """prompt + completion: what runs before the tests. A completion that defines the entry
    point follows the prompt on a fresh line instead of continuing its function body."""
    if entry_point and _defines(completion, entry_point):
        return prompt.rstrip("\n") + "\n\n" + completion
    return prompt + completion


def _explain(r: SandboxResult, timeout_s: float) -> str | None:
    if r.passed:
        return None
    if r.tampering:
        return "tampering: " + "; ".join(f"{t} ({TAMPERING[t]})" for t in r.tampering)
    if r.timed_out:
        return f"timed out after {timeout_s:g} s"
    if r.killed_reason:
        return f"killed: {r.killed_reason}"
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else f"exit status {r.returncode}"


@scorer("code_tests", metrics=("pass",))
def code_tests(*, timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = 512) -> ScoreFn:
    """Run the completion against the sample's unit tests in the sandbox: pass = 1 if all pass.

    The sample needs ``fields["test"]`` (test code) and, for HumanEval-style tests that
    define ``check(candidate)``, ``fields["entry_point"]``; its ``input`` is the prompt the
    completion continues. A program that fails, times out, or is killed by a limit scores 0,
    as does one that tampers with the harness (``Score.tampering`` says how); a sandbox
    that cannot start at all is an error on the sample, not a 0. ``timeout_s`` defaults to
    openai/human-eval's 3 s (the CPU limit is the same, rounded up)."""
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError(f"code_tests timeout_s must be a number > 0, not {timeout_s!r}.")
    if not (isinstance(memory_mb, int) and memory_mb >= 64):
        raise ConfigError(f"code_tests memory_mb must be an integer >= 64, not {memory_mb!r}.")

    async def score(sample: Sample, output: SampleOutput) -> Score:
        test = sample.fields.get("test")
        entry = sample.fields.get("entry_point")
        if not isinstance(test, str) or not (entry is None or isinstance(entry, str)):
            raise DataError(
                f"Sample {sample.id!r} has no test code; code_tests needs fields['test'] "
                "(and fields['entry_point'] for check(candidate) tests)."
            )
        code = extract_code(output.text, entry, sample.input)
        r = await run_tests_async(
            solution_code(sample.input, code, entry),
            test,
            entry_point=entry,
            timeout_s=timeout_s,
            cpu_s=max(1, math.ceil(timeout_s)),
            memory_mb=memory_mb,
        )
        return Score(
            values={"pass": 1.0 if r.passed else 0.0},
            answer=code[:_ANSWER_CHARS],
            explanation=_explain(r, timeout_s),
            tampering=r.tampering,
            metadata={
                "returncode": r.returncode,
                "timed_out": r.timed_out,
                "killed_reason": r.killed_reason,
                "wall_s": round(r.wall_s, 3),
                "stderr_tail": r.stderr_tail,
                "isolation": list(r.isolation),
                "warnings": list(r.warnings),
                "tests_completed": r.tests_completed,
                "exception": None if r.passed else exception_name(r.stderr),
            },
        )

    return score
