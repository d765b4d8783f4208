"""Single-call tool accuracy by AST matching, in the style of BFCL (Berkeley Function Calling
Leaderboard, Patil et al.): the calls a model made in its first step are checked against the
item's expected calls, argument by argument, without running anything.

An item says what is right with BFCL's "possible answers": a list of expected calls, each
``{"function_name": {"argument": [allowed values...]}}``. An argument whose allowed values
include ``""`` may be left out (an optional argument); an empty list of expected calls means
no call is right (irrelevance: none of the tools fits the request). The item's tools (their JSON
schemas) give the required arguments and the types.

Rules, each a ``reason`` in ``Score.metadata`` when it fails (the first failure is reported):

- ``no_call``: a call was expected and the model answered in text;
- ``called_when_none_expected``: irrelevance item, and the model called a tool (a call whose
  arguments did not parse counts: the model tried to call);
- ``unparsed_arguments``: a call's arguments were not a JSON object;
- ``wrong_count``: not as many calls as expected (parallel items expect several);
- ``wrong_name``: the function is not the expected one (single expected call);
- ``missing_required``: an argument the tool's schema requires is absent;
- ``unexpected_argument``: an argument the tool does not have, or the answer does not allow;
- ``wrong_type``: a value of the wrong JSON type (an integer passes where a number is asked,
  as in BFCL; a boolean never passes as a number);
- ``wrong_value``: a value not among the allowed ones (strings compared case-insensitively,
  ignoring spaces and ``,./-_*^``, as BFCL does; lists element by element);
- ``missing_argument``: an argument the answer expects (no ``""`` among its allowed values)
  is absent;
- ``no_match``: several expected calls, and one of them matches none of the model's calls
  (calls are matched in any order, each model call used once).

Metric: ``call_acc`` (1 when every rule passes). The item's category (simple, multiple,
parallel, irrelevance) gives the breakdown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calipers.errors import DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.types import Sample, SampleOutput, Score, ToolCall

__all__ = ["CallCheck", "expected_calls", "match_calls", "tool_call_match"]

_STRIP = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class CallCheck:
    """The verdict on one step's calls: ``ok``, and when not, the rule that failed
    (``reason``) and what exactly (``detail``)."""

    ok: bool
    reason: str
    detail: str = ""


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return _STRIP.sub("", value).lower()
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def _type_error(value: Any, schema: Mapping[str, Any], where: str) -> str | None:
    """Why ``value`` is not of the schema's type (None when it is, or the schema has none)."""
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: any of them
        if value is None and "null" in kind:
            return None
        kinds = [k for k in kind if k != "null"]
        errors = [_type_error(value, {**schema, "type": k}, where) for k in kinds]
        return None if any(e is None for e in errors) else errors[0]
    if not isinstance(kind, str) or kind not in _TYPES:
        return None
    if isinstance(value, bool) and kind != "boolean":
        return f"{where}: {value!r} is a boolean, not {kind}"
    if not isinstance(value, _TYPES[kind]):
        return f"{where}: {value!r} is {type(value).__name__}, not {kind}"
    if isinstance(value, (list, tuple)) and isinstance(schema.get("items"), Mapping):
        for i, v in enumerate(value):
            if (e := _type_error(v, schema["items"], f"{where}[{i}]")) is not None:
                return e
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        props = schema["properties"]
        for k, v in value.items():
            if isinstance(props.get(k), Mapping) and (
                e := _type_error(v, props[k], f"{where}.{k}")
            ):
                return e
    return None


def _value_ok(value: Any, allowed: Sequence[Any]) -> bool:
    return any(_one_ok(value, a) for a in allowed)


def _one_ok(value: Any, a: Any) -> bool:
    if isinstance(a, Mapping):  # a dict argument: its keys have allowed values of their own
        return isinstance(value, Mapping) and _dict_ok(value, a)
    if isinstance(a, list) and any(isinstance(x, Mapping) for x in a):  # a list of dicts
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(a)
            and all(_one_ok(v, x) for v, x in zip(value, a, strict=True))
        )
    return bool(_norm(value) == _norm(a))


def _dict_ok(value: Mapping[str, Any], allowed: Mapping[str, Any]) -> bool:
    """A dict argument against one allowed dict whose keys map to lists of allowed values."""
    for k, v in value.items():
        options = allowed.get(k)
        if options is None:
            return False
        if not _value_ok(v, options if isinstance(options, list) else [options]):
            return False
    return all(k in value or "" in _as_list(v) for k, v in allowed.items())


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


