"""The `openai:URL` policy against OpenAICompletionsServerDouble (testkit/openai_server.py), an in-process server that
answers like `vllm serve` (and, in tests/test_backends_openai_servers.py, like SGLang and llama.cpp);
tests/test_vllm_real.py runs it against a real `vllm serve` in the vLLM lane."""

from __future__ import annotations

import json
import threading

import pytest

from testkit.doubles import stored_nodes
from testkit.openai_server import OpenAICompletionsServerDouble
from testkit.serving import free_port
from uats.cli import main as cli
from uats_core.backends import load_policy, load_prm
from uats_core.backends._loading import load_tokenizer, resolve_spec
from uats_core.backends.prompting import prompt_ids, solution_token_count
from uats_core.errors import BackendError
from uats_core.paths import WORLD_POLICY
from uats_core.protocols import STEP_DELIMITER, FinishReason, Policy, Trace


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(resolve_spec(str(WORLD_POLICY), "policy"), "policy")


def _server(tokenizer, **kw) -> OpenAICompletionsServerDouble:
    return OpenAICompletionsServerDouble(tokenizer.decode, **kw)


def _policy(server, **opts) -> Policy:
    return load_policy(f"openai:{server.url}", tokenizer=str(WORLD_POLICY), **opts)


def test_an_h_uats_search_runs_through_the_server_with_its_token_counts(tmp_path, tokenizer, capsys):
    """`uats search --policy openai:URL`: the children of one node share a request (n), the delimiter is the stop
    string, prompts are the in-process policies' token ids, and each node's num_tokens is the server's count."""
    db = tmp_path / "runs.db"
    with _server(tokenizer) as server:
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
    assert "finished" in capsys.readouterr().out
    nodes = stored_nodes(db)
    assert len(nodes) >= 8
    assert max(r["n"] for r in requests) > 1  # siblings in one request
    assert all(r["stop"] == [STEP_DELIMITER] and r["model"] == "double-model" for r in requests)
    from uats_core.worlds.arith.world import get_problem

    question = get_problem("arith-test-0").question
    assert requests[0]["prompt"] == prompt_ids(tokenizer, Trace(question), use_chat=False, system_prompt=None)
    for n in nodes:
        reason = FinishReason(n["finish_reason"])
        assert n["step"].endswith(STEP_DELIMITER) == (reason is FinishReason.DELIMITER), n
        assert n["num_tokens"] == len(n["step"]) + 1  # the double's count, not the char tokenizer's len(step)
    assert {FinishReason(n["finish_reason"]) for n in nodes} == {FinishReason.DELIMITER, FinishReason.EOS}
    assert {len({r["seed"] for r in requests})} == {len(requests)}  # a seed per request


def test_a_stop_string_the_server_leaves_out_is_put_back(tokenizer):
    """SGLang trims the stop string whatever the request says and names it in matched_stop."""
    with _server(tokenizer, flavour="sglang") as server:
        policy = _policy(server)
        outs = policy.generate_steps([Trace("What is 1 + 1?")] * 3)
    assert policy.server == "sglang" and server.requests[0]["n"] == 3
    assert all(o.text.endswith(STEP_DELIMITER) and o.finish_reason is FinishReason.DELIMITER for o in outs)
    # no per-choice count from SGLang: this process's tokenizer counts (one token a character here)
    assert all(o.num_tokens == len(tokenizer(o.text, add_special_tokens=False)["input_ids"]) for o in outs)


def test_the_caps_and_the_solution_budget_reach_the_server(tokenizer):
    steps = ("1 + 2 = 3" + STEP_DELIMITER,) * 4
    cap = solution_token_count(tokenizer, steps)
    with _server(tokenizer) as server:
        policy = _policy(server, step_token_cap=5, solution_token_cap=cap)
        outs = policy.generate_steps([Trace("What is 1 + 1?")])
        full = policy.generate_steps([Trace("What is 1 + 1?", steps)])
        asked = [r["max_tokens"] for r in server.requests]
    assert asked == [5]  # the full trace sent nothing: no room left
    assert outs[0].finish_reason is FinishReason.STEP_CAP and outs[0].num_tokens == 5
    assert full == [full[0]] and full[0].finish_reason is FinishReason.SOLUTION_CAP and full[0].num_tokens == 0


