"""Reference checks: contains, JSON schema, code runs, latency and cost limits."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import ConfigError, DataError
from calipers.scorers import Scorer, build_scorer
from calipers.types import Sample

from .conftest import on_text

ITEM = Sample(id="i", input="?", target="Paris", fields={"keys": ["alpha", "Beta"]})
SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


def check(name: str, **args: object) -> Scorer:
    return build_scorer({"name": name, "args": args})


def test_contains() -> None:
    assert on_text(check("contains"), ITEM, "It is PARIS.").values == {"contains": 1.0}
    assert on_text(check("contains", ignore_case=False), ITEM, "PARIS").values["contains"] == 0
    both = check("contains", field="keys")
    assert on_text(both, ITEM, "alpha and beta").values["contains"] == 1.0
    half = on_text(both, ITEM, "only alpha")
    assert half.values["contains"] == 0.0 and half.metadata["missing"] == ["Beta"]
    anyof = check("contains", strings=["x", "beta"], mode="any")
    assert on_text(anyof, ITEM, "BETA").values["contains"] == 1.0
    with pytest.raises(DataError):
        on_text(check("contains"), Sample(id="n", input="?"), "x")
    bad: dict[str, Any]
    for bad in (
        {"strings": "Paris"},
        {"strings": []},
        {"mode": "most"},
        {"strings": ["a"], "field": "keys"},
    ):
        with pytest.raises(ConfigError):
            check("contains", **bad)


@pytest.mark.parametrize(
    ("reply", "valid", "parsed"),
    [
        ('{"name": "Ada", "age": 36}', 1.0, 1.0),
        ('Here:\n```json\n{"name": "Ada", "age": 36}\n```', 1.0, 1.0),
        ('Sure, {"name": "Ada", "age": 36} is it.', 1.0, 1.0),
        ('{"name": "Ada", "age": -1}', 0.0, 1.0),
        ('{"name": "Ada"}', 0.0, 1.0),
        ("[1, 2]", 0.0, 1.0),
        ("no json here", 0.0, 0.0),
        ('{"name": "Ada", "age": 36', 0.0, 0.0),
    ],
)
def test_json_schema(reply: str, valid: float, parsed: float) -> None:
    sc = on_text(check("json_schema", schema=SCHEMA), ITEM, reply)
    assert sc.values == {"schema_valid": valid, "valid_json": parsed}
    assert (sc.explanation is None) == bool(valid)


def test_json_schema_from_file_and_bad_schemas(tmp_path: Path) -> None:
    path = tmp_path / "person.schema.json"
    path.write_text(json.dumps(SCHEMA))
    s = check("json_schema", schema_file=str(path))
    inline = check("json_schema", schema=SCHEMA)
    reply = '{"name": "Ada", "age": 36}'
    assert on_text(s, ITEM, reply).metadata == on_text(inline, ITEM, reply).metadata
    for bad in (
        {},
        {"schema": SCHEMA, "schema_file": str(path)},
        {"schema": {"type": 5}},
        {"schema_file": str(tmp_path / "missing.json")},
    ):
        with pytest.raises(ConfigError):
            check("json_schema", **bad)


def test_code_runs() -> None:
    s = check("code_runs", timeout_s=5)
    assert on_text(s, ITEM, "```python\nprint(sum(range(10)))\n```").values == {"runs": 1.0}
    bad = on_text(s, ITEM, "def f(:\n  pass")
    assert bad.values == {"runs": 0.0} and "SyntaxError" in (bad.explanation or "")


def test_latency_limit() -> None:
    s = check("latency_limit", max_s=1.0)
    assert on_text(s, ITEM, "x", latency_s=0.4).values == {"within_latency": 1.0}
    assert on_text(s, ITEM, "x", latency_s=1.0).values == {"within_latency": 1.0}
    assert on_text(s, ITEM, "x", latency_s=1.5).values == {"within_latency": 0.0}
    assert math.isnan(on_text(s, ITEM, "x").values["within_latency"])  # unknown, not 0
    with pytest.raises(ConfigError):
        check("latency_limit", max_s=0)


def test_cost_limit() -> None:
    s = check("cost_limit", max_usd=0.002, usd_per_million_input=1.0, usd_per_million_output=2.0)
    # 1000 * 1 / 1e6 + 500 * 2 / 1e6 = 0.002 dollars
    at = on_text(s, ITEM, "x", input_tokens=1000, output_tokens=500)
    assert at.values == {"within_cost": 1.0} and at.metadata["cost_usd"] == pytest.approx(0.002)
    over = on_text(s, ITEM, "x", input_tokens=1000, output_tokens=501)
    assert over.values == {"within_cost": 0.0}
    assert math.isnan(on_text(s, ITEM, "x", output_tokens=5).values["within_cost"])
    with pytest.raises(ConfigError):
        check("cost_limit", max_usd=1, usd_per_million_input=-1, usd_per_million_output=1)
