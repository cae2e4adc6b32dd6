"""The model flags every program that loads a policy and a PRM shares (`uats search`, `uats doctor`, `uats eval`):
--policy-opt / --prm-opt parsed, and options that run a model's own code refused without --trust-remote-code."""

from __future__ import annotations

import argparse
from typing import Any

TRUST_HELP = ("allow trust_remote_code=true in --policy-opt/--prm-opt: transformers then runs the Python code that comes "
              "with the model (only for models whose code you trust)")


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


def add_model_flags(p: argparse.ArgumentParser) -> None:
    """--policy, --prm, and the option flags of add_model_option_flags."""
    p.add_argument("--policy", help="policy model: folder, .gguf file, hf:<id>, vllm:<id>, smollm2 or vllm:smollm2 "
                                    "(default: arith policy A, for arith problems only)")
    p.add_argument("--prm", help="PRM model: folder, .gguf file, hf:<id> or smollm2 (default: the arith PRM, for arith "
                                 "problems only)")
    add_model_option_flags(p)


def add_model_option_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--prm-kind, --policy-opt, --prm-opt and --trust-remote-code (the evaluation names its models by --pairs)."""
    p.add_argument("--prm-kind", help="math-shepherd | qwen-prm | skywork | token-classification | judge "
                                      "(default: detected from the model)")
    p.add_argument("--policy-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="policy option, repeatable; JSON values (e.g. dtype=bfloat16, temperature=0.7, device=cuda, "
                        "gpu_memory_utilization=0.5, llm_kwargs='{\"max_model_len\": 4096}')")
    p.add_argument("--prm-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="PRM option, repeatable (e.g. dtype=float32, device=cuda:1, max_batch_tokens=8192)")
    p.add_argument("--trust-remote-code", action="store_true", help=TRUST_HELP)
