"""HumanEval from the original jsonl.gz: the loader, every canonical solution passing in the
sandbox through a real run, wrong and hostile completions failing, pass@k from epochs."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import secrets
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from calipers.errors import DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.scorers import build_scorer
from calipers.store import Store
from calipers.tasks import LoadContext, get_task
from calipers.tasks.benchmarks import humaneval
from calipers.types import ModelRequest, ModelResponse, Sample, SampleOutput, Score
from tests._data import DATA, needs_data, require

needs_humaneval = needs_data("humaneval/HumanEval.jsonl.gz")


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    humaneval.register()
    humaneval.register()


@pytest.fixture(scope="module")
def problems() -> list[Sample]:
    require("humaneval/HumanEval.jsonl.gz")
    return list(get_task("humaneval").load(LoadContext(data_dir=DATA)))


def score(sample: Sample, text: str, **kw: float) -> Score:
    scorer = build_scorer({"name": "code_tests", "args": kw})
    return asyncio.run(scorer(sample, SampleOutput(response=ModelResponse(text=text))))


def test_card() -> None:
    task = get_task("humaneval")
    assert (task.name, task.version, task.kind, task.metrics) == (
        "humaneval",
        "2",
        "generate",
        ["pass"],
    )
    # openai/human-eval's per-problem time limit, recorded in the scorer spec (methodology)
    assert task.scorers[0].spec.model_dump() == {"name": "code_tests", "args": {"timeout_s": 3.0}}
    assert task.prompt.template == "{input}" and task.default_few_shot == 0
    assert task.params.max_tokens == 384 and task.params.temperature == 0
    assert task.params.stop == ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")
    assert task.license == "MIT" and "openai/human-eval" in task.source


@needs_humaneval
def test_loader_reads_all_164_problems(problems: list[Sample]) -> None:
    assert DATA is not None
    with gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    assert len(problems) == len(rows) == 164  # SOURCES.md
    assert [s.id for s in problems] == [f"HumanEval/{i}" for i in range(164)]
    for s, row in zip(problems, rows, strict=True):
        assert (s.input, s.target) == (row["prompt"], row["canonical_solution"])
        assert s.fields == {"test": row["test"], "entry_point": row["entry_point"]}


@needs_humaneval
def test_every_canonical_solution_passes_through_a_run(problems: list[Sample]) -> None:
    solutions = {s.input: str(s.target) for s in problems}

    def respond(req: ModelRequest) -> str:
        return solutions[req.prompt or ""]

    config = RunConfig(
        model="fake:script", tasks=("humaneval",), chat_template=False, data_dir=str(DATA)
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(respond)))
        records = store.get_samples(result.run_id)
    assert len(records) == 164 and all(r.error is None for r in records)
    failing = [
        (r.sample_id, (r.score_details or {}).get("code_tests"))
        for r in records
        if r.scores != {"pass": 1.0}
    ]
    assert failing == []  # the published reference: canonical solutions pass 100%
    est = result.summary.tasks["humaneval"].metrics["pass"]
    assert (est.value, est.n) == (1.0, 164)


@needs_humaneval
def test_a_wrong_completion_fails(problems: list[Sample]) -> None:
    s = score(problems[0], "    return False\n")
    assert s.values == {"pass": 0.0} and s.explanation == "AssertionError"
    assert s.metadata["returncode"] == 1 and not s.metadata["timed_out"]


@needs_humaneval
def test_a_fenced_full_function_passes(problems: list[Sample]) -> None:
    p = problems[0]
    reply = (
        f"Here is the code:\n```python\nfrom typing import List\n\n\n"
        f"def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
        f"{p.target}```\nIt compares every pair."
    )
    s = score(p, reply)
    assert s.values == {"pass": 1.0} and s.answer is not None
    assert s.answer.startswith("from typing import List")


# Each attack is followed by the correct body, so only a blocked attack makes it fail.
HOSTILE = {
    "fork-bomb": "    import os\n    while True:\n        os.fork()\n",
    "memory-bomb": "    x = bytearray(10 * 1024 ** 3)\n",
    "infinite-loop": "    while True:\n        pass\n",
    "kill-parent": "    import os\n    os.kill(os.getppid(), 9)\n    os.kill({pid}, 9)\n",
    "read-secret": "    import os\n    assert os.environ['CALIPERS_TEST_SECRET'] == 'x'\n",
    "write-outside": "    open('/work/calipers_escape_{tag}', 'w').write('x')\n",
    "socket": "    import socket\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n",
}


@needs_humaneval
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_completions_score_zero(
    name: str,
    problems: list[Sample],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from calipers.sandbox import detect_isolation

    layers = detect_isolation().layers(False)
    if name == "socket" and "netns" not in layers:
        pytest.skip("no network namespace on this machine")
    if name == "write-outside" and "unprivileged-user" not in layers:
        pytest.skip("no unprivileged user on this machine")
    monkeypatch.setenv("CALIPERS_TEST_SECRET", "x")
    tag = secrets.token_hex(6)
    with socket.create_server(("127.0.0.1", 0)) as srv:
        srv.listen()
        attack = HOSTILE[name].format(pid=os.getpid(), tag=tag, port=srv.getsockname()[1])
        s = score(problems[0], attack + str(problems[0].target), timeout_s=3)
    assert s.values == {"pass": 0.0} and s.explanation
    assert not Path(f"/work/calipers_escape_{tag}").exists()
    os.kill(os.getpid(), 0)  # still here
    assert score(problems[0], str(problems[0].target)).values == {"pass": 1.0}


def test_missing_data_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="humaneval: no local data directory"):
        get_task("humaneval").load(LoadContext())
    (tmp_path / "humaneval").mkdir()
    with pytest.raises(DataError, match=r"expected the file HumanEval\.jsonl\.gz") as e:
        get_task("humaneval").load(LoadContext(data_dir=tmp_path))
    assert e.value.hint and "openai/human-eval" in e.value.hint
    path = tmp_path / "humaneval" / "HumanEval.jsonl.gz"
    path.write_bytes(b"not gzip")
    with pytest.raises(DataError, match="not a readable gzip file"):
        get_task("humaneval").load(LoadContext(data_dir=tmp_path))
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"task_id": "HumanEval/0", "prompt": "def f():\n"}) + "\n")
    with pytest.raises(DataError, match=r":1: missing string field\(s\) canonical_solution"):
        get_task("humaneval").load(LoadContext(data_dir=tmp_path))


def _records(passes: dict[str, list[float]]) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(sample_id=sid, epoch=e, scores={"pass": v}, error=None)
        for sid, vs in passes.items()
        for e, v in enumerate(vs)
    ]


def test_pass_at_k_from_several_generations_per_problem() -> None:
    recs = _records({"a": [1, 0] * 5, "b": [0] * 10, "c": [1] * 10})
    recs.append(SimpleNamespace(sample_id="b", epoch=10, scores=None, error="model: boom"))
    out = humaneval.pass_at_k_metrics(recs)
    assert sorted(out) == ["pass@1", "pass@10"]
    assert out["pass@1"].value == pytest.approx((0.5 + 0 + 1) / 3)
    assert out["pass@10"].value == pytest.approx(2 / 3) and out["pass@10"].n == 3
    assert humaneval.pass_at_k_metrics(_records({"a": [1], "b": [0]})) == {}


@needs_humaneval
def test_chat_template_runs_without_the_completion_stops() -> None:
    from calipers.runner import make_plan
    from calipers.tasks.benchmarks.humaneval import STOP

    def params(chat: bool) -> tuple[tuple[str, ...], int]:
        plan = make_plan(
            RunConfig(
                model="fake:echo",
                tasks=("humaneval",),
                limit=1,
                chat_template=chat,
                data_dir=str(DATA),
            ),
            FakeModel(),
        )
        req = plan.tasks[0].samples[0].request
        assert isinstance(req, ModelRequest)
        return req.params.stop, req.params.max_tokens

    # "\ndef" would end a fenced chat reply that repeats the signature after one line
    assert params(chat=False) == (STOP, 384)
    assert params(chat=True) == ((), 512)


# Each returns a wrong answer, then tries to be scored a pass anyway: all passed before the
# harness required evidence that check returned (see tests/sandbox/test_tests.py).
TAMPERING = {
    "module-os-exit": ("    return False\nimport os\nos._exit(0)\n", "early-exit"),
    "module-sys-exit": ("    return False\nimport sys\nsys.exit(0)\n", "early-exit"),
    "atexit-os-exit": (
        "    return False\nimport atexit, os\natexit.register(lambda: os._exit(0))\n",
        "early-exit",
    ),
    "reexec-python-O": (
        "    return False\nimport os, sys\nif sys.flags.optimize == 0:\n"
        "    os.execv(sys.executable, [sys.executable, '-O', *sys.argv])\n",
        "assertions-disabled",
    ),
    "settrace-exit-on-check": (
        "    return False\nimport os, sys\n"
        "def _t(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'check':\n"
        "        os._exit(0)\nsys.settrace(_t)\n",
        "trace-hook",
    ),
    "threading-settrace": (
        "    import time\n    time.sleep(0.5)\n    return False\n"
        "import os, sys, threading, time\n_main = threading.get_ident()\n"
        "def _watch(frame, event, arg):\n"
        "    f = sys._current_frames().get(_main)\n"
        "    while f is not None:\n"
        "        if f.f_code.co_name == 'check':\n"
        "            os._exit(0)\n"
        "        f = f.f_back\n"
        "    return _watch\n"
        "threading.settrace(_watch)\n"
        "def _spin():\n    while True:\n        time.sleep(0.001)\n"
        "threading.Thread(target=_spin, daemon=True).start()\n",
        "thread-hook",
    ),
}


@needs_humaneval
@pytest.mark.parametrize("name", sorted(TAMPERING))
def test_tampering_fails_and_is_flagged(name: str, problems: list[Sample]) -> None:
    attack, kind = TAMPERING[name]
    s = score(problems[0], attack)
    assert s.values == {"pass": 0.0}
    assert kind in s.tampering and s.explanation and s.explanation.startswith("tampering: ")
    assert s.metadata["tests_completed"] is False


@needs_humaneval
def test_legitimate_completions_are_not_flagged(problems: list[Sample]) -> None:
    right, wrong = score(problems[0], str(problems[0].target)), score(problems[0], "    return 1\n")
    assert (right.values, right.tampering, right.metadata["tests_completed"]) == (
        {"pass": 1.0},
        (),
        True,
    )
    assert (wrong.values, wrong.tampering, wrong.explanation) == (
        {"pass": 0.0},
        (),
        "AssertionError",
    )


@needs_humaneval
def test_a_plain_completion_with_a_fence_in_a_comment_runs_as_written(
    problems: list[Sample],
) -> None:
    # correct, and the comment's fence would have been taken for a markdown fence: the
    # code "extracted" from it (the last line alone) fails with a NameError
    body = (
        "    pairs = [(a, b) for i, a in enumerate(numbers) for b in numbers[i + 1:]]\n"
        "    # a chat reply would come wrapped in ```python\n"
        "    return any(abs(a - b) < threshold for a, b in pairs)\n"
    )
    s = score(problems[0], body)
    assert s.values == {"pass": 1.0} and s.answer == body


@needs_humaneval
def test_the_default_time_limit_is_human_evals_3_s(problems: list[Sample]) -> None:
    slow = str(problems[0].target) + "\n\nimport time\ntime.sleep(3.5)  # once: 3.5 s in all\n"
    fails = score(problems[0], slow)
    assert fails.values == {"pass": 0.0} and fails.metadata["timed_out"]
    assert fails.explanation == "timed out after 3 s" and fails.tampering == ()
    assert score(problems[0], slow, timeout_s=8).values == {"pass": 1.0}


@needs_humaneval
def test_a_run_counts_tampering_in_its_summary_and_shows_it(
    problems: list[Sample],
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from calipers.cli import cli
    from calipers.reports import write_report

    cheat = TAMPERING["module-os-exit"][0]
    solutions = {s.input: str(s.target) for s in problems[:3]}
    solutions[problems[1].input] = cheat

    def respond(req: ModelRequest) -> str:
        return solutions[req.prompt or ""]

    config = RunConfig(
        model="fake:script", tasks=("humaneval",), chat_template=False, data_dir=str(DATA), limit=3
    )
    url = str(tmp_path / "store.db")
    with Store.open(url) as store:
        result = asyncio.run(arun(config, store, provider=FakeModel(respond)))
        records = store.get_samples(result.run_id)
        run = store.get_run(result.run_id)
    ts = result.summary.tasks["humaneval"]
    assert (ts.n_tampering, ts.tampering, ts.n_errors) == (1, ("early-exit",), 0)
    assert (ts.metrics["pass"].value, ts.metrics["pass"].n) == (2 / 3, 3)
    flagged = [
        r.sample_id
        for r in records
        if (r.score_details or {}).get("code_tests", {}).get("tampering")
    ]
    assert flagged == [problems[1].id]
    shown = CliRunner().invoke(cli, ["show", result.run_id, "--store", url])
    assert shown.exit_code == 0, shown.output
    assert "tampering humaneval: 1 sample(s)" in " ".join(shown.output.split())
    _html, md = write_report(run, records, tmp_path / "reports")
    assert "**Tampering:** 1 sample tried to pass" in md.read_text(encoding="utf-8")
