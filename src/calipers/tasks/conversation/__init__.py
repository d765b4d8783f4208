"""Conversations: multi-turn tasks (user turns with checks, own or golden history) and probes
over any single-turn task (re-ask, challenge, sharded, recollection), each with its control.

Names load on first use (``calipers._util.lazy``): ``calipers run --help`` imports none of it.
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports

if TYPE_CHECKING:
    from calipers.tasks.conversation._env import History, NextTurn, ScriptedConversation
    from calipers.tasks.conversation._files import (
        CHECK_KINDS,
        ConversationFields,
        conversation_samples,
        read_conversation_file,
    )
    from calipers.tasks.conversation._probes import (
        DEFAULT_DISTANCES,
        PROBE_VERSION,
        PROBES,
        generation_form,
        probe_name,
        probe_task,
        wrong_answer,
    )
    from calipers.tasks.conversation._resolve import resolve_converse
    from calipers.tasks.conversation._task import (
        HISTORIES,
        conversation_environment,
        conversation_task,
        with_history,
    )
    from calipers.tasks.conversation._text import (
        CHALLENGE,
        FILLERS,
        PARAPHRASES,
        RECOLLECTION_INSTRUCTIONS,
        RECOLLECTION_PREFIX,
        split_shards,
    )

__all__ = [
    "CHALLENGE",
    "CHECK_KINDS",
    "DEFAULT_DISTANCES",
    "FILLERS",
    "HISTORIES",
    "PARAPHRASES",
    "PROBES",
    "PROBE_VERSION",
    "RECOLLECTION_INSTRUCTIONS",
    "RECOLLECTION_PREFIX",
    "ConversationFields",
    "History",
    "NextTurn",
    "ScriptedConversation",
    "conversation_environment",
    "conversation_samples",
    "conversation_task",
    "generation_form",
    "probe_name",
    "probe_task",
    "read_conversation_file",
    "resolve_converse",
    "split_shards",
    "with_history",
    "wrong_answer",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CHALLENGE": "_text",
        "CHECK_KINDS": "_files",
        "DEFAULT_DISTANCES": "_probes",
        "FILLERS": "_text",
        "HISTORIES": "_task",
        "PARAPHRASES": "_text",
        "PROBES": "_probes",
        "PROBE_VERSION": "_probes",
        "RECOLLECTION_INSTRUCTIONS": "_text",
        "RECOLLECTION_PREFIX": "_text",
        "ConversationFields": "_files",
        "History": "_env",
        "NextTurn": "_env",
        "ScriptedConversation": "_env",
        "conversation_environment": "_task",
        "conversation_samples": "_files",
        "conversation_task": "_task",
        "generation_form": "_probes",
        "probe_name": "_probes",
        "probe_task": "_probes",
        "read_conversation_file": "_files",
        "resolve_converse": "_resolve",
        "split_shards": "_text",
        "with_history": "_task",
        "wrong_answer": "_probes",
    },
)
