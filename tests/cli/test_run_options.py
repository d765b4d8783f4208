"""The run options are declared once (calipers.cli._run_options, from RunConfig's fields), and
every command that starts runs kept each option it had: names, flags, types, ranges, defaults.

``data/run_options_before.json`` is click's description of those commands' options (less the
help text) recorded from the code before the shared declaration, where each command wrote its
own block."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.cli._run_options import RUN_OPTIONS, run_config, run_fields, run_options
from calipers.models import DEFAULT_MODEL, ModelOptions
from calipers.runner import RunConfig
from calipers.tasks import DEFAULT_TASK

# ``flag_value`` is left out: click derives it, differently across the versions we support
# (8.2 reports a --x/--no-x pair's as False); the flags, type and default say the same.
UNSTABLE = {"help", "flag_value"}
BEFORE = {
    path: [{k: v for k, v in p.items() if k not in UNSTABLE} for p in params]
    for path, params in json.loads(
        (Path(__file__).parent / "data" / "run_options_before.json").read_text()
    ).items()
}

# The one deliberate change: gate's ``--no-cache`` flag is now the shared ``--cache/--no-cache``
# pair, unset unless given (so a stored run's setting stands), as gate's other run options.
GATE_CACHE = {
    "count": False,
    "default": None,
    "envvar": None,
    "hidden": False,
    "is_flag": True,
    "multiple": False,
    "name": "cache",
    "nargs": 1,
    "opts": ["--cache"],
    "param_type_name": "option",
    "prompt": None,
    "required": False,
    "secondary_opts": ["--no-cache"],
    "type": {"name": "boolean", "param_type": "Bool"},
}

# The run options each command takes (the rest of its options are its own).
USES: dict[str, str | list[str]] = {
    "run": [*RUN_OPTIONS],
    "sensitivity": "model formulation limit seed chat_template few_shot data_dir base_url",
    "robustness": "model formulation limit seed chat_template data_dir base_url",
    "gate": "limit seed few_shot formulation system_prompt data_dir base_url api_key_env "
    "concurrency max_tokens temperature n_ctx cache",
    "contamination perturbation": "model formulation limit seed chat_template data_dir",
    "contamination probes": "model seed data_dir",
    "contamination ngram": "data_dir",
}

# Options whose help a command words for itself (the default still comes from the field).
NARROWED = {
    ("sensitivity", "formulation"),
    ("sensitivity", "limit"),
    ("sensitivity", "chat_template"),
    ("sensitivity", "few_shot"),
    ("robustness", "limit"),
    ("gate", "base_url"),
    ("contamination perturbation", "formulation"),
    ("contamination probes", "model"),
}


def _command(path: str) -> click.Command:
    cmd: Any = cli
    for name in path.split():
        cmd = cmd.get_command(None, name)
    assert isinstance(cmd, click.Command)
    return cmd


def _info(cmd: click.Command) -> list[dict[str, Any]]:
    out = []
    for p in cmd.params:
        d = {k: v for k, v in p.to_info_dict().items() if k not in UNSTABLE}
        out.append(json.loads(json.dumps(d, default=repr)))
    return out


def _help(path: str) -> str:
    res = CliRunner().invoke(cli, [*path.split(), "--help"], terminal_width=400)
    assert res.exit_code == 0, res.output
    return re.sub(r"\s+", " ", res.output)


# Options added since the record, by command: new capabilities, not changes to old options.
ADDED = {
    "run": {"max_steps", "config", "save_config", "executor", "address", "workers", "fleet"},
    "gate": {"error_growth"},
}
# ... and one widened: --base-url given several times is a fleet (docs/fleet.md); once, as before.
REPEATABLE = {"base_url"}


@pytest.mark.parametrize("path", sorted(BEFORE))
def test_every_option_a_command_had_is_still_there_as_it_was(path: str) -> None:
    expected = [GATE_CACHE if p["name"] == "no_cache" else p for p in BEFORE[path]]
    expected = [p | {"multiple": True} if p["name"] in REPEATABLE else p for p in expected]
    info = _info(_command(path))
    added = ADDED.get(path, set())
    assert {p["name"] for p in info} >= added
    assert [p for p in info if p["name"] not in added] == expected


def _uses(path: str) -> list[str]:
    names = USES[path]
    return names.split() if isinstance(names, str) else list(names)


def test_each_run_option_is_declared_once_for_every_command() -> None:
    for path in USES:
        params = {p.name: p for p in _command(path).params}
        for name in _uses(path):
            flags = params[name].opts + params[name].secondary_opts
            assert "/".join(flags) == "/".join(RUN_OPTIONS[name].flags), (path, name)


def _shown(default: Any, name: str) -> str | None:
    """A default as --help should show it, worked out here from the field's value."""
    if isinstance(default, bool):
        return name.replace("_", "-") if default else f"no-{name.replace('_', '-')}"
    if isinstance(default, tuple):
        return ", ".join(default)
    if isinstance(default, float):
        return f"{default:g}"
    return None if default is None else str(default)


