"""pytest plugin: evaluate models inside tests and assert that a candidate is not worse.

::

    def test_candidate_not_worse(calipers_eval):
        base = calipers_eval(model="fake:echo", task="dyn_arithmetic", limit=30)
        cand = calipers_eval(model="fake:const=#### 4", task="dyn_arithmetic", limit=30)
        assert cand.not_worse_than(base, by=0.02)

``not_worse_than`` is the test of ``calipers gate`` (see ``docs/gate.md``): it returns a
:class:`GateCheck` that is true only when the candidate is shown not worse than the baseline by
more than ``by``; a regression and an inconclusive result (too few items to tell) are false
(``allow_inconclusive=True`` accepts the latter), and its repr says why. Runs go to one store per
test session (a temporary SQLite file), or to ``CALIPERS_STORE`` when that is set.

Registered through the ``pytest11`` entry point, so installing calipers is enough. calipers
itself is imported only when a fixture is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from calipers.analysis import GateResult, StoredRun
    from calipers.models import ModelProvider
    from calipers.types import Estimate

__all__ = ["EvalResult", "GateCheck", "calipers_eval", "calipers_store_url"]


class GateCheck:
    """The verdict of ``not_worse_than``: truthy when it passes; the repr explains it."""

    def __init__(self, result: GateResult, *, allow_inconclusive: bool = False) -> None:
        self.result = result
        self.allow_inconclusive = allow_inconclusive

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` or ``inconclusive``."""
        return self.result.verdict

    @property
    def items_needed(self) -> int | None:
        """The most items an inconclusive comparison needs to decide (None otherwise)."""
        needs = [r.items_needed for r in self.result.rows if r.items_needed is not None]
        return max(needs) if needs else None

    def __bool__(self) -> bool:
        return self.verdict == "pass" or (
            self.allow_inconclusive and self.verdict == "inconclusive"
        )

    def __repr__(self) -> str:
        """One line, worst comparisons first (pytest shortens long reprs; ``str()`` and
        ``pytest -vv`` give everything)."""
        order = {"fail": 0, "inconclusive": 1, "pass": 2}
        parts = [_short(row) for row in sorted(self.result.rows, key=lambda x: order[x.verdict])]
        allow = ", inconclusive allowed" if self.allow_inconclusive else ""
        return f"<calipers gate {self.verdict.upper()}{allow}: {'; '.join(parts)}>"

    def __str__(self) -> str:
        lines = [self.result.summary]
        lines += [f"  {row.task}/{row.metric}: {row.explanation}" for row in self.result.rows]
        return "\n".join(lines)


def _short(row: Any) -> str:
    d, k = row.diff, (100.0 if row.points else 1.0)
    unit, f = (" points", ".1f") if row.points else ("", ".4g")
    text = (
        f"{row.task}/{row.metric} {row.verdict} {d.value * k:+{f}}{unit} "
        f"[{d.low * k:+{f}}, {d.high * k:+{f}}] vs allowed drop -{row.max_drop * k:{f}}{unit}"
    )
    if row.verdict == "inconclusive":
        need = f"needs about {row.items_needed:,} items" if row.items_needed else "undecidable"
        text += f", {need}, has {row.n:,}"
    return text


class EvalResult:
    """A finished run, as a test sees it."""

    def __init__(self, run: StoredRun) -> None:
        self.run = run

    @property
    def run_id(self) -> str:
        return self.run.record.id

    @property
    def model(self) -> str:
        return self.run.record.model

    def score(self, task: str | None = None, metric: str | None = None) -> Estimate:
        """The run's score on ``task`` (default: its only or first task), ``metric`` (default:
        the primary one), with its interval."""
        summary = self.run.record.summary
        tasks = summary.tasks if summary is not None else {}
        ts = tasks[task or self.run.record.tasks[0]]
        return ts.metrics[metric or ts.primary or ""]

    def not_worse_than(
        self,
        baseline: EvalResult,
        by: float,
        *,
        metric: str | Sequence[str] = "primary",
        alpha: float = 0.05,
        power: float = 0.8,
        allow_inconclusive: bool = False,
    ) -> GateCheck:
        """Is this run worse than ``baseline`` by more than ``by`` (score units: 0.02 = 2
        points)? The gate's paired non-inferiority test on every shared task."""
        from calipers.analysis import gate_verdict

        metrics = (metric,) if isinstance(metric, str) else tuple(metric)
        result = gate_verdict(
            baseline.run, self.run, max_drop=by, metrics=metrics, alpha=alpha, power=power
        )
        return GateCheck(result, allow_inconclusive=allow_inconclusive)

    def __repr__(self) -> str:
        return f"<calipers run {self.run_id} of {self.model} on {', '.join(self.run.record.tasks)}>"


@pytest.fixture(scope="session")
def calipers_store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where ``calipers_eval`` stores runs: ``CALIPERS_STORE`` if set, else a temporary
    SQLite file shared by the test session."""
    return os.environ.get("CALIPERS_STORE") or str(
        tmp_path_factory.mktemp("calipers") / "calipers.db"
    )


@pytest.fixture
def calipers_eval(calipers_store_url: str) -> Callable[..., EvalResult]:
    """A function ``(model, task, **options) -> EvalResult`` that runs ``model`` (a spec or a
    provider instance) on ``task`` (names, suites or task files); options as ``RunConfig``
    (``limit``, ``seed``, ``system_prompt``...). Call it from synchronous tests."""

    def evaluate(model: str | ModelProvider, task: str | list[str], **options: Any) -> EvalResult:
        from calipers.analysis import StoredRun
        from calipers.runner import run
        from calipers.store import Store

        with Store.open(calipers_store_url) as store:
            res = run(model, task, store=store, **options)
            rec = store.get_run(res.run_id)
            return EvalResult(StoredRun(rec, tuple(store.get_samples(rec.id))))

    return evaluate
