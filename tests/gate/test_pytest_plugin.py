"""The pytest plugin, as a user meets it: a test file using ``calipers_eval``, run by pytest
with the plugin loaded from its entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from tests.gate._helpers import inputs, items_needed, newcombe, right_on, task_file

pytest_plugins = ["pytester"]


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    found = [e.value for e in entry_points(group="pytest11") if e.name == "calipers"]
    assert found == ["calipers.pytest_plugin"]


def test_user_tests_assert_not_worse_than(pytester: pytest.Pytester) -> None:
    spec = task_file(pytester.path, "qa", 400)
    base = right_on(pytester.path, "base", inputs("qa", range(300)))
    same = right_on(pytester.path, "same", inputs("qa", range(300)))
    worse = right_on(pytester.path, "worse", inputs("qa", range(150)))
    need = items_needed([0.0] * 30, 0.02)  # both models score 0 on every item
    low, high = newcombe(150, 150, 0, 100)
    pytester.makepyfile(f"""
        def test_inconclusive_is_falsy_unless_allowed(calipers_eval):
            base = calipers_eval(model="fake:echo", task="dyn_arithmetic", limit=30)
            cand = calipers_eval(model="fake:const=#### 4", task="dyn_arithmetic", limit=30)
            assert base.score().value == cand.score().value == 0.0
            check = cand.not_worse_than(base, by=0.02)
            assert not check and check.verdict == "inconclusive"
            assert check.items_needed == {need}
            assert "needs about {need} items, has 30" in repr(check)
            assert cand.not_worse_than(base, by=0.02, allow_inconclusive=True)

        def test_identical_model_passes(calipers_eval):
            base = calipers_eval(model="{base}", task="{spec}")
            cand = calipers_eval(model="{same}", task="{spec}")
            assert cand.not_worse_than(base, by=0.02)

        def test_regression_fails(calipers_eval):
            base = calipers_eval(model="{base}", task="{spec}")
            cand = calipers_eval(model="{worse}", task="{spec}")
            assert cand.not_worse_than(base, by=0.02, allow_inconclusive=True)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    assert (
        f"E       assert <calipers gate FAIL, inconclusive allowed: qa/exact_match fail "
        f"-37.5 points [{100 * low:+.1f}, {100 * high:+.1f}] vs allowed drop -2.0 points>"
    ) in result.stdout.str()
