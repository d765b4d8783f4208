"""``rag_faithfulness``: claim-level faithfulness of a free-form answer to the passages it was
given, by a judge model, in two steps:

1. **extract** (:func:`extract_claims`): the judge splits the answer into atomic claims,
   ``{"claims": ["...", ...]}``; an answer that declines makes none;
2. **verify** (:func:`verify_claims`): the judge labels each claim supported or unsupported by
   the passages, ``{"verdicts": [{"claim": 1, "supported": true}, ...]}``, one per claim.

Values: ``faithfulness``, the share of claims supported (left out when the answer makes no
claim), and ``unsupported_claims``, their number. The verification step alone is what
``calipers judge-calibrate --planted`` measures on planted claims of known support
(``calipers.analysis.calibrate_claim_judge``).

Everything the judge reads (question, answer, passages, claims) is data between nonce
markers, as for ``llm_judge``. A reply without the JSON object, or one whose verdicts do not
label each claim exactly once, gets one retry with a format reminder; a second failure raises
:class:`ModelCallError`, so the sample is stored as an error (counted in the run summary's
errors), never scored. The sample's score details keep the claims and their labels, and a
pass/fail reading (``raw_score``: pass when every claim is supported) that human labels of the
same question calibrate through ``calipers judge-calibrate --labels/--campaign``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from calipers.errors import DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._judge import _SECURITY, JudgeClient, Parser, Verdict, new_nonce, render_block
from calipers.types import Sample, SampleOutput, Score

__all__ = [
    "claims_prompt",
    "extract_claims",
    "passage_texts",
    "rag_faithfulness",
    "verify_claims",
    "verify_prompt",
]

CLAIMS_SHAPE = '{"claims": ["<one atomic claim>", ...]}'
VERDICTS_SHAPE = '{"verdicts": [{"claim": 1, "supported": true | false}, ...]}'
_BOOL = {"true": True, "supported": True, "yes": True, "false": False, "unsupported": False}
_BOOL["no"] = False


def passage_texts(sample: Sample) -> list[str]:
    """The passages shown with ``sample`` (title and text each), or its formatted context."""
    passages = sample.fields.get("passages")
    if passages:
        return [f"{p.get('title') or ''}\n{p.get('text') or ''}".strip() for p in passages]
    context = sample.fields.get("context")
    if isinstance(context, str) and context.strip():
        return [context]
    raise DataError(
        f"Sample {sample.id!r} has no passages to check the answer against.",
        hint='rag_faithfulness scores RAG items: fields["passages"] or fields["context"].',
    )


def claims_prompt(question: str, answer: str) -> tuple[str, str, str]:
    """(system, user, reply shape) asking for the answer's atomic claims."""
    nonce = new_nonce([question, answer])
    system = (
        "You split an answer into atomic claims.\n\n"
        f"{_SECURITY.format(nonce=nonce)}\n\n"
        "A claim is one short, self-contained factual statement made by the answer (replace "
        "pronouns by what they refer to; use the question for context). Do not add anything "
        "the answer does not state, and do not judge whether it is true. An answer that "
        "declines or says it does not know makes no claims: an empty list.\n"
        f"Reply with one JSON object and nothing else: {CLAIMS_SHAPE}"
    )
    user = (
        "List the atomic claims of the ANSWER to the QUESTION.\n\n"
        f"{render_block('QUESTION', question, nonce)}\n\n{render_block('ANSWER', answer, nonce)}"
        "\n\nReply with the JSON object only."
    )
    return system, user, CLAIMS_SHAPE


def verify_prompt(passages: Sequence[str], claims: Sequence[str]) -> tuple[str, str, str]:
    """(system, user, reply shape) asking for one supported/unsupported verdict per claim."""
    numbered_p = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
    numbered_c = "\n".join(f"{i + 1}. {c}" for i, c in enumerate(claims))
    nonce = new_nonce([numbered_p, numbered_c])
    system = (
        "You check claims against passages.\n\n"
        f"{_SECURITY.format(nonce=nonce)}\n\n"
        "A claim is supported when the passages state it or it follows directly from them. "
        "It is unsupported when the passages contradict it or do not say it. Use only the "
        "passages, never your own knowledge. Give one verdict per claim, by its number.\n"
        f"Reply with one JSON object and nothing else: {VERDICTS_SHAPE}"
    )
    user = (
        f"Check each of the {len(claims)} numbered CLAIMS against the PASSAGES.\n\n"
        f"{render_block('PASSAGES', numbered_p, nonce)}\n\n"
        f"{render_block('CLAIMS', numbered_c, nonce)}\n\nReply with the JSON object only."
    )
    return system, user, VERDICTS_SHAPE


