"""Hard responses for ``conformance.py``: the inputs only; the reference verdicts are computed
by the reference code (``_conformance_peer.py``) and stored under ``tests/data/conformance``.

Each case is a plain dict (JSON-ready). GSM8K: ``response`` and ``solution`` (a GSM8K-style
worked solution ending in ``#### N``). MMLU-Pro: ``response`` and ``n_options`` / ``target``
(0-based). IFEval: ``response``, ``instruction_id_list`` and ``kwargs``. HumanEval:
``task_id`` (a problem of ``<data-dir>/humaneval``) and ``completion``.
"""

from __future__ import annotations

from typing import Any


def _sol(n: str) -> str:
    return f"Some work <<2*3=6>> and more.\n#### {n}"


_GSM8K: list[tuple[str, str]] = [
    # (response, target number as GSM8K writes it after ####)
    ("The answer is 12.", "12"),
    ("So she has 12.0 apples.", "12"),
    ("#### 12.0", "12"),
    ("Total: $1,234.50", "1234.5"),
    ("#### $1,234.50", "1234.5"),
    ("#### 1,234.5", "1234.5"),
    ("It costs $1,600.", "1600"),
    ("#### 1,600", "1600"),
    ("#### 1600.", "1600"),
    ("#### 18\nQuestion: how many apples does Tom have? He has 7.", "18"),
    ("#### 18\nThat is 18 cookies, 3 per box.", "18"),
    ("First 5 + 13 = 18.\n#### 18", "18"),
    ("#### 18 dollars", "18"),
    ("#### 18\n\n(Check: 9 * 2 = 18.)", "18"),
    ("#### 18\nI hope this helps!", "18"),
    ("#### 17\nWait, recount: 18", "18"),
    ("The temperature fell to -5 degrees.", "-5"),
    ("#### -5", "-5"),
    ("He lost 5, so the change is - 5.", "-5"),
    ("The result is 3.50.", "3.5"),
    ("The result is 3.5", "3.5"),
    ("The answer is 0.5.", ".5"),
    ("Answer: 7...", "7"),
    ("So 7, 8 and then 9...", "9"),
    ("The answer is seven.", "7"),
    ("", "7"),
    ("#### $18", "18"),
    ("#### 18%", "18"),
    ("About 1,000,000 people.", "1000000"),
    ("About 1000000 people.", "1,000,000"),
    ("She pays $5 for 3 pens, so 15.", "15"),
    ("15, 20, 25", "25"),
    ("The answer: 42", "42"),
    ("The answer is 42\n", "42"),
    ("The answer is 42.\n", "42"),
    ("The answer is 42.00", "42"),
    ("#### 42.00", "42"),
    ("#### 0042", "42"),
    ("The answer is 0042.", "42"),
    ("#### 1.5.", "1.5"),
    ("It is 2.", "2"),
    ("It is 2.,", "2"),
    ("Profit = 8 - 3 = 5", "5"),
    ("x=-3", "-3"),
    ("The total is 1 234.", "1234"),
    ("#### 12\n#### 13", "12"),
    ("12 ####", "12"),
    ("The ANSWER IS 12", "12"),
    ("$12", "12"),
    ("$", "12"),
]

_MMLU_PRO: list[tuple[str, int, int]] = [
    # (response, n_options, target index)
    ("I choose B. Good luck!", 10, 1),
    ("The answer is (C).", 10, 2),
    ("the answer is J because", 10, 9),
    ("First the answer is (B). Later the answer is (D).", 10, 1),
    ("I think so.\nAnswer: E\nAnswer: F", 10, 4),
    ("Answer: E then Answer: F\nAnswer: G", 10, 5),
    ("The Answer is (C)", 10, 2),
    ("Option G is Good.", 10, 6),
    ("Option D, clearly. Great Job!", 10, 3),
    ("no capital letters here", 10, 0),
    ("no capital letters here", 10, 6),
    ("no capital letters here", 4, 0),
    ("Between A and B, I pick A.", 10, 0),
    ("(H)", 10, 7),
    ("H.", 10, 7),
    ("It is I.", 10, 8),
    ("Final: option G is right", 10, 6),
    ("Answer:\nC", 10, 2),
    ("answer: c", 10, 2),
    ("The answer is K.", 10, 0),
    ("ANSWER IS (D)", 10, 3),
    ("A\nB\nC", 10, 2),
    ("I'd say E-ish.", 10, 4),
    ("Both A, B are wrong; so J", 10, 9),
    ("The best is Ä or B", 10, 1),
    ("Hmm... Answer: (B)", 10, 1),
]

