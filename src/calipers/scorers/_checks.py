"""Reference checks users expect: the output contains given strings, is JSON valid against a
schema, is code that runs; the call stayed within a latency or a cost limit.

Limits are 1 (within) or 0 (over) per item and NaN when the latency or the token counts are
unknown: an unmeasured item is not an item within budget. A cached response keeps the latency
and tokens of the call that produced it (``cached`` is noted in the details).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calipers._util.hashing import json_hash
from calipers.errors import ConfigError, DataError
from calipers.sandbox import run_python_async
from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._code import extract_code
from calipers.types import Sample, SampleOutput, Score

__all__ = ["code_runs", "contains", "cost_limit", "extract_json", "json_schema", "latency_limit"]

_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*?)```", re.S | re.I)


def _needles(sample: Sample, strings: Sequence[str] | None, field: str | None) -> list[str]:
    if strings is not None:
        return list(strings)
    if field is not None:
        v = sample.fields.get(field, sample.metadata.get(field))
        if isinstance(v, str):
            return [v]
        if isinstance(v, list | tuple) and v and all(isinstance(x, str) for x in v):
            return list(v)
        raise DataError(
            f"Sample {sample.id!r}: fields[{field!r}] is not a string or a list of strings.",
            hint="Add the column to the task's `fields.extra`.",
        )
    if not sample.target_text:
        raise DataError(f"Sample {sample.id!r} has no target for the contains check.")
    return [sample.target_text]


@scorer("contains", metrics=("contains",))
def contains(
    *,
    strings: Sequence[str] | None = None,
    field: str | None = None,
    mode: str = "all",
    ignore_case: bool = True,
) -> ScoreFn:
    """The output contains all (or any) of ``strings``, of ``fields[field]``, else the target.

    Plain substring search (not tokens), case-folded unless ``ignore_case`` is false."""
    if mode not in ("all", "any"):
        raise ConfigError(f"contains mode must be 'all' or 'any', not {mode!r}.")
    if strings is not None and (
        isinstance(strings, str)
        or not strings
        or not all(isinstance(s, str) and s for s in strings)
    ):
        raise ConfigError("contains strings must be a non-empty list of non-empty strings.")
    if strings is not None and field is not None:
        raise ConfigError("contains takes strings or field, not both.")

    def fold(text: str) -> str:
        return text.casefold() if ignore_case else text

    async def score(sample: Sample, output: SampleOutput) -> Score:
        text = fold(output.text)
        needles = _needles(sample, strings, field)
        found = [n for n in needles if fold(n) in text]
        ok = len(found) == len(needles) if mode == "all" else bool(found)
        missing = [n for n in needles if n not in found]
        return Score(
            values={"contains": float(ok)},
            answer=output.text.strip(),
            explanation=None if ok else f"missing: {missing[:5]}",
            metadata={"found": found[:20], "missing": missing[:20]},
        )

    return score


def extract_json(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for the JSON in a reply: the whole reply, else a fenced block, else
    the first object or array in it; ``(False, None)`` when there is none."""
    candidates = [text.strip(), *(b.strip() for b in _FENCE.findall(text))]
    for c in candidates:
        try:
            return True, json.loads(c)
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            return True, decoder.raw_decode(text, m.start())[0]
        except json.JSONDecodeError:
            continue
    return False, None


def _validator(schema: dict[str, Any] | None, schema_file: str | None) -> Any:
    if (schema is None) == (schema_file is None):
        raise ConfigError("json_schema needs exactly one of schema (inline) or schema_file.")
    if schema_file is not None:
        try:
            schema = json.loads(Path(schema_file).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"Schema file {schema_file!r} does not exist.") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"Schema file {schema_file}: not valid JSON ({e.msg}).") from None
    if not isinstance(schema, dict):
        raise ConfigError("A JSON schema must be a JSON object.")
    try:
        import jsonschema
    except ImportError:
        raise ConfigError(
            "The json_schema scorer needs the jsonschema package.", hint="pip install jsonschema"
        ) from None
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise ConfigError(f"Not a valid JSON schema: {e.message}.") from None
    return cls(schema)


