"""A policy behind an OpenAI-compatible server (`vllm serve`, SGLang, llama.cpp's server): `openai:URL`.

Steps come from `POST /v1/completions` with the step delimiter as `stop` and `n` candidates per request (the
children of one node share a prompt, so they share a request). Prompts are token ids built by the same
`prompting.prompt_ids` as the in-process policies, from a local copy of the served model's tokenizer, so the
server continues exactly the text an in-process vLLM policy would. Each step's `num_tokens` is the count the
server returns for that candidate (vLLM's `token_ids`, else `logprobs.tokens`, else the usage of a one-choice
request); budgets of the solution cap count the steps so far with the local tokenizer, as in-process.

The PRM stays local: serving engines strip dropout, which MC dropout needs at inference. Requests use only the
standard library (urllib); a server that is down, a wrong model name or a refused request is one line naming
the policy and the fix, after `retries` tries for errors that may pass (connection, timeout, 429, 5xx)."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from uats_core.backends._loading import load_tokenizer, normalise_url, resolve_spec
from uats_core.backends.prompting import (
    DEFAULT_SYSTEM_PROMPT,
    check_sampling,
    classify_finish,
    prompt_ids,
    resolve_use_chat,
    step_budgets,
    trim_at_delimiter,
)
from uats_core.backends.vllm_policy import request_seed
from uats_core.cancel import SearchCancelled, cancel_pending
from uats_core.errors import BackendError
from uats_core.protocols import STEP_DELIMITER, FinishReason, StepOutput, Trace

log = logging.getLogger(__name__)

PREFIX = "openai:"
API_KEY_ENV = "OPENAI_API_KEY"  # sent as a bearer token when set (vllm serve --api-key ...)
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
# A JSON body of more than this is no completion of ours: refused rather than read into memory.
_MAX_RESPONSE_BYTES = 64 * 2**20

# (method, url, body or None, timeout s, headers) -> (HTTP status, body bytes); urllib's by default, tests may pass
# their own. Raises OSError (URLError, timeouts) when no answer came.
Transport = Callable[[str, str, bytes | None, float, dict[str, str]], tuple[int, bytes]]


def _urllib_transport(method: str, url: str, body: bytes | None, timeout: float,
                      headers: dict[str, str]) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only (normalise_url)
            return resp.status, resp.read(_MAX_RESPONSE_BYTES)
    except urllib.error.HTTPError as exc:  # an answer, with an error status: the caller reads its message
        return exc.code, exc.read(_MAX_RESPONSE_BYTES)


def _error_message(body: bytes) -> str:
    """The server's own words from an error body ({"error": {"message": ...}} or {"message": ...} or text)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return " ".join(text.split())[:300] or "no message"
    err = data.get("error", data) if isinstance(data, dict) else data
    msg = err.get("message") if isinstance(err, dict) else err
    return " ".join(str(msg or data).split())[:300]


def tokenizer_for(spec: str) -> Any:
    """The local tokenizer of the served model: a folder, a .gguf file, hf:<id> or a short name (`smollm2`: the
    de-quantised copy vLLM serves). A hub id without `hf:` (the name vllm serve gives a hub model) is read as one."""
    from uats_core.backends.named import NAMED, smollm2_folder

    if spec in NAMED:
        return load_tokenizer(resolve_spec(str(smollm2_folder()), "policy-opt"), "policy-opt")
    try:
        src = resolve_spec(spec, "policy-opt")
    except BackendError:
        if spec.count("/") != 1 or spec.startswith((".", "/", "~")):
            raise BackendError("policy-opt", f"tokenizer: {spec!r} names no local tokenizer; give tokenizer=<model folder, "
                                             ".gguf file or hf:<id>> of the served model") from None
        src = resolve_spec(f"hf:{spec}", "policy-opt")
    return load_tokenizer(src, "policy-opt")


