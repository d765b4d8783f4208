"""Calibrating the claim judge of ``rag_faithfulness`` on planted claims of known support.

Items of ``dyn_rag`` carry ``metadata["claims"]``: claims ``{"text", "supported"}`` written
with the item, whose support by its passages is known exactly. The judge's verification step
(``calipers.scorers.verify_claims``, the same prompt and parsing ``rag_faithfulness`` uses)
labels each item's planted claims against the item's passages; the labels are compared with
the truth. "Unsupported" is the positive class (it is what faithfulness counts):

- precision = judged unsupported and truly unsupported / judged unsupported;
- recall = judged unsupported and truly unsupported / truly unsupported;
- accuracy = labels that agree with the truth / claims labelled;

each with a Wilson interval. An item whose verification fails (no readable verdict after a
format reminder) is counted as an error and its claims are left out.

The report is stored like ``calipers judge-calibrate``'s (:func:`save_judge_calibration`, in
the run summary's ``judge_calibration[task]``, scorer ``rag_faithfulness``, its accuracy as
``agreement``), so a ``rag_faithfulness`` score of the same judge and task shows this
calibration instead of "uncalibrated". On real data, human pass/fail labels of answers (all
claims supported or not) calibrate it through the ordinary ``--labels`` / ``--campaign`` path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from calipers.errors import ConfigError, DataError
from calipers.scorers import JudgeClient, passage_texts, verify_claims
from calipers.stats import wilson
from calipers.store import RunRecord
from calipers.types import Estimate, Sample

__all__ = [
    "ClaimCalibrationReport",
    "ClaimLabel",
    "calibrate_claim_judge",
    "claim_confusion",
    "planted_claims",
    "planted_samples",
]

PLANTED = "planted claims"
ERRORS_KEPT = 5


class ClaimLabel(BaseModel):
    """One planted claim: its truth and the judge's label (None: the item errored)."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    text: str
    supported: bool
    judged: bool | None


