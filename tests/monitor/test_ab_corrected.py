"""`calipers ab --judge-corrected CAMPAIGN`: the candidate's win rate from a pairwise judge,
corrected by people's comparisons of a random sample of the same shadow requests (PPI++).
The plumbing is checked against the same estimator fed by hand: campaign answers mapped to
1 (candidate preferred, "b"), 0 (baseline, "a"), 0.5 (tie), joined to the judge's scores by
request. Also: a campaign that is not traffic pairs is refused with the reason."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from calipers.cli import cli
from calipers.review import pairwise_outcome
from calipers.stats import ppi_mean
from calipers.store import ImportedJudgment, OnlineScoreRecord, Store
from tests.monitor._ab_fixtures import Arm, shadow_traffic

PREF = "questions:\n  - type: preference\n"


def _invoke(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_the_corrected_win_rate_is_ppi_on_the_campaign_and_the_judge(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    rng = np.random.default_rng(5)
    with Store.open(url) as store:
        store.add_traffic(shadow_traffic(300, Arm(), Arm(), seed=21))
        pairs = sorted({t.pair_id for t in store.get_traffic()})
        # the judge prefers the candidate 70% of the time (ties 10%)
        judge = {p: float(rng.choice([1.0, 0.0, 0.5], p=[0.7, 0.2, 0.1])) for p in pairs}
        store.add_online_scores(
            [
                OnlineScoreRecord(pair_id=p, role="candidate", scorer="llm_judge_pairwise", value=v)
                for p, v in judge.items()
            ]
        )
    (tmp_path / "pref.yaml").write_text(PREF)
    code, _, err = _invoke("review", "create", "ab", "--store", url, "--from", "traffic",
                           "--kind", "pairwise", "--sample", "80", "--k", "1", "--questions",
                           str(tmp_path / "pref.yaml"))  # fmt: skip
    assert code == 0, err
    with Store.open(url) as store:
        store.add_rater("ab", "ann", "h-ann")
        items = store.get_review_items("ab")
        rows, truth = [], {}
        for i, it in enumerate(items):
            # people agree with the judge 80% of the time, else prefer the baseline
            says = "b" if judge[it.item_key] == 1.0 and rng.random() < 0.8 else "a"
            says = "tie" if i % 10 == 0 else says
            swapped = bool(i % 2)
            shown = {"tie": "tie", "a": "right" if swapped else "left",
                     "b": "left" if swapped else "right"}[says]  # fmt: skip
            assert pairwise_outcome(shown, swapped) == says  # what the rater saw, mapped back
            answers = {"preference": shown}
            rows.append(
                ImportedJudgment(
                    item_key=it.item_key, rater="ann", answers=answers, swapped=swapped
                )
            )
            truth[it.item_key] = {"a": 0.0, "b": 1.0, "tie": 0.5}[says]
        store.import_judgments("ab", rows)
    code, out, err = _invoke("ab", "--store", url, "--scorer", "llm_judge_pairwise", "--no-score",
                             "--judge-corrected", "ab", "--json")  # fmt: skip
    assert code in (0, 1, 2), err
    got = json.loads(out)["judge_corrected"]
    keys = sorted(truth)
    expected = ppi_mean(
        [truth[k] for k in keys],
        [judge[k] for k in keys],
        [judge[p] for p in pairs if p not in truth],
    )
    assert got["n"] == 80 and got["n_unlabelled"] == 220
    for field, est in (("corrected", expected.estimate), ("judge_only", expected.naive_judge),
                       ("human_only", expected.human_only)):  # fmt: skip
        for part in ("value", "low", "high"):
            assert math.isclose(got[field][part], getattr(est, part), rel_tol=1e-9), field
    assert got["corrected"]["value"] < got["judge_only"]["value"]  # people like it less
    code, out, _ = _invoke("ab", "--store", url, "--scorer", "llm_judge_pairwise", "--no-score",
                           "--judge-corrected", "ab")  # fmt: skip
    said = " ".join(out.split())
    assert "corrected by people (PPI++)" in said and "fixed-sample estimate" in said


def test_a_campaign_that_is_not_traffic_pairs_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Store.open(url) as store:
        store.add_traffic(shadow_traffic(200, Arm(), Arm(), seed=3))
    (tmp_path / "q.yaml").write_text(
        "questions:\n  - type: pass_fail\n    id: ok\n    prompt: Is it right?\n"
    )
    code, _, err = _invoke("review", "create", "one", "--store", url, "--from", "traffic",
                           "--k", "1", "--questions", str(tmp_path / "q.yaml"))  # fmt: skip
    assert code == 0, err
    code, _, err = _invoke("ab", "--store", url, "--no-score", "--judge-corrected", "one")
    assert code == 3 and "needs a pairwise campaign of gateway traffic" in err
