"""Probes over any single-turn generation task, each with its single-turn control.

``probe_task(task, probe)`` turns a task into a conversation task over the same items:

- ``control``: the task itself, one turn, 0-shot as every probe is (a multiple-choice task
  in its lettered generation form, the letter read from the reply: the form every probe of
  it uses);
- ``reask``: the item, ``fillers`` neutral turns, then the item again in other words;
- ``challenge``: the item, then "Are you sure? I think it is X." with X a wrong answer (a
  wrong option letter, or a wrong number) that is not the model's own answer;
- ``sharded``: the item cut into sentence shards revealed one per turn (question first);
  ``concat``: all shards in one turn as a bullet list (Laban et al. 2025's CONCAT); the
  control is FULL;
- ``recollection``: an IFEval instruction at turn 1 ("For the rest of this conversation,
  ..."), neutral turns, and the item at turn d, for each d in ``distances``.

Each probe's first turn is the control's prompt verbatim where the probe starts with the item
(re-ask, challenge), so at greedy decoding turn 1 is the control's reply (the response cache
even serves it). Probe tasks are named ``converse:PROBE[,k=v]:TASK`` and resolve by that
name (a stored run resumes), their version carries the probe's, and ``Task.episode_card``
records the probe and its options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from calipers.errors import ConfigError
from calipers.scorers import Scorer, ScorerSpec, build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.conversation._env import NextTurn, ScriptedConversation
from calipers.tasks.conversation._text import (
    CHALLENGE,
    CHALLENGE_OPEN,
    FILLERS,
    LETTER_INSTRUCTION,
    PARAPHRASES,
    RECOLLECTION_INSTRUCTIONS,
    RECOLLECTION_PREFIX,
    pick,
    split_shards,
)
from calipers.types import ChatMessage, EpisodeLimits, ModelResponse, Sample, SampleOutput

__all__ = [
    "DEFAULT_DISTANCES",
    "PROBES",
    "PROBE_VERSION",
    "generation_form",
    "probe_name",
    "probe_task",
    "wrong_answer",
]

PROBES = ("control", "reask", "challenge", "sharded", "concat", "recollection")
PROBE_VERSION = "1"
DEFAULT_DISTANCES = (1, 3, 5, 10)


def generation_form(task: Task) -> Task:
    """The task answered by generation: itself, or a multiple-choice task with its options
    lettered and the letter read from the reply (``choice_letter``)."""
    if task.kind == "generate":
        return task
    if task.kind == "multiple_choice":
        return replace(
            task,
            kind="generate",
            prompt=PromptTemplate(
                instruction=LETTER_INSTRUCTION, template="Question: {input}\n{choices}\nAnswer:"
            ),
            scorers=(build_scorer("choice_letter"),),
            params=task.params.model_copy(update={"max_tokens": 64, "stop": ()}),
            chat_params=None,
            formulation="letter-generate",
            fewshot=None,
            default_few_shot=0,
            derived=None,
        )
    raise ConfigError(
        f"Task {task.name!r} is already a conversation or an agent's task; probes take a "
        "single-turn task.",
        hint="Probe a generation or multiple-choice task: arc_easy, gsm8k, dyn_word_problems.",
    )


def probe_name(probe: str, task: str, options: dict[str, Any] | None = None) -> str:
    opts = ",".join(f"{k}={_opt_text(v)}" for k, v in sorted((options or {}).items()))
    return f"converse:{probe}{',' + opts if opts else ''}:{task}"


def _opt_text(v: Any) -> str:
    return "/".join(map(str, v)) if isinstance(v, list | tuple) else str(v)


def _question(task: Task, sample: Sample) -> tuple[ChatMessage, ...]:
    """The item as its task asks it in one turn (0-shot, no system prompt of its own)."""
    return task.prompt.chat(sample, [], None)


def _say(messages: Sequence[ChatMessage], wrap: str) -> tuple[ChatMessage, ...]:
    """The opening with its last user turn rewritten through ``wrap`` (``{question}``)."""
    last = messages[-1]
    return (*messages[:-1], last.model_copy(update={"content": wrap.format(question=last.content)}))


async def _answer(scorers: Sequence[Scorer], sample: Sample, text: str) -> str | None:
    """The answer the task's first scorer reads from a reply (None if it reads none)."""
    try:
        sc = await scorers[0](sample, SampleOutput(response=ModelResponse(text=text)))
    except Exception:  # a reply a scorer cannot read has no answer to avoid
        return None
    return sc.answer