class ClaimCalibrationReport(BaseModel):
    """The claim judge against planted claims. ``agreement`` is the accuracy (the name every
    stored judge calibration gives its headline figure); ``confusion`` rows: truth
    (unsupported, supported), columns: judge (unsupported, supported)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task: str
    scorer: Literal["rag_faithfulness"] = "rag_faithfulness"
    judge: str
    mode: Literal["planted_claims"] = "planted_claims"
    labels_file: str = PLANTED
    statistic: Literal["claim_accuracy"] = "claim_accuracy"
    agreement: Estimate
    precision: Estimate
    recall: Estimate
    confusion: list[list[int]]
    n_items: int
    n_claims: int
    n_matched: int
    n_judge_errors: int
    errors: list[str]
    caveats: list[str]

    @property
    def accuracy(self) -> Estimate:
        return self.agreement


def planted_claims(sample: Sample) -> list[tuple[str, bool]]:
    """``(text, supported)`` of each planted claim of ``sample`` (none: an empty list)."""
    raw = sample.metadata.get("claims") or []
    out = []
    for i, c in enumerate(raw):
        ok = isinstance(c, Mapping) and isinstance(c.get("text"), str)
        if not ok or not isinstance(c.get("supported"), bool):
            raise DataError(
                f'Sample {sample.id!r}: planted claim {i + 1} is not {{"text": str, '
                f'"supported": bool}}: {c!r:.80}.'
            )
        out.append((str(c["text"]), bool(c["supported"])))
    return out


def claim_confusion(labels: Sequence[ClaimLabel]) -> list[list[int]]:
    """Rows: truth unsupported / supported; columns: judged unsupported / supported."""
    done = [c for c in labels if c.judged is not None]
    return [
        [sum(c.supported == t and c.judged == j for c in done) for j in (False, True)]
        for t in (False, True)
    ]


async def _label_item(
    judge: JudgeClient, sample: Sample, gate: asyncio.Semaphore
) -> tuple[list[ClaimLabel], str | None]:
    claims = planted_claims(sample)
    async with gate:
        try:
            verdict = await verify_claims(judge, passage_texts(sample), [t for t, _s in claims])
        except Exception as e:  # a failed verdict is data: counted, its claims left out
            judged: list[bool | None] = [None] * len(claims)
            why: str | None = f"{sample.id}: {type(e).__name__}: {str(e).splitlines()[0]}"
        else:
            judged, why = list(verdict.value), None
    labels = [
        ClaimLabel(sample_id=sample.id, text=t, supported=s, judged=j)
        for (t, s), j in zip(claims, judged, strict=True)
    ]
    return labels, why


def _caveats(n_items: int, n_claims: int, n_err: int, cm: list[list[int]]) -> list[str]:
    out = []
    if n_claims > n_items:
        out.append(
            "claims of one item share its passages and are not independent; the Wilson "
            "intervals treat them as independent and may be too narrow"
        )
    if min(sum(cm[0]), sum(cm[1])) < 30:
        out.append(
            f"only {sum(cm[0])} unsupported and {sum(cm[1])} supported claims were judged: "
            "the intervals are wide; calibrate on more items (--limit)"
        )
    if n_err:
        out.append(f"{n_err} item(s) got no readable verdict and were left out")
    out.append(
        "planted claims are synthetic: real answers' claims may be harder; human labels "
        "(--labels/--campaign) calibrate the judge on real data"
    )
    return out


async def calibrate_claim_judge(
    samples: Sequence[Sample],
    judge: JudgeClient | str,
    *,
    task: str,
    run_id: str = "",
    confidence: float = 0.95,
    concurrency: int = 4,
) -> ClaimCalibrationReport:
    """Precision and recall of the judge's "unsupported" label, and its accuracy, on the
    planted claims of ``samples`` (items without planted claims are skipped). ``judge``: a
    :class:`JudgeClient` or a model spec; the report names the spec, as the scorer does."""
    client = judge if isinstance(judge, JudgeClient) else JudgeClient(judge, max_tokens=1024)
    items = [s for s in samples if planted_claims(s)]
    if not items:
        raise DataError(
            f"No item of task {task!r} carries planted claims (metadata['claims']).",
            hint="Calibrate on dyn_rag, whose items plant claims of known support.",
        )
    gate = asyncio.Semaphore(max(1, concurrency))
    done = await asyncio.gather(*(_label_item(client, s, gate) for s in items))
    labels = [c for lab, _w in done for c in lab]
    errors = [w for _l, w in done if w is not None]
    cm = claim_confusion(labels)
    (tp, fn), (fp, tn) = cm
    n = tp + fn + fp + tn
    return ClaimCalibrationReport(
        run_id=run_id,
        task=task,
        judge=client.spec,
        agreement=wilson(tp + tn, n, confidence),
        precision=wilson(tp, tp + fp, confidence),
        recall=wilson(tp, tp + fn, confidence),
        confusion=cm,
        n_items=len(items),
        n_claims=len(labels),
        n_matched=n,
        n_judge_errors=len(errors),
        errors=errors[:ERRORS_KEPT],
        caveats=_caveats(len(items), n, len(errors), cm),
    )


def _faithfulness_spec(run: RunRecord, task: str | None) -> tuple[str, dict[str, Any]]:
    tasks = run.methodology.get("tasks", {})
    found = [
        (t, s)
        for t, m in tasks.items()
        if task in (None, t)
        for s in m.get("scorers", [])
        if s.get("name") == "rag_faithfulness"
    ]
    if len(found) != 1:
        raise ConfigError(
            f"Run {run.id} has {len(found) or 'no'} rag_faithfulness scorer(s)"
            f"{'' if task is None else f' on task {task!r}'}; planted-claim calibration "
            "needs exactly one.",
            hint="Choose with --task, or run dyn_rag with the rag_faithfulness scorer.",
        )
    return found[0]


def planted_samples(
    run: RunRecord, task: str | None = None
) -> tuple[str, JudgeClient, list[Sample]]:
    """(task, its rag_faithfulness judge, its items) of a stored run: the items are planned
    again from the run's config without its RAG arm, since a degradation (gold dropped,
    passages swapped) changes what the passages support and planted claims are true of the
    item's own passages."""
    from calipers.runner import RunConfig, make_plan

    name, spec = _faithfulness_spec(run, task)
    args = spec.get("args") or {}
    client = JudgeClient(
        str(args.get("judge")),
        base_url=args.get("base_url"),
        api_key_env=args.get("api_key_env"),
        max_tokens=int(args.get("max_tokens", 1024)),
    )
    config = RunConfig.model_validate(run.config).model_copy(update={"rag": None})
    plan = make_plan(config)
    items = [ps.sample for pt in plan.tasks if pt.task.name == name for ps in pt.samples]
    firsts = {s.id: s for s in items}  # epochs repeat an item
    return name, client, list(firsts.values())
