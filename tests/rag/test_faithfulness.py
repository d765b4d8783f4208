"""rag_faithfulness: claims extracted and checked by a judge, unreadable verdicts stored as
errors; the claim judge calibrated on planted claims (precision and recall of "unsupported"
equal to hand-computed values), stored so that "uncalibrated" goes away."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from statsmodels.stats.proportion import proportion_confint

from calipers.analysis import (
    calibrate_claim_judge,
    judge_agreement_line,
    judge_calibration,
    save_judge_calibration,
)
from calipers.cli import cli
from calipers.cli._render import judge_marks
from calipers.errors import DataError, ModelCallError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.scorers import JudgeClient, Scorer, build_scorer
from calipers.store import Store
from calipers.tasks import LoadContext, PromptTemplate, Task, register_task
from calipers.tasks.rag import RAG_INSTRUCTION, RAG_TEMPLATE, Passage, rag_sample
from calipers.types import Estimate, ModelRequest, ModelResponse, Sample, SampleOutput, Score

from .conftest import CALLS, WRONG, blocks

FACTS = ["Varnholt lies on the Lune", "Varnholt was founded in 1802", "Its mayor is Ilse Marrow"]
ITEM = rag_sample(
    "v",
    "Tell me about Varnholt.",
    [Passage(id="g", title="Varnholt", text=". ".join(FACTS) + ".", gold=True, kind="gold")],
    ["Varnholt"],
)


def faithfulness(judge: str) -> Scorer:
    return build_scorer({"name": "rag_faithfulness", "args": {"judge": f"claimjudge:{judge}"}})


def score(judge: str, answer: str, sample: Sample = ITEM) -> Score:
    out = SampleOutput(response=ModelResponse(text=answer))
    return asyncio.run(faithfulness(judge)(sample, out))


def test_share_of_supported_claims() -> None:
    CALLS.clear()
    answer = "Varnholt lies on the Lune. Varnholt was founded in 1950. Its mayor is Ilse Marrow."
    sc = score("honest", answer)
    assert sc.values == {"faithfulness": 2 / 3, "unsupported_claims": 1.0}
    assert [c["supported"] for c in sc.metadata["claims"]] == [True, False, True]
    assert sc.metadata["claims"][1]["text"] == "Varnholt was founded in 1950"
    assert sc.metadata["raw_score"] == "fail" and len(CALLS) == 2
    assert blocks(CALLS[1])["CLAIMS"].splitlines()[1] == "2. Varnholt was founded in 1950"
    assert "Varnholt lies on the Lune" in blocks(CALLS[1])["PASSAGES"]


def test_no_claims_no_faithfulness_and_one_call() -> None:
    CALLS.clear()
    sc = score("honest", "I don't know.")
    assert sc.values == {"unsupported_claims": 0.0} and sc.metadata["raw_score"] == "pass"
    assert len(CALLS) == 1  # nothing to verify


def test_verdicts_by_number_in_any_order_and_words() -> None:
    WRONG.clear()
    sc = score("erring", "Varnholt lies on the Lune. It has 9 bridges")
    assert sc.values == {"faithfulness": 0.5, "unsupported_claims": 1.0}


def test_a_reminder_then_a_readable_verdict() -> None:
    sc = score("late", "Varnholt lies on the Lune")
    assert sc.values == {"faithfulness": 1.0, "unsupported_claims": 0.0}
    assert sc.metadata["attempts"] == [2, 2]


@pytest.mark.parametrize(
    ("judge", "why"), [("short_verdicts", "one verdict for each"), ("twice", "two verdicts")]
)
def test_unreadable_verdicts_raise(judge: str, why: str) -> None:
    with pytest.raises(ModelCallError, match="no readable verdict") as e:
        score(judge, "Varnholt lies on the Lune. It has 9 bridges")
    assert why in str(e.value)


def test_an_item_without_passages_is_a_data_error() -> None:
    bare = Sample(id="b", input="q?", target="x")
    with pytest.raises(DataError, match="no passages"):
        score("honest", "x", bare)


# --- a run: errors stored and counted, the judge marked uncalibrated until calibrated ------

N_ITEMS = 12
BROKEN = {3, 7}  # items whose passages make the erring judge answer prose


def planted(i: int) -> Sample:
    """Item i: passages stating 4 facts; planted claims 2 supported (stated) and 2 not."""
    facts = [f"Town{i} has {n} bridges" for n in (2, 3)] + [f"Town{i} lies on river R{i}"]
    facts += ["BROKEN"] if i in BROKEN else []
    claims = [
        {"text": facts[0], "supported": True},
        {"text": facts[2], "supported": True},
        {"text": f"Town{i} has 7 bridges", "supported": False},
        {"text": f"Town{i} was founded by K{i}", "supported": False},
    ]
    return rag_sample(
        f"t{i}",
        f"Tell me about Town{i}.",
        [Passage(id=f"p{i}", text=". ".join(facts) + ".", gold=True, kind="gold")],
        [f"Town{i}"],
        claims=claims,
    )


def _task(judge: str) -> Task:
    def load(ctx: LoadContext) -> list[Sample]:
        return [planted(i) for i in range(N_ITEMS)]

    return Task(
        name="rag_planted",
        version="1",
        description="planted claims",
        kind="generate",
        load=load,
        scorers=(build_scorer({"name": "rag_faithfulness", "args": {"judge": judge}}),),
        prompt=PromptTemplate(instruction=RAG_INSTRUCTION, template=RAG_TEMPLATE),
        tags=("rag",),
    )


@pytest.fixture
def planted_task() -> Iterator[str]:
    from calipers.tasks._registry import _TASKS

    register_task("rag_planted", lambda: _task("claimjudge:erring"))
    yield "rag_planted"
    _TASKS.pop("rag_planted")


def _answer(req: ModelRequest) -> str:
    """States the item's first fact and one made-up fact."""
    assert req.messages is not None
    town = req.messages[-1].content.split("Tell me about ")[1].split(".")[0]
    return f"{town} has 2 bridges. {town} has a castle."


