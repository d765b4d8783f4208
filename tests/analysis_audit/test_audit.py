"""``audit`` on fake runs whose answers and gold labels are set by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from calipers.analysis._audit import Annotation, audit
from calipers.errors import ConfigError

from .conftest import make_run, mc_model, stored, write_mc_task

TRUE = {i: i % 4 for i in range(30)}
CORRUPTED = {3, 7, 11, 19}  # gold moved to the next option: the models know better
GOLD = {i: (t + 1) % 4 if i in CORRUPTED else t for i, t in TRUE.items()}


def truth(i: int) -> int:
    return TRUE[i]


@pytest.fixture
def runs(folder: Path) -> list[str]:
    spec = write_mc_task(folder, GOLD)
    return [
        # item 5: only model A disagrees; item 13: A and B agree on a wrong option, unsure
        make_run(spec, mc_model("model-a", truth, {5: (2, True), 13: (3, False)})),
        make_run(spec, mc_model("model-b", truth, {13: (3, False)})),
        # item 19: C keeps the (corrupted) gold; A and B still form a majority
        make_run(spec, mc_model("model-c", truth, {19: (GOLD[19], True)})),
    ]


def wilson(k: int, n: int) -> tuple[float, float]:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(low), float(high)


def test_flags_exactly_the_corrupted_items(runs: list[str]) -> None:
    rep = audit(stored(*runs), "mcq")
    assert [f.id for f in rep.flagged] == ["q3", "q7", "q11", "q19"]
    q3, q19 = rep.flagged[0], rep.flagged[3]
    assert (q3.gold, q3.agreed, q3.votes, q3.voters) == ("A", "D", 3, 3)
    assert (q3.gold_text, q3.agreed_text) == ("w0", "w3")
    assert q3.models == ["model-a", "model-b", "model-c"] and q3.without_confidence == 0
    # softmax of (0, -5, -5, -5) at the chosen option
    assert q3.mean_confidence == pytest.approx(1 / (1 + 3 * 2.718281828459045**-5))
    assert (q19.votes, q19.models) == (2, ["model-a", "model-b"])
    assert rep.n_items == 30 and rep.n_models == 3 and rep.agreement == []


def test_scores_on_all_and_audited_items(runs: list[str]) -> None:
    rep = audit(stored(*runs), "mcq")
    a, _, c = rep.runs
    # A is wrong on the 4 corrupted items, item 5 and item 13: 24/30; audited 24/26
    assert (a.all_items.value, a.audited.value) == pytest.approx((24 / 30, 24 / 26))
    assert (a.all_items.low, a.all_items.high) == pytest.approx(wilson(24, 30))
    assert a.audited.n == 26 and a.shift.value == pytest.approx(24 / 26 - 24 / 30)
    # C keeps gold on item 19 (scored right): 27/30; on the 26 audited items it is perfect
    assert (c.all_items.value, c.audited.value) == pytest.approx((27 / 30, 1.0))
    assert c.shift.low <= c.shift.value <= c.shift.high


def test_confidence_and_agreement_thresholds(runs: list[str]) -> None:
    loose = audit(stored(*runs), "mcq", min_confidence=0.0)
    assert "q13" in {f.id for f in loose.flagged}  # 2 of 3 agree once confidence is ignored
    # all 5 flags agree on D (every corrupted item's true answer is option 3)
    assert "5 of 5 flags agree on option D" in " ".join(loose.caveats)
    strict = audit(stored(*runs), "mcq", min_agree=3)
    assert [f.id for f in strict.flagged] == ["q3", "q7", "q11"]
    assert not any("position bias" in c for c in strict.caveats)  # too few flags to say
    with pytest.raises(ConfigError):
        audit(stored(*runs), "mcq", min_confidence=1.5)


def test_precision_and_recall_against_annotations(runs: list[str]) -> None:
    ann = {f"q{i}": Annotation(error_type="ok") for i in range(30)}
    ann.update(
        {
            "q3": Annotation(error_type="wrong_groundtruth", correct_answer=3),  # flagged: TP
            "q7": Annotation(
                error_type="wrong_groundtruth", correct_answer=0
            ),  # flagged, other fix
            "q13": Annotation(error_type="wrong_groundtruth"),  # missed: FN
            "q19": Annotation(error_type="multiple_correct_answers"),  # flagged: FP, any-error TP
            "q20": Annotation(error_type="bad_question_clarity"),  # any-error FN
        }
    )  # q11 stays "ok": a false positive for both
    rep = audit(stored(*runs), "mcq", annotations=ann)
    wrong, anyerr = rep.agreement
    assert (wrong.tp, wrong.fp, wrong.fn, wrong.tn) == (2, 2, 1, 25)
    assert (wrong.precision.value, wrong.recall.value) == (2 / 4, 2 / 3)
    assert (wrong.precision.low, wrong.precision.high) == pytest.approx(wilson(2, 4))
    assert (wrong.recall.low, wrong.recall.high) == pytest.approx(wilson(2, 3))
    assert wrong.base_rate.value == pytest.approx(3 / 30)
    assert (anyerr.tp, anyerr.fp, anyerr.fn, anyerr.tn) == (3, 1, 2, 24)
    assert anyerr.error_types == [
        "bad_question_clarity",
        "multiple_correct_answers",
        "wrong_groundtruth",
    ]
    # q3's agreed D is the proposed fix, q7's is not
    assert rep.correction_match == {"n": 2, "agreed_equals_proposed": 1}
    assert rep.flagged[0].annotation == ann["q3"]


def test_one_model_under_two_formulations_is_said(folder: Path) -> None:
    spec = write_mc_task(folder, GOLD)
    model = mc_model("solo", truth, {})
    ids = [make_run(spec, model), make_run(spec, model, chat_template=False)]
    rep = audit(stored(*ids), "mcq")
    assert len(rep.flagged) == 4 and rep.n_models == 1
    assert any("same model" in c for c in rep.caveats)
    assert audit(stored(*ids), "mcq", min_models=2).flagged == []
    assert not any("copies" in c for c in rep.caveats)  # two formulations, not two copies
    twin = make_run(spec, model)
    assert any("copies" in c for c in audit(stored(ids[0], twin), "mcq").caveats)


def test_gold_from_runs_when_the_task_file_is_gone(runs: list[str], folder: Path) -> None:
    (folder / "mcq.jsonl").unlink()
    rep = audit(stored(*runs), "mcq")
    assert [f.id for f in rep.flagged] == ["q3", "q7", "q11", "q19"]
    assert rep.annotations.startswith("none: task data not available")
    # no run was right on q3, so its gold is unknown; the record's target text stays
    assert rep.flagged[0].gold is None and rep.flagged[0].gold_text == "w0"
    assert rep.flagged[3].gold == "A"  # C was scored right on q19 (gold 0)
