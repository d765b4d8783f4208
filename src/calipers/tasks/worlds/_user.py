"""Simulated users: a deterministic scripted one (the default) and an optional model-played one
whose every message is checked against the scenario, so its error rate is measured, not
assumed.

The scripted user, after each agent reply:

1. a reply without a question mark is the agent reporting done (or refusing): the user is
   satisfied and the episode ends;
2. a confirmation question ("shall I", "confirm", "proceed", ...) is answered "Yes, please go
   ahead." when it names the change the user wants (all of the scenario's ``confirm_terms``),
   and "No, please don't do that." otherwise;
3. a question naming facts the user knows (``asks``: the words for each) is answered with
   those facts;
4. any other question gets the goal restated.

After ``max_turns`` user messages the user stops answering and the episode ends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from calipers.tasks.worlds._env import User
from calipers.types import ChatMessage, GenerateParams, ModelRequest

__all__ = [
    "CONFIRM_WORDS",
    "NO",
    "STOP",
    "YES",
    "ModelUser",
    "ScriptedUser",
    "asks_confirmation",
    "check_user_message",
]

YES = "Yes, please go ahead."
NO = "No, please don't do that."
STOP = "###STOP###"
CONFIRM_WORDS = (
    "confirm",
    "shall i",
    "should i",
    "would you like me to",
    "do you want me to",
    "proceed",
    "go ahead",
    "is that ok",
    "is that correct",
)
MAX_TURNS = 8


def asks_confirmation(text: str) -> bool:
    t = text.lower()
    return "?" in t and any(w in t for w in CONFIRM_WORDS)


def _norm(text: str) -> str:
    """Lower case, and times without a leading zero ("09:30" and "9:30" alike)."""
    return re.sub(r"(?<!\d)0(\d:\d\d)", r"\1", text.lower())


def names_change(text: str, terms: Sequence[str]) -> bool:
    """All of ``terms`` occur in ``text`` as whole words (case and a time's leading zero
    aside): "Pro" in "the Pro plan", not in "proceed"."""
    t = _norm(text)
    return all(
        re.search(rf"(?<!\w){re.escape(_norm(str(term)))}(?!\w)", t) is not None for term in terms
    )


class ScriptedUser(User):
    def __init__(self, spec: Mapping[str, Any], max_turns: int = MAX_TURNS) -> None:
        self.spec = spec
        self.max_turns = max_turns
        self.turns = 0

    async def next(self, messages: Sequence[ChatMessage], text: str) -> str | None:
        if self.turns >= self.max_turns or "?" not in text:
            return None
        self.turns += 1
        if asks_confirmation(text):
            return YES if names_change(text, self.spec["confirm_terms"]) else NO
        t = text.lower()
        facts = self.spec["facts"]
        asked = [k for k, words in self.spec["asks"].items() if any(w.lower() in t for w in words)]
        if asked:
            return " ".join(f"My {k.replace('_', ' ')} is {facts[k]}." for k in asked)
        return f"I'm not sure what you need. {self.spec['goal']}"


_SHAPES = {  # what a value of each fact looks like, to spot a wrong one in free text
    "order_id": r"\bO-\d{5}\b",
    "email": r"\b[\w.+-]+@[\w-]+\.[\w.]+\b",
    "code": r"\b\d{6}\b",
    "username": r"\b[a-z]+\.[a-z]+\d{2}\b",
}


def check_user_message(spec: Mapping[str, Any], agent_text: str, message: str) -> list[str]:
    """What is wrong with one simulated-user message, against the scenario's user ``spec``:

    - ``wrong_fact:<key>``: a value shaped like the fact ``key`` (an order id, an email, a
      6-digit code, a username) that is not the user's;
    - ``leak:<key>``: a fact the agent did not ask for in this turn (a known fact volunteered
      in reply to a question about something else: the goal leaks details the user would not
      give unasked);
    - ``unanswered:<key>``: the agent asked for a fact the user knows and the message does
      not give it (a user that stalls, or forgets its role);
    - ``not_closing``: the agent asked nothing (it reported done or refused) and the user
      went on instead of closing;
    - ``wrong_confirmation``: "yes" to a confirmation question that does not name the wanted
      change, or "no" to one that does.
    """
    problems: list[str] = []
    facts: Mapping[str, Any] = spec["facts"]
    agent = agent_text.lower()
    for key, value in facts.items():
        shape = _SHAPES.get(key)
        if shape is None:
            continue
        for found in re.findall(shape, message):
            if found.lower() != str(value).lower():
                problems.append(f"wrong_fact:{key}")
                break
        asked = "?" in agent_text and any(w.lower() in agent for w in spec["asks"].get(key, ()))
        given = str(value).lower() in message.lower()
        if given and not asked and "?" in agent_text:
            problems.append(f"leak:{key}")
        if asked and not given and not asks_confirmation(agent_text):
            problems.append(f"unanswered:{key}")
    if "?" not in agent_text:
        problems.append("not_closing")
    if asks_confirmation(agent_text):
        said_yes = bool(re.match(r"\W*(yes|yeah|yep|sure|ok|okay|go ahead)\b", message, re.I))
        if said_yes != names_change(agent_text, spec["confirm_terms"]):
            problems.append("wrong_confirmation")
    return problems


def _user_prompt(spec: Mapping[str, Any]) -> str:
    facts = "\n".join(f"- {k.replace('_', ' ')}: {v}" for k, v in spec["facts"].items())
    return (
        "You are a customer talking to a support agent. Stay in character and write only "
        f"your next message.\nYour goal: {spec['goal']}\nWhat you know:\n{facts}\n"
        "Give a fact only when the agent asks for it; never invent one. If the agent asks you "
        f"to confirm exactly the change you want, answer '{YES}'; otherwise answer '{NO}'. "
        f"When the agent says it is done or cannot help, answer only {STOP}."
    )


class ModelUser(User):
    """A user played by a model (any provider). Each of its messages is checked with
    :func:`check_user_message`; :meth:`check` reports the count of messages, of those with a
    problem, and the problems, which the environment puts in the final state under
    ``user_check`` (the ``agent_outcome`` scorer turns it into ``user_error_rate``)."""

    def __init__(self, spec: Mapping[str, Any], provider: Any, max_turns: int = MAX_TURNS) -> None:
        self.spec = spec
        self.provider = provider
        self.max_turns = max_turns
        self.turns = 0
        self.checked: list[list[str]] = []

    async def next(self, messages: Sequence[ChatMessage], text: str) -> str | None:
        if self.turns >= self.max_turns:
            return None
        self.turns += 1
        flipped = [ChatMessage(role="system", content=_user_prompt(self.spec))]
        for m in messages:  # the agent's words are the user-model's "user" side
            if m.role == "assistant" and m.content and not m.tool_calls:
                flipped.append(ChatMessage(role="user", content=m.content))
            elif m.role == "user":
                flipped.append(ChatMessage(role="assistant", content=m.content))
        params = GenerateParams(max_tokens=64, temperature=0.0)  # one short message
        response = await self.provider.generate(
            ModelRequest(messages=tuple(flipped), params=params)
        )
        said = str(response.text).strip()
        if not said or STOP in said:
            return None
        self.checked.append(check_user_message(self.spec, text, said))
        return said

    def check(self) -> dict[str, Any]:
        return {
            "messages": len(self.checked),
            "with_errors": sum(1 for p in self.checked if p),
            "problems": [p for ps in self.checked for p in ps],
        }
