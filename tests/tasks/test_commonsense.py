"""ARC, PIQA, HellaSwag and WinoGrande read from their original files (../shared/data or
$CALIPERS_DATA), checked item by item against the raw files read here independently."""

from __future__ import annotations

import bz2
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import DataError
from calipers.tasks import LoadContext, Task, get_task
from calipers.tasks.benchmarks import commonsense, winogrande
from calipers.types import Sample
from tests._data import DATA, needs_data

pytestmark = needs_data("arc", "piqa", "hellaswag", "winogrande")
CTX = LoadContext(data_dir=DATA)
COUNTS = {
    "arc_easy": 2376,
    "arc_challenge": 1172,
    "piqa": 1838,
    "hellaswag": 10042,
    "winogrande": 1267,
}
_LOADED: dict[str, list[Sample]] = {}


@pytest.fixture(autouse=True)
def _registered() -> None:
    commonsense.register()
    winogrande.register()


def task(name: str) -> Task:
    commonsense.register()
    winogrande.register()
    return get_task(name)


def items(name: str) -> list[Sample]:
    if name not in _LOADED:
        _LOADED[name] = list(task(name).load(CTX))
    return _LOADED[name]


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def by_id(name: str, sid: str) -> Sample:
    return next(s for s in items(name) if s.id == sid)


# ---- every task -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_counts_ids_targets(name: str) -> None:
    samples = items(name)
    assert len(samples) == COUNTS[name]
    assert len({s.id for s in samples}) == len(samples)
    for s in samples:
        assert s.choices and 2 <= len(s.choices) <= 5
        assert isinstance(s.target, int) and 0 <= s.target < len(s.choices)


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_task_card(name: str) -> None:
    t = task(name)
    wino = name == "winogrande"  # version 2: partial evaluation by default, acc only
    assert (t.name, t.kind, t.version, t.metrics) == (
        name,
        "multiple_choice",
        "2" if wino else "1",
        ["acc"] if wino else ["acc", "acc_norm"],
    )
    assert t.default_few_shot == 0 and t.default_n is None
    assert t.formulation == ("partial" if wino else None)
    assert "arXiv:" in t.source and t.license


# ---- ARC ------------------------------------------------------------------------------------


def test_arc_first_item_literally() -> None:
    raw = jsonl(DATA / "arc/ARC-Easy/ARC-Easy-Test.jsonl")[0]
    s = items("arc_easy")[0]
    assert s.id == raw["id"] == "Mercury_417466"
    assert s.input == (
        "Which statement best explains why photosynthesis is the foundation of most food webs?"
    )
    assert s.choices == (
        "Sunlight is the source of energy for nearly all ecosystems.",
        "Most ecosystems are found on land instead of in water.",
        "Carbon dioxide is more available than other gases.",
        "The producers in all ecosystems are plants.",
    )
    assert s.target == 0 and raw["answerKey"] == "A" and s.category == "Mercury"
    t = task("arc_easy")
    assert t.prompt.plain(s, [], None) == f"Question: {s.input}\nAnswer:"
    assert t.prompt.continuations(s) == tuple(" " + c for c in s.choices)


def test_arc_numeric_labels_and_three_or_five_options() -> None:
    raw = {r["id"]: r for r in jsonl(DATA / "arc/ARC-Challenge/ARC-Challenge-Test.jsonl")}
    s = by_id("arc_challenge", "NYSEDREGENTS_2012_8_42")  # labels "1".."3", answer "2"
    r = raw[s.id]
    assert [c["label"] for c in r["question"]["choices"]] == ["1", "2", "3"]
    assert r["answerKey"] == "2" and s.target == 1 and len(s.choices or ()) == 3
    assert s.choices == tuple(c["text"] for c in r["question"]["choices"])
    five = [x for x in items("arc_challenge") if len(x.choices or ()) == 5]
    assert len(five) == 3
    for x in five:
        labels = [c["label"] for c in raw[x.id]["question"]["choices"]]
        assert labels[x.target_index] == raw[x.id]["answerKey"]


def test_arc_targets_match_answer_keys() -> None:
    for sub, name in (("Easy", "arc_easy"), ("Challenge", "arc_challenge")):
        raw = jsonl(DATA / f"arc/ARC-{sub}/ARC-{sub}-Test.jsonl")
        for r, s in zip(raw, items(name), strict=True):
            labels = [c["label"] for c in r["question"]["choices"]]
            assert s.id == r["id"] and labels[s.target_index] == r["answerKey"]


# ---- PIQA -----------------------------------------------------------------------------------


def test_piqa_items_and_labels_match_the_files() -> None:
    raw = jsonl(DATA / "piqa/valid.jsonl")
    labels = (DATA / "piqa/valid-labels.lst").read_text().split()
    samples = items("piqa")
    for i in (0, 1, 917, 1837):
        s = samples[i]
        assert s.id == f"valid-{i}" and s.input == raw[i]["goal"]
        assert s.choices == (raw[i]["sol1"], raw[i]["sol2"]) and s.target == int(labels[i])
    s = samples[0]
    assert s.input == "How do I ready a guinea pig cage for it's new occupants?" and s.target == 0
    assert task("piqa").prompt.plain(s, [], None) == f"Question: {s.input}\nAnswer:"


# ---- HellaSwag ------------------------------------------------------------------------------


