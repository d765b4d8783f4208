"""The ``calipers`` command line (layer 4: thin, calls the library API)."""

from calipers.cli import (  # noqa: F401 - registers the commands
    _ab,
    _audit,
    _catalog,
    _compare,
    _contamination,
    _gate,
    _gateway,
    _judge,
    _leaderboard,
    _model_cards,
    _monitor,
    _plan,
    _report,
    _run,
    _runs,
    _select,
    _sensitivity,
    _suite,
    _ui,
)
from calipers.cli._app import cli, main

__all__ = ["cli", "main"]
