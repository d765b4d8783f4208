"""Task spec files: data-only YAML/JSON, safe-loaded and validated; no code in them.

A spec names a data file (JSONL, JSON or CSV, relative to the spec), maps its fields,
and chooses a prompt template, scorers and decoding parameters::

    name: capitals
    version: "1"
    data: capitals.jsonl
    fields: {input: question, target: answer}
    prompt: {template: "Q: {input}\\nA:"}
    scorers: [normalized_match]

A RAG task maps its fields under ``rag:`` instead of ``fields:`` (questions with passages,
answer aliases or "unanswerable"; :class:`calipers.tasks.rag.RagFields`); its prompt, scorer
(``rag_outcome``) and a short ``max_tokens`` default to the built-in RAG tasks' ::

    name: support_rag
    data: support.jsonl
    rag: {question: query, answers: gold_answers, passages: contexts}

A conversation task maps its fields under ``conversation:`` (user turns, golden replies,
checks at chosen turns; :class:`calipers.tasks.conversation.ConversationFields`); its scorer
is ``conversation_checks``, its items are played turn by turn (docs/conversations.md) ::

    name: support_dialogs
    data: dialogs.jsonl
    conversation: {turns: user_turns, history: own}

Every error names the file, the line (YAML) or the field, and what is expected.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, Literal, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from calipers._util.yamlloc import YamlError, load_yaml, yaml_line
from calipers.datasets import read_records
from calipers.errors import CalipersError, DataError, TaskSpecError
from calipers.scorers import ScorerSpec, build_scorer
from calipers.tasks._prompt import PromptTemplate, template_fields
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.conversation import (
    ConversationFields,
    conversation_task,
    read_conversation_file,
)
from calipers.tasks.rag import RAG_INSTRUCTION, RAG_TEMPLATE, RagFields, read_rag_file
from calipers.types import GenerateParams, Sample

__all__ = ["TaskSpec", "load_task_spec"]


class FieldMap(BaseModel):
    """Which column of the data holds what. Only ``input`` is required."""

    model_config = ConfigDict(extra="forbid")

    input: str = "input"
    target: str | None = "target"
    id: str | None = None
    choices: str | None = None
    category: str | None = None
    cluster: str | None = None
    extra: list[str] = Field(default_factory=list, description="columns usable in templates")


class FewShot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(0, ge=0)
    seed: int = 1234
    sampling: Literal["per_item", "fixed"] = "per_item"
    data: str | None = None  # a separate file; few-shot items never come from the eval data


class TaskSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    version: str = "1"
    description: str = ""
    data: str
    kind: Literal["generate", "multiple_choice"] = "generate"
    target_type: Literal["text", "index", "letter", "choice_text"] = "text"
    fields: FieldMap = Field(default_factory=FieldMap)
    prompt: PromptTemplate = Field(default_factory=PromptTemplate)
    few_shot: FewShot = Field(default_factory=FewShot)
    scorers: list[str | ScorerSpec] = Field(min_length=1)
    generation: GenerateParams = Field(default_factory=GenerateParams)
    source: str = "user"
    license: str = "unknown"
    rag: RagFields | None = None
    conversation: ConversationFields | None = None

    @model_validator(mode="before")
    @classmethod
    def _conversation_defaults(cls, data: Any) -> Any:
        """A ``conversation:`` spec: ``conversation_checks`` unless given; no field map."""
        if not isinstance(data, dict) or data.get("conversation") is None:
            return data
        for other in ("fields", "rag", "prompt", "few_shot"):
            if other in data:
                raise ValueError(f"a conversation task takes no `{other}:`; remove it")
        return {"scorers": ["conversation_checks"], **data}

    @model_validator(mode="before")
    @classmethod
    def _rag_defaults(cls, data: Any) -> Any:
        """A ``rag:`` spec: RAG prompt, ``rag_outcome`` and 64 tokens unless given."""
        if not isinstance(data, dict) or data.get("rag") is None:
            return data
        if "fields" in data:
            raise ValueError("a RAG task maps its fields under `rag:`; remove `fields:`")
        prompt = {"instruction": RAG_INSTRUCTION, "template": RAG_TEMPLATE}
        defaults = {"scorers": ["rag_outcome"], "prompt": prompt, "generation": {"max_tokens": 64}}
        return {**defaults, **data}

    @field_validator("version", mode="before")
    @classmethod
    def _version_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) else v


def _parse(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskSpecError(f"Task file {path} does not exist.") from None
    try:
        raw = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text, path)
    except json.JSONDecodeError as e:
        raise TaskSpecError(f"{path}:{e.lineno}: not valid JSON ({e.msg}).") from None
    except YamlError as e:
        raise TaskSpecError(e.message, hint=e.hint) from None
    if not isinstance(raw, dict):
        raise TaskSpecError(f"{path}: expected a mapping of task fields at the top level.")
    return raw, text


def load_task_spec(path: str | Path) -> Task:
    """Read, validate and build a task from a spec file."""
    path = Path(path)
    raw, text = _parse(path)
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) if not isinstance(x, int) else x for x in err["loc"]]
        line = yaml_line(text, loc) if path.suffix.lower() != ".json" else None
        where = f"{path}:{line}" if line else str(path)
        field = ".".join(str(x) for x in loc) or "(top level)"
        more = f" (and {len(e.errors()) - 1} more problem(s))" if len(e.errors()) > 1 else ""
        hint = None
        if isinstance(err.get("input"), bool):
            hint = "YAML reads yes/no/on/off/true/false as booleans: quote the value ('yes')."
        raise TaskSpecError(f"{where}: field '{field}': {err['msg']}{more}.", hint=hint) from None
    try:
        return _build(spec, path)
    except (TaskSpecError, DataError):
        raise
    except CalipersError as e:
        raise TaskSpecError(f"{path}: {e.message}", hint=e.hint) from None


def _to_sample(spec: TaskSpec, row: dict[str, Any], where: str, index: int) -> Sample:
    f = spec.fields

    def need(col: str) -> Any:
        if col not in row:
            raise TaskSpecError(
                f"{where}: missing field {col!r}.",
                hint=f"Columns present: {', '.join(map(str, row)) or '(none)'}; "
                "map yours under `fields:` in the task spec.",
            )
        return _value(row[col], col, where)

    text = str(need(f.input))
    choices: tuple[str, ...] | None = None
    if f.choices:
        raw_choices = need(f.choices)
        if isinstance(raw_choices, str):
            try:
                raw_choices = _value(json.loads(raw_choices), f.choices, where)
            except json.JSONDecodeError:
                raw_choices = raw_choices.split("|")
        if not isinstance(raw_choices, list) or len(raw_choices) < 2:
            raise TaskSpecError(f"{where}: field {f.choices!r} must be a list of 2+ choices.")
        choices = tuple(str(c) for c in raw_choices)
    target: str | int | None = None
    if f.target:
        target = _target(spec, need(f.target), choices, where)
    return Sample(
        id=str(row[f.id]) if f.id and f.id in row else str(index),
        input=text,
        target=target,
        choices=choices,
        category=str(row[f.category]) if f.category and row.get(f.category) is not None else None,
        cluster=str(row[f.cluster]) if f.cluster and row.get(f.cluster) is not None else None,
        fields={c: need(c) for c in f.extra},
    )


def _value(value: Any, col: str, where: str) -> Any:
    """A mapped column's value, refused when it is null or a number that is not finite
    (JSON data read by Python may hold NaN, Infinity, or 1e999, which overflows to inf)."""
    if value is None:
        raise TaskSpecError(
            f"{where}: field {col!r} is present but null (no value).",
            hint="Give the item a value, or remove the row.",
        )
    bad = [
        v
        for v in (value if isinstance(value, list) else [value])
        if isinstance(v, float) and not math.isfinite(v)
    ]
    if bad:
        raise TaskSpecError(
            f"{where}: field {col!r} holds {bad[0]!r}, not a finite number.",
            hint="NaN and Infinity are not JSON values; write the answer as text "
            '("NaN") if the word is meant, or fix the row.',
        )
    return value


def _target(spec: TaskSpec, value: Any, choices: tuple[str, ...] | None, where: str) -> str | int:
    if spec.kind == "generate" and spec.target_type == "text":
        return str(value)
    if not choices:
        raise TaskSpecError(f"{where}: target_type {spec.target_type!r} needs `fields.choices`.")
    try:
        if spec.target_type == "index":
            idx = int(value)
        elif spec.target_type == "letter":
            idx = ord(str(value).strip().upper()) - 65
        else:  # choice_text (or text on a multiple-choice task)
            idx = choices.index(str(value))
    except (ValueError, TypeError):
        raise TaskSpecError(
            f"{where}: target {value!r} does not fit target_type {spec.target_type!r}."
        ) from None
    if not 0 <= idx < len(choices):
        raise TaskSpecError(f"{where}: target {value!r} is outside the {len(choices)} choices.")
    return idx


def _each(spec: TaskSpec, data: Path) -> Iterator[Sample]:
    for i, (line, row) in enumerate(read_records(data)):
        yield _to_sample(spec, row, f"{data}:{line}", i)


KEEP_ITEMS = 10_000
"""A data file with more items is read again each time its items are iterated (they are
checked once, when the task loads), instead of being held in memory."""


class FileItems(Sequence[Sample]):
    """A large data file's items, read from the file each time they are iterated."""

    def __init__(self, spec: TaskSpec, data: Path, n: int) -> None:
        self._spec, self._data, self._n = spec, data, n

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Sample]:
        return _each(self._spec, self._data)

    @overload
    def __getitem__(self, i: int) -> Sample: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Sample]: ...
    def __getitem__(self, i: int | slice) -> Sample | Sequence[Sample]:
        if isinstance(i, slice):
            return list(self)[i]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return next(islice(self, i % self._n, None))


