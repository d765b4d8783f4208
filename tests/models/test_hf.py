"""The hf (transformers) provider.

Fast tests use a tiny random Llama with a small byte-level BPE tokenizer, written to a
temporary checkpoint directory once per module; every value is checked against an independent
computation (a full forward pass per option and a numpy/torch log-softmax, a hand-written
greedy loop, a hash of the files). The slow tests load the bundled SmolLM2 GGUF dequantised to
float32 and compare with the llamacpp provider on the same file.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import ConfigError, ModelLoadError
from calipers.models import ModelOptions, resolve_model
from calipers.types import (
    ChatMessage,
    GenerateParams,
    LoglikelihoodRequest,
    ModelRequest,
    TokenStatsRequest,
)

for _mod in ("torch", "transformers", "tokenizers"):
    if importlib.util.find_spec(_mod) is None:
        pytest.skip(f"the hf provider tests need {_mod}", allow_module_level=True)

import torch  # noqa: E402

from calipers.models._hf import HfModel  # noqa: E402
from calipers.models._hf_load import parse_spec  # noqa: E402
from calipers.models._hf_loglik import Encoded, build_tree  # noqa: E402

CORPUS = [
    "Question: What is the capital of France?\nAnswer: Paris",
    "The sky is blue and the grass is green. Hello world, a tiny tokenizer for tests.",
    "Sentences with  double spaces, numbers 12345 and punctuation: yes; no!",
]
TEMPLATE = (
    "{% for m in messages %}<bos>{{ m['role'] }}\n{{ m['content'] }}<eos>\n{% endfor %}"
    "{% if add_generation_prompt %}<bos>assistant\n{% endif %}"
)
REQUESTS = [
    LoglikelihoodRequest(
        context="Question: What is the capital of France?\nAnswer:",
        continuations=(" Paris", " London", " the city of Lyon", ""),
    ),
    LoglikelihoodRequest(context="The sky is ", continuations=("blue", "green and grey")),
    LoglikelihoodRequest(context="", continuations=("Hello world", "yes")),
    LoglikelihoodRequest(context="Sentences with", continuations=("  double spaces",)),
    LoglikelihoodRequest(context="Hello", continuations=(" world", " world, a tiny", "!")),
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(
        CORPUS * 5,
        trainers.BpeTrainer(
            vocab_size=320,
            special_tokens=["<bos>", "<eos>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>")
    tok.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=1,
        initializer_range=0.3,
    )
    path = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def reference(tiny_dir: Path) -> tuple[Any, Any]:
    """The same checkpoint loaded by transformers directly: the independent side."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(tiny_dir)


def _tiny(tiny_dir: Path, **opts: str) -> HfModel:
    extra = "".join(f",{k}={v}" for k, v in opts.items())
    model = resolve_model(f"hf:{tiny_dir}{extra}", ModelOptions())
    assert isinstance(model, HfModel)
    return model


def naive_logprob(model: Any, tok: Any, context: str, continuation: str) -> tuple[float, bool]:
    """Full forward pass of context + continuation, log-softmax over every position, summed
    over the continuation tokens (lm-evaluation-harness's split of the tokens)."""
    n_space = len(context) - len(context.rstrip())
    if n_space:
        context, continuation = context[:-n_space], context[-n_space:] + continuation
    if context:
        ctx = tok.encode(context)
        cont = tok.encode(context + continuation)[len(ctx) :]
    else:
        ctx, cont = [tok.bos_token_id], tok.encode(continuation)
    if not cont:
        return 0.0, True
    seq = torch.tensor([ctx + cont])
    with torch.no_grad():
        logits = model(seq).logits[0].double()
    lsm = torch.log_softmax(logits, dim=-1)
    rows = range(len(ctx) - 1, len(ctx) + len(cont) - 1)
    total = sum(float(lsm[r, seq[0, r + 1]]) for r in rows)
    greedy = all(int(logits[r].argmax()) == int(seq[0, r + 1]) for r in rows)
    return total, greedy


async def _all(model: HfModel, requests: Sequence[LoglikelihoodRequest]) -> list[Any]:
    return list(await asyncio.gather(*(model.loglikelihood(r) for r in requests)))


