"""Model specs (``smollm2``, ``llamacpp:PATH``, ``openai:MODEL``, ``fake:echo``) to providers.

A spec goes one way: the alias (if any) is expanded, the prefix looked up in the provider
registry (which loads entry point group ``calipers.models``: the built-ins, then plugins),
and the provider's factory builds the provider from the rest of the spec.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calipers._util.registry import Plugins, Registry
from calipers.errors import ConfigError, UnknownNameError
from calipers.models._base import ModelOptions, ModelProvider

__all__ = [
    "AliasInfo",
    "ProviderInfo",
    "alias",
    "list_aliases",
    "list_providers",
    "register_provider",
    "resolve_model",
]

Factory = Callable[[str, ModelOptions], ModelProvider]


@dataclass(frozen=True)
class ProviderInfo:
    prefix: str
    factory: Factory
    usage: str
    description: str

    @property
    def name(self) -> str:
        return self.prefix


@dataclass(frozen=True)
class AliasInfo:
    """``name`` stands for ``spec`` (``smollm2`` -> ``llamacpp:@smollm2``)."""

    name: str
    spec: str
    description: str


_plugins = Plugins("calipers.models")
_providers = Registry("model provider", _plugins, ProviderInfo)
_aliases = Registry("model alias", _plugins, AliasInfo)


def register_provider(prefix: str, factory: Factory, *, usage: str, description: str) -> None:
    _providers.add(prefix, ProviderInfo(prefix, factory, usage, description))


def alias(name: str, spec: str, description: str) -> None:
    """``name`` stands for ``spec`` (e.g. ``smollm2`` -> ``llamacpp:<bundled gguf>``)."""
    _aliases.add(name, AliasInfo(name, spec, description))


def list_providers() -> list[ProviderInfo]:
    return list(_providers.items().values())


def list_aliases() -> dict[str, tuple[str, str]]:
    return {n: (a.spec, a.description) for n, a in _aliases.items().items()}


def resolve_model(spec: str, options: ModelOptions | None = None) -> ModelProvider:
    """Build the provider a spec names. Raises ConfigError/UnknownNameError with a hint."""
    spec = spec.strip()
    name, comma, options_text = spec.partition(",")  # an alias takes options: smollm2,threads=1
    name = name.strip()
    found = _aliases.peek(name)
    if found is None and ":" not in name:
        found = _aliases.find(name)  # an alias may come from any plugin: load them all
        if found is None:
            known = _aliases.names()
            raise UnknownNameError(
                "model",
                spec,
                known,
                hint="Use an alias (" + ", ".join(known) + ") or PROVIDER:NAME, e.g. "
                "llamacpp:model.gguf, openai:gpt-4o-mini, fake:echo. "
                "`calipers models` lists them.",
            )
    if found is not None:
        spec = found.spec + comma + options_text
    prefix, _sep, rest = spec.partition(":")
    info = _providers.get(prefix)
    if not rest:
        raise ConfigError(f"Model spec {spec!r} names no model.", hint=f"Usage: {info.usage}")
    return info.factory(rest, options or ModelOptions())