def _read(spec: TaskSpec, data: Path) -> Sequence[Sample]:
    """Every item, checked (a bad row fails now, with file:line); a list, or for a file of
    more than ``KEEP_ITEMS`` items a :class:`FileItems` that reads it again when iterated."""
    kept: list[Sample] = []
    seen: set[str] = set()
    n = 0
    for s in _each(spec, data):
        if s.id in seen:
            raise TaskSpecError(f"{data}: duplicate item id {s.id!r}; ids must be unique.")
        seen.add(s.id)
        n += 1
        if n <= KEEP_ITEMS:
            kept.append(s)
    if not n:
        raise TaskSpecError(f"{data}: no items.")
    return kept if n <= KEEP_ITEMS else FileItems(spec, data, n)


def _build_conversation(spec: TaskSpec, path: Path, data: Path) -> Task:
    fields = spec.conversation
    assert fields is not None
    if spec.kind != "generate":
        raise TaskSpecError(f"{path}: a conversation task is answered turn by turn; drop `kind`.")
    if [s if isinstance(s, str) else s.name for s in spec.scorers] != ["conversation_checks"]:
        raise TaskSpecError(
            f"{path}: a conversation task is scored by its checks (conversation_checks).",
            hint="Remove `scorers:`; write what each turn must do as the rows' checks.",
        )
    samples = read_conversation_file(data, fields)  # fail fast, with file:line
    return conversation_task(
        spec.name,
        lambda ctx: samples,
        history=fields.history,
        version=spec.version,
        description=spec.description or f"Conversations from {path.name}",
        params=spec.generation,
        max_turns=max(len(s.fields["turns"]) for s in samples),
        source=spec.source,
        license=spec.license,
        tags=("file",),
    )


