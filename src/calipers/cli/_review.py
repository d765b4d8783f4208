"""``calipers review``: human review campaigns. The group lists its subcommands from
:data:`SUBCOMMANDS` and imports a subcommand's module only when it runs or shows its help; the
work is done in :mod:`calipers.review` and :mod:`calipers.web`."""

from __future__ import annotations

import importlib
from typing import Any

import click

from calipers.cli._app import cli

__all__ = ["SUBCOMMANDS", "review_group"]

# subcommand -> (module under calipers.cli, one-line summary for ``calipers review --help``)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "create": (
        "_review_create",
        "Create a campaign from a run, two runs, a suite, traffic or a file.",
    ),
    "invite": (
        "_review_admin",
        "Invite a rater, adjudicator or owner: prints their personal link.",
    ),
    "raters": ("_review_admin", "The campaign's raters: pool, role, answered, skipped, excluded."),
    "exclude": ("_review_admin", "Exclude a rater (recorded, reversible with include)."),
    "include": ("_review_admin", "Reverse an exclusion."),
    "list": ("_review_admin", "List review campaigns."),
    "status": ("_review_admin", "A campaign's progress: items judged, open leases, skips."),
    "import-labels": ("_review_import", "Import labels people already gave (e.g. XSTest's)."),
    "queue": ("_review_decide", "Items whose raters disagree, waiting for an adjudicator."),
    "adjudicate": ("_review_decide", "Decide an item's final answer (recorded with who decided)."),
    "report": ("_review_report", "Agreement, rates, ratings and final labels of a campaign."),
    "export": ("_review_report", "Export final labels: JSONL, CSV, Label Studio, Argilla, suite."),
    "serve": ("_review_serve", "Serve the rater, adjudicator and owner pages."),
}


class _ReviewGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(SUBCOMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            importlib.import_module(f"calipers.cli.{SUBCOMMANDS[cmd_name][0]}")
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, SUBCOMMANDS[n][1]) for n in SUBCOMMANDS]
        rows += [
            (n, c.get_short_help_str()) for n, c in self.commands.items() if n not in SUBCOMMANDS
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@cli.group("review", cls=_ReviewGroup)
def review_group(**_: Any) -> None:
    """Human review: people who know the product judge real outputs.

    \b
    Create a campaign, invite raters, let them label in the browser, then report:
      calipers review create support-q4 --from run:RUN_ID --questions q.yaml --k 3
      calipers review invite support-q4 --rater alice --pool business
      calipers review serve support-q4
      calipers review report support-q4
    See docs/review.md.
    """
