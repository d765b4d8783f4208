"""Perturbations of questions, the robustness gap and the contamination perturbation gap,
checked against fake models whose reaction to each change is known exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from calipers.analysis import StoredRun
from calipers.analysis._sensitivity import robustness
from calipers.analysis._study import load_study, plan_study, run_study
from calipers.contamination._perturbation import perturbation_gap
from calipers.models import FakeModel
from calipers.runner import RunConfig
from calipers.store import Store
from calipers.tasks import Variant, apply_variant, resolve_task
from calipers.tasks._perturb import PERTURBATIONS, perturb_text
from calipers.tasks._task import LoadContext
from calipers.types import ModelRequest

QUESTION = (
    "Natalia sold clips to 48 of her friends in April. Then she sold half as many "
    "clips in May. How many clips did Natalia sell altogether in April and May?"
)


def test_perturbations_are_reproducible_and_never_touch_numbers() -> None:
    for kind in PERTURBATIONS:
        a = perturb_text(kind, QUESTION, seed=1, item_id="q1", others=["What is 2+2?"])
        assert a == perturb_text(kind, QUESTION, seed=1, item_id="q1", others=["What is 2+2?"])
        if kind != "missing_context":  # which drops the sentence holding the number
            assert re.findall(r"\d+", a)[0] == "48"
    typos = [perturb_text("typos", QUESTION, seed=s, item_id="q1") for s in range(30)]
    assert all(t != QUESTION and re.findall(r"\d+", t) == ["48"] for t in typos)
    assert len(set(typos)) > 10  # the seed matters


def test_each_perturbation_does_what_it_says() -> None:
    p = {
        k: perturb_text(k, QUESTION, seed=0, item_id="x", others=["What is 2+2?"])
        for k in PERTURBATIONS
    }
    assert p["case"] == QUESTION.lower()
    assert p["missing_context"] == QUESTION.split(". ", 1)[1]
    assert p["two_questions"] == QUESTION + "\nAlso, unrelated: What is 2+2?"
    assert p["distractor"].endswith(" " + QUESTION) and len(p["distractor"]) > len(QUESTION)
    assert p["whitespace"] != QUESTION and p["whitespace"].startswith("\n ")
    assert (
        " ".join(p["whitespace"].replace(" ?", "?").replace(" .", ".").replace(" ,", ",").split())
        == QUESTION
    )
    # two sentences only: nothing to drop
    assert perturb_text("missing_context", "One. Two?", seed=0, item_id="x") == "One. Two?"


ITEMS = [
    {
        "id": f"q{i}",
        "question": f"Question number {i} asks something?",
        "options": [f"right {i}" if j == i % 4 else f"wrong {i}.{j}" for j in range(4)],
        "answer": i % 4,
    }
    for i in range(16)
]
FRESH = [
    {
        "id": f"f{i}",
        "question": f"Fresh item {i} asks something?",
        "options": [f"right {i}" if j == (i + 1) % 4 else f"wrong {i}.{j}" for j in range(4)],
        "answer": (i + 1) % 4,
    }
    for i in range(16)
]


def _task(tmp_path: Path, name: str, items: list[dict[str, object]]) -> Path:
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(
        f"name: {name}\nkind: generate\ndata: {name}.jsonl\ntarget_type: index\n"
        "fields: {input: question, target: answer, choices: options, id: id}\n"
        'prompt:\n  template: "{input}\\n{choices}\\nAnswer:"\n'
        "scorers: [choice_letter]\n",
        encoding="utf-8",
    )
    return spec


def knows(request: ModelRequest) -> str:
    text = request.prompt or ""
    m = re.search(r"([A-D])\. right", text)
    return m.group(1) if m else "Z"


def test_none_of_the_other_keeps_the_answer_and_replaces_one_wrong_option(tmp_path: Path) -> None:
    spec = _task(tmp_path, "mc", ITEMS)
    task = apply_variant(resolve_task(str(spec))[0], Variant(none_of_the_other=True))
    for s in task.load(LoadContext(data_dir=tmp_path)):
        original = ITEMS[int(s.id[1:])]
        options = original["options"]
        assert s.choices is not None and isinstance(options, list)
        assert s.target == original["answer"] and s.target_text.startswith("right")
        changed = [i for i, (a, b) in enumerate(zip(s.choices, options, strict=True)) if a != b]
        assert len(changed) == 1 and s.choices[changed[0]] == "None of the other choices"
        assert changed[0] != s.target


def lowercase_breaks_it(request: ModelRequest) -> str:
    text = request.prompt or ""
    return "Z" if "question number" in text else knows(request)


def test_robustness_gap_is_the_paired_drop_and_only_where_the_model_breaks(tmp_path: Path) -> None:
    spec = _task(tmp_path, "mc", ITEMS)
    model = FakeModel(lowercase_breaks_it, name="case-sensitive")
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        plan = plan_study(
            RunConfig(model="fake:x", tasks=(str(spec),), chat_template=False),
            ["robustness"],
            provider=model,
        )
        run_study(plan, store, provider=model)
        report = robustness(load_study(store, plan.study), "mc")
    gaps = {r.perturbation: r.gap.value for r in report.rows}
    assert report.clean.score.value == 1.0
    assert gaps["case"] == -1.0  # all 16 items lost, paired
    assert all(v == 0.0 for k, v in gaps.items() if k != "case")
    (sig,) = [r for r in report.rows if r.significant]
    assert sig.perturbation == "case"
    # 16 discordant pairs of 16: exact McNemar p = 2 * 0.5^16, Holm over the perturbations
    n_tests = len(report.rows)
    assert sig.p_value == pytest.approx(2 * 0.5**16)
    assert sig.p_adjusted == pytest.approx(min(1.0, n_tests * 2 * 0.5**16))
    assert "missing_context" not in gaps  # single-sentence questions: skipped, not run
    assert "missing context" in dict(plan.skipped)


def test_perturbation_gap_finds_a_memoriser_and_clears_an_honest_model(tmp_path: Path) -> None:
    bench, fresh = _task(tmp_path, "bench", ITEMS), _task(tmp_path, "fresh", FRESH)
    ctx = LoadContext(data_dir=tmp_path)
    task = resolve_task(str(bench))[0]
    remembered = {task.prompt.plain(s, [], None): "ABCD"[s.target_index] for s in task.load(ctx)}

    def memoriser(request: ModelRequest) -> str:
        # knows the benchmark items by heart in their original form; otherwise answers like
        # the honest model, which finds the right option wherever it is
        return remembered.get(request.prompt or "") or knows(request)

    def parrot(request: ModelRequest) -> str:
        return remembered.get(request.prompt or "", "A")

    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:

        def study(spec: Path, model: FakeModel) -> list[StoredRun]:
            plan = plan_study(
                RunConfig(model="fake:x", tasks=(str(spec),), chat_template=False),
                ["perturbation_gap"],
                provider=model,
            )
            run_study(plan, store, provider=model)
            return load_study(store, plan.study)

        honest = perturbation_gap(
            study(bench, FakeModel(memoriser, name="m")),
            study(fresh, FakeModel(memoriser, name="m")),
        )
        caught = perturbation_gap(
            study(bench, FakeModel(parrot, name="p")), study(fresh, FakeModel(knows, name="k"))
        )
    assert [r.benchmark_gap.value for r in honest.rows] == [0.0, 0.0]
    assert all("no detectable excess drop" in r.verdict for r in honest.rows)
    # the parrot answers "A" off the original form: right where the right option sits at A
    bench_items = resolve_task(str(bench))[0]
    for row, variant in zip(
        caught.rows, (Variant(permute_seed=1), Variant(none_of_the_other=True)), strict=True
    ):
        shown = apply_variant(bench_items, variant).load(ctx)
        expected = sum(s.target == 0 for s in shown) / len(shown) - 1.0
        assert row.benchmark_gap.value == pytest.approx(expected)
        assert row.control_gap is not None and row.control_gap.value == 0.0
        assert row.excess_drop is not None and row.excess_drop.high < 0
        assert "evidence of memorised surface form" in row.verdict


def test_a_memoriser_is_flagged_on_the_leaderboard(tmp_path: Path) -> None:
    from calipers.analysis import load_runs
    from calipers.analysis._leaderboard import leaderboard
    from calipers.contamination._flags import contamination_flags

    bench, fresh = _task(tmp_path, "bench", ITEMS), _task(tmp_path, "fresh", FRESH)
    task = resolve_task(str(bench))[0]
    remembered = {
        task.prompt.plain(s, [], None): "ABCD"[s.target_index]
        for s in task.load(LoadContext(data_dir=tmp_path))
    }
    parrot = FakeModel(lambda r: remembered.get(r.prompt or "", "A"), name="parrot")
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        for spec, sid in ((bench, "gap-1"), (fresh, "gap-1-control")):
            plan = plan_study(
                RunConfig(model="fake:parrot", tasks=(str(spec),), chat_template=False),
                ["perturbation_gap"],
                provider=parrot,
                study=sid,
            )
            run_study(plan, store, provider=parrot)
        flags = contamination_flags(store)
        boards = leaderboard(load_runs(store, [r.id for r in store.list_runs()]), flags=flags)
    ((key, text),) = flags.items()
    assert key[1] == "bench" and "lose" in text and "gap-1" in text
    board = next(b for b in boards if b.task == "bench")
    assert [e.flags for e in board.entries] == [[text]]