def _build(spec: TaskSpec, path: Path) -> Task:
    base = path.parent
    data = (base / spec.data).resolve()
    shot_file = (base / spec.few_shot.data).resolve() if spec.few_shot.data else None
    if spec.few_shot.k and not shot_file:
        raise TaskSpecError(
            f"{path}: few_shot.k is {spec.few_shot.k} but few_shot.data is not set.",
            hint="Few-shot examples come from a separate file, never from the evaluated items.",
        )
    if spec.rag and spec.kind != "generate":
        raise TaskSpecError(f"{path}: a RAG task (`rag:`) is answered by generation; drop `kind`.")
    if spec.conversation:
        return _build_conversation(spec, path, data)
    scorers = tuple(build_scorer(s) for s in spec.scorers)
    needs = "loglikelihood" if spec.kind == "multiple_choice" else "generation"
    for s in scorers:
        if s.needs != needs:
            raise TaskSpecError(
                f"{path}: scorer {s.spec.name!r} needs {s.needs} but the task kind is "
                f"{spec.kind!r}."
            )
    for t in (spec.prompt.template, spec.prompt.answer, spec.prompt.continuation):
        template_fields(t)
    # fail fast: bad data is reported when the task loads
    eval_samples = read_rag_file(data, spec.rag) if spec.rag else _read(spec, data)

    def load(ctx: LoadContext) -> Sequence[Sample]:
        return eval_samples

    def fewshot(ctx: LoadContext) -> list[Sample]:
        if shot_file is None:
            return []
        # ids of their own: row numbers (or the file's ids) are not the items' ids, so a
        # shot is never taken for "the item itself" because its id happens to match
        return [s.model_copy(update={"id": f"fewshot:{s.id}"}) for s in _read(spec, shot_file)]

    return Task(
        name=spec.name,
        version=spec.version,
        description=spec.description or f"Task from {path.name}",
        kind=spec.kind,
        load=load,
        scorers=scorers,
        prompt=spec.prompt,
        fewshot=fewshot if shot_file else None,
        default_few_shot=spec.few_shot.k,
        few_shot_seed=spec.few_shot.seed,
        few_shot_sampling=spec.few_shot.sampling,
        params=spec.generation,
        source=spec.source,
        license=spec.license,
        tags=("rag", "file") if spec.rag else ("file",),
    )
