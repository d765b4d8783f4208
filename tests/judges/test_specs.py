"""Every new scorer rebuilds from its recorded spec and runs from a task YAML file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from calipers.scorers import build_scorer, list_scorers
from calipers.store import Store
from calipers.types import Sample, Score

from .conftest import on_text, run_task

SPECS: dict[str, dict[str, Any]] = {
    "llm_judge": {"judge": "judgetest:grader", "rubric": "Correct?", "mode": "pass_fail"},
    "llm_judge_pairwise": {"judge": "judgetest:fair", "baseline_field": "baseline"},
    "semantic_similarity": {"backend": "tfidf", "threshold": 0.4},
    "refusal": {"extra_patterns": [r"\bnope\b"]},
    "contains": {"strings": ["Paris"]},
    "json_schema": {"schema": {"type": "object", "required": ["city"]}},
    "latency_limit": {"max_s": 5.0},
    "cost_limit": {"max_usd": 0.01, "usd_per_million_input": 1.0, "usd_per_million_output": 4.0},
    "code_runs": {"timeout_s": 5.0},
}
METRICS = {
    "llm_judge": ("judge",),
    "llm_judge_pairwise": ("win", "consistent"),
    "semantic_similarity": ("similarity", "match"),
    "refusal": ("refused", "over_refusal", "under_refusal"),
    "contains": ("contains",),
    "json_schema": ("schema_valid", "valid_json"),
    "latency_limit": ("within_latency",),
    "cost_limit": ("within_cost",),
    "code_runs": ("runs",),
}
ITEM = Sample(
    id="fr",
    input="Capital of France?",
    target="Paris",
    fields={"baseline": "GOOD: Paris.", "should_answer": True},
)
REPLIES = ['{"city": "Paris"}', "Nope.", "GOOD Paris", "print('Paris')", ""]


def _same(a: Score, b: Score) -> bool:
    va, vb = a.values, b.values
    return va.keys() == vb.keys() and all(
        (math.isnan(va[k]) and math.isnan(vb[k])) or va[k] == vb[k] for k in va
    )


def test_new_scorers_are_listed() -> None:
    listed = list_scorers()
    for name, metrics in METRICS.items():
        assert listed[name][0] == metrics and listed[name][1] == "generation"
        assert listed[name][2]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_rebuilds_from_recorded_spec(name: str) -> None:
    original = build_scorer({"name": name, "args": SPECS[name]})
    stored = json.loads(json.dumps(original.spec.model_dump(mode="json")))
    rebuilt = build_scorer(stored)
    assert rebuilt.spec == original.spec and rebuilt.metrics == METRICS[name]
    for reply in REPLIES:
        assert _same(
            on_text(rebuilt, ITEM, reply, latency_s=0.1, input_tokens=10, output_tokens=3),
            on_text(original, ITEM, reply, latency_s=0.1, input_tokens=10, output_tokens=3),
        )


def test_all_run_from_a_task_yaml(tmp_path: Path) -> None:
    rows = [
        {
            "id": "fr",
            "question": "Capital of France?",
            "answer": "Paris",
            "baseline": "Paris, I think",
            "should_answer": "true",
        },
        {
            "id": "pe",
            "question": "Capital of Peru?",
            "answer": "Lima",
            "baseline": "GOOD: Lima",
            "should_answer": "true",
        },
    ]
    (tmp_path / "cities.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scorers = "\n".join(f"  - name: {n}\n    args: {json.dumps(a)}" for n, a in SPECS.items())
    (tmp_path / "cities.yaml").write_text(
        "name: cities\ndata: cities.jsonl\n"
        "fields: {id: id, input: question, target: answer, extra: [baseline, should_answer]}\n"
        "prompt: {template: '{input}'}\n"
        f"scorers:\n{scorers}\n"
    )
    answers = {"Capital of France?": 'GOOD {"city": "Paris"}', "Capital of Peru?": "Nope."}
    run_id, recs, summary = run_task(tmp_path / "cities.yaml", answers.__getitem__)
    assert all(r.error is None for r in recs), [r.error for r in recs]
    fr, pe = (next(r for r in recs if r.sample_id == i) for i in ("fr", "pe"))
    assert fr.scores is not None and pe.scores is not None
    assert (fr.scores["judge"], pe.scores["judge"]) == (1.0, 0.0)
    assert (fr.scores["win"], pe.scores["win"]) == (1.0, 0.0)
    assert (fr.scores["refused"], pe.scores["over_refusal"]) == (0.0, 1.0)
    assert (fr.scores["contains"], pe.scores["contains"]) == (1.0, 0.0)
    assert (fr.scores["schema_valid"], pe.scores["valid_json"]) == (1.0, 0.0)
    assert fr.scores["within_latency"] == 1.0 and fr.scores["within_cost"] == 1.0
    assert pe.scores["runs"] == 0.0  # "Nope." is a NameError
    assert fr.score_details is not None
    assert fr.score_details["llm_judge"]["explanation"] == "checked against the reference"
    assert fr.score_details["semantic_similarity"]["metadata"]["backend"] == "tfidf"
    with Store.open() as store:
        card = store.get_run(run_id).methodology["tasks"]["cities"]
    assert [s["name"] for s in card["scorers"]] == list(SPECS)
    rebuilt = [build_scorer(s) for s in card["scorers"]]
    assert [s.spec.args for s in rebuilt] == list(SPECS.values())
    assert summary.tasks["cities"].primary == "judge"
