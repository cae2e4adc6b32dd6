"""Tiny randomly initialised models and a character-level tokenizer, for tests and cost benchmarks.

They have the real architectures (Llama, Qwen2) and the real special tokens of the models they stand in for,
so an adapter proven on them reads the same positions on the real checkpoint. Nothing is downloaded.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

ARITH_SPECIALS = ("<s>", "</s>", "<pad>", "<unk>", "<step>")

# A minimal Qwen2-style chat template (system/user/assistant turns with <|im_start|>/<|im_end|>).
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def char_tokenizer(
    *,
    specials: Iterable[str] = ARITH_SPECIALS,
    words: Iterable[str] = (),
    bos: str | None = "<s>",
    eos: str = "</s>",
    pad: str | None = "<pad>",
    unk: str = "<unk>",
    chat_template: str | None = None,
) -> Any:
    """A lossless character-level WordLevel tokenizer ("\\n\\n" is one token; `words` adds multi-character
    tokens such as ' ки' or '.\\n\\nX'). decode(encode(s)) == s for text made of its characters."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = list(dict.fromkeys([*specials, *(t for t in (bos, eos, pad, unk) if t)]))
    pieces = sorted(dict.fromkeys([*words, "\n\n"]), key=len, reverse=True)
    chars = [c for c in string.printable if c not in "\x0b\x0c\r"]
    vocab: dict[str, int] = {}
    for piece in [*specials, *pieces, *chars]:
        vocab.setdefault(piece, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    pattern = "|".join(re.escape(p) for p in pieces) + r"|[\s\S]"
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    tok.decoder = decoders.Fuse()  # concatenate tokens: exact decode
    named = {bos, eos, pad, unk} - {None}
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token=pad, unk_token=unk)
    extra = [s for s in specials if s not in named]
    if extra:
        fast.add_special_tokens({"additional_special_tokens": extra})
    if chat_template:
        fast.chat_template = chat_template
    return fast


def byte_bpe_tokenizer(
    *,
    specials: Iterable[str] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
    words: Iterable[str] = (),
    bos: str | None = None,
    eos: str = "<|im_end|>",
    pad: str | None = "<|endoftext|>",
    chat_template: str | None = None,
) -> Any:
    """A byte-level BPE tokenizer shaped like Qwen2's: every byte is a token, "\n\n" is one token (as in Qwen's
    vocabulary) and each of `words` is merged into one token. transformers 5 reloads a qwen2 model's tokenizer as
    Qwen2Tokenizer from vocab + merges (with Qwen's pre-tokenizer), so a character-level WordLevel tokenizer would
    not survive a save/load round trip in a qwen2 folder; this one does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    alphabet = ByteLevel.alphabet()
    byte_map = {b: c for b, c in zip(range(256), _bytes_to_unicode())}
    specials = list(dict.fromkeys([*specials, *(t for t in (bos, eos, pad) if t)]))
    vocab: dict[str, int] = {}
    for piece in [*specials, *sorted(alphabet)]:
        vocab.setdefault(piece, len(vocab))
    merges: list[tuple[str, str]] = []
    for word in dict.fromkeys(["\n\n", *words]):
        pieces = [byte_map[b] for b in word.encode("utf-8")]
        cur = pieces[0]
        for nxt in pieces[1:]:
            if cur + nxt not in vocab:
                merges.append((cur, nxt))
                vocab[cur + nxt] = len(vocab)
            cur += nxt
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token=pad)
    extra = [s for s in specials if s not in {bos, eos, pad}]
    if extra:
        fast.add_special_tokens({"additional_special_tokens": extra})
    if chat_template:
        fast.chat_template = chat_template
    return fast


def _bytes_to_unicode() -> list[str]:
    """GPT-2's byte -> printable character table (the one ByteLevel uses), in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def llama_config(
    tokenizer: Any,
    *,
    hidden: int = 64,
    layers: int = 4,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int | None = None,
    **extra: Any,
) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        **extra,
    )


def qwen2_config(
    tokenizer: Any, *, hidden: int = 64, layers: int = 4, heads: int = 4, kv_heads: int = 2, **extra: Any
) -> Any:
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        use_sliding_window=False,
        **extra,
    )


