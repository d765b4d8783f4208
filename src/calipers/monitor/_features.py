"""What drift is measured on: per request, the input's features and the served output's.

Input: the prompt's text and length (characters) and its language. Output, of the call whose
answer the user got: the reply's length (characters) and whether it is a refusal (answered
calls only), whether the call failed (every call), and each online score (NaN = unscored,
left out). For a request that carries retrieved passages (``calipers_rag``), whether its
answered call gave an answer no passage supports, and whether it abstained
(:mod:`calipers.monitor._rag`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from calipers.monitor._rag import rag_answer
from calipers.monitor._scores import ScoreIndex
from calipers.monitor._traffic import Exchange
from calipers.monitor._windows import is_refusal

__all__ = ["Features", "extract_features"]

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Features:
    texts: list[str]
    prompt_length: Floats
    language: list[str]
    response_length: Floats
    refused: list[int]
    errored: list[int]
    scores: dict[str, Floats] = field(default_factory=dict)
    rag_unsupported: list[int] = field(default_factory=list)
    rag_abstained: list[int] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.texts)


def extract_features(
    exchanges: Sequence[Exchange], scores: ScoreIndex, detect: Callable[[str], str]
) -> Features:
    texts = [ex.prompt for ex in exchanges]
    served = [(ex.pair_id, ex.served) for ex in exchanges]
    ok = [r for _p, r in served if r is not None and r.ok]
    per_scorer = {
        name: np.array(
            [scores.of(pid, r.role).get(name, math.nan) for pid, r in served if r is not None],
            dtype=np.float64,
        )
        for name in scores.scorers
    }
    rag = [o for ex in exchanges if (o := rag_answer(ex, ex.served)) is not None]
    return Features(
        texts=texts,
        prompt_length=np.array([len(t) for t in texts], dtype=np.float64),
        language=[detect(t) for t in texts],
        response_length=np.array([len(r.response or "") for r in ok], dtype=np.float64),
        refused=[int(is_refusal(r.response)) for r in ok],
        errored=[int(not r.ok) for _p, r in served if r is not None],
        scores=per_scorer,
        rag_unsupported=[int(o == "unsupported") for o in rag],
        rag_abstained=[int(o == "abstained") for o in rag],
    )
