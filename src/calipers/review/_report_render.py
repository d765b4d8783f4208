"""The review report as tables of text: the same tables become the terminal's rich tables,
the Markdown file and the self-contained HTML file (inline CSS, no script, autoescaped)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from calipers.review._report_model import ReviewReport
from calipers.types import Estimate

__all__ = ["Section", "render_html", "render_markdown", "sections"]


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


def _e(e: Estimate | None, percent: bool = False) -> str:
    return "—" if e is None else e.format(percent=percent)


def _opt(v: float | int | None, fmt: str = "{:.3g}") -> str:
    return "—" if v is None else fmt.format(v)


def _summary(r: ReviewReport) -> Section:
    rows = [
        ("kind", r.kind),
        ("final labels by", r.method),
        ("items (controls)", f"{r.n_items} ({r.n_control_items})"),
        ("judgments", str(r.n_judgments)),
        ("skips (never labels)", _opt(r.n_skipped, "{}")),
        ("excluded raters", ", ".join(r.excluded_raters) or "none"),
        ("bootstrap seed", str(r.seed)),
    ]
    return Section(f"Review report: {r.campaign}", ("", ""), tuple(rows))


def _agreement(r: ReviewReport) -> Section:
    rows = tuple(
        (
            q.id, q.type, q.level, str(q.n_items), str(q.n_judgments),
            _e(q.alpha), _e(q.cohen_kappa), _e(q.fleiss_kappa),
        )
        for q in r.questions
    )  # fmt: skip
    cols = ("question", "type", "level", "items", "judgments", "alpha [95%]", "Cohen's kappa",
            "Fleiss' kappa")  # fmt: skip
    return Section(
        "Agreement", cols, rows,
        "Krippendorff's alpha, bootstrap over items; Cohen's kappa only with exactly two "
        "raters; Fleiss' kappa only with the same number of judgments per item.",
    )  # fmt: skip


def _rates(r: ReviewReport) -> Section:
    rows = [
        (q.id, rate.label, _e(rate.estimate), str(rate.estimate.n), rate.estimate.method)
        for q in r.questions
        for rate in q.rates
    ]
    if r.over_refusal is not None:
        e = r.over_refusal
        rows.append(("over-refusal", "refused | harmless", _e(e), str(e.n), e.method))
    return Section(
        "Rates (items are the unit)", ("question", "rate", "value [95%]", "items", "method"),
        tuple(rows),
        "Each item's raters are averaged first; the interval is over items.",
    )  # fmt: skip


def _pools(r: ReviewReport) -> Section | None:
    rows = tuple(
        (q.id, " × ".join(p.pools), "within" if len(p.pools) == 1 else "between", _e(p.alpha))
        for q in r.questions
        for p in q.pools
    )
    if not rows:
        return None
    return Section(
        "Agreement by pool", ("question", "pools", "", "alpha [95%]"), rows,
        "Between two pools: alpha between the pools' per-item consensus.",
    )  # fmt: skip


def _pairwise(r: ReviewReport) -> list[Section]:
    p = r.pairwise
    if p is None:
        return []
    pairs = Section(
        "Pairwise: win and tie rates (items are the unit)",
        ("model a", "model b", "items", "a wins [95%]", "ties [95%]"),
        tuple((x.model_a, x.model_b, str(x.n_items), _e(x.win_a), _e(x.tie)) for x in p.pairs),
        f"Position bias: share of 'left' picks {_e(p.left_share)} (0.5 = none).",
    )
    ratings = Section(
        "Bradley-Terry ratings (Davidson ties)",
        ("rank [95%]", "model", "Elo [95%]", "W-L-T", "note"),
        tuple(
            (
                f"{m.rank} [{m.rank_low}–{m.rank_high}]", m.model, _e(m.elo, False),
                f"{m.wins}-{m.losses}-{m.ties}", "unbounded" if m.unbounded else "",
            )
            for m in p.ratings
        ),
        p.rating_method + (f" {p.rating_note}" if p.rating_note else ""),
    )  # fmt: skip
    return [pairs, ratings]


def _raters(r: ReviewReport) -> Section:
    rows = tuple(
        (
            q.name, q.pool, str(q.answered), _opt(q.skipped, "{}"), _opt(q.median_seconds),
            _opt(q.too_fast, "{}"), _e(q.gold_accuracy), _e(q.attention),
            _e(q.self_consistency), _e(q.left_share), _e(q.agreement),
            _opt(q.competence, "{:.2f}"),
            ", ".join(q.flag_reasons) or "—",
            f"excluded ({q.excluded_reason})" if q.excluded else "",
        )
        for q in r.raters
    )  # fmt: skip
    cols = ("rater", "pool", "answered", "skipped", "median s", "too fast", "gold accuracy",
            "attention", "self-consistency", "left share", "agreement", "competence (DS)", "flag",
            "status")  # fmt: skip
    return Section(
        "Raters", cols, rows,
        "Wilson intervals over the rater's items; agreement: with the gold answer or the other "
        "raters' consensus (what the flag reads); competence: Dawid-Skene accuracy. Excluded "
        "raters' judgments are left out of every other table.",
    )  # fmt: skip


def _provenance(r: ReviewReport) -> Section:
    kinds = ("single", "unanimous", "majority", "weighted", "adjudicated", "unresolved")
    rows = tuple((q.id, *(str(q.provenance.get(k, 0)) for k in kinds)) for q in r.questions)
    return Section("Final labels by provenance", ("question", *kinds), rows)


def _labels(r: ReviewReport) -> Section:
    rows = tuple(
        (
            f.item_key, f.question,
            "—" if f.value is None else json.dumps(f.value, ensure_ascii=False),
            f.provenance, f.by or "",
        )
        for f in r.final_labels
    )  # fmt: skip
    return Section("Final labels", ("item", "question", "value", "provenance", "by"), rows)


def sections(r: ReviewReport, *, labels: bool = True) -> list[Section]:
    """The report's tables in order; ``labels=False`` leaves out the list of final labels."""
    out = [_summary(r), _agreement(r), _rates(r)]
    pools = _pools(r)
    out += ([pools] if pools else []) + _pairwise(r) + [_raters(r), _provenance(r)]
    if labels:
        out.append(_labels(r))
    if r.notes:
        out.append(Section("Notes", ("note",), tuple((n,) for n in r.notes)))
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(r: ReviewReport) -> str:
    lines: list[str] = []
    for i, s in enumerate(sections(r)):
        lines.append(("# " if i == 0 else "## ") + s.title)
        lines.append("")
        lines.append("| " + " | ".join(_md_cell(c) for c in s.columns) + " |")
        lines.append("|" + "---|" * len(s.columns))
        lines.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in s.rows)
        if s.caption:
            lines += ["", s.caption]
        lines.append("")
    return "\n".join(lines)


def _load(name: str) -> str:
    return resources.files("calipers.review").joinpath("templates", name).read_text("utf-8")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(r: ReviewReport) -> str:
    """One self-contained HTML page (no script, no network); all text escaped."""
    ctx: dict[str, Any] = {"title": f"Review report: {r.campaign}", "sections": sections(r)}
    return _environment().get_template("review_report.html.j2").render(**ctx)
