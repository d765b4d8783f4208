"""The text of a task's items, as checked for overlap with a training corpus.

An item's text is what the model is shown of the benchmark item itself: the values of the
prompt template's placeholders in template order (the question, a passage or context...),
then the answer options, one per line (a log-likelihood task scores each option after the
prompt, so the model sees those too). The template's own wording ("Question:", "Answer:",
"The following are multiple choice questions...") is left out: it is calipers' formatting,
shared by every item, not benchmark content, and a corpus that quotes it would otherwise
overlap every item. Label-like fields (``subject``) and few-shot examples are left out too.
"""

from __future__ import annotations

from pathlib import Path

from calipers.errors import ConfigError
from calipers.tasks import LoadContext, Task, resolve_task, template_fields
from calipers.types import Sample

__all__ = ["item_text", "task_item_texts"]

_LABELS = frozenset({"subject", "target", "target_letter"})
_OPTIONS = frozenset({"options", "choices"})


def _options(sample: Sample) -> list[str]:
    texts = sample.metadata.get("option_texts")  # letter formulations keep them here
    if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
        return list(texts)
    return list(sample.choices or ())


def item_text(sample: Sample, template: str = "{input}") -> str:
    """The checked text of one item (see the module docstring)."""
    parts: list[str] = []
    for name in template_fields(template):
        if name in _LABELS or name in _OPTIONS:
            continue
        value = sample.input if name == "input" else sample.fields.get(name)
        if isinstance(value, str) and value not in parts:
            parts.append(value)
    parts.extend(_options(sample))
    return "\n".join(parts)


def task_item_texts(
    task: Task | str, data_dir: str | Path | None = None, limit: int | None = None
) -> list[tuple[str, str]]:
    """``(item id, text)`` for the items of a task (a registered name or a ``Task``), the
    first ``limit`` of them if given. ``data_dir`` defaults to ``$CALIPERS_DATA`` as for
    ``calipers run``; the ids are the ``sample_id`` of a stored run of that task."""
    if isinstance(task, str):
        found = resolve_task(task)  # a name or a task file
        if len(found) != 1:
            raise ConfigError(
                f"{task!r} is a suite of {len(found)} tasks; check one task.",
                hint=", ".join(t.name for t in found),
            )
        t = found[0]
    else:
        t = task
    ctx = LoadContext(n=limit or t.default_n, data_dir=Path(data_dir) if data_dir else None)
    samples = list(t.load(ctx))
    if limit is not None:
        samples = samples[:limit]
    return [(s.id, item_text(s, t.prompt.template)) for s in samples]