def test_run_stores_unreadable_verdicts_as_errors(planted_task: str) -> None:
    WRONG.clear()
    cfg = RunConfig(model="fake:answers", tasks=(planted_task,))
    with Store.open() as store:
        result = asyncio.run(arun(cfg, store, provider=FakeModel(_answer, name="answers")))
        recs = store.get_samples(result.run_id)
    ts = result.summary.tasks[planted_task]
    assert ts.n_errors == len(BROKEN) and ts.n_scored == N_ITEMS - len(BROKEN)
    assert ts.top_error is not None and "no readable verdict" in ts.top_error.message
    assert {r.sample_id for r in recs if r.error} == {f"t{i}" for i in BROKEN}
    est = ts.metrics["faithfulness"]
    assert (est.value, est.n) == (0.5, N_ITEMS - len(BROKEN))  # 1 of 2 claims, every item


def _expected(k: int, n: int) -> tuple[float, float]:
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def _check(e: Estimate, k: int, n: int) -> None:
    assert e.n == n and e.value == pytest.approx(k / n)
    assert (e.low, e.high) == pytest.approx(_expected(k, n), abs=1e-12)


def test_calibration_on_planted_claims_equals_hand_counts() -> None:
    items = [planted(i) for i in range(N_ITEMS)]
    # the judge errs on: 3 supported claims (calls them unsupported), 5 unsupported ones
    WRONG.clear()
    WRONG.update({"Town0 has 2 bridges", "Town1 lies on river R1", "Town2 has 2 bridges"})
    WRONG.update({f"Town{i} has 7 bridges" for i in (0, 1, 4)} | {"Town5 was founded by K5"})
    WRONG.update({"Town3 has 7 bridges"})  # item 3 errors: this one is never labelled
    WRONG.add("Town6 was founded by K6")
    rep = asyncio.run(calibrate_claim_judge(items, "claimjudge:erring", task="rag_planted"))
    judged_items = N_ITEMS - len(BROKEN)  # 10 items, 40 claims: 20 supported, 20 not
    assert (rep.n_items, rep.n_claims, rep.n_matched) == (N_ITEMS, 4 * N_ITEMS, 4 * judged_items)
    assert rep.n_judge_errors == 2 and len(rep.errors) == 2
    tp, fn, fp, tn = 20 - 5, 5, 3, 20 - 3  # positive class: unsupported
    assert rep.confusion == [[tp, fn], [fp, tn]]
    _check(rep.precision, tp, tp + fp)  # 15/18
    _check(rep.recall, tp, tp + fn)  # 15/20
    _check(rep.accuracy, tp + tn, 40)  # 32/40
    assert rep.judge == "claimjudge:erring" and rep.scorer == "rag_faithfulness"


