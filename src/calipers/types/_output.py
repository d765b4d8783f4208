"""What a sample produced: a generation or a set of continuation log-likelihoods."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from calipers.types._episode import Transcript
from calipers.types._model import LoglikelihoodResult, ModelResponse

__all__ = ["SampleOutput"]


class SampleOutput(BaseModel):
    """Given to scorers. Exactly one of ``response`` (generation tasks) or ``loglikelihood``
    (multiple choice by log-probability) is set. An episode (a conversation or an agent's
    task) also carries its ``transcript``; ``response`` is then the model's last reply, so a
    single-reply scorer reads the final answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    response: ModelResponse | None = None
    loglikelihood: LoglikelihoodResult | None = None
    transcript: Transcript | None = None

    @property
    def text(self) -> str:
        return self.response.text if self.response else ""
