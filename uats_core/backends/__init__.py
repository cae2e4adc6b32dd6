"""Model backends: policies (transformers, vLLM) and PRMs (PyTorch, with MC dropout) behind the core protocols.

Specs: a local model folder, a .gguf file, `hf:<hub id>`, `py:<module>:<function>` (a function of your own that returns
the model: planned here like any spec, loaded by the program that names it, `uats search` or `uats eval`, since the
engine loads no module by name), and for policies only `vllm:<hub id>` (vLLM in this process) or `openai:<URL>`
(an OpenAI-compatible server: vllm serve, SGLang, llama.cpp).
Everything that can be checked is checked at load, raising BackendError(field="policy" | "prm").
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from uats_core.backends._loading import ModelSource, load_config, resolve_spec
from uats_core.config import PRM_KINDS
from uats_core.errors import BackendError
from uats_core.protocols import PRM, Policy

log = logging.getLogger(__name__)

FACTORY_KIND = "py"  # the PRM kind of a py:module:function PRM: its own

__all__ = ["PRM_KINDS", "load_policy", "load_prm", "detect_prm_kind", "resolve_spec", "check_prm_source"]


def load_policy(spec: str, **opts: Any) -> Policy:
    """A policy from a folder, a .gguf file, 'hf:<id>' (transformers), 'vllm:<id>' (vLLM), 'openai:<URL>' (a server's
    /v1/completions) or a short name ('smollm2').

    opts go to the policy: temperature, top_p, step_token_cap, solution_token_cap, system_prompt, seed,
    and for transformers dtype, device, trust_remote_code; for vLLM any LLM(...) argument via llm_kwargs; for a
    server model, tokenizer, timeout_s, retries, max_n, concurrency (openai_policy.OpenAIPolicy)."""
    from uats_core.backends.options import check_policy_opts

    src = resolve_spec(spec, "policy")
    if src.kind == FACTORY_KIND:
        raise BackendError(
            "policy",
            f"{spec!r}: a py: backend is loaded by the program that names it (uats search, "
            "uats eval: uats/model_flags.py), not by the engine; hand the loaded pair over",
        )
    opts = check_policy_opts(src.kind, opts)
    if src.kind == "openai":
        from uats_core.backends.openai_policy import OpenAIPolicy

        return OpenAIPolicy(src.location, **opts)
    if src.kind == "vllm":
        from uats_core.backends.named import NAMED, smollm2_folder
        from uats_core.backends.vllm_policy import VLLMPolicy

        if src.location in NAMED:  # vLLM reads a de-quantised copy of the shipped GGUF
            return VLLMPolicy(str(smollm2_folder()), **dict({"name": spec}, **opts))
        return VLLMPolicy(src.location, **opts)
    from uats_core.backends.hf_policy import HFPolicy

    return HFPolicy.from_pretrained(src, **opts)


def detect_prm_kind(src: ModelSource, trust_remote_code: bool = False) -> str:
    """PRM kind from the folder's uats_prm.json, else from the config's architectures, else from the name."""
    if src.kind == "folder":
        sidecar = Path(src.location) / "uats_prm.json"
        if sidecar.is_file():
            try:
                kind = json.loads(sidecar.read_text(encoding="utf-8")).get("kind")
            except (OSError, json.JSONDecodeError, AttributeError) as exc:
                raise BackendError("prm", f"cannot read {sidecar} ({exc}); fix or remove it") from None
            if kind in PRM_KINDS:
                return kind
            raise BackendError("prm", f"{sidecar} names kind {kind!r}; use one of {', '.join(PRM_KINDS)}")
    config = load_config(src, "prm", trust_remote_code)
    archs = " ".join(getattr(config, "architectures", None) or [])
    name = src.location.lower()
    if "ForProcessRewardModel" in archs or "qwen2.5-math-prm" in name:
        return "qwen-prm"
    if "skywork" in name and "prm" in name or "PrmModel" in archs:
        return "skywork"
    if "math-shepherd" in name:
        return "math-shepherd"
    if "ForTokenClassification" in archs:
        return "token-classification"
    raise BackendError(
        "prm",
        f"cannot tell what kind of PRM {src.spec!r} is (architectures: {archs or 'none'}); "
        f"pass kind= one of {', '.join(PRM_KINDS)}",
    )


def check_prm_source(src: ModelSource) -> None:
    """A PRM runs here, in PyTorch: MC dropout needs dropout at inference, which serving engines strip."""
    if src.kind == "openai":
        raise BackendError(
            "prm",
            f"{src.spec!r}: a PRM runs in this process because MC dropout needs dropout at inference, "
            "which serving engines strip; give a local folder, a .gguf file or hf:<id>",
        )
    if src.kind == "vllm":
        raise BackendError(
            "prm",
            f"{src.spec!r}: PRMs run in PyTorch because MC dropout needs it (vLLM drops dropout "
            f"layers); write hf:{src.location} instead",
        )


def load_prm(
    spec: str, kind: str | None = None, dropout_p: float = 0.1, dropout_mode: str = "full", **opts: Any
) -> PRM:
    """A PyTorch PRM with MC dropout. opts: dtype, device, trust_remote_code, cache_bytes, max_batch_tokens,
    padding_side, plus kind-specific ones (step_tag, ..., for token-classification; system_prompt for judge)."""
    src = resolve_spec(spec, "prm")
    if src.kind == FACTORY_KIND:
        raise BackendError(
            "prm",
            f"{spec!r}: a py: backend is loaded by the program that names it (uats search, "
            "uats eval: uats/model_flags.py), not by the engine; hand the loaded pair over",
        )
    check_prm_source(src)
    if kind is None:
        kind = detect_prm_kind(src, bool(opts.get("trust_remote_code", False)))
        log.info("%s: PRM kind %r detected", spec, kind)
    if kind not in PRM_KINDS:
        raise BackendError("prm", f"unknown PRM kind {kind!r}; use one of {', '.join(PRM_KINDS)}")
    opts = dict(opts, dropout_p=dropout_p, dropout_mode=dropout_mode)
    if kind == "token-classification":
        from uats_core.backends.prm_token_cls import TokenClassificationPRM

        return TokenClassificationPRM.from_pretrained(src, **opts)
    from uats_core.backends import prm_published

    return prm_published.load(kind, src, **opts)