def test_hellaswag_item_literally() -> None:
    lines = (
        bz2.decompress((DATA / "hellaswag/hellaswag_val_full.txt.bz2").read_bytes())
        .decode()
        .split("\n")
    )
    assert lines[6:12] == [
        "Clean and jerk: A lady walks to a barbell. She bends down and grabs the pole. the lady",
        "3",
        "swings and lands in her arms.",
        "pulls the barbell forward.",
        "pulls a rope attached to the barbell.",
        "stands and lifts the weight over her head.",
    ]
    s = items("hellaswag")[1]
    assert s.id == "val-1" and s.category == "Clean and jerk" and s.target == 3
    # ctx_b ("the lady") capitalized, as lighteval's ctx_b.capitalize() does
    assert s.input == (
        "Clean and jerk: A lady walks to a barbell. She bends down and grabs the pole. The lady"
    )
    assert s.choices == tuple(lines[8:12])
    t = task("hellaswag")
    assert t.prompt.plain(s, [], None) == s.input + " "
    assert t.prompt.continuations(s)[3] == " stands and lifts the weight over her head."


def test_hellaswag_targets_and_categories() -> None:
    lines = (
        bz2.decompress((DATA / "hellaswag/hellaswag_val_full.txt.bz2").read_bytes())
        .decode()
        .split("\n")
    )
    samples = items("hellaswag")
    assert [s.target for s in samples] == [int(lines[6 * i + 1]) for i in range(len(samples))]
    assert len({s.category for s in samples}) == 192
    complete = samples[len(samples) - 1]  # WikiHow item ending in a full sentence: unchanged
    assert complete.input == lines[-7]


def test_capitalize_only_an_unfinished_lowercase_sentence() -> None:
    cap = commonsense._capitalize_last_fragment
    assert cap("A man sits. he") == "A man sits. He"
    assert cap("A man sits. He stands.") == "A man sits. He stands."
    assert cap("a man sits on a roof") == "a man sits on a roof"


# ---- WinoGrande -----------------------------------------------------------------------------


def test_winogrande_item_literally() -> None:
    raw = jsonl(DATA / "winogrande/dev.jsonl")
    labels = (DATA / "winogrande/dev-labels.lst").read_text().split()
    full = list(get_task("winogrande", "full").load(CTX))  # version 1's formulation
    s = full[0]
    assert raw[0]["sentence"] == (
        "Sarah was a much better surgeon than Maria so _ always got the easier cases."
    )
    assert s.id == "3FCO4VKOZ4BJQ6IFC0VAIBK4KTWE7U-2" and labels[0] == "2" and s.target == 1
    assert s.input == "Sarah was a much better surgeon than Maria so"
    assert s.choices == ("Sarah always got the easier cases.", "Maria always got the easier cases.")
    assert s.cluster == full[1].cluster == "3FCO4VKOZ4BJQ6IFC0VAIBK4KTWE7U"
    t = get_task("winogrande", "full")
    filled = raw[0]["sentence"].replace("_", "Maria")
    assert t.prompt.plain(s, [], None) + t.prompt.continuations(s)[1] == filled
    assert [s.target_index + 1 for s in items("winogrande")] == [int(x) for x in labels]


# ---- missing or broken data -----------------------------------------------------------------


def test_no_data_dir_names_the_benchmark() -> None:
    with pytest.raises(DataError, match="arc: no local data directory") as e:
        task("arc_easy").load(LoadContext())
    assert "--data-dir" in str(e.value)


@pytest.mark.parametrize(
    ("name", "folder", "copy", "missing"),
    [
        ("piqa", "piqa", ["valid.jsonl"], "valid-labels.lst"),
        ("winogrande", "winogrande", ["dev-labels.lst"], "dev.jsonl"),
        ("hellaswag", "hellaswag", [], "hellaswag_val_full.txt.bz2"),
        ("arc_challenge", "arc", [], "ARC-Challenge/ARC-Challenge-Test.jsonl"),
    ],
)
def test_missing_file_names_benchmark_and_file(
    tmp_path: Path, name: str, folder: str, copy: list[str], missing: str
) -> None:
    (tmp_path / folder).mkdir()
    for f in copy:
        shutil.copy(DATA / folder / f, tmp_path / folder / f)
    with pytest.raises(DataError, match=f"{folder}: expected the file {missing}"):
        task(name).load(LoadContext(data_dir=tmp_path))


def test_missing_folder_and_misaligned_labels(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="winogrande: expected the folder"):
        task("winogrande").load(LoadContext(data_dir=tmp_path))
    (tmp_path / "piqa").mkdir()
    shutil.copy(DATA / "piqa/valid.jsonl", tmp_path / "piqa/valid.jsonl")
    (tmp_path / "piqa/valid-labels.lst").write_text("0\n1\n")
    with pytest.raises(DataError, match="2 labels for 1838 items"):
        task("piqa").load(LoadContext(data_dir=tmp_path))


# ---- through the runner ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_cli_run_with_fake_model(name: str) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-m",
            "fake:echo",
            "-t",
            name,
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
    summary = json.loads(result.stdout)["tasks"][name]
    assert summary["n_samples"] == 5 and summary["n_errors"] == 0
    assert set(summary["metrics"]) == ({"acc"} if name == "winogrande" else {"acc", "acc_norm"})
    assert all(m["n"] == 5 for m in summary["metrics"].values())
