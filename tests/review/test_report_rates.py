"""Item-level rates at the edges: 0% or 100% is a proportion of items with a Wilson interval
(a t interval would collapse to a point), and a share's interval stays within [0, 1]."""

from __future__ import annotations

import math

from calipers.review._report_stats import item_rate


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_unanimous_items_give_a_wilson_interval_not_a_point() -> None:
    per_item = {f"i{n}": [0.0, 0.0] for n in range(450)}
    est = item_rate(per_item)
    low, high = _wilson(0, 450)
    assert est.value == 0.0 and math.isclose(est.low, low, abs_tol=1e-12)
    assert math.isclose(est.high, high, rel_tol=1e-9) and est.high > 0.008
    per_item["i0"] = [1.0, 1.0]
    est = item_rate(per_item)
    low, high = _wilson(1, 450)
    assert math.isclose(est.low, low, rel_tol=1e-9) and math.isclose(est.high, high, rel_tol=1e-9)


def test_a_share_with_split_items_stays_in_the_unit_interval() -> None:
    per_item = {f"i{n}": [0.0, 0.0] for n in range(30)}
    per_item["i0"] = [1.0, 0.0]  # one split item: a t interval over item means goes below 0
    est = item_rate(per_item)
    assert est.low == 0.0 and 0 < est.value < est.high <= 1.0
    assert est.method == "cluster-t"
    likert = item_rate({"a": [1.0, 2.0], "b": [5.0, 5.0], "c": [3.0, 4.0]}, share=False)
    assert math.isclose(likert.value, (1.5 + 5 + 3.5) / 3)
