"""GPQA: the original CSV and the hub rows, seeded option shuffling (the correct answer is
listed first in the data), the lm-eval zero-shot prompt, the gated-dataset message."""

from __future__ import annotations

import asyncio
import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import chisquare

from calipers.datasets import _hub
from calipers.datasets._hub import HubSource
from calipers.errors import DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun, make_plan
from calipers.store import Store
from calipers.tasks import LoadContext, formulations, get_task
from calipers.tasks.benchmarks import gpqa
from calipers.types import LoglikelihoodRequest, ModelRequest

COLUMNS = [
    "Pre-Revision Question",
    "Pre-Revision Correct Answer",
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
    "Explanation",
    "Record ID",
    "High-level domain",
    "Subdomain",
]


def row(i: int, domain: str) -> dict[str, Any]:
    return {
        "Pre-Revision Question": "old",
        "Pre-Revision Correct Answer": "old",
        "Question": f"Question {i} in {domain}?\n",
        "Correct Answer": f" right {i} ",
        "Incorrect Answer 1": f"wrong {i}a",
        "Incorrect Answer 2": f"wrong  {i}b",
        "Incorrect Answer 3": f"wrong {i}c [1]",
        "Explanation": "because",
        "Record ID": f"rec{i:03d}",
        "High-level domain": domain,
        "Subdomain": f"{domain} sub",
    }


ROWS = [row(i, d) for i, d in enumerate(["Physics"] * 5 + ["Chemistry"] * 4 + ["Biology"] * 3)]


def write(tmp_path: Path, subset: str = "diamond") -> Path:
    (tmp_path / "gpqa").mkdir(exist_ok=True)
    with (tmp_path / "gpqa" / f"gpqa_{subset}.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(ROWS)
    return tmp_path


@pytest.fixture(autouse=True)
def _registered() -> None:
    gpqa.register()
    gpqa._hub.cache_clear()


def test_tasks_and_formulations() -> None:
    for name in ("gpqa", "gpqa_main", "gpqa_extended"):
        assert formulations(name) == ("letter", "generate", "cloze")
        t = get_task(name)
        assert (t.name, t.kind, t.default_few_shot, t.metrics) == (
            name,
            "multiple_choice",
            0,
            ["acc", "acc_norm"],
        )
    assert "gpqa_diamond" in get_task("gpqa").source
    assert get_task("gpqa", "generate").metrics == ["acc"]


def test_items_options_and_targets(tmp_path: Path) -> None:
    d = write(tmp_path)
    items = list(get_task("gpqa", "cloze").load(LoadContext(data_dir=d, seed=3)))
    assert [s.id for s in items] == [r["Record ID"] for r in ROWS]
    for s, r in zip(items, ROWS, strict=True):
        i = int(r["Record ID"][3:])
        assert s.input == f"Question {i} in {r['High-level domain']}?"
        assert s.choices is not None and s.target_text == f"right {i}"
        # cleaned as lm-eval does: stripped first, then "[1]" removed (its space stays) and
        # double spaces made single
        assert sorted(s.choices) == sorted(
            [f"right {i}", f"wrong {i}a", f"wrong {i}b", f"wrong {i}c "]
        )
        assert s.category == r["High-level domain"] and s.metadata["shuffle_seed"] == 3
    letter = list(get_task("gpqa").load(LoadContext(data_dir=d, seed=3)))
    assert [s.target for s in letter] == [s.target for s in items]
    assert letter[0].choices == ("A", "B", "C", "D")
    assert letter[0].metadata["option_texts"] == list(items[0].choices or ())


def test_shuffle_is_seeded_and_spreads_the_answer(tmp_path: Path) -> None:
    d = write(tmp_path)
    load = get_task("gpqa").load
    assert load(LoadContext(data_dir=d, seed=5)) == load(LoadContext(data_dir=d, seed=5))
    assert load(LoadContext(data_dir=d, seed=5)) != load(LoadContext(data_dir=d, seed=6))
    # the correct answer's position over 2,000 seeded draws: uniform over A-D
    counts = Counter(gpqa.shuffle_order(seed, "rec001").index(0) for seed in range(2000))
    assert set(counts) == {0, 1, 2, 3}
    assert chisquare([counts[k] for k in range(4)]).pvalue > 0.001
    # ... and every option lands everywhere (a permutation, not a rotation of the first)
    assert len({tuple(gpqa.shuffle_order(s, "rec001")) for s in range(200)}) == 24


def test_prompt_is_lm_evals_zero_shot(tmp_path: Path) -> None:
    d = write(tmp_path)
    config = RunConfig(
        model="fake:echo", tasks=("gpqa",), limit=1, chat_template=False, data_dir=str(d), seed=3
    )
    plan = make_plan(config, FakeModel())
    [pt] = plan.tasks
    req = pt.samples[0].request
    assert isinstance(req, LoglikelihoodRequest)
    s = pt.samples[0].sample
    texts = s.metadata["option_texts"]
    assert req.context == (
        "What is the correct answer to this question: Question 0 in "
        "Physics?\nChoices:\n"
        + "\n".join(f"({L}) {t}" for L, t in zip("ABCD", texts, strict=True))
        + "\nAnswer:"
    )
    assert req.continuations == (" (A)", " (B)", " (C)", " (D)")
    assert plan.methodology.seeds.items == 3 and s.metadata["shuffle_seed"] == 3


def test_generate_scores_and_domain_breakdown(tmp_path: Path) -> None:
    d = write(tmp_path)
    items = {s.input: s for s in get_task("gpqa", "generate").load(LoadContext(data_dir=d))}

    def respond(req: ModelRequest) -> str:
        q = (req.prompt or "").split("question: ", 1)[1].split("\nChoices", 1)[0]
        s = items[q]
        pick = s.target_index if int(s.id[3:]) % 3 == 0 else (s.target_index + 1) % 4
        return f"The correct answer is ({'ABCD'[pick]})"

    config = RunConfig(
        model="fake:script",
        tasks=("gpqa",),
        formulation="generate",
        chat_template=False,
        data_dir=str(d),
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(respond)))
    t = result.summary.tasks["gpqa"]
    assert t.metrics["acc"].value == pytest.approx(4 / 12)  # ids 0, 3, 6, 9
    assert {c: v.n for c, v in t.categories.items()} == {
        "Physics": 5,
        "Chemistry": 4,
        "Biology": 3,
    }
    assert t.categories["Physics"].metrics["acc"].value == pytest.approx(2 / 5)


