"""The ``calipers`` command line (layer 4: thin, calls the library API)."""

from calipers.cli import _catalog, _run, _runs  # noqa: F401 - registers the commands
from calipers.cli._app import cli, main

__all__ = ["cli", "main"]
