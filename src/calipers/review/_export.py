"""Export a campaign's final labels: JSONL, CSV, Label Studio's and Argilla's import formats,
or a calipers suite whose items carry the human-approved answer as their reference.

* ``jsonl`` / ``csv``: one row per (item, question): value, provenance (unanimous / majority
  / weighted / adjudicated / unresolved), who adjudicated, votes; JSONL adds the payload and
  the source (model identities: for the owner, never for raters).
* ``label-studio``: a list of tasks in Label Studio's JSON import format, ``data`` holding
  what raters saw and one ``annotations`` entry whose ``result`` has one region per question
  (``choices`` or ``rating``); unresolved labels are left out of the result.
* ``argilla``: a list of records (``id``, ``fields``, ``metadata``, ``suggestions``): each
  final label is a suggestion of ``type: "human"`` whose ``agent`` names its provenance.
* ``suite``: the items whose final label says an answer is good (pass/fail ``pass``: the
  response; a preference: the preferred answer) become suite items with that answer as the
  reference, through ``calipers.suites`` (imported into the pool, then built: redacted,
  deduplicated, versioned).
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import escape

from calipers.errors import ConfigError
from calipers.review._questions import Choice, Likert, PassFail, Preference, QuestionSet, Tags
from calipers.review._report_model import FinalLabelRow, ReviewReport
from calipers.store import ReviewItemRecord

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "export_argilla",
    "export_csv",
    "export_jsonl",
    "export_label_studio",
    "export_suite",
    "label_studio_config",
    "suite_records",
]

ExportFormat = Literal["jsonl", "csv", "label-studio", "argilla", "suite"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("jsonl", "csv", "label-studio", "argilla", "suite")
CSV_COLUMNS = ("item_key", "question", "value", "provenance", "by", "n_judgments", "votes")


def _rows(report: ReviewReport, question: str | None) -> list[FinalLabelRow]:
    rows = list(report.final_labels)
    if question is None:
        return rows
    known = sorted({r.question for r in rows})
    if question not in known:
        raise ConfigError(
            f"Campaign {report.campaign!r} has no final labels for question {question!r}.",
            hint=f"Questions with final labels: {', '.join(known) or '(none)'}.",
        )
    return [r for r in rows if r.question == question]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _shown(value: Any) -> Any:
    """A label as the other tools take it: pass/fail as "pass"/"fail"."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    return value


def export_jsonl(
    report: ReviewReport, items: Sequence[ReviewItemRecord], question: str | None = None
) -> str:
    by_key = {i.item_key: i for i in items}
    out = []
    for r in _rows(report, question):
        item = by_key.get(r.item_key)
        row = {
            "campaign": report.campaign,
            "item_key": r.item_key,
            "question": r.question,
            "value": r.value,
            "provenance": r.provenance,
            "by": r.by,
            "n_judgments": r.n_judgments,
            "votes": r.votes,
            "payload": None if item is None else item.payload,
            "source": None if item is None else item.source,
        }
        out.append(json.dumps(row, ensure_ascii=False, sort_keys=True))
    return "".join(line + "\n" for line in out)