def test_hub_rows_equal_the_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = write(tmp_path)

    def fetch(b: str, src: HubSource, how: str) -> tuple[list[dict[str, Any]], str | None]:
        assert (src.dataset_id, src.config, src.split) == ("Idavidrein/gpqa", "gpqa_main", "train")
        return [dict(r) for r in ROWS], "f" * 40

    monkeypatch.setattr(_hub, "_fetch", fetch)
    hub = list(get_task("gpqa_main").load(LoadContext(seed=1)))
    write(tmp_path, "main")
    local = list(get_task("gpqa_main").load(LoadContext(data_dir=d, seed=1)))
    assert [
        s.model_copy(
            update={"metadata": {k: v for k, v in s.metadata.items() if k != "data_source"}}
        )
        for s in hub
    ] == local
    assert hub[0].metadata["data_source"].startswith("hf://datasets/Idavidrein/gpqa@fff")


def test_gated_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def fetch(b: str, src: HubSource, how: str) -> Any:
        raise ConnectionError(
            "401 Client Error. Cannot access gated repo for url "
            "https://huggingface.co/datasets/Idavidrein/gpqa/resolve/main/x"
        )

    monkeypatch.setattr(_hub, "_fetch", fetch)
    with pytest.raises(
        DataError, match=r"gpqa: .*Idavidrein/gpqa, config gpqa_diamond.*gated"
    ) as e:
        get_task("gpqa").load(LoadContext())
    assert e.value.hint and "huggingface-cli login" in e.value.hint
    assert "https://huggingface.co/datasets/Idavidrein/gpqa" in e.value.hint


def test_missing_file(tmp_path: Path) -> None:
    (tmp_path / "gpqa").mkdir()
    with pytest.raises(DataError, match=r"gpqa: expected the file gpqa_diamond\.csv") as e:
        get_task("gpqa").load(LoadContext(data_dir=tmp_path))
    assert e.value.hint and "idavidrein/gpqa" in e.value.hint
    (tmp_path / "gpqa" / "gpqa_diamond.csv").write_bytes(b"Question\n\xff\xfe\n")
    with pytest.raises(DataError, match="not UTF-8"):
        get_task("gpqa").load(LoadContext(data_dir=tmp_path))
