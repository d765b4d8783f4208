"""Leaderboard rank intervals, tie groups and saturation, checked against a plain reference."""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from calipers.stats import _ranking
from calipers.stats._proportion import wilson
from calipers.stats._ranking import Leaderboard, rank_models

Array = npt.NDArray[np.float64]


def _binary(p: float, n: int, seed: int) -> Array:
    """Exactly round(p * n) ones among n items, in a random order."""
    x = np.zeros(n)
    x[: round(p * n)] = 1.0
    return np.random.default_rng(seed).permutation(x)


def _by_name(board: Leaderboard) -> dict[str, tuple[int, int, int, int]]:
    return {m.name: (m.rank, m.rank_low, m.rank_high, m.tie_group) for m in board.models}


def test_clearly_separated_models_get_point_rank_intervals_and_own_groups() -> None:
    scores = {"c": _binary(0.5, 2000, 1), "a": _binary(0.9, 2000, 2), "b": _binary(0.7, 2000, 3)}
    board = rank_models(scores, rng=np.random.default_rng(0))
    assert [m.name for m in board.models] == ["a", "b", "c"]
    assert _by_name(board) == {"a": (1, 1, 1, 1), "b": (2, 2, 2, 2), "c": (3, 3, 3, 3)}
    assert board.models[0].score == wilson(1800, 2000)
    assert (board.n_items, board.n_resamples) == (2000, 1000)
    assert board.method == "paired bootstrap over items, 95% percentile rank intervals"
    assert not board.saturated and board.saturation_note is None


def test_identical_models_share_rank_one_a_tie_group_and_interval_one_to_two() -> None:
    x = _binary(0.6, 500, 4)
    board = rank_models(
        {"b": x, "a": x.copy(), "c": _binary(0.3, 500, 5)}, rng=np.random.default_rng(0)
    )
    assert [m.name for m in board.models] == ["a", "b", "c"]  # equal scores: by name
    assert _by_name(board) == {"a": (1, 1, 2, 1), "b": (1, 1, 2, 1), "c": (3, 3, 3, 2)}
    assert board.saturated
    assert board.saturation_note is not None and "top 2 models (a, b)" in board.saturation_note


def test_identical_continuous_models_tie_despite_float_summation_order() -> None:
    x = np.random.default_rng(6).random(3000) * 0.3 + 0.1
    board = rank_models({f"m{i}": x.copy() for i in range(5)}, rng=np.random.default_rng(1))
    assert {(m.rank, m.rank_low, m.rank_high, m.tie_group) for m in board.models} == {(1, 1, 5, 1)}


def test_a_model_better_on_every_item_is_always_first_even_by_a_hair() -> None:
    rng = np.random.default_rng(7)
    base = rng.random(200)
    noisy = base - np.abs(rng.normal(0, 0.3, 200))
    scores = {"base": base, "noisy": noisy, "best": base + 0.001}
    board = rank_models(scores, rng=np.random.default_rng(2))
    best = board.models[0]
    assert (best.name, best.rank, best.rank_low, best.rank_high) == ("best", 1, 1, 1)
    # Paired: the 0.001 edge is separable although the score intervals overlap almost fully.
    second = next(m for m in board.models if m.name == "base")
    assert best.tie_group == 1 and second.tie_group == 2
    assert best.score.low < second.score.high


def test_same_seed_same_board_and_other_seed_differs() -> None:
    rng = np.random.default_rng(8)
    scores = {f"m{i}": rng.random(300) + 0.01 * i for i in range(4)}
    a = rank_models(scores, rng=np.random.default_rng(3))
    b = rank_models(scores, rng=np.random.default_rng(3))
    c = rank_models(scores, rng=np.random.default_rng(4))
    assert a == b
    assert a != c
    assert all(m.score.method == "bootstrap-percentile" for m in a.models)


