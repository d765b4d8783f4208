"""``calipers rag import``: gateway traffic carrying passages becomes a RAG task that a stress
test runs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store, TrafficRecord


def _record(pair: str, question: str, passage: str, answer: str) -> TrafficRecord:
    request = {
        "messages": [{"role": "user", "content": f"{passage}\n\n{question}"}],
        "calipers_rag": {"passages": [{"id": f"d-{pair}", "title": "FAQ", "text": passage}]},
    }
    return TrafficRecord(
        pair_id=pair, role="baseline", served=True, mode="off", endpoint="/v1/chat/completions",
        upstream="u", request=request, response=answer, model="m",
    )  # fmt: skip


def test_traffic_becomes_a_task_a_stress_test_runs(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Store.open(db) as store:
        store.add_traffic(
            [
                _record(f"p{i}", f"How long do refunds of plan {i} take?",
                        f"Refunds of plan {i} take {i + 2} days.", f"{i + 2} days")
                for i in range(6)
            ]
            + [TrafficRecord(pair_id="plain", role="baseline", served=True, mode="off",
                             endpoint="/v1/chat/completions", upstream="u",
                             request={"messages": [{"role": "user", "content": "hi"}]})]
        )  # fmt: skip
    out = tmp_path / "rag_traffic.jsonl"
    r = CliRunner().invoke(
        cli, ["rag", "import", "--traffic", "-o", str(out), "--store", db, "--json"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["rows"] == 6  # the request without passages is not a RAG row
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["passages"][0]["text"] == "Refunds of plan 0 take 2 days."
    spec = tmp_path / "rag_traffic.yaml"
    r = CliRunner().invoke(
        cli,
        ["rag", "stress", "-t", str(spec), "-m", "fake:const=Lyon", "--factors", "gold",
         "--json", "--store", db],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads(r.output[r.output.index("{") :])
    # no reference answer: only abstention and support are measured; "Lyon" is in no passage
    clean = report["clean"]["outcomes"]
    assert set(clean) == {"abstained", "unsupported"}
    assert clean["unsupported"]["score"]["value"] == 1.0


def test_import_needs_exactly_one_source(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["rag", "import", "-o", str(tmp_path / "x.jsonl")])
    assert r.exit_code != 0 and "one source" in r.output
