"""MMLU (Hendrycks et al., 2021) and MMLU-Redux (Gema et al., 2024), from local files or,
without a data directory, from the Hugging Face hub (``cais/mmlu`` config ``all``;
``edinburgh-dawg/mmlu-redux-2.0``, one config per subject).

Three formulations, one per ``--formulation``:

- ``cloze`` (default, the SmolLM2 model card's MMLU): each answer text is scored by
  log-likelihood after ``The following are questions about {subject}.\\nQuestion: ...\\nAnswer:``.
- ``letter``: the question with lettered options; the continuations ``" A"`` ... ``" D"`` are
  scored by log-likelihood (the original MMLU prompt). ``choices`` are then the letters; the
  option texts are in the prompt and in ``metadata["option_texts"]``.
- ``generate``: the ``letter`` prompt answered by generation; the letter is read from the
  reply (``choice_letter``).

``category`` is the subject, so reports break scores down per subject. Few-shot examples come
from the dev split (5 per subject), drawn from the whole pool: the runner does not match them to
the item's subject (see docs/benchmarks.md).

MMLU-Redux: 5,700 test questions (100 per subject) re-annotated for errors. The target is the
original MMLU label even where the annotators judged it wrong (``metadata["correct_answer"]``
holds their proposal); ``mmlu_redux_correct`` keeps only the items judged ``ok``.
"""

from __future__ import annotations

import ast
import csv
import functools
import io
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from calipers.datasets import DATA_SOURCE_KEY, benchmark_file
from calipers.errors import ConfigError, DataError
from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import field, hub_rows, use_hub
from calipers.types import GenerateParams, Sample

__all__ = [
    "FORMULATIONS",
    "PROMPTS",
    "SUBJECTS",
    "error_counts",
    "mmlu_redux_task",
    "mmlu_task",
    "normalize_error_type",
    "register",
]

FORMULATIONS = ("cloze", "letter", "generate")
SUBJECTS = (
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
)
"""The 57 MMLU subjects, in the order items are loaded."""

_LETTERS = "ABCD"
_MMLU_HOW = (
    "Put the official MMLU CSVs (data.tar from hendrycks/test, no header: question, "
    "A, B, C, D, answer letter) in <data-dir>/mmlu/{dev,val,test}/<subject>_<split>"
    ".csv; see docs/benchmarks.md."
)
_REDUX_HOW = (
    "Put the 57 files mmlu_redux/mmlu_<subject>.csv of github.com/aryopg/mmlu-redux "
    "in <data-dir>/mmlu_redux/; see docs/benchmarks.md."
)
_MC_HEADER = "The following are multiple choice questions (with answers) about {subject}.\n\n"
PROMPTS = {
    "cloze": PromptTemplate(
        template="The following are questions about {subject}.\nQuestion: {input}\nAnswer:",
        answer=" {target}",
    ),
    "letter": PromptTemplate(
        template=_MC_HEADER + "{input}\n{options}\nAnswer:", answer=" {target_letter}"
    ),
    "generate": PromptTemplate(
        template=_MC_HEADER + "{input}\n{options}\nAnswer:", answer=" {target_letter}"
    ),
}
_Row = tuple[str, tuple[str, ...], int, dict[str, Any]]  # question, options, answer index, metadata


def _sample(sid: str, subject: str, row: _Row, formulation: str) -> Sample:
    question, options, answer, meta = row
    fields = {"subject": subject.replace("_", " ")}
    if formulation != "cloze":
        fields["options"] = "\n".join(f"{a}. {o}" for a, o in zip(_LETTERS, options, strict=True))
    choices = options
    if formulation == "letter":
        choices, meta = tuple(_LETTERS[: len(options)]), {**meta, "option_texts": list(options)}
    return Sample(
        id=sid,
        input=question,
        target=answer,
        choices=choices,
        category=subject,
        fields=fields,
        metadata=dict(meta),
    )


@functools.lru_cache(maxsize=512)
def _cached(
    parse: Callable[[Path], list[_Row]],
    path: Path,
    stamp: tuple[int, int],
) -> tuple[_Row, ...]:
    return tuple(parse(path))


def _rows(parse: Callable[[Path], list[_Row]], path: Path) -> tuple[_Row, ...]:
    """Parsed rows, cached per file while its modification time and size are unchanged
    (several formulations and tasks read the same files)."""
    st = path.stat()
    return _cached(parse, path, (st.st_mtime_ns, st.st_size))


def _read_mmlu(split: str, subject: str, data_dir: Path | None) -> tuple[_Row, ...]:
    if use_hub(data_dir):
        return _hub_mmlu(split).get(subject, ())
    path = benchmark_file("mmlu", f"{split}/{subject}_{split}.csv", data_dir, how_to_get=_MMLU_HOW)
    return _rows(_parse_mmlu, path)


