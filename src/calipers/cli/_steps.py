"""An episode step by step, for ``calipers show RUN --sample ID`` and ``--steps``: the model's
replies with their tool calls and arguments, the tool results, user turns, errors, latency
and tokens, as stored in ``score_details["episode"]``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from calipers.reports import StepView, episode_steps
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


def _step_line(step: StepView) -> str:
    head = f"  [dim]{step.index:>3}[/] "
    cost = f"  [dim]({step.cost})[/]" if step.cost else ""
    if step.who == "model":
        body = "; ".join(escape(c) for c in step.calls)
        said = f'"{escape(_clip(step.text))}"' if step.text else ""
        what = " ".join(x for x in (said, f"calls {body}" if body else "") if x) or "(empty reply)"
        return head + f"[bold]model[/] {what}" + cost
    if step.who.startswith("tool"):
        call = escape(step.calls[0]) if step.calls else escape(step.who)
        line = head + f"[cyan]tool[/]  {call} -> {escape(_clip(step.text))}"
        if step.error:
            line += f"  [red]error: {escape(step.error)}[/]"
        return line + cost
    if step.who == "user":
        line = head + f'[green]user[/]  "{escape(_clip(step.text))}"'
        return line + (f"  [dim]({escape(_clip(step.note))})[/]" if step.note else "")
    return head + f"[red]{escape(step.who)}[/] {escape(step.text)}"


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
        for step in episode_steps(s):
            if step.who != "stopped":  # said above
                out.print(_step_line(step))
        if ep.get("state") is not None:
            out.print(f"  [dim]final state: {escape(_clip(json.dumps(ep['state'])))}[/]")
