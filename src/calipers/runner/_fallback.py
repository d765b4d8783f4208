"""A task the provider cannot score by log-likelihood runs its generation formulation instead.

A multiple-choice task is scored by the log-likelihood of each option; providers that cannot
compute one (``ModelProvider.loglikelihood_refusal``: a provider without them, or an
OpenAI-compatible server that fails calipers' check) would otherwise refuse it.
When the user did not choose the task's formulation (``--formulation``), the task's first
formulation answered by generation runs instead (the option letter read from a reply), and
the methodology card records that it is a fallback and why (``formulation_fallback``). The
card's ``formulation``, prompt and scorer are the generation formulation's, so its scores pair
with runs of that formulation and are never compared with the log-likelihood one's.

A task whose log-likelihood formulation was asked for explicitly, or that offers no
generation formulation, is refused with what to do.
"""

from __future__ import annotations

from calipers.errors import ConfigError, NotSupportedError
from calipers.models import ModelProvider
from calipers.runner._config import RunConfig
from calipers.tasks import Task, formulations, generative_formulation, get_task
from calipers.types import ChatMessage

__all__ = ["fallback_note", "fit_to_provider"]


def fit_to_provider(
    task: Task, config: RunConfig, provider: ModelProvider
) -> tuple[Task, str | None]:
    """``task`` itself, or its generation formulation with the reason it replaced ``task``
    (None: no fallback)."""
    if task.kind != "multiple_choice":
        return task, None
    cannot = _chat_refusal(provider, config) or provider.loglikelihood_refusal()
    if cannot is None:
        return task, None
    offered = formulations(task.name)
    generative = generative_formulation(task.name) if offered else None
    asked = config.formulation if config.formulation in offered else None
    if asked is not None:
        other = f"--formulation {generative}" if generative else "another task"
        raise ConfigError(
            f"Task {task.name!r} with --formulation {asked} scores choices by log-likelihood, "
            f"but {cannot}.",
            hint=f"Use {other}, or a model that returns log-probabilities (llamacpp).",
        )
    if generative is None:
        raise ConfigError(
            f"Task {task.name!r} scores choices by log-likelihood, but {cannot}, and it "
            "has no formulation answered by generation.",
            hint="Drop the task or use a model that returns log-probabilities (llamacpp).",
        )
    replaced = task.formulation or offered[0]
    why = f"{generative} formulation instead of {replaced}, since {cannot}"
    return get_task(task.name, generative), why


def _chat_refusal(provider: ModelProvider, config: RunConfig) -> str | None:
    """Why log-likelihoods cannot be scored with the chat template on: the provider scores
    them but cannot render the template to the text it scores (the openai provider)."""
    if not (config.chat_template and provider.supports_loglikelihood):
        return None
    try:
        provider.render_chat((ChatMessage(role="user", content="?"),))
    except NotSupportedError:
        return (
            f"the {provider.provider_name} provider cannot render the model's chat template, "
            "which scoring log-likelihoods with it needs (--no-chat-template scores the plain "
            "prompt)"
        )
    return None


def fallback_note(task: str, fallback: str) -> str:
    """The one line a user is told (stderr in the CLI) about a task that fell back."""
    return f"{task} runs its {fallback} (its scores compare only with runs of that formulation)."
