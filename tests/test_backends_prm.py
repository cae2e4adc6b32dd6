"""Token-classification PRM and the MC-dropout engine on a tiny random LlamaForTokenClassification laid out like
the arithmetic world's PRM (uats_prm.json sidecar, <step> tag, bos prepended)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from uats_core.backends import load_prm
from uats_core.backends.mc_dropout import DropoutSpec
from uats_core.backends.prefix_cache import PrefixCache
from uats_core.backends.prm_token_cls import TokenClassificationPRM
from uats_core.backends.tiny import save_causal_lm, save_token_cls_prm
from uats_core.errors import BackendError
from uats_core.hf_compat import cache_kwarg
from uats_core.protocols import PRM, Trace

TRACES = [
    Trace("What is 2+3?", ("2+3 = 5\n\n",)),
    Trace("Compute 12*7 + 4.", ("12*7 = 84\n\n", "84 + 4 = 88\n\n", "The answer is 88")),
    Trace("x", ("a\n\n", "b\n\n")),
    Trace("A longer question about 17 apples and 5 pears?", ("17 + 5 = 22\n\n", "22")),
]
MODES = ("full", "last:2", "head")


@pytest.fixture(scope="module")
def prm_dir(tmp_path_factory):
    return save_token_cls_prm(tmp_path_factory.mktemp("prm") / "arith-prm", layers=4)


@pytest.fixture()
def prm(prm_dir) -> TokenClassificationPRM:
    return load_prm(str(prm_dir), dtype="float32")


def reference_scores(prm: TokenClassificationPRM, trace: Trace) -> list[float]:
    """The model's own forward on the unpadded sequence, read at the <step> tokens of the documented format."""
    tok = prm.tokenizer
    text = trace.question + "\n\n" + "".join(s.strip() + " <step>\n\n" for s in trace.steps)
    ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = prm.model(input_ids=torch.tensor([ids])).logits[0]
    tag = tok.convert_tokens_to_ids("<step>")
    return [float(torch.softmax(logits[i], -1)[1]) for i, t in enumerate(ids) if t == tag]


def test_detects_kind_and_is_a_prm(prm):
    assert isinstance(prm, TokenClassificationPRM) and isinstance(prm, PRM)
    assert prm.dropout == DropoutSpec("full", None, 0.1)


def test_scores_match_the_model_forward(prm):
    got = prm.score(TRACES, use_cache=False)
    for trace, scores in zip(TRACES, got):
        assert len(scores) == len(trace.steps)
        np.testing.assert_allclose(scores, reference_scores(prm, trace), atol=1e-5)


@pytest.mark.parametrize("side", ["left", "right"])
def test_batched_equals_one_at_a_time(prm_dir, side):
    prm = load_prm(str(prm_dir), dtype="float32", padding_side=side, cache_bytes=0)
    batched = prm.score(TRACES)
    alone = [prm.score([t])[0] for t in TRACES]
    for b, a in zip(batched, alone):
        np.testing.assert_allclose(b, a, atol=1e-5)
    for mode in MODES:
        spec = DropoutSpec.parse(mode, 0.2)
        torch.manual_seed(3)
        mc_b = prm.mc_scores(TRACES, 5, spec=spec)
        mc_alone = []
        for t in TRACES:
            mc_alone.append(prm.mc_scores([t], 5, spec=DropoutSpec.parse(mode, 0.0))[0])
        # p = 0 passes equal the deterministic last-step score in every row
        np.testing.assert_allclose(np.stack(mc_alone)[:, 0], [s[-1] for s in batched], atol=1e-5)
        assert mc_b.shape == (len(TRACES), 5)