def test_loglikelihood_matches_a_full_forward_pass(
    tiny_dir: Path, reference: tuple[Any, Any]
) -> None:
    model = _tiny(tiny_dir)
    results = asyncio.run(_all(model, REQUESTS))
    assert model.forward_passes == 1  # all five requests in one batch
    for req, res in zip(REQUESTS, results, strict=True):
        for cont, lp, greedy in zip(req.continuations, res.logprobs, res.is_greedy, strict=True):
            want, want_greedy = naive_logprob(*reference, req.context, cont)
            assert lp == pytest.approx(want, abs=1e-4), (req.context, cont)
            assert greedy == want_greedy
        assert res.tokens_evaluated < sum(res.n_tokens) + len(req.continuations) * 20


def test_batched_equals_one_at_a_time(tiny_dir: Path) -> None:
    requests = REQUESTS * 3
    batched = _tiny(tiny_dir, batch="4")
    together = asyncio.run(_all(batched, requests))
    assert batched.forward_passes == math.ceil(len(requests) / 4)
    single = _tiny(tiny_dir, batch="1")
    alone = [asyncio.run(single.loglikelihood(r)) for r in requests]
    assert single.forward_passes == len(requests)
    for a, b in zip(together, alone, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
        assert a.is_greedy == b.is_greedy
        assert a.n_tokens == b.n_tokens


def test_all_torch_work_runs_on_one_thread(tiny_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GNU OpenMP keeps a thread team per calling thread; calls from a pool of threads would
    # leave more OpenMP threads than cores (see calipers.models._hf).
    import threading

    from calipers.models import _hf

    seen: set[str] = set()
    for name in ("_ensure_loaded", "_loglikelihood_batch", "_generate", "_token_stats"):
        orig = getattr(HfModel, name)

        def spy(self: HfModel, *a: Any, _orig: Any = orig, **k: Any) -> Any:
            seen.add(threading.current_thread().name)
            return _orig(self, *a, **k)

        monkeypatch.setattr(HfModel, name, spy)

    model = _tiny(tiny_dir, batch="2")
    model.load()

    async def many() -> None:
        await asyncio.gather(
            *(model.loglikelihood(r) for r in REQUESTS * 3),
            model.generate(ModelRequest(prompt="Hello", params=GenerateParams(max_tokens=2))),
            model.token_stats(TokenStatsRequest(text="Hello world")),
        )

    asyncio.run(many())
    asyncio.run(many())  # a second event loop: still the same thread
    assert len(seen) == 1 and next(iter(seen)).startswith("calipers-torch")
    assert seen == {t.name for t in _hf.torch_thread()._threads}


def test_too_long_request_fails_alone(tiny_dir: Path) -> None:
    model = _tiny(tiny_dir)
    long = LoglikelihoodRequest(context="Hello world " * 100, continuations=(" yes",))
    ok, bad = asyncio.run(_gather_settled(model, [REQUESTS[0], long]))
    assert not isinstance(ok, BaseException)
    assert isinstance(bad, Exception) and "positions" in str(bad)


async def _gather_settled(model: HfModel, reqs: list[LoglikelihoodRequest]) -> list[Any]:
    return list(
        await asyncio.gather(*(model.loglikelihood(r) for r in reqs), return_exceptions=True)
    )


def test_tree_shares_token_prefixes_and_drops_last_tokens() -> None:
    # Context 10 11 12; continuations 20 21 22 | 20 21 30 | 40 | (empty).
    tree = build_tree(Encoded([10, 11, 12], [[20, 21, 22], [20, 21, 30], [40], []]))
    # Nodes: the context chain, then 20 and 21 once (shared); 22, 30 and 40 are last tokens.
    assert tree.tokens == [10, 11, 12, 20, 21]
    assert tree.parent == [-1, 0, 1, 2, 3]
    assert tree.depth == [0, 1, 2, 3, 4]
    assert tree.reads == [[(2, 20), (3, 21), (4, 22)], [(2, 20), (3, 21), (4, 30)], [(2, 40)], []]
    branch = build_tree(Encoded([5], [[6, 7], [8, 9]]))
    assert branch.tokens == [5, 6, 8] and branch.parent == [-1, 0, 0]
    assert branch.depth == [0, 1, 1]  # both options start right after the context
    import numpy as np

    assert branch.ancestors(np).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, False, True],
    ]  # siblings never meet


