"""The ``calipers`` command group: global options and one place that turns errors into
one-sentence messages and exit codes."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from calipers._util.environment import calipers_version
from calipers.errors import (  # the exit-code table lives with the errors
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_RUN_FAILED,
    CalipersError,
)

__all__ = [
    "COMMANDS",
    "EXIT_ERROR",
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_RUN_FAILED",
    "Context",
    "cli",
    "load_command",
    "main",
    "store_option",
]


class Context:
    def __init__(self, store_url: str | None, debug: bool) -> None:
        self.store_url = store_url
        self.debug = debug
        # Piped output is read by people too: do not squeeze tables into 80 columns.
        wide = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
        self.out = Console(highlight=False, width=wide)
        self.err = error_console()

    def print_json(self, data: Any) -> None:
        """JSON for scripts: written as is, never wrapped or styled by the console."""
        click.echo(json.dumps(data, indent=2, default=str))


def error_console() -> Console:
    """stderr for messages. Off a terminal (a pipe, a log, a test) lines are never hard-wrapped
    at a guessed width: scripts grep for whole sentences and paths."""
    return Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())


# Each command's module, imported when the command runs or its help is shown, with the first
# line of its help for ``calipers --help`` (a test checks these against the commands): the
# commands pull in numpy, scipy, SQLAlchemy, the web stack; ``calipers --help`` needs none.
COMMANDS: dict[str, tuple[str, str]] = {
    "ab": (
        "_ab",
        "Promote, keep watching or roll back the candidate, from the gateway's logged traffic.",
    ),
    "audit": (
        "_audit",
        "Flag items whose gold label is probably wrong: the runs agree, "
        "confidently, on another option.",
    ),
    "compare": ("_compare", "Is run B better than run A on the same items, and by how much?"),
    "contamination": (
        "_contamination",
        "Contamination checks, each a number with an interval and what it can and cannot prove.",
    ),
    "gate": (
        "_gate",
        "Fail CI when the candidate is worse than the baseline by more than --max-drop.",
    ),
    "gateway": (
        "_gateway",
        "Put an OpenAI-compatible gateway in front of a baseline and a candidate model server.",
    ),
    "items": (
        "_audit",
        "Item difficulty and discrimination, and whether the task still separates the models.",
    ),
    "judge-calibrate": (
        "_judge",
        "Measure a run's judge against human labels: agreement "
        "with intervals, confusion matrix, position and length bias; stored "
        "in the run so reports show it.",
    ),
    "leaderboard": (
        "_leaderboard",
        "Rank models per task with 95% rank intervals (bootstrap over items).",
    ),
    "model": (
        "_model_cards",
        "Model cards: licence, price, openness class and MOF class; measured practical factors.",
    ),
    "models": ("_catalog", "List model providers and aliases, with the spec syntax each takes."),
    "monitor": (
        "_monitor",
        "Monitor the gateway's traffic: metrics per window, drift, uncovered requests.",
    ),
    "plan": (
        "_plan",
        "How many items to detect a difference of --delta between two models "
        "(paired design, 80% power, alpha 0.05), and the time and tokens that costs.",
    ),
    "report": (
        "_report",
        "Write one HTML report (self-contained, works offline) and its Markdown for RUNs.",
    ),
    "robustness": (
        "_sensitivity",
        "How much worse is a model on questions written the way real users write?",
    ),
    "run": ("_run", "Evaluate a model on tasks and store the run."),
    "runs": ("_runs", "List stored runs, newest first."),
    "select": (
        "_select",
        "Choose a model: constraints, capability, cost, latency and openness in one report.",
    ),
    "sensitivity": (
        "_sensitivity",
        "Re-run a task under equivalent formulations and report how much the score moves.",
    ),
    "show": ("_runs", "Show one run: scores with intervals, methodology, categories, worst items."),
    "suite": ("_suite", "Evaluation suites built from your own production logs."),
    "tasks": (
        "_catalog",
        "List built-in tasks and suites. A path to a task file "
        "(.yaml/.json) also works as a task: see docs/tasks.md.",
    ),
    "ui": (
        "_ui",
        "Serve the web dashboard: runs, reports, comparisons, leaderboard, A/B status, monitoring.",
    ),
}


class _LazyCommands(dict[str, click.Command]):
    """``cli.commands[name]`` loads the command's module first, as ``get_command`` does."""

    def __missing__(self, name: str) -> click.Command:
        if name not in COMMANDS:
            raise KeyError(name)
        load_command(name)
        if not dict.__contains__(self, name):
            raise KeyError(name)
        return dict.__getitem__(self, name)


