"""The published-PRM adapters on tiny random models of the same architectures and special tokens.

Each test rebuilds the documented input format by hand, runs the model's own forward on the unpadded sequence,
and checks that the adapter reads exactly those positions, one score per step, batched with left and with
right padding."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from uats_core.backends import load_prm
from uats_core.backends.mc_dropout import DropoutSpec
from uats_core.backends.prm_published import JudgePRM, MathShepherdPRM, Qwen2ProcessRewardModel, QwenPRM, SkyworkPRM
from uats_core.backends.prompting import DEFAULT_SYSTEM_PROMPT
from uats_core.backends.tiny import (
    QWEN_CHAT_TEMPLATE,
    byte_bpe_tokenizer,
    char_tokenizer,
    llama_config,
    qwen2_config,
    save_math_shepherd_prm,
    save_skywork_prm,
)
from uats_core.errors import BackendError
from uats_core.protocols import Trace

TRACES = [
    Trace("What is 2+3?", ("2+3 = 5\n\n",)),
    Trace("Compute 12*7 + 4.", ("12*7 = 84\nso far\n\n", "84 + 4 = 88\n\n", "The answer is 88")),
    Trace("x", ("a\n\n", "b\n\n")),
]
QWEN_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<extra_0>")


def check_batching(folder, kind: str, expected: list[list[float]]) -> None:
    for side in ("left", "right"):
        prm = load_prm(str(folder), kind=kind, dtype="float32", padding_side=side, cache_bytes=0)
        batched = prm.score(TRACES)
        for got, exp, trace in zip(batched, expected, TRACES):
            assert len(got) == len(trace.steps)
            np.testing.assert_allclose(got, exp, atol=1e-5)
        for t, exp in zip(TRACES, expected):
            np.testing.assert_allclose(prm.score([t])[0], exp, atol=1e-5)
        zero = prm.mc_scores(TRACES, 3, spec=DropoutSpec.parse("last:1", 0.0))
        np.testing.assert_allclose(zero, np.array([[e[-1]] * 3 for e in expected]), atol=1e-5)
        noisy = prm.mc_scores(TRACES, 3, spec=DropoutSpec.parse("full", 0.3))
        assert noisy.shape == (3, 3) and np.all(noisy.var(axis=1) > 0)


# -- Math-Shepherd -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shepherd_dir(tmp_path_factory):
    return save_math_shepherd_prm(tmp_path_factory.mktemp("ms") / "math-shepherd-tiny")


def test_math_shepherd(shepherd_dir):
    prm = load_prm(str(shepherd_dir), dtype="float32")  # kind from the name
    assert isinstance(prm, MathShepherdPRM)
    tok, model = prm.tokenizer, prm.model
    plus, minus, tag = tok.convert_tokens_to_ids("+"), tok.convert_tokens_to_ids("-"), tok.convert_tokens_to_ids("ки")
    expected = []
    for t in TRACES:
        body = "".join(s.replace("\n\n", " ки\n\n") if s.endswith("\n\n") else s + " ки" for s in t.steps)
        ids = [tok.bos_token_id] + tok(t.question + " " + body, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0]
        expected.append([float(torch.softmax(logits[i, [plus, minus]], -1)[0]) for i, x in enumerate(ids) if x == tag])
    check_batching(shepherd_dir, "math-shepherd", expected)


# -- Qwen2.5-Math-PRM ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qwen") / "tiny-prm"
    tok = byte_bpe_tokenizer(specials=QWEN_SPECIALS, chat_template=QWEN_CHAT_TEMPLATE)
    torch.manual_seed(2)
    Qwen2ProcessRewardModel(qwen2_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    # As on the hub: the config names the remote-code class, which we never import.
    cfg = json.loads((folder / "config.json").read_text())
    cfg["architectures"] = ["Qwen2ForProcessRewardModel"]
    cfg["auto_map"] = {"AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_qwen_prm(qwen_dir):
    prm = load_prm(str(qwen_dir), dtype="float32")  # kind from the architectures, no trust_remote_code
    assert isinstance(prm, QwenPRM)
    tok, model = prm.tokenizer, prm.model
    sep = tok.convert_tokens_to_ids("<extra_0>")
    expected = []
    for t in TRACES:
        text = (
            f"<|im_start|>system\n{DEFAULT_SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n{t.question}<|im_end|>\n"
            f"<|im_start|>assistant\n" + "<extra_0>".join(s.strip() for s in t.steps) + "<extra_0><|im_end|>\n"
        )
        ids = tok(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids]))[0]
        expected.append([float(torch.softmax(logits[i], -1)[1]) for i, x in enumerate(ids) if x == sep])
    check_batching(qwen_dir, "qwen-prm", expected)


def test_qwen_prm_refuses_a_checkpoint_without_its_head(tmp_path):
    from transformers import Qwen2ForCausalLM

    tok = byte_bpe_tokenizer(specials=QWEN_SPECIALS, chat_template=QWEN_CHAT_TEMPLATE)
    Qwen2ForCausalLM(qwen2_config(tok, layers=2)).save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    with pytest.raises(BackendError, match="score"):
        load_prm(str(tmp_path / "lm"), kind="qwen-prm")


def test_qwen_kinds_refuse_a_llama(shepherd_dir):
    with pytest.raises(BackendError, match="Qwen2"):
        load_prm(str(shepherd_dir), kind="skywork")


# -- Skywork ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def skywork_dir(tmp_path_factory):
    return save_skywork_prm(tmp_path_factory.mktemp("sky") / "skywork-prm-tiny")


def test_skywork(skywork_dir):
    prm = load_prm(str(skywork_dir), dtype="float32")
    assert isinstance(prm, SkyworkPRM)
    tok, model = prm.tokenizer, prm.model
    step_id = tok("\n", add_special_tokens=False)["input_ids"][-1]
    expected = []
    for t in TRACES:
        ids = tok(tok.bos_token + t.question + "\n", add_special_tokens=False)["input_ids"]
        flags = []
        for s in t.steps:
            ids = ids + tok(s.strip(), add_special_tokens=False)["input_ids"] + [step_id]
            flags.append(len(ids) - 1)
        with torch.no_grad():
            values = model(torch.tensor([ids]))[0]
        expected.append([float(torch.sigmoid(values[i])) for i in flags])
    # The first trace's step has an inner "\n": searching for the step token would find too many positions.
    assert len(expected[1]) == 3
    check_batching(skywork_dir, "skywork", expected)


# -- LLM-as-judge ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def judge_dir(tmp_path_factory):
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("judge") / "judge"
    tok = char_tokenizer(
        specials=QWEN_SPECIALS,
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        words=("Yes", "No"),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    torch.manual_seed(4)
    LlamaForCausalLM(llama_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_judge(judge_dir):
    prm = load_prm(str(judge_dir), kind="judge", dtype="float32")
    assert isinstance(prm, JudgePRM)
    tok, model = prm.tokenizer, prm.model
    yes, no = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    expected = []
    for t in TRACES:
        row = []
        for j in range(len(t.steps)):
            user = prm.template.format(question=t.question, solution="".join(t.steps[: j + 1]).rstrip())
            text = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
            ids = tok(text, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
            row.append(float(torch.softmax(logits[[yes, no]], -1)[0]))
        expected.append(row)
    check_batching(judge_dir, "judge", expected)