def test_head_reads_log_softmax_and_settles_ties_like_argmax() -> None:
    # One request: context [0], continuations [2, 3] and [1]. Node 0 predicts 2 and 1, whose
    # logits tie at the maximum (argmax takes the first: 1); node 1 predicts 3, its maximum.
    import types

    import numpy as np

    from calipers.models._hf_loglik import _layout, _read_head

    table = np.array(
        [[0.0, 5.0, 5.0, 0.0, -1.0, 0.0], [0.0, 0.0, 0.0, 7.0, 0.0, 2.0]], dtype=np.float32
    )
    head = torch.nn.Linear(2, 6, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(table.T.copy()))
    model = types.SimpleNamespace(
        get_output_embeddings=lambda: head, config=types.SimpleNamespace()
    )
    tree = build_tree(Encoded([0], [[2, 3], [1]]))
    lay = _layout([tree], [[0]], share=False)
    logprob, hit = np.zeros(3), np.ones(3, dtype=bool)
    with torch.inference_mode():
        _read_head(torch, np, model, torch.eye(2), [tree], lay, logprob, hit)

    def log_softmax(row: np.ndarray, k: int) -> float:
        row = row.astype(np.float64)
        return float(row[k] - np.log(np.exp(row).sum()))

    # reads in order: (node 0 -> 2), (node 1 -> 3), (node 0 -> 1)
    want = [log_softmax(table[0], 2), log_softmax(table[1], 3), log_softmax(table[0], 1)]
    assert logprob.tolist() == pytest.approx(want, abs=1e-5)
    assert hit.tolist() == [False, True, True]


