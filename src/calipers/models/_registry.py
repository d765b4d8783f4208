"""Model specs (``smollm2``, ``llamacpp:PATH``, ``openai:MODEL``, ``fake:echo``) to providers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calipers._util.plugins import Registrations
from calipers.errors import ConfigError, UnknownNameError
from calipers.models._base import ModelOptions, ModelProvider

__all__ = ["ProviderInfo", "alias", "list_providers", "register_provider", "resolve_model"]

Factory = Callable[[str, ModelOptions], ModelProvider]


@dataclass(frozen=True)
class ProviderInfo:
    prefix: str
    factory: Factory
    usage: str
    description: str


_PROVIDERS: dict[str, ProviderInfo] = {}
_ALIASES: dict[str, tuple[str, str]] = {}


def register_provider(prefix: str, factory: Factory, *, usage: str, description: str) -> None:
    if prefix in _PROVIDERS and _PROVIDERS[prefix].factory is not factory:
        raise ConfigError(f"Model provider prefix {prefix!r} is already registered.")
    _PROVIDERS[prefix] = ProviderInfo(prefix, factory, usage, description)


def alias(name: str, spec: str, description: str) -> None:
    """``name`` stands for ``spec`` (e.g. ``smollm2`` -> ``llamacpp:<bundled gguf>``)."""
    _ALIASES[name] = (spec, description)


def list_providers() -> list[ProviderInfo]:
    _load_plugins()
    return sorted(_PROVIDERS.values(), key=lambda p: p.prefix)


def list_aliases() -> dict[str, tuple[str, str]]:
    _load_plugins()
    return dict(sorted(_ALIASES.items()))


def resolve_model(spec: str, options: ModelOptions | None = None) -> ModelProvider:
    """Build the provider a spec names. Raises ConfigError/UnknownNameError with a hint."""
    _load_plugins()
    options = options or ModelOptions()
    spec = spec.strip()
    name, comma, options_text = spec.partition(",")  # an alias takes options: smollm2,threads=1
    if name.strip() in _ALIASES:
        spec = _ALIASES[name.strip()][0] + comma + options_text
    prefix, sep, rest = spec.partition(":")
    if not sep:
        raise UnknownNameError(
            "model",
            spec,
            list(_ALIASES),
            hint="Use an alias (" + ", ".join(_ALIASES) + ") or PROVIDER:NAME, e.g. "
            "llamacpp:model.gguf, openai:gpt-4o-mini, fake:echo. `calipers models` lists them.",
        )
    if prefix not in _PROVIDERS:
        raise UnknownNameError("model provider", prefix, list(_PROVIDERS))
    if not rest:
        raise ConfigError(
            f"Model spec {spec!r} names no model.", hint=f"Usage: {_PROVIDERS[prefix].usage}"
        )
    return _PROVIDERS[prefix].factory(rest, options)


def _register_builtins() -> None:
    from calipers.models import _builtins

    _builtins.register()


# Third-party providers: entry points in group ``calipers.models``, each a ``register()``.
_registrations = Registrations("calipers.models", _register_builtins)
_load_plugins = _registrations.ensure
