"""Model options as the command line and the app take them (`--policy-opt KEY=VALUE`, `--prm-opt KEY=VALUE`,
parsed by `uats_core.config.parse_options`), checked against what the chosen backend accepts before any weight
loads. vLLM engine arguments (`gpu_memory_utilization=0.5`, `max_model_len=4096`, ...) may be given
directly: they are moved into `llm_kwargs`, the dict `vllm.LLM(...)` receives."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from uats_core.backends.prompting import check_sampling
from uats_core.errors import BackendError

# vLLM engine arguments accepted at the top level of --policy-opt and moved into llm_kwargs, with the type
# vllm.EngineArgs declares for each (checked before vLLM starts, here and inside llm_kwargs).
VLLM_ENGINE_ARGS: dict[str, Any] = {
    "gpu_memory_utilization": float,
    "max_model_len": int,
    "enforce_eager": bool,
    "tensor_parallel_size": int,
    "max_num_seqs": int,
    "max_num_batched_tokens": int,
    "kv_cache_dtype": str,
    "quantization": str | None,
    "download_dir": str,
    "cpu_offload_gb": float,
    "swap_space": float,
    "block_size": int,
    "enable_prefix_caching": bool,
    "tokenizer": str,
    "revision": str | None,
    "kv_cache_memory_bytes": int,
}
# vLLM's own spellings; the short ones this project accepts elsewhere map onto them.
_VLLM_DTYPES = {
    "auto": "auto",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}
# Set from the search config, never as a PRM option: the config is what the run log records.
_PRM_CONFIG_KEYS = {"dropout_p": "--dropout-p", "dropout_mode": "--dropout-mode", "kind": "--prm-kind"}


def _params(*fns: Any, drop: Sequence[str] = ()) -> set[str]:
    names: set[str] = set()
    for fn in fns:
        names |= {
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
    return names - {"self", "cls", *drop}


def check_policy_opts(kind: str, opts: Mapping[str, Any], flag: str = "policy-opt") -> dict[str, Any]:
    """Options for a policy of source kind `kind` ('vllm', 'openai' or a transformers kind), normalised; one-line
    errors."""
    opts = dict(opts)
    if kind == "openai":
        return _check_server_opts(opts, flag)
    if kind == "vllm":
        from uats_core.backends.vllm_policy import VLLMPolicy

        if "device" in opts:
            raise BackendError(
                flag,
                "device: vLLM places the model itself (on the GPUs CUDA_VISIBLE_DEVICES shows); drop "
                "device=, or use an hf: policy to choose a device",
            )
        if "dtype" in opts:
            dtype = str(opts["dtype"]).lower()
            if dtype not in _VLLM_DTYPES:
                raise BackendError(
                    flag,
                    f"dtype: vLLM takes one of {', '.join(sorted(set(_VLLM_DTYPES.values())))}; got {opts['dtype']!r}",
                )
            opts["dtype"] = _VLLM_DTYPES[dtype]
        engine = dict(opts.pop("llm_kwargs", None) or {})
        if not isinstance(engine, dict):
            raise BackendError(flag, "llm_kwargs: give a JSON object, e.g. llm_kwargs='{\"max_model_len\": 4096}'")
        for key in [k for k in opts if k in VLLM_ENGINE_ARGS]:
            engine[key] = opts.pop(key)
        accepted = _params(VLLMPolicy.__init__, drop=("model", "vllm_module", "llm_kwargs"))
        _refuse_unknown(opts, accepted | set(VLLM_ENGINE_ARGS) | {"llm_kwargs"}, flag, "a vLLM policy")
        _check_types(opts, flag, VLLMPolicy.__init__)
        _check_types(engine, flag, hints=VLLM_ENGINE_ARGS)
        _check_sampling_opts(opts, VLLMPolicy.__init__)
        if engine:
            opts["llm_kwargs"] = engine
        return opts
    from uats_core.backends.hf_policy import HFPolicy

    if "llm_kwargs" in opts or any(k in VLLM_ENGINE_ARGS for k in opts):
        bad = "llm_kwargs" if "llm_kwargs" in opts else next(k for k in opts if k in VLLM_ENGINE_ARGS)
        raise BackendError(
            flag,
            f"{bad}: a vLLM engine option, but this policy runs in transformers; write the policy "
            "as vllm:<model> or drop the option",
        )
    accepted = _params(HFPolicy.__init__, HFPolicy.from_pretrained, drop=("model", "tokenizer", "spec", "opts"))
    _refuse_unknown(opts, accepted, flag, "a transformers policy")
    _check_types(opts, flag, HFPolicy.__init__, HFPolicy.from_pretrained)
    _check_sampling_opts(opts, HFPolicy.__init__)
    return opts


def _check_server_opts(opts: dict[str, Any], flag: str) -> dict[str, Any]:
    """A policy behind an OpenAI-compatible server: sampling, the model's name, its local tokenizer, the client's
    timeout, retries and batching; placement and engine options belong to the server."""
    from uats_core.backends.openai_policy import OpenAIPolicy

    for key in ("device", "dtype", "llm_kwargs", *VLLM_ENGINE_ARGS):
        if key in opts and key != "tokenizer":  # here: where the served model's tokenizer is read locally
            raise BackendError(
                flag,
                f"{key}: the server places and runs the model; set it where the server starts "
                "(e.g. vllm serve MODEL --dtype ...), not as a policy option",
            )
    accepted = _params(OpenAIPolicy.__init__, drop=("base_url", "transport", "tokenizer_object"))
    _refuse_unknown(opts, accepted, flag, "a server policy (openai:URL)")
    _check_types(opts, flag, OpenAIPolicy.__init__)
    _check_sampling_opts(opts, OpenAIPolicy.__init__)
    return opts


def check_prm_opts(kind: str, opts: Mapping[str, Any], flag: str = "prm-opt") -> dict[str, Any]:
    """Options for a PyTorch PRM of the given kind; one-line errors naming the option and the fix."""
    from uats_core.backends import prm_published, prm_token_cls
    from uats_core.backends.prm_base import TorchPRM

    opts = dict(opts)
    for key, use in _PRM_CONFIG_KEYS.items():
        if key in opts:
            raise BackendError(flag, f"{key}: set it with {use}, not as a PRM option")
    load_fn = (
        prm_token_cls.TokenClassificationPRM.from_pretrained if kind == "token-classification" else prm_published.load
    )
    adapter: type[TorchPRM] = (
        prm_token_cls.TokenClassificationPRM
        if kind == "token-classification"
        else prm_published._ADAPTERS.get(kind, TorchPRM)
    )
    accepted = _params(
        TorchPRM.__init__,
        load_fn,
        adapter.__init__,
        drop=("model", "tokenizer", "src", "kind", "kw", "opts", "fmt", "preloaded"),
    )
    fmt_hints: dict[str, Any] = {}
    if kind == "token-classification":
        fmt_hints = {
            k: v
            for k, v in typing.get_type_hints(prm_token_cls.TokenClsFormat).items()
            if k in ("step_tag", "positive_label", "question_suffix", "step_suffix")
        }
        accepted |= set(fmt_hints)
    _refuse_unknown(opts, accepted - set(_PRM_CONFIG_KEYS), flag, f"a {kind} PRM")
    _check_types(opts, flag, TorchPRM.__init__, load_fn, adapter.__init__, hints=fmt_hints)
    return opts


def _refuse_unknown(opts: Mapping[str, Any], accepted: set[str], flag: str, what: str) -> None:
    unknown = sorted(set(opts) - accepted)
    if unknown:
        raise BackendError(flag, f"{unknown[0]}: not an option of {what}; accepted: {', '.join(sorted(accepted))}")


def _check_types(
    opts: Mapping[str, Any], flag: str, *fns: Callable[..., Any], hints: Mapping[str, Any] | None = None
) -> None:
    """Each option's value against the type the receiving signatures declare (one that fits any of them will do),
    so `max_batch_tokens="abc"` is refused here and not as a TypeError after the weights loaded."""
    declared: dict[str, list[Any]] = {}
    for fn in fns:
        for name, hint in typing.get_type_hints(fn).items():
            declared.setdefault(name, []).append(hint)
    for name, hint in (hints or {}).items():
        declared.setdefault(name, []).append(hint)
    for name, value in opts.items():
        wanted = declared.get(name)
        if wanted and not any(_fits(value, hint) for hint in wanted):
            raise BackendError(
                flag,
                f"{name}: expects {' or '.join(_type_name(h) for h in wanted)}; got {value!r} "
                f"({type(value).__name__}); give a value of that type (JSON: 8, 0.7, true, null)",
            )


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if origin is not None:  # dict[str, Any], tuple[Any, Any], ...: the container's type
        return isinstance(value, origin)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # JSON writes 1.0 as 1
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(hint, type) and isinstance(value, hint)


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(h) for h in typing.get_args(hint))
    if hint is type(None):
        return "null"
    names = {bool: "true/false", int: "an integer", float: "a number", str: "text"}
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _check_sampling_opts(opts: Mapping[str, Any], policy_init: Callable[..., Any]) -> None:
    """The policy's sampling ranges (temperature >= 0, 0 < top_p <= 1, token caps >= 1) before it loads; options
    not given take the policy's defaults."""
    params = inspect.signature(policy_init).parameters
    check_sampling(**{k: opts.get(k, params[k].default) for k in inspect.signature(check_sampling).parameters})
