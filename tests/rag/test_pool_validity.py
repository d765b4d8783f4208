"""Distractor validity over the whole pool of the real data: no hard or random distractor and
no filler passage contains a normalised answer alias of its item; counterfactual passages differ
from gold only in the answer span (``find_violations``, which aligns tokens independently of how
the arms built them)."""

from __future__ import annotations

import pytest

from calipers.tasks import LoadContext, get_task
from calipers.tasks.rag import RagArm, apply_rag_arm, find_violations
from tests._data import DATA, needs_data

NQ = "lost_in_the_middle/qa_data/nq-open-oracle.jsonl.gz"


@needs_data(NQ)
@pytest.mark.parametrize(
    "arm",
    [
        RagArm(noise=0.8, distractor="hard", k=5),
        RagArm(noise=0.8, distractor="random", k=5),
        RagArm(noise=0.4, distractor="counterfactual", k=5),
        RagArm(gold="drop", k=5),
    ],
    ids=lambda a: a.describe(),
)
def test_no_violation_over_every_nq_item(arm: RagArm) -> None:
    task = get_task("nq_open_oracle")
    pool = list(task.load(LoadContext(data_dir=DATA)))
    items = list(apply_rag_arm(task, arm).load(LoadContext(data_dir=DATA)))
    assert len(items) == len(pool) == 2655
    assert find_violations(items, pool) == []
    kinds = {p["kind"] for s in items for p in s.fields["passages"]}
    assert kinds - {"gold"}, "the arm showed no distractor at all"
