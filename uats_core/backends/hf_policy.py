"""A transformers policy: one batched, left-padded `generate()` per request batch, stopping each row at "\\n\\n"."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, cast

import torch
from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

from uats_core.backends._loading import ModelSource, load_tokenizer, load_weights, resolve_device, resolve_spec
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
from uats_core.cancel import SearchCancelled, cancel_pending
from uats_core.errors import BackendError
from uats_core.protocols import STEP_DELIMITER, FinishReason, StepOutput, Trace

log = logging.getLogger(__name__)

# How many trailing tokens the stop check decodes: "\n\n" spans at most a few tokens in any vocabulary.
_TAIL_TOKENS = 4


class _PerRowStop(StoppingCriteria):
    """Stops each row on its own: at the first "\\n\\n" in its new text, at EOS, or at its own token cap.

    Records where each row stopped, so the caller can tell generated tokens from the padding that
    generate() writes into finished rows (the pad id may equal a real token, e.g. eos)."""

    def __init__(self, tokenizer: Any, prompt_len: int, token_caps: list[int], eos_ids: set[int]) -> None:
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.token_caps = token_caps
        self.eos_ids = eos_ids
        self.stopped_at: list[int | None] = [None] * len(token_caps)
        self.cancelled = False

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        n_new = input_ids.shape[1] - self.prompt_len
        if cancel_pending():  # a cancel stops the whole batch at this token; the caller raises
            self.cancelled = True
            return cast(torch.BoolTensor, torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device))
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for row in range(input_ids.shape[0]):
            if self.stopped_at[row] is not None:
                done[row] = True
                continue
            last = int(input_ids[row, -1])
            tail = input_ids[row, max(self.prompt_len, input_ids.shape[1] - _TAIL_TOKENS) :].tolist()
            if (
                last in self.eos_ids
                or n_new >= self.token_caps[row]
                or STEP_DELIMITER in self.tokenizer.decode(tail, skip_special_tokens=True)
            ):
                self.stopped_at[row] = n_new
                done[row] = True
        return cast(torch.BoolTensor, done)


class HFPolicy:
    """Policy over any transformers causal LM (hub id, local folder or GGUF file)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "hf-policy",
        temperature: float = TEMPERATURE,
        top_p: float = TOP_P,
        step_token_cap: int = STEP_TOKEN_CAP,
        solution_token_cap: int = SOLUTION_TOKEN_CAP,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        use_chat_template: bool | None = None,
        seed: int | None = None,
    ) -> None:
        check_sampling(temperature, top_p, step_token_cap, solution_token_cap)
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.temperature = temperature
        self.top_p = top_p
        self.step_token_cap = step_token_cap
        self.solution_token_cap = solution_token_cap
        self.system_prompt = system_prompt
        self.use_chat = resolve_use_chat(tokenizer, use_chat_template, name)
        self.seed = seed
        self._calls = 0
        self._lock = threading.Lock()  # one batch at a time: the per-call seed counter is shared state
        eos = (
            model.generation_config.eos_token_id
            if model.generation_config.eos_token_id is not None
            else tokenizer.eos_token_id
        )
        self.eos_ids: set[int] = set(eos if isinstance(eos, (list, tuple)) else [eos]) - {None}
        if tokenizer.eos_token_id is not None:
            self.eos_ids.add(tokenizer.eos_token_id)
        if not self.eos_ids:
            raise BackendError("policy", f"{name}: the tokenizer and generation config name no end-of-sequence token")
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_ids)

    @classmethod
    def from_pretrained(
        cls,
        spec: str | ModelSource,
        *,
        dtype: str | torch.dtype | None = "auto",
        device: str | None = "auto",
        trust_remote_code: bool = False,
        name: str | None = None,
        **opts: Any,
    ) -> HFPolicy:
        from transformers import AutoModelForCausalLM

        src = spec if isinstance(spec, ModelSource) else resolve_spec(spec, "policy")
        if src.kind == "vllm":
            raise BackendError("policy", f"{src.spec!r} is a vLLM spec; load it with load_policy() or VLLMPolicy")
        dev = resolve_device(device)
        tokenizer = load_tokenizer(src, "policy", trust_remote_code)
        # sdpa, as the PRM engine needs: a judge PRM may share this very model object.
        model = load_weights(
            AutoModelForCausalLM,
            src,
            "policy",
            dtype=dtype,
            device=dev,
            trust_remote_code=trust_remote_code,
            attn_implementation="sdpa",
        )
        return cls(model, tokenizer, name=name or src.spec, **opts)

    # -- prompts ---------------------------------------------------------------------------------------
    def prompt_ids(self, trace: Trace) -> list[int]:
        return prompt_ids(self.tokenizer, trace, use_chat=self.use_chat, system_prompt=self.system_prompt)

    # -- generation ------------------------------------------------------------------------------------
    @torch.inference_mode()
    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        if not traces:
            return []
        used, token_caps = row_token_caps(self.tokenizer, traces, self.step_token_cap, self.solution_token_cap)
        results: list[StepOutput | None] = [None] * len(traces)
        live = [i for i, b in enumerate(token_caps) if b > 0]
        for i in set(range(len(traces))) - set(live):
            results[i] = StepOutput("", 0, FinishReason.SOLUTION_CAP)  # no room left: the solution is truncated
        if live:
            with self._lock:
                outs = self._generate([traces[i] for i in live], [token_caps[i] for i in live], [used[i] for i in live])
            for i, out in zip(live, outs):
                results[i] = out
        return [r for r in results if r is not None]

    def _generate(self, traces: list[Trace], token_caps: list[int], used: list[int]) -> list[StepOutput]:
        prompts = [self.prompt_ids(t) for t in traces]
        width = max(len(p) for p in prompts)
        # Left padding: every row's next token sits in the same column, which batched decoding needs.
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, ids in enumerate(prompts):
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        device = self.model.device
        stop = _PerRowStop(self.tokenizer, width, token_caps, self.eos_ids)
        gen_config = GenerationConfig(
            do_sample=self.temperature > 0,
            temperature=self.temperature if self.temperature > 0 else None,
            top_p=self.top_p if self.temperature > 0 else None,
            top_k=0,  # top_k=0: no top-k cut (vLLM/search-and-learn default)
            max_new_tokens=max(token_caps),
            pad_token_id=self.pad_id,
            eos_token_id=sorted(self.eos_ids),
            bos_token_id=self.tokenizer.bos_token_id,
        )
        # With a seed: reseeded per call inside a forked RNG, so a rerun replays the same tree and the global RNG is
        # left alone. Without one: the global RNG drives sampling and advances (forking it there would restore
        # the same state after every call and repeat the same draws).
        seeded = self.seed is not None
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else [], enabled=seeded):
            if self.seed is not None:
                torch.manual_seed(self.seed * 1_000_003 + self._calls)
            self._calls += 1
            out = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                generation_config=gen_config,
                stopping_criteria=StoppingCriteriaList([stop]),
            )
        if stop.cancelled:
            raise SearchCancelled("cancelled while generating steps")
        new_tokens = out[:, width:].tolist()
        log.debug("%s: %d rows, prompt width %d, %d new columns", self.name, len(prompts), width, len(new_tokens[0]))
        return [
            self._parse_row(row_tokens, stop.stopped_at[row], token_caps[row], used[row])
            for row, row_tokens in enumerate(new_tokens)
        ]

    def _parse_row(self, row_tokens: list[int], stopped_at: int | None, token_cap: int, used: int) -> StepOutput:
        tokens = row_tokens[: stopped_at if stopped_at is not None else len(row_tokens)]
        ended_by_eos = False
        for j, tok in enumerate(tokens):
            if tok in self.eos_ids:
                tokens, ended_by_eos = tokens[: j + 1], True
                break
        text, has_delim, cut = step_text(self.tokenizer.decode(tokens, skip_special_tokens=True))
        ended_by_eos = ended_by_eos and not cut
        if has_delim:
            # Count only the tokens up to the one that completed "\n\n"; anything after it was generated but
            # is dropped (a token such as ".\n\nThe" makes the text shorter than the tokens' decode).
            while len(tokens) > 1 and STEP_DELIMITER in self.tokenizer.decode(tokens[:-1], skip_special_tokens=True):
                tokens = tokens[:-1]
            ended_by_eos = False  # the step closed at the delimiter before any eos
        n = len(tokens)
        reason = classify_finish(
            ended_by_eos=ended_by_eos,
            has_delimiter=has_delim,
            num_tokens=n,
            step_cap=self.step_token_cap,
            solution_tokens_after=used + n,
            solution_cap=self.solution_token_cap,
        )
        return StepOutput(text=text, num_tokens=n, finish_reason=reason)
