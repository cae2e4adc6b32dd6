"""The memory plan for one GPU shared by a vLLM policy and a PyTorch PRM.

vLLM takes `gpu_memory_utilization` (default 0.92) of the whole device for its weights and KV cache at start-up,
leaving too little for a 7B PRM. The plan estimates what the PRM needs (weights, the float32 head copy, the
MC-dropout batch's activations, its prefix cache, a margin for the CUDA context and the allocator) and gives vLLM
the rest. Estimates come from the model config alone (parameters counted on the meta device), so they are known
before any weight loads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

GIB = 2**30
# CUDA context, cuBLAS workspaces and allocator fragmentation, measured in the ~0.5-1 GiB range on recent GPUs.
CONTEXT_MARGIN = int(1.0 * GIB)
DEFAULT_GPU_BATCH_TOKENS = 16384  # MCDropoutEngine's default max_batch_tokens on a GPU
# Reserved beyond the allocated peak, as a share of one MC batch. Measured on an H200 (`bench gpu`, a 32-wide frontier
# grown 6 steps, K = 8): 0.76x for the 7B PRM at 16k batch tokens and 0.67x for a 1.5B one at 64k with the default
# allocator; 0.22x and 0.07x with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
SLACK_DEFAULT, SLACK_EXPANDABLE = 1.0, 0.25
_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# Published PRM shapes (their config.json values), for planning and for `bench gpu` without downloading weights.
PUBLISHED_SHAPES: dict[str, dict[str, Any]] = {
    "qwen-prm-7b": {
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": False,
    },  # Qwen2.5-Math-PRM-7B
    "qwen-1.5b": {
        "vocab_size": 151936,
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },  # Qwen2.5-1.5B
    "tiny": {
        "vocab_size": 256,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "tie_word_embeddings": False,
    },  # smoke tests
}


@dataclass(frozen=True)
class PRMMemory:
    params: int
    weights: int  # bytes
    head_f32: int  # the float32 copy of the scoring head
    activations: int  # one MC-dropout forward at max_batch_tokens
    prefix_cache: int
    # What PyTorch's caching allocator keeps reserved beyond the allocated peak: MC batches differ in shape from call
    # to call and leave freed blocks too fragmented to reuse (see SLACK_* below).
    allocator_slack: int = 0

    @property
    def total(self) -> int:
        return (
            self.weights + self.head_f32 + self.activations + self.prefix_cache + self.allocator_slack + CONTEXT_MARGIN
        )


@dataclass(frozen=True)
class GPUPlan:
    device_bytes: int
    prm: PRMMemory
    gpu_memory_utilization: float
    policy_weights: int | None = None

    def lines(self) -> list[str]:
        g = lambda b: f"{b / GIB:.2f} GiB"  # noqa: E731
        p = self.prm
        out = [
            f"device memory: {g(self.device_bytes)}",
            f"PRM: {p.params / 1e9:.2f}B params, weights {g(p.weights)}, float32 head {g(p.head_f32)}, MC batch "
            f"{g(p.activations)}, prefix cache {g(p.prefix_cache)}, allocator slack {g(p.allocator_slack)}, "
            "CUDA context "
            f"margin {g(CONTEXT_MARGIN)}: {g(p.total)}",
            f"vLLM gpu_memory_utilization = {self.gpu_memory_utilization:.2f} "
            f"({g(self.gpu_memory_utilization * self.device_bytes)} for the policy's weights and KV cache)",
        ]
        if self.policy_weights is not None:
            out.append(
                f"policy weights: {g(self.policy_weights)}; KV cache gets about "
                f"{g(self.gpu_memory_utilization * self.device_bytes - self.policy_weights)}"
            )
        return out


def count_params(config: Any, model_cls: Any) -> int:
    """Parameters of model_cls(config), counted on the meta device (no memory, no weights)."""
    import torch

    with torch.device("meta"):
        model = model_cls(config) if not hasattr(model_cls, "from_config") else model_cls.from_config(config)
    return sum(p.numel() for p in model.parameters())


def expandable_segments() -> bool:
    """Whether PyTorch's CUDA allocator is set to grow segments in place (no fragmentation slack)."""
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") or os.environ.get("PYTORCH_ALLOC_CONF", "")
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def prm_memory(
    config: Any,
    model_cls: Any,
    *,
    dtype: str = "bfloat16",
    max_batch_tokens: int = DEFAULT_GPU_BATCH_TOKENS,
    cache_bytes: int = 512 * 2**20,
    head_params: int | None = None,
    expandable: bool | None = None,
) -> PRMMemory:
    """What a PyTorch PRM of this config needs on the GPU while it scores. expandable: whether the allocator uses
    expandable segments (default: read from PYTORCH_CUDA_ALLOC_CONF), which cuts the fragmentation slack."""
    nbytes = _DTYPE_BYTES[dtype]
    params = count_params(config, model_cls)
    hidden = int(config.hidden_size)
    inter = int(getattr(config, "intermediate_size", 4 * hidden))
    # Per token in flight: the residual stream, q/k/v/o, the MLP's gate/up/act, and the float32 read-out; the batch
    # is processed layer by layer, so one layer's worth of activations is live at a time (plus the kept KV).
    per_token = (6 * hidden + 3 * inter) * nbytes + 4 * hidden
    kv = (
        2
        * int(getattr(config, "num_key_value_heads", 1))
        * int(getattr(config, "head_dim", 0) or hidden // int(config.num_attention_heads))
        * nbytes
    )
    activations = max_batch_tokens * (per_token + kv * int(config.num_hidden_layers))
    head = head_params if head_params is not None else 2 * hidden
    share = SLACK_EXPANDABLE if (expandable_segments() if expandable is None else expandable) else SLACK_DEFAULT
    slack = int(share * activations)
    return PRMMemory(params, params * nbytes, head * 4, activations, cache_bytes, slack)


def plan_gpu(
    device_bytes: int, prm: PRMMemory, *, policy_weights: int | None = None, floor: float = 0.05, ceiling: float = 0.92
) -> GPUPlan:
    """vLLM's share of the device: all that the PRM does not need, within [floor, vLLM's default]."""
    share = (device_bytes - prm.total) / device_bytes
    if share < floor or (policy_weights is not None and share * device_bytes < 1.2 * policy_weights):
        need = prm.total + (policy_weights or 0) * 1.2
        raise ValueError(
            f"the PRM needs about {prm.total / GIB:.1f} GiB and the policy about "
            f"{(policy_weights or 0) * 1.2 / GIB:.1f} GiB with a minimal KV cache ({need / GIB:.1f} GiB), more "
            f"than this {device_bytes / GIB:.0f} GiB GPU holds"
        )
    return GPUPlan(device_bytes, prm, round(min(share, ceiling), 2), policy_weights)
