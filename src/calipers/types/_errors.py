"""Why a failing sample failed: one label of an error taxonomy.

``calipers errors RUN`` gives every failing sample of a run one :class:`ErrorLabel`, by rules
where the task allows (the arithmetic of a worked answer recomputed, the option a multiple
choice reply picked, the exception a program raised, the IFEval instruction that failed) and by
a judge's open coding clustered into named categories otherwise (docs/errors.md). Compare and
gate read the labels of two runs to say which types grew or shrank.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ErrorLabel", "ErrorMethod"]

ErrorMethod = Literal["rule", "judge"]


class ErrorLabel(BaseModel):
    """``type``: the taxonomy's name for the failure (snake_case, e.g. ``calculation_slip``);
    ``detail``: the evidence in a line ("step 2: 17 * 3 = 41, should be 51");
    ``method``: ``rule`` (deterministic) or ``judge`` (open coding, calibrated or not)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    detail: str = ""
    method: ErrorMethod = "rule"