@scorer("json_schema", metrics=("schema_valid", "valid_json"))
def json_schema(
    *,
    schema: dict[str, Any] | None = None,
    schema_file: str | None = None,
) -> ScoreFn:
    """The output holds JSON (whole, fenced, or embedded) that validates against a schema.

    ``schema_valid`` 1 only when it parses and validates; ``valid_json`` whether it parses.
    The schema's hash is kept in the details (a file may change after the run)."""
    validator = _validator(schema, schema_file)
    digest = json_hash(validator.schema, length=16)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        parsed, value = extract_json(output.text)
        errors = [] if not parsed else sorted(validator.iter_errors(value), key=str)
        ok = parsed and not errors
        why = None if ok else "no JSON found" if not parsed else errors[0].message[:300]
        return Score(
            values={"schema_valid": float(ok), "valid_json": float(parsed)},
            answer=json.dumps(value)[:2000] if parsed else None,
            explanation=why,
            metadata={"schema_hash": digest, "n_errors": len(errors)},
        )

    return score


@scorer("code_runs", metrics=("runs",))
def code_runs(*, timeout_s: float = 10.0, memory_mb: int = 512) -> ScoreFn:
    """The output's Python code (fenced or bare) runs to exit status 0 in the sandbox.

    Nothing is tested, only that it runs (``code_tests`` runs unit tests). A sandbox that
    cannot start is an error on the sample, not a 0."""
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError(f"code_runs timeout_s must be a number > 0, not {timeout_s!r}.")
    if not (isinstance(memory_mb, int) and memory_mb >= 64):
        raise ConfigError(f"code_runs memory_mb must be an integer >= 64, not {memory_mb!r}.")

    async def score(sample: Sample, output: SampleOutput) -> Score:
        code = extract_code(output.text)
        r = await run_python_async(
            code, timeout_s=timeout_s, cpu_s=max(1, math.ceil(timeout_s)), memory_mb=memory_mb
        )
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        why = (
            None
            if r.passed
            else (
                "timed out" if r.timed_out else lines[-1][:300] if lines else f"exit {r.returncode}"
            )
        )
        return Score(
            values={"runs": float(r.passed)},
            answer=code[:2000],
            explanation=why,
            metadata={
                "returncode": r.returncode,
                "timed_out": r.timed_out,
                "killed_reason": r.killed_reason,
            },
        )

    return score


def _positive(name: str, value: Any, *, zero: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        raise ConfigError(f"{name} must be a number {'>=' if zero else '>'} 0, not {value!r}.")
    return float(value)


@scorer("latency_limit", metrics=("within_latency",))
def latency_limit(*, max_s: float) -> ScoreFn:
    """1 when the model call took at most ``max_s`` seconds, 0 over; NaN when unmeasured."""
    limit = _positive("latency_limit max_s", max_s)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        src = output.response or output.loglikelihood
        lat = None if src is None else src.latency_s
        if lat is None:
            return Score(values={"within_latency": math.nan}, explanation="latency unknown")
        return Score(
            values={"within_latency": float(lat <= limit)},
            metadata={"latency_s": lat, "cached": bool(src and src.cached)},
        )

    return score


@scorer("cost_limit", metrics=("within_cost",))
def cost_limit(
    *,
    max_usd: float,
    usd_per_million_input: float,
    usd_per_million_output: float,
) -> ScoreFn:
    """1 when tokens x prices is at most ``max_usd`` per item, 0 over; NaN when the token
    counts are unknown. Prices are per million tokens (the model's price list)."""
    limit = _positive("cost_limit max_usd", max_usd)
    p_in = _positive("usd_per_million_input", usd_per_million_input, zero=True)
    p_out = _positive("usd_per_million_output", usd_per_million_output, zero=True)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        r = output.response
        tin = (
            r.input_tokens
            if r
            else (output.loglikelihood.input_tokens if output.loglikelihood else None)
        )
        tout = r.output_tokens if r else 0
        if tin is None or tout is None:
            return Score(values={"within_cost": math.nan}, explanation="token counts unknown")
        cost = (tin * p_in + tout * p_out) / 1e6
        return Score(
            values={"within_cost": float(cost <= limit)},
            metadata={
                "cost_usd": cost,
                "input_tokens": tin,
                "output_tokens": tout,
                "cached": bool(r and r.cached),
            },
        )

    return score