_PS = "detectable_content:postscript"
_IFEVAL_PS: list[tuple[str, str]] = [
    # (response, marker)
    ("Body text.\nP.S. Do not forget.", "P.S."),
    ("Body. P.S. mid-line postscript", "P.S."),
    ("Body.\n\n**P.S.** bring cake", "P.S."),
    ("Body.\np.s. lower case", "P.S."),
    ("Body.\nP. S. with a space", "P.S."),
    ("Body.\nPS no dots", "P.S."),
    ("Body.\nP.S no final dot", "P.S."),
    ("Body.\nP.P.S. only the second one.", "P.S."),
    ("P.S. first, then the body.", "P.S."),
    ("The maps.s. are ready", "P.S."),
    ("Body without a postscript.", "P.S."),
    ("Body.\nP.P.S the second postscript", "P.P.S"),
    ("Body.\nP. P. S. spaced", "P.P.S"),
    ("Body.\nP.S. only the first one.", "P.P.S"),
    ("Body. p.p.s mid-line", "P.P.S"),
    ("Body.\nPPS no dots", "P.P.S"),
    ("   ", "P.S."),
]


def gsm8k_cases() -> list[dict[str, Any]]:
    return [
        {"id": f"gsm8k-{i:02d}", "response": r, "solution": _sol(n)}
        for i, (r, n) in enumerate(_GSM8K)
    ]


def mmlu_pro_cases() -> list[dict[str, Any]]:
    return [
        {"id": f"mmlu_pro-{i:02d}", "response": r, "n_options": n, "target": t}
        for i, (r, n, t) in enumerate(_MMLU_PRO)
    ]


def ifeval_cases(
    more: dict[str, tuple[dict[str, Any], list[str], list[str]]] | None = None,
) -> list[dict[str, Any]]:
    """The postscript cases, then (``more``: instruction id -> (kwargs, followed, not
    followed) responses, as ``tests/tasks/_ifeval_cases.py``) one case per response."""
    out = [
        {
            "id": f"ifeval-ps-{i:02d}",
            "response": r,
            "instruction_id_list": [_PS],
            "kwargs": [{"postscript_marker": m}],
        }
        for i, (r, m) in enumerate(_IFEVAL_PS)
    ]
    for iid, (kwargs, good, bad) in sorted((more or {}).items()):
        for j, r in enumerate([*good, *bad]):
            out.append(
                {
                    "id": f"ifeval-{iid}-{j}",
                    "response": r,
                    "instruction_id_list": [iid],
                    "kwargs": [kwargs],
                }
            )
    return out


_HUMANEVAL_IDS = ("HumanEval/0", "HumanEval/2", "HumanEval/13")


def humaneval_cases(problems: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per problem: its canonical solution, a wrong body, a syntax error, an exception, a
    print-only body, a fenced reply, an infinite loop and ``exit(0)`` (a test-runner tamper)."""
    out = []
    for tid in _HUMANEVAL_IDS:
        p = problems[tid]
        variants = {
            "canonical": p["canonical_solution"],
            "wrong": "    return None\n",
            "syntax": "    return (\n",
            "raises": "    raise ValueError('no')\n",
            "prints": "    print('hello')\n",
            "fenced": "```python\n" + p["prompt"] + p["canonical_solution"] + "```\n",
            "loop": "    while True:\n        pass\n",
            "exit": "    import sys\n    sys.exit(0)\n",
        }
        for name, completion in variants.items():
            out.append({"id": f"{tid}:{name}", "task_id": tid, "completion": completion})
    return out
