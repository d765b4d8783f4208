"""Fresh numbers for math word problems: the answer recomputed from the worked solution, and a
model that memorised the originals caught by the perturbation gap."""

from __future__ import annotations

import random
from pathlib import Path

from calipers.analysis import load_study, plan_study, run_study
from calipers.contamination import perturbation_gap
from calipers.models import FakeModel
from calipers.runner import RunConfig
from calipers.store import Store
from calipers.tasks import Variant, apply_variant, resolve_task
from calipers.tasks._fresh_numbers import renumber
from calipers.tasks._task import LoadContext
from calipers.types import ModelRequest
from tests._data import DATA, needs_data

QUESTION = (
    "A shop sells 24 apples on Monday and 35 apples on Tuesday. Each apple costs $12. "
    "How much money does the shop make?"
)
SOLUTION = "Apples sold: 24 + 35 = <<24+35=59>>59. Money: 59 * 12 = <<59*12=708>>708."


def test_renumbering_recomputes_the_answer_by_hand() -> None:
    new_q, new_a = renumber(QUESTION, SOLUTION, "708", random.Random(0)) or ("", "")
    a, b = (int(x) for x in __import__("re").findall(r"\d+", new_q)[:2])
    assert (a, b) != (24, 35) and 10 <= a <= 99 and 10 <= b <= 99
    assert "$12" in new_q  # 12 is a common constant (a dozen): it stays
    assert new_a == str((a + b) * 12)


def test_problems_not_understood_are_left_out() -> None:
    # the annotated result does not follow from the question's numbers
    assert renumber(QUESTION, "24 + 35 = <<24+35=60>>60", "60", random.Random(0)) is None
    # only single digits: nothing to renumber
    assert (
        renumber("Tom has 3 cats and 4 dogs. How many pets?", "<<3+4=7>>", "7", random.Random(0))
        is None
    )
    # the same number twice in the question: ambiguous
    assert renumber("He ran 15 km and 15 km more.", "<<15+15=30>>", "30", random.Random(0)) is None


@needs_data("gsm8k/test.jsonl")
def test_a_model_that_memorised_gsm8k_answers_drops_on_fresh_numbers(tmp_path: Path) -> None:
    assert DATA is not None
    task = resolve_task("gsm8k")[0]
    items = list(task.load(LoadContext(data_dir=DATA)))[:40]
    answers = {s.input: str(s.target) for s in items}
    fresh = apply_variant(task, Variant(fresh_numbers=True, perturb_seed=1)).load(
        LoadContext(data_dir=DATA, n=40)
    )
    assert {s.id for s in fresh} <= {s.id for s in items}  # a subset of the same 40
    renumbered = {s.id for s in fresh if s.input not in answers}
    assert renumbered and all(
        s.target != s.metadata["original_target"] for s in fresh if s.id in renumbered
    )

    def memoriser(request: ModelRequest) -> str:
        text = request.messages[-1].content if request.messages else request.prompt or ""
        hit = next((a for q, a in answers.items() if q in text), None)
        return f"#### {hit}" if hit else "#### 0"

    model = FakeModel(memoriser, name="memoriser")
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        plan = plan_study(
            RunConfig(model="fake:m", tasks=("gsm8k",), limit=40, few_shot=0, data_dir=str(DATA)),
            ["perturbation_gap"],
            provider=model,
        )
        assert [label for label, _ in plan.formulations] == ["fresh numbers"]
        run_study(plan, store, provider=model)
        report = perturbation_gap(load_study(store, plan.study), None)
    (row,) = report.rows
    # right on every original, wrong on every renumbered item: a drop of exactly 1
    assert row.benchmark_gap.value == -1.0 and row.benchmark_gap.n == len(fresh)
    assert row.control_gap is None and "no control" in row.verdict
