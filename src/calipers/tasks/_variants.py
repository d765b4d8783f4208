"""Variants of a task that ask the same questions in another form.

A :class:`Variant` changes how a task is presented, never what it asks: the labels of the
options (``A.``, ``(A)``, ``[A]``, ``A)``, ``1.``), the whitespace between options and
between few-shot examples, whether the instruction line is shown, and the order of the
options (a cyclic rotation or a seeded permutation; the target moves with its option). The
runner applies a variant to a task before planning, and the methodology card records it, so a
run under a variant is never mistaken for the standard one. Sensitivity studies
(``calipers sensitivity``) run a task under many variants and compare item by item.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from calipers._util.hashing import json_hash
from calipers.errors import ConfigError
from calipers.tasks._fresh_numbers import renumber
from calipers.tasks._perturb import _perturbations, perturb_text
from calipers.tasks._prompt import LabelStyle
from calipers.tasks._task import LoadContext, Task
from calipers.types import Sample

__all__ = ["Variant", "apply_variant", "permutation_for"]

_LETTER_CHOICES = tuple("ABCDEFGHIJ")


class Variant(BaseModel):
    """A presentation change; ``None`` fields keep the task's own choice.

    ``rotate=r`` moves every option ``r`` places down (cyclically), ``permute_seed=s`` shuffles
    the options of each item with a draw seeded by ``(s, item id)``. ``instruction=False``
    drops the task's instruction line. ``none_of_the_other=True`` replaces one wrong option
    (seeded by item) with "None of the other choices" -- the answer stays right, the
    memorised surface form breaks. ``perturb`` rewrites the question the way real users
    write (see :mod:`calipers.tasks._perturb`); unlike the others it changes the content, so
    it measures robustness, not format sensitivity. ``fresh_numbers=True`` gives a math word
    problem with a worked solution new numbers and the recomputed answer
    (:mod:`calipers.tasks._fresh_numbers`); problems that cannot be re-numbered safely are
    left out of the variant (they stay unpaired, and counted).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    labels: LabelStyle | None = None
    option_separator: str | None = None
    fewshot_separator: str | None = None
    instruction: bool | None = None
    rotate: int | None = Field(None, ge=0)
    permute_seed: int | None = None
    none_of_the_other: bool | None = None
    fresh_numbers: bool | None = None
    perturb: str | None = None  # a registered perturbation (built-ins: PERTURBATIONS)
    perturb_seed: int | None = None

    @field_validator("perturb")
    @classmethod
    def _registered(cls, name: str | None) -> str | None:
        if name is not None and name not in _perturbations:
            known = ", ".join(_perturbations.names())
            raise ValueError(f"unknown perturbation {name!r} (known: {known})")
        return name

    @property
    def reorders(self) -> bool:
        return bool(self.rotate) or self.permute_seed is not None

    @property
    def changes_content(self) -> bool:
        """Not a format change: the question or an option reads differently."""
        return self.perturb is not None or bool(self.none_of_the_other) or bool(self.fresh_numbers)

    def describe(self) -> str:
        """A short label: ``labels=(A)``, ``rotate=2``; ``original`` for no change."""
        parts = [
            f"{k}={v!r}" if isinstance(v, str) and not v.strip() else f"{k}={v}"
            for k, v in self.model_dump(exclude_none=True).items()
        ]
        return ", ".join(parts) or "original"


def permutation_for(variant: Variant, sample_id: str, n: int) -> list[int]:
    """``order[j]`` = the original index of the option shown at position ``j``."""
    order = list(range(n))
    if variant.permute_seed is not None:
        random.Random(json_hash([variant.permute_seed, sample_id])).shuffle(order)
    if variant.rotate:
        r = variant.rotate % n
        order = order[-r:] + order[:-r] if r else order
    return order


def _reorder(sample: Sample, variant: Variant) -> Sample:
    if not sample.choices or not isinstance(sample.target, int):
        return sample
    texts = sample.metadata.get("option_texts")
    n = len(texts) if isinstance(texts, list) else len(sample.choices)
    order = permutation_for(variant, sample.id, n)
    target = order.index(sample.target)
    meta = {**sample.metadata, "option_order": order, "original_target": sample.target}
    if isinstance(texts, list):  # letter formulation: the letters stay, the texts move
        meta["option_texts"] = [texts[i] for i in order]
        return sample.model_copy(update={"target": target, "metadata": meta})
    choices = tuple(sample.choices[i] for i in order)
    return sample.model_copy(update={"choices": choices, "target": target, "metadata": meta})