def test_chunked_resampling_gives_the_same_board(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    scores = {f"m{i}": rng.random(101) + 0.03 * i for i in range(6)}
    whole = rank_models(scores, rng=np.random.default_rng(5), n_resamples=300)
    monkeypatch.setattr(_ranking, "_CHUNK_CELLS", 7 * 101)  # 7 resamples per chunk
    chunked = rank_models(scores, rng=np.random.default_rng(5), n_resamples=300)
    assert _by_name(chunked) == _by_name(whole)
    # Only the BLAS summation order differs between chunkings: the last bit, not the draws.
    for a, b in zip(chunked.models, whole.models, strict=True):
        assert (a.score.low, a.score.high) == pytest.approx((b.score.low, b.score.high), 1e-12)


def test_nan_is_unscored_not_wrong_and_all_nan_model_is_last_with_open_interval() -> None:
    half = np.where(np.arange(400) % 2 == 0, 1.0, np.nan)
    scores = {
        "empty": np.full(400, np.nan),
        "half": half,
        "low": _binary(0.2, 400, 10),
        "mid": _binary(0.5, 400, 11),
    }
    board = rank_models(scores, rng=np.random.default_rng(0))
    assert [m.name for m in board.models] == ["half", "mid", "low", "empty"]
    top, empty = board.models[0], board.models[-1]
    assert top.score == wilson(200, 200)
    assert empty.score.is_empty and empty.score.n == 0 and math.isnan(empty.score.value)
    assert (empty.rank, empty.rank_low, empty.rank_high, empty.tie_group) == (4, 1, 4, 4)
    assert _by_name(board)["low"] == (3, 3, 3, 3)


def test_no_scored_item_anywhere_is_an_empty_board_not_zeros() -> None:
    board = rank_models(
        {"a": [np.nan, np.nan], "b": [np.nan, np.nan]}, rng=np.random.default_rng(0)
    )
    assert all(
        m.score.is_empty and (m.rank, m.rank_low, m.rank_high) == (1, 1, 2) for m in board.models
    )
    assert not board.saturated


def test_lower_is_better_reverses_the_order() -> None:
    scores = {"fast": _binary(0.1, 1000, 12), "slow": _binary(0.5, 1000, 13)}
    board = rank_models(scores, rng=np.random.default_rng(0), higher_is_better=False)
    assert [m.name for m in board.models] == ["fast", "slow"]
    assert _by_name(board) == {"fast": (1, 1, 1, 1), "slow": (2, 2, 2, 2)}


def _reference(
    scores: dict[str, Array], seed: int, n_resamples: int, c: float
) -> dict[str, tuple[int, int, int, int]]:
    """Rank interval and tie group the slow, obvious way: one resample at a time."""
    names = list(scores)
    n = len(scores[names[0]])
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    means = []
    for b in range(n_resamples):
        row = []
        for name in names:
            kept = [v for v in scores[name][idx[b]] if not math.isnan(v)]
            row.append(sum(kept) / len(kept) if kept else -math.inf)
        means.append(row)
    point = {k: float(np.nanmean(scores[k])) for k in names}
    out: dict[str, tuple[int, int, int]] = {}
    for j, name in enumerate(names):
        best = sorted(1 + sum(r[k] > r[j] for k in range(len(names))) for r in means)
        worst = sorted(sum(r[k] >= r[j] for k in range(len(names))) for r in means)
        rank = 1 + sum(point[k] > point[name] for k in names)
        # Empirical quantiles: the ceil(q * B)-th smallest resampled rank.
        low = best[math.ceil((1 - c) / 2 * n_resamples) - 1]
        high = worst[math.ceil((1 + c) / 2 * n_resamples) - 1]
        out[name] = (rank, min(low, rank), max(high, rank))
    order = sorted(names, key=lambda k: -point[k])
    group, leader, groups, lower = 0, "", {}, 0.0
    for name in order:
        if leader:
            i, j = names.index(leader), names.index(name)
            diffs = sorted(r[i] - r[j] for r in means)
            lower = diffs[math.ceil((1 - c) / 2 * n_resamples) - 1]
        if not leader or lower > 0:
            group, leader = group + 1, name
        groups[name] = group
    return {k: (*out[k], groups[k]) for k in names}


@pytest.mark.parametrize("step", [0.02, 0.01])
def test_rank_intervals_and_groups_match_a_plain_loop_reference(step: float) -> None:
    rng = np.random.default_rng(14)
    scores = {f"m{i}": rng.normal(step * i, 0.5, 120) for i in range(6)}
    scores["m2"][rng.random(120) < 0.2] = np.nan
    scores["m4"][:100] = np.nan  # few scored items: some resamples have none
    board = rank_models(scores, rng=np.random.default_rng(15), n_resamples=150, confidence=0.9)
    ref = _reference(scores, 15, 150, 0.9)
    assert _by_name(board) == ref
    widths = [hi - lo for _, lo, hi, _ in ref.values()]
    assert max(widths) >= 3  # the case is not trivially degenerate


def test_scores_that_differ_only_by_rounding_are_tied() -> None:
    x = np.random.default_rng(16).random(500)
    board = rank_models({"a": x, "b": x + 1e-15}, rng=np.random.default_rng(0))
    assert _by_name(board) == {"a": (1, 1, 2, 1), "b": (1, 1, 2, 1)}


def test_the_point_rank_is_always_inside_its_interval() -> None:
    # At 20% confidence the percentile intervals alone would exclude these point ranks:
    # three models tied at a mean of 2 ("c" alone would start at rank 2), and "a", third by
    # its mean, usually beats the others when their few scored items are not drawn.
    nan = np.nan
    tied: dict[str, list[float]] = {"a": [3, 3, 1, 1], "b": [nan, nan, 2, 2], "c": [2, 3, 2, 1]}
    board = rank_models(tied, rng=np.random.default_rng(1), confidence=0.2)
    assert all(m.rank == 1 and m.rank_low == 1 for m in board.models)
    sparse: dict[str, list[float]] = {"a": [0, 1, 3], "b": [nan, nan, 2], "c": [nan, 3, nan]}
    board = rank_models(sparse, rng=np.random.default_rng(1), confidence=0.2)
    assert _by_name(board)["a"][:3] == (3, 2, 3)


def test_a_resample_where_both_models_have_no_score_is_a_tie_not_nan() -> None:
    # Both are scored on the same 4 of 150 items; about 1.7% of resamples draw none of them.
    a, b = np.full(150, np.nan), np.full(150, np.nan)
    a[:4], b[:4] = 1.0, 0.0
    board = rank_models({"a": a, "b": b}, rng=np.random.default_rng(0))
    assert _by_name(board) == {"a": (1, 1, 1, 1), "b": (2, 2, 2, 2)}


def test_non_binary_score_interval_is_the_percentile_of_the_paired_resamples() -> None:
    rng = np.random.default_rng(17)
    x, y = rng.exponential(size=80), rng.exponential(size=80)
    x[:5] = np.nan
    board = rank_models({"x": x, "y": y}, rng=np.random.default_rng(3), n_resamples=400)
    idx = np.random.default_rng(3).integers(0, 80, size=(400, 80))
    means = [np.nanmean(x[row]) for row in idx]
    est = next(m.score for m in board.models if m.name == "x")
    assert (est.method, est.n, est.value) == ("bootstrap-percentile", 75, float(np.nanmean(x)))
    assert (est.low, est.high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))