def _parse_mmlu(path: Path) -> list[_Row]:
    rows: list[_Row] = []
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            for row in reader:
                if not row:
                    continue  # a blank line
                if len(row) != 6 or row[5].strip() not in tuple(_LETTERS):
                    raise DataError(
                        f"mmlu: {path}:{reader.line_num}: expected 6 columns (question, A, B, "
                        f"C, D, answer letter A-D), got {len(row)}: {row[0][:40]!r}...",
                        hint=_MMLU_HOW,
                    )
                rows.append((row[0], tuple(row[1:5]), _LETTERS.index(row[5].strip()), {}))
    except UnicodeDecodeError:
        raise DataError(f"mmlu: {path} is not UTF-8 text.", hint=_MMLU_HOW) from None
    return rows


_HUB_SPLIT = {"test": "test", "val": "validation", "dev": "dev"}


def _choices(bench: str, row: dict[str, Any], where: str, how: str) -> tuple[tuple[str, ...], int]:
    options, answer = (
        field(bench, row, "choices", where, how),
        field(bench, row, "answer", where, how),
    )
    if not (
        isinstance(options, list)
        and len(options) == 4
        and isinstance(answer, int)
        and 0 <= answer < 4
    ):
        raise DataError(f"{bench}: {where}: expected 4 'choices' and 'answer' in 0-3.", hint=how)
    return tuple(str(o) for o in options), answer


@functools.lru_cache(maxsize=4)
def _hub_mmlu(split: str) -> dict[str, tuple[_Row, ...]]:
    """``cais/mmlu`` config ``all`` (the 57 subjects in one split, in the local files' order),
    grouped by subject."""
    rows = hub_rows("mmlu", "cais/mmlu", "all", _HUB_SPLIT[split], _MMLU_HOW)
    meta = {DATA_SOURCE_KEY: rows.source.uri}
    out: dict[str, list[_Row]] = {}
    for i, row in enumerate(rows):
        where = f"cais/mmlu all/{_HUB_SPLIT[split]} row {i}"
        options, answer = _choices("mmlu", row, where, _MMLU_HOW)
        subject = str(field("mmlu", row, "subject", where, _MMLU_HOW))
        out.setdefault(subject, []).append(
            (str(field("mmlu", row, "question", where, _MMLU_HOW)), options, answer, meta)
        )
    return {k: tuple(v) for k, v in out.items()}


def _mmlu_loader(split: str, formulation: str) -> Callable[[LoadContext], list[Sample]]:
    prefix = "" if split == "test" else f"{split}/"

    def load(ctx: LoadContext) -> list[Sample]:
        return [
            _sample(f"{prefix}{subject}/{i}", subject, row, formulation)
            for subject in SUBJECTS
            for i, row in enumerate(_read_mmlu(split, subject, ctx.data_dir))
        ]

    return load


def normalize_error_type(label: str) -> str:
    """``"Wrong Groundtruth "`` / ``"wrong_groundtruth"`` -> ``"wrong_groundtruth"``."""
    return "_".join(label.replace("_", " ").split()).casefold()


def _redux_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252")  # mmlu_moral_scenarios.csv is not UTF-8
    except UnicodeDecodeError:
        raise DataError(f"mmlu_redux: {path} is neither UTF-8 nor cp1252 text.") from None


def _read_redux(subject: str, data_dir: Path | str | None) -> tuple[_Row, ...]:
    if use_hub(data_dir):
        return _hub_redux(subject)
    path = benchmark_file("mmlu_redux", f"mmlu_{subject}.csv", data_dir, how_to_get=_REDUX_HOW)
    return _rows(_parse_redux, path)


def _parse_redux(path: Path) -> list[_Row]:
    """One subject's rows; the files vary in separator (``,``/``;``) and column order."""
    text = _redux_text(path)
    header = text.split("\n", 1)[0]
    sep = ";" if header.count(";") > header.count(",") else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=sep)
    reader.fieldnames = [c.strip() for c in reader.fieldnames or ()]
    missing = {"question", "choices", "answer", "error_type"} - set(reader.fieldnames)
    if missing:
        raise DataError(
            f"mmlu_redux: {path} lacks the column(s) {', '.join(sorted(missing))}.", hint=_REDUX_HOW
        )
    rows: list[_Row] = []
    for r in reader:
        try:
            options = ast.literal_eval(r["choices"])
            answer = int(r["answer"])
        except (ValueError, SyntaxError, TypeError):
            options, answer = None, -1
        if not (
            isinstance(options, list | tuple)
            and len(options) == 4
            and all(isinstance(o, str) for o in options)
            and 0 <= answer < 4
        ):
            raise DataError(
                f"mmlu_redux: {path}:{reader.line_num}: expected 'choices' as a "
                "list of 4 strings and 'answer' in 0-3.",
                hint=_REDUX_HOW,
            )
        raw_type = r["error_type"] or ""
        meta = {
            "error_type": normalize_error_type(raw_type),
            "error_type_raw": raw_type,
            "correct_answer": r.get("correct_answer") or "",
            "source": r.get("source") or "",
        }
        rows.append((r["question"], tuple(options), answer, meta))
    return rows


