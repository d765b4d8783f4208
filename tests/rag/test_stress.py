"""``calipers rag stress`` end to end on the fake model: arms are stored runs paired with the
clean arm, and a planted degradation is recovered within its interval."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.analysis import StressGrid, load_study, plan_rag_stress, rag_report, run_study
from calipers.cli import cli
from calipers.models import FakeModel
from calipers.runner import RunConfig
from calipers.scorers import build_scorer
from calipers.store import Store
from calipers.tasks import LoadContext, PromptTemplate, Task, register_task
from calipers.tasks.rag import RAG_INSTRUCTION, RAG_TEMPLATE, Passage, rag_sample
from calipers.types import ModelRequest, Sample

N = 200


def _items(ctx: LoadContext) -> list[Sample]:
    out = [
        rag_sample(
            f"q{i}",
            f"What is the capital of Country{i}?",
            [
                Passage(
                    id=f"p{i}",
                    title=f"Country{i}",
                    text=f"Country{i} has its capital at City{i}, a river port.",
                    gold=True,
                    kind="gold",
                )
            ],
            [f"City{i}"],
        )
        for i in range(N)
    ]
    return out[: ctx.n] if ctx.n else out


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def reader(req: ModelRequest) -> str:
    """Answers from the passage titled with the asked country; with 4 or more other passages
    shown, a planted 20% of questions (by hash) are answered wrong."""
    assert req.messages is not None
    prompt = req.messages[-1].content
    country = re.search(r"capital of (Country\d+)\?", prompt)
    assert country
    blocks = re.findall(r"\[\d+\] ([^\n]*)\n([^\n]*)", prompt)
    answer = next(
        (
            m.group(1)
            for t, text in blocks
            if t == country.group(1)
            if (m := re.search(r"capital at (City\d+)", text))
        ),
        None,
    )
    if answer is None:
        return "I don't know."
    if len(blocks) >= 5 and _unit(country.group(1)) < 0.2:
        return "Atlantis"
    return answer


@pytest.fixture
def rag_task() -> Iterator[str]:
    from calipers.tasks._registry import _TASKS

    def task() -> Task:
        return Task(
            name="rag_countries",
            version="1",
            description="test",
            kind="generate",
            load=_items,
            scorers=(build_scorer("rag_outcome"),),
            prompt=PromptTemplate(instruction=RAG_INSTRUCTION, template=RAG_TEMPLATE),
            tags=("rag",),
        )

    register_task("rag_countries", task)
    yield "rag_countries"
    _TASKS.pop("rag_countries")


def test_a_planted_drop_at_noise_08_is_recovered_within_its_interval(rag_task: str) -> None:
    planted = -sum(_unit(f"Country{i}") < 0.2 for i in range(N)) / N  # realised on these items
    model = FakeModel(reader, name="reader")
    base = RunConfig(model="fake:reader", tasks=(rag_task,))
    plan = plan_rag_stress(
        base,
        ["noise", "gold"],
        StressGrid(noise=(0.4, 0.8), distractors=("random",)),
        provider=model,
    )
    assert [label for label, _ in plan.formulations] == [
        "noise=0.4 random k=5",
        "noise=0.8 random k=5",
        "gold dropped k=5",
    ]
    with Store.open() as store:
        run_study(plan, store, provider=model)
        report = rag_report(load_study(store, plan.study))
    assert report.clean.outcomes["correct"].score.value == 1.0
    by = {r.label: r for r in report.arms}
    low = by["noise=0.4 random k=5"].outcomes["correct"]
    assert low.diff is not None and low.diff.value == 0.0  # 2 distractors: 3 passages shown
    high = by["noise=0.8 random k=5"].outcomes["correct"]
    assert high.diff is not None and high.n_paired == N
    assert high.diff.value == pytest.approx(planted)
    assert high.diff.low <= -0.20 <= high.diff.high
    assert high.p_adjusted is not None and high.p_adjusted < 0.05
    # gold dropped: the reader abstains on every item, which is the right answer there
    drop = by["gold dropped k=5"].outcomes
    assert drop["correct"].score.value == 1.0 and drop["abstained"].score.value == 1.0


def test_cli_dry_run_lists_the_arms_and_json_is_a_report(rag_task: str, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    r = CliRunner().invoke(
        cli,
        [
            "rag",
            "stress",
            "-t",
            rag_task,
            "-m",
            "fake:const=Paris",
            "-n",
            "10",
            "--factors",
            "gold",
            "--dry-run",
            "--json",
            "--store",
            db,
        ],
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["arms"] == ["gold dropped k=5"]
    r = CliRunner().invoke(
        cli,
        [
            "rag",
            "stress",
            "-t",
            rag_task,
            "-m",
            "fake:const=Paris",
            "-n",
            "10",
            "--factors",
            "gold",
            "--json",
            "--store",
            db,
            "--markdown",
            str(tmp_path / "r.md"),
            "--html",
            str(tmp_path / "r.html"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "NaN" not in r.output  # an outcome with no data is left out, never NaN
    report = json.loads(r.output[r.output.index("{") :])
    assert report["clean"]["label"] == "clean" and report["arms"][0]["label"] == "gold dropped k=5"
    # "Paris" never abstains, and the gold arm's right answer is to abstain
    assert report["arms"][0]["outcomes"]["correct"]["score"]["value"] == 0.0
    assert "gold dropped k=5" in (tmp_path / "r.md").read_text()
    assert "<svg" in (tmp_path / "r.html").read_text()
    r = CliRunner().invoke(cli, ["rag", "list", "--json", "--store", db])
    assert json.loads(r.output)[0]["arms"] == 2


def test_a_claim_judge_is_scored_marked_uncalibrated_and_not_lifted_by_an_empty_calibration(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    judge = tmp_path / "judge.json"  # one claim, supported: enough for the scorer's two steps
    judge.write_text(
        json.dumps({"*": json.dumps({"claims": ["a claim"], "verdicts": [
            {"claim": 1, "supported": True}]})})
    )  # fmt: skip
    args = ["rag", "stress", "-t", "dyn_rag", "-m", "fake:const=1802", "-n", "6", "--factors",
            "gold", "--judge", f"fake:script={judge}", "--json", "--store", db]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output[r.output.index("{") :])
    assert report["clean"]["outcomes"]["faithfulness"]["score"]["value"] == 1.0
    assert report["judge"]["calibrated"] is False
    assert any("uncalibrated" in n for n in report["notes"])
    # dyn_rag plants several claims per item; one verdict is not readable: nothing measured
    run = report["clean"]["run_id"]
    r = CliRunner().invoke(cli, ["judge-calibrate", run, "--planted", "--store", db])
    assert r.exit_code != 0 and "nothing was measured or saved" in r.output
    r = CliRunner().invoke(cli, ["rag", "report", report["study"], "--json", "--store", db])
    assert json.loads(r.output)["judge"]["calibrated"] is False


def test_a_bad_judge_spec_fails_before_any_item_runs(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    r = CliRunner().invoke(
        cli,
        ["rag", "stress", "-t", "dyn_rag", "-m", "fake:echo", "-n", "3", "--factors", "gold",
         "--judge", "fake:nosuchmode", "--store", db],
    )  # fmt: skip
    assert r.exit_code != 0 and "Unknown fake model mode" in r.output
    with Store.open(db) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--factors", "fill", "--fill", "1.5"], "fill=1.5"),
        (["--factors", "noise", "--noise", "1.0"], "noise=1.0"),
        (["--factors", "noise", "--distractors", "bad"], "--distractors random,hard"),
        (["--factors", "k", "--k-levels", "0"], "k=0"),
        (["--factors", "noise,bogus"], "Unknown stress factor(s): bogus"),
        (["--factors", "noise", "--noise", "a,b"], "comma-separated numbers"),
    ],
)
def test_bad_levels_are_the_users_error_with_the_option_named(
    args: list[str], message: str, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    base = ["rag", "stress", "-t", "dyn_rag", "-m", "fake:echo", "-n", "3", "--dry-run"]
    r = CliRunner().invoke(cli, [*base, *args, "--store", db])
    assert r.exit_code == 2, r.output  # a usage error, not "a bug in calipers"
    assert message in r.output and "bug" not in r.output


def test_a_study_that_is_not_there_names_both_lists(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        cli, ["rag", "report", "nosuch", "--store", f"sqlite:///{tmp_path}/c.db"]
    )
    assert r.exit_code == 2 and "calipers rag list" in r.output
