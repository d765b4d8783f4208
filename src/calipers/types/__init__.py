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
from calipers.types._summary import CallCounts, CategorySummary, RunSummary, TaskSummary, TopError

__all__ = [
    "CallCounts",
    "CategorySummary",
    "ChatMessage",
    "Estimate",
    "GenerateParams",
    "LoglikelihoodRequest",
    "LoglikelihoodResult",
    "ModelIdentity",
    "ModelRequest",
    "ModelResponse",
    "RunSummary",
    "Sample",
    "SampleOutput",
    "Score",
    "TaskSummary",
    "TokenStatsRequest",
    "TokenStatsResult",
    "TopError",
]