NONE_OF_THE_OTHER = "None of the other choices"


def _none_of_the_other(sample: Sample) -> Sample:
    """One wrong option (seeded by item) becomes "None of the other choices"."""
    if not sample.choices or not isinstance(sample.target, int) or len(sample.choices) < 3:
        return sample
    texts = sample.metadata.get("option_texts")
    options = list(texts if isinstance(texts, list) else sample.choices)
    wrong = [i for i in range(len(options)) if i != sample.target]
    i = random.Random(json_hash(["none_of_the_other", sample.id])).choice(wrong)
    options[i] = NONE_OF_THE_OTHER
    meta = {**sample.metadata, "replaced_option": i}
    if isinstance(texts, list):
        meta["option_texts"] = options
        return sample.model_copy(update={"metadata": meta})
    return sample.model_copy(update={"choices": tuple(options), "metadata": meta})


def _renumbered(samples: Sequence[Sample], variant: Variant) -> list[Sample]:
    out = []
    for s in samples:
        solution = s.fields.get("solution")
        if not isinstance(solution, str) or s.choices or s.target is None:
            out.append(s)  # not a worked math problem: unchanged
            continue
        rng = random.Random(json_hash(["fresh_numbers", variant.perturb_seed or 0, s.id]))
        got = renumber(s.input, solution.split("####")[0], str(s.target), rng)
        if got is not None:
            meta = {**s.metadata, "original_target": s.target}
            out.append(s.model_copy(update={"input": got[0], "target": got[1], "metadata": meta}))
    return out


def _perturbed(samples: Sequence[Sample], variant: Variant) -> list[Sample]:
    assert variant.perturb is not None
    others = [s.input for s in samples]
    return [
        s.model_copy(
            update={
                "input": perturb_text(
                    variant.perturb,
                    s.input,
                    seed=variant.perturb_seed or 0,
                    item_id=s.id,
                    others=others,
                )
            }
        )
        for s in samples
    ]


def _numbered(sample: Sample) -> Sample:
    """Letter answers (``A``..) become number answers (``1``..) for ``1.``-style labels."""
    if sample.choices and sample.choices == _LETTER_CHOICES[: len(sample.choices)]:
        return sample.model_copy(
            update={"choices": tuple(str(i + 1) for i in range(len(sample.choices)))}
        )
    return sample


def apply_variant(task: Task, variant: Variant | None) -> Task:
    """``task`` presented as ``variant`` says. Raises ConfigError where the variant cannot
    apply (number labels on a task whose scorer reads letters from generated text)."""
    if variant is None or variant == Variant():
        return task
    numbers = variant.labels in ("1.", "(1)")
    if (
        numbers
        and task.kind == "generate"
        and any(s.spec.name == "choice_letter" for s in task.scorers)
    ):
        raise ConfigError(
            f"{task.name}: number labels do not apply: its scorer reads a letter from the "
            "generated reply.",
            hint="Use letter labels: A., (A), [A], A) or A:.",
        )
    prompt = task.prompt.model_copy(
        update={
            k: v
            for k, v in {
                "labels": variant.labels,
                "option_separator": variant.option_separator,
                "fewshot_separator": variant.fewshot_separator,
                "instruction": "" if variant.instruction is False else None,
            }.items()
            if v is not None
        }
    )

    def transform(samples: Sequence[Sample]) -> list[Sample]:
        out = _perturbed(samples, variant) if variant.perturb else list(samples)
        out = _renumbered(out, variant) if variant.fresh_numbers else out
        out = [_none_of_the_other(s) for s in out] if variant.none_of_the_other else out
        out = [_reorder(s, variant) if variant.reorders else s for s in out]
        return [_numbered(s) for s in out] if numbers else out

    load, pool = task.load, task.fewshot

    def load_variant(ctx: LoadContext) -> list[Sample]:
        # the items a run of ctx.n would have, before a variant leaves any out: a variant run
        # with --limit N pairs with the reference's first N, never with later items
        items = list(load(ctx))
        return transform(items[: ctx.n] if ctx.n else items)

    def fewshot_variant(ctx: LoadContext) -> list[Sample]:
        # shots keep their option order (only the asked item moves), but share the labels
        assert pool is not None
        shots = list(pool(ctx))
        return [_numbered(s) for s in shots] if numbers else shots

    return dataclasses.replace(
        task,
        prompt=prompt,
        load=load_variant,
        fewshot=fewshot_variant if pool is not None else None,
    )
