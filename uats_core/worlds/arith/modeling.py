"""Small self-contained helpers around the arithmetic world's models: model shapes, the PRM's input
format and MC-dropout hooks, batched sampling and batched scoring.

They follow exactly the formats the generic backends use (see docs/arith_world.md), so numbers measured
here carry over; they exist so that training and the report do not depend on the backends package.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM, LlamaForTokenClassification, PreTrainedTokenizerBase

from ...backends.prompting import TEMPERATURE
from ...hf_compat import cache_kwarg, output_cache
from ...paths import ASSETS
from .tokenizer import DELIMITER, STEP_TAG

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[3]  # the checkout (the report writes docs/figures there)
MODELS_DIR = ASSETS
POLICY_DIRS = {"A": MODELS_DIR / "arith-policy-a", "B": MODELS_DIR / "arith-policy-b"}
PRM_DIR = MODELS_DIR / "arith-prm"

QUESTION_SUFFIX = DELIMITER
STEP_SUFFIX = f" {STEP_TAG}{DELIMITER}"
PRM_SIDECAR = {
    "kind": "token-classification",
    "step_tag": STEP_TAG,
    "positive_label": 1,
    "question_suffix": QUESTION_SUFFIX,
    "step_suffix": STEP_SUFFIX,
    "dropout_p": 0.1,
}


@dataclass(frozen=True)
class ModelShape:
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    intermediate: int = 512
    max_positions: int = 320


def llama_config(tok: PreTrainedTokenizerBase, shape: ModelShape, **extra: Any) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(tok),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.heads,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        attention_dropout=0.0,
        **extra,
    )


def new_policy(tok: PreTrainedTokenizerBase, shape: ModelShape) -> LlamaForCausalLM:
    return LlamaForCausalLM(llama_config(tok, shape))


def new_prm(tok: PreTrainedTokenizerBase, shape: ModelShape) -> LlamaForTokenClassification:
    # classifier_dropout=0: the only dropout is the hooks' one after every decoder layer, as at inference.
    cfg = llama_config(
        tok,
        shape,
        num_labels=2,
        classifier_dropout=0.0,
        id2label={0: "incorrect", 1: "correct"},
        label2id={"incorrect": 0, "correct": 1},
    )
    return LlamaForTokenClassification(cfg)


# --------------------------------------------------------------------------------------------------
# MC dropout


@contextlib.contextmanager
def layer_dropout(model: torch.nn.Module, p: float) -> Iterator[None]:
    """Dropout on the output hidden states of every decoder layer while the block runs, whatever the
    model's train/eval mode (transformers 5's decoder layers return a tensor)."""
    base: Any = model.model if hasattr(model, "model") else model  # the decoder, whose layers are hooked
    handles = []
    if p > 0:

        def hook(_module: torch.nn.Module, _inputs: object, output: torch.Tensor) -> torch.Tensor:
            if isinstance(output, tuple):  # transformers 4.x layers return a tuple
                return (F.dropout(output[0], p, training=True),) + tuple(output[1:])
            return F.dropout(output, p, training=True)

        handles = [layer.register_forward_hook(hook) for layer in base.layers]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


# --------------------------------------------------------------------------------------------------
# PRM input


def prm_text(question: str, steps: Sequence[str]) -> str:
    return question + QUESTION_SUFFIX + "".join(s.strip() + STEP_SUFFIX for s in steps)


def prm_ids(tok: PreTrainedTokenizerBase, question: str, steps: Sequence[str]) -> list[int]:
    return [tok.bos_token_id] + tok.encode(prm_text(question, steps), add_special_tokens=False)


def _pad(seqs: Sequence[Sequence[int]], pad_id: int, left: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for i, s in enumerate(seqs):
        if left:
            ids[i, n - len(s) :] = torch.tensor(s)
            mask[i, n - len(s) :] = 1
        else:
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
    return ids, mask


@torch.no_grad()
def prm_step_scores(
    prm: LlamaForTokenClassification,
    tok: PreTrainedTokenizerBase,
    items: Sequence[tuple[str, Sequence[str]]],
    k: int = 1,
    p: float = 0.0,
    batch_size: int = 64,
) -> list[torch.Tensor]:
    """For each (question, steps): a (k, n_steps) tensor of P(correct) at every step tag. With p > 0 the
    k passes use MC dropout after every decoder layer; the model itself stays in eval mode."""
    prm.eval()
    tag = tok.convert_tokens_to_ids(STEP_TAG)
    seqs = [prm_ids(tok, q, s) for q, s in items]
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # similar lengths together: less padding
    out: list[torch.Tensor | None] = [None] * len(seqs)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        ids, mask = _pad([seqs[i] for i in idx], tok.pad_token_id)
        ids_k, mask_k = ids.repeat(k, 1), mask.repeat(k, 1)  # the k passes as one batch
        with layer_dropout(prm, p):
            probs = prm(input_ids=ids_k, attention_mask=mask_k).logits.float().softmax(-1)[..., 1]
        probs = probs.view(k, len(idx), -1)
        for j, i in enumerate(idx):
            out[i] = probs[:, j, ids[j] == tag]
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------------
# Policy sampling


@torch.no_grad()
def sample_solutions(
    policy: LlamaForCausalLM,
    tok: PreTrainedTokenizerBase,
    questions: Sequence[str],
    temperature: float = TEMPERATURE,  # the search's own sampling, so the training sets see the steps a search sees
    max_new_tokens: int = 80,
    batch_size: int = 256,
    generator: torch.Generator | None = None,
) -> list[list[str]]:
    """One sampled solution per question, as a list of steps (each non-final one ending in "\\n\\n").

    Whole solutions are sampled in one go, which has the same distribution as the backend's step-by-step
    sampling (each step stops after the "\\n\\n" token, which is kept, and the next continues from it).
    """
    policy.eval()
    delim = tok.convert_tokens_to_ids(DELIMITER)
    assert isinstance(delim, int)  # one token
    eos, pad = tok.eos_token_id, tok.pad_token_id
    prompts = [[tok.bos_token_id] + tok.encode(q + QUESTION_SUFFIX, add_special_tokens=False) for q in questions]
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    results: list[list[str]] = [[] for _ in prompts]
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        ids, mask = _pad([prompts[i] for i in idx], pad, left=True)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out = policy(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
        cache, logits = output_cache(out), out.logits[:, -1]
        gen = torch.full((len(idx), max_new_tokens), pad, dtype=torch.long)
        done = torch.zeros(len(idx), dtype=torch.bool)
        next_pos = pos[:, -1] + 1
        for t in range(max_new_tokens):
            probs = (logits.float() / temperature).softmax(-1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
            gen[:, t] = nxt
            done |= nxt == eos
            if bool(done.all()):
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)  # finished rows are discarded anyway
            out = policy(
                input_ids=nxt[:, None],
                attention_mask=mask,
                position_ids=next_pos[:, None],
                use_cache=True,
                **{cache_kwarg(policy): cache},
            )
            cache, logits = output_cache(out), out.logits[:, -1]
            next_pos = next_pos + 1
        for j, i in enumerate(idx):
            results[i] = split_generated(tok, gen[j].tolist(), delim)
    return results


def split_generated(tok: PreTrainedTokenizerBase, ids: Sequence[int], delim: int) -> list[str]:
    """Token ids of a sampled solution -> step texts, cut after each "\\n\\n" and at end of sequence."""
    steps: list[str] = []
    cur: list[int] = []
    for t in ids:
        if t in (tok.eos_token_id, tok.pad_token_id):
            break
        cur.append(t)
        if t == delim:
            steps.append(str(tok.decode(cur, skip_special_tokens=True)))
            cur = []
    if cur:
        steps.append(str(tok.decode(cur, skip_special_tokens=True)))
    return steps


def write_prm_sidecar(folder: Path) -> None:
    (folder / "uats_prm.json").write_text(json.dumps(PRM_SIDECAR, indent=2) + "\n")
