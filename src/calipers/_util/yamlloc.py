"""Where in a YAML file a validation error points: the line of a field, for messages such as
``task.yaml:12: field 'prompt.template' ...``."""

from __future__ import annotations

from collections.abc import Sequence

import yaml

__all__ = ["yaml_line"]


def yaml_line(text: str, loc: Sequence[str | int]) -> int | None:
    """Line (1-based) of the YAML node at ``loc``, or of its nearest existing parent."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
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
