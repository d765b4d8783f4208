"""GSM8K scored exactly as lm-evaluation-harness 0.4.13 scores its ``gsm8k`` task (task
version 3.0, ``lm_eval/tasks/gsm8k/gsm8k.yaml``): the two filters and ``exact_match``.

- ``strict_lmeval`` (lm-eval's ``strict-match``): the *first* match of
  ``#### (\\-?[0-9\\.\\,]+)``, else ``"[invalid]"``.
- ``flexible_lmeval`` (lm-eval's ``flexible-extract``): the *last* match of
  ``(-?[$0-9.,]{2,})|(-?[0-9]+)`` anywhere in the reply (a ``#### N`` earlier in the reply
  does not win over a number after it), its first non-empty group, stripped; else
  ``"[invalid]"``. A match that is not a number (``...``) is kept as it is and then fails.
- comparison (lm-eval's ``exact_match`` with ``ignore_case: true, ignore_punctuation: false``
  and ``regexes_to_ignore: [",", "\\$", "(?s).*#### ", "\\.$"]``): each pattern is removed
  in that order from the extracted answer and from the reference, both are lowercased, and the
  *strings* must be equal: ``12.0`` is not ``12``, ``1234.50`` is not ``1234.5``.

The reference is GSM8K's full solution (lm-eval's ``doc_to_target: "{{answer}}"``, whose
``(?s).*#### `` prefix the comparison removes): ``Sample.fields["solution"]`` when the task
keeps it, else the target text. calipers' own numeric reading is ``numeric_match``.
"""

from __future__ import annotations

import re

from calipers.scorers._base import ScoreFn, scorer
from calipers.types import Sample, SampleOutput, Score

__all__ = ["INVALID", "gsm8k_lmeval", "lmeval_flexible", "lmeval_normalize", "lmeval_strict"]

INVALID = "[invalid]"
"""lm-eval's ``RegexFilter`` fallback when nothing matches."""
_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
_IGNORE = (",", "\\$", "(?s).*#### ", "\\.$")


def _regex_filter(pattern: re.Pattern[str], text: str, group_select: int) -> str:
    """lm-eval's ``RegexFilter.apply`` on one response."""
    found = pattern.findall(text)
    if not found:
        return INVALID
    match = found[group_select]
    if isinstance(match, tuple):
        groups = [g for g in match if g]
        match = groups[0] if groups else INVALID
    return str(match).strip()


def lmeval_strict(text: str) -> str:
    """lm-eval's ``strict-match`` extraction: the first ``#### N``, else ``[invalid]``."""
    return _regex_filter(_STRICT, text, 0)


def lmeval_flexible(text: str) -> str:
    """lm-eval's ``flexible-extract``: the last number-like match, else ``[invalid]``."""
    return _regex_filter(_FLEXIBLE, text, -1)


def lmeval_normalize(text: str) -> str:
    """What lm-eval's gsm8k ``exact_match`` compares: the ignored patterns removed in order,
    then lowercased."""
    for pattern in _IGNORE:
        text = re.sub(pattern, "", text)
    return text.lower()


def _reference(sample: Sample) -> str:
    solution = sample.fields.get("solution")
    return solution if isinstance(solution, str) else sample.target_text


@scorer("gsm8k_lmeval", metrics=("flexible_lmeval", "strict_lmeval"))
def gsm8k_lmeval() -> ScoreFn:
    """GSM8K as lm-eval 0.4.13 scores it: flexible-extract and strict-match, string equality.

    ``flexible_lmeval`` takes the reply's last number, ``strict_lmeval`` its first ``#### N``;
    both are compared as lm-eval's ``exact_match`` does (commas, ``$``, a final ``.`` removed,
    lowercased; no numeric equality). ``answer`` is the flexible extraction as lm-eval keeps it
    (``"$18."``), None when the reply has no number."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        reference = lmeval_normalize(_reference(sample))
        flexible, strict = lmeval_flexible(output.text), lmeval_strict(output.text)
        return Score(
            values={
                "flexible_lmeval": float(lmeval_normalize(flexible) == reference),
                "strict_lmeval": float(lmeval_normalize(strict) == reference),
            },
            answer=None if flexible == INVALID else flexible,
            metadata={"flexible": flexible, "strict": strict, "reference": reference},
        )

    return score