def test_passing_faults_are_retried_and_lasting_ones_end_in_one_line(tokenizer):
    with _server(tokenizer, fail_first=2) as server:
        policy = _policy(server, retries=3)
        assert policy.generate_steps([Trace("What is 1 + 1?")])[0].text
    with _server(tokenizer, fail_first=5) as server:
        policy = _policy(server, retries=2)
        with pytest.raises(BackendError) as err:
            policy.generate_steps([Trace("What is 1 + 1?")])
    assert "did not answer completions after 2 tries (HTTP 503, ServiceUnavailable)" in str(err.value)
    assert "the engine is busy" not in str(err.value)  # the server's type is relayed, never its words
    assert "\n" not in str(err.value)


def test_a_slow_server_times_out_in_one_line_without_asking_again(tokenizer):
    with _server(tokenizer, delay_s=2.0) as server:
        policy = _policy(server, timeout_s=0.3, retries=3)
        with pytest.raises(
            BackendError,
            match=r"^policy: the server at .* did not answer completions \(no answer "
            r"within the read timeout \(0.3 s\)\); check that it is not stuck",
        ):
            policy.generate_steps([Trace("What is 1 + 1?")])
        assert len(server.requests) == 1  # a server that accepted and said nothing is not asked again
    # the held request's thread ended with the double: none writes into a later test's captured stderr
    assert not [t for t in threading.enumerate() if "process_request" in t.name]


def test_a_server_that_is_down_or_a_wrong_model_is_one_line_before_any_step(tokenizer):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(
        BackendError,
        match=r"^policy: the server at .*/v1 did not answer models after 1 tries \(.*\); "
        r"start it \(e\.g\. vllm serve MODEL --port PORT\) or fix the URL$",
    ):
        load_policy(f"openai:{url}", tokenizer=str(WORLD_POLICY), retries=1)
    with _server(tokenizer) as server:
        with pytest.raises(
            BackendError,
            match=r"^policy-opt: model: the server at .* serves no model 'gpt-9' \(it "
            r"serves double-model\); set --policy-opt model= to one of them$",
        ):
            _policy(server, model="gpt-9")
        assert _policy(server).model == "double-model"  # the only model served, by default
        assert server.requests == []


def test_a_server_without_per_candidate_counts_is_counted_here(tokenizer):
    """No token ids, no logprobs: n > 1 still works, each candidate counted by this process's tokenizer; with
    max_n=1 the usage of each one-choice request is the server's count."""
    with _server(tokenizer, token_ids=False) as server:
        outs = _policy(server).generate_steps([Trace("What is 1 + 1?")] * 2)
        assert [r["n"] for r in server.requests] == [2]
        assert all(o.num_tokens == len(tokenizer(o.text, add_special_tokens=False)["input_ids"]) for o in outs)
        outs = _policy(server, max_n=1).generate_steps([Trace("What is 1 + 1?")] * 2)
        assert [r["n"] for r in server.requests[-2:]] == [1, 1]
    assert all(o.num_tokens == len(o.text) + 1 for o in outs)  # the usage of each one-choice request


def test_bad_specs_and_options_are_refused_before_any_request(tmp_path, capsys):
    for argv, line in (
        (
            ["--policy", "openai:localhost:8000"],
            "error: policy: 'localhost:8000' is not a server URL; write openai:http://HOST:PORT",
        ),
        (
            ["--policy", "openai:http://127.0.0.1:9", "--policy-opt", "dtype=bf16"],
            "error: policy-opt: dtype: the server places and runs the model",
        ),
        (
            ["--policy", "openai:http://127.0.0.1:9", "--policy-opt", "max_n=0"],
            "error: policy-opt: need connect_timeout_s, timeout_s > 0 and retries, max_n, concurrency >= 1",
        ),
    ):
        assert cli(["search", *argv, "--db", str(tmp_path / "x.db"), "--quiet"]) == 2
        assert capsys.readouterr().err.startswith(line)
    assert not (tmp_path / "x.db").exists()
    with pytest.raises(BackendError, match="^prm: 'openai:http://h:1': a PRM runs in this process because MC dropout"):
        load_prm("openai:http://h:1")


def test_the_same_seed_replays_the_same_steps(tokenizer):
    with _server(tokenizer) as server:
        a = _policy(server, seed=5).generate_steps([Trace("What is 2 + 2?")] * 4)
        b = _policy(server, seed=5).generate_steps([Trace("What is 2 + 2?")] * 4)
        bodies = [json.dumps(r, sort_keys=True) for r in server.requests]
    assert a == b and bodies[0] == bodies[1]
