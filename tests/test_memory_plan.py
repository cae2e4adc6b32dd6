"""The first real run, planned before any weight loads: the GPU memory plan, `doctor`, one load for a policy that is
also the judge PRM, and refusals that come before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, Qwen2Config

from uats.cli import main
from uats_core.backends.memory import GIB, PUBLISHED_SHAPES, count_params, plan_gpu, prm_memory
from uats_core.backends.plan import load_models, plan_models
from uats_core.backends.prm_published import Qwen2ProcessRewardModel
from uats_core.backends.tiny import QWEN_CHAT_TEMPLATE, char_tokenizer, save_causal_lm
from uats_core.doctor import run_doctor
from uats_core.errors import BackendError
from uats_core.problems import SHIPPED_DATASETS

MATH500 = SHIPPED_DATASETS["math500"]
QWEN_PRM_7B = Qwen2Config(**PUBLISHED_SHAPES["qwen-prm-7b"])
QWEN_1_5B = Qwen2Config(**PUBLISHED_SHAPES["qwen-1.5b"])


def test_memory_plan_leaves_the_prm_room_on_one_80gb_gpu():
    h = QWEN_PRM_7B.hidden_size
    prm = prm_memory(QWEN_PRM_7B, Qwen2ProcessRewardModel, head_params=h * h + h + 2 * h + 2)
    assert 7.0e9 < prm.params < 7.2e9  # the 7B backbone plus the score head, no LM head
    assert prm.weights == 2 * prm.params and prm.head_f32 == 4 * (h * h + 3 * h + 2)
    policy_weights = 2 * count_params(QWEN_1_5B, AutoModelForCausalLM)
    assert 1.5e9 < policy_weights / 2 < 1.6e9
    plan = plan_gpu(80 * GIB, prm, policy_weights=policy_weights)
    # vLLM gets what the PRM does not need, rounded down to the hundredth, and less than its own default 0.92.
    assert plan.gpu_memory_utilization == pytest.approx(1 - prm.total / (80 * GIB), abs=0.01)
    assert plan.gpu_memory_utilization < 0.92
    assert plan.gpu_memory_utilization * 80 * GIB + prm.total <= 80 * GIB + 0.01 * 80 * GIB
    assert any("gpu_memory_utilization" in line for line in plan.lines())
    with pytest.raises(ValueError, match="more than this 16 GiB GPU holds"):
        plan_gpu(16 * GIB, prm, policy_weights=policy_weights)


def _judge_folder(tmp_path: Path) -> Path:
    tok = char_tokenizer(
        specials=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        words=("Yes", "No"),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    return Path(save_causal_lm(tmp_path / "chat-lm", tokenizer=tok, hidden=32, layers=2, heads=2, kv_heads=1))


def test_one_load_serves_policy_and_judge(tmp_path):
    folder = str(_judge_folder(tmp_path))
    plan = plan_models(folder, folder, prm_kind="judge", world_problem=False)
    assert plan.shared_weights
    policy, prm = load_models(plan, dropout_p=0.1, dropout_mode="full")
    assert prm.model is policy.model and prm.tokenizer is policy.tokenizer
    # Different placement asked for: two copies, as asked.
    plan = plan_models(
        folder,
        folder,
        prm_kind="judge",
        prm_opts={"dtype": "float32"},
        policy_opts={"dtype": "bfloat16"},
        world_problem=False,
    )
    policy, prm = load_models(plan, dropout_p=0.1, dropout_mode="full")
    assert prm.model is not policy.model


def test_plan_refuses_before_loading(tmp_path):
    folder = str(_judge_folder(tmp_path))
    with pytest.raises(BackendError, match="^prm-kind: unknown PRM kind 'oracle'"):
        plan_models(folder, folder, prm_kind="oracle")
    with pytest.raises(BackendError, match="^prm-opt: dropout_p: set it with --dropout-p"):
        plan_models(folder, folder, prm_kind="judge", prm_opts={"dropout_p": 0.2})
    with pytest.raises(BackendError, match="^prm: 'vllm:org/prm': PRMs run in PyTorch"):
        plan_models(folder, "vllm:org/prm")


def test_world_models_on_another_dataset_are_refused_naming_the_flag(tmp_path, capsys):
    db = tmp_path / "runs" / "x.db"
    folder = str(_judge_folder(tmp_path))
    capsys.readouterr()  # the save's progress bar
    rc = main(["search", "--dataset", str(MATH500), "--problem", "0", "--policy", folder, "--db", str(db), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [err[0]] and err[0].startswith("error: prm: the default prm is the arithmetic world's")
    assert "--prm" in err[0] and not db.parent.exists()


def test_a_failed_model_load_creates_no_database(tmp_path, capsys):
    folder = _judge_folder(tmp_path)
    capsys.readouterr()
    (folder / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}), encoding="utf-8")
    db = tmp_path / "new" / "deep" / "x.db"
    rc = main(["search", "--policy", str(folder), "--db", str(db), "--quiet"])
    assert rc == 2 and capsys.readouterr().err.startswith("error: policy: ")
    assert not (tmp_path / "new").exists()


def test_doctor_reports_the_pair_and_its_problems(tmp_path):
    folder = str(_judge_folder(tmp_path))
    lines: list[str] = []
    assert run_doctor(folder, folder, prm_kind="judge", world_problem=False, out=lines.append) == 0
    text = "\n".join(lines)
    assert "kind judge" in text and "loaded once, shared" in text and "ok: nothing found" in text
    lines.clear()
    # A vLLM policy where vLLM is missing, planned for an 80 GiB GPU from this CPU machine.
    found = run_doctor(
        f"vllm:{folder}", folder, prm_kind="judge", world_problem=False, gpu_bytes=80 * GIB, out=lines.append
    )
    text = "\n".join(lines)
    assert "memory plan: vLLM gpu_memory_utilization = 0.9" in text
    import importlib.util

    assert found == (importlib.util.find_spec("vllm") is None)
    lines.clear()
    assert run_doctor(None, None, world_problem=False, out=lines.append) == 1
    assert lines[-1].startswith("PROBLEM policy: the default policy is the arithmetic world's")


def test_bench_gpu_scores_a_search_workload_and_prices_each_mode(tmp_path):
    from testkit.bench_runs import run_benchmark
    from uats_core.backends.plan import plan_prm_shape

    out = tmp_path / "gpu.json"
    done = run_benchmark(
        "gpu",
        "--shape",
        "tiny",
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--width",
        "3",
        "--depth",
        "2",
        "--question-chars",
        "40",
        "--step-chars",
        "20",
        "--repeats",
        "1",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads(out.read_text())
    assert [r["mode"] for r in res["search"]] == ["full", "last:2", "head"]
    assert all(len(r["per_depth_s"]) == 2 for r in res["search"])
    rows = res["cost"]["rows"]
    assert rows["deterministic (1 pass)"]["ratio"] == 1.0 and set(rows) == {
        "deterministic (1 pass)",
        "full x8",
        "last:2 x8",
        "head x8",
    }
    # The character tokenizer gives one token per character: 3 candidates x (template + question + 2 steps).
    assert res["cost"]["tokens"] > 3 * (40 + 2 * 20)
    assert "memory" not in res  # the allocator's figures exist on CUDA only
    assert plan_prm_shape("qwen-prm-7b").params == prm_memory(QWEN_PRM_7B, Qwen2ProcessRewardModel).params


def test_allocator_slack_follows_the_allocator_setting(monkeypatch):
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512")
    default = prm_memory(QWEN_PRM_7B, Qwen2ProcessRewardModel)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512,expandable_segments:True")
    expandable = prm_memory(QWEN_PRM_7B, Qwen2ProcessRewardModel)
    # Measured on an H200 (bench gpu): 2.65 GiB reserved beyond the peak by default, 0.77 GiB with expandable
    # segments, for this shape at 16k batch tokens; the plan must cover both.
    assert default.allocator_slack == default.activations >= 2.65 * GIB
    assert 0.77 * GIB <= expandable.allocator_slack < default.allocator_slack
    assert default.total - expandable.total == default.allocator_slack - expandable.allocator_slack
