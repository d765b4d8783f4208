"""`calipers run` end to end on the real embedded model and on a real OpenAI-compatible server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli


def run_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["run", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


@pytest.mark.slow
def test_embedded_model_end_to_end_and_cached_rerun(smollm2_path: Path) -> None:
    first = run_json("-m", "smollm2", "-t", "dyn_arithmetic", "-t", "dyn_dates_mc", "-n", "3")
    assert first["model"]["provider"] == "llamacpp"
    assert first["model"]["sha256"] == hashlib.sha256(smollm2_path.read_bytes()).hexdigest()
    assert first["model"]["quantization"] == "Q4_1"
    for name in ("dyn_arithmetic", "dyn_dates_mc"):
        task = first["tasks"][name]
        assert task["n_samples"] == 3 and task["n_errors"] == 0 and task["n_cached"] == 0
        est = task["metrics"][task["primary"]]
        assert est["n"] == 3 and est["method"] == "wilson" and est["low"] <= est["high"]
    assert first["tasks"]["dyn_arithmetic"]["output_tokens"] > 0
    assert set(first["tasks"]["dyn_dates_mc"]["metrics"]) == {"acc", "acc_norm"}
    again = run_json("-m", "smollm2", "-t", "dyn_arithmetic", "-t", "dyn_dates_mc", "-n", "3")
    for name in ("dyn_arithmetic", "dyn_dates_mc"):
        assert again["tasks"][name]["n_cached"] == 3
        assert again["tasks"][name]["metrics"] == first["tasks"][name]["metrics"]


@pytest.mark.slow
def test_openai_server_end_to_end(llama_server: str) -> None:
    data = run_json(
        "-m",
        "openai:smollm2",
        "--base-url",
        llama_server,
        "-t",
        "dyn_arithmetic",
        "-n",
        "3",
        "--concurrency",
        "2",
    )
    task = data["tasks"]["dyn_arithmetic"]
    assert task["n_samples"] == 3 and task["n_errors"] == 0
    assert task["input_tokens"] > 0 and task["output_tokens"] > 0
    assert data["model"]["provider"] == "openai" and data["model"]["base_url"] == llama_server


def test_unreachable_server_is_one_clear_error() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-m",
            "openai:x",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "-t",
            "dyn_arithmetic",
            "-n",
            "2",
        ],
    )
    assert result.exit_code == 2
    assert "Cannot reach http://127.0.0.1:9/v1" in result.stderr
    assert "Traceback" not in result.stderr