@pytest.mark.parametrize("path", sorted(USES))
def test_a_fields_help_and_default_reach_the_help_of_every_command(path: str) -> None:
    cmd = _command(path)
    ctx = click.Context(cmd, info_name=path)
    fields = {**ModelOptions.model_fields, **RunConfig.model_fields}
    target = {"task": "tasks", "cache": "use_cache", "timeout": "timeout_s"}
    target |= {"threads": "n_threads"}
    params = {p.name: p for p in cmd.params}
    text = _help(path)
    for name in _uses(path):
        record = params[name].get_help_record(ctx)
        assert record is not None
        line = re.sub(r"\s+", " ", record[1])
        assert line in text  # the line --help prints
        field = fields[target.get(name, name)]
        if (path, name) not in NARROWED:
            assert field.description and line.startswith(field.description), (path, name)
        shown = _shown(field.default, name)
        if shown is not None:
            assert f"[default: {shown}" in line, (path, name, line)


@pytest.mark.parametrize("path", ["run", "sensitivity", "robustness", "contamination probes"])
def test_the_default_model_shown_is_the_models_packages(path: str) -> None:
    assert f"[default: {DEFAULT_MODEL}]" in _help(path)


def test_the_default_task_shown_is_the_tasks_packages() -> None:
    assert f"Task, suite or task file; repeatable. [default: {DEFAULT_TASK}]" in _help("run")


# -- from parsed options to a RunConfig ----------------------------------------------------------


@click.command()
@run_options(*RUN_OPTIONS)
def _every(**opts: Any) -> None:
    raise AssertionError("not called")


def _parse(*args: str) -> dict[str, Any]:
    return dict(_every.make_context("every", list(args)).params)


def test_no_option_given_is_the_default_run_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CALIPERS_DATA", raising=False)
    assert run_config(_parse()) == RunConfig()


def test_each_option_reaches_its_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CALIPERS_DATA", raising=False)
    args = "-m fake:echo -t a -t b --formulation letter -n 7 --seed 3 --few-shot 2 "
    args += "--few-shot-seed 9 --no-chat-template --system-prompt hi --data-dir /d "
    args += "--base-url http://x/v1 --api-key-env K --concurrency 4 --timeout 2.5 "
    args += "--max-retries 0 --epochs 3 --max-tokens 16 --temperature 0.7 --n-ctx 512 "
    args += "--threads 2 --no-cache"
    assert run_config(_parse(*args.split())) == RunConfig(
        model="fake:echo",
        tasks=("a", "b"),
        formulation="letter",
        limit=7,
        seed=3,
        few_shot=2,
        few_shot_seed=9,
        chat_template=False,
        system_prompt="hi",
        data_dir="/d",
        max_tokens=16,
        temperature=0.7,
        concurrency=4,
        use_cache=False,
        epochs=3,
        model_options=ModelOptions(
            base_url="http://x/v1",
            api_key_env="K",
            concurrency=4,
            timeout_s=2.5,
            max_retries=0,
            n_ctx=512,
            n_threads=2,
        ),
    )


def test_explicit_fields_win_over_the_options() -> None:
    assert run_config(_parse("-t", "a", "--seed", "4"), tasks=("z",)).tasks == ("z",)


def test_an_overriding_command_passes_only_what_was_given() -> None:
    @click.command()
    @run_options("seed", "cache", "n_ctx", overrides=True)
    def cmd(**opts: Any) -> None:
        raise AssertionError("not called")

    assert run_fields(cmd.make_context("c", []).params) == {}
    given = cmd.make_context("c", ["--seed", "0", "--no-cache", "--n-ctx", "300"]).params
    assert run_fields(given) == {"seed": 0, "use_cache": False, "model_options": {"n_ctx": 300}}


@pytest.mark.parametrize(
    ("args", "bad"),
    [
        (["--limit", "0"], "--limit"),
        (["--few-shot", "-1"], "--few-shot"),
        (["--temperature", "-0.1"], "--temperature"),
        (["--timeout", "0"], "--timeout"),
        (["--max-retries", "-1"], "--max-retries"),
        (["--epochs", "0"], "--epochs"),
        (["--n-ctx", "255"], "--n-ctx"),
        (["--threads", "0"], "--threads"),
        (["--seed", "x"], "--seed"),
    ],
)
def test_the_fields_ranges_are_checked_on_the_command_line(args: list[str], bad: str) -> None:
    res = CliRunner().invoke(_every, args)
    assert res.exit_code == 2 and bad in res.output


def test_an_unknown_run_option_is_an_error_at_declaration() -> None:
    with pytest.raises(KeyError, match="nope"):
        run_options("seed", "nope")
