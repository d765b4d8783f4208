"""Calibration of a judge taxonomy against human category labels: the gate (enough labels
and kappa's lower end at least MIN_KAPPA), kappa checked by hand, per-category precision and
recall, and the whole protocol through a real review campaign."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from calipers.analysis import (
    MIN_CALIBRATION_ITEMS,
    MIN_KAPPA,
    ErrorTaxonomy,
    calibrate_error_taxonomy,
    error_campaign_labels,
    error_review_questions,
    error_review_rows,
    error_taxonomy,
)
from calipers.review import final_labels, items_from_file, parse_questions, store_campaign
from calipers.stats import wilson
from calipers.store import SampleRecord, Store
from tests.error_coding._planted import planted_notes
from tests.error_coding.conftest import failing_samples

Key = tuple[str, str, int]


@pytest.fixture(scope="module")
def planted() -> tuple[ErrorTaxonomy, list[SampleRecord]]:
    _truth, _written, notes = planted_notes(30, 0.0, 2)
    samples = failing_samples(notes, run_id="runX")
    return error_taxonomy(samples, "codingtest:cal"), samples


def cyclic_labels(tax: ErrorTaxonomy, per: int, wrong: int) -> dict[Key, str]:
    """``per`` samples of each category; people agree with the judge on all but ``wrong`` of
    them, which they put in the next category (A -> B -> C -> D -> A)."""
    names = [c.name for c in tax.categories]
    out: dict[Key, str] = {}
    for i, name in enumerate(names):
        keys = [s.key for s in tax.samples if s.category == name][:per]
        for j, key in enumerate(keys):
            out[key] = names[(i + 1) % len(names)] if j < wrong else name
    return out


def test_high_agreement_is_calibrated_and_kappa_is_right(planted) -> None:  # type: ignore[no-untyped-def]
    tax, _samples = planted
    assert tax.k == 4 and tax.status == "uncalibrated"
    cal = calibrate_error_taxonomy(tax, cyclic_labels(tax, 12, 1), source="hand")
    c = cal.calibration
    assert c is not None
    # by hand: 48 items, 44 agree; every margin is 12 of 48 for both, so p_e = 4 * (1/4)^2
    p_o, p_e = 44 / 48, 4 * (12 / 48) ** 2
    assert c.kappa.value == pytest.approx((p_o - p_e) / (1 - p_e))  # 0.8889
    assert c.n_matched == 48 >= MIN_CALIBRATION_ITEMS
    assert c.kappa.low >= MIN_KAPPA and c.calibrated and cal.status == "calibrated"
    assert c.exact_agreement == wilson(44, 48)
    for a in c.per_category:
        assert (a.n_judge, a.n_human, a.n_both) == (12, 12, 11)
        assert a.precision == wilson(11, 12) and a.recall == wilson(11, 12)
    assert sum(map(sum, c.confusion)) == 48
    assert all(lab.detail.endswith("[judge, calibrated]") for lab in cal.labels().values())
    assert tax.status == "uncalibrated"  # the original is unchanged


def test_low_agreement_is_uncalibrated(planted) -> None:  # type: ignore[no-untyped-def]
    tax, _samples = planted
    c = calibrate_error_taxonomy(tax, cyclic_labels(tax, 12, 6)).calibration
    assert c is not None
    assert c.kappa.value == pytest.approx((24 / 48 - 0.25) / 0.75)  # 0.333
    assert not c.calibrated and "lower end below 0.6" in c.reason


def test_too_few_labels_are_uncalibrated_however_good(planted) -> None:  # type: ignore[no-untyped-def]
    tax, _samples = planted
    c = calibrate_error_taxonomy(tax, cyclic_labels(tax, 9, 0)).calibration  # 36 items
    assert c is not None and c.kappa.value == pytest.approx(1.0)
    assert not c.calibrated and "36 human-labelled samples, fewer than 40" in c.reason


def test_free_text_labels_map_onto_categories(planted) -> None:  # type: ignore[no-untyped-def]
    tax, _samples = planted
    labels = cyclic_labels(tax, 12, 0)
    renamed = {k: f"people call it {v}" for k, v in labels.items()}
    other = {("t", "not-coded", 0): "whatever"}
    mapping = {f"people call it {c.name}": c.name for c in tax.categories}
    c = calibrate_error_taxonomy(tax, {**renamed, **other}, mapping=mapping).calibration
    assert c is not None and c.kappa.value == pytest.approx(1.0)
    assert (c.n_labels, c.n_matched, c.n_unmatched) == (49, 48, 1)
    unmapped = calibrate_error_taxonomy(tax, renamed).calibration
    assert unmapped is not None and unmapped.exact_agreement.value == 0.0


def test_protocol_through_a_review_campaign(planted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """error_review_rows -> a file campaign -> two raters -> final labels -> calibration."""
    tax, samples = planted
    rows = error_review_rows(tax, samples, "runX")
    assert len(rows) == 120 and not any("note" in r or "category" in r for r in rows)
    path = tmp_path / "failures.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    got = items_from_file(path, kind="single", fields={"reference": "reference"}, key="key")
    questions = parse_questions(error_review_questions(tax))
    truth = cyclic_labels(tax, 30, 3)  # every coded sample, 3 of 30 per category moved
    with Store.open() as store:
        store_campaign(store, "errs", kind="single", questions=questions, queue=got.items, k=2)
        now = datetime(2026, 1, 1, tzinfo=UTC)
        for rater in ("ann", "bob"):
            store.add_rater("errs", rater, token_hash=f"h-{rater}")
            while (lease := store.lease_next("errs", rater, now=now, lease_s=600)) is not None:
                now += timedelta(seconds=1)
                item = next(it for it in got.items if it.item_key == lease.item_key)
                row = item.source["row"]
                key = (row["task"], row["sample_id"], row["epoch"])
                answer = {"error_category": truth[key], "notes": ""}
                store.submit("errs", rater, lease.assignment_id, answer, seconds=20, now=now)
        camp = store.get_campaign("errs")
        items = store.get_review_items("errs")
        finals = final_labels(
            items, store.get_judgments("errs"), store.get_adjudications("errs"), "error_category"
        )
    labels, unresolved = error_campaign_labels("errs", camp.questions, items, finals, run_id="runX")
    assert unresolved == 0 and len(labels) == 120
    cal = calibrate_error_taxonomy(tax, labels, source="campaign errs")
    c = cal.calibration
    assert c is not None and c.n_matched == 120 and c.source == "campaign errs"
    # by hand: 108 of 120 agree, all margins 30 of 120
    assert c.kappa.value == pytest.approx((108 / 120 - 0.25) / 0.75)  # 0.8667
    assert c.calibrated
    with pytest.raises(Exception, match="no final"):
        error_campaign_labels("errs", camp.questions, items, finals, run_id="other-run")
