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
    EXIT_DECISION_ERROR,
    EXIT_DECISION_INTERNAL,
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_RUN_FAILED,
    CalipersError,
    format_exit_codes,
)

__all__ = [
    "COMMANDS",
    "DECISION_EXIT_CODES",
    "EXIT_ERROR",
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_RUN_FAILED",
    "SECTIONS",
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


# Each command's module, imported when the command runs or its help is shown, with its one-line
# summary for ``calipers --help`` (the command's own --help says the rest): the commands pull in
# numpy, scipy, SQLAlchemy, the web stack; ``calipers --help`` needs none.
COMMANDS: dict[str, tuple[str, str]] = {
    "ab": ("_ab", "Promote, keep watching or roll back the gateway's candidate."),
    "agent": ("_agent", "Agents over repeated trials: pass^k, flip rate, baselines."),
    "audit": ("_audit", "Items whose gold label is probably wrong."),
    "compare": ("_compare", "Is run B better than run A on the same items, and by how much?"),
    "converse": (
        "_converse",
        "Does a score hold up over turns? Probes and multi-turn tasks.",
    ),
    "contamination": ("_contamination", "Memorised items? Each check says what it can prove."),
    "fingerprint": ("_fingerprint", "Is it still the same model? Record and check its outputs."),
    "errors": ("_errors", "Why the failing samples failed: error types, worst first."),
    "gate": ("_gate", "Fail CI when the candidate is worse than the baseline."),
    "gateway": ("_gateway", "An OpenAI-compatible gateway: baseline, shadow and canary."),
    "items": ("_audit", "Item difficulty and discrimination: does the task separate?"),
    "judge-calibrate": ("_judge", "Measure a run's judge against human labels."),
    "leaderboard": ("_leaderboard", "Rank models per task with 95% rank intervals."),
    "model": ("_model_cards", "Model cards: licence, price, openness (model list / show)."),
    "models": ("_catalog", "Model providers and aliases: how to name a model (-m)."),
    "monitor": ("_monitor", "Metrics, drift and uncovered requests in the gateway's traffic."),
    "plan": ("_plan", "How many items to detect a difference, and what they cost."),
    "rag": ("_rag", "RAG stress tests: answers as the retrieved context degrades."),
    "report": ("_report", "Write an HTML report (offline) and its Markdown for runs."),
    "review": ("_review", "Human review: campaigns, raters, agreement, final labels."),
    "robustness": ("_sensitivity", "Is a model worse on questions written like real users'?"),
    "run": ("_run", "Evaluate a model on tasks and store the run."),
    "runs": ("_runs", "List stored runs, newest first."),
    "select": ("_select", "Choose a model: constraints, capability, cost, openness."),
    "sensitivity": ("_sensitivity", "How much does the score move under equivalent formats?"),
    "show": ("_runs", "One stored run: scores, methodology, categories, worst items."),
    "suite": ("_suite", "Suites built from your production logs (suite list / show)."),
    "tasks": ("_catalog", "Built-in tasks and suites; a task file works too (-t)."),
    "trend": ("_trend", "A model's score over time: changepoints, regression alert."),
    "ui": ("_ui", "Serve the web dashboard of runs, comparisons and monitoring."),
}

# How ``calipers --help`` groups the commands (a command in none is listed under "Other").
SECTIONS: dict[str, tuple[str, ...]] = {
    "Evaluate": ("run", "plan", "agent"),
    "Results (stored runs)": ("runs", "show", "errors", "report", "trend", "ui"),
    "Compare and decide": ("compare", "leaderboard", "gate", "select"),
    "Check the score": (
        "sensitivity",
        "robustness",
        "contamination",
        "audit",
        "items",
        "judge-calibrate",
        "rag",
        "converse",
    ),
    "Production": ("gateway", "ab", "monitor", "suite", "fingerprint"),
    "People": ("review",),
    "Catalogues": ("tasks", "models", "model"),
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


DECISION_EXIT_CODES = "calipers.decision_exit_codes"
"""``ctx.meta`` key a command sets when its exit 1 is a decision (``monitor --fail-on-drift``:
drift), so that an error exits 3 and a bug 4, as ``gate`` and ``ab`` do: never a decision."""


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
        """The commands in the sections of :data:`SECTIONS`, one line each: the summary from
        :data:`COMMANDS` (the command is not imported), else the command's own short help."""
        names = [n for n in self.list_commands(ctx) if n in COMMANDS or not self._hidden(n)]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        placed = {n for members in SECTIONS.values() for n in members}
        groups = [*SECTIONS.items(), ("Other", tuple(n for n in names if n not in placed))]
        for title, members in groups:
            rows = [(n, self._summary(n, limit)) for n in members if n in names]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows, col_max=max(len(n) for n in names))

    def _hidden(self, name: str) -> bool:
        return self.commands[name].hidden

    def _summary(self, name: str, limit: int) -> str:
        if name in COMMANDS:
            return COMMANDS[name][1]
        return self.commands[name].get_short_help_str(limit)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The exit-code table of :mod:`calipers.errors`, as it is drawn there."""
        super().format_epilog(ctx, formatter)
        with formatter.section("Exit codes"):
            for line in format_exit_codes().splitlines():
                formatter.write(f"{'':>{formatter.current_indent}}{line}\n")

    def invoke(self, ctx: click.Context) -> Any:
        decision = False  # a command that exits 1 for a decision: errors 3, bugs 4 (errors.py)
        try:
            return super().invoke(ctx)
        except CalipersError as e:
            decision = bool(ctx.meta.get(DECISION_EXIT_CODES))
            _report(ctx, f"[bold red]Error:[/] {_esc(e.message)}", e.hint)
            sys.exit(EXIT_DECISION_ERROR if decision else EXIT_ERROR)
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
            decision = bool(ctx.meta.get(DECISION_EXIT_CODES))
            sys.exit(EXIT_DECISION_INTERNAL if decision else EXIT_INTERNAL)


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
