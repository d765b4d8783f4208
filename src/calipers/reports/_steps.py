"""An episode's stored steps, readable (conversations, agents): shared by the HTML and
Markdown reports, the dashboard's run page and ``calipers show --sample``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from calipers.store import SampleRecord

__all__ = ["StepView", "episode_steps", "episode_text"]


@dataclass(frozen=True)
class StepView:
    """One step of a stored episode, readable: who acted (``model``, ``tool NAME``, ``user``),
    what they said or returned, the tool calls a model step asked for (``name(args)``), an
    error, and the step's latency and tokens as text."""

    index: int
    who: str
    text: str
    calls: tuple[str, ...] = ()
    error: str | None = None
    note: str = ""
    cost: str = ""


def _call_text(call: dict[str, Any]) -> str:
    """``name(key=value, ...)``, values as JSON; arguments that did not parse as what the
    model wrote."""
    args = call.get("arguments")
    if args is None:
        return f"{call.get('name', '?')}(<unparsed: {call.get('raw')!r}>)"
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{call.get('name', '?')}({shown})"


def episode_steps(record: SampleRecord) -> tuple[StepView, ...]:
    """The stored steps of an episode sample (``score_details["episode"]``), in order; empty
    for a single-call sample."""
    ep = (record.score_details or {}).get("episode")
    if not isinstance(ep, dict):
        return ()
    rows: list[StepView] = []
    for st in ep.get("steps") or []:
        kind = st.get("kind")
        cost = []
        if st.get("latency_s") is not None:
            cost.append(f"{st['latency_s']:.3f} s")
        if st.get("input_tokens") is not None or st.get("output_tokens") is not None:
            tin, tout = st.get("input_tokens"), st.get("output_tokens")
            cost.append(f"{'—' if tin is None else tin} in / {'—' if tout is None else tout} out")
        if st.get("cached"):
            cost.append("cached")
        if kind == "tool":
            call = st.get("tool_call") or {}
            rows.append(
                StepView(
                    int(st.get("index", len(rows))),
                    f"tool {call.get('name', '?')}",
                    str(st.get("text") or ""),
                    (_call_text(call),),
                    st.get("error"),
                    cost=" · ".join(cost),
                )
            )
        elif kind == "user":
            replaced = st.get("replaced")
            note = "" if replaced is None else f"golden history replaced the reply: {replaced}"
            rows.append(
                StepView(int(st.get("index", len(rows))), "user", str(st.get("text")), note=note)
            )
        else:
            rows.append(
                StepView(
                    int(st.get("index", len(rows))),
                    "model",
                    str(st.get("text") or ""),
                    tuple(_call_text(c) for c in st.get("tool_calls") or []),
                    st.get("error"),
                    cost=" · ".join(cost),
                )
            )
    stopped = ep.get("stopped")
    if stopped and stopped != "done":
        why = f": {ep['error']}" if ep.get("error") else ""
        rows.append(StepView(len(rows), "stopped", f"{stopped}{why}"))
    return tuple(rows)


def episode_text(record: SampleRecord, limit: int | None = None) -> str:
    """An episode as plain text, one block per step (terminal and Markdown). ``limit`` clips
    each step's text."""

    def clip_(t: str) -> str:
        return t if limit is None or len(t) <= limit else t[: limit - 1] + "…"

    out = []
    for st in episode_steps(record):
        head = f"[{st.index}] {st.who}" + (f" ({st.cost})" if st.cost else "")
        lines = [head]
        lines += [f"    → {c}" for c in st.calls if st.who == "model"]
        if st.text:
            lines += ["    " + line for line in clip_(st.text).splitlines()]
        if st.error:
            lines.append(f"    error: {st.error}")
        if st.note:
            lines.append(f"    ({clip_(st.note)})")
        out.append("\n".join(lines))
    return "\n".join(out)
