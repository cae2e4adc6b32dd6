"""OpenAICompletionsServerDouble: a small in-process OpenAI-compatible server (a test double, never used outside
tests) for the `openai:URL` policy. It speaks the part of the protocol the policy uses, shaped like `vllm serve`'s
answers: GET /v1/models (with max_model_len) and POST /v1/completions with token-id prompts, `n` choices,
`stop`, `include_stop_str_in_output`, `return_token_ids`, `seed`; choices carry text, finish_reason, stop_reason
and token_ids. What it writes is scripted from the prompt, the seed and the choice: arithmetic-looking steps
ending at the delimiter, and after `depth` steps a boxed answer ended by end-of-sequence. Each candidate's token
count is the number of its characters plus one (deliberately not what a tokenizer would count), so a test can
tell the server's count from a local one. Faults on request: the first `fail_first` completions answer 503,
`delay_s` holds every completion, `strip_stop` leaves the stop string out of the text (as servers do by default),
`token_ids=False` gives no per-choice count."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from uats_core.protocols import STEP_DELIMITER


def _unit(*parts: object) -> float:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big") / 2**64


class OpenAICompletionsServerDouble:
    def __init__(self, decode: Any, model: str = "double-model", *, depth: int = 3, max_model_len: int = 4096,
                 fail_first: int = 0, delay_s: float = 0.0, strip_stop: bool = False, token_ids: bool = True) -> None:
        """decode: token ids -> text (the served model's tokenizer), to tell how many steps a prompt holds: the
        delimiters after the first (a plain LM's prompt is question + delimiter + steps)."""
        self.decode, self.model, self.depth, self.max_model_len = decode, model, depth, max_model_len
        self.fail_first, self.delay_s, self.strip_stop, self.token_ids = fail_first, delay_s, strip_stop, token_ids
        self.requests: list[dict[str, Any]] = []  # every completion body received, in order
        self._lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": double.model, "object": "model",
                                                                 "max_model_len": double.max_model_len}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/") != "/v1/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, payload = double.complete(body)
                self._send(status, payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "OpenAICompletionsServerDouble":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            if self.fail_first > 0:
                self.fail_first -= 1
                return 503, {"error": {"message": "the engine is busy"}}
        if self.delay_s:
            time.sleep(self.delay_s)
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
        prompt = body["prompt"]
        choices = [self._choice(prompt, body, j) for j in range(int(body.get("n", 1)))]
        used = sum(len(c.get("token_ids") or []) or len(c["text"]) + 1 for c in choices)
        return 200, {"object": "text_completion", "model": self.model, "choices": choices,
                     "usage": {"prompt_tokens": len(prompt), "completion_tokens": used}}

    def _choice(self, prompt: list[int], body: dict[str, Any], j: int) -> dict[str, Any]:
        """Arithmetic steps ended at the delimiter, then (after `depth` steps) a boxed answer ended by end-of-sequence."""
        draw = _unit(tuple(prompt), body.get("seed"), j)
        if self.decode(prompt).count(STEP_DELIMITER) - 1 >= self.depth:
            text, reason, stop = f"so x = \\boxed{{{7 + int(draw * 3)}}}", "stop", None
        else:
            a, b = 1 + int(draw * 8), 1 + int(_unit(draw) * 8)
            text, reason, stop = f"{a} + {b} = {a + b}{STEP_DELIMITER}", "stop", STEP_DELIMITER
        cap = int(body.get("max_tokens") or 16)
        if len(text) + 1 > cap:  # the cap cuts the step: the length limit, no stop string
            text, reason, stop = text[:cap - 1], "length", None
        if stop is not None and (self.strip_stop or not body.get("include_stop_str_in_output")):
            text = text[: -len(STEP_DELIMITER)]
        out: dict[str, Any] = {"index": j, "text": text, "finish_reason": reason, "stop_reason": stop}
        if self.token_ids and body.get("return_token_ids"):
            out["token_ids"] = list(range(len(text) + 1 if stop is None or not self.strip_stop else len(text) + 3))
        return out
