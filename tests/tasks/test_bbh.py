"""BIG-Bench Hard: the original repository's files and the hub rows, the 0-shot and 3-shot CoT
prompts, answer normalization on hand-written replies, per-subtask breakdown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from calipers.datasets import _hub
from calipers.datasets._hub import HubSource
from calipers.errors import DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun, make_plan
from calipers.store import Store
from calipers.tasks import LoadContext, formulations, get_task
from calipers.tasks.benchmarks import bbh
from calipers.types import ModelRequest, ModelResponse, Sample, SampleOutput

# two items per subtask; targets in each subtask's real answer form
TARGETS = {
    "boolean_expressions": ["True", "False"],
    "date_understanding": ["(A)", "(F)"],
    "dyck_languages": ["] ]", ") >"],
    "multistep_arithmetic_two": ["-12", "40"],
    "word_sorting": ["apple banana cherry", "dog"],
}


def examples(subtask: str) -> list[dict[str, str]]:
    return [
        {"input": f"{subtask} question {i}", "target": t}
        for i, t in enumerate(TARGETS.get(subtask, ["Yes", "No"]))
    ]


def write(tmp_path: Path, cot: bool = False) -> Path:
    d = tmp_path / "bbh"
    d.mkdir(parents=True)
    for sub in bbh.SUBTASKS:
        (d / f"{sub}.json").write_text(json.dumps({"canary": "x", "examples": examples(sub)}))
    if cot:
        (d / "cot-prompts").mkdir()
        for sub in bbh.SUBTASKS:
            (d / "cot-prompts" / f"{sub}.txt").write_text(
                f"BBH CANARY\n-----\nTask {sub}.\n\nQ: example\nA: Let's think step by step. "
                "So the answer is Yes.\n",
                encoding="utf-8",
            )
    return tmp_path


@pytest.fixture(autouse=True)
def _registered() -> None:
    bbh.register()
    bbh._hub.cache_clear()


def test_card() -> None:
    assert len(bbh.SUBTASKS) == 27 and formulations("bbh") == ("zeroshot", "cot")
    t = get_task("bbh")
    assert (t.kind, t.default_few_shot, t.metrics) == ("generate", 0, ["exact_match"])
    assert "0-shot" in t.description and "cot-prompts" in t.description


def test_items_from_the_original_files(tmp_path: Path) -> None:
    items = list(get_task("bbh").load(LoadContext(data_dir=write(tmp_path))))
    assert len(items) == 54
    assert items[0] == Sample(
        id="boolean_expressions/0",
        input="boolean_expressions question 0",
        target="True",
        category="boolean_expressions",
    )
    assert [s.category for s in items[::2]] == list(bbh.SUBTASKS)


def test_hub_rows_equal_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = write(tmp_path)

    def fetch(b: str, src: HubSource, how: str) -> tuple[list[dict[str, Any]], str | None]:
        assert (src.dataset_id, src.split) == ("SaylorTwift/bbh", "test")
        rows: list[dict[str, Any]] = examples(str(src.config))
        if src.config == "multistep_arithmetic_two":  # a Parquet column typed as integers
            rows = [{**r, "target": int(r["target"])} for r in rows]
        if src.config == "boolean_expressions":  # ... or as booleans
            rows = [{**r, "target": r["target"] == "True"} for r in rows]
        return rows, None

    monkeypatch.setattr(_hub, "_fetch", fetch)
    hub = list(get_task("bbh").load(LoadContext()))
    assert [s.model_copy(update={"metadata": {}}) for s in hub] == list(
        get_task("bbh").load(LoadContext(data_dir=d))
    )
    assert {s.target for s in hub if s.category == "multistep_arithmetic_two"} == {"-12", "40"}
    assert {s.target for s in hub if s.category == "boolean_expressions"} == {"True", "False"}
    assert hub[-1].metadata["data_source"] == "hf://datasets/SaylorTwift/bbh@main/word_sorting/test"


def test_zero_shot_and_cot_prompts(tmp_path: Path) -> None:
    d = write(tmp_path, cot=True)

    def first_prompt(formulation: str) -> str:
        config = RunConfig(
            model="fake:echo",
            tasks=("bbh",),
            formulation=formulation,
            limit=1,
            chat_template=False,
            data_dir=str(d),
        )
        req = make_plan(config, FakeModel()).tasks[0].samples[0].request
        assert isinstance(req, ModelRequest) and req.prompt is not None
        return req.prompt

    zero = first_prompt("zeroshot")
    assert zero.startswith("Answer the question.") and "So the answer is <answer>." in zero
    assert zero.endswith("\n\nQ: boolean_expressions question 0\nA:")
    assert first_prompt("cot") == (
        "Task boolean_expressions.\n\nQ: example\nA: Let's think step "
        "by step. So the answer is Yes.\n\nQ: boolean_expressions "
        "question 0\nA: Let's think step by step."
    )
    with pytest.raises(DataError, match=r"cot-prompts/boolean_expressions\.txt"):
        list(get_task("bbh", "cot").load(LoadContext(data_dir=write(tmp_path / "x"))))


def sample(target: str) -> Sample:
    return Sample(id="t", input="q", target=target)


@pytest.mark.parametrize(
    ("reply", "target", "ok"),
    [
        ("Let's think. So the answer is True.", "True", 1.0),
        ("So the answer is **false**.", "False", 1.0),
        ("True", "False", 0.0),
        ("The answer is (A).", "(A)", 1.0),
        ("So the answer is A.", "(A)", 1.0),
        ("So the answer is (A) 12/11/1937.", "(A)", 1.0),
        ("So the answer is (B).", "(A)", 0.0),
        ("So the answer is ABC.", "(A)", 0.0),
        ("First the answer is 3, but rechecking, the answer is -12.", "-12", 1.0),
        ("the answer is 40.\nNext question...", "40", 1.0),
        ("So the answer is ] ].", "] ]", 1.0),
        ("So the answer is apple  banana cherry.", "apple banana cherry", 1.0),
        ("Yes, because it is.", "Yes", 0.0),  # no "answer is": the whole first line
        ("\nYes\nbecause", "Yes", 1.0),
    ],
)
def test_normalized_exact_match(reply: str, target: str, ok: float) -> None:
    score = asyncio.run(
        bbh.bbh_match()(sample(target), SampleOutput(response=ModelResponse(text=reply)))
    )
    assert score.values == {"exact_match": ok}


def test_per_subtask_breakdown_through_a_run(tmp_path: Path) -> None:
    d = write(tmp_path)
    items = {s.input: s for s in get_task("bbh").load(LoadContext(data_dir=d))}

    def respond(req: ModelRequest) -> str:
        s = items[(req.prompt or "").rsplit("Q: ", 1)[1].removesuffix("\nA:")]
        right = s.id.endswith("/0") or s.category == "word_sorting"
        return f"So the answer is {s.target if right else 'nothing'}."

    config = RunConfig(model="fake:script", tasks=("bbh",), chat_template=False, data_dir=str(d))
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(respond)))
    t = result.summary.tasks["bbh"]
    assert t.n_scored == 54 and t.metrics["exact_match"].value == pytest.approx(28 / 54)
    cats = t.categories
    assert set(cats) == set(bbh.SUBTASKS) and all(v.n == 2 for v in cats.values())
    assert cats["word_sorting"].metrics["exact_match"].value == 1.0
    assert cats["navigate"].metrics["exact_match"].value == 0.5


def test_bad_files(tmp_path: Path) -> None:
    d = write(tmp_path)
    (d / "bbh" / "navigate.json").unlink()
    with pytest.raises(DataError, match=r"bbh: expected the file navigate\.json in .*bbh") as e:
        get_task("bbh").load(LoadContext(data_dir=d))
    assert e.value.hint and "suzgunmirac/BIG-Bench-Hard" in e.value.hint
    (d / "bbh" / "navigate.json").write_text('[{"input": "q", "target": "Yes"}]')
    with pytest.raises(DataError, match=r"expected \{\"examples\""):
        get_task("bbh").load(LoadContext(data_dir=d))
    (d / "bbh" / "navigate.json").write_bytes(b'{"examples": "\xff"}')
    with pytest.raises(DataError, match="not UTF-8 JSON"):
        get_task("bbh").load(LoadContext(data_dir=d))