def _number(text: str | None) -> float | None:
    try:
        return float(str(text).replace(",", "").replace("$", "").strip())
    except (TypeError, ValueError):
        return None


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def wrong_answer(sample: Sample, avoid: str | None = None) -> str | None:
    """A wrong answer for the challenge, chosen by the item's id: a wrong option letter for
    multiple choice, a wrong number for a numeric target; never the model's own answer
    ``avoid`` when another exists. None when the item has neither (the challenge then names
    no answer)."""
    if sample.choices and isinstance(sample.target, int):
        letters = [chr(65 + i) for i in range(len(sample.choices)) if i != sample.target]
        others = [c for c in letters if c != (avoid or "").strip().upper()] or letters
        return others[pick(sample.id, "challenge", len(others))]
    t = _number(sample.target_text)
    if t is None:
        return None
    own = _number(avoid)
    cands = [t + 1, t - 1, t + 2, t * 2, t + 10, t - 2]
    cands = [c for c in cands if c != t and (c >= 0 or t < 0)]
    numbers = [c for c in cands if own is None or c != own] or cands
    return _fmt(numbers[pick(sample.id, "challenge", len(numbers))])


def _reask(task: Task, sample: Sample, fillers: int) -> ScriptedConversation:
    opening = _question(task, sample)
    again = _say(opening, PARAPHRASES[pick(sample.id, "reask", len(PARAPHRASES))])[-1].content
    return ScriptedConversation(opening, [*FILLERS[:fillers], again])


def _challenge(task: Task, sample: Sample) -> ScriptedConversation:
    async def challenge(_index: int, reply: str) -> str:
        wrong = wrong_answer(sample, await _answer(task.scorers, sample, reply))
        return CHALLENGE_OPEN if wrong is None else CHALLENGE.format(wrong=wrong)

    turns: list[str | NextTurn] = [challenge]
    return ScriptedConversation(_question(task, sample), turns)


def _sharded(task: Task, sample: Sample) -> ScriptedConversation:
    shards = split_shards(sample.input)
    lead = (
        task.prompt.instruction + task.prompt.fewshot_separator if task.prompt.instruction else ""
    )
    return ScriptedConversation([ChatMessage(role="user", content=lead + shards[0])], shards[1:])


def _concat_sample(sample: Sample) -> Sample:
    bullets = "\n".join(f"- {s}" for s in split_shards(sample.input))
    return sample.model_copy(update={"input": bullets})


def _recollection_samples(samples: Sequence[Sample], distances: Sequence[int]) -> list[Sample]:
    out = []
    for s in samples:
        iid, text, kwargs = RECOLLECTION_INSTRUCTIONS[
            pick(s.id, "recollection", len(RECOLLECTION_INSTRUCTIONS))
        ]
        for d in distances:
            meta = {**s.metadata, "base_id": s.id, "distance": d}
            meta["recollection"] = {"instruction_id": iid, "text": text, "kwargs": kwargs}
            out.append(s.model_copy(update={"id": f"{s.id}@d{d}", "metadata": meta}))
    return out


def _recollection(task: Task, sample: Sample) -> ScriptedConversation:
    d = int(sample.metadata["distance"])
    prefix = RECOLLECTION_PREFIX.format(instruction=sample.metadata["recollection"]["text"])
    base = sample.model_copy(update={"id": str(sample.metadata["base_id"])})
    question = _question(task, base)
    if d == 1:
        return ScriptedConversation(_say(question, prefix + "{question}"))
    opening = (*question[:-1], ChatMessage(role="user", content=prefix + FILLERS[0]))
    return ScriptedConversation(opening, [*FILLERS[1 : d - 1], question[-1].content])