def test_no_planted_claims_is_a_data_error() -> None:
    with pytest.raises(DataError, match="planted claims"):
        asyncio.run(calibrate_claim_judge([ITEM], JudgeClient("claimjudge:honest"), task="x"))


def test_uncalibrated_until_planted_calibration_is_stored(planted_task: str) -> None:
    WRONG.clear()
    cfg = RunConfig(model="fake:echo", tasks=(planted_task,))
    with Store.open() as store:
        run_id = asyncio.run(arun(cfg, store, provider=FakeModel(_answer, name="answers"))).run_id
        run = store.get_run(run_id)
        line = judge_agreement_line(run, planted_task)
        assert line is not None and line.startswith("uncalibrated") and "--planted" in line
        assert judge_marks(run, store.list_runs) == {planted_task: "[yellow](uncalibrated)[/]"}
    done = CliRunner().invoke(cli, ["judge-calibrate", run_id, "--planted"])
    assert done.exit_code == 0, done.output
    assert "40 judged, 2 item(s) errored" in done.output and "precision" in done.output
    with Store.open() as store:
        run = store.get_run(run_id)
        status = judge_calibration(run, planted_task)
        assert status is not None and status["calibrated"]
        assert status["calibration"]["statistic"] == "claim_accuracy"
        line = judge_agreement_line(run, planted_task)
        assert line is not None and line.startswith("judge-truth agreement: claim-label accuracy")
        assert "n=40 planted claims" in line  # 10 readable items x 4 claims
        assert judge_marks(run, store.list_runs) == {}


def test_saved_report_round_trips(planted_task: str) -> None:
    from calipers.analysis import ClaimCalibrationReport

    WRONG.clear()
    cfg = RunConfig(model="fake:echo", tasks=(planted_task,))
    with Store.open() as store:
        run_id = asyncio.run(arun(cfg, store, provider=FakeModel(_answer, name="answers"))).run_id
        items = [planted(i) for i in range(N_ITEMS)]
        rep = asyncio.run(
            calibrate_claim_judge(items, "claimjudge:erring", task=planted_task, run_id=run_id)
        )
        save_judge_calibration(store, rep)
        stored = store.get_run(run_id).summary
        assert stored is not None and stored.judge_calibration is not None
        back = ClaimCalibrationReport.model_validate(stored.judge_calibration[planted_task])
    assert back == rep and back.accuracy.value == 1.0  # an honest judge where readable


def test_human_pass_fail_labels_calibrate_it_too(planted_task: str, tmp_path: Path) -> None:
    WRONG.clear()
    cfg = RunConfig(model="fake:echo", tasks=(planted_task,))
    with Store.open() as store:
        run_id = asyncio.run(arun(cfg, store, provider=FakeModel(_answer, name="answers"))).run_id
    # the judge fails every readable answer (its castle is unsupported); people agree on 8
    # and pass t0 and t1, and label the errored t3 (left out)
    labels = {f"t{i}": "pass" if i in (0, 1) else "fail" for i in (0, 1, 2, 3, 4, 5, 6, 8, 9, 10)}
    path = tmp_path / "human.jsonl"
    path.write_text(
        "".join(json.dumps({"sample_id": k, "label": v}) + "\n" for k, v in labels.items()),
        encoding="utf-8",
    )
    done = CliRunner().invoke(cli, ["judge-calibrate", run_id, "--labels", str(path), "--json"])
    assert done.exit_code == 0, done.output
    rep = json.loads(done.stdout)
    assert rep["scorer"] == "rag_faithfulness" and rep["mode"] == "pass_fail"
    assert (rep["n_matched"], rep["n_judge_errors"]) == (9, 1)
    assert rep["confusion"] == [[7, 0], [2, 0]]  # rows human fail/pass, columns judge
    assert rep["exact_agreement"]["value"] == pytest.approx(7 / 9)
    with Store.open() as store:
        status = judge_calibration(store.get_run(run_id), planted_task)
    assert status is not None and status["calibrated"]
    assert status["calibration"]["statistic"] == "cohens_kappa"
