"""hh-rlhf's 2,312 human preferences through a pairwise campaign, and judges against them.

Each chosen/rejected pair becomes a pairwise item (a and b in a seeded order the source
records); the human choice is imported as a judgment, and the final labels give it back for
every pair. Two fake judges are imported in both orders (chosen shown first, rejected shown
first): one always picks the answer on the left, one the longer answer. Their agreement with
the humans, read back through the store and ``pairwise_outcome``, equals what the raw data
gives independently.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from calipers.review import (
    final_labels,
    pairwise_item,
    pairwise_outcome,
    parse_questions,
    preference_answer,
    store_campaign,
)
from calipers.stats import position_bias, wilson
from calipers.store import ImportedJudgment, JudgmentRecord, ReviewItemRecord, Store
from tests._data import DATA, needs_data

FILE = "hh_rlhf/harmless-base/test.jsonl.gz"
pytestmark = needs_data(FILE)
TURN = "\n\nAssistant:"
QUESTIONS = parse_questions({"questions": [{"type": "preference", "ties": True}]})
ORDERS = ("chosen-first", "rejected-first")


@dataclass(frozen=True)
class Pair:
    prompt: str
    chosen: str
    rejected: str


def split(chosen: str, rejected: str) -> Pair:
    """The shared dialogue up to the last assistant turn where the two differ, and each
    transcript's rest (in 2,307 of the 2,312 pairs only the final reply differs)."""
    same = next(
        (i for i, (x, y) in enumerate(zip(chosen, rejected, strict=False)) if x != y),
        min(len(chosen), len(rejected)),
    )
    cut = chosen[:same].rfind(TURN)
    assert cut >= 0
    rest = cut + len(TURN)
    return Pair(chosen[:cut], chosen[rest:].strip(), rejected[rest:].strip())


def load_pairs() -> list[Pair]:
    with gzip.open(DATA / FILE, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [split(r["chosen"], r["rejected"]) for r in rows]


def first_judge(left: str, right: str) -> str:
    return "left"


def long_judge(left: str, right: str) -> str:
    return "left" if len(left) > len(right) else "right" if len(right) > len(left) else "tie"


JUDGES = {"first": first_judge, "long": long_judge}


def judged(item: ReviewItemRecord, judge: str, order: str) -> ImportedJudgment:
    """The judge's answer with the chosen reply (or the rejected one) on the left."""
    chosen_is_a = item.source["a"] == "chosen"
    swapped = chosen_is_a == (order == "rejected-first")  # True: b was on the left
    p = item.payload
    left, right = (p["b"], p["a"]) if swapped else (p["a"], p["b"])
    answer = JUDGES[judge](left, right)
    return ImportedJudgment(
        item_key=item.item_key,
        rater=f"{judge}/{order}",
        answers={"preference": answer},
        swapped=swapped,
    )


@dataclass
class Campaign:
    pairs: list[Pair]
    items: list[ReviewItemRecord]
    judgments: list[JudgmentRecord]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Campaign]:
    pairs = load_pairs()
    rng = np.random.default_rng(18)
    items = [
        pairwise_item(
            f"hh-{i}",
            p.prompt,
            ("chosen", p.chosen),
            ("rejected", p.rejected),
            rng,
            source={"file": Path(FILE).name, "row": i},
        )
        for i, p in enumerate(pairs)
    ]
    raters = ["human"] + [f"{j}/{o}" for j in JUDGES for o in ORDERS]
    rows: list[ImportedJudgment] = []
    for item in items:
        answer, swapped = preference_answer(item, "chosen")
        rows.append(
            ImportedJudgment(
                item_key=item.item_key,
                rater="human",
                answers={"preference": answer},
                swapped=swapped,
            )
        )
        rows += [judged(item, j, o) for j in JUDGES for o in ORDERS]
    url = f"sqlite:///{tmp_path_factory.mktemp('hh') / 'r.db'}"
    with Store.open(url) as store:
        store_campaign(store, "hh", kind="pairwise", questions=QUESTIONS, queue=items, k=5)
        for name in raters:
            store.add_rater("hh", name, f"imported-no-login:{name}", pool="imported")
        assert store.import_judgments("hh", rows) == 5 * len(pairs)
        yield Campaign(pairs, store.get_review_items("hh"), store.get_judgments("hh"))


