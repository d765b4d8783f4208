"""MMLU-Pro: items from a local copy (jsonl, parquet) and the hub schema, the authors' prompt
and answer extraction, per-category breakdown through a run with the fake model."""

from __future__ import annotations

import asyncio
import json
import random
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
from calipers.tasks.benchmarks import mmlu_pro
from calipers.tasks.benchmarks.mmlu_pro import extract_mmlu_pro_answer
from calipers.types import ModelRequest, ModelResponse, SampleOutput

LETTERS = "ABCDEFGHIJ"


def row(qid: int, category: str, answer: int, n: int = 10, **extra: Any) -> dict[str, Any]:
    """A row in TIGER-Lab/MMLU-Pro's schema."""
    options = [f"{category} option {i}" for i in range(n)] + ["N/A"] * (10 - n)
    return {
        "question_id": qid,
        "question": f"Question {qid} about {category}?",
        "options": options,
        "answer": LETTERS[answer],
        "answer_index": answer,
        "cot_content": f"A: Let's think step by step. Reasoning {qid}. The answer is "
        f"({LETTERS[answer]}).",
        "category": category,
        "src": f"ori_{qid}",
        **extra,
    }


TEST = [
    row(70 + i, cat, i % 10) for i, cat in enumerate(["math"] * 4 + ["law"] * 3 + ["history"] * 2)
]
TEST.append(row(90, "math", 3, n=6))  # fewer options, padded with N/A
VALID = [row(i, cat, i % 10) for i, cat in enumerate(["math"] * 5 + ["law"] * 5 + ["history"] * 5)]


def write(tmp_path: Path, fmt: str) -> Path:
    d = tmp_path / "data"
    (d / "mmlu_pro").mkdir(parents=True)
    for split, rows in (("test", TEST), ("validation", VALID)):
        if fmt == "jsonl":
            (d / "mmlu_pro" / f"{split}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
            )
        else:
            pa = pytest.importorskip("pyarrow")
            pq = pytest.importorskip("pyarrow.parquet")
            pq.write_table(pa.Table.from_pylist(rows), d / "mmlu_pro" / f"{split}.parquet")
    return d


@pytest.fixture(autouse=True)
def _registered() -> None:
    mmlu_pro.register()
    mmlu_pro._hub_rows.cache_clear()


def test_formulations_and_card() -> None:
    assert formulations("mmlu_pro") == ("generate", "letter", "cloze")
    t = get_task("mmlu_pro")
    assert (t.kind, t.default_few_shot, t.few_shot_match, t.metrics) == (
        "generate",
        5,
        "category",
        ["acc", "acc_no_guess"],
    )
    assert (t.version, get_task("mmlu_pro", "letter").version) == ("2", "1")
    assert "7478e2681849424bff7c2787bda5f3c9abf98a62" in t.source
    assert t.params.stop == ("Question:",) and t.params.max_tokens == 2048
    assert get_task("mmlu_pro", "letter").kind == "multiple_choice"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_items_from_local_files(tmp_path: Path, fmt: str) -> None:
    d = write(tmp_path, fmt)
    items = list(get_task("mmlu_pro").load(LoadContext(data_dir=d)))
    assert [s.id for s in items] == [str(r["question_id"]) for r in TEST]
    for s, r in zip(items, TEST, strict=True):
        kept = [o for o in r["options"] if o != "N/A"]
        assert s.choices == tuple(kept) and s.target == r["answer_index"]
        assert s.choices[s.target_index] == r["options"][r["answer_index"]]
        assert s.category == r["category"] and s.metadata["answer"] == r["answer"]
    assert len(items[-1].choices or ()) == 6
    assert items[-1].fields["options"].splitlines()[-1] == "F. math option 5"
    letter = list(get_task("mmlu_pro", "letter").load(LoadContext(data_dir=d)))
    assert letter[0].choices == tuple(LETTERS) and letter[-1].choices == tuple("ABCDEF")


def test_hub_rows_give_the_same_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = write(tmp_path, "jsonl")

    def fetch(b: str, src: HubSource, how: str) -> tuple[list[dict[str, Any]], str | None]:
        assert (src.dataset_id, src.config) == ("TIGER-Lab/MMLU-Pro", None)
        return [dict(r) for r in {"test": TEST, "validation": VALID}[src.split]], None

    monkeypatch.setattr(_hub, "_fetch", fetch)
    hub = list(get_task("mmlu_pro").load(LoadContext()))
    local = list(get_task("mmlu_pro").load(LoadContext(data_dir=d)))
    assert [
        h.model_copy(
            update={"metadata": {k: v for k, v in h.metadata.items() if k != "data_source"}}
        )
        for h in hub
    ] == local
    assert hub[0].metadata["data_source"] == "hf://datasets/TIGER-Lab/MMLU-Pro@main/default/test"


