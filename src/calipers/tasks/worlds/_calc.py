"""``calculate``: a code-running tool. The model's Python (an expression, or a snippet whose
last line is an expression) runs in :mod:`calipers.sandbox` (its own process, no network, an
empty environment, a fresh directory, time/CPU/memory limits), never in the evaluating
process; what comes back is clipped and passed to the model as data in the tool's result."""

from __future__ import annotations

import ast
import json
from typing import Any

from calipers.sandbox import run_python_async
from calipers.types import ToolError, ToolSpec

__all__ = ["CALCULATE", "MAX_CODE", "MAX_OUTPUT", "calculate", "calculator_program"]

MAX_CODE = 2_000  # characters of code accepted
MAX_OUTPUT = 500  # characters of output passed back
TIMEOUT_S = 5.0

CALCULATE = ToolSpec(
    name="calculate",
    description="Evaluate arithmetic in Python (e.g. '19.99 + 24.50'); the last line's value "
    "is returned. Runs in a sandbox with a time limit.",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "Python to evaluate"}},
        "required": ["expression"],
    },
)

_WRAPPER = """
import ast as _ast
_src = {code!r}
_tree = _ast.parse(_src)
_last = _tree.body.pop() if _tree.body and isinstance(_tree.body[-1], _ast.Expr) else None
exec(compile(_tree, "<calculate>", "exec"))
if _last is not None:
    _v = eval(compile(_ast.Expression(_last.value), "<calculate>", "eval"))
    if isinstance(_v, float):
        _v = round(_v, 6)
    print(repr(_v))
"""


def calculator_program(code: str) -> str:
    """The program the sandbox runs for ``code``: it prints the last expression's value
    (floats rounded to 6 decimals, so 19.99 + 24.50 is 44.49)."""
    return _WRAPPER.format(code=code)


async def calculate(db: dict[str, Any], args: dict[str, Any], timeout_s: float = TIMEOUT_S) -> str:
    code = args.get("expression")
    if not isinstance(code, str) or not code.strip():
        raise ToolError("expression must be a non-empty string")
    if len(code) > MAX_CODE:
        raise ToolError(f"expression too long ({len(code)} characters; at most {MAX_CODE})")
    try:
        ast.parse(code)
    except SyntaxError as e:
        raise ToolError(f"not valid Python: {e.msg}") from None
    r = await run_python_async(
        calculator_program(code), timeout_s=timeout_s, cpu_s=2, memory_mb=256
    )
    out = r.stdout.strip()
    if not r.passed:
        why = r.killed_reason or (r.stderr.strip().splitlines() or ["failed"])[-1]
        raise ToolError(f"calculation failed: {why[:MAX_OUTPUT]}")
    clipped = len(out) > MAX_OUTPUT
    return json.dumps({"result": out[:MAX_OUTPUT], **({"clipped": True} if clipped else {})})
