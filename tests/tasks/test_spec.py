"""Task spec files: validated data, errors that name the file, line or field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calipers.errors import DataError, TaskSpecError
from calipers.tasks import LoadContext, Task, resolve_task
from calipers.tasks._spec import load_task_spec


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_valid_spec_builds_task(capitals_task: Path) -> None:
    [task] = resolve_task(str(capitals_task))
    samples = task.load(LoadContext())
    assert task.name == "capitals" and task.version == "2" and task.kind == "generate"
    assert [s.id for s in samples][:3] == ["fr", "de", "it"]
    assert samples[0].target == "Paris" and samples[0].category == "europe"


def test_multiple_choice_targets(tmp_path: Path) -> None:
    rows = [{"q": "2+2?", "opts": ["3", "4", "5"], "ans": "B"}]
    write(tmp_path, "mc.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    spec = write(
        tmp_path,
        "mc.yaml",
        "name: mc\ndata: mc.jsonl\nkind: multiple_choice\ntarget_type: letter\n"
        "fields: {input: q, choices: opts, target: ans}\n"
        "scorers: [loglikelihood_mc]\n",
    )
    [s] = load_task_spec(spec).load(LoadContext())
    assert s.choices == ("3", "4", "5") and s.target == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: t\ndata: d.jsonl\nscorers: [exact_match]\nkind: essay\n",
            r"t\.yaml:4: field 'kind'",
        ),
        ("name: t\ndata: d.jsonl\nscorers: []\n", r"t\.yaml:3: field 'scorers'"),
        (
            "name: t\ndata: d.jsonl\nscorers: [exact_match]\nfields:\n  inptu: q\n",
            r"t\.yaml:5: field 'fields.inptu': Extra inputs are not permitted",
        ),
        ("name: t\ndata: d.jsonl\nscorers: [exact_macth]\n", r"Unknown scorer 'exact_macth'"),
        (
            "name: t\ndata: d.jsonl\nscorers: [exact_match]\nprompt: {template: '{x.y}'}\n",
            r"Bad placeholder",
        ),
        ("name: t\n  data: [\n", r"t\.yaml:2: not valid YAML"),
        ("- just\n- a list\n", r"expected a mapping"),
        (
            "name: t\ndata: d.jsonl\nscorers: [loglikelihood_mc]\n",
            r"needs loglikelihood but the task kind is 'generate'",
        ),
    ],
)
def test_spec_errors_locate_the_problem(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path, "d.jsonl", '{"input": "q", "target": "a"}\n')
    spec = write(tmp_path, "t.yaml", text)
    with pytest.raises(TaskSpecError, match=expected):
        load_task_spec(spec)


def test_data_errors_name_file_and_line(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        "t.yaml",
        "name: t\ndata: d.jsonl\nfields: {input: question}\nscorers: [exact_match]\n",
    )
    write(tmp_path, "d.jsonl", '{"question": "a", "target": "1"}\n\n{"quest": "b"}\n')
    with pytest.raises(TaskSpecError, match=r"d\.jsonl:3: missing field 'question'"):
        load_task_spec(spec)
    write(tmp_path, "d.jsonl", '{"question": "a", "target": "1"}\n{oops\n')
    with pytest.raises(TaskSpecError, match=r"d\.jsonl:2: not valid JSON"):
        load_task_spec(spec)
    (tmp_path / "d.jsonl").unlink()
    with pytest.raises(DataError, match="does not exist"):
        load_task_spec(spec)


def test_json_spec_and_csv_data(tmp_path: Path) -> None:
    write(tmp_path, "d.csv", "question,answer\nWhat is 1+1?,2\nWhat is 2+2?,4\n")
    spec = write(
        tmp_path,
        "t.json",
        json.dumps(
            {
                "name": "csvtask",
                "data": "d.csv",
                "fields": {"input": "question", "target": "answer"},
                "scorers": [{"name": "numeric_match"}],
            }
        ),
    )
    samples = load_task_spec(spec).load(LoadContext())
    assert [(s.id, s.input, s.target) for s in samples] == [
        ("0", "What is 1+1?", "2"),
        ("1", "What is 2+2?", "4"),
    ]


def test_spec_cannot_execute_code(tmp_path: Path) -> None:
    write(tmp_path, "d.jsonl", '{"input": "q", "target": "a"}\n')
    spec = write(
        tmp_path,
        "t.yaml",
        "name: !!python/object/apply:os.system ['echo pwned']\n"
        "data: d.jsonl\nscorers: [exact_match]\n",
    )
    with pytest.raises(TaskSpecError, match="not valid YAML"):
        load_task_spec(spec)


def test_yaml_boolean_trap_gets_a_hint(tmp_path: Path) -> None:
    write(tmp_path, "d.jsonl", '{"input": "q", "target": "a"}\n')
    spec = write(tmp_path, "t.yaml", "name: yes\ndata: d.jsonl\nscorers: [exact_match]\n")
    with pytest.raises(TaskSpecError, match="field 'name'") as e:
        load_task_spec(spec)
    assert "quote the value" in str(e.value)


def test_formulations_are_chosen_validated_and_recorded() -> None:
    from calipers.errors import ConfigError
    from calipers.tasks import get_task, register_task
    from calipers.tasks._registry import _TASKS
    from calipers.tasks.dynamic import dates_mc_task

    def factory(formulation: str) -> Task:
        from dataclasses import replace

        return replace(dates_mc_task(), name="formtest", formulation=formulation)

    register_task("formtest", factory, formulations=("cloze", "letter"))
    try:
        assert get_task("formtest").formulation == "cloze"
        assert get_task("formtest", "letter").formulation == "letter"
        with pytest.raises(ConfigError, match="no formulation 'essay'"):
            get_task("formtest", "essay")
        with pytest.raises(ConfigError, match="single formulation"):
            get_task("dyn_arithmetic", "letter")
    finally:
        _TASKS.pop("formtest")
