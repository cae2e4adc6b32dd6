"""A policy behind an OpenAI-compatible server (`vllm serve`, SGLang, llama.cpp's server): `openai:URL`.

Steps come from the server's completions endpoint with the step delimiter as `stop` and `n` candidates per
request where the server draws them (the children of one node share a prompt, so they share a request); which
server answered is read from its /v1/models (openai_servers: vLLM, SGLang and llama.cpp each mark a step's end
their own way). Prompts are token ids built by the same `prompting.prompt_ids` as the in-process policies, from
a local copy of the served model's tokenizer, so the server continues exactly the text an in-process vLLM policy
would. A step is bounded where it enters (protocols.MAX_STEP_CHARS) and counted by this process's tokenizer:
the caps never rest on the server's own count, which is kept when it is larger (the cost a node stores).

The PRM stays local: serving engines strip dropout, which MC dropout needs at inference. Requests use only the
standard library (http_client: connect and read timeouts, a cancel honoured within a poll, no redirect
followed, the URL's credentials sent as a header and shown nowhere). A server that is down, a wrong model name or
a refused request is one line naming the server (by its name in the app) and the fix, after `retries` tries for
errors that may pass (no connection, 408, 429, 5xx); the server's own words are never relayed (they may hold
its secrets), only its status and error type."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from uats_core import http_client
from uats_core.backends._loading import load_tokenizer, normalise_url, resolve_spec
from uats_core.backends.openai_servers import SERVER_KINDS, Candidate, completion_body, read_candidates, server_kind
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
    trim_at_delimiter,
)
from uats_core.backends.vllm_policy import request_seed
from uats_core.cancel import SearchCancelled, cancel_pending, current_check
from uats_core.errors import BackendError
from uats_core.protocols import STEP_DELIMITER, FinishReason, StepOutput, Trace

log = logging.getLogger(__name__)

PREFIX = http_client.PREFIX
API_KEY_ENV = "OPENAI_API_KEY"  # sent as a bearer token when set (vllm serve --api-key ...)
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
_ERROR_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")  # an error type is relayed only when it is a plain word


def _error_type(body: bytes) -> str:
    """The server's error type (`{"error": {"type": ...}}`, `{"type": ...}` or its `code`) when it is a plain
    identifier; never its message, which may hold anything the server knows (a database URL, a password)."""
    try:
        data = json.loads(body[:65536].decode("utf-8", "replace"))
    except (json.JSONDecodeError, ValueError):
        return ""
    err = data.get("error", data) if isinstance(data, dict) else None
    for key in ("type", "code"):
        value = err.get(key) if isinstance(err, dict) else None
        if isinstance(value, str) and _ERROR_TYPE.fullmatch(value):
            return f", {value}"
    return ""


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
            raise BackendError(
                "policy-opt",
                f"tokenizer: {spec!r} names no local tokenizer; give tokenizer=<model folder, "
                ".gguf file or hf:<id>> of the served model",
            ) from None
        src = resolve_spec(f"hf:{spec}", "policy-opt")
    return load_tokenizer(src, "policy-opt")


class OpenAIPolicy:
    """Policy over an OpenAI-compatible server (see the module's docstring)."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        tokenizer: str | None = None,
        temperature: float = TEMPERATURE,
        top_p: float = TOP_P,
        step_token_cap: int = STEP_TOKEN_CAP,
        solution_token_cap: int = SOLUTION_TOKEN_CAP,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        use_chat_template: bool | None = None,
        seed: int | None = None,
        connect_timeout_s: float = 5.0,
        timeout_s: float = 60.0,
        retries: int = 3,
        max_n: int = 64,
        concurrency: int = 8,
        server: str | None = None,
        name: str | None = None,
        tokenizer_object: Any = None,
    ) -> None:
        """model: the served model's name (default: the only one the server lists); tokenizer: where its tokenizer
        is read locally (default: the model's name); server: vllm, sglang, llamacpp or openai (default: what the
        server says it is); name: how runs and errors name the server (the app's --policy-server NAME; default:
        its URL without credentials). tokenizer_object: what tests pass instead of `tokenizer`."""
        check_sampling(temperature, top_p, step_token_cap, solution_token_cap)
        if not (connect_timeout_s > 0 and timeout_s > 0) or retries < 1 or max_n < 1 or concurrency < 1:
            raise BackendError(
                "policy-opt",
                "need connect_timeout_s, timeout_s > 0 and retries, max_n, concurrency "
                f">= 1; got {connect_timeout_s}, {timeout_s}, {retries}, {max_n}, {concurrency}",
            )
        if server is not None and server not in SERVER_KINDS:
            raise BackendError("policy-opt", f"server: {server!r} is none of {', '.join(SERVER_KINDS)}")
        self._ep = http_client.endpoint(normalise_url(base_url))  # its headers hold the URL's credentials
        self.base_url = self._ep.display  # the URL without them: all that is ever shown
        self.where = f"the server {name}" if name else f"the server at {self._ep.display}"
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.step_token_cap, self.solution_token_cap = step_token_cap, solution_token_cap
        self.system_prompt = system_prompt
        self.connect_timeout_s, self.timeout_s = float(connect_timeout_s), float(timeout_s)
        self.retries, self.max_n, self.concurrency = int(retries), int(max_n), int(concurrency)
        self._headers = {"Content-Type": "application/json"}
        if os.environ.get(API_KEY_ENV):
            self._headers["Authorization"] = f"Bearer {os.environ[API_KEY_ENV]}"
        self._calls = 0
        self._lock = threading.Lock()  # one batch at a time: the per-call seed counter is shared state
        served = self._served_models()
        self.model = self._pick_model(model, served)
        self.server = server or server_kind(served[self.model])
        self.name = name or f"{PREFIX}{self._ep.display} ({self.model})"
        window = served[self.model].get("max_model_len")
        if isinstance(window, int) and window > 0:
            self.max_context = window  # uats_core.limits.context_window reads it
        self.tokenizer = tokenizer_object if tokenizer_object is not None else tokenizer_for(tokenizer or self.model)
        self.use_chat = resolve_use_chat(self.tokenizer, use_chat_template, self.name)
        log.info("%s: %s serves %s", self.name, self.server, self.model)

    # -- the server ------------------------------------------------------------------------------------
    def _request(
        self, method: str, path: str, payload: dict[str, Any] | None, cancelled: Callable[[], bool] = cancel_pending
    ) -> Any:
        """One call with retries for what may pass; the decoded JSON answer. BackendError naming the fix;
        SearchCancelled as soon as `cancelled()` says yes (between tries and during one)."""
        body = None if payload is None else json.dumps(payload).encode()
        ep = self._ep
        if path == "completion":  # llama.cpp's own endpoint sits beside /v1, not under it
            ep = dataclasses.replace(ep, path=ep.path.removesuffix("/v1"))
        reason = ""
        for attempt in range(self.retries):
            if attempt:
                self._back_off(attempt, cancelled)
            try:
                status, data = http_client.call(
                    ep,
                    method,
                    path,
                    body,
                    self._headers,
                    connect_timeout_s=self.connect_timeout_s,
                    read_timeout_s=self.timeout_s,
                    cancelled=cancelled,
                )
            except http_client.Cancelled:
                raise SearchCancelled(f"cancelled while waiting for {self.where}") from None
            except http_client.ReadTimeout as exc:  # it accepted and did not answer: asking again waits again
                raise BackendError(
                    "policy",
                    f"{self.where} did not answer {path} ({exc}); check that it is not "
                    "stuck, or raise --policy-opt timeout_s",
                ) from None
            except OSError as exc:  # refused, unreachable, no connection in time: no answer
                reason = str(getattr(exc, "reason", None) or exc.strerror or exc) or type(exc).__name__
                log.warning(
                    "%s %s at %s: no answer (%s), try %d of %d",
                    method,
                    path,
                    self.where,
                    reason,
                    attempt + 1,
                    self.retries,
                )
                continue
            if status in _RETRY_STATUS:
                reason = f"HTTP {status}{_error_type(data)}"
                log.warning(
                    "%s %s at %s: %s, try %d of %d", method, path, self.where, reason, attempt + 1, self.retries
                )
                continue
            if status != 200:
                raise BackendError(
                    "policy", f"{self.where} refused {path} (HTTP {status}{_error_type(data)}); {self._fix_for(status)}"
                )
            try:
                return json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise BackendError(
                    "policy",
                    f"{self.where} answered {path} with no JSON; is it an OpenAI-compatible "
                    "server (vllm serve, SGLang, llama.cpp)?",
                ) from None
        raise BackendError(
            "policy",
            f"{self.where} did not answer {path} after {self.retries} tries ({reason}); "
            "start it (e.g. vllm serve MODEL --port PORT) or fix the URL",
        )

    def _back_off(self, attempt: int, cancelled: Callable[[], bool]) -> None:
        """Wait 0.5, 1, 2 ... s before a retry, looking at the cancel check all along."""
        until = time.monotonic() + min(0.5 * 2 ** (attempt - 1), 8.0)
        while (left := until - time.monotonic()) > 0:
            if cancelled():
                raise SearchCancelled(f"cancelled while waiting for {self.where}")
            time.sleep(min(left, http_client.WAIT_SLICE_S))

    @staticmethod
    def _fix_for(status: int) -> str:
        if 300 <= status < 400:
            return (
                "a redirect is not followed (credentials go only where the operator pointed); give the server's "
                "own address"
            )
        if status in (401, 403):
            return f"give the server's credentials (the URL's user:password@, or {API_KEY_ENV} for a bearer key)"
        if status == 404:
            return "check the model name (--policy-opt model=NAME, as GET /v1/models lists it) and the URL"
        return "check the policy options against what the server accepts"

    def _served_models(self) -> dict[str, dict[str, Any]]:
        data = self._request("GET", "models", None)
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise BackendError(
                "policy", f"{self.where} lists no models under /v1/models; is it an OpenAI-compatible server?"
            )
        return {str(r["id"]): r for r in rows if isinstance(r, dict) and "id" in r}

    def _pick_model(self, model: str | None, served: dict[str, dict[str, Any]]) -> str:
        names = ", ".join(sorted(served)) or "none"
        if model is None:
            if len(served) == 1:
                return next(iter(served))
            raise BackendError(
                "policy-opt", f"model: {self.where} serves {names}; choose one with --policy-opt model=NAME"
            )
        if model not in served:
            raise BackendError(
                "policy-opt",
                f"model: {self.where} serves no model {model!r} (it serves {names}); "
                "set --policy-opt model= to one of them",
            )
        return model

    # -- prompts and steps -----------------------------------------------------------------------------
    def prompt_ids(self, trace: Trace) -> list[int]:
        return prompt_ids(self.tokenizer, trace, use_chat=self.use_chat, system_prompt=self.system_prompt)

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        if not traces:
            return []
        used, token_caps = row_token_caps(self.tokenizer, traces, self.step_token_cap, self.solution_token_cap)
        results: dict[int, StepOutput] = {
            i: StepOutput("", 0, FinishReason.SOLUTION_CAP) for i, b in enumerate(token_caps) if b <= 0
        }
        groups: dict[Trace, list[int]] = {}  # one prompt, its rows: the n candidates of one request
        for i, trace in enumerate(traces):
            if i not in results:
                groups.setdefault(trace, []).append(i)
        per = 1 if self.server == "llamacpp" else self.max_n
        requests = [rows[j : j + per] for rows in groups.values() for j in range(0, len(rows), per)]
        if requests:
            cancelled = current_check()  # the search thread's check, polled from the request threads
            with self._lock:
                call = self._calls
                self._calls += 1
                bodies = [
                    self._body(traces[rows[0]], len(rows), token_caps[rows[0]], call, r)
                    for r, rows in enumerate(requests)
                ]
                with ThreadPoolExecutor(min(self.concurrency, len(bodies))) as pool:
                    answers = list(pool.map(lambda b: self._complete(b, cancelled), bodies))
            for rows, answer in zip(requests, answers):
                for i, cand in zip(rows, self._candidates(answer, len(rows))):
                    results[i] = self._step(cand, used[i], token_caps[i])
        return [results[i] for i in range(len(traces))]

    def _body(self, trace: Trace, n: int, max_tokens: int, call: int, row: int) -> dict[str, Any]:
        seed = None if self.seed is None else request_seed(self.seed, call, row)
        return completion_body(
            self.server,
            prompt=self.prompt_ids(trace),
            n=n,
            max_tokens=max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            seed=seed,
            model=self.model,
        )

    def _complete(self, body: dict[str, Any], cancelled: Callable[[], bool]) -> Any:
        if cancelled():  # a cancelled search sends nothing more
            raise SearchCancelled("cancelled while generating steps")
        return self._request("POST", "completion" if self.server == "llamacpp" else "completions", body, cancelled)

    def _candidates(self, answer: Any, n: int) -> list[Candidate]:
        cands = read_candidates(self.server, answer, n)
        if cands is None:
            raise BackendError(
                "policy",
                f"{self.where} did not return {n} candidates for n={n}; it may not support "
                "n > 1: set --policy-opt max_n=1",
            )
        return cands

    def _step(self, cand: Candidate, used: int, token_cap: int) -> StepOutput:
        """A candidate as a step: bounded, cut after the first delimiter (put back where the server left it out),
        and held to the caps by this process's own count of its tokens."""
        text, has_delim, cut = step_text(cand.text)
        if cand.ended == "delimiter" and not has_delim and not cut:  # the server left the stop string out
            text, has_delim = text + STEP_DELIMITER, True
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) > token_cap:  # more than was asked for, whatever the server counted: cut at the cap
            text, has_delim = trim_at_delimiter(self.tokenizer.decode(ids[:token_cap]))
            ids, cut = self.tokenizer(text, add_special_tokens=False)["input_ids"], not has_delim
        # the server's count when larger (its tokens, the cost a node stores), never past the cap
        n = token_cap if cut else min(token_cap, max(len(ids), cand.tokens or 0))
        reason = classify_finish(
            ended_by_eos=cand.ended == "eos" and not has_delim and not cut,
            has_delimiter=has_delim,
            num_tokens=n,
            step_cap=self.step_token_cap,
            solution_tokens_after=used + n,
            solution_cap=self.solution_token_cap,
        )
        return StepOutput(text=text, num_tokens=n, finish_reason=reason)

    def close(self) -> None:
        """Nothing to release: each batch's threads end with it (the server is not ours to stop)."""