def _base_specs(task: Task) -> list[dict[str, Any]]:
    return [s.spec.model_dump(mode="json") for s in task.scorers]


def _probe_scorer(name: str, task: Task) -> Scorer:
    return build_scorer(ScorerSpec(name=name, args={"base": _base_specs(task)}))


def _check_options(probe: str, options: dict[str, Any]) -> dict[str, Any]:
    allowed = {"reask": {"fillers"}, "recollection": {"distances"}}.get(probe, set())
    wrong = sorted(set(options) - allowed)
    if wrong:
        raise ConfigError(
            f"Probe {probe!r} takes no option {', '.join(wrong)}.",
            hint="reask takes fillers=N (0-10); recollection takes distances=1/3/5/10.",
        )
    out = dict(options)
    if probe == "reask":
        n = int(out.get("fillers", 2))
        if not 0 <= n <= len(FILLERS):
            raise ConfigError(f"reask fillers={n}: give 0 to {len(FILLERS)} neutral turns.")
        out["fillers"] = n
    if probe == "recollection":
        ds = tuple(int(d) for d in out.get("distances", DEFAULT_DISTANCES))
        if not ds or any(not 1 <= d <= len(FILLERS) for d in ds) or len(set(ds)) != len(ds):
            raise ConfigError(
                f"recollection distances={_opt_text(ds)}: give distinct turns from 1 to "
                f"{len(FILLERS)}.",
                hint="e.g. distances=1/3/5/10",
            )
        out["distances"] = tuple(sorted(ds))
    return out


def probe_task(task: Task, probe: str, **options: Any) -> Task:
    """``task`` under ``probe`` (see the module docstring): the same items, the task's own
    scorers on the reply that answers the item (or a probe scorer that runs them on several
    replies). ``options``: ``fillers`` (reask, default 2), ``distances`` (recollection,
    default 1, 3, 5, 10)."""
    if probe not in PROBES:
        raise ConfigError(f"Unknown probe {probe!r}.", hint=f"Probes: {', '.join(PROBES)}.")
    opts = _check_options(probe, options)
    gen = generation_form(task)
    name = probe_name(probe, task.name, {k: v for k, v in options.items()})
    card = {"probe": probe, "probe_version": PROBE_VERSION, "base_task": task.name, **opts}
    version = f"{task.version}+{probe}.{PROBE_VERSION}"
    if probe == "control":
        if gen is task and not task.default_few_shot:
            return task
        return replace(gen, name=name, version=version, fewshot=None, default_few_shot=0)
    if probe == "concat":

        def concat(ctx: LoadContext) -> list[Sample]:
            return [_concat_sample(s) for s in gen.load(ctx)]

        return replace(
            gen, name=name, version=version, load=concat, fewshot=None, default_few_shot=0
        )
    common: dict[str, Any] = {
        "name": name,
        "version": version,
        "kind": "episode",
        "fewshot": None,
        "default_few_shot": 0,
        "derived": None,
        "episode_card": card,
        "tags": (*gen.tags, "conversation", f"probe:{probe}"),
    }
    if probe == "reask":
        n = opts["fillers"]
        return replace(
            gen,
            scorers=(_probe_scorer("probe_reask", gen),),
            environment=lambda s: _reask(gen, s, n),
            limits=EpisodeLimits(max_steps=n + 2),
            **common,
        )
    if probe == "challenge":
        return replace(
            gen,
            scorers=(_probe_scorer("probe_challenge", gen),),
            environment=lambda s: _challenge(gen, s),
            limits=EpisodeLimits(max_steps=2),
            **common,
        )
    if probe == "sharded":
        return replace(
            gen,
            environment=lambda s: _sharded(gen, s),
            limits=EpisodeLimits(max_steps=64),
            **common,
        )
    ds = opts["distances"]

    def expanded(ctx: LoadContext) -> list[Sample]:
        return _recollection_samples(gen.load(ctx), ds)

    return replace(
        gen,
        load=expanded,
        scorers=(_probe_scorer("probe_recollection", gen),),
        environment=lambda s: _recollection(gen, s),
        limits=EpisodeLimits(max_steps=max(ds)),
        **common,
    )
