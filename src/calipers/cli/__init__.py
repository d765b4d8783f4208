"""The ``calipers`` command line (layer 5: thin, calls the library API).

Each command's module is imported when the command is used (``_app.COMMANDS``), so
``calipers --help`` and ``calipers show`` do not pay for the imports of every other command.
"""

from calipers.cli._app import cli, main

__all__ = ["cli", "main"]
