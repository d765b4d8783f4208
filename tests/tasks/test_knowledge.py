"""MMLU and MMLU-Redux from their original files: counts, items, prompts, error counts."""

from __future__ import annotations

import asyncio
import csv
import io
from collections import Counter
from pathlib import Path

import pytest

from calipers.errors import DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun, make_plan
from calipers.store import Store
from calipers.tasks import LoadContext, formulations, get_task
from calipers.tasks.benchmarks import knowledge
from calipers.types import Sample
from tests._data import DATA, needs_data

pytestmark = needs_data("mmlu/test", "mmlu_redux")
# SOURCES.md: the MMLU-Redux files that use ';' as the separator.
SEMICOLON = {
    "anatomy",
    "astronomy",
    "business_ethics",
    "high_school_macroeconomics",
    "high_school_microeconomics",
    "management",
    "nutrition",
    "philosophy",
    "prehistory",
}


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    knowledge.register()
    knowledge.register()  # idempotent


def load(name: str, formulation: str = "cloze") -> list[Sample]:
    return list(get_task(name, formulation).load(LoadContext(data_dir=DATA)))


@pytest.fixture(scope="module")
def mmlu() -> list[Sample]:
    return load("mmlu")


@pytest.fixture(scope="module")
def redux() -> list[Sample]:
    return load("mmlu_redux")


def raw_rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_formulations_and_cards() -> None:
    for name in ("mmlu", "mmlu_redux", "mmlu_redux_correct"):
        assert formulations(name) == ("cloze", "letter", "generate")
        assert get_task(name).formulation == "cloze"
        for f, kind, metrics in [
            ("cloze", "multiple_choice", ["acc", "acc_norm"]),
            ("letter", "multiple_choice", ["acc", "acc_norm"]),
            ("generate", "generate", ["acc"]),
        ]:
            task = get_task(name, f)
            assert (task.name, task.formulation, task.kind, task.metrics) == (
                name,
                f,
                kind,
                metrics,
            )
            assert task.default_few_shot == 0 and task.fewshot is not None


def test_mmlu_counts_match_the_files(mmlu: list[Sample]) -> None:
    assert DATA is not None
    assert len(mmlu) == 14_042  # SOURCES.md
    per_subject = Counter(s.category for s in mmlu)
    assert len(per_subject) == 57 and set(per_subject) == set(knowledge.SUBJECTS)
    assert per_subject == {
        p.name.removesuffix("_test.csv"): len(raw_rows(p))
        for p in (DATA / "mmlu" / "test").glob("*_test.csv")
    }
    assert per_subject["abstract_algebra"] == 100 and per_subject["professional_law"] == 1534
    assert len({s.id for s in mmlu}) == len(mmlu)
    fewshot = get_task("mmlu").fewshot
    assert fewshot is not None
    pool = fewshot(LoadContext(data_dir=DATA))
    assert len(pool) == 285 and set(Counter(s.category for s in pool).values()) == {5}


def test_known_item_equals_the_raw_row(mmlu: list[Sample]) -> None:
    assert DATA is not None
    row = raw_rows(DATA / "mmlu" / "test" / "anatomy_test.csv")[3]
    [s] = [s for s in mmlu if s.id == "anatomy/3"]
    assert (s.input, list(s.choices or ()), s.target) == (row[0], row[1:5], "ABCD".index(row[5]))
    assert s.category == "anatomy" and s.fields["subject"] == "anatomy"


def test_prompts_render_as_specified(mmlu: list[Sample]) -> None:
    q = "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q."
    cloze, s = get_task("mmlu", "cloze"), mmlu[0]
    assert cloze.prompt.plain(s, [], None) == (
        f"The following are questions about abstract algebra.\nQuestion: {q}\nAnswer:"
    )
    assert cloze.prompt.continuations(s) == (" 0", " 4", " 2", " 6") and s.target == 1
    lettered = (
        "The following are multiple choice questions (with answers) about abstract "
        f"algebra.\n\n{q}\nA. 0\nB. 4\nC. 2\nD. 6\nAnswer:"
    )
    row: tuple[str, tuple[str, ...], int, dict[str, object]] = (s.input, s.choices or (), 1, {})
    letter, s = (
        get_task("mmlu", "letter"),
        knowledge._sample(s.id, "abstract_algebra", row, "letter"),
    )
    assert letter.prompt.plain(s, [], None) == lettered
    assert letter.prompt.continuations(s) == (" A", " B", " C", " D")
    assert s.metadata["option_texts"] == ["0", "4", "2", "6"] and s.target_text == "B"
    generate = get_task("mmlu", "generate")
    s = knowledge._sample(s.id, "abstract_algebra", row, "generate")
    assert generate.prompt.plain(s, [], None) == lettered and s.choices == ("0", "4", "2", "6")
    assert generate.prompt.plain(s, [s], None).startswith(lettered + " B\n\n")


