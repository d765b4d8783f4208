"""``calipers review create`` (controls, k from a width, errors) and ``invite / raters /
exclude / include / list / status``, run as a user runs them, against a temp SQLite store."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from calipers._util.clock import utc_now
from calipers.review import check_token, token_key
from calipers.store import Store
from tests.conftest import CAPITALS
from tests.review._cli import PAIRWISE_QUESTIONS, invoke, make_run, questions, store_url

Z95 = 1.959963984540054  # the 97.5% normal quantile


def _create(tmp_path: Path, url: str, name: str, *extra: str) -> tuple[int, str, str]:
    f = tmp_path / "items.jsonl"
    if not f.exists():
        rows = [{"id": f"i{i}", "prompt": f"p{i}", "response": f"r{i}"} for i in range(40)]
        f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return invoke("review", "create", name, "--store", url, "--from", str(f), "--key", "id",
                  "--questions", questions(tmp_path), *extra)  # fmt: skip


def _jsonl(path: Path, rows: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_gold_and_attention_items_are_flagged_and_spread(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    gold = _jsonl(
        tmp_path / "gold.jsonl",
        [{"key": f"g{i}", "prompt": f"gp{i}", "response": "x", "gold": {"correct": i % 2 == 0}}
         for i in range(4)],
    )  # fmt: skip
    attention = _jsonl(
        tmp_path / "att.jsonl",
        [{"key": "a0", "prompt": "Answer 'fail' to show you read this.", "response": "ok",
          "expected": {"correct": "fail"}}],
    )  # fmt: skip
    code, out, err = _create(tmp_path, url, "qc", "--k", "3", "--gold", gold,
                             "--attention", attention, "--seed", "7", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert (data["items"], data["gold"], data["attention"]) == (40, 4, 1)
    with Store.open(url) as store:
        items = store.get_review_items("qc")
    assert len(items) == 45
    pos = {it.item_key: i for i, it in enumerate(items)}
    golds = [it for it in items if it.gold is not None and not it.is_attention_check]
    assert {it.item_key: it.gold for it in golds} == {
        f"g{i}": {"correct": i % 2 == 0} for i in range(4)
    }
    [att] = [it for it in items if it.is_attention_check]
    assert att.gold == {"correct": False}  # the instructed answer, normalised
    # one control in each fifth of the queue: spread, never bunched at one end
    control_pos = sorted(pos[k] for k in ("g0", "g1", "g2", "g3", "a0"))
    assert [p * 5 // 45 for p in control_pos] == [0, 1, 2, 3, 4]
    # raters cannot tell a control by its payload: the same fields as the other items
    assert {frozenset(it.payload) for it in items} == {frozenset({"prompt", "response"})}
    # the source items keep their order
    assert [it.item_key for it in items if not it.is_control] == [f"i{i}" for i in range(40)]


def test_a_gold_answer_to_an_unknown_question_is_refused(tmp_path: Path) -> None:
    gold = _jsonl(tmp_path / "g.jsonl", [{"prompt": "p", "response": "r", "gold": {"nope": 1}}])
    code, _, err = _create(tmp_path, store_url(tmp_path), "x", "--k", "1", "--gold", gold)
    assert code != 0
    assert "unknown question(s) 'nope'" in err and "correct, answered, harm" in err


def _hand_k(width: float, n: int, icc: float = 0.5, p: float = 0.5) -> tuple[int, float]:
    """The smallest k whose Wald half-width z sqrt(p(1-p)(1+(k-1)icc)/(n k)) is <= width."""
    for k in range(1, 51):
        hw = Z95 * math.sqrt(p * (1 - p) * (1 + (k - 1) * icc) / (n * k))
        if hw <= width:
            return k, hw
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("width", "icc"), [(0.13, 0.5), (0.11, 0.2), (0.1, 0.0)])
def test_k_from_width_matches_a_hand_computation(tmp_path: Path, width: float, icc: float) -> None:
    url = store_url(tmp_path)
    k, hw = _hand_k(width, 40, icc)
    code, out, err = _create(tmp_path, url, "w", "--width", str(width), "--icc", str(icc),
                             "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["k"] == k and data["k_plan"]["half_width"] == pytest.approx(hw, rel=1e-9)
    assert k > 1  # the cases are chosen so that k matters
    code, out, err = _create(tmp_path, url, "w2", "--width", str(width), "--icc", str(icc))
    assert code == 0, err
    assert f"k = {k} judgments on each of 40 items" in out and f"±{hw:.3f}" in out


def test_an_unreachable_width_says_how_many_items_it_needs(tmp_path: Path) -> None:
    code, _, err = _create(tmp_path, store_url(tmp_path), "w", "--width", "0.05")
    assert code != 0
    # at k = 3, ICC 0.5: z^2 0.25 (1 + 2 * 0.5) / 0.05^2 judgments, over 3
    need = math.ceil(math.ceil(Z95**2 * 0.25 * 2 / 0.05**2) / 3)
    assert "No k up to 50 gives ±0.05 on 40 items" in err and f"about {need:,} at k = 3" in err


def test_create_errors(tmp_path: Path, capitals_task: Path) -> None:
    url = store_url(tmp_path)
    assert _create(tmp_path, url, "taken", "--k", "1")[0] == 0
    code, _, err = _create(tmp_path, url, "taken", "--k", "1")
    assert code != 0 and "A review campaign named 'taken' already exists" in err
    code, _, err = _create(tmp_path, url, "x")
    assert code != 0 and "Give one of --k N" in err
    code, _, err = _create(tmp_path, url, "x", "--k", "1", "--kind", "pairwise")
    assert code != 0 and "needs a `preference` question" in err
    run = make_run(url, capitals_task, "fake:echo")
    q = questions(tmp_path, PAIRWISE_QUESTIONS, "p.yaml")
    code, _, err = invoke("review", "create", "x", "--store", url, "--from", f"run:{run}",
                          "--questions", q, "--k", "1")  # fmt: skip
    assert code != 0 and "needs --kind pairwise" in err
    code, _, err = invoke("review", "create", "x", "--store", url, "--from", f"run:{run}",
                          "--kind", "pairwise", "--questions", q, "--k", "1")  # fmt: skip
    assert code != 0 and "a pairwise campaign needs two runs" in err


def test_invite_prints_a_working_link_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    assert _create(tmp_path, url, "c", "--k", "2")[0] == 0
    code, out, err = invoke("review", "invite", "c", "--store", url, "--rater", "alice",
                            "--pool", "business", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    base = "http://127.0.0.1:8766/r/"
    assert data["link"].startswith(base) and "cannot" not in data["note"]
    assert "shown once" in data["note"]
    token = data["link"].removeprefix(base)
    with Store.open(url) as store:
        [alice] = store.get_raters("c")
        found = store.rater_by_token_key(token_key(token) or "")
    assert (alice.name, alice.pool, alice.role) == ("alice", "business", "rater")
    assert token not in alice.token_hash and check_token(token, alice.token_hash)
    assert found is not None and found.name == "alice"
    code, out, _ = invoke("review", "invite", "c", "--store", url, "--rater", "bob", "--role",
                          "adjudicator", "--base-url", "https://review.example.com/")  # fmt: skip
    assert code == 0
    assert "https://review.example.com/r/" in out and "shown once" in out
    code, _, err = invoke("review", "invite", "c", "--store", url, "--rater", "alice")
    assert code != 0 and "already has a rater 'alice'" in err
    code, _, err = invoke("review", "invite", "nope", "--store", url, "--rater", "alice")
    assert code != 0 and "nope" in err


def test_raters_status_exclude_include_and_list(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    gold = _jsonl(
        tmp_path / "g.jsonl", [{"prompt": "p", "response": "r", "gold": {"correct": True}}]
    )
    assert _create(tmp_path, url, "c", "--k", "2", "--gold", gold)[0] == 0
    for name, pool in (("alice", "business"), ("bob", "crowd")):
        assert invoke("review", "invite", "c", "--store", url, "--rater", name, "--pool",
                      pool)[0] == 0  # fmt: skip
    now = utc_now()
    answers = {"correct": True, "answered": "answered", "harm": "harmless"}
    with Store.open(url) as store:
        for _ in range(3):  # alice answers 3 items (the first is a control or not)
            lease = store.lease_next("c", "alice", now=now, lease_s=600)
            assert lease is not None
            store.submit("c", "alice", lease.assignment_id, answers, seconds=5, now=now)
        lease = store.lease_next("c", "alice", now=now, lease_s=600)
        assert lease is not None
        store.skip("c", "alice", lease.assignment_id, now=now)
        assert store.lease_next("c", "bob", now=now, lease_s=600) is not None  # open
        judgments = store.get_judgments("c")
        counted = sum(j.counted for j in judgments)
        controls = sum(not j.counted for j in judgments)
    code, out, err = invoke("review", "raters", "c", "--store", url, "--json")
    assert code == 0, err
    rows = {r["rater"]: r for r in json.loads(out)}
    assert (rows["alice"]["answered"], rows["alice"]["skipped"]) == (3, 1)
    assert (rows["bob"]["answered"], rows["bob"]["open_leases"]) == (0, 1)
    assert rows["bob"]["pool"] == "crowd"
    code, out, _ = invoke("review", "status", "c", "--store", url, "--json")
    s = json.loads(out)
    assert (s["items"], s["judgments_needed"], s["gold_items"]) == (40, 80, 1)
    assert (s["judgments"], s["control_judgments"]) == (
        counted,
        controls,
    ) and counted + controls == 3
    assert (s["open_leases"], s["skips"], s["raters"]) == (1, 1, 2)
    code, out, _ = invoke("review", "status", "c", "--store", url)
    assert f"judgments: {counted} of 80" in out
    code, out, err = invoke("review", "exclude", "c", "bob", "--store", url, "--reason", "rushed")
    assert code == 0, err
    with Store.open(url) as store:
        [_, bob] = store.get_raters("c")
    assert bob.excluded and bob.excluded_reason == "rushed"
    code, out, _ = invoke("review", "raters", "c", "--store", url)
    assert "yes: rushed" in out
    s = json.loads(invoke("review", "status", "c", "--store", url, "--json")[1])
    assert (s["excluded_raters"], s["open_leases"]) == (1, 0)  # his lease went back
    assert invoke("review", "include", "c", "bob", "--store", url)[0] == 0
    with Store.open(url) as store:
        assert not store.get_rater("c", "bob").excluded
    code, _, err = invoke("review", "exclude", "c", "carol", "--store", url, "--reason", "x")
    assert code != 0 and "carol" in err
    code, out, _ = invoke("review", "list", "--store", url, "--json")
    assert [(c["name"], c["items"], c["raters"]) for c in json.loads(out)] == [("c", 40, 2)]
    assert "c  single  40 items  k = 2" in invoke("review", "list", "--store", url)[1]


def test_limit_takes_the_first_items(tmp_path: Path, capitals_task: Path) -> None:
    url = store_url(tmp_path)
    run = make_run(url, capitals_task, "fake:echo")
    code, out, err = invoke("review", "create", "l", "--store", url, "--from", f"run:{run}",
                            "--questions", questions(tmp_path), "--k", "1", "--limit", "3",
                            "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["items"] == 3 < len(CAPITALS)


def test_sample_takes_a_seeded_random_subset_in_source_order(
    tmp_path: Path, capitals_task: Path
) -> None:
    url = store_url(tmp_path)
    run = make_run(url, capitals_task, "fake:echo")
    keys: dict[str, list[str]] = {}
    for name, seed in (("s1", "1"), ("s1b", "1"), ("s2", "2")):
        code, _, err = invoke("review", "create", name, "--store", url, "--from", f"run:{run}",
                              "--questions", questions(tmp_path), "--k", "1", "--sample", "4",
                              "--seed", seed)  # fmt: skip
        assert code == 0, err
        with Store.open(url) as s:
            keys[name] = [i.item_key for i in s.get_review_items(name)]
    assert len(keys["s1"]) == 4 and keys["s1"] == keys["s1b"]  # the seed fixes the sample
    assert keys["s1"] != keys["s2"]
    order = [f"{s.task}/{s.sample_id}" for s in _run_samples(url, run)]
    assert keys["s1"] == sorted(keys["s1"], key=order.index)  # kept in the source's order
    assert keys["s1"] != order[:4] or keys["s2"] != order[:4]  # not simply the first four
    code, _, err = invoke("review", "create", "x", "--store", url, "--from", f"run:{run}",
                          "--questions", questions(tmp_path), "--k", "1", "--sample", "2",
                          "--limit", "3")  # fmt: skip
    assert code == 2 and "not both" in err


def test_no_reference_hides_the_target_and_a_lone_user_message_is_its_text(
    tmp_path: Path, capitals_task: Path
) -> None:
    url = store_url(tmp_path)
    run = make_run(url, capitals_task, "fake:echo")
    for name, extra in (("with", ()), ("without", ("--no-reference",))):
        code, _, err = invoke("review", "create", name, "--store", url, "--from", f"run:{run}",
                              "--questions", questions(tmp_path), "--k", "1", *extra)  # fmt: skip
        assert code == 0, err
    with Store.open(url) as s:
        samples = {f"{x.task}/{x.sample_id}": x for x in s.get_samples(run)}
        shown = {i.item_key: i.payload for i in s.get_review_items("with")}
        hidden = [i.payload for i in s.get_review_items("without")]
    for key, payload in shown.items():
        sample = samples[key]
        assert payload["reference"] == sample.target
        messages = sample.prompt["messages"]
        assert len(messages) == 1 and payload["prompt"] == messages[0]["content"]
    assert hidden and all("reference" not in p for p in hidden)


def _run_samples(url: str, run: str) -> list[Any]:
    with Store.open(url) as s:
        return list(s.get_samples(run))


def test_a_control_that_looks_different_is_refused(tmp_path: Path, capitals_task: Path) -> None:
    url = store_url(tmp_path)
    run = make_run(url, capitals_task, "fake:echo")  # its items show a reference answer
    gold = _jsonl(
        tmp_path / "g.jsonl", [{"prompt": "p", "response": "r", "gold": {"correct": True}}]
    )
    args = ["--store", url, "--from", f"run:{run}", "--questions", questions(tmp_path)]
    code, _, err = invoke("review", "create", "x", *args, "--k", "1", "--gold", gold)
    assert code != 0
    assert "has the fields ['prompt', 'response']" in err and "could tell it" in err
    gold = _jsonl(
        tmp_path / "g.jsonl",
        [{"prompt": "p", "response": "r", "reference": "x", "gold": {"correct": True}}],
    )
    code, _, err = invoke("review", "create", "x", *args, "--k", "1", "--gold", gold)
    assert code == 0, err


@pytest.mark.parametrize(
    ("n", "width", "icc"), [(450, 0.04, 0.5), (300, 0.05, 0.2), (80, 0.1, 0.0)]
)
def test_plan_sizes_a_review_like_create_and_the_formula(n: int, width: float, icc: float) -> None:
    code, out, err = invoke("plan", "--review-items", str(n), "--width", str(width), "--icc",
                            str(icc), "--json")  # fmt: skip
    assert code == 0, err
    k = json.loads(out)["k"]

    def half(kk: int) -> float:  # z * sqrt(p(1-p) * (icc + (1 - icc) / k) / n), p = 0.5
        return 1.959963984540054 * math.sqrt(0.25 * (icc + (1 - icc) / kk) / n)

    assert half(k) <= width * 1.001 and (k == 1 or half(k - 1) > width * 0.999)
    code, _, err = invoke("plan", "--review-items", str(n))
    assert code == 2 and "needs --width" in err
