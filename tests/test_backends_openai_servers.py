"""The `openai:URL` policy against each server as its source answers (testkit/openai_server.py: vLLM, SGLang and
llama.cpp doubles, each citing the file and commit it follows), and against servers that misbehave: one that
hangs, one that redirects, one whose error holds a secret, one that returns megabytes for a two-token step."""

from __future__ import annotations

import logging
import threading

import pytest

from testkit.doubles import stored_nodes
from testkit.openai_server import OpenAICompletionsServerDouble
from uats.cli import main as cli
from uats_core.backends import load_policy
from uats_core.backends._loading import load_tokenizer, resolve_spec
from uats_core.cancel import SearchCancelled, cancellable
from uats_core.errors import BackendError
from uats_core.paths import WORLD_POLICY
from uats_core.protocols import MAX_STEP_CHARS, STEP_DELIMITER, FinishReason, Trace

SECRET = "s3cr3t-PASSWORD"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(resolve_spec(str(WORLD_POLICY), "policy"), "policy")


def _steps_end_as_in_process(nodes: list[dict], depth: int | None) -> None:
    """What the in-process policies' steps hold: a step that ends at the delimiter ends with exactly one and has
    no other; an end-of-sequence step has none; and (with a scripted `depth`) the delimiter steps are exactly
    the ones above the answer's depth, so no delimiter stop was read as a finished solution."""
    assert nodes
    for n in nodes:
        reason = FinishReason(n["finish_reason"])
        assert n["step"].count(STEP_DELIMITER) == (reason is FinishReason.DELIMITER), n
        assert n["step"].endswith(STEP_DELIMITER) == (reason is FinishReason.DELIMITER), n
        if depth is not None:
            assert (reason is FinishReason.DELIMITER) == (n["depth"] <= depth), n


@pytest.mark.parametrize("flavour", ["vllm", "sglang", "llamacpp"])
def test_a_search_through_each_server_ends_its_steps_at_the_delimiter(flavour, tmp_path, tokenizer, capsys):
    db = tmp_path / "runs.db"
    with OpenAICompletionsServerDouble(tokenizer.decode, flavour=flavour) as server:
        code = cli(
            [
                "search",
                "--policy",
                f"openai:{server.url}",
                "--policy-opt",
                f"tokenizer={WORLD_POLICY}",
                "--policy-opt",
                "seed=3",
                "--method",
                "h-uats",
                "--budget",
                "4",
                "--db",
                str(db),
                "--quiet",
            ]
        )
        requests = list(server.requests)
    assert code == 0, capsys.readouterr().err
    nodes = [n for n in stored_nodes(db) if n["depth"] > 0]
    _steps_end_as_in_process(nodes, server.depth)
    assert {FinishReason(n["finish_reason"]) for n in nodes} == {FinishReason.DELIMITER, FinishReason.EOS}
    if flavour == "llamacpp":  # its own /completion, one candidate a request, each with its own seed
        assert all("n_predict" in r and "n" not in r for r in requests)
        assert len({r["seed"] for r in requests}) == len(requests)
        assert all(n["num_tokens"] == len(n["step"]) + 1 for n in nodes)  # tokens_predicted
    else:
        assert max(r["n"] for r in requests) > 1
    if flavour == "vllm":
        assert all(n["num_tokens"] == len(n["step"]) + 1 for n in nodes)  # its token_ids


def test_the_in_process_policy_ends_its_steps_the_same_way(tmp_path, capsys):
    """The rule the servers' searches are held to, on the embedded world's in-process policy."""
    db = tmp_path / "runs.db"
    assert cli(["search", "--method", "h-uats", "--budget", "4", "--db", str(db), "--quiet"]) == 0, (
        capsys.readouterr().err
    )
    _steps_end_as_in_process([n for n in stored_nodes(db) if n["depth"] > 0], None)


def test_the_server_is_recognised_from_what_it_reports(tokenizer):
    for flavour in ("vllm", "sglang", "llamacpp"):
        with OpenAICompletionsServerDouble(tokenizer.decode, flavour=flavour) as server:
            policy = load_policy(f"openai:{server.url}", tokenizer=str(WORLD_POLICY))
            assert policy.server == flavour
            assert (getattr(policy, "max_context", None) == 4096) == (flavour != "llamacpp")


def _load_hung(tokenizer, **opts):
    """load_policy against a server that accepts and never answers, on a thread whose cancel check a test sets."""
    server = OpenAICompletionsServerDouble(tokenizer.decode, hang=True).__enter__()
    asked = threading.Event()
    outcome: dict[str, BaseException] = {}

    def load() -> None:
        with cancellable(asked.is_set, interval_s=0.05):
            try:
                load_policy(f"openai:{server.url}", tokenizer=str(WORLD_POLICY), **opts)
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                outcome["error"] = exc

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    return server, asked, outcome, thread