def test_packed_pass_is_used_and_equals_the_one_tree_at_a_time_fallback(
    tiny_dir: Path, reference: tuple[Any, Any]
) -> None:
    from calipers.models import _hf_loglik

    model = _tiny(tiny_dir)
    before = _hf_loglik._calls[0]
    together = asyncio.run(_all(model, REQUESTS))
    assert model._packed and _hf_loglik._calls[0] > before  # the block attention ran
    fallback = _tiny(tiny_dir)
    fallback._packed = False  # what a model outside transformers' attention registry gets
    alone = asyncio.run(_all(fallback, REQUESTS))
    for a, b in zip(together, alone, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
        assert a.is_greedy == b.is_greedy
    # Evaluated: the context, plus each distinct proper prefix of an option's tokens.
    _ref, tok = reference
    req = REQUESTS[4]
    ctx = tok.encode(req.context)
    conts = [tok.encode(req.context + c)[len(ctx) :] for c in req.continuations]
    prefixes = {tuple(c[:k]) for c in conts for k in range(1, len(c))}
    assert together[4].tokens_evaluated == len(ctx) + len(prefixes)
    assert together[4].input_tokens == len(ctx) + sum(map(len, conts))


SHOT = "Question: What is the capital of France?\nAnswer: Paris\n\n"
SHARED = [  # few-shot-like: each context starts with tokens an earlier one already has
    LoglikelihoodRequest(context=SHOT + "Question: The sky is", continuations=(" blue", " green")),
    LoglikelihoodRequest(context=SHOT + "Question: Hello", continuations=(" world", "!")),
    # Shares SHOT + "Question: Hello" with the one before, whose own tokens begin after SHOT:
    # its borrowed prefix spans two requests' nodes.
    LoglikelihoodRequest(
        context=SHOT + "Question: Hello world, a tiny", continuations=(" tokenizer", " test")
    ),
    LoglikelihoodRequest(context=SHOT + "Question: Hello", continuations=(" world", " yes")),
    LoglikelihoodRequest(context="The sky is blue", continuations=(" and green",)),
]


def test_shared_prefixes_across_requests_are_computed_once(
    tiny_dir: Path, reference: tuple[Any, Any]
) -> None:
    ref, tok = reference
    model = _tiny(tiny_dir)
    results = asyncio.run(_all(model, SHARED))
    assert model.forward_passes == 1
    for req, res in zip(SHARED, results, strict=True):
        for cont, lp, greedy in zip(req.continuations, res.logprobs, res.is_greedy, strict=True):
            want, want_greedy = naive_logprob(ref, tok, req.context, cont)
            assert lp == pytest.approx(want, abs=1e-4), (req.context, cont)
            assert greedy == want_greedy
    # What each request evaluated: its context after the longest prefix it shares with an
    # earlier request (all but the last context token at most), plus its option prefixes.
    contexts = [tok.encode(r.context) for r in SHARED]
    borrowed = []
    for i, (req, res) in enumerate(zip(SHARED, results, strict=True)):
        ctx = contexts[i]
        shared = 0
        for other in contexts[:i]:
            n = next(
                (k for k, (a, b) in enumerate(zip(ctx, other, strict=False)) if a != b),
                min(len(ctx), len(other)),
            )
            shared = max(shared, min(n, len(ctx) - 1))
        conts = [tok.encode(req.context + c)[len(ctx) :] for c in req.continuations]
        prefixes = {tuple(c[:k]) for c in conts for k in range(1, len(c))}
        assert res.tokens_evaluated == len(ctx) - shared + len(prefixes), i
        borrowed.append(shared)
    shot = len(tok.encode(SHOT))
    assert borrowed[1] >= shot and borrowed[2] >= len(contexts[1]) > shot  # two requests' nodes
    assert borrowed[3] == len(contexts[3]) - 1 and borrowed[4] == 0


def test_onednn_packed_linears_give_the_same_logits(
    tiny_dir: Path, reference: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.models import _hf_kernels
    from calipers.models._hf_kernels import pack_linears

    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch has no oneDNN")
    ref, tok = reference
    from transformers import AutoModelForCausalLM

    packed = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32).eval()
    monkeypatch.setattr(_hf_kernels, "MAX_BYTES", 1000)  # too big to copy: left alone
    assert pack_linears(torch, packed) == 0
    monkeypatch.undo()
    n_linear = sum(type(m) is torch.nn.Linear for m in packed.modules())
    assert pack_linears(torch, packed) == n_linear == 2 * 7 + 1  # 2 layers x 7, and the head
    assert not any(type(m) is torch.nn.Linear for m in packed.modules())
    ids = torch.tensor([tok.encode(CORPUS[1])])
    with torch.no_grad():
        want, got = ref(ids).logits, packed(ids).logits
    assert torch.allclose(got, want, atol=1e-5)


def test_generate_is_the_greedy_argmax(tiny_dir: Path, reference: tuple[Any, Any]) -> None:
    ref, tok = reference
    ids = tok.encode("The sky is")
    with torch.no_grad():
        for _ in range(6):
            ids.append(int(ref(torch.tensor([ids])).logits[0, -1].argmax()))
    new = ids[len(tok.encode("The sky is")) :]
    if tok.eos_token_id in new:
        new = new[: new.index(tok.eos_token_id) + 1]
    out = asyncio.run(
        _tiny(tiny_dir).generate(
            ModelRequest(prompt="The sky is", params=GenerateParams(max_tokens=6))
        )
    )
    assert out.text == tok.decode(new, skip_special_tokens=True)
    assert out.input_tokens == len(tok.encode("The sky is"))
    assert out.output_tokens == len([t for t in new if t != tok.eos_token_id])


def test_chat_uses_the_tokenizer_template(tiny_dir: Path) -> None:
    msgs = (ChatMessage(role="user", content="Hi"),)
    assert _tiny(tiny_dir).render_chat(msgs) == "<bos>user\nHi<eos>\n<bos>assistant\n"


def test_token_stats_match_a_direct_computation(tiny_dir: Path, reference: tuple[Any, Any]) -> None:
    ref, tok = reference
    text = "Hello world, a tiny tokenizer"
    stats = asyncio.run(_tiny(tiny_dir).token_stats(TokenStatsRequest(text=text)))
    seq = [tok.bos_token_id, *tok.encode(text)]
    with torch.no_grad():
        lsm = torch.log_softmax(ref(torch.tensor([seq])).logits[0].double(), dim=-1)
    p = lsm.exp()
    for t in range(len(seq) - 1):
        mu = float((p[t] * lsm[t]).sum())
        sd = float((p[t] * (lsm[t] - mu) ** 2).sum()) ** 0.5
        assert stats.logprobs[t] == pytest.approx(float(lsm[t, seq[t + 1]]), abs=1e-4)
        assert stats.mean_logprob[t] == pytest.approx(mu, abs=1e-4)
        assert stats.std_logprob[t] == pytest.approx(sd, abs=1e-4)
    assert "".join(stats.tokens) == text


def test_identity_of_a_checkpoint_directory(tiny_dir: Path) -> None:
    ident = _tiny(tiny_dir, dtype="bfloat16").identity()
    file_hash = hashlib.sha256((tiny_dir / "model.safetensors").read_bytes()).hexdigest()
    assert ident.provider == "hf"
    assert ident.sha256 == hashlib.sha256(f"model.safetensors:{file_hash}\n".encode()).hexdigest()
    assert ident.extra == {"dtype": "bfloat16"}
    assert ident.chat_template_hash == hashlib.sha256(TEMPLATE.encode()).hexdigest()[:16]
    assert ident.key() != _tiny(tiny_dir).identity().key()  # dtype changes the numbers


@pytest.mark.parametrize(
    "rest", ["x,colour=red", "x,batch=0", "x,dtype=int8", "x,gguf_file", "x,kernels=fast"]
)
def test_bad_spec_options(rest: str) -> None:
    with pytest.raises(ConfigError):
        parse_spec(rest)


def test_spec_options_parse() -> None:
    spec = parse_spec("org/name,gguf_file=m.gguf,batch=8,cache=off,dtype=float16,kernels=torch")
    assert (spec.source, spec.gguf_file, spec.batch, spec.cache, spec.dtype, spec.kernels) == (
        "org/name",
        "m.gguf",
        8,
        False,
        "float16",
        "torch",
    )
    assert parse_spec("x").kernels == "onednn"


def test_uncached_hub_id_offline_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = resolve_model("hf:calipers-tests/no-such-model")  # building it is cheap
    with pytest.raises(ModelLoadError, match="HF_HUB_OFFLINE=1") as e:
        model.identity()
    assert "hf download calipers-tests/no-such-model" in str(e.value)


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="neither a local path nor a hub id"):
        resolve_model(f"hf:{tmp_path}/nothing here").identity()