def test_left_and_right_padding_give_identical_mc_passes(prm_dir):
    results = []
    for side in ("left", "right"):
        prm = load_prm(str(prm_dir), dtype="float32", padding_side=side, cache_bytes=0)
        torch.manual_seed(11)
        results.append(prm.mc_scores(TRACES, 4, spec=DropoutSpec.parse("full", 0.3)))
    np.testing.assert_allclose(results[0], results[1], atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_p_zero_gives_zero_variance_and_seed_reproduces(prm, mode):
    zero = prm.mc_scores(TRACES, 7, spec=DropoutSpec.parse(mode, 0.0))
    assert np.all(zero.var(axis=1) == 0.0)
    spec = DropoutSpec.parse(mode, 0.2)
    torch.manual_seed(0)
    a = prm.mc_scores(TRACES, 7, spec=spec)
    torch.manual_seed(0)
    b = prm.mc_scores(TRACES, 7, spec=spec)
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert np.all(a.var(axis=1) > 0)
    assert np.all((a >= 0) & (a <= 1))


def test_full_mode_equals_hooked_model_forward(prm):
    """One pass of the engine's `full` mode == the model's own forward with dropout after every layer, when the
    hook draws its masks the way the engine does (rand(k, tokens, hidden) per row)."""
    p, trace = 0.3, TRACES[1]
    torch.manual_seed(5)
    engine = float(prm.mc_scores([trace], 1, spec=DropoutSpec.parse("full", p), use_cache=False)[0, 0])
    enc = prm.encode(trace)

    def hook(_m, _a, out):
        keep = torch.rand(1, out.shape[1], out.shape[2]) >= p
        return out * keep.to(out.dtype) / (1 - p)

    handles = [layer.register_forward_hook(hook) for layer in prm.model.model.layers]
    try:
        torch.manual_seed(5)
        with torch.no_grad():
            logits = prm.model(input_ids=torch.tensor([enc.ids])).logits[0]
    finally:
        for h in handles:
            h.remove()
    assert engine == pytest.approx(float(torch.softmax(logits[enc.positions[-1]], -1)[1]), abs=1e-5)


@pytest.mark.parametrize("mode,once,k_times", [("full", 1, 3), ("last:2", 3, 1), ("head", 4, 0)])
def test_passes_are_batched_and_the_noise_free_bottom_runs_once(prm, mode, once, k_times):
    """Each layer's attention runs once per chunk; up to the first noisy layer on B rows, above it on B*K rows.
    (Attention is hooked rather than the layer: the last layer's MLP runs only at the read positions.)"""
    seen: list[tuple[int, int]] = []
    handles = [
        layer.self_attn.register_forward_hook(lambda m, a, o, i=i: seen.append((i, o[0].shape[0])))
        for i, layer in enumerate(prm.model.model.layers)
    ]
    try:
        prm.mc_scores(TRACES, 7, spec=DropoutSpec.parse(mode, 0.1), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    calls = dict(seen)
    assert len(seen) == 4  # one call per layer: no per-pass loop
    assert [i for i, b in calls.items() if b == len(TRACES)] == list(range(once))
    assert [i for i, b in calls.items() if b == 7 * len(TRACES)] == list(range(once, once + k_times))


@pytest.mark.parametrize("max_batch_tokens", [None, 64])  # 64 tokens: passes run in groups of two or three
@pytest.mark.parametrize("mode", MODES)
def test_prefix_cache_gives_identical_scores(prm_dir, mode, max_batch_tokens):
    parent = Trace("Compute 12*7 + 4.", ("12*7 = 84\n\n",))
    children = [parent.extend("84 + 4 = 88\n\n"), parent.extend("84 + 4 = 89\n\n"), parent.extend("so 88")]
    grandchild = children[0].extend("The answer is 88")
    spec = DropoutSpec.parse(mode, 0.2)
    runs = {}
    for cached in (True, False):
        prm = load_prm(
            str(prm_dir),
            dtype="float32",
            cache_bytes=(64 * 2**20 if cached else 0),
            dropout_mode=mode,
            max_batch_tokens=max_batch_tokens,
        )
        torch.manual_seed(7)
        det = [prm.score([parent])[0]] + prm.score(children) + prm.score([grandchild])
        mc = (
            [prm.mc_scores([parent], 5, spec=spec)]
            + [prm.mc_scores(children, 5, spec=spec)]
            + [prm.mc_scores([grandchild], 5, spec=spec)]
        )
        runs[cached] = (det, np.concatenate(mc))
        if cached:
            assert prm.cache.hits >= 4  # children reused the parent, the grandchild its parent
    for a, b in zip(runs[True][0], runs[False][0]):
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(runs[True][1], runs[False][1], atol=1e-5)


def test_prefix_cache_lru_bounds():
    cache = PrefixCache(max_bytes=10_000, max_entries=3)
    from uats_core.backends.prefix_cache import PrefixEntry

    def entry(n: int) -> PrefixEntry:
        return PrefixEntry(tuple(range(n)), [(torch.zeros(1, n, 4), torch.zeros(1, n, 4))], torch.zeros(n, 8))

    for n in (1, 2, 3):
        cache.put(1, entry(n))
    cache.get(1, (0,))  # touch the oldest
    cache.put(1, entry(4))
    assert cache.get(1, (0, 1)) is None and cache.get(1, (0,)) is not None and len(cache) == 3
    cache.put(1, entry(40))  # 40*(32+32)*4 + 40*8*4 bytes: pushes everything else out of the byte bound
    assert cache.bytes <= 10_000


def test_mc_scores_needs_a_step(prm):
    with pytest.raises(ValueError, match="at least one step"):
        prm.mc_scores([Trace("q")], 3)
    assert prm.score([Trace("q")]) == [[]]


def test_step_text_containing_the_tag_keeps_one_score_per_step(prm):
    t = Trace("q <step>", ("a <step> b\n\n", "c"))
    assert len(prm.score([t])[0]) == 2


def test_bf16_stays_close_to_fp32(prm_dir):
    fp32 = load_prm(str(prm_dir), dtype="float32").score(TRACES)
    bf16 = load_prm(str(prm_dir), dtype="bfloat16").score(TRACES)
    for a, b in zip(fp32, bf16):
        np.testing.assert_allclose(a, b, atol=0.02)


def test_load_errors(tmp_path, prm_dir):
    with pytest.raises(BackendError) as err:
        load_prm(str(tmp_path / "missing"))
    assert err.value.field == "prm" and "missing" in str(err.value)
    with pytest.raises(BackendError, match="unknown PRM kind"):
        load_prm(str(prm_dir), kind="oracle")
    with pytest.raises(BackendError, match="dropout_mode"):
        load_prm(str(prm_dir), dropout_mode="middle")
    with pytest.raises(BackendError, match="vLLM"):
        load_prm("vllm:org/some-prm")
    causal = save_causal_lm(tmp_path / "causal", hidden=32, layers=2, heads=2, kv_heads=1)
    with pytest.raises(BackendError, match="kind"):
        load_prm(str(causal))  # a plain causal LM: no way to tell what PRM it is
    with pytest.raises(BackendError, match="score"):
        load_prm(str(causal), kind="token-classification")  # no classification head in the checkpoint
    bad = save_token_cls_prm(
        tmp_path / "bad",
        layers=2,
        hidden=32,
        heads=2,
        kv_heads=1,
        sidecar={"step_tag": "<nope>", "step_suffix": " <nope>\n\n"},
    )
    with pytest.raises(BackendError, match="<nope>"):
        load_prm(str(bad))
    (bad / "uats_prm.json").write_text(json.dumps({"kind": "magic"}))
    with pytest.raises(BackendError, match="magic"):
        load_prm(str(bad))


def test_shared_layers_per_mode():
    assert DropoutSpec.parse("full", 0.1).shared_layers(4) == 1
    assert DropoutSpec.parse("last:2", 0.1).shared_layers(4) == 3
    assert DropoutSpec.parse("last:9", 0.1).shared_layers(4) == 1  # more than the model has: same as full
    assert DropoutSpec.parse("head", 0.1).shared_layers(4) == 4
    with pytest.raises(BackendError, match="dropout_p"):
        DropoutSpec.parse("full", 1.0)


def test_dropout_hooks_are_removed(prm):
    from uats_core.backends.mc_dropout import dropout_hooks

    ids = torch.tensor([prm.encode(TRACES[1]).ids])
    with torch.no_grad():
        clean = prm.model(input_ids=ids).logits
        with dropout_hooks(prm.model.model.layers, 0.5):
            noisy = prm.model(input_ids=ids).logits
        after = prm.model(input_ids=ids).logits
    assert not torch.allclose(clean, noisy) and torch.equal(clean, after)


def test_eager_attention_gives_the_same_scores(prm_dir):
    """SDPA without padding runs its own causal path; eager always gets the explicit mask: both must agree."""
    sdpa = load_prm(str(prm_dir), dtype="float32", cache_bytes=0)
    eager = load_prm(str(prm_dir), dtype="float32", cache_bytes=0, attn_implementation="eager")
    for batch in (TRACES, TRACES[1:2]):  # padded, and unpadded
        for a, b in zip(sdpa.score(batch), eager.score(batch)):
            np.testing.assert_allclose(a, b, atol=1e-5)
        torch.manual_seed(1)
        mc_a = sdpa.mc_scores(batch, 3, spec=DropoutSpec.parse("full", 0.2))
        torch.manual_seed(1)
        mc_b = eager.mc_scores(batch, 3, spec=DropoutSpec.parse("full", 0.2))
        np.testing.assert_allclose(mc_a, mc_b, atol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2"])
def test_last_layer_at_read_positions_equals_the_whole_layer(arch):
    from transformers import LlamaConfig, LlamaModel, MistralConfig, MistralModel, Qwen2Config, Qwen2Model

    from uats_core.backends.mc_dropout import _PRE_NORM_LAYERS, _last_layer_at

    cfg_cls, model_cls = {
        "llama": (LlamaConfig, LlamaModel),
        "mistral": (MistralConfig, MistralModel),
        "qwen2": (Qwen2Config, Qwen2Model),
    }[arch]
    torch.manual_seed(0)
    model = model_cls(
        cfg_cls(
            vocab_size=50,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    ).eval()
    layer = model.layers[0]
    assert type(layer).__name__ in _PRE_NORM_LAYERS
    x = torch.randn(3, 9, 32)
    pos = torch.arange(9).expand(3, -1)
    kw = {
        "attention_mask": None,
        "position_embeddings": model.rotary_emb(x, pos),
        "position_ids": pos,
        cache_kwarg(layer): None,
    }
    idx = torch.tensor([[8, 3], [0, 0], [5, 8]])
    with torch.no_grad():
        whole = layer(x, **kw)
        part = _last_layer_at(layer, x, idx, **kw)
    torch.testing.assert_close(part, torch.stack([whole[i, idx[i]] for i in range(3)]), atol=1e-5, rtol=1e-5)


def test_a_small_max_batch_tokens_groups_passes_but_never_one_per_call(prm):
    """On CPU the engine splits the K passes into groups that fit its max_batch_tokens; every call still carries at
    least two passes of each candidate (7 -> 3 + 2 + 2)."""
    prm.engine.max_batch_tokens = 1  # as small as it gets: groups of the minimum size
    seen: list[int] = []
    last_attn = prm.model.model.layers[-1].self_attn
    handle = last_attn.register_forward_hook(lambda m, a, o: seen.append(o[0].shape[0]))
    try:
        scores = prm.mc_scores(TRACES[:1], 7, spec=DropoutSpec.parse("full", 0.1), use_cache=False)
    finally:
        handle.remove()
    assert seen == [3, 2, 2] and scores.shape == (1, 7) and np.all(scores.var(axis=1) > 0)
