"""``calipers review create`` from each source: item counts checked against the source read
independently, pairwise items only on shared samples, no model identity in what raters see."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from calipers.store import Store, TrafficRecord
from tests._data import DATA, needs_data
from tests.conftest import CAPITALS
from tests.review._cli import PAIRWISE_QUESTIONS, invoke, make_run, questions, store_url

XSTEST = "xstest/model_completions/xstest_v2_completions_gpt4.csv"


def _strings(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_single_from_run_has_one_item_per_sample(capitals_task: Path, tmp_path: Path) -> None:
    url = store_url(tmp_path)
    run = make_run(url, capitals_task, "fake:const=Paris")
    code, out, err = invoke("review", "create", "caps", "--store", url, "--from", f"run:{run}",
                            "--questions", questions(tmp_path), "--k", "2", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["items"] == len(CAPITALS)
    with Store.open(url) as store:
        items = store.get_review_items("caps")
        samples = store.get_samples(run)
        camp = store.get_campaign("caps")
    assert camp.k == 2 and camp.kind == "single"
    assert {it.source["sample_id"] for it in items} == {r["id"] for r in CAPITALS}
    by_id = {r["id"]: r for r in CAPITALS}
    for it in items:
        assert set(it.payload) == {"prompt", "response", "reference"}
        assert it.payload["response"] == "Paris"
        assert it.payload["reference"] == by_id[it.source["sample_id"]]["answer"]
        assert by_id[it.source["sample_id"]]["question"] in it.payload["prompt"]
        assert it.source["run_id"] == run and it.source["model"] == "fake:const=Paris"
        assert "fake" not in _strings(it.payload) and run not in _strings(it.payload)
        assert run not in it.item_key
    assert len(samples) == len(items)


def test_pairwise_from_two_runs_keeps_only_shared_samples(
    capitals_task: Path, tmp_path: Path
) -> None:
    url = store_url(tmp_path)
    run_a = make_run(url, capitals_task, "fake:const=Paris")
    run_b = make_run(url, capitals_task, "fake:echo", "-n", "5")
    with Store.open(url) as store:
        ids_a = {s.sample_id for s in store.get_samples(run_a)}
        ids_b = {s.sample_id for s in store.get_samples(run_b)}
    shared = ids_a & ids_b
    assert len(shared) == 5 and len(ids_a) == 8  # the runs differ: the test can fail
    q = questions(tmp_path, PAIRWISE_QUESTIONS)
    code, out, err = invoke("review", "create", "ab", "--store", url, "--from",
                            f"runs:{run_a},{run_b}", "--kind", "pairwise", "--questions", q,
                            "--k", "3", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["items"] == 5 and data["skipped"] == {"only in the first run": 3}
    with Store.open(url) as store:
        items = store.get_review_items("ab")
    assert {it.source["sample_id"] for it in items} == shared
    for it in items:
        assert set(it.payload) == {"prompt", "a", "b"}
        assert it.payload["a"] == "Paris" and it.payload["b"] != "Paris"
        assert it.source["a"]["run_id"] == run_a and it.source["b"]["run_id"] == run_b
        assert it.source["a"]["model"] == "fake:const=Paris"
        assert it.source["b"]["model"] == "fake:echo"
        text = _strings(it.payload)
        assert "fake" not in text and run_a not in text and run_b not in text


@needs_data(XSTEST)
def test_xstest_csv_imports_every_row(tmp_path: Path) -> None:
    path = DATA / XSTEST
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    url = store_url(tmp_path)
    code, out, err = invoke("review", "create", "xstest", "--store", url, "--from", str(path),
                            "--field", "prompt=prompt", "--field", "response=completion",
                            "--key", "id", "--questions", questions(tmp_path), "--k", "2",
                            "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["items"] == len(rows) == 450
    with Store.open(url) as store:
        items = store.get_review_items("xstest")
    assert [it.item_key for it in items] == [r["id"] for r in rows]
    first = items[0]
    assert first.payload == {"prompt": rows[0]["prompt"], "response": rows[0]["completion"]}
    # the annotations stay with the owner (for import-labels), never in what raters see
    assert first.source["row"]["final_label"] == rows[0]["final_label"]


@needs_data(XSTEST)
def test_a_missing_column_names_the_columns_found(tmp_path: Path) -> None:
    code, _, err = invoke("review", "create", "x", "--store", store_url(tmp_path), "--from",
                          str(DATA / XSTEST), "--field", "prompt=question", "--field",
                          "response=completion", "--questions", questions(tmp_path),
                          "--k", "1")  # fmt: skip
    assert code != 0
    assert "no column(s) 'question'" in err
    assert "'prompt', 'completion'" in err and "'final_label'" in err


def test_jsonl_file_with_default_fields_and_an_empty_answer(tmp_path: Path) -> None:
    rows = [
        {"prompt": "p1", "response": "r1", "who": "model-x"},
        {"prompt": "p2", "response": "", "who": "model-x"},
        {"prompt": "p3", "response": "r3", "who": "model-y"},
    ]
    f = tmp_path / "data.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, err = invoke("review", "create", "f", "--store", store_url(tmp_path), "--from",
                            str(f), "--questions", questions(tmp_path), "--k", "1",
                            "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["items"] == 2 and data["skipped"] == {"an empty answer": 1}
    with Store.open(store_url(tmp_path)) as store:
        items = store.get_review_items("f")
    assert [it.payload for it in items] == [
        {"prompt": "p1", "response": "r1"},
        {"prompt": "p3", "response": "r3"},
    ]
    assert all("model-" not in _strings(it.payload) for it in items)


def _shadow(i: int, ts: datetime, *, candidate: bool = True) -> list[TrafficRecord]:
    roles = ("baseline", "candidate") if candidate else ("baseline",)
    return [
        TrafficRecord(
            pair_id=f"req-{i}",
            role=role,
            served=role == "baseline",
            mode="shadow",
            endpoint="/v1/chat/completions",
            upstream=f"http://{role}.invalid/v1",
            request={"messages": [{"role": "user", "content": f"question {i}"}]},
            ts=ts,
            model=f"{role}-model-7b",
            response=f"{role} answer {i}",
            status=200,
        )
        for role in roles
    ]


def test_traffic_single_and_pairwise(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    t0 = datetime(2025, 6, 2, tzinfo=UTC)
    recs: list[TrafficRecord] = []
    for i in range(6):  # requests 0-3 shadowed, 4-5 baseline only; request 5 after --until
        recs += _shadow(i, t0 + timedelta(minutes=i), candidate=i < 4)
    with Store.open(url) as store:
        store.add_traffic(recs)
    span = ["--since", t0.isoformat(), "--until", (t0 + timedelta(minutes=5)).isoformat()]
    q = questions(tmp_path)
    code, out, err = invoke("review", "create", "t1", "--store", url, "--from", "traffic",
                            *span, "--questions", q, "--k", "1", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["items"] == 5
    qp = questions(tmp_path, PAIRWISE_QUESTIONS, "p.yaml")
    code, out, err = invoke("review", "create", "t2", "--store", url, "--from", "traffic",
                            *span, "--kind", "pairwise", "--questions", qp, "--k", "1",
                            "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["items"] == 4 and sum(data["skipped"].values()) == 1
    with Store.open(url) as store:
        single = store.get_review_items("t1")
        pair = store.get_review_items("t2")
    assert single[0].payload == {"prompt": "question 0", "response": "baseline answer 0"}
    assert pair[0].payload == {
        "prompt": "question 0",
        "a": "baseline answer 0",
        "b": "candidate answer 0",
    }
    assert pair[0].source["a"]["model"] == "baseline-model-7b"
    assert pair[0].source["b"]["model"] == "candidate-model-7b"
    for it in single + pair:
        assert "model-7b" not in _strings(it.payload)


@pytest.mark.parametrize(
    ("source", "kind", "message"),
    [
        ("run:nosuchrun", "single", "No run matches 'nosuchrun'"),
        ("runs:a", "pairwise", "write runs:RUN_A,RUN_B"),
        ("nofile.csv", "single", "Unknown --from 'nofile.csv'"),
        ("traffic", "single", "gave no items to review"),
    ],
)
def test_bad_sources_say_what_is_wrong(
    tmp_path: Path, source: str, kind: str, message: str
) -> None:
    q = questions(tmp_path, PAIRWISE_QUESTIONS) if kind == "pairwise" else questions(tmp_path)
    code, _, err = invoke("review", "create", "x", "--store", store_url(tmp_path), "--from",
                          source, "--kind", kind, "--questions", q, "--k", "1")  # fmt: skip
    assert code != 0
    assert message in err


def test_an_empty_csv_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "empty.csv"
    f.write_text("prompt,response\n", encoding="utf-8")
    code, _, err = invoke("review", "create", "x", "--store", store_url(tmp_path), "--from",
                          str(f), "--questions", questions(tmp_path), "--k", "1")  # fmt: skip
    assert code != 0
    assert "gave no items to review" in err


def test_uncovered_traffic_is_what_monitor_export_exports(tmp_path: Path) -> None:
    from tests.monitor._monitor_fixtures import BASE, COOKING, HOUR, T0, write_windows

    url = store_url(tmp_path)
    write_windows(url, [BASE, COOKING], n=80, seed=4)
    span = ["--since", T0.isoformat(), "--until", (T0 + 2 * HOUR).isoformat()]
    queue = tmp_path / "queue.jsonl"
    fast = ["--outlier-quantile", "0.05"]
    code, out, err = invoke("--store", url, "monitor", "export", *span, *fast, "--to-review",
                            str(queue))  # fmt: skip
    assert code == 0, err
    flagged = [json.loads(line) for line in queue.read_text("utf-8").splitlines()]
    assert flagged
    code, out, err = invoke("review", "create", "u", "--store", url, "--from", "traffic",
                            *span, *fast, "--uncovered", "--questions", questions(tmp_path),
                            "--k", "1", "--json")  # fmt: skip
    assert code == 0, err
    with Store.open(url) as store:
        items = store.get_review_items("u")
    assert [it.item_key for it in items] == [r["pair_id"] for r in flagged]
    assert [it.payload["prompt"] for it in items] == [r["prompt"] for r in flagged]
    assert json.loads(out)["source"] == "traffic (uncovered)"


def test_suite_items_with_a_reference_answer(tmp_path: Path) -> None:
    from calipers.suites import load_suite
    from tests.suites._logs import production_log

    log, _rows = production_log(tmp_path)
    code, _, err = invoke("suite", "import", str(log), "--name", "prod", "--field",
                          "input=question", "--field", "id=req_id", "--field",
                          "accepted=thumbs_up", "--field", "output=answer")  # fmt: skip
    assert code == 0, err
    assert invoke("suite", "build", "prod", "--backend", "tfidf")[0] == 0
    _manifest, suite_items = load_suite("prod")
    with_ref = [it for it in suite_items if it.reference is not None]
    assert 0 < len(with_ref) < len(suite_items)  # references as the suite chose them
    url = store_url(tmp_path)
    code, out, err = invoke("review", "create", "s", "--store", url, "--from", "suite:prod@v1",
                            "--questions", questions(tmp_path), "--k", "1", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["items"] == len(with_ref) and data["source"] == "suite:prod@v1"
    assert sum(data["skipped"].values()) == len(suite_items) - len(with_ref)
    with Store.open(url) as store:
        items = store.get_review_items("s")
    assert [it.item_key for it in items] == [it.id for it in with_ref]
    assert [it.payload["response"] for it in items] == [it.reference for it in with_ref]
    assert items[0].payload["prompt"].endswith(with_ref[0].query)


def test_pairwise_file_records_which_column_is_which(tmp_path: Path) -> None:
    f = tmp_path / "pairs.csv"
    with f.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["q", "chosen", "rejected"])
        w.writerows([["q1", "good 1", "bad 1"], ["q2", "good 2", "bad 2"]])
    q = questions(tmp_path, PAIRWISE_QUESTIONS)
    code, out, err = invoke("review", "create", "p", "--store", store_url(tmp_path), "--from",
                            str(f), "--kind", "pairwise", "--field", "prompt=q", "--field",
                            "a=chosen", "--field", "b=rejected", "--questions", q, "--k", "2",
                            "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["items"] == 2
    with Store.open(store_url(tmp_path)) as store:
        items = store.get_review_items("p")
    assert items[1].payload == {"prompt": "q2", "a": "good 2", "b": "bad 2"}
    assert items[1].source["columns"] == {"prompt": "q", "a": "chosen", "b": "rejected"}
