"""Item statistics and the saturation verdict on fake runs with known right/wrong patterns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from calipers.analysis._saturation import item_statistics, saturation
from calipers.errors import ConfigError

from .conftest import make_run, right_on, stored, write_yes_task


def test_near_perfect_models_within_noise_are_saturated(folder: Path) -> None:
    spec = write_yes_task(folder, 60)
    ids = [
        make_run(spec, right_on(range(60), "a")),
        make_run(spec, right_on(set(range(60)) - {0}, "b")),
        make_run(spec, right_on(set(range(60)) - {1, 2}, "c")),
    ]
    rep = saturation(stored(*ids), "answers")
    assert rep.saturated and not rep.separates and len(rep.top_tied) == 3
    assert rep.headroom == 0.0  # 60/60: the Wilson interval reaches 1
    assert rep.items.all_right.value == pytest.approx(57 / 60)
    assert rep.flags == [
        "saturated: top 3 models within noise; best score's interval reaches "
        "100.0%; 95% of items answered the same by every model"
    ]


def test_clearly_separated_models_are_not_flagged(folder: Path) -> None:
    spec = write_yes_task(folder, 60)
    ids = [
        make_run(spec, right_on(range(12), "weak")),
        make_run(spec, right_on(range(30), "mid")),
        make_run(spec, right_on(range(48), "strong")),
    ]
    rep = saturation(stored(*ids), "answers")
    assert rep.separates and not rep.saturated and rep.n_tie_groups == 3
    assert rep.flags == [] and rep.best_model.startswith("strong")
    assert rep.headroom == pytest.approx(1 - proportion_confint(48, 60, method="wilson")[1])
    items = {r.id: r for r in rep.items.items}
    assert items["q0"].difficulty == 1.0 and items["q0"].discrimination is None
    assert items["q20"].difficulty == pytest.approx(2 / 3) and items["q20"].n_right == 2
    # q20: weak wrong, mid and strong right; rest-scores 12, 29, 47
    expected = stats.pearsonr([0, 1, 1], [12, 29, 47]).statistic
    assert items["q20"].discrimination == pytest.approx(expected)
    same = proportion_confint(24, 60, method="wilson")  # 12 all right + 12 all wrong
    assert (rep.items.same.low, rep.items.same.high) == pytest.approx(same)


def test_no_separation_and_a_floor_of_items_everyone_misses(folder: Path) -> None:
    spec = write_yes_task(folder, 30)
    ids = [
        make_run(spec, right_on(range(0, 10), "a")),
        make_run(spec, right_on(range(5, 15), "b")),
        make_run(spec, right_on(range(10, 20), "c")),
    ]
    rep = saturation(stored(*ids), "answers")
    assert not rep.saturated and not rep.separates
    assert rep.flags == [
        "no separation: all 3 models within noise on 30 items",
        "33% of items every model gets wrong (check labels: calipers audit)",
    ]


def test_item_statistics_report_the_least_discriminating(folder: Path) -> None:
    spec = write_yes_task(folder, 20)
    ids = [
        make_run(spec, right_on(range(0, 10), "a")),
        make_run(spec, right_on(range(0, 15), "b")),
        make_run(spec, right_on({*range(0, 5), *range(15, 20)}, "c")),
    ]
    st = item_statistics(stored(*ids), "answers")
    assert st.n_items == 20 and st.n_runs == 3 and st.binary
    x = np.array(
        [
            [i < 10 for i in range(20)],
            [i < 15 for i in range(20)],
            [i < 5 or i >= 15 for i in range(20)],
        ],
        dtype=float,
    )
    worst = st.least_discriminating(3)
    rest = x.sum(axis=1)[:, None] - x
    r = [
        stats.pearsonr(x[:, j], rest[:, j]).statistic if x[:, j].std() else np.nan
        for j in range(20)
    ]
    order = sorted((v, f"q{j}") for j, v in enumerate(r) if not np.isnan(v))[:3]
    assert [w.id for w in worst] == [i for _, i in order]
    assert [w.discrimination for w in worst] == pytest.approx([v for v, _ in order])
    assert st.n_negative_discrimination == sum(v < 0 for v in r if not np.isnan(v))
    assert any("only 3 runs" in n for n in st.notes)


def test_runs_measured_differently_are_refused(folder: Path) -> None:
    spec = write_yes_task(folder, 10)
    ids = [
        make_run(spec, right_on(range(5), "a")),
        make_run(spec, right_on(range(5), "b"), chat_template=False),
    ]
    with pytest.raises(ConfigError, match="measured 'answers' differently"):
        saturation(stored(*ids), "answers")
