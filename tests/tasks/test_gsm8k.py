"""GSM8K from the original jsonl: counts, targets, the 5-shot prompt, scoring through a run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from calipers.errors import DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun, make_plan
from calipers.store import Store
from calipers.tasks import LoadContext, get_task
from calipers.tasks.benchmarks import gsm8k
from calipers.types import ModelRequest, Sample
from tests._data import DATA, needs_data

pytestmark = needs_data("gsm8k/test.jsonl", "gsm8k/train.jsonl")


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    gsm8k.register()
    gsm8k.register()


def raw(split: str) -> list[dict[str, str]]:
    assert DATA is not None
    lines = (DATA / "gsm8k" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def test_items() -> list[Sample]:
    return list(get_task("gsm8k").load(LoadContext(data_dir=DATA)))


def test_card() -> None:
    task = get_task("gsm8k")
    assert (task.kind, task.metrics, task.default_few_shot) == (
        "generate",
        ["flexible_lmeval", "strict_lmeval", "acc", "acc_strict"],
        5,
    )
    assert task.version == "2"
    assert (task.few_shot_sampling, task.few_shot_seed) == ("per_item", 1234)
    assert task.params.max_tokens == 256 and "Question:" in task.params.stop


def test_every_target_is_the_number_after_the_marks(test_items: list[Sample]) -> None:
    rows = raw("test")
    assert len(test_items) == len(rows) == 1_319  # SOURCES.md
    for s, row in zip(test_items, rows, strict=True):
        expected = row["answer"].rsplit("####", 1)[1].strip().replace(",", "")
        assert int(expected) == int(str(s.target))  # every target parses as a number
        assert s.input == row["question"] and s.fields["solution"] == row["answer"]
    assert test_items[0].target == "18" and test_items[0].input.startswith("Janet\u2019s ducks")
    assert len({s.id for s in test_items}) == 1_319
    assert [s.target for s in test_items if "," in s.fields["solution"].rsplit("####")[1]]
    assert all("," not in str(s.target) for s in test_items)


def test_five_shot_prompt_from_train_with_a_recorded_seed() -> None:
    def plan(seed: int | None) -> tuple[str, str, int]:
        config = RunConfig(
            model="fake:echo",
            tasks=("gsm8k",),
            limit=2,
            chat_template=False,
            few_shot_seed=seed,
            data_dir=str(DATA),
        )
        [pt] = make_plan(config, FakeModel()).tasks
        req = pt.samples[0].request
        assert isinstance(req, ModelRequest) and req.prompt is not None
        return req.prompt, str(pt.samples[1].request), pt.methodology.few_shot_seed or 0

    prompt, second, seed = plan(None)
    train = {r["question"]: r["answer"] for r in raw("train")}
    parts = prompt.split("\n\n")
    shots = [p for p in parts if p.startswith("Question: ") and "\nAnswer: " in p]
    assert len(shots) == 5 and seed == 1234
    for shot in shots:
        q, a = shot.removeprefix("Question: ").split("\nAnswer: ", 1)
        assert q in train and train[q].startswith(a)  # the solution, split on blank lines
    assert prompt.endswith(f"Question: {raw('test')[0]['question']}\nAnswer:")
    assert prompt.count("#### ") == 5
    other, _, other_seed = plan(7)
    assert other_seed == 7 and other != prompt and plan(None)[0] == prompt
    assert second.count("####") == 5 and prompt not in second


def test_strict_and_flexible_scores_through_a_run() -> None:
    replies = {0: "She sells 9 eggs for $18.", 1: "It takes 3 bolts.\n#### 3"}

    def respond(req: ModelRequest) -> str:
        text = req.prompt or ""
        return replies[0] if "Janet" in text.rsplit("Question:", 1)[1] else replies[1]

    config = RunConfig(
        model="fake:script", tasks=("gsm8k",), limit=3, chat_template=False, data_dir=str(DATA)
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(respond)))
        records = store.get_samples(result.run_id)
    # lm-eval's pair first (the answer is its flexible extraction), then the numeric pair
    assert [(r.sample_id, r.target, r.answer, r.scores) for r in records] == [
        (
            "test/0",
            "18",
            "$18.",
            {"flexible_lmeval": 1.0, "strict_lmeval": 0.0, "acc": 1.0, "acc_strict": 0.0},
        ),
        (
            "test/1",
            "3",
            "3",
            {"flexible_lmeval": 1.0, "strict_lmeval": 1.0, "acc": 1.0, "acc_strict": 1.0},
        ),
        (
            "test/2",
            "70000",
            "3",
            {"flexible_lmeval": 0.0, "strict_lmeval": 0.0, "acc": 0.0, "acc_strict": 0.0},
        ),
    ]
    assert result.summary.tasks["gsm8k"].primary == "flexible_lmeval"
    assert result.methodology.tasks["gsm8k"].few_shot == 5


def test_missing_data_names_benchmark_and_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="gsm8k: no local data directory"):
        get_task("gsm8k").load(LoadContext())
    (tmp_path / "gsm8k").mkdir()
    with pytest.raises(DataError, match=r"gsm8k: expected the file test\.jsonl") as e:
        get_task("gsm8k").load(LoadContext(data_dir=tmp_path))
    assert e.value.hint and "grade-school-math" in e.value.hint
    (tmp_path / "gsm8k" / "test.jsonl").write_text('{"question": "q", "answer": "4"}\n')
    with pytest.raises(DataError, match=r"test\.jsonl:1: the answer does not end in '#### "):
        get_task("gsm8k").load(LoadContext(data_dir=tmp_path))
