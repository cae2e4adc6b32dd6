"""VLLMPolicy against a recording test double of the vllm module (vLLM itself is GPU-only).

The double records every argument the policy passes to LLM(...), SamplingParams(...) and LLM.generate(...), and
replays scripted CompletionOutputs shaped like vLLM's (text, token_ids, finish_reason, stop_reason)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import pytest

from uats_core.backends import load_policy
from uats_core.backends.tiny import QWEN_CHAT_TEMPLATE, char_tokenizer
from uats_core.backends.vllm_policy import VLLMPolicy
from uats_core.errors import BackendError
from uats_core.protocols import FinishReason, Policy, StepOutput, Trace


@dataclass
class FakeCompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None
    stop_reason: int | str | None
    cumulative_logprob: float | None = None
    logprobs: Any = None


@dataclass
class FakeRequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[FakeCompletionOutput]
    finished: bool = True


class RecordingFakeVLLM:
    """A stand-in for the `vllm` module: LLM and SamplingParams record their arguments."""

    def __init__(self, tokenizer: Any, script: list[tuple[str, str | None, str | None]]) -> None:
        self.tokenizer = tokenizer
        self.script = list(script)  # (generated text incl. eos marker "</s>", finish_reason, stop_reason)
        self.llm_calls: list[tuple[tuple, dict]] = []
        self.generate_calls: list[tuple[tuple, dict]] = []
        fake = self

        @dataclass
        class SamplingParams:
            n: int = 1
            temperature: float = 1.0
            top_p: float = 1.0
            max_tokens: int | None = 16
            stop: list[str] | None = None
            include_stop_str_in_output: bool = False
            seed: int | None = None

        class LLM:
            def __init__(self, model: str, **kwargs: Any) -> None:
                fake.llm_calls.append(((model,), kwargs))

            def get_tokenizer(self) -> Any:
                return fake.tokenizer

            def generate(self, prompts: Any, sampling_params: Any = None, **kwargs: Any) -> list[FakeRequestOutput]:
                fake.generate_calls.append(((prompts, sampling_params), kwargs))
                out = []
                for i, prompt in enumerate(prompts):
                    text, finish, stop = fake.script.pop(0)
                    ids = fake.tokenizer(text, add_special_tokens=False)["input_ids"]
                    shown = fake.tokenizer.decode(ids, skip_special_tokens=True)
                    out.append(
                        FakeRequestOutput(
                            str(i), prompt["prompt_token_ids"], [FakeCompletionOutput(0, shown, ids, finish, stop)]
                        )
                    )
                return out

        self.LLM = LLM
        self.SamplingParams = SamplingParams


@pytest.fixture()
def tok():
    return char_tokenizer()


def test_arguments_passed_to_vllm(tok):
    fake = RecordingFakeVLLM(tok, [("ab\n\n", "stop", "\n\n"), ("xyz", "length", None)])
    pol = VLLMPolicy(
        "org/policy",
        temperature=0.7,
        top_p=0.9,
        step_token_cap=3,
        solution_token_cap=100,
        seed=5,
        llm_kwargs={"gpu_memory_utilization": 0.5},
        vllm_module=fake,
    )
    assert isinstance(pol, Policy)
    (model,), kwargs = fake.llm_calls[0]
    assert model == "org/policy"
    assert kwargs == {
        "enable_prefix_caching": True,
        "trust_remote_code": False,
        "dtype": "auto",
        "seed": 5,
        "gpu_memory_utilization": 0.5,
    }
    traces = [Trace("What is 1+1?"), Trace("Q", ("s1\n\n",))]
    pol.generate_steps(traces)
    assert len(fake.generate_calls) == 1  # one call for the whole batch
    (prompts, params), gkw = fake.generate_calls[0]
    assert gkw == {"use_tqdm": False}
    assert prompts == [
        {"prompt_token_ids": [tok.bos_token_id] + tok("What is 1+1?\n\n", add_special_tokens=False)["input_ids"]},
        {"prompt_token_ids": [tok.bos_token_id] + tok("Q\n\ns1\n\n", add_special_tokens=False)["input_ids"]},
    ]
    assert len(params) == 2
    for p in params:
        assert (p.n, p.temperature, p.top_p, p.max_tokens, p.stop, p.include_stop_str_in_output) == (
            1,
            0.7,
            0.9,
            3,
            ["\n\n"],
            True,
        )
    assert params[0].seed != params[1].seed  # per-request seeds: rows do not sample in lockstep


def test_finish_reasons_are_parsed(tok):
    script = [
        ("ab\n\n", "stop", "\n\n"),  # stopped at the delimiter (kept in the text)
        ("done</s>", "stop", None),  # end of sequence: stop_reason None, finish_reason "stop"
        ("xyz", "length", None),  # step cap: stop_reason None as well, told apart by finish_reason
        ("uv", "length", None),  # solution cap: 2 tokens were all that was left
    ]
    fake = RecordingFakeVLLM(tok, script)
    pol = VLLMPolicy("m", step_token_cap=3, solution_token_cap=10, vllm_module=fake)
    out = pol.generate_steps(
        [Trace("q"), Trace("q"), Trace("q"), Trace("q", ("12345678",)), Trace("q", ("1234567890",))]
    )
    assert out == [
        StepOutput("ab\n\n", 3, FinishReason.DELIMITER),
        StepOutput("done", 5, FinishReason.EOS),
        StepOutput("xyz", 3, FinishReason.STEP_CAP),
        StepOutput("uv", 2, FinishReason.SOLUTION_CAP),
        StepOutput("", 0, FinishReason.SOLUTION_CAP),  # no room: not sent to vLLM at all
    ]
    (prompts, params), _ = fake.generate_calls[0]
    assert len(prompts) == 4 and params[3].max_tokens == 2


def test_chat_template_prompts(tok):
    chat_tok = char_tokenizer(
        specials=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    fake = RecordingFakeVLLM(chat_tok, [("a\n\n", "stop", "\n\n")])
    pol = VLLMPolicy("m", system_prompt="SYS", vllm_module=fake)
    pol.generate_steps([Trace("Q?", ("s1\n\n",))])
    (prompts, _), _ = fake.generate_calls[0]
    assert chat_tok.decode(prompts[0]["prompt_token_ids"]) == (
        "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\ns1\n\n"
    )


def test_missing_vllm_fails_at_load_with_the_fix(monkeypatch):
    real_import = builtins.__import__

    def no_vllm(name, *a, **kw):
        if name == "vllm" or name.startswith("vllm."):
            raise ImportError("No module named 'vllm'")
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_vllm)
    with pytest.raises(BackendError, match="requirements-gpu.txt") as err:
        load_policy("vllm:Qwen/Qwen2.5-Math-1.5B-Instruct")
    assert err.value.field == "policy"


def test_request_seeds_fit_64_bits_for_any_run_seed(tok):
    fake = RecordingFakeVLLM(tok, [("a\n\n", "stop", "\n\n")] * 4)
    pol = VLLMPolicy("m", seed=2**62 + 12345, vllm_module=fake)
    pol.generate_steps([Trace("q"), Trace("r")])
    pol.generate_steps([Trace("q"), Trace("r")])
    seeds = [p.seed for call in fake.generate_calls for p in call[0][1]]
    assert len(set(seeds)) == 4 and all(0 <= s < 2**63 for s in seeds)


def test_vllm_options_are_checked_and_routed():
    from uats_core.backends.options import check_policy_opts
    from uats_core.config import parse_options as parse_opts
    from uats_core.errors import ConfigError

    opts = parse_opts(
        ["dtype=bf16", "gpu_memory_utilization=0.55", 'llm_kwargs={"max_model_len": 1024}', "temperature=0.7"],
        "policy-opt",
    )
    assert check_policy_opts("vllm", opts) == {
        "dtype": "bfloat16",
        "temperature": 0.7,
        "llm_kwargs": {"max_model_len": 1024, "gpu_memory_utilization": 0.55},
    }
    with pytest.raises(BackendError, match="^policy-opt: device: vLLM places the model itself"):
        check_policy_opts("vllm", {"device": "cuda"})
    with pytest.raises(BackendError, match="^policy-opt: dtype: vLLM takes one of"):
        check_policy_opts("vllm", {"dtype": "int3"})
    with pytest.raises(BackendError, match="^policy-opt: gpu_memory_utilization: a vLLM engine option"):
        check_policy_opts("hub", {"gpu_memory_utilization": 0.5})
    with pytest.raises(BackendError, match="^policy-opt: colour: not an option of a vLLM policy"):
        check_policy_opts("vllm", {"colour": "red"})
    with pytest.raises(ConfigError, match="^policy-opt: llm_kwargs: .* looks like JSON"):
        parse_opts(["llm_kwargs={max_model_len: 1}"], "policy-opt")
