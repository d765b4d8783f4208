"""Multiple-choice scorers: a letter read from a generation, or the option with the highest
log-likelihood."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache

from calipers.errors import DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.types import Sample, SampleOutput, Score

__all__ = [
    "argmax",
    "choice_letter",
    "extract_letter",
    "loglikelihood_mc",
    "loglikelihood_partial",
    "option_logprobs",
]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# "A" followed by one of these is read as a letter, followed by another lowercase word as the
# article ("A is right" vs "A good guess is C").
_NOT_ARTICLE = frozenset({"is", "was", "and", "or", "seems", "looks"})


@lru_cache(maxsize=32)
def _patterns(n: int) -> tuple[re.Pattern[str], ...]:
    up = _LETTERS[:n]
    lo = up.lower()
    letter = (
        rf"(?:([{up}])(?![A-Za-z0-9])"  # an uppercase letter standing alone
        rf"|([{lo}])(?=[)\]]|\s*(?:[.,;:!*]|$)))"  # or a lowercase one ending the phrase
    )
    deco = r"[\s*_`]*"
    return (
        # 1. the whole reply is a letter: "B", "(b)", "C.", "**D**"
        re.compile(rf"{deco}[(\[]?([{up}{lo}])[)\]]?[.:]?{deco}"),
        # 2. an explicit statement (the last one wins): "Answer: C", "the answer is (D)"
        re.compile(
            r"(?i:(?:final |correct )?answer|correct (?:option|choice))\b"
            r"(?:\s+(?i:is|would be|should be|will be))?\s*[:=\-]?"
            + deco
            + r"(?:(?i:option|choice|letter)\s+)?[(\[]?"
            + letter
        ),
        # 3. the reply starts with a labelled letter: "B. Paris", "(C) 12", "D: none"
        re.compile(rf"{deco}[(\[]?([{up}])(?:[)\].:]|\s*$)"),
        # 4. the first parenthesized letter: "I pick (C) because ..."
        re.compile(rf"\(([{up}])\)"),
        # 5. the first standalone capital letter: "I think B"
        re.compile(rf"(?<![A-Za-z0-9'])([{up}])(?![A-Za-z0-9'])(\s+[a-z]+)?"),
    )


def extract_letter(text: str, n_choices: int) -> str | None:
    """The option letter a reply chose, among the first ``n_choices`` letters, or None.

    Tried in order: the reply is just a letter; the last explicit "answer is X" / "Answer: X";
    a leading "X." / "(X)"; the first "(X)"; the first standalone capital letter (an "A" used
    as an article, "A good guess", is skipped). Lowercase letters count only in the first two
    forms. Answer texts without a letter are not matched to options.
    """
    if n_choices < 1:
        return None
    full, explicit, leading, paren, bare = _patterns(min(n_choices, len(_LETTERS)))
    if m := full.fullmatch(text):
        return m.group(1).upper()
    statements = list(explicit.finditer(text))
    if statements:
        m = statements[-1]
        return (m.group(1) or m.group(2)).upper()
    if m := leading.match(text):
        return m.group(1)
    if m := paren.search(text):
        return m.group(1)
    for m in bare.finditer(text):
        word = (m.group(2) or "").strip()
        if m.group(1) == "A" and word and word not in _NOT_ARTICLE:
            continue
        return m.group(1)
    return None


def argmax(values: Sequence[float]) -> int:
    """Index of the largest value; ties go to the lowest index."""
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def option_logprobs(sample: Sample, output: SampleOutput, n_options: int) -> list[float]:
    """The log-likelihood of each option, checked: present, one per option, none NaN. A
    failed check is a DataError, so the sample is recorded as an error, never as wrong."""
    if output.loglikelihood is None:
        raise DataError(f"Sample {sample.id!r} has no log-likelihoods to score.")
    lps = list(output.loglikelihood.logprobs)
    if len(lps) != n_options:
        raise DataError(
            f"Sample {sample.id!r}: {len(lps)} log-likelihoods for {n_options} choices."
        )
    if any(math.isnan(lp) for lp in lps):
        raise DataError(f"Sample {sample.id!r}: a log-likelihood is NaN.")
    return lps


def _choices(sample: Sample) -> tuple[str, ...]:
    if not sample.choices or not isinstance(sample.target, int):
        raise DataError(f"Sample {sample.id!r} is not multiple choice (choices + int target).")
    return sample.choices


@scorer("choice_letter", metrics=("acc",))
def choice_letter() -> ScoreFn:
    """The option letter read from a generated reply equals the target's letter.

    A is index 0. A reply with no recognizable letter scores 0 (see ``extract_letter``)."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        choices = _choices(sample)
        letter = extract_letter(output.text, len(choices))
        ok = letter is not None and letter == chr(65 + sample.target_index)
        return Score(values={"acc": float(ok)}, answer=letter)

    return score


@scorer("loglikelihood_mc", metrics=("acc", "acc_norm"), needs="loglikelihood")
def loglikelihood_mc() -> ScoreFn:
    """Multiple choice by log-likelihood, raw (acc) and length-normalized (acc_norm).

    ``acc`` picks the option with the highest summed log-probability; ``acc_norm`` divides
    each by ``len(choice)`` in characters first.

    The length is that of the option text itself (``sample.choices[i]``), not of the scored
    continuation (``" " + choice`` with the default template), as lm-eval 0.4.13's
    ``acc_norm`` (``lls / len(choice)`` over ``doc_to_choice``) and lighteval's
    ``acc_norm_nospace`` do. Ties go to the lowest index (as numpy's ``argmax``); an empty
    option counts as length 1 (lm-eval would divide by 0). ``answer`` is the ``acc`` choice's
    index.
    """

    async def score(sample: Sample, output: SampleOutput) -> Score:
        choices = _choices(sample)
        lps = option_logprobs(sample, output, len(choices))
        pred = argmax(lps)
        pred_norm = argmax([lp / max(1, len(c)) for lp, c in zip(lps, choices, strict=True)])
        target = sample.target_index
        return Score(
            values={"acc": float(pred == target), "acc_norm": float(pred_norm == target)},
            answer=str(pred),
            metadata={"logprobs": list(lps), "pred_norm": pred_norm},
        )

    return score


@scorer("loglikelihood_partial", metrics=("acc",), needs="loglikelihood")
def loglikelihood_partial() -> ScoreFn:
    """Multiple choice by partial evaluation: each option has its own context and every option
    scores the same continuation; the option under which it is likelier wins (``acc``, as
    ``loglikelihood_mc``; ties go to the lowest index). No ``acc_norm``: dividing the shared
    continuation's log-likelihood by its length would repeat ``acc``, and lm-eval's
    ``acc_norm`` would divide by the length of each option's *context* (its ``doc_to_choice``),
    which normalizes nothing that was scored; lm-eval's WinoGrande reports ``acc`` only."""
    inner = loglikelihood_mc()

    async def score(sample: Sample, output: SampleOutput) -> Score:
        sc = await inner(sample, output)
        return Score(
            values={"acc": sc.values["acc"]},
            answer=sc.answer,
            metadata={"logprobs": sc.metadata["logprobs"]},
        )

    return score
