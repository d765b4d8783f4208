"""Value objects shared by every layer."""

from calipers.types._estimate import Estimate
from calipers.types._model import (
    ChatMessage,
    GenerateParams,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    TokenStatsRequest,
    TokenStatsResult,
)
from calipers.types._output import SampleOutput
from calipers.types._sample import Sample
from calipers.types._score import Score

__all__ = [
    "ChatMessage",
    "Estimate",
    "GenerateParams",
    "LoglikelihoodRequest",
    "LoglikelihoodResult",
    "ModelIdentity",
    "ModelRequest",
    "ModelResponse",
    "Sample",
    "SampleOutput",
    "Score",
    "TokenStatsRequest",
    "TokenStatsResult",
]
