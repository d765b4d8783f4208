"""WinoGrande by partial evaluation (lm-eval's ``winogrande``): each option fills the blank and
ends its own context; the rest of the sentence is the one continuation scored under each."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import ConfigError
from calipers.scorers import build_scorer
from calipers.tasks import LoadContext, Task, formulations, get_task
from calipers.tasks.benchmarks import winogrande
from calipers.types import LoglikelihoodResult, Sample, SampleOutput
from tests._data import DATA, needs_data

pytestmark = needs_data("winogrande")
CTX = LoadContext(data_dir=DATA)


@pytest.fixture(autouse=True)
def _registered() -> None:
    winogrande.register()


def task(formulation: str | None = None) -> Task:
    winogrande.register()
    return get_task("winogrande", formulation)


def by_id(items: list[Sample], sid: str) -> Sample:
    return next(s for s in items if s.id == sid)


def requests(t: Task, s: Sample) -> list[tuple[str, str]]:
    """(full context, continuation) per option, as the runner sends them without a chat
    template."""
    head = t.prompt.plain(s, [], None)
    pieces = t.prompt.contexts(s)
    assert pieces is not None
    return [(head + p, c) for p, c in zip(pieces, t.prompt.continuations(s), strict=True)]


def test_default_is_partial_version_2() -> None:
    assert formulations("winogrande") == ("partial", "full")
    t = task()
    assert (t.version, t.formulation, t.metrics) == ("2", "partial", ["acc"])
    assert task("full").metrics == ["acc", "acc_norm"]
    with pytest.raises(ConfigError, match="no formulation 'cloze'"):
        task("cloze")


def test_prompts_of_real_items_by_hand() -> None:
    t = task()
    items = list(t.load(CTX))
    assert len(items) == 1267
    first = by_id(items, "3FCO4VKOZ4BJQ6IFC0VAIBK4KTWE7U-2")
    assert first.choices == ("Sarah", "Maria") and first.target == 1
    assert requests(t, first) == [
        ("Sarah was a much better surgeon than Maria so Sarah", " always got the easier cases."),
        ("Sarah was a much better surgeon than Maria so Maria", " always got the easier cases."),
    ]
    wine = by_id(items, "3WUVMVA7ODHEES6GZOX75ABL4KQZAX-2")
    assert requests(t, wine) == [
        (
            "They were worried the wine would ruin the bed and the blanket, but the blanket",
            " was't ruined.",
        ),
        (
            "They were worried the wine would ruin the bed and the blanket, but the bed",
            " was't ruined.",
        ),
    ]
    assert wine.target == 1
    # stray double spaces around the blank: kept before it (sentence[:idx]), stripped after
    garage = by_id(items, "30QQTY5GMMYF9RE8MYMFERUFZ9CU79-1")
    head = (
        "I started playing drums young.  Sometimes I played in the garage and sometimes "
        "my room, but my parents preferred knowing I was in the  "
    )
    assert requests(t, garage) == [(head + "garage", " ."), (head + "room", " .")]
    assert garage.target == 0


def test_every_item_is_lm_evals_construction() -> None:
    """lm-eval: doc_to_choice = [sentence[:idx] + option], doc_to_target =
    sentence[idx+1:].strip(), scored after target_delimiter " "; gold = answer - 1."""
    raw = [json.loads(x) for x in (DATA / "winogrande/dev.jsonl").read_text().splitlines()]
    labels = (DATA / "winogrande/dev-labels.lst").read_text().split()
    t = task()
    items = list(t.load(CTX))
    for rec, label, s in zip(raw, labels, items, strict=True):
        idx = rec["sentence"].index("_")
        choices = [rec["sentence"][:idx] + o for o in (rec["option1"], rec["option2"])]
        target = " " + rec["sentence"][idx + 1 :].strip()
        assert requests(t, s) == [(c, target) for c in choices], rec["qID"]
        assert s.id == rec["qID"] and s.target == int(label) - 1
        assert s.cluster == rec["qID"].rsplit("-", 1)[0]


def test_chat_prompt_is_the_sentence_head() -> None:
    t = task()
    s = by_id(list(t.load(CTX)), "3FCO4VKOZ4BJQ6IFC0VAIBK4KTWE7U-2")
    (msg,) = t.prompt.chat(s, [], None)
    assert (msg.role, msg.content) == ("user", "Sarah was a much better surgeon than Maria so ")


def test_full_formulation_is_version_1s() -> None:
    t = task("full")
    s = by_id(list(t.load(CTX)), "3FCO4VKOZ4BJQ6IFC0VAIBK4KTWE7U-2")
    assert s.input == "Sarah was a much better surgeon than Maria so"
    assert s.choices == ("Sarah always got the easier cases.", "Maria always got the easier cases.")
    assert t.prompt.contexts(s) is None
    assert t.prompt.plain(s, [], None) + t.prompt.continuations(s)[1] == (
        "Sarah was a much better surgeon than Maria so Maria always got the easier cases."
    )


def _score(logprobs: tuple[float, ...], target: int) -> Any:
    s = Sample(id="x", input="A so ", choices=("A", "B"), target=target, fields={"after": "won."})
    ll = LoglikelihoodResult(logprobs=logprobs, is_greedy=(False, False), n_tokens=(2, 2))
    return asyncio.run(build_scorer("loglikelihood_partial")(s, SampleOutput(loglikelihood=ll)))


def test_the_higher_continuation_loglikelihood_wins() -> None:
    assert _score((-7.5, -3.25), 1).values == {"acc": 1.0}
    assert _score((-7.5, -3.25), 0).values == {"acc": 0.0}
    assert _score((-1.0, -9.0), 0).answer == "0"
    assert _score((-2.0, -2.0), 1).answer == "0"  # a tie goes to the first option


def test_cli_run_with_fake_model() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-m",
            "fake:echo",
            "-t",
            "winogrande",
            "--data-dir",
            str(DATA),
            "-n",
            "5",
            "--json",
            "--no-report",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["tasks"]["winogrande"]
    assert summary["n_samples"] == 5 and summary["n_errors"] == 0
    assert set(summary["metrics"]) == {"acc"} and summary["metrics"]["acc"]["n"] == 5
