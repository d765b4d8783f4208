"""The run report: whole-output facts about the HTML and Markdown, and the pure view helpers."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest

from calipers.reports import (
    error_items,
    failing_items,
    methodology_rows,
    prompt_text,
    worst_categories,
    write_report,
)
from calipers.store import RunRecord, SampleRecord
from calipers.types import Estimate, TaskSummary

NAN = float("nan")
SCRIPT = "<script>alert(1)</script>"
SHA = "ab" * 32


def est(value: float, low: float, high: float, n: int, method: str = "wilson") -> dict[str, Any]:
    return Estimate(value, low, high, n, method).to_dict()


EMPTY = Estimate.empty().to_dict()

ARITH_SUMMARY: dict[str, Any] = {
    "primary": "acc",
    "n_samples": 7,
    "n_scored": 6,
    "n_errors": 1,
    "n_cached": 2,
    "metrics": {"acc": est(0.4, 0.118, 0.769, 5), "acc_strict": est(0.2, 0.036, 0.624, 5)},
    "categories": {
        "algebra": {"n": 3, "n_errors": 0, "metrics": {"acc": est(0.5, 0.095, 0.905, 2)}},
        "basic": {"n": 1, "n_errors": 0, "metrics": {"acc": est(1.0, 0.207, 1.0, 1)}},
        "geometry": {"n": 2, "n_errors": 0, "metrics": {"acc": est(0.0, 0.0, 0.658, 2)}},
        "logic | puzzles": {"n": 1, "n_errors": 1, "metrics": {"acc": EMPTY}},
    },
    "latency_s": est(0.412, 0.371, 0.455, 6, "bootstrap"),
    "input_tokens": 700,
    "output_tokens": 120,
    "errors": ["model"],
}
MC_SUMMARY: dict[str, Any] = {
    "primary": "acc",
    "n_samples": 2,
    "n_scored": 2,
    "n_errors": 0,
    "n_cached": 0,
    "metrics": {"acc": est(0.5, 0.095, 0.905, 2), "acc_norm": EMPTY},
    "categories": {},
    "latency_s": EMPTY,
    "input_tokens": 40,
    "output_tokens": 0,
    "errors": [],
}


def task_card(name: str, **over: Any) -> dict[str, Any]:
    card: dict[str, Any] = {
        "task": name,
        "version": "1.2",
        "kind": "generate",
        "source": "builtin",
        "data_hash": "d" * 64,
        "n_items": 7,
        "dynamic": True,
        "seed": 3,
        "limit": None,
        "prompt_template": {
            "template": "Q: {question}\nA:",
            "answer": "",
            "instruction": "",
            "fewshot_separator": "\n\n",
            "continuation": "",
        },
        "prompt_hash": "p" * 16,
        "chat_template": True,
        "chat_template_hash": "c" * 64,
        "system_prompt": "Answer | briefly",
        "few_shot": 2,
        "few_shot_seed": 7,
        "decoding": {"max_tokens": 64, "temperature": 0.0, "top_p": 1.0, "stop": ["\n"], "seed": 0},
        "scorers": [{"name": "numeric_match", "args": {"tolerance": 0.01}}],
    }
    return card | over


def methodology(tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": {
            "provider": "llamacpp",
            "name": "SmolLM2-135M-Instruct",
            "sha256": SHA,
            "api_model": None,
            "base_url": None,
            "quantization": "Q8_0",
            "chat_template_hash": "c" * 64,
            "extra": {},
        },
        "model_spec": "smollm2",
        "tasks": tasks,
        "confidence": 0.95,
        "calipers_version": "0.1.0",
        "git_revision": "0123abc",
        "packages": {"python": "3.11.9", "numpy": "2.0.0"},
        "created_at": "2024-05-01T12:00:00",
    }


def make_run(summary: dict[str, Any] | None = None, status: str = "finished") -> RunRecord:
    tasks = {"arith": task_card("arith"), "mc": task_card("mc", kind="multiple_choice")}
    if summary is None and status == "finished":
        summary = {"tasks": {"arith": ARITH_SUMMARY, "mc": MC_SUMMARY}, "elapsed_s": 12.5}
    return RunRecord(
        id="20240501-120000-abcdef",
        model="smollm2",
        model_name="SmolLM2-135M-Instruct",
        tasks=["arith", "mc"],
        methodology=methodology(tasks),
        methodology_hash="h" * 16,
        config={},
        status=status,
        created_at=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        finished_at=datetime(2024, 5, 1, 12, 1, tzinfo=UTC) if status == "finished" else None,
        summary=summary,
        calipers_version="0.1.0",
    )


def chat(text: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": "Answer | briefly"},
            {"role": "user", "content": text},
        ],
        "params": {"max_tokens": 64},
    }


def sample(pos: int, task: str = "arith", **kw: Any) -> SampleRecord:
    base: dict[str, Any] = {
        "run_id": "20240501-120000-abcdef",
        "task": task,
        "sample_id": f"{task}-{pos}",
        "position": pos,
        "prompt": chat(f"What is {pos}+{pos}?"),
        "target": str(2 * pos),
    }
    return SampleRecord(**(base | kw))


def make_samples() -> list[SampleRecord]:
    ok = {"acc": 1.0, "acc_strict": 1.0}
    bad = {"acc": 0.0, "acc_strict": 0.0}
    return [
        sample(6, category="algebra", response="12", answer="12", scores=ok),
        sample(1, category="algebra", response=f"{SCRIPT} so 1 | 3", answer="3", scores=bad),
        sample(2, category="geometry", response="5", answer="5", scores=bad, cached=True),
        sample(3, category="geometry", response="7", answer="7", scores=bad, cached=True),
        sample(4, category="logic | puzzles", error="model: TimeoutError: timed out after 30 s"),
        sample(5, category="basic", response="10", answer="10", scores=ok),
        sample(0, category="algebra", response="?", scores={"acc": NAN, "acc_strict": NAN}),
        sample(
            0,
            task="mc",
            response=" Paris",
            answer="0",
            target=" Paris",
            scores={"acc": 1.0, "acc_norm": NAN},
            prompt={
                "context": "Capital of France?",
                "continuations": [" Paris", " Rome"],
                "rendered": "Capital of France?\nAnswer:",
            },
        ),
        sample(
            1,
            task="mc",
            response=" Rome",
            answer="1",
            target=" Oslo",
            scores={"acc": 0.0, "acc_norm": NAN},
            prompt={"context": "Capital of Norway?", "continuations": [" Oslo", " Rome"]},
        ),
    ]


@pytest.fixture
def report(tmp_path: Path) -> tuple[Path, Path]:
    return write_report(make_run(), make_samples(), tmp_path / "out")


def html_of(report: tuple[Path, Path]) -> str:
    return report[0].read_text(encoding="utf-8")


def md_of(report: tuple[Path, Path]) -> str:
    return report[1].read_text(encoding="utf-8")


def section(html: str, start: str, end: str) -> str:
    i = html.index(start)
    return html[i : html.index(end, i)]


class _Collector(HTMLParser):
    """Checks tag balance and collects the text of ``<td class="score">`` cells."""

    VOID: ClassVar[set[str]] = {"meta", "link", "br", "hr", "img", "input", "wbr", "col", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.counts: dict[str, int] = {}
        self.scores: list[str] = []
        self._in_score = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag not in self.VOID:
            self.stack.append(tag)
        if tag == "td" and "score" in (dict(attrs).get("class") or "").split():
            self._in_score = True
            self.scores.append("")

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "td":
            self._in_score = False

    def handle_data(self, data: str) -> None:
        if self._in_score:
            self.scores[-1] += data


def parse(html: str) -> _Collector:
    c = _Collector()
    c.feed(html)
    c.close()
    return c


def test_write_report_returns_both_files(report: tuple[Path, Path], tmp_path: Path) -> None:
    html_path, md_path = report
    assert (html_path, md_path) == (
        tmp_path / "out" / "20240501-120000-abcdef.html",
        tmp_path / "out" / "20240501-120000-abcdef.md",
    )
    assert html_path.stat().st_size > 0 and md_path.stat().st_size > 0


def test_html_is_self_contained(report: tuple[Path, Path]) -> None:
    html = html_of(report)
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert "<script" not in html  # no script at all: <details> collapses without JS


def test_html_is_well_formed(report: tuple[Path, Path]) -> None:
    c = parse(html_of(report))
    assert c.problems == [] and c.stack == []
    for tag in ("html", "head", "body", "main", "style"):
        assert c.counts[tag] == 1, tag


def test_model_text_is_escaped(report: tuple[Path, Path]) -> None:
    html = html_of(report)
    assert SCRIPT not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; so 1 | 3" in html


def test_each_task_score_is_the_input_estimate(report: tuple[Path, Path]) -> None:
    expected = [
        Estimate.from_dict(s["metrics"]["acc"]).format(percent=True)
        for s in (ARITH_SUMMARY, MC_SUMMARY)
    ]
    assert parse(html_of(report)).scores == expected
    md = md_of(report)
    for task, text in zip(("arith", "mc"), expected, strict=True):
        assert re.search(rf"^\| {task} \| .*\| acc \| {re.escape(text)} \| wilson \|", md, re.M)


def test_every_metric_and_category_is_shown_with_its_interval(report: tuple[Path, Path]) -> None:
    html, md = html_of(report), md_of(report)
    for s in (ARITH_SUMMARY, MC_SUMMARY):
        for d in s["metrics"].values():
            text = Estimate.from_dict(d).format(percent=True)
            assert text in html and text in md
    # the latency's n and method wrap under it (a smaller line), so the table fits the page
    assert (
        '<span class="num">0.41 [0.37, 0.46] s</span> <span class="muted small">'
        "(n=6, bootstrap)</span>"
    ) in html
    assert "0.41 [0.37, 0.46] s (n=6, bootstrap)" in md


def test_errors_are_listed_apart_from_failing_items(report: tuple[Path, Path]) -> None:
    html = html_of(report)
    arith = section(html, 'id="task-1"', 'id="task-2"')
    failing = section(arith, "<h3>Failing items</h3>", "<h3>Errors</h3>")
    errors = arith[arith.index("<h3>Errors</h3>") :]
    assert "arith-4" not in failing and "timed out after 30 s" not in failing
    assert "arith-4" in errors and "model: TimeoutError: timed out after 30 s" in errors
    assert "1 error excluded" in html
    # failing: the three scored zeros in position order; the NaN one is neither
    assert re.findall(r"<code>(arith-\d)</code>", failing) == ["arith-1", "arith-2", "arith-3"]
    assert "arith-0" not in failing
    md = md_of(report)
    md_failing = section(md, "### Failing items", "### Errors")
    assert "arith-4" not in md_failing and "arith-4" in md[md.index("### Errors") :]


def test_empty_metric_is_na_never_zero(report: tuple[Path, Path]) -> None:
    html, md = html_of(report), md_of(report)
    mc = section(html, 'id="task-2"', 'id="methodology"')
    row = next(r for r in mc.split("<tr>") if r.startswith("<td>acc_norm"))
    assert "n/a (n=0)" in row and "0.0%" not in row
    assert re.search(r"^\| acc_norm \| n/a \(n=0\) \| 0 \| none \|$", md, re.M)
    assert re.search(r"^\| mean latency|n/a \(n=0\)", md, re.M)


def test_worst_categories_order() -> None:
    hand = ["geometry", "algebra", "basic", "logic | puzzles"]  # 0.0, 0.5, 1.0, NaN last
    arith = make_run().task_summary("arith")
    assert [c for c, _e, _n in worst_categories(arith, k=10)] == hand
    top = worst_categories(arith, k=2)
    assert top == [
        (
            "geometry",
            Estimate.from_dict(ARITH_SUMMARY["categories"]["geometry"]["metrics"]["acc"]),
            2,
        ),
        (
            "algebra",
            Estimate.from_dict(ARITH_SUMMARY["categories"]["algebra"]["metrics"]["acc"]),
            3,
        ),
    ]
    assert worst_categories(make_run().task_summary("mc")) == []
    ties = TaskSummary.model_validate(
        ARITH_SUMMARY
        | {
            "categories": {
                "a": {"n": 1, "n_errors": 0, "metrics": {"acc": est(0.0, 0.0, 0.793, 1)}},
                "b": {"n": 3, "n_errors": 0, "metrics": {"acc": est(0.0, 0.0, 0.561, 3)}},
                "c": {"n": 3, "n_errors": 0, "metrics": {}},
            },
            "top_error": None,
            "calls": None,
            "n_tampering": 0,
            "tampering": [],
        }
    )  # equal values: the narrower interval (the surer failure) first; no metric: last
    assert [c for c, _e, _n in worst_categories(ties)] == ["b", "a", "c"]


def md_tables(md: str) -> list[list[str]]:
    tables: list[list[str]] = []
    prev = False
    for line in md.splitlines():
        is_row = line.startswith("|")
        if is_row and not prev:
            tables.append([])
        if is_row:
            tables[-1].append(line)
        prev = is_row
    return tables


def test_markdown_tables_have_right_rows_and_escaped_pipes(report: tuple[Path, Path]) -> None:
    md = md_of(report)
    tables = md_tables(md)
    # summary, arith metrics, arith categories, arith error types (3 failing replies with
    # no working: one type), mc metrics, mc error types (its card names numeric_match too),
    # methodology
    assert [len(t) - 2 for t in tables[:6]] == [2, 2, 4, 1, 2, 1]
    assert len(tables[6]) - 2 == len(methodology_rows(make_run().methodology))
    for t in tables:
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in t}
        assert len(widths) == 1, t
    assert "| logic \\| puzzles |" in md
    assert '"Answer \\| briefly"' in md


def test_markdown_quotes_and_truncates_long_text(tmp_path: Path) -> None:
    long = "x" * 1000 + " the question?"
    s = sample(
        1,
        category="algebra",
        response="y" * 900,
        answer="1",
        scores={"acc": 0.0},
        prompt={"prompt": long},
    )
    md = write_report(make_run(), [s], tmp_path)[1].read_text(encoding="utf-8")
    assert "**prompt** (truncated: last 400 of 1,014 characters):" in md
    assert "> …" + "x" * 386 + " the question?" in md
    assert "**response** (truncated: first 400 of 900 characters):" in md
    assert "> " + "y" * 400 + "…" in md


def test_unfinished_run_without_summary(tmp_path: Path) -> None:
    html_path, md_path = write_report(make_run(status="interrupted"), make_samples(), tmp_path)
    html, md = html_path.read_text(encoding="utf-8"), md_path.read_text(encoding="utf-8")
    assert "has no summary yet" in html and "has no summary yet" in md
    assert parse(html).scores == []
    assert html.count("n/a (n=0)") >= 2 and "0.0%" not in html
    assert parse(html).problems == []
    # counts come from the stored samples; the error is still listed
    assert "7 samples: 6 scored" in html and "model: TimeoutError: timed out after 30 s" in html


def test_failing_items_rule_and_limit() -> None:
    samples = make_samples()
    assert [s.sample_id for s in failing_items(samples, "arith", "acc")] == [
        "arith-1",
        "arith-2",
        "arith-3",
    ]
    assert [s.sample_id for s in failing_items(samples, "arith", "acc", k=1)] == ["arith-1"]
    assert [s.sample_id for s in error_items(samples, "arith")] == ["arith-4"]
    assert error_items(samples, "mc") == []
    off_scale = [sample(i, scores={"loss": v}) for i, v in enumerate([3.0, 0.5, 0.5, 2.0])]
    assert [s.position for s in failing_items(off_scale, "arith", "loss")] == [1, 2]


def test_prompt_text_renderings() -> None:
    s = make_samples()
    assert prompt_text(s[0]) == "system: Answer | briefly\nuser: What is 6+6?"
    assert prompt_text(sample(1, prompt={"prompt": "2+2=", "params": {}})) == "2+2="
    assert prompt_text(s[7]) == 'Capital of France?\nAnswer:\noptions:\n  0: " Paris"\n  1: " Rome"'
    assert prompt_text(s[8]).startswith("Capital of Norway?\noptions:")


def test_methodology_rows() -> None:
    rows = methodology_rows(make_run().methodology)
    d = dict(rows)
    assert d["model"] == "SmolLM2-135M-Instruct (provider llamacpp)"
    assert d["file sha256"] == SHA[:12] + "…"
    assert d["quantization"] == "Q8_0"
    assert d["arith · task"] == "arith v1.2 · generate · builtin · 7 items · dynamic, seed 3"
    assert d["arith · chat template"] == "on · cccccccccccc…"
    assert d["arith · few-shot"] == "k=2, seed=7"
    assert d["arith · scorers"] == "numeric_match(tolerance=0.01)"
    assert d["arith · decoding"] == (
        'max_tokens=64, temperature=0.0, top_p=1.0, stop=["\\n"], seed=0'
    )
    assert d["git revision"] == "0123abc"
    assert d["packages"] == "python 3.11.9, numpy 2.0.0"
    one = dict(methodology_rows(methodology({"arith": task_card("arith", chat_template=False)})))
    assert one["chat template"] == "off" and "task" in one