def _parse_claims(obj: dict[str, Any]) -> tuple[list[str], Any]:
    raw = obj.get("claims")
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise ValueError(f'"claims" must be a list of strings, got {raw!r:.80}')
    return [c.strip() for c in raw if c.strip()], raw


def _supported(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _BOOL:
        return _BOOL[v.strip().lower()]
    raise ValueError(f'"supported" must be true or false, got {v!r:.40}')


def _verdicts_parser(n: int) -> Parser:
    def parse(obj: dict[str, Any]) -> tuple[list[bool], Any]:
        raw = obj.get("verdicts")
        if not isinstance(raw, list) or len(raw) != n:
            got = f"{len(raw)} verdicts" if isinstance(raw, list) else repr(raw)[:40]
            raise ValueError(f'"verdicts" must list one verdict for each of {n} claims, got {got}')
        labels: list[bool | None] = [None] * n
        for pos, v in enumerate(raw):
            if not isinstance(v, Mapping):
                raise ValueError(f"verdict {pos + 1} is not an object")
            k = v.get("claim", pos + 1)
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
                raise ValueError(f"verdict {pos + 1} names claim {k!r}, not 1 to {n}")
            if labels[k - 1] is not None:
                raise ValueError(f"claim {k} has two verdicts")
            labels[k - 1] = _supported(v.get("supported"))
        return [bool(x) for x in labels], raw

    return parse


async def extract_claims(judge: JudgeClient, question: str, answer: str) -> Verdict:
    """The judge's atomic claims of ``answer`` (``Verdict.value``: a list of strings)."""
    system, user, shape = claims_prompt(question, answer)
    return await judge.judge(system, user, _parse_claims, shape, "claims")


async def verify_claims(
    judge: JudgeClient, passages: Sequence[str], claims: Sequence[str]
) -> Verdict:
    """The judge's label of each claim (``Verdict.value``: a list of bools, True = supported,
    in the order of ``claims``). No claims: no call, an empty list."""
    if not claims:
        return Verdict([], [], "", (), 0)
    system, user, shape = verify_prompt(passages, claims)
    return await judge.judge(system, user, _verdicts_parser(len(claims)), shape, "verdicts")


@scorer("rag_faithfulness", metrics=("faithfulness", "unsupported_claims"))
def rag_faithfulness(
    *,
    judge: str,
    max_tokens: int = 1024,
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> ScoreFn:
    """Claim-level faithfulness by a judge: the answer's atomic claims, each checked against the
    passages shown; faithfulness = share supported, unsupported_claims = how many are not."""
    client = JudgeClient(judge, base_url=base_url, api_key_env=api_key_env, max_tokens=max_tokens)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        passages = passage_texts(sample)
        answer = output.text.strip()
        extracted = await extract_claims(client, sample.input, answer) if answer else None
        claims: list[str] = extracted.value if extracted else []
        checked = await verify_claims(client, passages, claims)
        n_bad = sum(not ok for ok in checked.value)
        values = {"unsupported_claims": float(n_bad)}
        if claims:
            values = {"faithfulness": (len(claims) - n_bad) / len(claims), **values}
        return Score(
            values=values,
            answer=answer,
            metadata={
                "claims": [
                    {"text": c, "supported": ok}
                    for c, ok in zip(claims, checked.value, strict=True)
                ],
                "raw_score": "fail" if n_bad else "pass",
                "mode": "pass_fail",
                "judge": client.name(),
                "attempts": [v.attempts for v in (extracted, checked) if v and v.attempts],
                "replies": [v.replies[-1][:2000] for v in (extracted, checked) if v and v.replies],
                "answer_chars": len(output.text),
            },
        )

    return score
