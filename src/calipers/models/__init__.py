"""Model providers: protocol, registry and built-ins (llamacpp, openai, fake)."""

from calipers.models._base import FleetEndpoint, ModelOptions, ModelProvider
from calipers.models._calls import CallStats, Retry, current_calls, track_calls
from calipers.models._fake import FakeModel
from calipers.models._fleet_file import read_fleet
from calipers.models._registry import (
    ProviderInfo,
    list_aliases,
    list_providers,
    register_provider,
    resolve_model,
)

DEFAULT_MODEL = "smollm2"

__all__ = [
    "DEFAULT_MODEL",
    "CallStats",
    "FakeModel",
    "FleetEndpoint",
    "ModelOptions",
    "ModelProvider",
    "ProviderInfo",
    "Retry",
    "current_calls",
    "list_aliases",
    "list_providers",
    "read_fleet",
    "register_provider",
    "resolve_model",
    "track_calls",
]
