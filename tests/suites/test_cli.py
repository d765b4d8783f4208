"""`calipers suite import/build/show/list` and `calipers run -t suite:NAME`, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store
from tests.suites._logs import production_log, write_jsonl


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _import(tmp_path: Path, name: str = "prod") -> list[dict[str, Any]]:
    log, rows = production_log(tmp_path)
    with log.open("a", encoding="utf-8") as f:
        f.write("{not json\n")
    code, out, err = invoke(
        "suite",
        "import",
        str(log),
        "--name",
        name,
        "--field",
        "input=question",
        "--field",
        "id=req_id",
        "--field",
        "accepted=thumbs_up",
        "--field",
        "output=answer",
    )
    assert code == 0, err
    assert f"{len(rows) + 1} records read, {len(rows)} imported, 1 skipped" in out
    assert f"broken JSON line — line {len(rows) + 1}" in out
    assert "EMAIL 1" in out and "originals not stored" in out
    return rows


def test_import_build_show_list_and_run(tmp_path: Path) -> None:
    _import(tmp_path)
    code, out, err = invoke("suite", "build", "prod", "--backend", "tfidf", "--json")
    assert code == 0, err
    built = json.loads(out)
    assert built["version"] == 1 and not built["unchanged"]
    names = {c["name"] for c in built["clusters"]}
    code, out, _ = invoke("suite", "build", "prod", "--backend", "tfidf")
    assert code == 0 and "unchanged" in out and "v1" in out
    code, out, _ = invoke("suite", "show", "prod@v1", "--json")
    assert code == 0 and json.loads(out)["content_hash"] == built["content_hash"]
    code, out, _ = invoke("suite", "show", "prod")
    assert code == 0 and "How realistic" in out and "multi-turn share" in out
    assert "production clusters covered" in out and "likely typo" in out
    code, out, _ = invoke("suite", "list", "--json")
    assert json.loads(out)[0]["latest"]["content_hash"] == built["content_hash"]

    code, out, err = invoke("run", "-m", "fake:echo", "-t", "suite:prod", "--json")
    assert code == 0, err
    run = json.loads(out)
    task = run["tasks"]["suite:prod"]
    assert task["n_samples"] == built["n_items"] and task["n_errors"] == 0
    assert set(task["categories"]) == names  # reports break down by cluster
    refs = built["references"]["n_with_reference"]
    assert task["metrics"]["match"]["n"] == refs  # items without a reference are not scored
    with Store.open() as store:
        samples = store.get_samples(run["run_id"])
    multi = [s for s in samples if len(s.prompt["messages"]) == 3]
    assert len(multi) == 5  # the multi-turn chats keep their turns
    assert [m["role"] for m in multi[0].prompt["messages"]] == ["user", "assistant", "user"]
    assert {s.category for s in samples} == names


def test_suite_without_references_runs_and_says_so(tmp_path: Path) -> None:
    _import(tmp_path, "noref")
    code, out, _ = invoke("suite", "build", "noref", "--backend", "tfidf", "--references", "none")
    assert code == 0 and "No references" in out
    code, out, _ = invoke("run", "-m", "fake:echo", "-t", "suite:noref@v1", "--json")
    assert code == 0
    task = json.loads(out)["tasks"]["suite:noref"]
    assert task["primary"] is None and task["metrics"] == {} and task["n_samples"] > 0


def test_too_small_suite_is_flagged_at_build(tmp_path: Path) -> None:
    _import(tmp_path)
    code, out, _ = invoke(
        "suite", "build", "prod", "--backend", "tfidf", "--delta", "0.05", "--baseline-acc", "0.7"
    )
    assert code == 0
    assert "FLAGGED: too small for delta=0.05: needs 1,248 items" in " ".join(out.split())
    code, out, _ = invoke("suite", "list")
    assert "too small" in out


def test_errors_exit_2_with_a_message(tmp_path: Path) -> None:
    code, _, err = invoke("run", "-m", "fake:echo", "-t", "suite:nosuch")
    assert code == 2 and "No built suite 'nosuch'" in err
    code, _, err = invoke("suite", "import", str(tmp_path / "missing.jsonl"), "--name", "x")
    assert code == 2 and "does not exist" in err
    log = write_jsonl(tmp_path / "l.jsonl", [{"input": "hello there"}])
    assert invoke("suite", "import", str(log), "--name", "x")[0] == 0
    code, _, err = invoke("suite", "import", str(log), "--name", "x")
    assert code == 2 and "already in suite 'x'" in err and "--replace" in err
    code, _, err = invoke("suite", "build", "x", "--size", "3", "--delta", "0.1")
    assert code == 2 and "not both" in err
    code, _, err = invoke("suite", "show", "x@v9")
    assert code == 2 and "No built suite 'x'" in err
    code, _, err = invoke("suite", "import", str(log), "--name", "bad name!")
    assert code == 2 and "Bad suite name" in err
    code, _, err = invoke("suite", "import", str(log), "--name", "y", "--field", "nope=a")
    assert code == 2 and "Bad --field" in err
