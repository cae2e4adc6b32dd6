"""Policy prompts shared by the transformers and vLLM policies, so both see the same token ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uats_core.errors import BackendError
from uats_core.protocols import STEP_DELIMITER, FinishReason, Trace, bound_step

# A policy's sampling defaults, for every backend (hf, vllm, openai-compatible servers) and the CLIs that cap steps
TEMPERATURE = 0.8
TOP_P = 1.0
STEP_TOKEN_CAP = 256  # tokens one step may have
SOLUTION_TOKEN_CAP = 2048  # tokens a whole solution may have
DEFAULT_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


def has_chat_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def resolve_use_chat(tokenizer: Any, use_chat_template: bool | None, name: str) -> bool:
    """None: use the chat template when the tokenizer has one."""
    if use_chat_template is None:
        return has_chat_template(tokenizer)
    if use_chat_template and not has_chat_template(tokenizer):
        raise BackendError("policy", f"{name}: use_chat_template=True but the tokenizer has no chat template")
    return bool(use_chat_template)


def chat_prefix(tokenizer: Any, question: str, system_prompt: str | None) -> str:
    """The chat up to the assistant turn's start: steps are appended after it as raw assistant text."""
    messages = [{"role": "user", "content": question}]
    if system_prompt:
        messages.insert(0, {"role": "system", "content": system_prompt})
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - some templates reject a system turn (e.g. Gemma's); fold it into the user turn
        if not system_prompt:
            raise
        merged = [{"role": "user", "content": f"{system_prompt}\n\n{question}"}]
        return tokenizer.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)


def prompt_ids(tokenizer: Any, trace: Trace, *, use_chat: bool, system_prompt: str | None) -> list[int]:
    """Token ids the policy continues from.

    Chat models: the templated system+user turns with the assistant turn opened, then the steps so far as
    raw assistant text. Plain LMs (the arithmetic world's): [bos] + encode(question + "\\n\\n" + steps).
    """
    if use_chat:
        text = chat_prefix(tokenizer, trace.question, system_prompt) + trace.text
        # The template text already holds its special tokens; do not let the tokenizer add a second bos.
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    ids = list(tokenizer(trace.question + STEP_DELIMITER + trace.text, add_special_tokens=False)["input_ids"])
    bos = tokenizer.bos_token_id
    return ([bos] if bos is not None else []) + ids


def classify_finish(
    *,
    ended_by_eos: bool,
    has_delimiter: bool,
    num_tokens: int,
    step_cap: int,
    solution_tokens_after: int,
    solution_cap: int,
) -> FinishReason:
    """One honest reason per step. EOS first (the model chose to end); then the solution cap (no room left to
    continue, even if this step closed cleanly); then the delimiter; else the per-step cap cut the step."""
    if ended_by_eos:
        return FinishReason.EOS
    if solution_tokens_after >= solution_cap:
        return FinishReason.SOLUTION_CAP
    if has_delimiter:
        return FinishReason.DELIMITER
    if num_tokens >= step_cap:
        return FinishReason.STEP_CAP
    # Generation stopped for none of the above (cannot happen with our stopping rules); a cut step is the
    # conservative reading: the search may continue the solution.
    return FinishReason.STEP_CAP


def trim_at_delimiter(text: str) -> tuple[str, bool]:
    """Keep the text up to and including the first "\\n\\n"."""
    idx = text.find(STEP_DELIMITER)
    if idx < 0:
        return text, False
    return text[: idx + len(STEP_DELIMITER)], True


def step_text(raw: str) -> tuple[str, bool, bool]:
    """What every policy makes of the text it generated: (the step, bounded by protocols.MAX_STEP_CHARS and cut
    after the first delimiter; whether it has the delimiter; whether the bound cut it, so it cannot have ended at
    end of sequence)."""
    text, cut = bound_step(raw)
    text, has_delim = trim_at_delimiter(text)
    return text, has_delim, cut and not has_delim


def solution_token_count(tokenizer: Any, steps: Sequence[str]) -> int:
    if not steps:
        return 0
    return len(tokenizer("".join(steps), add_special_tokens=False)["input_ids"])


def check_sampling(temperature: float, top_p: float, step_token_cap: int, solution_token_cap: int) -> None:
    if temperature < 0 or not 0 < top_p <= 1:
        raise BackendError("policy", f"need temperature >= 0 and 0 < top_p <= 1; got {temperature}, {top_p}")
    if step_token_cap < 1 or solution_token_cap < 1:
        raise BackendError(
            "policy", f"token caps must be >= 1; got step {step_token_cap}, solution {solution_token_cap}"
        )


def row_token_caps(
    tokenizer: Any, traces: Sequence[Trace], step_token_cap: int, solution_token_cap: int
) -> tuple[list[int], list[int]]:
    """Per trace: tokens its steps already use, and how many the next step may have (<= 0: none left)."""
    used = [solution_token_count(tokenizer, t.steps) for t in traces]
    return used, [min(step_token_cap, solution_token_cap - u) for u in used]
