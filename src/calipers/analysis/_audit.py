"""``calipers audit``: items whose gold label is probably wrong, and the score without them.

An item is flagged when enough runs agree on the same option that is not the gold one, each
confident enough (see :func:`audit`). Each run's score is reported on all items and on the
unflagged ("audited") items, with the shift between them. Where the task's items carry
annotations (MMLU-Redux's ``error_type``), the flagging is measured against them: precision
and recall with Wilson intervals, next to the base rate a random flagging would reach.

Agreement is evidence, not proof: several weak models sharing a misconception, or one model
under several formulations, agree without the label being wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.analysis._align import StoredRun
from calipers.analysis._audit_data import Annotation, annotations_from, task_samples
from calipers.analysis._saturation import task_metric
from calipers.errors import ConfigError
from calipers.runner import comparable_hash
from calipers.stats import subset_difference, summarize, wilson
from calipers.store import SampleRecord
from calipers.types import Estimate, Sample

__all__ = [
    "WRONG_LABEL",
    "Annotation",
    "AuditReport",
    "FlagAgreement",
    "FlaggedItem",
    "RunAudit",
    "audit",
]

WRONG_LABEL = frozenset({"wrong_groundtruth"})
"""Annotation error types that mean "the gold label is wrong"."""
# Scorers whose stored ``answer`` names an option: by index, or by letter.
_ANSWER_KINDS = {"loglikelihood_mc": "index", "choice_letter": "letter"}


class FlaggedItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    category: str | None
    gold: str | None  # option letter; None when no run was right and the data are absent
    gold_text: str | None
    agreed: str
    agreed_text: str | None
    votes: int  # runs choosing ``agreed`` with enough confidence
    voters: int  # runs that answered the item
    models: list[str]  # distinct models among the votes
    formulations: list[str]
    mean_confidence: float | None  # over the votes with a known confidence
    without_confidence: int  # votes from generation (confidence unknown)
    annotation: Annotation | None


class RunAudit(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    model: str
    formulation: str | None
    all_items: Estimate
    audited: Estimate
    shift: Estimate  # audited - all_items


class FlagAgreement(BaseModel):
    """The flagging against annotations, over the annotated items the audit saw."""

    model_config = ConfigDict(frozen=True)

    against: str
    error_types: list[str]
    n_items: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: Estimate
    recall: Estimate
    base_rate: Estimate  # share of items with such an error: a random flag's precision


class AuditReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    metric: str
    n_items: int
    n_runs: int
    n_models: int
    formulations: list[str]
    min_agree: int | None
    min_confidence: float
    min_models: int
    confidence: float
    flagged: list[FlaggedItem]
    runs: list[RunAudit]
    annotations: str
    agreement: list[FlagAgreement]
    correction_match: dict[str, int] | None  # flagged wrong-label items: agreed == proposed
    caveats: list[str]


def _option_index(answer: str | None, kind: str) -> int | None:
    """A stored answer as an option index: ``"2"`` (kind ``index``) or ``"C"`` (``letter``)."""
    a = (answer or "").strip()
    if kind == "index":
        return int(a) if a.isdigit() else None
    return ord(a) - 65 if len(a) == 1 and "A" <= a <= "Z" else None


@dataclass(frozen=True)
class _Vote:
    run: int
    option: int
    confidence: float | None
    correct: bool | None


def _answer_kind(run: StoredRun, task: str) -> str:
    scorers = [str(s.get("name")) for s in run.methodology.tasks[task].scorers]
    for name in scorers:
        if name in _ANSWER_KINDS:
            return _ANSWER_KINDS[name]
    raise ConfigError(
        f"Run {run.record.id}: task {task!r} is scored by {', '.join(scorers)}; the audit "
        "needs multiple-choice answers (loglikelihood_mc or choice_letter).",
        hint="Audit multiple-choice tasks, e.g. mmlu_redux, arc_easy.",
    )


def _confidence(s: SampleRecord, option: int) -> float | None:
    """Softmax of the option log-likelihoods, at ``option``; None without log-likelihoods."""
    d = s.score_details or {}
    lps = (d.get("loglikelihood") or {}).get("logprobs")
    if lps is None:
        lps = ((d.get("loglikelihood_mc") or {}).get("metadata") or {}).get("logprobs")
    if not lps or option >= len(lps) or any(math.isnan(float(v)) for v in lps):
        return None
    x = np.asarray(lps, dtype=np.float64)
    p = np.exp(x - x.max())
    return float(p[option] / p.sum())


def _vote(j: int, s: SampleRecord, kind: str) -> _Vote | None:
    option = _option_index(s.answer, kind)
    if option is None:
        return None
    acc = (s.scores or {}).get("acc")
    correct = None if acc is None or math.isnan(acc) else acc == 1.0
    return _Vote(j, option, _confidence(s, option), correct)


def _records(run: StoredRun, task: str) -> dict[str, SampleRecord]:
    """Each item's first answered epoch (errors are not answers)."""
    out: dict[str, SampleRecord] = {}
    for s in sorted(run.samples, key=lambda s: s.epoch):
        if s.task == task and s.error is None:
            out.setdefault(s.sample_id, s)
    return out