def smollm2_135m_config(vocab_size: int = 49152) -> Any:
    """The shape of SmolLM2-135M (30 layers, hidden 576, 9 heads, 3 KV heads), for cost measurements."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=8192,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )


def save_token_cls_prm(
    folder: str | Path, *, seed: int = 0, sidecar: Mapping[str, Any] | None = None, **cfg: Any
) -> Path:
    """A tiny LlamaForTokenClassification PRM laid out like the arithmetic world's (with uats_prm.json)."""
    from transformers import LlamaForTokenClassification

    folder = Path(folder)
    tok = char_tokenizer()
    torch.manual_seed(seed)
    model = LlamaForTokenClassification(llama_config(tok, num_labels=2, **cfg))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    meta = {
        "kind": "token-classification",
        "step_tag": "<step>",
        "positive_label": 1,
        "question_suffix": "\n\n",
        "step_suffix": " <step>\n\n",
        "dropout_p": 0.1,
    }
    meta.update(sidecar or {})
    (folder / "uats_prm.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def math_shepherd_config(tok: Any, **overrides: Any) -> Any:
    """A tiny MistralConfig shaped as llama_config(tok) (Math-Shepherd's PRM is a Mistral causal LM); `overrides`
    set its other fields."""
    from transformers import MistralConfig

    base = llama_config(tok)
    shape = (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
    )
    return MistralConfig(**{k: getattr(base, k) for k in shape}, **{"sliding_window": 4096, **overrides})


def save_math_shepherd_prm(folder: str | Path, *, seed: int = 1) -> Path:
    """A tiny Mistral causal LM with the Math-Shepherd step tag ки in its vocabulary (kind math-shepherd)."""
    from transformers import MistralForCausalLM

    folder = Path(folder)
    tok = char_tokenizer(words=("ки",))
    torch.manual_seed(seed)
    MistralForCausalLM(math_shepherd_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def save_skywork_prm(folder: str | Path, *, seed: int = 3) -> Path:
    """A tiny Skywork PRM: a Qwen2 backbone and its value head, with a byte-level BPE tokenizer (Qwen2 folders reload
    their tokenizer as Qwen2Tokenizer)."""
    from uats_core.backends.prm_published import SkyworkPRMModel

    folder = Path(folder)
    tok = byte_bpe_tokenizer(specials=("<|endoftext|>",), bos="<|endoftext|>", eos="<|endoftext|>")
    torch.manual_seed(seed)
    SkyworkPRMModel(qwen2_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def save_causal_lm(folder: str | Path, *, seed: int = 0, tokenizer: Any = None, **cfg: Any) -> Path:
    """A tiny plain LlamaForCausalLM policy (no chat template) like the arithmetic world's."""
    from transformers import LlamaForCausalLM

    folder = Path(folder)
    tok = tokenizer or char_tokenizer()
    torch.manual_seed(seed)
    LlamaForCausalLM(llama_config(tok, **cfg)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def markov_llama(
    tokenizer: Any, transitions: Mapping[str, str], *, hidden: int | None = None, strength: float = 60.0
) -> Any:
    """A LlamaForCausalLM whose next token depends only on the current one: `transitions[a] = b` makes b follow
    a with probability ~1 at any temperature <= 1 (other tokens: uniform). Attention and MLP outputs are zeroed,
    so the last hidden state is the current token's embedding; the embeddings are one-hot and lm_head holds the
    transition logits. A scripted model for testing stopping rules exactly."""
    from transformers import LlamaForCausalLM

    vocab = len(tokenizer)
    hidden = hidden or -(-vocab // 4) * 4  # one-hot needs hidden >= vocab; 2 heads need an even head_dim
    model = LlamaForCausalLM(llama_config(tokenizer, hidden=hidden, layers=1, heads=2, kv_heads=2, intermediate=8))
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(vocab, hidden))
        model.model.norm.weight.fill_(1.0)
        w = torch.zeros(vocab, hidden)
        scale = strength / hidden**0.5  # RMSNorm turns a one-hot row into sqrt(hidden) * one-hot
        for a, b in transitions.items():
            w[_tid(tokenizer, b), _tid(tokenizer, a)] = scale
        model.lm_head.weight.copy_(w)
    model.eval()
    return model


def _tid(tokenizer: Any, token: str) -> int:
    tid = tokenizer.convert_tokens_to_ids(token)
    if tid is None or tid == tokenizer.unk_token_id:
        raise KeyError(f"token {token!r} not in the vocabulary")
    return int(tid)