def test_saturation_at_the_ceiling_and_not_below_it() -> None:
    near = {"top": _binary(0.995, 2000, 16), "next": _binary(0.8, 2000, 17)}
    board = rank_models(near, rng=np.random.default_rng(0))
    assert board.saturated and board.models[0].tie_group == 1 and board.models[1].tie_group == 2
    assert board.saturation_note is not None and "ceiling 1" in board.saturation_note
    far = {"top": _binary(0.9, 2000, 16), "next": _binary(0.8, 2000, 17)}
    assert not rank_models(far, rng=np.random.default_rng(0)).saturated


def test_ceiling_needs_scores_in_unit_range_and_flips_for_lower_is_better() -> None:
    wide = {"top": _binary(0.995, 2000, 18) * 100, "next": _binary(0.8, 2000, 19) * 100}
    assert not rank_models(wide, rng=np.random.default_rng(0)).saturated
    errors = {"good": _binary(0.005, 2000, 20), "bad": _binary(0.2, 2000, 21)}
    board = rank_models(errors, rng=np.random.default_rng(0), higher_is_better=False)
    assert board.models[0].name == "good" and board.saturated
    assert board.saturation_note is not None and "ceiling 0" in board.saturation_note


def test_one_scored_non_binary_item_has_an_unbounded_interval_and_saturates() -> None:
    board = rank_models(
        {"one": [0.5, np.nan, np.nan], "other": [0.2, 0.3, 0.1]}, rng=np.random.default_rng(0)
    )
    one = board.models[0].score
    assert (one.value, one.low, one.high, one.n) == (0.5, -math.inf, math.inf, 1)
    assert one.method == "bootstrap-undefined"
    assert board.saturation_note == (
        "Saturated: the top 2 models (one, other) cannot be separated at 95% confidence on 3 "
        "items; the best score's 95% interval reaches inf, within 0.02 of the ceiling 1 or "
        "past it."
    )


def test_validation_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="at least one model"):
        rank_models({}, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"'a': 3, 'b': 2"):
        rank_models({"a": [1, 0, 1], "b": [1, 0]}, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="infinite"):
        rank_models({"a": [1.0, math.inf]}, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_resamples"):
        rank_models({"a": [1.0]}, rng=np.random.default_rng(0), n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        rank_models({"a": [1.0]}, rng=np.random.default_rng(0), confidence=1.0)


def test_doc_example_runs_and_prints_what_its_comments_say() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "leaderboard-statistics.md"
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {})
    promised = re.findall(r"^# (.*)$|print\(.*\)\s+# (.*)$", code, re.M)
    assert out.getvalue().splitlines() == [a or b for a, b in promised]
