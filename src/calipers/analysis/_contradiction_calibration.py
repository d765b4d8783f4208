"""Calibrating the judge of ``self_contradiction`` on planted conversations.

:func:`calipers.scorers.planted_conversations` writes seeded conversations, each with one pair
of replies to the same question: in half of them the second reply states a different value
(a planted contradiction), in the other half the same value in other words (a clean control).
The judge sees each pair exactly as the scorer shows it (:func:`judge_contradiction`) and its
verdicts are compared with the truth. "Contradiction" is the positive class:

- precision = judged contradicting and truly contradicting / judged contradicting;
- recall = judged contradicting and truly contradicting / truly contradicting;
- accuracy = verdicts that agree with the truth / pairs judged;

each with a Wilson interval (the pairs come from separate conversations: independent). With
equal numbers of contradicting and clean pairs, a judge that errs at the same rate on both
kinds has precision = recall = its accuracy. A pair the judge gives no readable verdict on is
an error, counted and left out.

The report is stored like ``calipers judge-calibrate``'s (``save_judge_calibration``: the run
summary's ``judge_calibration[task]``, scorer ``self_contradiction``, accuracy as
``agreement``), so a ``self_contradiction`` score of the same judge and task shows this
calibration instead of "uncalibrated".
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from calipers.errors import ConfigError
from calipers.scorers import (
    JudgeClient,
    PlantedConversation,
    judge_contradiction,
    planted_conversations,
)
from calipers.stats import wilson
from calipers.store import RunRecord
from calipers.types import Estimate

__all__ = [
    "ContradictionCalibrationReport",
    "calibrate_contradiction_judge",
    "contradiction_judge",
]

ERRORS_KEPT = 5


class ContradictionCalibrationReport(BaseModel):
    """The contradiction judge against planted pairs. ``agreement`` is the accuracy (the name
    every stored judge calibration gives its headline figure); ``confusion`` rows: truth
    (contradicting, clean), columns: judge (contradicting, clean)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task: str
    scorer: Literal["self_contradiction"] = "self_contradiction"
    judge: str
    mode: Literal["planted_contradictions"] = "planted_contradictions"
    labels_file: str = "planted contradictions"
    statistic: Literal["contradiction_accuracy"] = "contradiction_accuracy"
    agreement: Estimate
    precision: Estimate
    recall: Estimate
    confusion: list[list[int]]
    n_pairs: int
    n_matched: int
    n_judge_errors: int
    seed: int
    errors: list[str]
    caveats: list[str]

    @property
    def accuracy(self) -> Estimate:
        return self.agreement


async def _verdict(
    judge: JudgeClient, c: PlantedConversation, gate: asyncio.Semaphore
) -> tuple[bool | None, str | None]:
    i, j = c.pair
    async with gate:
        try:
            v = await judge_contradiction(judge, c.turns[i], c.turns[j])
        except Exception as e:  # a failed verdict is data: counted, the pair left out
            return None, f"{c.id}: {type(e).__name__}: {str(e).splitlines()[0]}"
    return bool(v.value), None


def _caveats(cm: list[list[int]], n_err: int) -> list[str]:
    out = []
    if min(sum(cm[0]), sum(cm[1])) < 30:
        out.append(
            f"only {sum(cm[0])} contradicting and {sum(cm[1])} clean pairs were judged: the "
            "intervals are wide; plant more (--pairs)"
        )
    if n_err:
        out.append(f"{n_err} pair(s) got no readable verdict and were left out")
    out.append(
        "planted pairs are synthetic, short and about simple facts: real conversations' "
        "contradictions may be subtler; human labels (--labels/--campaign) calibrate the "
        "judge on real data"
    )
    return out


async def calibrate_contradiction_judge(
    judge: JudgeClient | str,
    *,
    n: int = 200,
    seed: int = 0,
    task: str = "",
    run_id: str = "",
    confidence: float = 0.95,
    concurrency: int = 4,
    conversations: Sequence[PlantedConversation] | None = None,
) -> ContradictionCalibrationReport:
    """Precision and recall of the judge's "contradiction" verdict, and its accuracy, on
    ``n`` planted conversations (``seed``), or on ``conversations`` when given. ``judge``: a
    :class:`JudgeClient` or a model spec; the report names the spec, as the scorer does."""
    client = judge if isinstance(judge, JudgeClient) else JudgeClient(judge)
    planted = list(conversations) if conversations is not None else planted_conversations(n, seed)
    gate = asyncio.Semaphore(max(1, concurrency))
    done = await asyncio.gather(*(_verdict(client, c, gate) for c in planted))
    judged = [(c.contradicts, v) for c, (v, _w) in zip(planted, done, strict=True) if v is not None]
    errors = [w for _v, w in done if w is not None]
    cm = [
        [sum(t == truth and v == verdict for t, v in judged) for verdict in (True, False)]
        for truth in (True, False)
    ]
    (tp, fn), (fp, tn) = cm
    return ContradictionCalibrationReport(
        run_id=run_id,
        task=task,
        judge=client.spec,
        agreement=wilson(tp + tn, len(judged), confidence),
        precision=wilson(tp, tp + fp, confidence),
        recall=wilson(tp, tp + fn, confidence),
        confusion=cm,
        n_pairs=len(planted),
        n_matched=len(judged),
        n_judge_errors=len(errors),
        seed=seed,
        errors=errors[:ERRORS_KEPT],
        caveats=_caveats(cm, len(errors)),
    )


def contradiction_judge(run: RunRecord, task: str | None = None) -> tuple[str, JudgeClient] | None:
    """(task, its self_contradiction judge) of a stored run; None when the run has no
    ``self_contradiction`` scorer with a judge (on ``task``, when given)."""
    tasks = run.methodology.get("tasks", {})
    found: list[tuple[str, dict[str, Any]]] = [
        (t, s)
        for t, m in tasks.items()
        if task in (None, t)
        for s in m.get("scorers", [])
        if s.get("name") == "self_contradiction" and (s.get("args") or {}).get("judge")
    ]
    if not found:
        return None
    if len(found) > 1:
        raise ConfigError(
            f"Run {run.id} has {len(found)} self_contradiction judges; calibrate one.",
            hint="Choose with --task.",
        )
    name, spec = found[0]
    args = spec.get("args") or {}
    client = JudgeClient(
        str(args["judge"]),
        base_url=args.get("base_url"),
        api_key_env=args.get("api_key_env"),
        max_tokens=int(args.get("max_tokens", 512)),
    )
    return name, client
