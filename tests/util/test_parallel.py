"""``parallel_map``: the items' order, the first exception, and work really done at once."""

from __future__ import annotations

import threading

import pytest

from calipers._util.parallel import parallel_map


def test_results_come_back_in_the_items_order() -> None:
    import time

    def slow_first(i: int) -> int:
        time.sleep(0.05 if i == 0 else 0.0)  # the first item finishes last
        return i * i

    assert parallel_map(slow_first, list(range(7)), workers=3) == [i * i for i in range(7)]
    assert parallel_map(slow_first, [], workers=3) == []


def test_two_items_run_at_the_same_time() -> None:
    both = threading.Barrier(2, timeout=5)  # broken (an error) if the items ran one by one
    assert parallel_map(lambda i: both.wait() >= 0 and i, [1, 2], workers=2) == [1, 2]


def test_an_items_exception_is_raised() -> None:
    def fail_on_three(i: int) -> int:
        if i == 3:
            raise ValueError("item 3")
        return i

    with pytest.raises(ValueError, match="item 3"):
        parallel_map(fail_on_three, list(range(6)), workers=2)


def test_one_worker_runs_in_the_callers_thread() -> None:
    me = threading.get_ident()
    assert parallel_map(lambda _: threading.get_ident(), [0, 1], workers=1) == [me, me]
