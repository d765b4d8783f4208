"""Hub loading gives the same samples as the local original files: a few items of each
benchmark are read from shared/data, rewritten by hand into the hub dataset's schema (as its
dataset card describes it), served by a stand-in for the one function that calls
``datasets.load_dataset``, and the two loaders' samples compared item by item."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from calipers.datasets import _hub
from calipers.datasets._hub import HubSource
from calipers.tasks import LoadContext, get_task
from calipers.tasks.benchmarks import bbq, commonsense, knowledge
from calipers.types import Sample
from tests._data import DATA, needs_data

SHA = "0123456789abcdef0123456789abcdef01234567"


pytestmark = needs_data("mmlu/test", "arc", "gsm8k", "hellaswag", "truthfulqa", "piqa", "bbq")
Rows = dict[tuple[str, str | None, str], list[dict[str, Any]]]  # (id, config or file, split)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Rows], list[HubSource]]]:
    """Install hand-written hub rows; returns the list of sources requested."""
    for f in (knowledge._hub_mmlu, knowledge._hub_redux, bbq._hub_samples):
        f.cache_clear()
    calls: list[HubSource] = []

    def install(rows: Rows) -> list[HubSource]:
        def fetch(
            benchmark: str, source: HubSource, how: str
        ) -> tuple[list[dict[str, Any]], str | None]:
            calls.append(source)
            key = (source.dataset_id, source.data_file or source.config, source.split)
            return [dict(r) for r in rows[key]], SHA

        monkeypatch.setattr(_hub, "_fetch", fetch)
        return calls

    yield install
    for f in (knowledge._hub_mmlu, knowledge._hub_redux, bbq._hub_samples):
        f.cache_clear()


def plain(s: Sample) -> dict[str, Any]:
    d = s.model_dump()
    d["metadata"].pop("data_source", None)
    return d


def assert_same(hub_samples: list[Sample], local: list[Sample], source: str) -> None:
    assert hub_samples, "no samples from the hub"
    by_id = {s.id: s for s in local}
    for s in hub_samples:
        assert s.metadata["data_source"].startswith(f"hf://datasets/{source}@{SHA}/")
        assert plain(s) == plain(by_id[s.id])


def test_mmlu(hub: Callable[[Rows], list[HubSource]]) -> None:
    assert DATA is not None
    rows = []
    for subject in ("abstract_algebra", "virology"):
        with (DATA / "mmlu" / "test" / f"{subject}_test.csv").open(newline="") as f:
            for q, a, b, c, d, letter in list(csv.reader(f))[:3]:
                rows.append(
                    {
                        "question": q,
                        "subject": subject,
                        "choices": [a, b, c, d],
                        "answer": "ABCD".index(letter),
                    }
                )
    calls = hub({("cais/mmlu", "all", "test"): rows})
    for form in ("cloze", "letter", "generate"):
        got = list(get_task("mmlu", form).load(LoadContext()))
        assert [s.id for s in got] == [
            f"{sub}/{i}" for sub in ("abstract_algebra", "virology") for i in range(3)
        ]
        assert_same(got, list(get_task("mmlu", form).load(LoadContext(data_dir=DATA))), "cais/mmlu")
    assert calls == [HubSource("cais/mmlu", "all", "test")]  # read once, cached


def test_arc(hub: Callable[[Rows], list[HubSource]]) -> None:
    assert DATA is not None
    lines = (DATA / "arc" / "ARC-Easy" / "ARC-Easy-Test.jsonl").read_text().splitlines()[:4]
    rows = []
    for rec in map(json.loads, lines):
        q = rec["question"]
        rows.append(
            {
                "id": rec["id"],
                "question": q["stem"],
                "answerKey": rec["answerKey"],
                "choices": {
                    "text": [c["text"] for c in q["choices"]],
                    "label": [c["label"] for c in q["choices"]],
                },
            }
        )
    hub({("allenai/ai2_arc", "ARC-Easy", "test"): rows})
    got = commonsense.load_arc("Easy", "Test", LoadContext())
    assert [s.id for s in got] == [r["id"] for r in rows]
    assert_same(
        got, commonsense.load_arc("Easy", "Test", LoadContext(data_dir=DATA)), "allenai/ai2_arc"
    )


def test_gsm8k(hub: Callable[[Rows], list[HubSource]]) -> None:
    assert DATA is not None
    rows = [json.loads(x) for x in (DATA / "gsm8k" / "test.jsonl").read_text().splitlines()[:3]]
    hub(
        {
            ("openai/gsm8k", "main", "test"): [
                {"question": r["question"], "answer": r["answer"]} for r in rows
            ]
        }
    )
    got = list(get_task("gsm8k").load(LoadContext()))
    assert [s.id for s in got] == ["test/0", "test/1", "test/2"]
    assert_same(got, list(get_task("gsm8k").load(LoadContext(data_dir=DATA))), "openai/gsm8k")


def test_hellaswag(hub: Callable[[Rows], list[HubSource]]) -> None:
    # Rowan/hellaswag validation rows 0-2, as on the dataset card (ctx = ctx_a + " " + ctx_b)
    rows = [
        {
            "ind": 24,
            "activity_label": "Roof shingle removal",
            "ctx_a": "A man is sitting on a roof.",
            "ctx_b": "he",
            "ctx": "A man is sitting on a roof. he",
            "split": "val",
            "split_type": "indomain",
            "source_id": "activitynet~v_-JhWjGDPHMY",
            "label": "3",
            "endings": [
                "is using wrap to wrap a pair of skis.",
                "is ripping level tiles off.",
                "is holding a rubik's cube.",
                "starts pulling up roofing on a roof.",
            ],
        },
        {
            "ind": 92,
            "activity_label": "Clean and jerk",
            "ctx_a": "A lady walks to a barbell. She bends down and grabs the pole.",
            "ctx_b": "the lady",
            "label": "3",
            "ctx": "A lady walks to a barbell. She bends down and grabs the pole. the lady",
            "split": "val",
            "split_type": "zeroshot",
            "source_id": "activitynet~v_-lJS58hyo1c",
            "endings": [
                "swings and lands in her arms.",
                "pulls the barbell forward.",
                "pulls a rope attached to the barbell.",
                "stands and lifts the weight over her head.",
            ],
        },
        {
            "ind": 106,
            "activity_label": "Canoeing",
            "ctx_a": "Two women in a child are shown in "
            "a canoe while a man pulls the canoe while standing in the water, with other "
            "individuals visible in the background.",
            "ctx_b": "the child and a different man",
            "ctx": "",
            "split": "val",
            "split_type": "indomain",
            "source_id": "x",
            "label": "2",
            "endings": [
                "are then shown paddling down a river in a boat while a woman talks.",
                "are driving the canoe, they go down the river flowing side to side.",
                "sit in a canoe while the man paddles.",
                "walking go down the rapids, while the man in his helicopter almost falls "
                "and goes out of canoehood.",
            ],
        },
    ]
    hub({("Rowan/hellaswag", None, "validation"): rows})
    got = commonsense.load_hellaswag(LoadContext())
    assert got[1].input == (
        "Clean and jerk: A lady walks to a barbell. She bends down and grabs the pole. The lady"
    )
    assert_same(got, commonsense.load_hellaswag(LoadContext(data_dir=DATA)), "Rowan/hellaswag")


def test_hellaswag_wikihow_markers_are_removed(hub: Callable[[Rows], list[HubSource]]) -> None:
    row = {
        "activity_label": "Home and Garden",
        "ctx_a": "[header] How to clean a grill [title] Heat the grill. [step] Turn it on.",
        "ctx_b": "",
        "label": "0",
        "endings": ["Scrub it. [substeps] Use  a brush.", "b", "c", "d"],
    }
    hub({("Rowan/hellaswag", None, "validation"): [row]})
    [s] = commonsense.load_hellaswag(LoadContext())
    assert s.input == "Home and Garden: How to clean a grill Heat the grill. Turn it on."
    assert s.choices == ("Scrub it. Use a brush.", "b", "c", "d")


def test_truthfulqa(hub: Callable[[Rows], list[HubSource]]) -> None:
    assert DATA is not None
    items = json.loads((DATA / "truthfulqa" / "data" / "v1" / "mc_task.json").read_text())[:3]
    with (DATA / "truthfulqa" / "data" / "v1" / "TruthfulQA.csv").open(
        newline="", encoding="utf-8-sig"
    ) as f:
        csv_rows = {r["Question"].strip(): r for r in csv.DictReader(f)}
    mc = [
        {
            "question": it["question"],
            "mc1_targets": {
                "choices": list(it["mc1_targets"]),
                "labels": list(it["mc1_targets"].values()),
            },
            "mc2_targets": {
                "choices": list(it["mc2_targets"]),
                "labels": list(it["mc2_targets"].values()),
            },
        }
        for it in items
    ]
    gen = [
        {
            "type": r["Type"],
            "category": r["Category"],
            "question": r["Question"],
            "best_answer": r["Best Answer"],
            "correct_answers": r["Correct Answers"].split("; "),
            "incorrect_answers": r["Incorrect Answers"].split("; "),
            "source": r["Source"],
        }
        for r in csv_rows.values()
    ]
    hub(
        {
            ("truthfulqa/truthful_qa", "multiple_choice", "validation"): mc,
            ("truthfulqa/truthful_qa", "generation", "validation"): gen,
        }
    )
    for name in ("truthfulqa_mc1", "truthfulqa_mc2"):
        got = list(get_task(name).load(LoadContext()))
        assert [s.id for s in got] == ["0", "1", "2"]
        assert_same(
            got, list(get_task(name).load(LoadContext(data_dir=DATA))), "truthfulqa/truthful_qa"
        )


def test_piqa(hub: Callable[[Rows], list[HubSource]]) -> None:
    assert DATA is not None
    recs = [json.loads(x) for x in (DATA / "piqa" / "valid.jsonl").read_text().splitlines()[:3]]
    labels = (DATA / "piqa" / "valid-labels.lst").read_text().split()[:3]
    hub(
        {
            ("baber/piqa", None, "validation"): [
                {"goal": r["goal"], "sol1": r["sol1"], "sol2": r["sol2"], "label": int(lb)}
                for r, lb in zip(recs, labels, strict=True)
            ]
        }
    )
    got = commonsense.load_piqa(LoadContext())
    assert_same(got, commonsense.load_piqa(LoadContext(data_dir=DATA)), "baber/piqa")


def test_bbq_rows_keep_the_original_schema(hub: Callable[[Rows], list[HubSource]]) -> None:
    assert DATA is not None
    rows: Rows = {("heegyu/bbq", f"data/{c}.jsonl", "test"): [] for c in bbq.CATEGORIES}
    rows[("heegyu/bbq", "data/Age.jsonl", "test")] = [
        json.loads(x) for x in (DATA / "bbq" / "Age.jsonl").read_text().splitlines()[:4]
    ]
    hub(rows)
    got = bbq.load_bbq(LoadContext())
    assert len(got) == 4
    assert_same(got, bbq.load_bbq(LoadContext(data_dir=DATA)), "heegyu/bbq")
