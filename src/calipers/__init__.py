"""calipers: LLM evaluation that refuses to print a number it cannot defend."""

from calipers._util.environment import calipers_version

__version__ = calipers_version()

__all__ = ["__version__"]
