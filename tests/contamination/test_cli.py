"""calipers contamination: the CLI builds an index, finds planted items, skips honestly, and
runs the perturbation gap against its control."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli
from calipers.tasks import resolve_task
from calipers.tasks._task import LoadContext

ITEMS = [
    {
        "id": f"q{i}",
        "question": f"In the year {1900 + i} the committee of village number "
        f"{i} voted on a long and unusual proposal about bridges, roads and {i} wells?",
        "options": [f"option {i} {j}" for j in range(4)],
        "answer": i % 4,
    }
    for i in range(10)
]


def _task(tmp_path: Path) -> Path:
    data = tmp_path / "mc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ITEMS), encoding="utf-8")
    spec = tmp_path / "mc.yaml"
    spec.write_text(
        "name: mc\nkind: generate\ndata: mc.jsonl\ntarget_type: index\n"
        "fields: {input: question, target: answer, choices: options, id: id}\n"
        'prompt:\n  template: "{input}\\n{choices}\\nAnswer:"\n'
        "scorers: [choice_letter]\n",
        encoding="utf-8",
    )
    return spec


def test_index_then_ngram_finds_the_planted_items(tmp_path: Path) -> None:
    spec = _task(tmp_path)
    task = resolve_task(str(spec))[0]
    planted = [s for s in task.load(LoadContext(data_dir=tmp_path)) if s.id in ("q2", "q7")]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(
        "Filler text about nothing in particular. " * 50
        + " ".join(s.input for s in planted)
        + " more filler " * 20,
        encoding="utf-8",
    )
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "contamination",
            "index",
            str(corpus),
            "--out",
            str(tmp_path / "idx"),
            "--memory-mb",
            "4",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        cli, ["contamination", "ngram", "-t", str(spec), "--index", str(tmp_path / "idx"), "--json"]
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    flagged = sorted(i["id"] for i in report["items"] if i["status"] == "overlapping")
    assert flagged == ["q2", "q7"]


def test_ngram_without_a_corpus_is_skipped_not_zero(tmp_path: Path) -> None:
    spec = _task(tmp_path)
    res = CliRunner().invoke(cli, ["contamination", "ngram", "-t", str(spec), "--json"])
    report = json.loads(res.output)
    assert report["status"] == "skipped" and "no training corpus" in report["reason"]


def test_perturbation_gap_cli_runs_benchmark_and_control(tmp_path: Path) -> None:
    spec = _task(tmp_path)
    res = CliRunner().invoke(
        cli,
        [
            "--store",
            f"sqlite:///{tmp_path / 's.db'}",
            "contamination",
            "perturbation",
            "-m",
            "fake:const=A",
            "-t",
            str(spec),
            "--control",
            str(spec),
            "-n",
            "10",
            "--no-chat-template",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[res.output.index("{") :])
    assert [r["perturbation"] for r in report["rows"]] == [
        "permute_seed=1",
        "none_of_the_other=True",
    ]
    # the same task as its own control, the same fake model: the excess drop is exactly 0
    assert all(r["excess_drop"]["value"] == 0.0 for r in report["rows"])


def test_probes_cli_runs_all_three_with_a_reference(tmp_path: Path) -> None:
    spec = _task(tmp_path)
    res = CliRunner().invoke(
        cli,
        [
            "contamination",
            "probes",
            "-m",
            "fake:echo",
            "-t",
            str(spec),
            "--reference",
            str(spec),
            "-n",
            "6",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    results = json.loads(res.output)
    assert [r["probe"] for r in results] == ["min-k%++", "completion", "ts-guessing"]
    # the benchmark as its own reference: the excess over the reference is exactly zero
    assert [r["excess"]["value"] for r in results] == [0.0, 0.0, 0.0]


def test_probe_names_are_the_ones_help_shows(tmp_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["contamination", "probes", "--help"]).output
    assert "[min-k%++|completion|ts-guessing]" in shown
    spec = _task(tmp_path)
    base = [
        "contamination",
        "probes",
        "-m",
        "fake:echo",
        "-t",
        str(spec),
        "--reference",
        "none",
        "-n",
        "4",
        "--json",
    ]
    for spelling, name in [
        ("min-k%++", "min-k%++"),
        ("min_k_pp", "min-k%++"),
        ("ts-guessing", "ts-guessing"),
        ("TS_Guessing", "ts-guessing"),
    ]:
        res = runner.invoke(cli, [*base, "--probe", spelling])
        assert res.exit_code == 0, res.output
        assert [r["probe"] for r in json.loads(res.stdout)] == [name]
    bad = runner.invoke(cli, [*base, "--probe", "min-k"])
    assert bad.exit_code == 2 and "Unknown probe 'min-k'" in bad.output
    assert "min-k%++" in bad.output
    from calipers.cli._contamination import PROBE_NAMES  # the CLI's copy, kept without
    from calipers.contamination import PROBES  # importing the probes for --help

    assert PROBE_NAMES == PROBES
