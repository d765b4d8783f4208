"""Value objects shared by every layer."""

from calipers.types._episode import (
    EPISODE_STOPS,
    Environment,
    EpisodeLimits,
    EpisodeStop,
    Step,
    ToolError,
    Transcript,
    Turn,
)
from calipers.types._errors import ErrorLabel, ErrorMethod
from calipers.types._estimate import Estimate
from calipers.types._fingerprint import Fingerprint, FingerprintProbe, FingerprintSettings
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
    ToolCall,
    ToolSpec,
)
from calipers.types._output import SampleOutput
from calipers.types._sample import Sample
from calipers.types._score import Score
from calipers.types._summary import CallCounts, CategorySummary, RunSummary, TaskSummary, TopError

__all__ = [
    "EPISODE_STOPS",
    "CallCounts",
    "CategorySummary",
    "ChatMessage",
    "Environment",
    "EpisodeLimits",
    "EpisodeStop",
    "ErrorLabel",
    "ErrorMethod",
    "Estimate",
    "Fingerprint",
    "FingerprintProbe",
    "FingerprintSettings",
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
    "Step",
    "TaskSummary",
    "TokenStatsRequest",
    "TokenStatsResult",
    "ToolCall",
    "ToolError",
    "ToolSpec",
    "TopError",
    "Transcript",
    "Turn",
]
