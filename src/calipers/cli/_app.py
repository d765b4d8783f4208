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
    "EXIT_ERROR",
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_RUN_FAILED",
    "Context",
    "cli",
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


class CalipersGroup(click.Group):
    """Runs a command and maps failures to messages: a CalipersError prints its message and
    hint (exit 2); anything else is an internal error (exit 1); the traceback only with
    ``--debug``."""

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
                ctx, f"[bold red]Internal error:[/] {type(e).__name__}: {_esc(str(e))}",
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
    "--store", "store_url", envvar="CALIPERS_STORE", metavar="URL",
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
        "--store", "store_url_override", metavar="URL", expose_value=False, callback=remember,
        help="Database URL (default: SQLite under $CALIPERS_HOME or ./.calipers/).",
    )(f)


def main() -> None:
    cli(prog_name="calipers")