def test_the_pairs_become_pairwise_items_in_a_seeded_order(campaign: Campaign) -> None:
    items, pairs = campaign.items, campaign.pairs
    assert len(items) == len(pairs) == 2312
    for item, p in zip(items, pairs, strict=True):
        assert {item.source["a"], item.source["b"]} == {"chosen", "rejected"}
        text = {"chosen": p.chosen, "rejected": p.rejected}
        assert item.payload == {
            "prompt": p.prompt,
            "a": text[item.source["a"]],
            "b": text[item.source["b"]],
        }
        assert item.source["a_is_second_given"] == (item.source["a"] == "rejected")
    a_chosen = sum(i.source["a"] == "chosen" for i in items)
    assert 0.46 < a_chosen / len(items) < 0.54  # a fair coin, seeded
    # the same seed gives the same order
    rng = np.random.default_rng(18)
    again = [bool(rng.integers(2)) for _ in items]
    assert again == [i.source["a_is_second_given"] for i in items]


def test_final_labels_give_back_the_human_choice_for_every_pair(campaign: Campaign) -> None:
    human = [j for j in campaign.judgments if j.rater == "human"]
    assert len(human) == 2312
    finals = final_labels(campaign.items, human, [], "preference")
    source = {i.item_key: i.source for i in campaign.items}
    assert len(finals) == 2312
    assert all(f.provenance == "single" for f in finals)
    assert all(source[f.item_key][f.value] == "chosen" for f in finals)
    for j in human:
        assert source[j.item_key][pairwise_outcome(j.answers["preference"], j.swapped)] == "chosen"


def agreement(campaign: Campaign, rater: str) -> tuple[int, int]:
    source = {i.item_key: i.source for i in campaign.items}
    mine = [j for j in campaign.judgments if j.rater == rater]
    won = [
        source[j.item_key].get(pairwise_outcome(j.answers["preference"], j.swapped)) for j in mine
    ]
    return sum(w == "chosen" for w in won), len(mine)


def first_preferred(campaign: Campaign, rater: str) -> list[float]:
    by_item = {j.item_key: j.answers["preference"] for j in campaign.judgments if j.rater == rater}
    value = {"left": 1.0, "right": 0.0, "tie": 0.5}
    return [value[by_item[i.item_key]] for i in campaign.items]


def test_a_judge_that_always_picks_the_first_answer_agrees_half_the_time(
    campaign: Campaign,
) -> None:
    k1, n1 = agreement(campaign, "first/chosen-first")
    k2, n2 = agreement(campaign, "first/rejected-first")
    assert (k1, n1, k2, n2) == (2312, 2312, 0, 2312)
    overall = wilson(k1 + k2, n1 + n2)
    assert overall.value == 0.5 and overall.low < 0.5 < overall.high
    bias = position_bias(
        first_preferred(campaign, "first/chosen-first"),
        first_preferred(campaign, "first/rejected-first"),
    )
    assert bias.first_share.value == 1.0 and bias.first_share.n == 2312
    assert bias.consistency.value == 0.0
    assert bias.p_value < 1e-12


def test_a_judge_that_prefers_the_longer_answer_agrees_as_the_lengths_say(
    campaign: Campaign,
) -> None:
    longer = Counter(
        "chosen"
        if len(p.chosen) > len(p.rejected)
        else "rejected"
        if len(p.rejected) > len(p.chosen)
        else "tie"
        for p in campaign.pairs
    )
    for order in ORDERS:
        k, n = agreement(campaign, f"long/{order}")
        assert (k, n) == (longer["chosen"], 2312)
    # harmless-base: the preferred reply is the shorter one more often than not (the figures
    # docs/review.md shows)
    assert (longer["chosen"], longer["rejected"], longer["tie"]) == (1025, 1276, 11)
    bias = position_bias(
        first_preferred(campaign, "long/chosen-first"),
        first_preferred(campaign, "long/rejected-first"),
    )
    assert bias.consistency.value == 1.0
    assert bias.n_ties == longer["tie"]
