"""The run options, declared once: one click option per field of ``RunConfig``.

A command picks the options it needs, ``@run_options("model", "limit", "seed")`` or a group
such as ``*DECODING``, and builds its config from what was parsed with ``run_config(opts)``.
The option's type and range, its default and its help all come from the field
(``RunConfig.model_fields``, and ``ModelOptions`` for what is passed to the provider); the
table below adds only what a command line needs: the flags, a metavar, an environment
variable, and what an unset option means when the field's default is ``None``.

Adding a run option is one field on ``RunConfig`` (with its description) and one row here.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import click
from click.types import OptionHelpExtra
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from calipers.errors import ConfigError
from calipers.runner import RunConfig

__all__ = [
    "DECODING",
    "LLAMACPP",
    "PROMPT",
    "RUN_OPTIONS",
    "SERVER",
    "RunOption",
    "run_config",
    "run_fields",
    "run_options",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class RunOption:
    """How one run option appears on the command line. ``fields``: the RunConfig field(s) it
    sets (``model_options.x`` for a provider option; the first one gives type, default and
    help); ``unset``: what leaving it out means, where the field's default is ``None``;
    ``type``: only where the command line checks more than the field does. Where the option
    is not simply the field's value (``--base-url`` given several times is a fleet, ``--fleet``
    names a file): ``multiple`` (None: as the field), ``help``, and ``into``, which turns the
    parsed value into the fields it sets (``{"model_options.fleet": ...}``)."""

    flags: tuple[str, ...]
    fields: tuple[str, ...]
    metavar: str | None = None
    unset: str | None = None
    envvar: str | None = None
    type: click.ParamType[Any] | None = None
    multiple: bool | None = None
    help: str | None = None
    into: Callable[[Any], dict[str, Any]] | None = None


def _o(*flags: str, field: str | tuple[str, ...], **kw: Any) -> RunOption:
    return RunOption(flags, (field,) if isinstance(field, str) else field, **kw)


def _base_urls(urls: tuple[str, ...]) -> dict[str, Any]:
    """One ``--base-url``: the server; several: a fleet of servers of one model."""
    if len(urls) == 1:
        return {"model_options.base_url": urls[0]}
    return {"model_options.fleet": tuple({"url": u} for u in urls)}


def _fleet_file(path: str) -> dict[str, Any]:
    from calipers.models import read_fleet

    return {"model_options.fleet": tuple(e.model_dump() for e in read_fleet(path))}


RUN_OPTIONS: dict[str, RunOption] = {
    "model": _o("-m", "--model", field="model", metavar="SPEC"),
    "task": _o("-t", "--task", field="tasks", metavar="NAME|PATH"),
    "formulation": _o(
        "--formulation",
        field="formulation",
        metavar="NAME",
        unset="the one their published figures use",
    ),
    "limit": _o("-n", "--limit", field="limit"),
    "seed": _o("--seed", field="seed"),
    "few_shot": _o("--few-shot", field="few_shot", metavar="K", unset="the task's"),
    "few_shot_seed": _o("--few-shot-seed", field="few_shot_seed", unset="the task's"),
    "chat_template": _o("--chat-template/--no-chat-template", field="chat_template"),
    "system_prompt": _o("--system-prompt", field="system_prompt", metavar="TEXT"),
    "data_dir": _o(
        "--data-dir",
        field="data_dir",
        envvar="CALIPERS_DATA",
        type=click.Path(file_okay=False),
    ),
    "base_url": _o(
        "--base-url",
        field="model_options.base_url",
        metavar="URL",
        multiple=True,
        help="OpenAI-compatible server, e.g. .../v1; given several times: a fleet of one "
        "model's servers, requests spread over them (docs/fleet.md)",
        into=_base_urls,
    ),
    "fleet": _o(
        "--fleet",
        field="model_options.fleet",
        metavar="FILE",
        unset="none",
        type=click.Path(dir_okay=False),
        multiple=False,
        help="Servers of one model, requests spread over them (openai; docs/fleet.md), from a "
        "YAML list of url, api_key_env, max_concurrency; --concurrency bounds each",
        into=_fleet_file,
    ),
    "api_key_env": _o("--api-key-env", field="model_options.api_key_env", metavar="VAR"),
    "concurrency": _o(
        "--concurrency",
        field=("concurrency", "model_options.concurrency"),
        unset="the provider's",
    ),
    "timeout": _o("--timeout", field="model_options.timeout_s", metavar="SECONDS"),
    "max_retries": _o("--max-retries", field="model_options.max_retries", metavar="N"),
    "epochs": _o("--epochs", field="epochs"),
    "max_tokens": _o("--max-tokens", field="max_tokens", unset="the task's"),
    "max_steps": _o("--max-steps", field="max_steps", unset="the task's"),
    "temperature": _o("--temperature", field="temperature", unset="the task's"),
    "n_ctx": _o("--n-ctx", field="model_options.n_ctx", type=click.IntRange(min=256)),
    "threads": _o(
        "--threads",
        field="model_options.n_threads",
        metavar="N",
        unset="one core fewer than usable for generation, all for prompts",
        type=click.IntRange(min=1),
    ),
    "cache": _o("--cache/--no-cache", field="use_cache"),
}

# Groups a command can take whole (``@run_options(*SERVER)``).
PROMPT = ("few_shot", "few_shot_seed", "chat_template", "system_prompt")
SERVER = ("base_url", "fleet", "api_key_env", "concurrency", "timeout", "max_retries")
DECODING = ("epochs", "max_tokens", "temperature", "max_steps")
LLAMACPP = ("n_ctx", "threads")


def _field(path: str) -> FieldInfo:
    """The pydantic field at ``path`` (``seed``, ``model_options.timeout_s``)."""
    model: type[BaseModel] = RunConfig
    *parents, leaf = path.split(".")
    for name in parents:
        model = typing.cast("type[BaseModel]", model.model_fields[name].annotation)
    return model.model_fields[leaf]


def _base_type(info: FieldInfo) -> tuple[Any, bool]:
    """``(int, False)`` for ``int | None``; ``(str, True)`` for ``tuple[str, ...]`` (an
    option given once per item)."""
    ann = info.annotation
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        ann = next(a for a in typing.get_args(ann) if a is not type(None))
    if typing.get_origin(ann) is tuple:
        return typing.get_args(ann)[0], True
    return ann, False


def _click_type(info: FieldInfo) -> click.ParamType[Any]:
    """The field's type and range (``ge``/``gt``/``le``/``lt``) as a click type."""
    base, _ = _base_type(info)
    bound: dict[str, Any] = {}
    for m in info.metadata:
        for attr, key, is_open in (("ge", "min", False), ("gt", "min", True)):
            if getattr(m, attr, None) is not None:
                bound.update({key: getattr(m, attr), "min_open": is_open})
        for attr, key, is_open in (("le", "max", False), ("lt", "max", True)):
            if getattr(m, attr, None) is not None:
                bound.update({key: getattr(m, attr), "max_open": is_open})
    if base is int:
        return click.IntRange(**bound) if bound else click.INT
    if base is float:
        return click.FloatRange(**bound) if bound else click.FLOAT
    if base is str and not bound:
        return click.STRING
    raise TypeError(f"No command-line type for a {base} field with bounds {bound}.")


