"""An episode step by step, for ``calipers show RUN --sample ID`` and ``--steps``: the model's
replies with their tool calls and arguments, the tool results, user turns, errors, latency
and tokens, as stored in ``score_details["episode"]``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from calipers.store import SampleRecord

__all__ = ["print_steps", "sample_json", "select_samples"]

_CLIP = 400  # characters of a text shown per step (the JSON keeps all of it)


def select_samples(
    samples: Sequence[SampleRecord], sample_id: str | None, epoch: int | None, steps: bool
) -> list[SampleRecord]:
    """The records ``--sample``/``--epoch`` name; with ``--steps`` alone, every record that
    holds an episode."""
    chosen = [
        s
        for s in samples
        if (sample_id is None or s.sample_id == sample_id) and (epoch is None or s.epoch == epoch)
    ]
    if sample_id is None and steps:
        chosen = [s for s in chosen if "episode" in (s.score_details or {})]
    return sorted(chosen, key=lambda s: (s.task, s.position, s.epoch))


def sample_json(s: SampleRecord) -> dict[str, Any]:
    d: dict[str, Any] = {
        "task": s.task,
        "sample_id": s.sample_id,
        "epoch": s.epoch,
        "scores": s.scores,
        "error": s.error,
        "response": s.response,
        "latency_s": s.latency_s,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
    }
    episode = (s.score_details or {}).get("episode")
    if episode is not None:
        d["episode"] = episode
    else:
        d["prompt"] = s.prompt
    return d


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CLIP else text[:_CLIP] + f"… ({len(text)} chars)"


def _call(tc: dict[str, Any]) -> str:
    if tc.get("arguments") is None:
        return f"{tc.get('name')}(<unparsed: {tc.get('raw')!r}>)"
    args = ", ".join(f"{k}={json.dumps(v)}" for k, v in tc["arguments"].items())
    return f"{tc.get('name')}({args})"


def _cost(step: dict[str, Any]) -> str:
    parts = []
    if step.get("latency_s") is not None:
        parts.append(f"{step['latency_s']:.2f} s")
    if step.get("input_tokens") is not None or step.get("output_tokens") is not None:
        parts.append(f"{step.get('input_tokens') or 0} in / {step.get('output_tokens') or 0} out")
    if step.get("cached"):
        parts.append("cached")
    return f"  [dim]({', '.join(parts)})[/]" if parts else ""


def _step_line(step: dict[str, Any]) -> str:
    i, kind = step.get("index", "?"), step.get("kind")
    head = f"  [dim]{i:>3}[/] "
    if kind == "model":
        calls = step.get("tool_calls") or []
        text = step.get("text") or ""
        body = "; ".join(escape(_call(tc)) for tc in calls)
        said = f'"{escape(_clip(text))}"' if text else ""
        what = " ".join(x for x in (said, f"calls {body}" if body else "") if x) or "(empty reply)"
        return head + f"[bold]model[/] {what}" + _cost(step)
    if kind == "tool":
        tc = step.get("tool_call") or {}
        line = (
            head + f"[cyan]tool[/]  {escape(_call(tc))} -> {escape(_clip(step.get('text') or ''))}"
        )
        if step.get("error"):
            line += f"  [red]error: {escape(step['error'])}[/]"
        return line + _cost(step)
    line = head + f'[green]user[/]  "{escape(_clip(step.get("text") or ""))}"'
    if step.get("replaced"):
        line += f'  [dim](golden history replaced: "{escape(_clip(step["replaced"]))}")[/]'
    return line


def print_steps(out: Console, records: Sequence[SampleRecord]) -> None:
    for s in records:
        scores = " ".join(f"{k}={v:g}" for k, v in (s.scores or {}).items())
        ep = (s.score_details or {}).get("episode")
        head = f"[bold]{escape(s.task)}/{escape(s.sample_id)}[/] epoch {s.epoch}"
        out.print(head + (f": {escape(scores)}" if scores else ""))
        if s.error:
            out.print(f"  [red]error: {escape(s.error)}[/]")
        if ep is None:
            out.print(f"  [dim](not an episode)[/] response: {escape(_clip(s.response or ''))}")
            continue
        steps = ep.get("steps") or []
        n_model = sum(st.get("kind") == "model" for st in steps)
        n_tool = sum(st.get("kind") == "tool" for st in steps)
        out.print(
            f"  stopped: {ep.get('stopped')}; {n_model} model call(s), {n_tool} tool call(s)"
            + (f"; {s.latency_s:.2f} s" if s.latency_s is not None else "")
            + (
                f"; {s.input_tokens} in / {s.output_tokens} out tokens"
                if s.input_tokens is not None
                else ""
            )
        )
        for m in s.prompt.get("messages") or []:  # the opening: system message, first turn
            role, content = escape(m.get("role", "?")), escape(_clip(m.get("content") or ""))
            out.print(f'      [green]{role}[/]  "{content}"')
        for step in steps:
            out.print(_step_line(step))
        if ep.get("state") is not None:
            out.print(f"  [dim]final state: {escape(_clip(json.dumps(ep['state'])))}[/]")
