"""Reading YAML that a user wrote: safe, bounded, and with the line of every problem.

:func:`load_yaml` is the one way calipers reads YAML. It is ``yaml.safe_load`` with limits on
the text's size, the nesting depth and how far anchors and aliases expand, so an alias bomb
("billion laughs": ten aliases of ten aliases of ...) fails at once with the file named instead
of growing without bound in whatever walks the result (pydantic, hashing, JSON). Every failure
is a :class:`YamlError` (a ``ConfigError``) whose message starts with ``file:line``.

:func:`yaml_line` says where in a YAML file a validation error points: the line of a field, for
messages such as ``task.yaml:12: field 'prompt.template' ...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from calipers.errors import ConfigError

__all__ = [
    "MAX_YAML_CHARS",
    "MAX_YAML_DEPTH",
    "MAX_YAML_EXPANDED",
    "YamlError",
    "load_yaml",
    "yaml_line",
]

MAX_YAML_CHARS = 5_000_000  # a settings file, not a data set
MAX_YAML_DEPTH = 64  # nested mappings and lists
# The size of the loaded value with every alias written out, counted as each scalar's
# characters plus one per value. Without aliases it is at most about twice the text's length.
MAX_YAML_EXPANDED = 2 * MAX_YAML_CHARS

_ALIAS_HINT = (
    "Anchors (&name) and aliases (*name) may repeat a value, not multiply it: write the "
    "values out, or use fewer aliases of aliases."
)


class YamlError(ConfigError):
    """A YAML file is not valid YAML or is over one of the limits. ``where`` is ``file`` or
    ``file:line``; ``problem`` says what is wrong."""

    def __init__(self, where: str, problem: str, *, hint: str | None = None) -> None:
        super().__init__(f"{where}: {problem}.", hint=hint)
        self.where = where
        self.problem = problem


class _Limit(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any, hint: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark
        self.hint = hint


class _BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that stops composing past :data:`MAX_YAML_DEPTH` levels."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise _Limit(
                    f"YAML nested deeper than {MAX_YAML_DEPTH} levels",
                    event.start_mark,
                    "Flatten the structure; a settings file needs a few levels.",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand it past :data:`MAX_YAML_EXPANDED`, or that refers
    to itself. An alias is the same node object as its anchor, so each size is computed once."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise _Limit(
                "a YAML alias refers to a value that contains it (a recursive structure)",
                node.start_mark,
                _ALIAS_HINT,
            )
        open_.add(key)
        total = 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        open_.discard(key)
        if total > MAX_YAML_EXPANDED:
            raise _Limit(
                f"YAML aliases expand it past {MAX_YAML_EXPANDED:,} characters",
                node.start_mark,
                _ALIAS_HINT,
            )
        sizes[key] = total
        return total

    size(root)


def _compose(text: str) -> tuple[_BoundedLoader, yaml.Node | None]:
    loader = _BoundedLoader(text)
    try:
        return loader, loader.get_single_node()
    except BaseException:
        loader.dispose()
        raise


def load_yaml(text: str, source: str | Path) -> Any:
    """``yaml.safe_load(text)`` within the limits above; ``source`` names the file in errors.

    Raises :class:`YamlError` for text that is not YAML or is over a limit."""
    if len(text) > MAX_YAML_CHARS:
        raise YamlError(
            str(source),
            f"{len(text):,} characters of YAML is over the {MAX_YAML_CHARS:,} calipers reads",
            hint="A settings file holds settings; put data in a data file.",
        )
    try:
        loader, node = _compose(text)
        try:
            if node is None:
                return None
            _check_expansion(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else str(source)
        if isinstance(e, _Limit):
            raise YamlError(where, e.problem, hint=e.hint) from None
        problem = getattr(e, "problem", None) or str(e)
        raise YamlError(where, f"not valid YAML ({problem})") from None
    except RecursionError:  # a structure deep enough to exhaust the stack before our limit
        raise YamlError(
            str(source),
            f"YAML nested deeper than {MAX_YAML_DEPTH} levels",
            hint="Flatten the structure.",
        ) from None


def yaml_line(text: str, loc: Sequence[str | int]) -> int | None:
    """Line (1-based) of the YAML node at ``loc``, or of its nearest existing parent."""
    try:
        loader, node = _compose(text)
        loader.dispose()
    except (yaml.YAMLError, RecursionError):
        return None
    line = node.start_mark.line + 1 if node else None
    for key in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        if nxt is None:
            break
        node, line = nxt, nxt.start_mark.line + 1
    return line
