"""The ``ifeval`` scorer: every verifiable instruction of a prompt, strict and loose.

Per sample (one prompt with 1-3 instructions):

- ``prompt_strict`` / ``prompt_loose``: 1 when *every* instruction is followed;
- ``inst_strict`` / ``inst_loose``: the *fraction* of the prompt's instructions followed.

The task-level mean of ``inst_*`` weighs every prompt equally (a macro average); IFEval's
published instruction-level accuracy is a micro average over all instructions, which weighs a
3-instruction prompt three times. Both are defensible, they differ, and so the counts behind
the fractions are kept in ``Score.metadata`` (``instructions``, ``strict``, ``loose`` lists
and the ``n_*`` counts), from which ``calipers.tasks.benchmarks.ifeval.instruction_level``
computes the micro average with a clustered interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from calipers.errors import DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._ifeval._evaluate import evaluate
from calipers.scorers._ifeval._language import make_detector
from calipers.types import Sample, SampleOutput, Score

__all__ = ["ifeval", "instructions_of"]


def instructions_of(sample: Sample) -> tuple[list[str], list[Mapping[str, Any]]]:
    """The sample's instruction ids and their keyword arguments (``Sample.fields``
    ``instruction_id_list`` and ``kwargs``, as in IFEval's ``input_data.jsonl``)."""
    ids = sample.fields.get("instruction_id_list")
    kwargs = sample.fields.get("kwargs")
    if (
        not isinstance(ids, Sequence)
        or isinstance(ids, str)
        or not ids
        or not all(isinstance(i, str) for i in ids)
    ):
        raise DataError(f"Sample {sample.id!r} has no instruction_id_list to check.")
    if not isinstance(kwargs, Sequence) or not all(isinstance(k, Mapping) for k in kwargs):
        raise DataError(f"Sample {sample.id!r}: kwargs must be a list of objects.")
    return list(ids), list(kwargs)


@scorer(
    "ifeval",
    metrics=("prompt_strict", "prompt_loose", "inst_strict", "inst_loose"),
    needs="generation",
)
def ifeval(language_detector: str = "heuristic") -> ScoreFn:
    """IFEval: verifiable instructions followed, per prompt and per instruction.

    ``language_detector`` is ``heuristic`` (built in) or ``langdetect`` (the reference
    implementation's; optional package). ``answer`` names the instructions not followed
    strictly (what a failed-items list shows); ``explanation`` gives them strict and loose.
    """
    detect = make_detector(language_detector)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        ids, kwargs = instructions_of(sample)
        results = evaluate(output.text, ids, kwargs, detect)
        n = len(results)
        n_strict = sum(r.strict for r in results)
        n_loose = sum(r.loose for r in results)
        failed_strict = [r.instruction_id for r in results if not r.strict]
        failed_loose = [r.instruction_id for r in results if not r.loose]
        explanation = (
            "; ".join(
                f"{kind} not followed: {', '.join(failed)}"
                for kind, failed in (("strict", failed_strict), ("loose", failed_loose))
                if failed
            )
            or None
        )
        return Score(
            values={
                "prompt_strict": float(n_strict == n),
                "prompt_loose": float(n_loose == n),
                "inst_strict": n_strict / n,
                "inst_loose": n_loose / n,
            },
            answer=f"not followed: {', '.join(failed_strict)}" if failed_strict else "all followed",
            explanation=explanation,
            metadata={
                "instructions": ids,
                "strict": [r.strict for r in results],
                "loose": [r.loose for r in results],
                "n_instructions": n,
                "n_strict": n_strict,
                "n_loose": n_loose,
            },
        )

    return score
