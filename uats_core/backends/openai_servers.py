"""What each OpenAI-compatible server sends for one candidate step, read the same way: the text, what ended it
(the step delimiter, end of sequence, or the length limit) and the server's own token count when it gives one.

The servers differ exactly where a step's end is decided (read from each server's source; testkit/openai_server.py
cites the files and commits its doubles answer by):

- vLLM (`owned_by: "vllm"`): `/v1/completions` honours `include_stop_str_in_output`; a choice's `stop_reason` is
  the stop string that ended it (None at end of sequence); `return_token_ids` gives each candidate's `token_ids`.
- SGLang (`owned_by: "sglang"`): `/v1/completions` ignores `include_stop_str_in_output` and strips the stop
  string; a choice's `matched_stop` names it (the end-of-sequence token's id at EOS); builds without
  `return_token_ids` give no per-candidate count (the app counts then).
- llama.cpp (`owned_by: "llamacpp"`): `/v1/completions` strips the stop string and says only "stop", so a
  delimiter stop cannot be told from end of sequence there. Its own `/completion` says which: `stop_type`
  "word" with `stopping_word`, "eos" or "limit", and `tokens_predicted` per candidate; one candidate a request
  (each with its own seed: a shared seed would draw the same text for every candidate).
- any other server (`openai`): the OpenAI shape, read with every field above it may carry."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from uats_core.protocols import STEP_DELIMITER

log = logging.getLogger(__name__)

SERVER_KINDS = ("vllm", "sglang", "llamacpp", "openai")
_OWNED_BY = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp"}  # what each server's /v1/models says


@dataclass(frozen=True)
class Candidate:
    """One candidate as the server sent it: `ended` is "delimiter", "eos" or "length"; `tokens` the server's
    count (None: it gave none)."""

    text: str
    ended: str
    tokens: int | None


def server_kind(model_row: dict[str, Any]) -> str:
    """The server that answered, from what its /v1/models says of the served model (`owned_by`)."""
    return _OWNED_BY.get(str(model_row.get("owned_by") or ""), "openai")


def completion_body(
    kind: str,
    *,
    prompt: list[int],
    n: int,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    model: str,
) -> dict[str, Any]:
    """The request for `n` candidates of one prompt, in the server's own words."""
    if kind == "llamacpp":  # its /completion: n_predict, one candidate (see the module's docstring)
        body: dict[str, Any] = {
            "prompt": prompt,
            "n_predict": max_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "stop": [STEP_DELIMITER],
            "cache_prompt": True,
        }
    else:
        body = {
            "model": model,
            "prompt": prompt,
            "n": n,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "stop": [STEP_DELIMITER],
            # vLLM's own fields (SGLang ignores the first and reports matched_stop instead)
            "include_stop_str_in_output": True,
            "return_token_ids": True,
        }
    if seed is not None:
        body["seed"] = seed
    return body


def read_candidates(kind: str, answer: Any, n: int) -> list[Candidate] | None:
    """The answer's candidates in order, or None when it does not hold `n` of them."""
    if kind == "llamacpp":
        return [_llamacpp(answer)] if isinstance(answer, dict) and "content" in answer and n == 1 else None
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or len(choices) != n or not all(isinstance(c, dict) for c in choices):
        return None
    usage = (answer.get("usage") or {}).get("completion_tokens") if isinstance(answer.get("usage"), dict) else None
    ordered = sorted(choices, key=lambda c: int(c.get("index") or 0))
    return [_openai(c, usage if n == 1 else None) for c in ordered]


def _openai(choice: dict[str, Any], usage_tokens: Any) -> Candidate:
    text = str(choice.get("text") or "")
    finish = choice.get("finish_reason")
    if finish == "length":
        ended = "length"
    elif finish == "stop":
        # which stop ended it, in each server's words: vLLM's stop_reason, SGLang's matched_stop
        said = choice.get("stop_reason", choice.get("matched_stop"))
        ended = "delimiter" if said == STEP_DELIMITER or STEP_DELIMITER in text else "eos"
    else:
        log.warning("finish_reason %r (aborted?): the step is read as cut", finish)
        ended = "length"
    return Candidate(text, ended, _count(choice, usage_tokens))


def _count(choice: dict[str, Any], usage_tokens: Any) -> int | None:
    if isinstance(choice.get("token_ids"), list):
        return len(choice["token_ids"])
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict) and isinstance(logprobs.get("tokens"), list):
        return len(logprobs["tokens"])
    return usage_tokens if isinstance(usage_tokens, int) and not isinstance(usage_tokens, bool) else None


def _llamacpp(result: dict[str, Any]) -> Candidate:
    stop_type = result.get("stop_type")
    if stop_type == "word":
        ended = "delimiter" if result.get("stopping_word") == STEP_DELIMITER else "eos"
    elif stop_type == "eos":
        ended = "eos"
    else:  # "limit", or "none" (stopped for another reason): a cut step
        ended = "length"
    count = result.get("tokens_predicted")
    return Candidate(
        str(result.get("content") or ""),
        ended,
        count if isinstance(count, int) and not isinstance(count, bool) else None,
    )
