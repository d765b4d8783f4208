"""calipers errors --judge on a task with no rule: four planted kinds of failure coded by a
scripted judge and recovered as four categories, uncalibrated; then a review campaign whose
labels agree with them on 46 of 48 items makes them calibrated, with Cohen's kappa computed
independently (scikit-learn)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from calipers.analysis import error_review_questions, error_review_rows, error_taxonomy
from calipers.cli import cli
from calipers.store import Store

KINDS = {  # the model's failing answer per kind (three wordings) and the judge's note per wording
    "refusal": {
        "I'm sorry, I can't help with that.": "refused a harmless question",
        "I won't answer this question.": "refused a benign request",
        "As an AI I cannot discuss this topic.": "unnecessary refusal of a safe question",
    },
    "arithmetic": {
        "Adding them: 45 + 38 = 73.": "arithmetic error in the sum",
        "Multiplying 12 by 7 gives 74.": "arithmetic error in a multiplication",
        "Subtracting: 19 - 8 = 9.": "arithmetic slip in the subtraction",
    },
    "format": {
        "Sure! Here it is: yes": "ignored the requested JSON format",
        "The answer, in prose, is probably yes.": "did not follow the JSON output format",
        "Yes; see above for details.": "wrong format, JSON was requested",
    },
    "invented": {
        "According to the 2019 Smith study, it is 42.": "invented a citation",
        "As Nature reported in 2021, the answer is 7.": "invented a source as a fact",
        "The Oxford handbook (p. 312) says 3.": "made up a reference: an invented fact",
    },
}


def _invoke(store: str, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, [*args, "--store", store], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _setup(tmp_path: Path) -> tuple[str, str, str]:
    rows, answers, notes = [], {}, {}
    for kind, wordings in KINDS.items():
        texts = list(wordings)
        for i in range(12):
            q = f"Question {kind[:3]}-{i}: give the answer as JSON."
            rows.append({"id": f"{kind}-{i}", "question": q, "answer": '{"answer": 1}'})
            answers[q] = texts[i % 3]
        notes.update({t: json.dumps({"note": n}) for t, n in wordings.items()})
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    (tmp_path / "judge.json").write_text(json.dumps(notes))
    (tmp_path / "qa.yaml").write_text(
        "name: qa\ndata: qa.jsonl\nfields: {id: id, input: question, target: answer}\n"
        'prompt: {template: "{input}"}\nscorers: [exact_match]\n'
    )
    store = f"sqlite:///{tmp_path / 'store.db'}"
    model = f"fake:script={tmp_path / 'answers.json'}"
    code, out, err = _invoke(store, "run", "-m", model, "-t", str(tmp_path / "qa.yaml"), "--json")
    assert code in (0, 1), err
    return store, json.loads(out)["run_id"], f"fake:script={tmp_path / 'judge.json'}"


def _report(store: str, *args: str) -> dict[str, Any]:
    code, out, err = _invoke(store, "errors", "latest", *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_judge_codes_failures_into_the_planted_kinds_then_people_calibrate_them(
    tmp_path: Path,
) -> None:
    store, run_id, judge = _setup(tmp_path)

    plain = _report(store)  # no rule for exact_match: all unclassified
    assert [(r["type"], r["count"]) for r in plain["tasks"][0]["types"]] == [("unclassified", 48)]

    data = _report(store, "--judge", judge)
    types = data["tasks"][0]["types"]
    assert sorted(r["count"] for r in types) == [12, 12, 12, 12]
    assert {r["method"] for r in types} == {"judge"}
    assert data["judge_taxonomies"]["qa"]["status"] == "uncalibrated"
    code, out, _ = _invoke(store, "errors", "latest", "--judge", judge, "--examples", "0")
    assert code == 0 and "uncalibrated" in out and "(judge)" in out

    # one category per planted kind: the judge's notes for a kind all land together
    with Store.open(store) as st:
        samples = st.get_samples(run_id)
        tax = error_taxonomy(samples, judge, cache_store=st, seed=0)
    labels = tax.labels()
    by_kind = {
        kind: Counter(labels[k].type for k in labels if k[1].startswith(kind)) for kind in KINDS
    }
    assert all(len(c) == 1 for c in by_kind.values()), by_kind
    category = {kind: next(iter(c)) for kind, c in by_kind.items()}
    assert len(set(category.values())) == 4

    # a person labels the failures: the kind's category, except two items called "other"
    rows = error_review_rows(tax, samples, run_id)
    for r in rows:
        r["ann"] = category[r["sample_id"].split("-")[0]]
    rows[0]["ann"] = rows[20]["ann"] = "other"
    (tmp_path / "failures.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "questions.yaml").write_text(json.dumps(error_review_questions(tax)))
    code, _, err = _invoke(
        store,
        "review",
        "import-labels",
        "errs",
        str(tmp_path / "failures.jsonl"),
        "--key",
        "key",
        "--create-from-file",
        "--field",
        "reference=reference",
        "--questions",
        str(tmp_path / "questions.yaml"),
        "--question",
        "error_category",
        "--rater-column",
        "ann=ann",
    )
    assert code == 0, err

    data = _report(store, "--judge", judge, "--campaign", "errs")
    cal = data["judge_taxonomies"]["qa"]
    assert cal["status"] == "calibrated"
    judged = [labels[(r["task"], r["sample_id"], r.get("epoch", 0))].type for r in rows]
    expected = cohen_kappa_score([r["ann"] for r in rows], judged)
    assert cal["calibration"]["kappa"]["value"] == pytest.approx(expected, abs=1e-9)


def test_campaign_without_judge_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _invoke(f"sqlite:///{tmp_path / 's.db'}", "errors", "latest", "--campaign", "x")
    assert code == 2 and "--judge" in err
