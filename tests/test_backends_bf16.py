"""PRM heads score in float32 whatever the trunk's dtype: a bf16 model gives continuous MC pass scores.

Each PRM kind gets a tiny checkpoint of its real architecture whose scoring head is shaped like a trained
LM's: both logits large (|z| ~ 20, where bf16 numbers are 1/8 apart) and their difference moderate. Heads
computed in bf16 then return a handful of quantised probabilities (sigmoid(k/8)); in float32 they do not.
The same seeded dropout masks run in bf16 and float32, so pass by pass the two must agree within the bf16
trunk's error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from uats_core.backends import load_prm
from uats_core.backends.mc_dropout import DropoutSpec
from uats_core.backends.prm_published import Qwen2ProcessRewardModel, SkyworkPRMModel
from uats_core.backends.tiny import (
    QWEN_CHAT_TEMPLATE,
    byte_bpe_tokenizer,
    char_tokenizer,
    llama_config,
    math_shepherd_config,
    qwen2_config,
    save_token_cls_prm,
)
from uats_core.protocols import Trace

ASSET_PRM = Path(__file__).resolve().parents[1] / "assets" / "models" / "arith-prm"
TRACES = [
    Trace("What is 2+3?", ("2+3 = 5\n\n",)),
    Trace("Compute 12*7 + 4.", ("12*7 = 84\n\n", "84 + 4 = 88\n\n")),
    Trace("x", ("a\n\n", "b\n\n", "c\n\n")),
]
QWEN_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<extra_0>")
K = 16


def _lm_like_rows(weight: torch.Tensor, rows: list[int], scale: float = 60.0) -> None:
    """Rows r_i = s·u + d_i: a large shared component (logits ~ ±20 at unit-norm hidden states) plus a small
    per-row one, as in a trained LM head, where the two candidate tokens' logits are large and close."""
    g = torch.Generator().manual_seed(7)
    h = weight.shape[1]
    shared = torch.randn(h, generator=g) * scale / h**0.5
    with torch.no_grad():
        for r in rows:
            weight[r] = shared + torch.randn(h, generator=g) * 2.0 / h**0.5


def _math_shepherd(folder: Path) -> tuple[Path, str]:
    from transformers import MistralForCausalLM

    tok = char_tokenizer(words=("ки",))
    cfg = math_shepherd_config(tok, tie_word_embeddings=False)
    torch.manual_seed(1)
    model = MistralForCausalLM(cfg)
    _lm_like_rows(model.lm_head.weight, [tok.convert_tokens_to_ids("+"), tok.convert_tokens_to_ids("-")])
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder, "math-shepherd"


def _judge(folder: Path) -> tuple[Path, str]:
    from transformers import LlamaForCausalLM

    tok = char_tokenizer(
        specials=QWEN_SPECIALS,
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        words=("Yes", "No"),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    torch.manual_seed(4)
    model = LlamaForCausalLM(llama_config(tok))
    _lm_like_rows(model.lm_head.weight, [tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")])
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder, "judge"


def _qwen(folder: Path) -> tuple[Path, str]:
    tok = byte_bpe_tokenizer(specials=QWEN_SPECIALS, chat_template=QWEN_CHAT_TEMPLATE)
    torch.manual_seed(2)
    model = Qwen2ProcessRewardModel(qwen2_config(tok))
    _lm_like_rows(model.score[2].weight, [0, 1], scale=100.0)  # after a ReLU: about half the inputs are zero
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder, "qwen-prm"


def _skywork(folder: Path) -> tuple[Path, str]:
    tok = byte_bpe_tokenizer(specials=("<|endoftext|>",), bos="<|endoftext|>", eos="<|endoftext|>")
    torch.manual_seed(3)
    model = SkyworkPRMModel(qwen2_config(tok))
    with torch.no_grad():  # a value head whose outputs sit at a few units, where bf16 steps are 1/64-1/32
        model.v_head.summary.weight.mul_(30.0)
        model.v_head.summary.bias.fill_(0.0)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder, "skywork"


def _token_cls(folder: Path) -> tuple[Path, str]:
    save_token_cls_prm(folder, seed=5)
    from transformers import LlamaForTokenClassification

    model = LlamaForTokenClassification.from_pretrained(folder)
    _lm_like_rows(model.score.weight, [0, 1])
    model.save_pretrained(folder)
    return folder, "token-classification"


BUILDERS = {
    "math-shepherd": _math_shepherd,
    "judge": _judge,
    "qwen-prm": _qwen,
    "skywork": _skywork,
    "token-classification": _token_cls,
}


def _passes(folder: Path, kind: str, dtype: str) -> tuple[np.ndarray, list[list[float]]]:
    prm = load_prm(str(folder), kind=kind, dtype=dtype, cache_bytes=0)
    assert prm.engine.dtype == {"bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    torch.manual_seed(0)
    return prm.mc_scores(TRACES, K, spec=DropoutSpec.parse("full", 0.1)), prm.score(TRACES)


def _check(folder: Path, kind: str) -> None:
    f32, det32 = _passes(folder, kind, "float32")
    b16, det16 = _passes(folder, kind, "bfloat16")
    distinct32 = sum(len(np.unique(row)) for row in f32)
    distinct16 = sum(len(np.unique(row)) for row in b16)
    # float32 passes are all distinct; bf16 ones must be nearly so (quantised heads gave ~5 values for 48 passes).
    assert distinct32 == f32.size
    assert distinct16 >= 0.9 * distinct32, (kind, distinct16, distinct32, b16)
    # Same masks: pass by pass within the bf16 trunk's error (a typical pass within 0.04, none beyond 0.1),
    # and the spread over passes alike.
    gap = np.abs(b16 - f32)
    assert np.median(gap) < 0.04 and gap.max() < 0.1, (kind, np.median(gap), gap.max())
    np.testing.assert_allclose(b16.std(axis=1), f32.std(axis=1), rtol=0.5, atol=0.01)
    for a, b in zip(det16, det32):
        np.testing.assert_allclose(a, b, atol=0.1)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_bf16_trunk_gives_continuous_scores(kind, tmp_path):
    folder, kind = BUILDERS[kind](tmp_path / kind)
    _check(folder, kind)


def test_shipped_world_prm_in_bf16(tmp_path):
    sidecar = json.loads((ASSET_PRM / "uats_prm.json").read_text(encoding="utf-8"))
    assert sidecar["kind"] == "token-classification"
    _check(ASSET_PRM, "token-classification")
