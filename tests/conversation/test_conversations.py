"""Conversation task files: the format and its errors (file:line), the spec's
``conversation:`` section, checks per turn, and own against golden history on a fake whose
first mistake propagates."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from calipers.analysis import conversation_turns
from calipers.errors import DataError, TaskSpecError
from calipers.models import FakeModel
from calipers.runner import RunConfig
from calipers.store import Store
from calipers.tasks import resolve_task
from calipers.tasks.conversation import read_conversation_file
from calipers.types import ModelRequest
from tests.conversation._fakes import assistants, last_number, planted, users

N = 40


def _rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        a, b, c = 3 + i, 2 + i % 5, 1 + i % 3
        rows.append(
            {
                "id": f"c{i}",
                "turns": [f"Start at {a} and add {b}.", "Now double it.", f"Now subtract {c}."],
                "golden": [str(a + b), str(2 * (a + b)), str(2 * (a + b) - c)],
                "checks": [
                    {"turn": 1, "number": a + b},
                    {"turn": 2, "number": 2 * (a + b)},
                    {"turn": 3, "number": 2 * (a + b) - c},
                ],
            }
        )
    return rows


def _write(tmp_path: Path, rows: list[Any], spec: str = "conversation: {}\n") -> Path:
    data = tmp_path / "dialogs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "dialogs.yaml"
    path.write_text(f"name: dialogs\ndata: dialogs.jsonl\n{spec}", encoding="utf-8")
    return path


def test_own_history_propagates_an_early_error_and_golden_history_does_not(
    tmp_path: Path,
) -> None:
    rows = _rows(N)
    wrong_first = planted([r["turns"][0] for r in rows], 0.25, "slip")

    def fake(request: ModelRequest) -> str:
        """Adds (off by one on the planted items), then works from its last reply."""
        turns = users(request)
        if len(turns) == 1:
            a, b = map(int, re.findall(r"\d+", turns[0]))
            return f"That makes {a + b + (turns[0] in wrong_first)}."
        prev = last_number(assistants(request)[-1].content)
        assert prev is not None
        if turns[-1] == "Now double it.":
            return f"Doubled: {2 * prev}."
        minus = last_number(turns[-1])
        assert minus is not None
        return f"Now it is {prev - minus}."

    path = _write(tmp_path, rows)
    k = len(wrong_first)
    assert k == 10
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        own, gold = (
            conversation_turns(
                RunConfig(model="fake:slip", tasks=(f"converse:{arm}:{path}",)),
                store,
                provider=FakeModel(fake),
            )
            for arm in ("own", "golden")
        )
    right = (N - k) / N
    assert [e.value for e in own.turns.values()] == [right, right, right]
    assert [e.value for e in gold.turns.values()] == [right, 1.0, 1.0]
    assert own.all_checks.value == right and gold.all_checks.value == right
    assert all(e.n == N and e.method == "wilson" for e in own.turns.values())


def test_the_spec_default_arm_and_the_task_card(tmp_path: Path) -> None:
    path = _write(tmp_path, _rows(2), "conversation: {history: golden}\n")
    (task,) = resolve_task(str(path))
    assert task.kind == "episode" and task.episode_card["history"] == "golden"
    assert [s.spec.name for s in task.scorers] == ["conversation_checks"]
    (own,) = resolve_task(f"converse:own:{path}")
    assert own.episode_card["history"] == "own"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"turns": [], "checks": [{"turn": 1, "contains": "x"}]}, "non-empty list of texts"),
        ({"turns": ["a"], "checks": [{"turn": 2, "contains": "x"}]}, "check 1: 'turn' must be"),
        ({"turns": ["a"], "checks": [{"turn": 1, "contains": "x", "regex": "y"}]}, "exactly one"),
        ({"turns": ["a"], "checks": [{"turn": 1, "regex": "("}]}, "does not compile"),
        ({"turns": ["a"], "checks": [{"turn": 1, "number": "many"}]}, "must be a number"),
        ({"turns": ["a", "b"], "golden": ["x"], "checks": [{"turn": 1, "equals": "x"}]}, "golden"),
        ({"turns": ["a"], "checks": []}, "non-empty list of checks"),
    ],
)
def test_bad_rows_are_named_by_file_and_line(
    tmp_path: Path, row: dict[str, Any], message: str
) -> None:
    good = _rows(1)[0]
    _write(tmp_path, [good, row])
    with pytest.raises(DataError) as e:
        read_conversation_file(tmp_path / "dialogs.jsonl")
    assert "dialogs.jsonl:2: " in e.value.message and message in e.value.message


def test_duplicate_ids_and_spec_mistakes(tmp_path: Path) -> None:
    r = _rows(1)[0]
    _write(tmp_path, [r, r])
    with pytest.raises(DataError, match=r"dialogs.jsonl:2: duplicate id 'c0' \(first at .*:1\)"):
        read_conversation_file(tmp_path / "dialogs.jsonl")
    path = _write(tmp_path, [r], "conversation: {}\nfields: {input: x}\n")
    with pytest.raises(TaskSpecError, match="takes no `fields:`"):
        resolve_task(str(path))
    path = _write(tmp_path, [r], "conversation: {}\nscorers: [exact_match]\n")
    with pytest.raises(TaskSpecError, match="scored by its checks"):
        resolve_task(str(path))
    path = _write(tmp_path, [{k: v for k, v in r.items() if k != "golden"}])
    with pytest.raises(DataError, match="golden history needs golden replies"):
        conversation_turns(
            RunConfig(model="fake:echo", tasks=(f"converse:golden:{path}",)),
            Store.open(f"sqlite:///{tmp_path / 's.db'}"),
        )
