"""A third-party plugin package, installed as pip would (a dist-info with entry points on the
path, no network), adds a model provider, a task and a scorer that ``calipers run`` uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from calipers.store import Store

PLUGIN = '''
"""calipers-adder: a provider, a task and a scorer, registered as any plugin registers."""
import re

from calipers.models import ModelProvider, register_provider
from calipers.scorers import scorer
from calipers.tasks import PromptTemplate, Task, register_task
from calipers.types import ModelIdentity, ModelResponse, Sample, Score

PAIRS = [(1, 2), (2, 4), (3, 5), (6, 8), (7, 1)]


class Adder(ModelProvider):
    """Adds the last two numbers of the prompt, and is off by one when both are even."""

    provider_name = "adder"

    def __init__(self, name):
        self.name = name

    def identity(self):
        return ModelIdentity(provider="adder", name=self.name)

    async def generate(self, request):
        text = request.messages[-1].content if request.messages else request.prompt
        a, b = (int(x) for x in re.findall(r"\\d+", text)[-2:])
        return ModelResponse(text=f" {a + b + (a % 2 == 0 and b % 2 == 0)}")


@scorer("adder_exact", metrics=("correct",))
def adder_exact():
    """The stripped reply is the target."""

    async def score(sample, output):
        answer = output.text.strip()
        return Score(values={"correct": float(answer == sample.target)}, answer=answer)

    return score


def sums_task():
    samples = [Sample(id=f"s{a}_{b}", input=f"{a} + {b}", target=str(a + b)) for a, b in PAIRS]
    return Task(
        name="adder_sums",
        version="1",
        description="Sums of two small numbers.",
        kind="generate",
        load=lambda ctx: samples,
        scorers=(adder_exact(),),
        prompt=PromptTemplate(template="What is {input}?"),
    )


def register():
    register_provider("adder", lambda rest, options: Adder(rest), usage="adder:NAME",
                      description="Adds numbers (a test plugin).")
    register_task("adder_sums", sums_task)
'''

ENTRY_POINTS = """\
[calipers.models]
adder = calipers_adder:register

[calipers.tasks]
adder_sums = calipers_adder:register

[calipers.scorers]
adder_exact = calipers_adder
"""


def install_plugin(site: Path, entry_points: str = ENTRY_POINTS) -> None:
    """What ``pip install calipers-adder`` would leave in site-packages."""
    (site / "calipers_adder.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "calipers_adder-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: calipers-adder\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def calipers(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "calipers", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},  # CALIPERS_HOME: the test's own (conftest)
        timeout=300,
    )


def test_a_plugin_package_adds_a_provider_a_task_and_a_scorer(
    tmp_path: Path, calipers_home: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site)
    done = calipers(site, "run", "-m", "adder:v1", "-t", "adder_sums", "--json", "--no-report")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    estimate = printed["tasks"]["adder_sums"]["metrics"]["correct"]
    # 1+2, 3+5 and 7+1 right; 2+4 and 6+8 (both even) off by one
    assert (estimate["value"], estimate["n"]) == (3 / 5, 5)

    with Store.open() as store:
        run = store.get_run(printed["run_id"])
        samples = {s.sample_id: s for s in store.get_samples(run.id)}
    assert run.model == "adder:v1" and run.model_name == "v1"
    assert run.methodology["tasks"]["adder_sums"]["scorers"] == [
        {"name": "adder_exact", "args": {}}
    ]
    assert {k: (s.response, s.scores) for k, s in samples.items()} == {
        "s1_2": (" 3", {"correct": 1.0}),
        "s2_4": (" 7", {"correct": 0.0}),
        "s3_5": (" 8", {"correct": 1.0}),
        "s6_8": (" 15", {"correct": 0.0}),
        "s7_1": (" 8", {"correct": 1.0}),
    }

    listed = calipers(site, "tasks", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "adder_sums" in listed.stdout and "gsm8k" in listed.stdout


def test_a_broken_plugin_is_named_in_the_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site, ENTRY_POINTS.replace("calipers_adder:register", "calipers_gone:register"))
    done = calipers(site, "run", "-m", "adder:v1", "-t", "adder_sums", "--no-report")
    assert done.returncode == 2
    assert "plugin 'adder' (calipers_gone:register, from calipers-adder)" in done.stderr
    assert "No module named 'calipers_gone'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_plugin_task_colliding_with_a_builtin_is_an_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site, ENTRY_POINTS.replace("adder_sums =", "gsm8k ="))
    (site / "calipers_adder.py").write_text(
        PLUGIN.replace('register_task("adder_sums"', 'register_task("gsm8k"'), encoding="utf-8"
    )
    done = calipers(site, "run", "-m", "fake:echo", "-t", "gsm8k", "--no-report")
    assert done.returncode == 2
    assert "The task 'gsm8k' is registered twice" in done.stderr
    assert "calipers-adder" in done.stderr
