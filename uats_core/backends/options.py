"""Model options as the command line and the app take them (`--policy-opt KEY=VALUE`, `--prm-opt KEY=VALUE`,
parsed by `uats_core.config.parse_options`), checked against what the chosen backend accepts before any weight
loads. vLLM engine arguments (`gpu_memory_utilization=0.5`, `max_model_len=4096`, ...) may be given
directly: they are moved into `llm_kwargs`, the dict `vllm.LLM(...)` receives."""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

from uats_core.errors import BackendError

# vLLM engine arguments accepted at the top level of --policy-opt and moved into llm_kwargs.
VLLM_ENGINE_ARGS = ("gpu_memory_utilization", "max_model_len", "enforce_eager", "tensor_parallel_size", "max_num_seqs",
                    "max_num_batched_tokens", "kv_cache_dtype", "quantization", "download_dir", "cpu_offload_gb",
                    "swap_space", "block_size", "enable_prefix_caching", "tokenizer", "revision", "kv_cache_memory_bytes")
# vLLM's own spellings; the short ones this project accepts elsewhere map onto them.
_VLLM_DTYPES = {"auto": "auto", "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
                "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}
# Set from the search config, never as a PRM option: the config is what the run log records.
_PRM_CONFIG_KEYS = {"dropout_p": "--dropout-p", "dropout_mode": "--dropout-mode", "kind": "--prm-kind"}


def _params(*fns: Any, drop: Sequence[str] = ()) -> set[str]:
    names: set[str] = set()
    for fn in fns:
        names |= {p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return names - {"self", "cls", *drop}


def check_policy_opts(kind: str, opts: Mapping[str, Any], flag: str = "policy-opt") -> dict[str, Any]:
    """Options for a policy of source kind `kind` ('vllm' or a transformers kind), normalised; one-line errors."""
    opts = dict(opts)
    if kind == "vllm":
        from uats_core.backends.vllm_policy import VLLMPolicy

        if "device" in opts:
            raise BackendError(flag, "device: vLLM places the model itself (on the GPUs CUDA_VISIBLE_DEVICES shows); drop "
                                     "device=, or use an hf: policy to choose a device")
        if "dtype" in opts:
            dtype = str(opts["dtype"]).lower()
            if dtype not in _VLLM_DTYPES:
                raise BackendError(flag, f"dtype: vLLM takes one of {', '.join(sorted(set(_VLLM_DTYPES.values())))}; got "
                                         f"{opts['dtype']!r}")
            opts["dtype"] = _VLLM_DTYPES[dtype]
        engine = dict(opts.pop("llm_kwargs", None) or {})
        if not isinstance(engine, dict):
            raise BackendError(flag, "llm_kwargs: give a JSON object, e.g. llm_kwargs='{\"max_model_len\": 4096}'")
        for key in [k for k in opts if k in VLLM_ENGINE_ARGS]:
            engine[key] = opts.pop(key)
        accepted = _params(VLLMPolicy.__init__, drop=("model", "vllm_module", "llm_kwargs"))
        _refuse_unknown(opts, accepted | set(VLLM_ENGINE_ARGS) | {"llm_kwargs"}, flag, "a vLLM policy")
        if engine:
            opts["llm_kwargs"] = engine
        return opts
    from uats_core.backends.hf_policy import HFPolicy

    if "llm_kwargs" in opts or any(k in VLLM_ENGINE_ARGS for k in opts):
        bad = "llm_kwargs" if "llm_kwargs" in opts else next(k for k in opts if k in VLLM_ENGINE_ARGS)
        raise BackendError(flag, f"{bad}: a vLLM engine option, but this policy runs in transformers; write the policy "
                                 "as vllm:<model> or drop the option")
    accepted = _params(HFPolicy.__init__, HFPolicy.from_pretrained, drop=("model", "tokenizer", "spec", "opts"))
    _refuse_unknown(opts, accepted, flag, "a transformers policy")
    return opts


def check_prm_opts(kind: str, opts: Mapping[str, Any], flag: str = "prm-opt") -> dict[str, Any]:
    """Options for a PyTorch PRM of the given kind; one-line errors naming the option and the fix."""
    from uats_core.backends import prm_published, prm_token_cls
    from uats_core.backends.prm_base import TorchPRM

    opts = dict(opts)
    for key, use in _PRM_CONFIG_KEYS.items():
        if key in opts:
            raise BackendError(flag, f"{key}: set it with {use}, not as a PRM option")
    load_fn = prm_token_cls.TokenClassificationPRM.from_pretrained if kind == "token-classification" else prm_published.load
    adapter = (prm_token_cls.TokenClassificationPRM if kind == "token-classification"
               else prm_published._ADAPTERS.get(kind, TorchPRM))
    accepted = _params(TorchPRM.__init__, load_fn, adapter.__init__, drop=("model", "tokenizer", "src", "kind", "kw", "opts", "fmt",
                                                                                   "preloaded"))
    if kind == "token-classification":
        accepted |= {"step_tag", "positive_label", "question_suffix", "step_suffix"}
    _refuse_unknown(opts, accepted - set(_PRM_CONFIG_KEYS), flag, f"a {kind} PRM")
    return opts


def _refuse_unknown(opts: Mapping[str, Any], accepted: set[str], flag: str, what: str) -> None:
    unknown = sorted(set(opts) - accepted)
    if unknown:
        raise BackendError(flag, f"{unknown[0]}: not an option of {what}; accepted: {', '.join(sorted(accepted))}")
