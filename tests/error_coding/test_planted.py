"""The judge taxonomy recovers planted categories: 4 kinds of failure x 30 samples, the
judge's notes noisy paraphrases of their kind (wordings that share few words, fillers shared
by every kind) and 10% of them written for another kind on purpose.

Agreement is computed here, independently of calipers: the adjusted Rand index
(scikit-learn) and the best one-to-one mapping of categories onto planted kinds (Hungarian
assignment, scipy). The figures stated in docs/errors-open-coding.md are these thresholds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score

from calipers.analysis import error_taxonomy
from calipers.stats import wilson
from tests.error_coding._planted import CATEGORIES, planted_notes
from tests.error_coding.conftest import failing_samples

ARI_WRITTEN = 0.90  # against what each note says: the clustering's own error
ACCURACY_TRUTH = 0.85  # against the planted kind: at most 1 - 10% wrong notes, less clustering
SEEDS = (0, 1, 2, 3, 4)


def best_mapping_accuracy(truth: list[str], found: list[str]) -> float:
    t_names, f_names = sorted(set(truth)), sorted(set(found))
    table = np.zeros((len(f_names), len(t_names)))
    for t, f in zip(truth, found, strict=True):
        table[f_names.index(f), t_names.index(t)] += 1
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / len(truth))


def taxonomy_of(seed: int, per: int = 30, wrong: float = 0.1):  # type: ignore[no-untyped-def]
    truth, written, notes = planted_notes(per, wrong, seed)
    samples = failing_samples(notes, task=f"planted{seed}")
    tax = error_taxonomy(samples, "codingtest:a", seed=0)
    labels = tax.labels()
    found = [labels[s.key].type for s in samples]
    return truth, written, notes, tax, found


@pytest.mark.parametrize("seed", SEEDS)
def test_planted_categories_recovered(seed: int) -> None:
    truth, written, _notes, tax, found = taxonomy_of(seed)
    assert tax.k == 4 and len(tax.categories) == 4
    assert tax.n_coded == 120 and tax.n_judge_errors == 0
    assert adjusted_rand_score(written, found) >= ARI_WRITTEN
    acc = best_mapping_accuracy(truth, found)
    wrong_notes = sum(CATEGORIES[w] != t for w, t in zip(written, truth, strict=True))
    assert acc >= ACCURACY_TRUTH
    assert acc <= 1 - wrong_notes / 120 + 1e-9  # a wrong note cannot be recovered


def test_names_carry_the_planted_words() -> None:
    truth, _written, _notes, tax, found = taxonomy_of(2)
    key_words = {
        "arithmetic": {"arithmetic", "calculation", "error", "numbers", "wrong"},
        "format": {"format", "output", "ignored"},
        "refusal": {"refused", "harmless", "request", "task", "declined"},
        "invented": {"fact", "facts", "context", "invented", "stated", "source"},
    }
    for cat in tax.categories:
        members = [t for t, f in zip(truth, found, strict=True) if f == cat.name]
        planted = max(set(members), key=members.count)
        assert set(cat.name.split("_")) & key_words[planted], (cat.name, planted)
        assert cat.named_by == "terms" and len(cat.examples) == 8


def test_shares_cover_the_planted_share() -> None:
    _truth, _written, _notes, tax, _found = taxonomy_of(3)
    for cat in tax.categories:
        assert cat.share == wilson(cat.n, 120)
        assert cat.share.low <= 0.25 <= cat.share.high
    assert sum(c.n for c in tax.categories) == 120


def test_uncalibrated_labels_say_so() -> None:
    _t, _w, notes, tax, _f = taxonomy_of(0, per=10)
    assert tax.status == "uncalibrated" and tax.calibration is None
    for label in tax.labels().values():
        assert label.method == "judge"
        assert label.detail.endswith("[judge, uncalibrated]")
        assert label.detail.removesuffix(" [judge, uncalibrated]") in notes
    assert tax.to_dict()["status"] == "uncalibrated"
