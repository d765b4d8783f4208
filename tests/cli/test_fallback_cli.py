"""``calipers run`` on a model without log-likelihoods (an OpenAI-compatible server): the
default suite runs, one line says which task fell back, and a server that is not there is
one error naming its URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from tests.models.conftest import free_port, llama_server, smollm2_path  # noqa: F401

NOTE = (
    "Note: dyn_dates_mc runs its generate formulation instead of cloze, since the fake "
    "provider cannot compute log-likelihoods (its scores compare only with runs of that "
    "formulation)."
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_default_suite_runs_and_says_which_task_fell_back() -> None:
    code, out, err = invoke("run", "-m", "fake:echo,loglik=off", "-n", "2", "--no-report", "--json")
    assert code == 0, err
    data = json.loads(out)  # the note is on stderr, not in the JSON
    assert set(data["tasks"]) == {
        "dyn_word_problems",
        "dyn_arithmetic",
        "dyn_dates",
        "dyn_dates_mc",
    }
    assert all(t["n_samples"] == 2 and t["n_errors"] == 0 for t in data["tasks"].values())
    assert [line for line in err.splitlines() if "instead of" in line] == [NOTE]
    code, out, _ = invoke("show", data["run_id"])
    assert code == 0 and "generate (fallback: generate formulation instead of cloze" in " ".join(
        out.split()
    )


def test_an_unreachable_server_is_one_error_naming_its_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    code, _, err = invoke("run", "-m", "openai:my-model", "--base-url", url, "-n", "2")
    assert code == 2, err
    flat = " ".join(err.split())
    assert f"Error: Cannot reach {url}" in flat and "Is the server running?" in flat
    assert "log-likelihood" not in flat and "Traceback" not in flat
    code, out, _ = invoke("runs", "--json")
    assert code == 0 and json.loads(out) == []  # refused before a run was stored


@pytest.mark.slow
def test_default_suite_on_a_real_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:  # noqa: F811
    """``calipers run -m openai:... --base-url ...`` as README shows it, on the default suite."""
    env = {**os.environ, "CALIPERS_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "calipers",
            "run",
            "-m",
            "openai:smollm2",
            "--base-url",
            llama_server,
            "-n",
            "2",
            "--json",
            "--no-report",
            "--concurrency",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    tasks = data["tasks"]
    assert set(tasks) == {"dyn_word_problems", "dyn_arithmetic", "dyn_dates", "dyn_dates_mc"}
    assert all(t["n_samples"] == 2 and t["n_errors"] == 0 for t in tasks.values()), tasks
    assert all(t["output_tokens"] for t in tasks.values())  # the server really answered
    assert data["model"]["provider"] == "openai" and data["model"]["base_url"] == llama_server
    assert (
        "dyn_dates_mc runs its generate formulation instead of cloze, since the openai "
        "provider cannot render the model's chat template" in " ".join(proc.stderr.split())
    )