def _gold(votes: Sequence[_Vote], sample: Sample | None) -> int | None:
    if sample is not None and isinstance(sample.target, int):
        return sample.target
    return next((v.option for v in votes if v.correct), None)


def _agreement(
    votes: Sequence[_Vote],
    gold: int | None,
    min_agree: int | None,
    min_confidence: float,
) -> tuple[int, list[_Vote]] | None:
    """The most-voted wrong option and its confident votes, if there are enough of them."""
    need = min_agree if min_agree is not None else max(2, len(votes) // 2 + 1)
    by_option: dict[int, list[_Vote]] = {}
    for v in votes:
        wrong = v.option != gold if gold is not None else v.correct is False
        if wrong and (v.confidence is None or v.confidence >= min_confidence):
            by_option.setdefault(v.option, []).append(v)
    if not by_option:
        return None
    option, support = max(by_option.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    return (option, support) if len(support) >= need else None


def _letter(i: int | None) -> str | None:
    return None if i is None else chr(65 + i)


def _option_text(i: int | None, sample: Sample | None) -> str | None:
    if i is None or sample is None:
        return None
    options = sample.metadata.get("option_texts") or sample.choices or ()
    return str(options[i]) if i < len(options) else None


@dataclass(frozen=True)
class _Context:
    runs: Sequence[StoredRun]
    task: str
    records: list[dict[str, SampleRecord]]
    kinds: list[str]
    samples: Mapping[str, Sample]
    annotations: Mapping[str, Annotation]

    def model(self, j: int) -> str:
        return self.runs[j].record.model_name

    def formulation(self, j: int) -> str:
        return self.runs[j].methodology.tasks[self.task].formulation or "default"


def _flag_item(
    ctx: _Context, item: str, votes: list[_Vote], rule: tuple[int | None, float], min_models: int
) -> FlaggedItem | None:
    sample = ctx.samples.get(item)
    gold = _gold(votes, sample)
    found = _agreement(votes, gold, *rule)
    if found is None:
        return None
    option, support = found
    keys = {ctx.runs[v.run].methodology.model.key() for v in support}
    if len(keys) < min_models:
        return None
    confs = [v.confidence for v in support if v.confidence is not None]
    record = ctx.records[support[0].run][item]
    agreed_text = _option_text(option, sample)
    if agreed_text is None and ctx.kinds[support[0].run] == "index":
        agreed_text = record.response
    return FlaggedItem(
        id=item,
        category=record.category,
        gold=_letter(gold),
        gold_text=_option_text(gold, sample) or record.target,
        agreed=chr(65 + option),
        agreed_text=agreed_text,
        votes=len(support),
        voters=len(votes),
        models=sorted({ctx.model(v.run) for v in support}),
        formulations=sorted({ctx.formulation(v.run) for v in support}),
        mean_confidence=float(np.mean(confs)) if confs else None,
        without_confidence=len(support) - len(confs),
        annotation=ctx.annotations.get(item),
    )


def _run_audit(
    ctx: _Context, j: int, metric: str, flagged: set[str], c: float, seed: int
) -> RunAudit:
    run = ctx.runs[j]
    scored = {i: (s.scores or {}).get(metric, math.nan) for i, s in ctx.records[j].items()}
    kept = [v for i, v in scored.items() if i not in flagged]
    dropped = [v for i, v in scored.items() if i in flagged]
    rng = derived_rng(seed, ctx.task, run.record.id)
    return RunAudit(
        run_id=run.record.id,
        model=run.record.model_name,
        formulation=run.methodology.tasks[ctx.task].formulation,
        all_items=summarize(kept + dropped, rng=rng, confidence=c),
        audited=summarize(kept, rng=rng, confidence=c),
        shift=subset_difference(kept, dropped, rng=rng, confidence=c),
    )


def _against(
    name: str,
    types: Sequence[str],
    flagged: set[str],
    annotated: Mapping[str, Annotation],
    c: float,
) -> FlagAgreement:
    truth = {i for i, a in annotated.items() if a.error_type in types}
    tp, fp = len(flagged & truth), len(flagged - truth)
    fn = len(truth - flagged)
    n = len(annotated)
    return FlagAgreement(
        against=name,
        error_types=sorted(types),
        n_items=n,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=n - tp - fp - fn,
        precision=wilson(tp, tp + fp, c),
        recall=wilson(tp, tp + fn, c),
        base_rate=wilson(tp + fn, n, c),
    )


def _agreements(
    flagged: list[FlaggedItem],
    items: set[str],
    annotations: Mapping[str, Annotation],
    c: float,
) -> tuple[list[FlagAgreement], dict[str, int] | None]:
    annotated = {i: a for i, a in annotations.items() if i in items}
    if not annotated:
        return [], None
    ids = {f.id for f in flagged if f.id in annotated}
    errors = sorted({a.error_type for a in annotated.values()} - {"ok"})
    rows = [
        _against("wrong label", sorted(WRONG_LABEL), ids, annotated, c),
        _against("any error", errors, ids, annotated, c),
    ]
    proposed = [
        f
        for f in flagged
        if f.annotation
        and f.annotation.error_type in WRONG_LABEL
        and f.annotation.correct_answer is not None
    ]
    match = sum(_letter(f.annotation.correct_answer) == f.agreed for f in proposed if f.annotation)
    return rows, {"n": len(proposed), "agreed_equals_proposed": match}


def _caveats(ctx: _Context, flagged: list[FlaggedItem], min_models: int) -> list[str]:
    n_models = len({r.methodology.model.key() for r in ctx.runs})
    out = (
        []
        if len(ctx.runs) > 1
        else ["A single run cannot agree with anything: pass several runs (models, formulations)."]
    )
    out += [
        "Agreement is not proof: several models can share the same misconception, and "
        "weak models (such as the embedded 135M one) agree on plausible distractors.",
        "The audited subset is chosen from these runs' own answers, so their audited "
        "scores are biased upward; judge a model by runs that did not vote.",
    ]
    if n_models == 1:
        out.append(
            "Every run is the same model: agreement across formulations shows that "
            "model's stable preference, not independent evidence."
        )
    elif any(len(f.models) < 2 for f in flagged) and min_models < 2:
        out.append(
            "Some flags rest on one model under several formulations (see models); "
            "--min-models 2 requires independent models."
        )
    same = {(r.methodology.model.key(), comparable_hash(r.methodology, ctx.task)) for r in ctx.runs}
    if len(same) < len(ctx.runs):
        out.append(
            "Some runs repeat one model under one methodology: their votes are "
            "copies, not agreement; audit one run per model and formulation."
        )
    letters = [f.agreed for f in flagged]
    top = max(set(letters), key=letters.count) if letters else None
    if top is not None and len(letters) >= 5 and letters.count(top) >= 0.6 * len(letters):
        out.append(
            f"{letters.count(top)} of {len(letters)} flags agree on option {top}: "
            "more likely a position bias of the runs than bad labels."
        )
    if any(f.without_confidence for f in flagged):
        out.append(
            "Generated answers carry no confidence: they count as votes regardless "
            "of --min-confidence."
        )
    return out


def audit(
    runs: Sequence[StoredRun],
    task: str,
    *,
    metric: str | None = None,
    min_agree: int | None = None,
    min_confidence: float = 0.5,
    min_models: int = 1,
    annotations: Mapping[str, Annotation] | None = None,
    data_dir: str | Path | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> AuditReport:
    """Flag items of ``task`` whose gold label ``runs`` agree is wrong.

    Each run that answered an item votes for its predicted option, with its confidence (the
    softmax of the option log-likelihoods at that option; unknown for generated answers,
    which then count whatever ``min_confidence``). An item is flagged when one non-gold
    option gets at least ``min_agree`` votes (default: a strict majority of the runs that
    answered it, and at least 2) from at least ``min_models`` distinct models, each vote with
    confidence >= ``min_confidence``. The default 0.5 means the run put more probability on
    that option than on all the others together, not just a narrow argmax.

    Gold labels, option texts and annotations come from the task's own data, re-loaded as each
    run loaded it (``data_dir`` overrides the directory the run recorded) and checked against
    the run's data hash; without them gold is read from the runs that were scored right.
    ``annotations`` maps item ids to annotations, overriding those in the data.
    """
    if len({r.record.id for r in runs}) != len(runs):
        raise ConfigError("The same run is listed twice.", hint="Audit different runs.")
    if not 0.0 <= min_confidence <= 1.0:
        raise ConfigError(f"--min-confidence must be in [0, 1], got {min_confidence:g}.")
    if min_agree is not None and min_agree < 1:
        raise ConfigError(f"--min-agree must be at least 1, got {min_agree}.")
    metric = task_metric(runs, task, metric)
    kinds = [_answer_kind(r, task) for r in runs]
    samples, data_note = task_samples(runs, task, data_dir)
    if annotations is None:
        annotations, note = annotations_from(samples)
        data_note = note or data_note
    else:
        data_note = f"given ({len(annotations)} items)"
    ctx = _Context(runs, task, [_records(r, task) for r in runs], kinds, samples, annotations)
    return _report(
        ctx, metric, (min_agree, min_confidence), min_models, data_note, confidence, seed
    )


def _report(
    ctx: _Context,
    metric: str,
    rule: tuple[int | None, float],
    min_models: int,
    note: str,
    c: float,
    seed: int,
) -> AuditReport:
    first = {i: s.position for rec in reversed(ctx.records) for i, s in rec.items()}
    items = sorted(first, key=lambda i: (first[i], i))
    flagged = []
    for item in items:
        votes = [
            v
            for j, rec in enumerate(ctx.records)
            if item in rec
            if (v := _vote(j, rec[item], ctx.kinds[j])) is not None
        ]
        if votes and (f := _flag_item(ctx, item, votes, rule, min_models)):
            flagged.append(f)
    ids = {f.id for f in flagged}
    agreement, match = _agreements(flagged, set(items), ctx.annotations, c)
    return AuditReport(
        task=ctx.task,
        metric=metric,
        n_items=len(items),
        n_runs=len(ctx.runs),
        n_models=len({r.methodology.model.key() for r in ctx.runs}),
        formulations=sorted({ctx.formulation(j) for j in range(len(ctx.runs))}),
        min_agree=rule[0],
        min_confidence=rule[1],
        min_models=min_models,
        confidence=c,
        flagged=flagged,
        runs=[_run_audit(ctx, j, metric, ids, c, seed) for j in range(len(ctx.runs))],
        annotations=note,
        agreement=agreement,
        correction_match=match,
        caveats=_caveats(ctx, flagged, min_models),
    )
