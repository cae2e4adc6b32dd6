"""The model flags every program that loads a policy and a PRM shares (`uats search`, `uats doctor`, `uats eval`):
--policy-opt / --prm-opt parsed, and options that run a model's own code refused without --trust-remote-code."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from uats_core.backends._loading import FACTORY_PREFIX

TRUST_HELP = (
    "allow trust_remote_code=true in --policy-opt/--prm-opt: transformers then runs the Python code that comes "
    "with the model (only for models whose code you trust)"
)


def parse_model_options(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """--policy-opt and --prm-opt parsed (a search's request carries them to its validation)."""
    from uats_core.config import parse_options

    return parse_options(args.policy_opt, "policy-opt"), parse_options(args.prm_opt, "prm-opt")


def model_options(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """--policy-opt and --prm-opt parsed; options that run a model's own code only with --trust-remote-code (checked
    here, before a program reads a model's config with them: `uats doctor`, the evaluation's pairs)."""
    from uats_core.config import check_code_options

    policy_opts, prm_opts = parse_model_options(args)
    check_code_options(policy_opts, "policy_opts", args.trust_remote_code)
    check_code_options(prm_opts, "prm_opts", args.trust_remote_code)
    return policy_opts, prm_opts


def load_factory(spec: str, field: str) -> Callable[..., Any]:
    """The function a py:module:function spec names (a backend of the user's own; the engine plans such specs but
    imports no module by name). BackendError naming the field when it cannot be imported."""
    from uats_core.backends._loading import resolve_spec
    from uats_core.errors import BackendError

    module, _, attr = resolve_spec(spec, field).location.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise BackendError(field, f"{spec!r}: {exc}; give py:<importable module>:<function>") from None


def load_policy_spec(spec: str, opts: dict[str, Any]) -> Any:
    """A policy by any spec: py:module:function called with the options, anything else through the engine."""
    if spec.startswith(FACTORY_PREFIX):
        return load_factory(spec, "policy")(**opts)
    from uats_core.backends import load_policy

    return load_policy(spec, **opts)


def load_prm_spec(spec: str, opts: dict[str, Any], dropout_p: float, dropout_mode: str) -> Any:
    """A PRM by any spec: py:module:function called with the dropout settings and the options (a `kind` among them
    when one was given), anything else through the engine."""
    if spec.startswith(FACTORY_PREFIX):
        return load_factory(spec, "prm")(dropout_p=dropout_p, dropout_mode=dropout_mode, **opts)
    from uats_core.backends import load_prm

    return load_prm(spec, dropout_p=dropout_p, dropout_mode=dropout_mode, **opts)


def custom_pair(checked: Any) -> tuple[Any, Any] | None:
    """The pair of a checked search that names a py: backend, loaded here (None when neither does: prepare_search
    loads the pair itself)."""
    r, config = checked.request, checked.config
    specs = (r.policy or "", r.prm or "")
    if not any(s.startswith(FACTORY_PREFIX) for s in specs):
        return None
    from uats_core.paths import WORLD_POLICY, WORLD_PRM

    prm_opts = dict(r.prm_opts, **({"kind": r.prm_kind} if r.prm_kind else {}))
    return (
        load_policy_spec(r.policy or str(WORLD_POLICY), dict(r.policy_opts)),
        load_prm_spec(r.prm or str(WORLD_PRM), prm_opts, config.dropout_p, config.dropout_mode),
    )


def add_model_flags(p: argparse.ArgumentParser) -> None:
    """--policy, --prm, and the option flags of add_model_option_flags."""
    p.add_argument(
        "--policy",
        help="policy model: folder, .gguf file, hf:<id>, vllm:<id>, smollm2, vllm:smollm2 or "
        "py:module:function (default: arith policy A, for arith problems only)",
    )
    p.add_argument(
        "--prm",
        help="PRM model: folder, .gguf file, hf:<id>, smollm2 or py:module:function (default: the "
        "arith PRM, for arith problems only)",
    )
    add_model_option_flags(p)


def add_model_option_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--prm-kind, --policy-opt, --prm-opt and --trust-remote-code (the evaluation names its models by --pairs)."""
    p.add_argument(
        "--prm-kind",
        help="math-shepherd | qwen-prm | skywork | token-classification | judge (default: detected from the model)",
    )
    p.add_argument(
        "--policy-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="policy option, repeatable; JSON values (e.g. dtype=bfloat16, temperature=0.7, device=cuda, "
        "gpu_memory_utilization=0.5, llm_kwargs='{\"max_model_len\": 4096}')",
    )
    p.add_argument(
        "--prm-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="PRM option, repeatable (e.g. dtype=float32, device=cuda:1, max_batch_tokens=8192)",
    )
    p.add_argument("--trust-remote-code", action="store_true", help=TRUST_HELP)