def test_prompt_is_the_authors_cot_prompt(tmp_path: Path) -> None:
    d = write(tmp_path, "jsonl")
    config = RunConfig(
        model="fake:echo", tasks=("mmlu_pro",), limit=1, chat_template=False, data_dir=str(d)
    )
    [pt] = make_plan(config, FakeModel()).tasks
    req = pt.samples[0].request
    assert isinstance(req, ModelRequest) and req.prompt is not None
    p = req.prompt
    assert p.startswith(
        "You are an expert in math. Below is a series of example questions "
        "(with answers) about math for demonstration."
    )
    assert p.count("Question:\n") == 6 and "law" not in p  # 5 shots of the item's category
    for v in VALID[:5]:
        assert (
            f"Question:\n{v['question']}\nOptions:\nA. math option 0\n" in p
            and f"J. math option 9\nAnswer: Let's think step by step. Reasoning "
            f"{v['question_id']}. The answer is ({v['answer']})."
            in p
        )
    assert p.endswith(
        "Question:\nQuestion 70 about math?\nOptions:\nA. math option 0\n"
        "B. math option 1\nC. math option 2\nD. math option 3\nE. math option 4\n"
        "F. math option 5\nG. math option 6\nH. math option 7\nI. math option 8\n"
        "J. math option 9\nAnswer: Let's think step by step."
    )


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Let's see. The answer is (C).", "C"),
        ("the answer is J because", "J"),
        ("First the answer is (B). Later the answer is (D).", "B"),  # the first one
        ("I think so.\nAnswer: E\nAnswer: F", "E"),  # the first line that has one, its last
        ("Some text. Final: option G is right", "G"),  # the last capital A-J anywhere
        ("no capital letters here", None),
        ("The Answer is (C)", "C"),  # 'Answer is' is not 'answer is'; last letter wins
        ("I choose B. Good luck!", "B"),  # a standalone letter, not the G of 'Good'
        ("Option D, clearly. Great Job!", "D"),
        ("Answer is K, or Ä", None),  # only A-J, standalone
    ],
)
def test_extraction_on_hand_written_replies(text: str, want: str | None) -> None:
    assert extract_mmlu_pro_answer(text) == want


def test_scores_and_category_breakdown_through_a_run(tmp_path: Path) -> None:
    d = write(tmp_path, "jsonl")
    right = {str(r["question_id"]) for r in TEST[::2]}

    def respond(req: ModelRequest) -> str:
        q = (req.prompt or "").rsplit("Question:\n", 1)[1].split("\n", 1)[0]
        r = next(x for x in TEST if x["question"] == q)
        letter = (
            r["answer"] if str(r["question_id"]) in right else "J" if r["answer"] != "J" else "A"
        )
        return f"Reasoning. The answer is ({letter})."

    config = RunConfig(
        model="fake:script", tasks=("mmlu_pro",), chat_template=False, data_dir=str(d)
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(respond)))
    s = result.summary.tasks["mmlu_pro"]
    assert s.metrics["acc"].value == pytest.approx(len(right) / len(TEST))
    cats = s.categories
    assert {c: v.n for c, v in cats.items()} == {"math": 5, "law": 3, "history": 2}
    want = {
        c: sum(1 for r in TEST if r["category"] == c and str(r["question_id"]) in right)
        for c in cats
    }
    assert {c: v.metrics["acc"].value * v.n for c, v in cats.items()} == pytest.approx(want)


def out(text: str) -> SampleOutput:
    return SampleOutput(response=ModelResponse(text=text))


def test_no_letter_gets_the_authors_seeded_guess_in_acc_only() -> None:
    s = mmlu_pro.mmlu_pro_answer()
    # the authors: random.seed(12345) then randint(0, n - 1): G of 10 options, D of 4
    assert [random.Random(12345).randint(0, n - 1) for n in (10, 4)] == [6, 3]
    for answer, n, want in ((2, 10, 0.0), (6, 10, 1.0), (0, 4, 0.0), (3, 4, 1.0)):
        [sample] = [mmlu_pro._sample(row(1, "law", answer, n=n), "x", "generate", {})]
        got = asyncio.run(s(sample, out("i do not know")))
        assert got.values == {"acc": want, "acc_no_guess": 0.0} and got.answer is None
    [sample] = [mmlu_pro._sample(row(1, "law", 2), "x", "generate", {})]
    assert asyncio.run(s(sample, out("the answer is (C)"))).values == {
        "acc": 1.0,
        "acc_no_guess": 1.0,
    }


def test_missing_and_bad_files(tmp_path: Path) -> None:
    (tmp_path / "mmlu_pro").mkdir()
    with pytest.raises(DataError, match=r"mmlu_pro: expected test\.parquet or test\.jsonl in "):
        get_task("mmlu_pro").load(LoadContext(data_dir=tmp_path))
    (tmp_path / "mmlu_pro" / "test.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="not a readable Parquet file") as e:
        get_task("mmlu_pro").load(LoadContext(data_dir=tmp_path))
    assert e.value.hint and "TIGER-Lab/MMLU-Pro" in e.value.hint
    (tmp_path / "mmlu_pro" / "test.parquet").unlink()
    (tmp_path / "mmlu_pro" / "test.jsonl").write_text('{"question_id": 1}\n')
    with pytest.raises(DataError, match="has no field 'options'"):
        get_task("mmlu_pro").load(LoadContext(data_dir=tmp_path))
