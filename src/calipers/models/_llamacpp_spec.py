"""``llamacpp:`` specs: ``PATH.gguf`` or ``@smollm2``, then options after commas
(``llamacpp:@smollm2,threads=1,threads_batch=2,n_ctx=2048``; ``smollm2,threads=1`` through the
alias). An option given both in the spec and as a command-line option (``--threads``) must
agree."""

from __future__ import annotations

from typing import Any

from calipers.errors import ConfigError
from calipers.models._base import ModelOptions

__all__ = ["SPEC_OPTIONS", "parse_llamacpp_spec"]

# spec option -> (ModelOptions field, smallest value)
SPEC_OPTIONS: dict[str, tuple[str, int]] = {
    "threads": ("n_threads", 1),
    "threads_batch": ("n_threads_batch", 1),
    "n_ctx": ("n_ctx", 256),
}
_HINT = (
    "Options: threads=N (generation), threads_batch=N (prompts), n_ctx=N; "
    "e.g. llamacpp:model.gguf,threads=1 or smollm2,threads=1."
)


def _value(key: str, raw: str, rest: str) -> int:
    low = SPEC_OPTIONS[key][1]
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low:
        raise ConfigError(
            f"Bad llamacpp model option {key}={raw!r} in {rest!r}: expected an integer >= {low}.",
            hint=_HINT,
        )
    return value


def parse_llamacpp_spec(rest: str, options: ModelOptions) -> tuple[str, ModelOptions]:
    """The model (path or ``@name``) and ``options`` with the spec's options applied."""
    source, *opts = rest.split(",")
    updates: dict[str, Any] = {}
    for opt in opts:
        key, sep, raw = opt.partition("=")
        key = key.strip()
        if not sep or key not in SPEC_OPTIONS:
            raise ConfigError(f"Unknown llamacpp model option {opt.strip()!r}.", hint=_HINT)
        field = SPEC_OPTIONS[key][0]
        value = _value(key, raw.strip(), rest)
        given = getattr(options, field)
        default = ModelOptions.model_fields[field].default
        if given is not None and given != default and given != value:
            flag = "--" + field.removeprefix("n_").replace("_", "-")
            raise ConfigError(
                f"The model spec says {key}={value} but {flag} says {given}.",
                hint="Give it once: in the spec or as a command-line option.",
            )
        updates[field] = value
    return source.strip(), options.model_copy(update=updates) if updates else options
