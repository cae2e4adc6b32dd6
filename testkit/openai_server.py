"""OpenAICompletionsServerDouble: a small in-process server (a test double, never used outside tests) for the
`openai:URL` policy, answering as one of three real servers does, read from each server's source:

- `flavour="vllm"` (the default): vllm-project/vllm at d5dba2d7b0ab9b98096560c69db7126b54b14d79,
  vllm/entrypoints/openai/completion/protocol.py (CompletionRequest: `include_stop_str_in_output`,
  `return_token_ids`; CompletionResponseChoice: index, text, logprobs, finish_reason, stop_reason, token_ids) and
  vllm/entrypoints/openai/engine/protocol.py (ModelCard: `owned_by: "vllm"`, `max_model_len`). The stop string is
  in the text only when asked; `stop_reason` is the stop string that ended a choice, None at end of sequence.
- `flavour="sglang"`: sgl-project/sglang at 7190e6fe8cfd50b0747f968bbdacfcc29ed98a4c,
  python/sglang/srt/entrypoints/openai/serving_completions.py (`_build_sampling_params` passes no
  `include_stop_str_in_output`, so the stop string is always trimmed; `_build_completion_response`: each choice
  has index, text, logprobs, finish_reason and `matched_stop`, the matched stop string, or the end-of-sequence
  token's id at EOS; usage sums every choice; no per-choice token ids) and protocol.py (ModelCard: `owned_by:
  "sglang"`, `max_model_len`).
- `flavour="llamacpp"`: ggml-org/llama.cpp at 17f5f8a80d8ac9c18c23ecb2321640daeec77096,
  tools/server/server-task.cpp (`params_from_json_cmpl`: `n_predict` or `max_tokens`, `stop`, `seed`;
  `to_json_non_oaicompat`, what its own POST /completion answers: content without the stopping word, `stop_type`
  "eos" / "word" / "limit", `stopping_word`, `tokens_predicted`, `index`; `to_json_oaicompat`, what its
  /v1/completions answers: one choice with text, index, logprobs and finish_reason "stop" for a word and for EOS
  alike, "length" at the limit) and its /v1/models (`owned_by: "llamacpp"`, a `meta` block, no `max_model_len`).

What it writes is scripted from the prompt, the seed and the choice: arithmetic-looking steps ending at the
delimiter, and after `depth` steps a boxed answer ended by end-of-sequence. Each candidate's token count is the
number of its characters plus one (deliberately not what a tokenizer would count), so a test can tell the
server's count from a local one. Faults on request: the first `fail_first` completions answer 503; `delay_s`
holds every completion (stopping the double ends the hold, unanswered); `hang` accepts and never answers (until the
double stops); `error_body` answers every completion with HTTP `error_status` and that body; `redirect_to` answers
every request with a 307 there; `huge_step` makes every step that many characters with a count of two tokens;
`token_ids=False` leaves vLLM's per-choice ids out. Every request's headers are kept in `headers`. Leaving the
`with` block (stop) returns once every request's thread has ended."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from uats_core.protocols import STEP_DELIMITER

EOS_TOKEN_ID = 2  # what SGLang's matched_stop holds when the model's end-of-sequence token ended a choice


def _unit(*parts: object) -> float:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big") / 2**64


class OpenAICompletionsServerDouble:
    def __init__(
        self,
        decode: Any,
        model: str = "double-model",
        *,
        flavour: str = "vllm",
        depth: int = 3,
        max_model_len: int = 4096,
        fail_first: int = 0,
        delay_s: float = 0.0,
        hang: bool = False,
        error_status: int = 400,
        error_body: bytes | None = None,
        redirect_to: str | None = None,
        huge_step: int = 0,
        token_ids: bool = True,
    ) -> None:
        """decode: token ids -> text (the served model's tokenizer), to tell how many steps a prompt holds: the
        delimiters after the first (a plain LM's prompt is question + delimiter + steps)."""
        assert flavour in ("vllm", "sglang", "llamacpp"), flavour
        self.decode, self.model, self.flavour, self.depth = decode, model, flavour, depth
        self.max_model_len, self.fail_first, self.delay_s, self.token_ids = (
            max_model_len,
            fail_first,
            delay_s,
            token_ids,
        )
        self.error_status, self.error_body, self.redirect_to, self.huge_step = (
            error_status,
            error_body,
            redirect_to,
            huge_step,
        )
        self.requests: list[dict[str, Any]] = []  # every completion body received, in order
        self.headers: list[dict[str, str]] = []  # every request's headers, in order
        self.hanging = threading.Event()  # set once a hung request arrived
        self._hang, self._release = hang, threading.Event()
        self._lock = threading.Lock()
        self._count = 0
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
                body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def _early(self) -> bool:
                """Faults that answer before the route: a redirect, a hang."""
                with double._lock:
                    double.headers.append(dict(self.headers))
                if double.redirect_to is not None:
                    self._send(307, {}, {"Location": double.redirect_to + self.path})
                    return True
                if double._hang:
                    double.hanging.set()
                    double._release.wait()
                    return True
                return False

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self._early():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [double.model_card()]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self._early():
                    return
                route = self.path.rstrip("/")
                if route == "/v1/completions" or (route == "/completion" and double.flavour == "llamacpp"):
                    answer = double.complete(body, native=route == "/completion")
                    if answer is not None:
                        self._send(*answer)
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # stop() joins every request's thread (socketserver's block_on_close), so none outlives the double and writes
        # into a later test's captured stderr (a delayed answer to a client that gave up used to, 2 s on)
        self.server.daemon_threads = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OpenAICompletionsServerDouble:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def model_card(self) -> dict[str, Any]:
        if self.flavour == "llamacpp":
            return {
                "id": self.model,
                "object": "model",
                "created": 0,
                "owned_by": "llamacpp",
                "meta": {
                    "vocab_type": 2,
                    "n_vocab": 64,
                    "n_ctx_train": self.max_model_len,
                    "n_embd": 64,
                    "n_params": 1,
                    "size": 1,
                },
            }
        return {
            "id": self.model,
            "object": "model",
            "created": 0,
            "owned_by": self.flavour,
            "root": self.model,
            "max_model_len": self.max_model_len,
        }

    def complete(self, body: dict[str, Any], native: bool = False) -> tuple[int, Any] | None:
        with self._lock:
            self.requests.append(body)
            self._count += 1
            count = self._count
            if self.fail_first > 0:
                self.fail_first -= 1
                return 503, {"error": {"message": "the engine is busy", "type": "ServiceUnavailable"}}
        if self.error_body is not None:
            return self.error_status, self.error_body
        if self.delay_s and self._release.wait(self.delay_s):
            return None  # stopped while holding it: the client gave up long ago, nothing is written
        if not native and body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
        prompt = body["prompt"]
        if native:  # llama.cpp's /completion: one candidate (a result of its own per task)
            return 200, self._native(prompt, body, count)
        raw = [self._draw(prompt, body, j, count) for j in range(int(body.get("n", 1)))]
        choices = [self._choice(j, text, ended, body) for j, (text, ended) in enumerate(raw)]
        used = sum(self._tokens(text, ended) for text, ended in raw)
        return 200, {
            "object": "text_completion",
            "model": self.model,
            "choices": choices,
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": used},
        }

    def _draw(self, prompt: list[int], body: dict[str, Any], j: int, count: int) -> tuple[str, str]:
        """(the whole text the model wrote, stop string included; how it ended: "word", "eos" or "limit")."""
        seed = body.get("seed", f"unseeded-{count}")  # no seed: a fresh draw per request, as the servers do
        draw = _unit(tuple(prompt), seed, j)
        if self.huge_step:
            text, ended = "9" * self.huge_step + STEP_DELIMITER, "word"
        elif self.decode(prompt).count(STEP_DELIMITER) - 1 >= self.depth:
            text, ended = f"so x = \\boxed{{{7 + int(draw * 3)}}}", "eos"
        else:
            a, b = 1 + int(draw * 8), 1 + int(_unit(draw) * 8)
            text, ended = f"{a} + {b} = {a + b}{STEP_DELIMITER}", "word"
        cap = int(body.get("max_tokens") or body.get("n_predict") or 16)
        if not self.huge_step and len(text) + 1 > cap:  # the cap cuts the step: the length limit, no stop string
            text, ended = text[: cap - 1], "limit"
        return text, ended

    def _tokens(self, text: str, ended: str) -> int:
        return 2 if self.huge_step else len(text) + 1

    def _choice(self, j: int, text: str, ended: str, body: dict[str, Any]) -> dict[str, Any]:
        n_tokens = self._tokens(text, ended)
        finish = "length" if ended == "limit" else "stop"
        if ended == "word" and (self.flavour != "vllm" or not body.get("include_stop_str_in_output")):
            text = text[: -len(STEP_DELIMITER)]  # SGLang and llama.cpp always trim it, vLLM unless asked
        out: dict[str, Any] = {"index": j, "text": text, "logprobs": None, "finish_reason": finish}
        if self.flavour == "vllm":
            out["stop_reason"] = STEP_DELIMITER if ended == "word" else None
            if self.token_ids and body.get("return_token_ids"):
                out["token_ids"] = list(range(n_tokens))
        elif self.flavour == "sglang":
            out["matched_stop"] = STEP_DELIMITER if ended == "word" else EOS_TOKEN_ID if ended == "eos" else None
        return out

    def _native(self, prompt: list[int], body: dict[str, Any], count: int) -> dict[str, Any]:
        text, ended = self._draw(prompt, body, 0, count)
        n_tokens = self._tokens(text, ended)
        word = ended == "word"
        return {
            "index": 0,
            "content": text[: -len(STEP_DELIMITER)] if word else text,
            "tokens": [],
            "id_slot": 0,
            "stop": True,
            "model": self.model,
            "tokens_predicted": n_tokens,
            "tokens_evaluated": len(prompt),
            "generation_settings": {"n_predict": body.get("n_predict"), "seed": body.get("seed")},
            "prompt": "",
            "has_new_line": "\n" in text,
            "truncated": False,
            "stop_type": {"word": "word", "eos": "eos", "limit": "limit"}[ended],
            "stopping_word": STEP_DELIMITER if word else "",
            "tokens_cached": 0,
            "timings": {},
        }