class OpenAIPolicy:
    """Policy over an OpenAI-compatible `/v1/completions` endpoint (see the module's docstring)."""

    def __init__(self, base_url: str, *, model: str | None = None, tokenizer: str | None = None,
                 temperature: float = 0.8, top_p: float = 1.0, step_token_cap: int = 256, solution_token_cap: int = 2048,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, use_chat_template: bool | None = None,
                 seed: int | None = None, timeout_s: float = 120.0, retries: int = 3, max_n: int = 64,
                 concurrency: int = 8, name: str | None = None, transport: Transport | None = None,
                 tokenizer_object: Any = None) -> None:
        """model: the served model's name (default: the only one the server lists); tokenizer: where its tokenizer
        is read locally (default: the model's name). transport / tokenizer_object: what tests pass instead."""
        check_sampling(temperature, top_p, step_token_cap, solution_token_cap)
        if not timeout_s > 0 or retries < 1 or max_n < 1 or concurrency < 1:
            raise BackendError("policy-opt", f"need timeout_s > 0 and retries, max_n, concurrency >= 1; got {timeout_s}, "
                                             f"{retries}, {max_n}, {concurrency}")
        self.base_url = normalise_url(base_url)
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.step_token_cap, self.solution_token_cap = step_token_cap, solution_token_cap
        self.system_prompt = system_prompt
        self.timeout_s, self.retries, self.max_n, self.concurrency = float(timeout_s), int(retries), int(max_n), int(concurrency)
        self._transport = transport or _urllib_transport
        self._headers = {"Content-Type": "application/json"}
        if os.environ.get(API_KEY_ENV):
            self._headers["Authorization"] = f"Bearer {os.environ[API_KEY_ENV]}"
        self._calls = 0
        self._lock = threading.Lock()  # one batch at a time: the per-call seed counter is shared state
        served = self._served_models()
        self.model = self._pick_model(model, served)
        self.name = name or f"{PREFIX}{self.base_url} ({self.model})"
        window = served[self.model].get("max_model_len")
        if isinstance(window, int) and window > 0:
            self.max_context = window  # uats_core.limits.context_window reads it
        self.tokenizer = tokenizer_object if tokenizer_object is not None else tokenizer_for(tokenizer or self.model)
        self.use_chat = resolve_use_chat(self.tokenizer, use_chat_template, self.name)

    # -- the server ------------------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: dict[str, Any] | None) -> Any:
        """One call with retries for what may pass; the decoded JSON answer. BackendError naming the fix."""
        url = f"{self.base_url}/{path}"
        body = None if payload is None else json.dumps(payload).encode()
        reason = ""
        for attempt in range(self.retries):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
            try:
                status, data = self._transport(method, url, body, self.timeout_s, self._headers)
            except OSError as exc:  # refused, unreachable, timed out: no answer
                reason = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
                log.warning("%s %s: no answer (%s), try %d of %d", method, url, reason, attempt + 1, self.retries)
                continue
            if status in _RETRY_STATUS:
                reason = f"HTTP {status}: {_error_message(data)}"
                log.warning("%s %s: %s, try %d of %d", method, url, reason, attempt + 1, self.retries)
                continue
            if status != 200:
                raise BackendError("policy", f"the server at {self.base_url} refused {path} (HTTP {status}: "
                                             f"{_error_message(data)}); {self._fix_for(status)}")
            try:
                return json.loads(data)
            except json.JSONDecodeError:
                raise BackendError("policy", f"the server at {self.base_url} answered {path} with no JSON; is it an "
                                             "OpenAI-compatible server (vllm serve, SGLang, llama.cpp)?") from None
        raise BackendError("policy", f"the server at {self.base_url} did not answer {path} after {self.retries} tries "
                                     f"({reason}); start it (e.g. vllm serve MODEL --port PORT) or fix the URL")

    @staticmethod
    def _fix_for(status: int) -> str:
        if status in (401, 403):
            return f"set {API_KEY_ENV} to the server's API key"
        if status == 404:
            return "check the model name (--policy-opt model=NAME, as GET /v1/models lists it) and the URL"
        return "check the policy options against what the server accepts"

    def _served_models(self) -> dict[str, dict[str, Any]]:
        data = self._request("GET", "models", None)
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise BackendError("policy", f"the server at {self.base_url} lists no models under /v1/models; is it an "
                                         "OpenAI-compatible server?")
        return {str(r["id"]): r for r in rows if isinstance(r, dict) and "id" in r}

    def _pick_model(self, model: str | None, served: dict[str, dict[str, Any]]) -> str:
        names = ", ".join(sorted(served)) or "none"
        if model is None:
            if len(served) == 1:
                return next(iter(served))
            raise BackendError("policy-opt", f"model: the server at {self.base_url} serves {names}; choose one with "
                                             "--policy-opt model=NAME")
        if model not in served:
            raise BackendError("policy-opt", f"model: the server at {self.base_url} serves no model {model!r} (it serves "
                                             f"{names}); set --policy-opt model= to one of them")
        return model

    # -- prompts and steps -----------------------------------------------------------------------------
    def prompt_ids(self, trace: Trace) -> list[int]:
        return prompt_ids(self.tokenizer, trace, use_chat=self.use_chat, system_prompt=self.system_prompt)

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        if not traces:
            return []
        used, budgets = step_budgets(self.tokenizer, traces, self.step_token_cap, self.solution_token_cap)
        results: dict[int, StepOutput] = {i: StepOutput("", 0, FinishReason.SOLUTION_CAP)
                                          for i, b in enumerate(budgets) if b <= 0}
        groups: dict[Trace, list[int]] = {}  # one prompt, its rows: the n candidates of one request
        for i, trace in enumerate(traces):
            if i not in results:
                groups.setdefault(trace, []).append(i)
        requests = [(rows[j:j + self.max_n]) for rows in groups.values() for j in range(0, len(rows), self.max_n)]
        if requests:
            with self._lock:
                call = self._calls
                self._calls += 1
                bodies = [self._body(traces[rows[0]], len(rows), budgets[rows[0]], call, r)
                          for r, rows in enumerate(requests)]
                with ThreadPoolExecutor(min(self.concurrency, len(bodies))) as pool:
                    answers = list(pool.map(self._complete, bodies))
            for rows, answer in zip(requests, answers):
                for i, out in zip(rows, self._parse_answer(answer, len(rows), used[rows[0]])):
                    results[i] = out
        return [results[i] for i in range(len(traces))]

    def _body(self, trace: Trace, n: int, max_tokens: int, call: int, row: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "prompt": self.prompt_ids(trace), "n": n, "max_tokens": max_tokens,
            "temperature": self.temperature, "top_p": self.top_p, "stop": [STEP_DELIMITER],
            # vLLM's and SGLang's own fields (others ignore them): keep the delimiter, give each candidate's tokens
            "include_stop_str_in_output": True, "return_token_ids": True}
        if self.seed is not None:
            body["seed"] = request_seed(self.seed, call, row)
        return body

    def _complete(self, body: dict[str, Any]) -> Any:
        if cancel_pending():  # a cancelled search sends nothing more
            raise SearchCancelled("cancelled while generating steps")
        return self._request("POST", "completions", body)

    def _parse_answer(self, answer: Any, n: int, used: int) -> list[StepOutput]:
        choices = answer.get("choices") if isinstance(answer, dict) else None
        if not isinstance(choices, list) or len(choices) != n:
            got = len(choices) if isinstance(choices, list) else "no"
            raise BackendError("policy", f"the server at {self.base_url} returned {got} choices for n={n}; it may not "
                                         "support n > 1: set --policy-opt max_n=1")
        choices = sorted(choices, key=lambda c: int(c.get("index", 0)))
        usage = (answer.get("usage") or {}).get("completion_tokens")
        return [self._parse_choice(c, used, usage if n == 1 else None) for c in choices]

    def _parse_choice(self, choice: dict[str, Any], used: int, usage_tokens: int | None) -> StepOutput:
        text, has_delim = trim_at_delimiter(str(choice.get("text") or ""))
        finished = choice.get("finish_reason") == "stop"
        # which stop ended it, in each server's words: vLLM stop_reason, SGLang matched_stop, llama.cpp stop_type
        stopped_at_delim = (choice.get("stop_reason") == STEP_DELIMITER or choice.get("matched_stop") == STEP_DELIMITER
                            or choice.get("stop_type") == "word")
        if finished and not has_delim and stopped_at_delim:  # the server left the stop string out of the text
            text, has_delim = text + STEP_DELIMITER, True
        if choice.get("finish_reason") not in ("stop", "length"):
            log.warning("%s: finish_reason %r (aborted?): treating the step as cut", self.name, choice.get("finish_reason"))
        n = self._choice_tokens(choice, usage_tokens)
        reason = classify_finish(ended_by_eos=finished and not has_delim, has_delimiter=has_delim, num_tokens=n,
                                 step_cap=self.step_token_cap, solution_tokens_after=used + n,
                                 solution_cap=self.solution_token_cap)
        return StepOutput(text=text, num_tokens=n, finish_reason=reason)

    def _choice_tokens(self, choice: dict[str, Any], usage_tokens: int | None) -> int:
        """The tokens the server generated for this candidate, as it counts them."""
        if isinstance(choice.get("token_ids"), list):
            return len(choice["token_ids"])
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("tokens"), list):
            return len(logprobs["tokens"])
        if isinstance(usage_tokens, int):
            return usage_tokens
        raise BackendError("policy", f"the server at {self.base_url} returns no token count per candidate; set "
                                     "--policy-opt max_n=1 (its usage then counts each step)")

    def close(self) -> None:
        """Nothing to release: each batch's threads end with it (the server is not ours to stop)."""