def test_a_hung_server_is_left_as_soon_as_the_search_is_cancelled(tokenizer):
    """Issue 50, item 1: the request is abandoned on cancel, during the try (main waited 3 x 120 s)."""
    server, asked, outcome, thread = _load_hung(tokenizer)
    try:
        assert server.hanging.wait(30)
        asked.set()
        thread.join(30)
        assert not thread.is_alive(), "the cancel did not end the hung request"
    finally:
        server.stop()
    assert isinstance(outcome.get("error"), SearchCancelled), outcome


def test_a_hung_server_ends_at_the_read_timeout_and_is_not_asked_again(tokenizer):
    server, asked, outcome, thread = _load_hung(tokenizer, timeout_s=0.5, retries=3)
    try:
        thread.join(30)
        assert not thread.is_alive()
    finally:
        server.stop()
    assert isinstance(outcome.get("error"), BackendError), outcome
    assert "no answer within the read timeout (0.5 s)" in str(outcome["error"])
    assert len(server.headers) == 1


def test_a_cancel_reaches_the_request_threads_of_a_batch(tokenizer):
    """generate_steps sends its requests from a thread pool: the search thread's cancel check reaches them."""
    with OpenAICompletionsServerDouble(tokenizer.decode) as server:
        policy = load_policy(f"openai:{server.url}", tokenizer=str(WORLD_POLICY))
        server._hang = True
        asked, outcome = threading.Event(), {}

        def step() -> None:
            with cancellable(asked.is_set, interval_s=0.05):
                try:
                    policy.generate_steps([Trace("What is 1 + 1?"), Trace("What is 2 + 2?")])
                except BaseException as exc:  # noqa: BLE001
                    outcome["error"] = exc

        thread = threading.Thread(target=step, daemon=True)
        thread.start()
        assert server.hanging.wait(30)
        asked.set()
        thread.join(30)
        assert not thread.is_alive()
    assert isinstance(outcome.get("error"), SearchCancelled), outcome


def test_credentials_in_the_url_are_sent_as_a_header_and_shown_nowhere(tokenizer, caplog):
    """Issue 50, item 2: user:password@ becomes HTTP Basic; the policy's name, its errors and the log hold
    neither the password nor the server's own error text."""
    leak = f"db=postgres://admin:{SECRET}@db.internal/prod"
    body = f'{{"error": {{"message": "{leak}", "type": "invalid_request_error"}}}}'.encode()
    with OpenAICompletionsServerDouble(tokenizer.decode, error_body=body) as server:
        url = server.url.replace("http://", f"http://svc:{SECRET}@")
        with caplog.at_level(logging.DEBUG):
            policy = load_policy(f"openai:{url}", tokenizer=str(WORLD_POLICY), retries=1)
            with pytest.raises(BackendError) as err:
                policy.generate_steps([Trace("What is 1 + 1?")])
        auth = server.headers[0].get("Authorization", "")
    import base64

    assert auth == "Basic " + base64.b64encode(f"svc:{SECRET}".encode()).decode()
    assert SECRET not in policy.name and SECRET not in policy.where
    assert "refused completions (HTTP 400, invalid_request_error)" in str(err.value)
    assert SECRET not in str(err.value) and "postgres" not in str(err.value)
    assert SECRET not in caplog.text and "postgres" not in caplog.text


def test_a_redirect_is_not_followed_and_credentials_go_nowhere_else(tokenizer, monkeypatch):
    """Issue 50, item 3: a 307 ends in one line; the address it names hears nothing (main followed it with the
    Authorization header)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with (
        OpenAICompletionsServerDouble(tokenizer.decode) as elsewhere,
        OpenAICompletionsServerDouble(tokenizer.decode, redirect_to=elsewhere.url) as server,
    ):
        with pytest.raises(BackendError, match=r"refused models \(HTTP 307\); a redirect is not followed"):
            load_policy(f"openai:{server.url}", tokenizer=str(WORLD_POLICY))
        assert elsewhere.headers == []
        assert server.headers[0]["Authorization"] == f"Bearer {SECRET}"


def test_megabyte_steps_with_a_two_token_count_are_cut_at_the_cap(tokenizer):
    """Issue 50, item 7: the step cap is counted here, not taken from the server (main stored 5 MB steps)."""
    with OpenAICompletionsServerDouble(tokenizer.decode, huge_step=5_000_000) as server:
        policy = load_policy(f"openai:{server.url}", tokenizer=str(WORLD_POLICY), step_token_cap=32)
        outs = policy.generate_steps([Trace("What is 1 + 1?")] * 3)
    for out in outs:
        assert out.finish_reason is FinishReason.STEP_CAP and out.num_tokens == 32
        assert len(tokenizer(out.text, add_special_tokens=False)["input_ids"]) <= 32
        assert len(out.text) <= MAX_STEP_CHARS
