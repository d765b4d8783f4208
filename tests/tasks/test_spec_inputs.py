"""Task files whose data gets past a first look: an alias bomb in the spec, NaN and infinite
targets, null values, and a few-shot pool smaller than asked for."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import TaskSpecError
from calipers.tasks import LoadContext
from calipers.tasks._spec import load_task_spec


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def billion_laughs(indent: str) -> str:
    """Nine levels of ten aliases each: 10**9 strings once expanded, 900 characters written."""
    lines = [f"{indent}a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{indent}a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_scorer_arguments_fails_fast_in_bounded_memory(tmp_path: Path) -> None:
    write(tmp_path, "d.jsonl", '{"input": "q", "target": "a"}\n')
    spec = write(
        tmp_path,
        "t.yaml",
        "name: t\ndata: d.jsonl\nscorers:\n  - name: json_schema\n    args:\n"
        "      schema:\n        $defs:\n" + billion_laughs(" " * 10) + "        enum: *a8\n",
    )
    # in a child capped at 2 GiB of address space: the expanded document would need ~8 GB
    child = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        from calipers.errors import TaskSpecError
        from calipers.tasks._spec import load_task_spec
        try:
            load_task_spec({str(spec)!r})
        except TaskSpecError as e:
            print(e.message)
            sys.exit(0)
        sys.exit("loaded")
    """)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.monotonic() - start < 30
    # "lol" counts 4 (3 characters + 1 value), a list 1 + its items: a5 is 4,111,111, and a6
    # on line 14, ten of those, is the first value past 10,000,000
    assert proc.stdout.strip() == (f"{spec}:14: YAML aliases expand it past 10,000,000 characters.")


@pytest.mark.parametrize(
    ("value", "shown"),
    [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"), ("1e999", "inf")],
)
def test_a_target_that_is_not_a_finite_number_is_refused_with_its_line(
    tmp_path: Path, value: str, shown: str
) -> None:
    spec = write(tmp_path, "t.yaml", "name: t\ndata: d.jsonl\nscorers: [exact_match]\n")
    write(
        tmp_path,
        "d.jsonl",
        f'{{"input": "1+1", "target": 2}}\n\n{{"input": "0/0", "target": {value}}}\n',
    )
    with pytest.raises(
        TaskSpecError,
        match=rf"d\.jsonl:3: field 'target' holds {shown}, "
        "not a finite number",
    ):
        load_task_spec(spec)


def test_an_infinite_index_target_is_refused_not_an_internal_error(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        "t.yaml",
        "name: t\ndata: d.json\nkind: multiple_choice\ntarget_type: index\n"
        "fields: {input: q, choices: c, target: a}\nscorers: [loglikelihood_mc]\n",
    )
    write(tmp_path, "d.json", '[{"q": "x", "c": ["a", "b"], "a": Infinity}]')
    with pytest.raises(TaskSpecError, match=r"d\.json:1: field 'a' holds inf"):
        load_task_spec(spec)


def test_a_nan_in_a_csv_choices_list_is_refused(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        "t.yaml",
        "name: t\ndata: d.csv\nkind: multiple_choice\ntarget_type: index\n"
        "fields: {input: q, choices: c, target: a}\nscorers: [loglikelihood_mc]\n",
    )
    write(tmp_path, "d.csv", 'q,c,a\nok,"[""a"", ""b""]",0\nbad,"[""a"", NaN]",0\n')
    with pytest.raises(TaskSpecError, match=r"d\.csv:3: field 'c' holds nan"):
        load_task_spec(spec)


def test_a_null_value_is_named_null_not_missing(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        "t.yaml",
        "name: t\ndata: d.jsonl\nfields: {id: id, input: question,"
        " target: answer}\nscorers: [exact_match]\n",
    )
    write(
        tmp_path,
        "d.jsonl",
        '{"id": "a", "question": "q1", "answer": "x"}\n'
        '{"id": "b", "question": "q2", "answer": null}\n',
    )
    with pytest.raises(TaskSpecError) as info:
        load_task_spec(spec)
    assert (
        info.value.message == f"{tmp_path / 'd.jsonl'}:2: field 'answer' is present but "
        "null (no value)."
    )
    write(tmp_path, "d.jsonl", '{"id": "a", "question": "q1"}\n')
    with pytest.raises(TaskSpecError, match=r"d\.jsonl:1: missing field 'answer'"):
        load_task_spec(spec)


def _shot_task(tmp_path: Path, n_eval: int, shots: list[str]) -> Path:
    write(
        tmp_path,
        "eval.jsonl",
        "".join(json.dumps({"q": f"{i}+{i}", "a": str(2 * i)}) + "\n" for i in range(n_eval)),
    )
    write(tmp_path, "train.jsonl", "".join(json.dumps({"q": q, "a": "?"}) + "\n" for q in shots))
    return write(
        tmp_path,
        "add.yaml",
        "name: add\ndata: eval.jsonl\nfields: {input: q, target: a}\n"
        "few_shot: {data: train.jsonl}\nscorers: [exact_match]\n",
    )


def _run(spec: Path, k: int) -> tuple[int, str]:
    res = CliRunner().invoke(
        cli, ["run", "-m", "fake:echo", "-t", str(spec), "--few-shot", str(k), "--json"]
    )
    return res.exit_code, " ".join(res.stderr.split())


def test_few_shot_shortage_counts_the_pool_the_user_wrote(tmp_path: Path) -> None:
    spec = _shot_task(tmp_path, 3, ["5+5", "6+6"])
    code, err = _run(spec, 5)
    assert code == 2
    assert "Error: Few-shot k=5 but the pool has only 2 examples." in err


def test_a_shot_is_not_the_item_itself_just_because_row_numbers_match(tmp_path: Path) -> None:
    # both files number their rows 0, 1, ...: a row number is not an identity
    spec = _shot_task(tmp_path, 3, ["5+5", "6+6"])
    code, err = _run(spec, 2)
    assert code == 0, err
    [task] = [load_task_spec(spec)]
    assert task.fewshot is not None
    assert [s.id for s in task.fewshot(LoadContext())] == ["fewshot:0", "fewshot:1"]


def test_few_shot_shortage_says_which_example_is_the_item(tmp_path: Path) -> None:
    spec = _shot_task(tmp_path, 3, ["5+5", "1+1"])  # "1+1" is also evaluated item 1
    code, err = _run(spec, 2)
    assert code == 2
    assert (
        "Error: Few-shot k=2 but item '1' can use only 1 example of the pool's 2: 1 is the "
        "item itself (same id or input)."
    ) in err