def _independent_error_counts(folder: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in sorted(folder.glob("mmlu_*.csv")):
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = raw.decode("cp1252")
        subject = path.stem.removeprefix("mmlu_")
        sep = ";" if subject in SEMICOLON else ","
        for row in csv.DictReader(io.StringIO(text, newline=""), delimiter=sep):
            label = row["error_type"].strip().lower().replace("_", " ")
            counts[" ".join(label.split())] += 1
    return counts


def test_redux_error_counts(redux: list[Sample]) -> None:
    assert DATA is not None
    counts = knowledge.error_counts(DATA)
    assert counts == {
        k.replace(" ", "_"): v for k, v in _independent_error_counts(DATA / "mmlu_redux").items()
    }
    assert counts["ok"] == 5_330 and sum(counts.values()) - counts["ok"] == 370  # SOURCES.md
    assert list(counts) == [
        "ok",
        "bad_question_clarity",
        "wrong_groundtruth",  # most first
        "multiple_correct_answers",
        "no_correct_answer",
        "expert",
        "bad_options_clarity",
    ]
    assert len(redux) == 5_700
    assert Counter(s.metadata["error_type"] for s in redux) == counts
    assert Counter(s.category for s in redux) == {s: 100 for s in knowledge.SUBJECTS}
    correct = load("mmlu_redux_correct")
    assert len(correct) == 5_330 and {s.metadata["error_type"] for s in correct} == {"ok"}
    by_id = {s.id: s for s in redux}
    assert all(by_id[s.id] == s for s in correct)  # same ids and items: results pair up


def test_redux_known_items(redux: list[Sample]) -> None:
    assert DATA is not None
    with (DATA / "mmlu_redux" / "mmlu_anatomy.csv").open(newline="", encoding="utf-8") as f:
        first = next(csv.DictReader(f, delimiter=";"))
    s = redux[[r.id for r in redux].index("anatomy/0")]
    assert s.input == first["question"] and s.target == int(first["answer"]) == 3
    assert s.choices == ("Dyslexia", "Epilepsy", "Hydrocephalus", "Narcolepsy")
    assert s.metadata["error_type"] == "ok" and s.metadata["error_type_raw"] == "OK"
    # A wrong-label item keeps its original MMLU label as the target.
    with (DATA / "mmlu_redux" / "mmlu_virology.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    i, row = next(
        (i, r)
        for i, r in enumerate(rows)
        if r["error_type"].strip().lower().replace(" ", "_") == "wrong_groundtruth"
    )
    s = redux[[r.id for r in redux].index(f"virology/{i}")]
    assert s.target == int(row["answer"]) and s.metadata["error_type"] == "wrong_groundtruth"
    assert s.metadata["correct_answer"] == row["correct_answer"]


def test_missing_data_names_benchmark_and_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="mmlu: no local data directory"):
        get_task("mmlu").load(LoadContext())
    with pytest.raises(DataError, match=r"mmlu: expected the folder .*mmlu"):
        get_task("mmlu").load(LoadContext(data_dir=tmp_path))
    (tmp_path / "mmlu" / "test").mkdir(parents=True)
    with pytest.raises(
        DataError,
        match=r"mmlu: expected the file test/abstract_algebra_test\."
        r"csv in .*test",
    ) as e:
        get_task("mmlu").load(LoadContext(data_dir=tmp_path))
    assert e.value.hint and "hendrycks/test" in e.value.hint
    for bad in ("q,1,2,3,4,E\n", "q,1,2,3,4,\n", "q,1,2,3,A\n"):
        (tmp_path / "mmlu" / "test" / "abstract_algebra_test.csv").write_text(bad)
        with pytest.raises(DataError, match=r"abstract_algebra_test\.csv:1: expected 6 col"):
            get_task("mmlu").load(LoadContext(data_dir=tmp_path))
    (tmp_path / "mmlu_redux").mkdir()
    with pytest.raises(DataError, match=r"mmlu_redux: expected the file mmlu_abstract_algebra"):
        knowledge.error_counts(tmp_path)


def test_runs_through_the_runner_with_per_subject_breakdown() -> None:
    config = RunConfig(model="fake:echo", tasks=("mmlu",), limit=101, data_dir=str(DATA))
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel()))
    ts = result.summary.tasks["mmlu"]
    assert (ts.n_samples, ts.n_errors) == (101, 0) and ts.primary == "acc"
    assert {k: v.n for k, v in ts.categories.items()} == {
        "abstract_algebra": 100,
        "anatomy": 1,
    }
    card = result.methodology.tasks["mmlu"]
    assert (card.formulation, card.few_shot, card.n_items) == ("cloze", 0, 101)


def test_generate_formulation_scores_the_letter() -> None:
    config = RunConfig(
        model="fake:const=B", tasks=("mmlu",), formulation="generate", limit=2, data_dir=str(DATA)
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(lambda _r: "The answer is B.")))
        records = store.get_samples(result.run_id)
    assert [(r.sample_id, r.answer, r.scores) for r in records] == [
        ("abstract_algebra/0", "B", {"acc": 1.0}),
        ("abstract_algebra/1", "B", {"acc": 0.0}),
    ]


def test_five_shot_draws_from_dev() -> None:
    config = RunConfig(
        model="fake:echo",
        tasks=("mmlu",),
        formulation="letter",
        limit=2,
        few_shot=5,
        chat_template=False,
        data_dir=str(DATA),
    )
    plan = make_plan(config, FakeModel())
    [planned] = plan.tasks
    text = planned.samples[0].prompt_text or ""
    assert text.count("The following are multiple choice questions") == 6
    assert text.count("\nAnswer: ") == 5 and text.endswith("D. 6\nAnswer:")
    first = planned.samples[0].sample
    assert first.choices == ("A", "B", "C", "D") and first.metadata["option_texts"] == [
        "0",
        "4",
        "2",
        "6",
    ]
    assert planned.methodology.few_shot == 5 and planned.methodology.few_shot_sampling == "fixed"


def test_five_shot_mmlu_uses_the_items_own_subject() -> None:
    cfg = RunConfig(
        model="fake:echo",
        tasks=("mmlu",),
        limit=3,
        few_shot=5,
        data_dir=str(DATA),
        chat_template=False,
    )
    with Store.open() as store:
        result = asyncio.run(arun(cfg, store, provider=FakeModel()))
        samples = store.get_samples(result.run_id)
    for s in samples:
        context = s.prompt["context"]
        subject = (s.category or "").replace("_", " ")
        assert context.count("The following are questions about") == 6
        assert context.count(f"The following are questions about {subject}.") == 6