class _Option(click.Option):
    """Shows ``[default: ...]`` from the field (its default, or what unset means) in click's
    own brackets, next to the range, also where the option's value is ``None`` until given."""

    def __init__(self, *args: Any, shown_default: str | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.shown_default = shown_default

    def get_help_extra(self, ctx: click.Context) -> OptionHelpExtra:
        extra = super().get_help_extra(ctx)
        if self.shown_default:
            extra["default"] = self.shown_default
        return extra


def _shown(value: Any, flags: tuple[str, ...]) -> str:
    if isinstance(value, bool):  # as click shows a boolean flag's default
        on, _, off = flags[0].partition("/")
        return (on if value else off).lstrip("-")
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _option(name: str, overrides: bool, help_text: str | None) -> Callable[[F], F]:
    spec = RUN_OPTIONS[name]
    info = _field(spec.fields[0])
    base, multiple = _base_type(info)
    multiple = multiple if spec.multiple is None else spec.multiple
    default = None if info.default is None else _shown(info.default, spec.flags)
    shown = default or spec.unset
    text = (help_text or spec.help or info.description or "").rstrip(".")
    text += "; repeatable." if multiple else "."
    # The field's own default where a command sets every field; unset (None) where the
    # option only overrides something: a provider option (a resumed run keeps its own), a
    # repeatable one (nothing given: the field's default) and every one of a command whose
    # options override settings from elsewhere (gate: a stored run's).
    nested = "." in spec.fields[0]
    kw: dict[str, Any] = {
        "default": None if nested or multiple or overrides else info.default,
        "help": text,
        "metavar": spec.metavar,
        "envvar": spec.envvar,
        "multiple": multiple,
        "cls": _Option,
        "shown_default": shown,
    }
    if base is not bool:
        kw["type"] = spec.type or _click_type(info)
    return click.option(*spec.flags, name, **kw)


def run_options(
    *names: str, overrides: bool = False, help_for: Mapping[str, str] | None = None
) -> Callable[[F], F]:
    """Click options for these run options, in this order. ``overrides``: every option is
    unset (``None``) unless given, for a command that takes unset ones from elsewhere (gate:
    a stored run; its help says so), and shows the field's default; ``help_for``:
    a command's own words for an option whose meaning it narrows (``"Reference few-shot
    k"``); the default is still the field's."""
    unknown = [n for n in names if n not in RUN_OPTIONS]
    if unknown:
        raise KeyError(f"Not a run option: {', '.join(unknown)}.")
    options = [_option(n, overrides, (help_for or {}).get(n)) for n in names]

    def decorate(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def run_fields(opts: Mapping[str, Any]) -> dict[str, Any]:
    """RunConfig fields from a command's parsed options (``model_options`` as a dict). Only
    the options given: one left unset (``None``, or nothing for a repeatable one) is left out,
    so its field keeps RunConfig's default, or a stored run's value. A command's own option
    named like a run option (sensitivity's single ``--task``) goes in ``run_config``'s
    ``fields``, which win."""
    fields: dict[str, Any] = {}
    for name, spec in RUN_OPTIONS.items():
        value = opts.get(name)
        if value is None or value == ():
            continue
        paths = spec.into(tuple(value) if spec.multiple else value) if spec.into else None
        for path in paths or spec.fields:
            parent, _, leaf = path.rpartition(".")
            one = paths[path] if paths else value
            if parent:
                if leaf in fields.get(parent, {}):
                    raise ConfigError(
                        f"Both --{name.replace('_', '-')} and another option set {path}.",
                        hint="Give the servers one way: --base-url (repeated) or --fleet FILE.",
                    )
                fields.setdefault(parent, {})[leaf] = one
            else:
                fields[leaf] = tuple(one) if isinstance(one, list | tuple) else one
    return fields


def run_config(opts: Mapping[str, Any], **fields: Any) -> RunConfig:
    """The RunConfig of a command's parsed options; ``fields`` set the rest (``tasks`` of a
    one-task command, a ``variant``), over the options."""
    return RunConfig(**{**run_fields(opts), **fields})