def check_call(
    call: ToolCall, expected: Mapping[str, Any], tools: Mapping[str, Mapping[str, Any]]
) -> CallCheck:
    """One call against one expected call ``{name: {argument: [allowed...]}}``; ``tools``
    maps tool names to their parameter schemas."""
    ((name, answer),) = expected.items()
    if call.arguments is None:
        return CallCheck(False, "unparsed_arguments", call.error or "not a JSON object")
    if call.name != name:
        return CallCheck(False, "wrong_name", f"called {call.name!r}, expected {name!r}")
    schema = tools.get(name) or {}
    props: Mapping[str, Any] = schema.get("properties") or {}
    for req in schema.get("required") or ():
        if req not in call.arguments:
            return CallCheck(False, "missing_required", f"{name}: no {req!r}")
    for arg, value in call.arguments.items():
        if arg not in props or arg not in answer:
            return CallCheck(False, "unexpected_argument", f"{name}: {arg!r}")
        if (e := _type_error(value, props[arg], f"{name}.{arg}")) is not None:
            return CallCheck(False, "wrong_type", e)
        if not _value_ok(value, _as_list(answer[arg])):
            allowed = [a for a in _as_list(answer[arg]) if a != ""]
            return CallCheck(
                False, "wrong_value", f"{name}.{arg}={value!r}, allowed {allowed!r}"[:300]
            )
    for arg, allowed in answer.items():
        if arg not in call.arguments and "" not in _as_list(allowed):
            return CallCheck(False, "missing_argument", f"{name}: no {arg!r}")
    return CallCheck(True, "ok")


def match_calls(
    calls: Sequence[ToolCall],
    expected: Sequence[Mapping[str, Any]],
    tools: Mapping[str, Mapping[str, Any]],
) -> CallCheck:
    """A step's calls against the expected ones (empty: no call is right), in any order."""
    if not expected:
        if calls:
            names = ", ".join(c.name for c in calls)
            return CallCheck(False, "called_when_none_expected", f"called {names}")
        return CallCheck(True, "ok")
    if not calls:
        return CallCheck(False, "no_call", f"expected {len(expected)} call(s)")
    if bad := next((c for c in calls if c.arguments is None), None):
        return CallCheck(False, "unparsed_arguments", f"{bad.name}: {bad.error or bad.raw}")
    if len(calls) != len(expected):
        return CallCheck(False, "wrong_count", f"{len(calls)} call(s), expected {len(expected)}")
    if len(expected) == 1:
        return check_call(calls[0], expected[0], tools)
    unused = list(calls)
    for want in expected:
        hit = next((c for c in unused if check_call(c, want, tools).ok), None)
        if hit is None:
            name = next(iter(want))
            checks = [check_call(c, want, tools) for c in unused]
            why = next((c.detail for c in checks if c.reason != "wrong_name"), "")
            detail = f"no call matches {name}" + (f" (closest: {why})" if why else "")
            return CallCheck(False, "no_match", detail)
        unused.remove(hit)
    return CallCheck(True, "ok")


def expected_calls(sample: Sample) -> list[dict[str, Any]]:
    """The item's expected calls: ``target`` as JSON, a list of ``{name: {arg: [allowed]}}``."""
    try:
        value = json.loads(sample.target_text or "[]")
    except json.JSONDecodeError as e:
        raise DataError(f"Sample {sample.id!r}: target is not JSON ({e.msg}).") from None
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict)
        for c in value
    ):
        raise DataError(
            f"Sample {sample.id!r}: target must be a JSON list of "
            '{"function": {"argument": [allowed values]}} objects.'
        )
    return value


def _tool_schemas(sample: Sample) -> dict[str, Mapping[str, Any]]:
    tools = sample.fields.get("tools") or []
    return {str(t["name"]): t.get("parameters") or {} for t in tools if isinstance(t, dict)}


@scorer("tool_call_match", metrics=("call_acc",))
def tool_call_match() -> ScoreFn:
    """1 when the model's first-step tool calls match the item's expected calls (BFCL-style
    AST matching: function, required arguments, types, allowed values, no unknown arguments;
    irrelevance items expect no call). ``Score.metadata["reason"]`` says which rule failed."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        expected = expected_calls(sample)
        calls: tuple[ToolCall, ...] = ()
        if output.transcript is not None:
            first = next((s for s in output.transcript.steps if s.kind == "model"), None)
            calls = first.tool_calls if first is not None else ()
        elif output.response is not None:
            calls = output.response.tool_calls
        check = match_calls(calls, expected, _tool_schemas(sample))
        answer = json.dumps(
            [{c.name: c.arguments if c.arguments is not None else c.raw} for c in calls],
            sort_keys=True,
        )
        return Score(
            values={"call_acc": float(check.ok)},
            answer=answer if calls else (output.text or ""),
            explanation=None if check.ok else f"{check.reason}: {check.detail}",
            metadata={"reason": check.reason, "detail": check.detail, "n_calls": len(calls)},
        )

    return score