@functools.lru_cache(maxsize=64)
def _hub_redux(subject: str) -> tuple[_Row, ...]:
    """One subject of ``edinburgh-dawg/mmlu-redux-2.0`` (config = subject, split test)."""
    rows = hub_rows("mmlu_redux", "edinburgh-dawg/mmlu-redux-2.0", subject, "test", _REDUX_HOW)
    out: list[_Row] = []
    for i, row in enumerate(rows):
        where = f"edinburgh-dawg/mmlu-redux-2.0 {subject}/test row {i}"
        options, answer = _choices("mmlu_redux", row, where, _REDUX_HOW)
        raw_type = str(field("mmlu_redux", row, "error_type", where, _REDUX_HOW) or "")
        meta = {
            "error_type": normalize_error_type(raw_type),
            "error_type_raw": raw_type,
            "correct_answer": str(row.get("correct_answer") or ""),
            "source": str(row.get("source") or ""),
            DATA_SOURCE_KEY: rows.source.uri,
        }
        out.append(
            (str(field("mmlu_redux", row, "question", where, _REDUX_HOW)), options, answer, meta)
        )
    return tuple(out)


def error_counts(data_dir: Path | str | None) -> dict[str, int]:
    """MMLU-Redux items per normalized ``error_type`` (``ok`` = original label judged
    correct), most frequent first."""
    counts = Counter(row[3]["error_type"] for s in SUBJECTS for row in _read_redux(s, data_dir))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _redux_loader(formulation: str, only_ok: bool) -> Callable[[LoadContext], list[Sample]]:
    def load(ctx: LoadContext) -> list[Sample]:
        return [
            _sample(f"{subject}/{i}", subject, row, formulation)
            for subject in SUBJECTS
            for i, row in enumerate(_read_redux(subject, ctx.data_dir))
            if not only_ok or row[3]["error_type"] == "ok"
        ]

    return load


def _task(
    name: str,
    description: str,
    load: Callable[[LoadContext], Sequence[Sample]],
    formulation: str,
    **card: Any,
) -> Task:
    if formulation not in FORMULATIONS:
        raise ConfigError(
            f"{name}: no formulation {formulation!r}.",
            hint=f"Use one of {', '.join(FORMULATIONS)}.",
        )
    generate = formulation == "generate"
    return Task(
        name=name,
        version="1",
        description=description,
        kind="generate" if generate else "multiple_choice",
        load=load,
        fewshot=_mmlu_loader("dev", formulation),
        scorers=(build_scorer("choice_letter" if generate else "loglikelihood_mc"),),
        prompt=PROMPTS[formulation],
        default_few_shot=0,
        few_shot_sampling="fixed",
        few_shot_match="category",
        formulation=formulation,
        params=GenerateParams(max_tokens=32, temperature=0.0, stop=("\n\nThe following",)),
        tags=("knowledge", "multiple_choice"),
        **card,
    )


def mmlu_task(formulation: str = "cloze") -> Task:
    return _task(
        "mmlu",
        "MMLU: 14,042 four-option test questions in 57 subjects (per-subject "
        "breakdown); few-shot from the 285-item dev split.",
        _mmlu_loader("test", formulation),
        formulation,
        source="hendrycks/test (MMLU); same items and order as HF cais/mmlu",
        license="MIT",
    )


def mmlu_redux_task(formulation: str = "cloze", *, only_ok: bool = False) -> Task:
    if only_ok:
        name, what = (
            "mmlu_redux_correct",
            ("the 5,330 MMLU-Redux items whose original label was judged correct (error_type ok)"),
        )
    else:
        name, what = (
            "mmlu_redux",
            (
                "5,700 MMLU test questions re-annotated by MMLU-Redux; "
                "target = the original label, even where judged wrong "
                "(370 flagged items)"
            ),
        )
    return _task(
        name,
        f"MMLU-Redux: {what}.",
        _redux_loader(formulation, only_ok),
        formulation,
        source="aryopg/mmlu-redux (Gema et al., 2024)",
        license="CC-BY-4.0",
    )


def _mmlu_redux_correct(formulation: str) -> Task:
    return mmlu_redux_task(formulation, only_ok=True)


def register() -> None:
    """Register mmlu, mmlu_redux and mmlu_redux_correct (idempotent)."""
    register_task("mmlu", mmlu_task, formulations=FORMULATIONS)
    register_task("mmlu_redux", mmlu_redux_task, formulations=FORMULATIONS)
    register_task("mmlu_redux_correct", _mmlu_redux_correct, formulations=FORMULATIONS)
