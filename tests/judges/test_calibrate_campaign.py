"""`calipers judge-calibrate --campaign`: the human labels read from a review campaign's final
labels give the same agreement as the same labels in a file; label values mapped clearly."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.analysis import calibrate_judge, campaign_labels, judge_corrected
from calipers.cli import cli
from calipers.errors import ConfigError
from calipers.review import final_labels
from calipers.store import ImportedJudgment, ReviewCampaignRecord, ReviewItemRecord, Store

from .test_calibration import HUMAN, _judged_run, _labels

QUESTIONS: list[dict[str, Any]] = [
    {"type": "pass_fail", "id": "correct", "prompt": "Is the answer right?"},
    {"type": "choice", "id": "verdict", "prompt": "Verdict?", "options": ["good", "bad", "meh"]},
    {"type": "comment", "id": "note", "prompt": "Anything else?"},
]
# item "e": the two raters disagree and an adjudicator decides "fail" (HUMAN["e"])
SPLIT = "e"


def _campaign(store: Store, run_id: str, name: str = "cal") -> None:
    store.create_campaign(ReviewCampaignRecord(name=name, kind="single", questions=QUESTIONS, k=2))
    items = [
        ReviewItemRecord(
            item_key=f"it-{sid}",
            payload={"prompt": f"q {sid}", "response": "..."},
            source={"run_id": run_id, "sample_id": sid, "task": "capq"},
        )
        for sid in HUMAN
    ]
    items.append(  # another run's item: not a label of this run
        ReviewItemRecord(
            item_key="other",
            payload={"prompt": "q", "response": "r"},
            source={"run_id": "someone-else", "sample_id": "a", "task": "capq"},
        )
    )
    store.add_review_items(name, items)
    for rater in ("ann", "bob"):
        store.add_rater(name, rater, f"hash-{rater}")
    store.add_rater(name, "judy", "hash-judy", role="adjudicator")
    rows = []
    for sid, label in HUMAN.items():
        ok = label == "pass"
        verdict = "good" if ok else "bad"
        for rater in ("ann", "bob"):
            mine = (not ok) if (sid == SPLIT and rater == "bob") else ok
            answers = {"correct": mine, "verdict": verdict if rater == "ann" else "meh"}
            rows.append(ImportedJudgment(item_key=f"it-{sid}", rater=rater, answers=answers))
    rows.append(ImportedJudgment(item_key="other", rater="ann", answers={"correct": False}))
    store.import_judgments(name, rows)
    store.adjudicate(
        name,
        f"it-{SPLIT}",
        "judy",
        {"correct": HUMAN[SPLIT] == "pass"},
        now=datetime.now(UTC),
    )


def test_campaign_agreement_equals_the_file_agreement(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path, mode="pass_fail")
    with Store.open() as store:
        _campaign(store, run_id)
        run, recs = store.get_run(run_id), store.get_samples(run_id)
        items = store.get_review_items("cal")
        finals = final_labels(
            items, store.get_judgments("cal"), store.get_adjudications("cal"), "correct"
        )
    labels, unresolved = campaign_labels(
        "cal", QUESTIONS, items, finals, run_id=run_id, task="capq", question="correct"
    )
    assert unresolved == 0 and len(labels) == len(HUMAN)
    assert {k[0]: v[0] for k, v in labels.items()} == HUMAN  # True/False -> pass/fail
    from_file = calibrate_judge(run, recs, _labels(tmp_path, HUMAN))
    from_campaign = calibrate_judge(run, recs, labels, source="campaign cal")
    assert from_campaign.agreement == from_file.agreement  # kappa 0.4, as by hand
    assert from_campaign.agreement.value == pytest.approx(0.4)
    assert from_campaign.confusion == from_file.confusion == [[3, 2], [1, 4]]
    assert from_campaign.labels_file == "campaign cal"

    args = ["judge-calibrate", run_id, "--campaign", "cal", "--question", "correct", "--json"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["agreement"]["value"] == pytest.approx(0.4)
    assert got["labels_file"].startswith("campaign cal (correct")
    with Store.open() as store:  # saved: the run is calibrated now
        saved = store.get_run(run_id).summary
    assert saved is not None and saved.judge_calibration is not None
    assert saved.judge_calibration["capq"]["n_matched"] == 10


def test_choice_question_needs_positive(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path, mode="pass_fail")
    with Store.open() as store:
        _campaign(store, run_id)
    base = ["judge-calibrate", run_id, "--campaign", "cal", "--no-save", "--json"]
    res = CliRunner().invoke(cli, [*base, "--question", "verdict"])
    assert res.exit_code == 2 and "--positive good | bad | meh" in res.output
    res = CliRunner().invoke(cli, [*base, "--question", "verdict", "--positive", "great"])
    assert res.exit_code == 2 and "not an option" in res.output
    # ann says good/bad, bob always meh: every item is a 1-1 tie, left out as unresolved
    res = CliRunner().invoke(cli, [*base, "--question", "verdict", "--positive", "good"])
    assert res.exit_code == 2 and "no final 'verdict' labels" in res.output
    # no --question: the campaign has two usable questions
    res = CliRunner().invoke(cli, base)
    assert res.exit_code == 2 and "--question correct | verdict" in res.output
    res = CliRunner().invoke(cli, [*base, "--question", "note"])
    assert res.exit_code == 2 and "cannot label a judge" in res.output
    res = CliRunner().invoke(cli, ["judge-calibrate", run_id])
    assert res.exit_code == 2 and "--labels FILE or --campaign NAME" in res.output


def test_choice_maps_positive_to_pass() -> None:
    items = [
        ReviewItemRecord(
            item_key=k, payload={}, source={"run_id": "r1", "sample_id": k, "epoch": 1}
        )
        for k in ("x", "y", "z")
    ]

    class FL:
        def __init__(self, item_key: str, value: Any) -> None:
            self.item_key, self.value = item_key, value

    finals = [FL("x", "good"), FL("y", "meh"), FL("z", None)]
    labels, unresolved = campaign_labels(
        "c", QUESTIONS, items, finals, run_id="r1", task="t", question="verdict", positive="good"
    )
    assert unresolved == 1
    assert {k: v[0] for k, v in labels.items()} == {("x", 1): "pass", ("y", 1): "fail"}
    with pytest.raises(ConfigError, match="choice"):
        campaign_labels(
            "c",
            QUESTIONS,
            items,
            finals,
            run_id="r1",
            task="t",
            question="correct",
            positive="good",
        )


def test_show_judge_corrected_from_a_campaign(tmp_path: Path) -> None:
    run_id, _task = _judged_run(tmp_path, mode="pass_fail")
    with Store.open() as store:
        _campaign(store, run_id)
        run, recs = store.get_run(run_id), store.get_samples(run_id)
    want = judge_corrected(run, recs, _labels(tmp_path, HUMAN))
    res = CliRunner().invoke(
        cli, ["show", run_id, "--judge-corrected", "cal", "--question", "correct", "--json"]
    )
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)["judge_corrected"]
    assert got["corrected"]["value"] == pytest.approx(want.corrected.value)
    assert got["n"] == 10 and got["labels"].startswith("campaign cal")
