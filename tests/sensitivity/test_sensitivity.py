"""Format sensitivity: variants render what they claim, and the study's numbers (CircularEval,
position bias, noise floor, flags) equal what a hand count of the fake models' answers gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.analysis import StoredRun, compare, load_runs
from calipers.analysis._floors import format_floors
from calipers.analysis._leaderboard import leaderboard
from calipers.analysis._sensitivity import sensitivity
from calipers.analysis._study import load_study, plan_study, run_study
from calipers.cli import cli
from calipers.models import FakeModel
from calipers.runner import RunConfig
from calipers.store import Store
from calipers.tasks import Variant, apply_variant, resolve_task
from calipers.tasks._task import LoadContext
from calipers.types import ModelRequest


def always_a(request: ModelRequest) -> str:
    return "A"


def knows(request: ModelRequest) -> str:
    """Reads the label in front of the option that starts with 'right'."""
    text = request.messages[-1].content if request.messages else request.prompt or ""
    m = re.search(r"[(\[]?([A-D1-4])[.):\]]? right", text)
    assert m, text
    return m.group(1) if m.group(1).isalpha() else "ABCD"[int(m.group(1)) - 1]


def test_rotation_moves_options_and_target_together(mc_task: Path) -> None:
    task = resolve_task(str(mc_task))[0]
    ctx = LoadContext(data_dir=mc_task.parent)
    original = {s.id: s for s in task.load(ctx)}
    for r in range(4):
        rotated = apply_variant(task, Variant(rotate=r)).load(ctx)
        for s in rotated:
            o = original[s.id]
            assert s.target_text == o.target_text  # the same right answer...
            assert s.target == (o.target_index + r) % 4  # ...moved r places down
            assert sorted(s.choices or ()) == sorted(o.choices or ())


def test_labels_variant_renders_the_block_in_that_style(mc_task: Path) -> None:
    task = apply_variant(resolve_task(str(mc_task))[0], Variant(labels="(A)", instruction=False))
    s = task.load(LoadContext(data_dir=mc_task.parent))[1]
    text = task.prompt.plain(s, [], None)
    assert text == (
        "Question 1?\n(A) wrong 1.0\n(B) right 1\n(C) wrong 1.2\n(D) wrong 1.3\nAnswer:"
    )


def test_number_labels_refused_where_the_scorer_reads_letters(mc_task: Path) -> None:
    from calipers.errors import ConfigError

    with pytest.raises(ConfigError, match="number labels"):
        apply_variant(resolve_task(str(mc_task))[0], Variant(labels="1."))


def _study(mc_task: Path, store: Store, model: FakeModel, axes: list[str]) -> list[StoredRun]:
    base = RunConfig(
        model="fake:" + model.identity().name, tasks=(str(mc_task),), chat_template=False
    )
    plan = plan_study(base, axes, provider=model, permutations=2)
    ids = run_study(plan, store, provider=model)
    runs = load_study(store, plan.study)
    assert [r.record.id for r in runs] == ids
    return runs


def test_position_biased_model_fails_circular_eval_and_shows_the_bias(
    mc_task: Path, tmp_path: Path
) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        runs = _study(mc_task, store, FakeModel(always_a, name="a-lover"), ["rotations"])
        report = sensitivity(runs, "mc")
    # rotation r puts the right option of item i at (i + r) % 4: A for 3 of the 12 items
    assert [r.score.value for r in report.rows] == [0.25] * 4
    assert report.circular is not None and report.circular.value == 0.0
    assert report.circular.n == 12
    pb = report.position_bias
    assert pb is not None and (pb.n, pb.n_items) == (48, 12)
    assert [c.value for c in pb.chosen] == [1.0, 0.0, 0.0, 0.0]
    assert pb.correct == [0.25] * 4
    assert pb.over_chosen == [0]
    assert report.noise_floor == 0.0


def test_a_model_that_knows_is_right_under_every_format(mc_task: Path, tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        runs = _study(
            mc_task,
            store,
            FakeModel(knows, name="knower"),
            ["labels", "instruction", "rotations", "permutations"],
        )
        report = sensitivity(runs, "mc")
    labels = [r.label for r in report.rows]
    # number labels are refused for a letter-reading scorer, so 3 label styles run
    assert labels == [
        "reference",
        "labels='(A)'",
        "labels='[A]'",
        "labels='A)'",
        "instruction=False",
        "rotate=1",
        "rotate=2",
        "rotate=3",
        "permute_seed=1",
        "permute_seed=2",
    ]
    assert all(r.score.value == 1.0 for r in report.rows)
    assert report.circular is not None and report.circular.value == 1.0
    assert report.noise_floor == 0.0 and report.spread["sd"] == 0.0
    assert report.position_bias is not None and report.position_bias.over_chosen == []


def test_formulations_that_change_nothing_are_skipped_with_the_reason(mc_task: Path) -> None:
    base = RunConfig(model="fake:echo", tasks=(str(mc_task),))
    plan = plan_study(base, ["separators", "fewshot"], provider=FakeModel())
    skipped = dict(plan.skipped)
    # the task is 0-shot already, and has no few-shot pool to draw 5 examples from
    assert "sends exactly the reference's requests" in skipped["0-shot"]
    assert "few-shot pool" in skipped["5-shot, draw 1"]
    # the separator after the instruction line does change the prompt, so it runs
    assert [label for label, _ in plan.formulations] == [
        "options on one line",
        "single newline between examples",
    ]


def question_number(request: ModelRequest) -> int:
    m = re.search(r"Question (\d+)", request.prompt or "")
    assert m, request.prompt
    return int(m.group(1))


def half_right(request: ModelRequest) -> str:
    """Right on even questions; with the instruction line dropped, right on all."""
    text = request.prompt or ""
    i = question_number(request)
    return knows(request) if i % 2 == 0 or "Answer with" not in text else "Z"


def test_noise_floor_flags_close_models_in_compare_and_leaderboard(
    mc_task: Path, tmp_path: Path
) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        runs = _study(mc_task, store, FakeModel(half_right, name="flaky"), ["instruction"])
        report = sensitivity(runs, "mc")
        assert [r.score.value for r in report.rows] == [0.5, 1.0]
        assert report.noise_floor == 0.5
        floors = format_floors(store.list_runs())
        ((key, floor),) = floors.items()
        assert key[1] == "mc" and floor.value == 0.5
        # a second model, 2 items (16.7 points) better than the flaky reference: < 50 points
        other = FakeModel(
            lambda r: knows(r) if question_number(r) % 2 == 0 or question_number(r) < 4 else "Z",
            name="other",
        )
        from calipers.runner import run as run_api

        b = run_api(other, str(mc_task), store=store, chat_template=False)
        result = compare([runs[0].record.id, b.run_id], store=store, floors=floors)
        row = result.rows[0]
        assert row.diff.value == pytest.approx(2 / 12)
        assert row.flags and "format noise floor" in row.flags[0] and "50.0 pts" in row.flags[0]
        boards = leaderboard(load_runs(store, [r.id for r in store.list_runs()]), floors=floors)
    (board,) = boards
    # the study's extra formulation (instruction dropped) is not ranked as another model
    assert {e.model for e in board.entries} == {"flaky", "other"}
    assert all(u["run_id"] != runs[1].record.id for u in board.unranked)
    assert board.entries[1].flags and "format noise floor" in board.entries[1].flags[0]


def test_cli_runs_a_study_and_prints_json(mc_task: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli,
        [
            "--store",
            f"sqlite:///{tmp_path / 'c.db'}",
            "sensitivity",
            "-m",
            "fake:const=A",
            "-t",
            str(mc_task),
            "--axes",
            "rotations",
            "--no-chat-template",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output[res.output.index("{") :])
    assert data["circular"]["value"] == 0.0
    assert [round(r["score"]["value"], 4) for r in data["rows"]] == [0.25] * 4
    res = CliRunner().invoke(
        cli, ["--store", f"sqlite:///{tmp_path / 'c.db'}", "sensitivity", "--list", "--json"]
    )
    assert json.loads(res.output)[0]["runs"] == 4
    res = CliRunner().invoke(
        cli,
        [
            "--store",
            f"sqlite:///{tmp_path / 'c.db'}",
            "sensitivity",
            "-t",
            str(mc_task),
            "--axes",
            "bogus",
        ],
    )
    assert res.exit_code == 2 and "Unknown sensitivity axis 'bogus'" in res.output
