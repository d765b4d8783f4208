"""calipers' own extensions load through its entry points, named so a lookup imports only what
the name needs: the default run never imports the public benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from calipers._util.registry import Registry
from calipers.contamination import _probes
from calipers.models import _registry as _models
from calipers.scorers import _base as _scorers
from calipers.suites import _import
from calipers.tasks import _perturb
from calipers.tasks import _registry as _tasks

GROUPS: dict[str, tuple[Registry[Any], ...]] = {
    "calipers.models": (_models._providers, _models._aliases),
    "calipers.tasks": (_tasks._tasks, _tasks._suites, _tasks._resolvers),
    "calipers.scorers": (_scorers._scorers,),
    "calipers.perturbations": (_perturb._perturbations,),
    "calipers.probes": (_probes._probes,),
    "calipers.suite_parsers": (_import._parsers,),
}


def own_entry_points(group: str) -> list[str]:
    return sorted(
        ep.name
        for ep in entry_points(group=group)
        if ep.dist is not None and ep.dist.name == "calipers"
    )


@pytest.mark.parametrize("group", GROUPS)
def test_each_entry_point_registers_its_name_and_each_builtin_has_one(group: str) -> None:
    registries = GROUPS[group]
    names = own_entry_points(group)
    assert names, f"pyproject declares no {group} (reinstall: pip install --no-deps -e .)"
    for name in names:
        registries[0]._plugins.load(name)
        assert any(name in r._items for r in registries), f"{group}: {name} not registered"
    registries[0]._plugins.load_all()
    builtin = {
        n for r in registries for n, origin in r._origins.items() if "from calipers)" in origin
    }
    assert builtin <= set(names), f"{group}: no entry point named {sorted(builtin - set(names))}"


def test_builtins_are_what_the_old_closed_lists_held() -> None:
    assert own_entry_points("calipers.perturbations") == sorted(_perturb.PERTURBATIONS)
    assert own_entry_points("calipers.probes") == sorted(_probes.PROBES)
    assert own_entry_points("calipers.suite_parsers") == sorted(_import.FORMATS)
    assert own_entry_points("calipers.models") == [
        "baseline",
        "fake",
        "hf",
        "llamacpp",
        "openai",
        "smollm2",
    ]


_PROBE = """
import json, sys
from calipers.cli import cli
try:
    cli(sys.argv[1:], prog_name="calipers")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("calipers."))))
"""


def test_a_cached_default_run_imports_no_public_benchmark(tmp_path: Path) -> None:
    args = ["run", "-m", "fake:echo", "--limit", "2", "--no-report", "--json"]
    for _ in range(2):  # the second is served from the cache
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ},
            timeout=300,
            check=True,
        )
    *printed, modules_line = done.stdout.strip().splitlines()
    summary = json.loads("\n".join(printed))
    assert sorted(summary["tasks"]) == sorted(_tasks.list_suites()["dynamic"])
    modules = json.loads(modules_line)
    assert "calipers.tasks.dynamic" in modules
    assert not [
        m for m in modules if m.startswith(("calipers.tasks.benchmarks", "calipers.suites"))
    ]
