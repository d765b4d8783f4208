"""Prompt formulation: how a sample (and its few-shot examples) becomes a model request.

Templates use ``{field}`` placeholders only: attribute access, indexing and format specs are
refused, so a task file can never reach into Python objects.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from calipers.errors import ConfigError
from calipers.types import ChatMessage, Sample

__all__ = [
    "DEFAULT_LABELS",
    "LabelStyle",
    "PromptTemplate",
    "option_label",
    "render",
    "sample_fields",
    "template_fields",
]

LabelStyle = Literal["A.", "(A)", "[A]", "A)", "A:", "1.", "(1)"]
DEFAULT_LABELS: LabelStyle = "A."

_FORMATTER = string.Formatter()


def template_fields(template: str) -> list[str]:
    """The placeholder names of a template; raises ConfigError on anything but ``{name}``."""
    names = []
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as e:
        raise ConfigError(f"Bad prompt template {template!r}: {e}.") from None
    for _lit, field, spec, conv in parsed:
        if field is None:
            continue
        if not field.isidentifier() or spec or conv:
            raise ConfigError(
                f"Bad placeholder {{{field}}} in template {template!r}.",
                hint="Use plain {name} placeholders; write {{ and }} for literal braces.",
            )
        names.append(field)
    return names


def render(template: str, fields: dict[str, Any]) -> str:
    missing = [f for f in template_fields(template) if f not in fields]
    if missing:
        raise ConfigError(
            f"Template {template!r} uses {', '.join(missing)}, which the sample does not have.",
            hint=f"Available fields: {', '.join(sorted(fields))}.",
        )
    return template.format_map(fields)


def option_label(i: int, labels: LabelStyle = DEFAULT_LABELS) -> str:
    """The label of option ``i`` in a style: ``A.`` -> ``C.``, ``(1)`` -> ``(3)``."""
    mark = str(i + 1) if "1" in labels else chr(65 + i)
    return labels.replace("1" if "1" in labels else "A", mark)


def _block(texts: Sequence[str], labels: LabelStyle, separator: str) -> str:
    return separator.join(f"{option_label(i, labels)} {t}" for i, t in enumerate(texts))


def sample_fields(
    sample: Sample, labels: LabelStyle = DEFAULT_LABELS, option_separator: str = "\n"
) -> dict[str, Any]:
    """Fields a template can use: input, target, choices (as a labelled block), the sample's
    extra fields.

    With other labels or separators than the default (a sensitivity variant), the option
    blocks ``choices`` and ``options`` are rebuilt in that style from the option texts
    (``metadata["option_texts"]`` when the choices are the letters themselves), and
    ``target_letter`` is the target's label mark (``B``, or ``2`` for number labels).
    """
    fields: dict[str, Any] = {"input": sample.input, "target": sample.target_text}
    styled = labels != DEFAULT_LABELS or option_separator != "\n"
    if sample.choices:
        fields["choices"] = _block(sample.choices, labels, option_separator)
        if isinstance(sample.target, int):
            fields["target_letter"] = option_label(sample.target, labels).strip("().[]:")
    fields.update(sample.fields)
    texts = sample.metadata.get("option_texts")
    # a variant moved or replaced options: the pre-rendered block is stale
    reordered = "option_order" in sample.metadata or "replaced_option" in sample.metadata
    if (styled or reordered) and "options" in fields:
        fields["options"] = _block(
            texts if isinstance(texts, list) else sample.choices or (), labels, option_separator
        )
    return fields


class PromptTemplate(BaseModel):
    """How a task asks its question.

    ``template`` renders the question part; ``answer`` renders a few-shot example's answer
    (placed after the question in plain mode, as the assistant turn in chat mode).
    ``instruction`` comes first, once. For multiple choice by log-likelihood, ``continuation``
    renders each option (``{choice}``) appended to the prompt. ``option_context``, when set,
    renders a piece per option (``{choice}``) that ends that option's own context: continuation
    ``i`` is then scored after the prompt plus piece ``i`` (WinoGrande's "partial evaluation":
    the piece is the option filling the blank, the continuation the rest of the sentence, the
    same for every option). With a chat template the piece follows the rendered chat prompt.
    ``labels`` and ``option_separator`` say how option blocks (``{choices}``, ``{options}``)
    are written.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: str = "{input}"
    answer: str = " {target}"
    instruction: str = ""
    fewshot_separator: str = "\n\n"
    continuation: str = " {choice}"
    labels: LabelStyle = DEFAULT_LABELS
    option_separator: str = "\n"
    option_context: str = ""

    def card(self) -> dict[str, str]:
        """The template as recorded in the methodology card. The option style and the
        per-option context appear only when they are not the default, so cards of runs made
        before they existed still match."""
        exclude = {
            k
            for k in ("labels", "option_separator", "option_context")
            if getattr(self, k) == type(self).model_fields[k].default
        }
        return self.model_dump(mode="json", exclude=exclude)

    def _fields(self, sample: Sample) -> dict[str, Any]:
        return sample_fields(sample, self.labels, self.option_separator)

    def _question(self, sample: Sample) -> str:
        return render(self.template, self._fields(sample))

    def _answer(self, sample: Sample) -> str:
        return render(self.answer, self._fields(sample))

    def plain(self, sample: Sample, shots: Sequence[Sample], system_prompt: str | None) -> str:
        """One completion prompt: system prompt, instruction, shots, then the question."""
        parts = [system_prompt] if system_prompt else []
        if self.instruction:
            parts.append(self.instruction)
        parts += [self._question(s) + self._answer(s) for s in shots]
        parts.append(self._question(sample))
        return self.fewshot_separator.join(parts)

    def chat(
        self, sample: Sample, shots: Sequence[Sample], system_prompt: str | None
    ) -> tuple[ChatMessage, ...]:
        """Chat messages: system prompt, then each shot as a user/assistant turn pair, then the
        question (the instruction prefixes the first user turn)."""
        msgs: list[ChatMessage] = []
        if system_prompt:
            msgs.append(ChatMessage(role="system", content=system_prompt))
        prefix = self.instruction + self.fewshot_separator if self.instruction else ""
        for s in shots:
            msgs.append(ChatMessage(role="user", content=prefix + self._question(s)))
            msgs.append(ChatMessage(role="assistant", content=self._answer(s).strip()))
            prefix = ""
        msgs.append(ChatMessage(role="user", content=prefix + self._question(sample)))
        return tuple(msgs)

    def continuations(self, sample: Sample) -> tuple[str, ...]:
        if not sample.choices:
            raise ConfigError(f"Sample {sample.id!r} has no choices to score.")
        base = self._fields(sample)
        return tuple(render(self.continuation, {**base, "choice": c}) for c in sample.choices)

    def contexts(self, sample: Sample) -> tuple[str, ...] | None:
        """Per-option context pieces (``option_context`` rendered for each choice), or None
        when the template scores every continuation after one shared context."""
        if not self.option_context:
            return None
        if not sample.choices:
            raise ConfigError(f"Sample {sample.id!r} has no choices to score.")
        base = self._fields(sample)
        return tuple(render(self.option_context, {**base, "choice": c}) for c in sample.choices)
