"""``calipers run --config FILE`` and ``--save-config FILE``: a run's options kept in a file.

The file is YAML (or JSON, which YAML reads) mapping option names, as on the command line
without the dashes, to values: ``model: fake:echo``, ``task: [dyn_arithmetic]``, ``limit: 50``,
``temperature: 0``, ``cache: false``, ``max-tokens: 64``. It becomes the defaults of the options
(click's ``default_map``), so an option given on the command line, or through its environment
variable, overrides the file. An unknown key, or a value the option refuses, is an error naming
the file and line.

``--save-config FILE`` writes the options the run uses: every run option that has a value
(its default included, so a later calipers whose defaults moved repeats the same run) and the
command's own options (``deadline``, ``report-dir``, ``no-report``) where given.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from calipers._util.yamlloc import load_yaml, yaml_line
from calipers.cli._run_options import RUN_OPTIONS
from calipers.errors import ConfigError

__all__ = ["config_option", "save_config", "save_config_option"]

F = TypeVar("F", bound=Callable[..., Any])

# Options of ``calipers run`` that are not a run's settings: what to do this time.
_NOT_SAVED = {"config", "save_config", "resume", "as_json"}


def _key(param: click.Parameter) -> str:
    """The option as a config key: its long flag without the dashes (``max-tokens``)."""
    long = [o for o in param.opts if o.startswith("--")]
    return (long[0] if long else f"--{param.name}").removeprefix("--")


def _settings(command: click.Command) -> dict[str, click.Parameter]:
    """The command's options a configuration may set, by key."""
    return {
        _key(p): p
        for p in command.params
        if isinstance(p, click.Option) and p.expose_value and p.name not in _NOT_SAVED
    }


def _where(path: Path, text: str, key: object) -> str:
    line = yaml_line(text, [key]) if isinstance(key, str) else None
    return f"{path}:{line}" if line else str(path)


def _value(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.multiple and not isinstance(value, list | tuple):
        value = [value]
    if isinstance(value, dict | None):
        raise click.BadParameter(f"{value!r} is not a value", ctx=ctx, param=param)
    return param.type_cast_value(ctx, value)


def _load(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Read the file and make its options the command's defaults (eager: before the others)."""
    if value is None:
        return None
    path = Path(value)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"Cannot read the run configuration {path}: {e.strerror or e}.",
            hint="Write one with calipers run ... --save-config FILE.",
        ) from None
    data = load_yaml(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: a run configuration is a mapping of option: value, not a "
            f"{type(data).__name__}.",
            hint="For example:  model: fake:echo  (one option per line).",
        )
    settings = _settings(ctx.command)
    defaults: dict[str, Any] = {}
    for key, raw in data.items():
        param = settings.get(str(key).replace("_", "-"))
        if param is None:
            close = difflib.get_close_matches(str(key), list(settings), n=1)
            raise ConfigError(
                f"{_where(path, text, key)}: unknown option {key!r} in a run configuration.",
                hint=(f"Did you mean {close[0]!r}? " if close else "")
                + f"Options: {', '.join(sorted(settings))}.",
            )
        try:
            defaults[str(param.name)] = _value(ctx, param, raw)
        except click.BadParameter as e:
            raise ConfigError(
                f"{_where(path, text, key)}: option {key!r}: {e.message}",
                hint=f"See calipers run --help for --{_key(param)}.",
            ) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def config_option(f: F) -> F:
    return click.option(
        "--config",
        metavar="FILE",
        is_eager=True,
        callback=_load,
        help="Options from a YAML/JSON file (written by --save-config); options given "
        "here override it. Repeat a run from cron or CI with one command.",
    )(f)


def save_config_option(f: F) -> F:
    return click.option(
        "--save-config",
        metavar="FILE",
        help="Write the options this run uses to FILE, for calipers run --config FILE.",
    )(f)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def save_config(path: str | Path, ctx: click.Context, opts: dict[str, Any]) -> Path:
    """Write the options of this ``calipers run`` (module docstring) to ``path``."""
    out: dict[str, Any] = {}
    for key, param in _settings(ctx.command).items():
        name = str(param.name)
        value = opts.get(name)
        if value is None or value == ():
            continue
        own = name not in RUN_OPTIONS
        if own and ctx.get_parameter_source(name) is click.core.ParameterSource.DEFAULT:
            continue
        out[key] = _plain(value)
    target = Path(path)
    head = (
        "# calipers run --config FILE: the options of one run (options given on the command "
        "line override them)\n"
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            head + yaml.safe_dump(out, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
    except OSError as e:
        raise ConfigError(f"Cannot write {target}: {e.strerror or e}.") from None
    return target
