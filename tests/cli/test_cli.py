"""The command line as a user meets it: exit codes, one-sentence errors, JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_run_json_prints_run_id_and_every_estimate(capitals_task: Path, tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps({"France": "Paris", "Japan": "Tokyo", "*": "no idea"}))
    code, out, _ = invoke("run", "-m", f"fake:script={script}", "-t", str(capitals_task), "--json")
    assert code == 0, out
    data = json.loads(out)
    task = data["tasks"]["capitals"]
    assert task["n_samples"] == 8 and task["n_errors"] == 0
    est = task["metrics"]["exact_match"]
    assert est["value"] == 2 / 8 and est["n"] == 8 and est["method"] == "wilson"
    assert est["low"] < 0.25 < est["high"]
    assert set(task["categories"]) == {"africa", "asia", "europe"}
    assert Path(data["report"]["html"]).exists() and Path(data["report"]["markdown"]).exists()
    code, out, _ = invoke("runs", "--json")
    assert code == 0 and json.loads(out)[0]["id"] == data["run_id"]
    code, out, _ = invoke("show", data["run_id"][:12])
    assert code == 0 and "exact_match" in out and "Methodology" in out
    assert "expected 'Berlin'" in out


def test_table_output_has_interval_and_method(capitals_task: Path) -> None:
    code, out, _ = invoke("run", "-m", "fake:const=Paris", "-t", str(capitals_task))
    assert code == 0
    assert "12.5%" in out  # 1 of 8
    assert "wilson" in out and "Report:" in out and "Stored in" in out


def test_errors_are_one_sentence_with_exit_2(capitals_task: Path, tmp_path: Path) -> None:
    code, _, err = invoke("run", "-t", "dyn_arithmatic", "-m", "fake:echo")
    assert code == 2 and "Unknown task 'dyn_arithmatic'" in err and "dyn_arithmetic" in err
    assert "Traceback" not in err
    code, _, err = invoke("run", "-m", "nosuch:thing", "-t", str(capitals_task))
    assert code == 2 and "Unknown model provider 'nosuch'" in err
    code, _, err = invoke(
        "run", "-m", f"llamacpp:{tmp_path / 'missing.gguf'}", "-t", str(capitals_task)
    )
    assert code == 2 and "missing.gguf" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndata: x.jsonl\nscorers: [exact_match]\npromt: {}\n")
    code, _, err = invoke("run", "-m", "fake:echo", "-t", str(bad))
    assert code == 2 and "bad.yaml:4" in err and "promt" in err
    code, _, err = invoke("show", "nope")
    assert code == 2 and "No run matches 'nope'" in err


def test_debug_shows_traceback(tmp_path: Path) -> None:
    code, _, err = invoke("--debug", "run", "-t", "nosuchtask", "-m", "fake:echo")
    assert code == 2 and "Traceback" in err


def test_catalog_commands() -> None:
    code, out, _ = invoke("tasks", "--json")
    data = json.loads(out)
    names = {t["name"] for t in data["tasks"]}
    assert {"dyn_word_problems", "dyn_arithmetic", "dyn_dates", "dyn_dates_mc"} <= names
    assert data["suites"]["dynamic"]
    code, out, _ = invoke("tasks", "--verbose")
    assert code == 0 and "licence" in out
    code, out, _ = invoke("models", "--json")
    data = json.loads(out)
    assert {p["prefix"] for p in data["providers"]} >= {"llamacpp", "openai", "fake"}
    assert "smollm2" in data["aliases"]


def test_module_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "calipers", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "calipers run" in proc.stdout


def test_store_option_on_subcommands(capitals_task: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    code, out, _ = invoke(
        "run", "--store", url, "-m", "fake:echo", "-t", str(capitals_task), "--json", "--no-report"
    )
    run_id = json.loads(out)["run_id"]
    assert code == 0 and (tmp_path / "elsewhere.db").exists()
    code, out, _ = invoke("runs", "--store", url, "--json")
    assert [r["id"] for r in json.loads(out)] == [run_id]
    code, out, _ = invoke("runs", "--json")  # the default store did not get it
    assert json.loads(out) == []
    code, out, _ = invoke("--store", url, "show", run_id, "--json")
    assert code == 0 and json.loads(out)["id"] == run_id


def test_not_a_gguf_is_one_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"not really a model")
    code, _, err = invoke("run", "-m", f"llamacpp:{fake}", "-t", "dyn_arithmetic", "-n", "2")
    assert code == 2 and "is not a GGUF file" in err and "Traceback" not in err


def test_cli_defaults_match_the_library() -> None:
    from calipers.models import DEFAULT_MODEL
    from calipers.tasks import DEFAULT_TASK

    code, out, _ = invoke("run", "--help")
    assert code == 0
    assert f"[default: {DEFAULT_MODEL}]" in out and f"[default: {DEFAULT_TASK}]" in out


def test_errors_are_not_hard_wrapped_off_a_terminal(tmp_path: Path) -> None:
    """A script greps stderr for the whole sentence; rich must not break it at 80 columns,
    however long the path in it."""
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 8)) / "missing-task.yaml"
    code, _, err = invoke("run", "-m", "fake:echo", "-t", str(deep))
    assert code == 2
    line = next(x for x in err.splitlines() if "Error:" in x)
    assert str(deep) in line and len(line) > 200
    # and through a real pipe, as a script sees it
    proc = subprocess.run(
        [sys.executable, "-m", "calipers", "run", "-m", "fake:echo", "-t", str(deep)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "60"},
    )
    assert proc.returncode == 2 and any(str(deep) in x for x in proc.stderr.splitlines())