# -- the bundled SmolLM2: GGUF dequantised to float32, against llama.cpp on the same file ------

ITEMS = [
    ("Question: What is the capital of France?\nAnswer:", (" Paris", " London", " Berlin")),
    (
        "Question: Which gas do plants take in from the air to make food?\nAnswer:",
        (" carbon dioxide", " oxygen", " nitrogen", " helium"),
    ),
    ("Question: How many legs does a spider have?\nAnswer:", (" eight", " six", " four")),
    (
        "Question: To keep ice cream from melting on a hot day, you should\nAnswer:",
        (" put it in a freezer", " leave it in the sun"),
    ),
    (
        "Cooking: The chef cracks two eggs into a bowl. He ",
        (" whisks them with a fork.", " throws the bowl at the wall."),
    ),
]


@pytest.fixture(scope="module")
def smollm2_hf() -> HfModel:
    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("accelerate") is None:
        pytest.skip("loading a GGUF in transformers needs gguf and accelerate")
    model = resolve_model("hf:@smollm2,cache=off", ModelOptions(n_threads=2))
    assert isinstance(model, HfModel)
    return model


@pytest.mark.slow
def test_smollm2_agrees_with_llamacpp(smollm2_hf: HfModel) -> None:
    """Q4_1 in llama.cpp and the same weights dequantised to float32 in transformers: llama.cpp
    also quantises the activations (to 8 bits) inside its dot products, so the values differ a
    little; the choices must not. Measured on 45 ARC-Easy and PIQA items (128 options): at most
    0.42 nats per token, 0.06 on average; the same choice on 45 of 45 (acc) and 44 of 45
    (acc_norm). On the items here: at most 0.51 (" Berlin", one token). Runs of spaces are
    tokenized differently by llama.cpp and by transformers' GGUF tokenizer: no option here has
    them."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    llama = resolve_model("smollm2", ModelOptions(n_threads=2))
    reqs = [LoglikelihoodRequest(context=c, continuations=o) for c, o in ITEMS]
    ours = asyncio.run(_all(smollm2_hf, reqs))
    theirs = [asyncio.run(llama.loglikelihood(r)) for r in reqs]
    per_token = []
    for a, b in zip(ours, theirs, strict=True):
        assert a.n_tokens == b.n_tokens
        assert a.logprobs.index(max(a.logprobs)) == b.logprobs.index(max(b.logprobs))
        per_token += [
            abs(x - y) / n for x, y, n in zip(a.logprobs, b.logprobs, a.n_tokens, strict=True)
        ]
    assert max(per_token) < 0.75
    assert sum(per_token) / len(per_token) < 0.2
    msgs = (ChatMessage(role="user", content="What is 2+2?"),)
    assert smollm2_hf.render_chat(msgs) == llama.render_chat(msgs)
    ident = smollm2_hf.identity()
    assert ident.sha256 == llama.identity().sha256
    assert ident.quantization == "Q4_1" and ident.extra["dequantised"] == "true"