class CalipersGroup(click.Group):
    """Runs a command and maps failures to messages: a CalipersError prints its message and
    hint (exit 2); anything else is an internal error (exit 1); the traceback only with
    ``--debug``.

    Commands load lazily: a command's module (which registers it with ``@cli.command``) is
    imported the first time the command is looked up, so ``calipers show`` imports what
    ``show`` needs and ``calipers --help`` lists the commands from :data:`COMMANDS`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _LazyCommands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            load_command(cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing, with a stand-in carrying the help line of each command not
        loaded yet (shortened by click the same way)."""
        rows = [
            (name, self.commands.get(name) or click.Command(name, help=COMMANDS[name][1]))
            for name in self.list_commands(ctx)
        ]
        rows = [(name, cmd) for name, cmd in rows if not cmd.hidden]
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _cmd in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(n, cmd.get_short_help_str(limit)) for n, cmd in rows])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CalipersError as e:
            _report(ctx, f"[bold red]Error:[/] {_esc(e.message)}", e.hint)
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            sys.exit(EXIT_INTERRUPTED)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except Exception as e:
            _report(
                ctx,
                f"[bold red]Internal error:[/] {type(e).__name__}: {_esc(str(e))}",
                "This is a bug in calipers; run with --debug for the traceback.",
            )
            sys.exit(EXIT_INTERNAL)


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _report(ctx: click.Context, message: str, hint: str | None) -> None:
    obj = ctx.find_object(Context)
    console = obj.err if obj else error_console()
    if obj and obj.debug:
        console.print(traceback.format_exc(), markup=False)
    console.print(message)
    if hint:
        console.print(f"[dim]{_esc(hint)}[/]")


@click.group(cls=CalipersGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    "store_url",
    envvar="CALIPERS_STORE",
    metavar="URL",
    help="Database URL (default: SQLite under $CALIPERS_HOME or ./.calipers/). "
    "PostgreSQL: postgresql+psycopg://user:pass@host/db",
)
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(calipers_version(), prog_name="calipers")
@click.pass_context
def cli(ctx: click.Context, store_url: str | None, debug: bool) -> None:
    """calipers: LLM evaluation that refuses to print a number it cannot defend.

    \b
    Start here:
      calipers run                      evaluate the embedded SmolLM2 on the dynamic suite
      calipers run -m openai:MODEL --base-url http://127.0.0.1:8000/v1 -t dyn_arithmetic
      calipers runs                     list stored runs
      calipers show latest              one run: scores, categories, failures, methodology
      calipers tasks | calipers models  what can be evaluated, and with what

    \b
    Then:
      calipers compare A B | leaderboard   is the difference real? ranks with intervals
      calipers sensitivity | robustness    does the score survive format and typos?
      calipers contamination | audit       memorised items? wrong labels?
      calipers suite | gate | gateway      your own traffic, a CI gate, shadow/canary
      calipers model | select              openness, cost, and a decision report
    """
    ctx.obj = Context(store_url, debug)


def store_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--store URL`` on a subcommand too (``calipers run --store URL``), overriding the
    group option and ``CALIPERS_STORE``."""

    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value:
            ctx.ensure_object(Context).store_url = value

    return click.option(
        "--store",
        "store_url_override",
        metavar="URL",
        expose_value=False,
        callback=remember,
        help="Database URL (default: SQLite under $CALIPERS_HOME or ./.calipers/).",
    )(f)


def load_command(name: str) -> None:
    """Import the module that registers command ``name`` (see :data:`COMMANDS`)."""
    import importlib

    importlib.import_module(f"calipers.cli.{COMMANDS[name][0]}")


def main() -> None:
    cli(prog_name="calipers")
