"""What a sample produced: a generation or a set of continuation log-likelihoods."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from calipers.types._model import LoglikelihoodResult, ModelResponse

__all__ = ["SampleOutput"]


class SampleOutput(BaseModel):
    """Given to scorers. Exactly one of ``response`` (generation tasks) or ``loglikelihood``
    (multiple choice by log-probability) is set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    response: ModelResponse | None = None
    loglikelihood: LoglikelihoodResult | None = None

    @property
    def text(self) -> str:
        return self.response.text if self.response else ""
