"""Commands load lazily: ``calipers --help`` lists every command without importing them, and
each command imports only what it needs (checked by module, never by timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.cli._app import COMMANDS

HEAVY = (
    "numpy",
    "scipy",
    "statsmodels",
    "pandas",
    "sqlalchemy",
    "sklearn",
    "llama_cpp",
    "jinja2",
    "fastapi",
    "httpx",
)

_PROBE = """
import json, sys
from calipers.cli import cli
try:
    cli(sys.argv[1:], prog_name="calipers")
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def _modules_after(*args: str, cwd: Path) -> set[str]:
    """Top-level modules imported by ``calipers ARGS`` in a fresh interpreter."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_help_lists_every_command_as_the_commands_themselves_describe_them() -> None:
    lazy = CliRunner().invoke(cli, ["--help"]).output
    ctx = click.Context(cli)
    for name in COMMANDS:  # load every command: the listing must not change
        assert cli.get_command(ctx, name) is not None, name
    loaded = CliRunner().invoke(cli, ["--help"]).output
    assert lazy == loaded
    assert set(cli.commands) == set(COMMANDS)  # no command missing from the table


def test_commands_mapping_loads_on_lookup() -> None:
    assert cli.commands["gate"].name == "gate"
    assert "nope" not in COMMANDS and cli.get_command(click.Context(cli), "nope") is None


def test_help_imports_none_of_the_heavy_libraries(tmp_path: Path) -> None:
    assert not _modules_after("--help", cwd=tmp_path) & set(HEAVY)


@pytest.mark.parametrize("command", ["run", "gate", "sensitivity", "robustness"])
def test_help_of_a_command_that_starts_runs_imports_none_of_the_heavy_libraries(
    command: str, tmp_path: Path
) -> None:
    # their options come from RunConfig's fields: that must not load the runner's machinery
    assert not _modules_after(command, "--help", cwd=tmp_path) & set(HEAVY)


def test_show_imports_no_statistics_or_model_libraries(tmp_path: Path) -> None:
    home = tmp_path / "calipers-home"
    env_home = {"CALIPERS_HOME": str(home)}
    runner = CliRunner(env=env_home)
    made = runner.invoke(
        cli, ["run", "-m", "fake:echo", "-t", "dyn_arithmetic", "-n", "3", "--no-report"]
    )
    assert made.exit_code == 0, made.output
    os.environ["CALIPERS_HOME"] = str(home)  # the autouse fixture restores it
    modules = _modules_after("show", "latest", cwd=tmp_path)
    assert "sqlalchemy" in modules  # it did read the store
    assert not modules & {"scipy", "statsmodels", "pandas", "sklearn", "llama_cpp", "fastapi"}