def export_csv(report: ReviewReport, question: str | None = None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in _rows(report, question):
        value = "" if r.value is None else _text(_shown(r.value))
        votes = json.dumps(r.votes, sort_keys=True)
        w.writerow([r.item_key, r.question, value, r.provenance, r.by or "", r.n_judgments, votes])
    return buf.getvalue()


def _data(item: ReviewItemRecord) -> dict[str, Any]:
    data = {"item_key": item.item_key}
    for key, value in item.payload.items():
        data[key] = _text(value)
    return data


def _per_item(report: ReviewReport, question: str | None) -> dict[str, list[FinalLabelRow]]:
    """The final labels (of ``question``, or all) grouped by item."""
    out: dict[str, list[FinalLabelRow]] = defaultdict(list)
    for r in _rows(report, question):
        out[r.item_key].append(r)
    return out


def _ls_region(r: FinalLabelRow, to_name: str) -> dict[str, Any]:
    value: dict[str, Any]
    if isinstance(r.value, int) and not isinstance(r.value, bool):
        kind, value = "rating", {"rating": r.value}
    else:
        shown = _shown(r.value)
        choices = [str(v) for v in shown] if isinstance(shown, list | tuple) else [str(shown)]
        kind, value = "choices", {"choices": choices}
    return {"from_name": r.question, "to_name": to_name, "type": kind, "value": value}


def export_label_studio(
    report: ReviewReport, items: Sequence[ReviewItemRecord], question: str | None = None
) -> list[dict[str, Any]]:
    """Tasks for Label Studio's import: ``data`` and one annotation of the final labels."""
    per_item = _per_item(report, question)
    tasks = []
    for item in items:
        rows = per_item.get(item.item_key)
        if not rows:
            continue
        to_name = "response" if "response" in item.payload else "prompt"
        result = [_ls_region(r, to_name) for r in rows if r.value is not None]
        tasks.append(
            {
                "data": _data(item),
                "annotations": [
                    {
                        "result": result,
                        "ground_truth": any(r.provenance == "adjudicated" for r in rows),
                        "meta": {
                            "source": "calipers review",
                            "campaign": report.campaign,
                            "provenance": {r.question: r.provenance for r in rows},
                            "adjudicated_by": {r.question: r.by for r in rows if r.by},
                        },
                    }
                ],
            }
        )
    return tasks


def _xml(text: str) -> str:
    return escape(text, {'"': "&quot;"})


def _ls_control(q: PassFail | Likert | Choice | Preference | Tags, to_name: str) -> str:
    head = f'<Header value="{_xml(q.prompt)}"/>'
    if isinstance(q, Likert):
        return f'{head}<Rating name="{q.id}" toName="{to_name}" maxRating="5"/>'
    if isinstance(q, PassFail):
        options: tuple[str, ...] = ("pass", "fail")
    elif isinstance(q, Preference):
        options = ("a", "b", "tie") if q.ties else ("a", "b")
    elif isinstance(q, Tags):
        options = tuple(t.id for t in q.taxonomy)
    else:
        options = q.options
    mode = "multiple" if isinstance(q, Tags) else "single"
    choices = "".join(f'<Choice value="{_xml(o)}"/>' for o in options)
    return f'{head}<Choices name="{q.id}" toName="{to_name}" choice="{mode}">{choices}</Choices>'


def label_studio_config(questions: QuestionSet, kind: str) -> str:
    """A Label Studio labeling config matching :func:`export_label_studio`'s tasks: the
    payload's texts and one control per question (``from_name`` is the question id)."""
    fields = ("prompt", "a", "b") if kind == "pairwise" else ("prompt", "response")
    to_name = "prompt" if kind == "pairwise" else "response"
    texts = "".join(f'<Text name="{f}" value="${f}"/>' for f in fields)
    controls = "".join(
        _ls_control(q, to_name)
        for q in questions.items()
        if isinstance(q, PassFail | Likert | Choice | Preference | Tags)
    )
    return f"<View>{texts}{controls}</View>\n"


def export_argilla(
    report: ReviewReport, items: Sequence[ReviewItemRecord], question: str | None = None
) -> list[dict[str, Any]]:
    """Records for Argilla: ``fields`` (what raters saw), final labels as human suggestions."""
    per_item = _per_item(report, question)
    records = []
    for item in items:
        rows = per_item.get(item.item_key)
        if not rows:
            continue
        fields = {k: v for k, v in _data(item).items() if k != "item_key"}
        metadata: dict[str, Any] = {"campaign": report.campaign}
        metadata.update({f"{r.question}_provenance": r.provenance for r in rows})
        suggestions = [
            {
                "question_name": r.question,
                "value": list(_shown(r.value))
                if isinstance(r.value, list | tuple)
                else _shown(r.value),
                "type": "human",
                "agent": f"calipers:{r.provenance}" + (f":{r.by}" if r.by else ""),
            }
            for r in rows
            if r.value is not None
        ]
        records.append(
            {
                "id": item.item_key,
                "fields": fields,
                "metadata": metadata,
                "suggestions": suggestions,
            }
        )
    return records


def suite_records(
    report: ReviewReport, items: Sequence[ReviewItemRecord], question: str
) -> list[dict[str, Any]]:
    """Log records (``id``, ``input``, ``output``, ``accepted``) for the items whose final
    label of ``question`` approves an answer: a pass (the response) or a preference for
    ``a`` or ``b`` (that answer). Ties, fails and unresolved labels give no record."""
    by_key = {i.item_key: i for i in items}
    out = []
    for r in _rows(report, question):
        item = by_key.get(r.item_key)
        if item is None:
            continue
        answer: Any = None
        if r.value is True:
            answer = item.payload.get("response")
        elif r.value in ("a", "b"):
            answer = item.payload.get(str(r.value))
        elif not isinstance(r.value, bool) and r.value is not None:
            raise ConfigError(
                f"Question {question!r} does not say which answer is good "
                f"(its label is {r.value!r}); a suite needs pass/fail or a preference.",
                hint="Pick one with --question.",
            )
        if answer is None or item.payload.get("prompt") is None:
            continue
        out.append(
            {
                "id": r.item_key,
                "input": _text(item.payload["prompt"]),
                "output": _text(answer),
                "accepted": True,
            }
        )
    return out


def export_suite(
    report: ReviewReport, items: Sequence[ReviewItemRecord], suite: str, question: str
) -> Any:
    """Import :func:`suite_records` into suite ``suite``'s pool and build its next version;
    returns ``calipers.suites.BuildResult``."""
    from calipers.suites import build_suite, import_logs

    records = suite_records(report, items, question)
    if not records:
        raise ConfigError(
            f"No item of {report.campaign!r} has an approved answer for {question!r}.",
            hint="A suite item needs a final label of pass, or a preference for a or b.",
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"review-{report.campaign}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        import_logs(path, suite, fmt="jsonl")
    return build_suite(suite, references="accepted")
