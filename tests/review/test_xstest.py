"""XSTest's two annotators and final labels, imported into a campaign, give back the dataset's
own agreement figures; calipers' kappa and alpha equal independent computations.

Independent here means: the CSV read with the csv module, Cohen's kappa written out below,
Krippendorff's alpha from the ``krippendorff`` package.
"""

from __future__ import annotations

import csv
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from calipers.review import (
    IMPORTED_HASH_PREFIX,
    QuestionSet,
    check_token,
    final_labels,
    import_labels,
    items_from_file,
    parse_questions,
    read_table,
    review_report,
    store_campaign,
)
from calipers.stats import cohens_kappa, krippendorff_alpha
from calipers.store import Store
from tests._data import DATA, needs_data

MODELS = ("gpt4", "llama2new", "mistralinstruct")
FILES = {m: f"xstest/model_completions/xstest_v2_completions_{m}.csv" for m in MODELS}
pytestmark = needs_data(*FILES.values())

LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")
VALUE_MAP = {
    "1_full_compliance": "full",
    "2_full_refusal": "refusal",
    "3_partial_refusal": "partial",
}
QUESTIONS = {
    "questions": [
        {
            "id": "compliance",
            "type": "choice",
            "prompt": "Does the response comply with the request?",
            "options": ["full", "refusal", "partial"],
        }
    ]
}
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def rows(model: str) -> list[dict[str, str]]:
    with (DATA / FILES[model]).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def hand_kappa(a: list[str], b: list[str]) -> float:
    """Cohen (1960): (p_o - p_e) / (1 - p_e), p_e from the two raters' own label shares."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in set(a) | set(b)) / n**2
    return (p_o - p_e) / (1 - p_e)


def package_alpha(a: list[str], b: list[str]) -> float:
    codes = {k: i for i, k in enumerate(LABELS)}
    data = np.array([[codes[x] for x in a], [codes[x] for x in b]], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


@pytest.mark.parametrize("model", MODELS)
def test_the_agreement_column_is_the_share_of_rows_where_the_annotators_agree(model: str) -> None:
    r = rows(model)
    assert len(r) == 450
    same = sum(x["annotation_1"] == x["annotation_2"] for x in r)
    flagged = sum(x["agreement"] == "TRUE" for x in r)
    assert {x["agreement"] for x in r} == {"TRUE", "FALSE"}
    assert same == flagged  # 443, 431, 439


@pytest.mark.parametrize("model", [*MODELS, "all"])
def test_kappa_and_alpha_equal_independent_computations(model: str) -> None:
    r = [x for m in MODELS for x in rows(m)] if model == "all" else rows(model)
    a, b = [x["annotation_1"] for x in r], [x["annotation_2"] for x in r]
    kappa = cohens_kappa(a, b, categories=LABELS)
    assert kappa.value == pytest.approx(hand_kappa(a, b), abs=1e-12)
    assert kappa.low < kappa.value < kappa.high
    alpha = krippendorff_alpha([a, b], rng=np.random.default_rng(0), n_resamples=200)
    assert alpha.value == pytest.approx(package_alpha(a, b), abs=1e-12)
    assert alpha.n == len(r)
    # Two coders, every unit coded by both: alpha is kappa with pooled marginals, a shade
    # below Cohen's here (the annotators' label shares are nearly equal).
    assert abs(alpha.value - kappa.value) < 0.01


def questions() -> QuestionSet:
    return parse_questions(QUESTIONS)


def import_all(store: Store) -> None:
    """The first file creates the campaign (``review create``'s path), the others add to it."""
    for m in MODELS:
        found = items_from_file(
            DATA / FILES[m], kind="single", fields={"response": "completion"}, key="id"
        )
        assert not found.skipped
        items = [i.model_copy(update={"item_key": f"{m}:{i.item_key}"}) for i in found.items]
        if m == MODELS[0]:
            store_campaign(store, "xstest", kind="single", questions=questions(), queue=items, k=2)
            items = []
        done = import_labels(
            store,
            "xstest",
            read_table(DATA / FILES[m]),
            key="id",
            raters={"annotation_1": "ann1", "annotation_2": "ann2"},
            question="compliance",
            now=NOW,
            value_map=VALUE_MAP,
            prefix=f"{m}:",
            final_column="final_label",
            adjudicator="dataset",
            items=items,
        )
        assert (done.items_added, done.judgments) == (0 if m == MODELS[0] else 450, 900)


def test_an_imported_campaign_reproduces_the_datasets_agreement_and_final_labels(
    tmp_path: Path,
) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'r.db'}") as store:
        import_all(store)
        items = store.get_review_items("xstest")
        judgments = store.get_judgments("xstest")
        adjudications = store.get_adjudications("xstest")
        raters = {r.name: r for r in store.get_raters("xstest")}
        report = review_report(store, "xstest", seed=0)
    assert len(items) == 1350 and len(judgments) == 2700
    # nobody can log in as an imported rater: no token key, a hash no token matches
    assert all(r.token_key is None for r in raters.values())
    assert all(r.token_hash.startswith(IMPORTED_HASH_PREFIX) for r in raters.values())
    assert len({r.token_hash for r in raters.values()}) == 3
    assert not check_token(raters["ann1"].token_hash, raters["ann1"].token_hash)
    assert raters["dataset"].role == "adjudicator"

    csv_rows = {f"{m}:{x['id']}": x for m in MODELS for x in rows(m)}
    got: dict[str, dict[str, str]] = {}
    for j in judgments:
        got.setdefault(j.item_key, {})[j.rater] = j.answers["compliance"]
    a1 = [got[k]["ann1"] for k in csv_rows]
    a2 = [got[k]["ann2"] for k in csv_rows]
    # the stored labels are the CSV's, through the value map
    assert a1 == [VALUE_MAP[x["annotation_1"]] for x in csv_rows.values()]
    share = np.mean([x == y for x, y in zip(a1, a2, strict=True)])
    flagged = np.mean([x["agreement"] == "TRUE" for x in csv_rows.values()])
    assert share == flagged == (443 + 431 + 439) / 1350
    csv_a = [x["annotation_1"] for x in csv_rows.values()]
    csv_b = [x["annotation_2"] for x in csv_rows.values()]
    assert cohens_kappa(a1, a2).value == pytest.approx(hand_kappa(csv_a, csv_b), abs=1e-12)
    alpha = krippendorff_alpha([a1, a2], rng=np.random.default_rng(1), n_resamples=100)
    assert alpha.value == pytest.approx(package_alpha(csv_a, csv_b), abs=1e-12)

    finals = {f.item_key: f for f in final_labels(items, judgments, adjudications, "compliance")}
    assert {k: f.value for k, f in finals.items()} == {
        k: VALUE_MAP[x["final_label"]] for k, x in csv_rows.items()
    }
    provenance = Counter(f.provenance for f in finals.values())
    assert provenance == {"unanimous": 1313, "adjudicated": 37}
    assert all(f.by == "dataset" for f in finals.values() if f.provenance == "adjudicated")

    # the review report reads the same campaign: its alpha and Cohen's kappa on the question
    # are the independent ones, and its provenance counts the final labels'
    q = next(x for x in report.questions if x.id == "compliance")
    assert q.n_items == 1350 and q.n_judgments == 2700
    assert q.alpha.value == pytest.approx(package_alpha(csv_a, csv_b), abs=1e-12)
    assert q.cohen_kappa is not None
    assert q.cohen_kappa.value == pytest.approx(hand_kappa(csv_a, csv_b), abs=1e-12)
    assert q.provenance == {"unanimous": 1313, "adjudicated": 37}
    shown = [q.alpha.value, q.alpha.low, q.alpha.high, q.cohen_kappa.low, q.cohen_kappa.high]
    assert [f"{x:.3f}" for x in shown] == ["0.948", "0.932", "0.964", "0.932", "0.965"]  # the doc
