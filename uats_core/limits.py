"""Limits a search is checked against before it starts, so a careless value fails in one line instead of
growing memory until the machine kills it (`--budget 1000000000` grew at ~190 MB/s).

- budget at most `max_budget` (UATS_MAX_BUDGET, app.py / CLI --max-budget; default 1024);
- an upper estimate of the tree's nodes and memory within `max_nodes` / `max_memory_mb`;
- PRM passes: K0, and K0 plus the most re-evaluation passes one step could give one node, within
  `max_node_passes` (k0=19000 stored 377 KB of passes on one node and took ~50 s an iteration), and the run's
  passes within `max_passes`; shadow scoring (check_shadow) is held to the same two;
- the question, as the model sees it, inside the policy's and the PRM's context (the arithmetic world's
  models hold 320 tokens: a longer problem used to end silently with answer=None).

Limits live in the environment so that the app's worker processes (spawned) see what app.py was given."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, ProblemError
from .protocols import Trace
from .spending import config_spending

log = logging.getLogger(__name__)

ENV_MAX_BUDGET = "UATS_MAX_BUDGET"
ENV_MAX_NODES = "UATS_MAX_NODES"
ENV_MAX_MEMORY_MB = "UATS_MAX_MEMORY_MB"
ENV_MAX_NODE_PASSES = "UATS_MAX_NODE_PASSES"
ENV_MAX_PASSES = "UATS_MAX_PASSES"
DEFAULT_MAX_BUDGET = 1024
DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_MEMORY_MB = 4096.0
# A-UATS at the maximum budget may give one node 7 + 3·(0.1·19,456 + 25) ≈ 5,900 passes: allowed
DEFAULT_MAX_NODE_PASSES = 8192
DEFAULT_MAX_PASSES = 1_000_000  # every method at N = 1024, c = 18, 40 iterations: at most 778,240
BYTES_PER_NODE = 16_384  # tree node, its event records and the log's buffers; measured ~3-23 KB on arith runs
BYTES_PER_PASS = 32  # one pass held in a node's mc_scores: a float object and its list slot


@dataclass(frozen=True)
class Limits:
    max_budget: int = DEFAULT_MAX_BUDGET
    max_nodes: int = DEFAULT_MAX_NODES
    max_memory_mb: float = DEFAULT_MAX_MEMORY_MB
    max_node_passes: int = DEFAULT_MAX_NODE_PASSES
    max_passes: int = DEFAULT_MAX_PASSES


@dataclass(frozen=True)
class RunEstimate:
    nodes: int  # an upper estimate of the tree's size
    memory_mb: float
    passes: int = 0  # PRM passes of the whole run, at most
    node_passes: int = 1  # PRM passes one node can hold, at most (K0 + re-evaluation for UATS)


def _env_number(name: str, default: float, kind: type) -> Any:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(name.lower().removeprefix("uats_"), f"${name}={raw!r} must be a number >= 1; fix or unset it")
    return value


def current_limits() -> Limits:
    return Limits(
        max_budget=_env_number(ENV_MAX_BUDGET, DEFAULT_MAX_BUDGET, int),
        max_nodes=_env_number(ENV_MAX_NODES, DEFAULT_MAX_NODES, int),
        max_memory_mb=_env_number(ENV_MAX_MEMORY_MB, DEFAULT_MAX_MEMORY_MB, float),
        max_node_passes=_env_number(ENV_MAX_NODE_PASSES, DEFAULT_MAX_NODE_PASSES, int),
        max_passes=_env_number(ENV_MAX_PASSES, DEFAULT_MAX_PASSES, int),
    )


def set_max_budget(value: int) -> None:
    """Raise or lower the budget cap for this process and the workers it starts."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("max_budget", f"must be an integer >= 1; got {value!r}")
    os.environ[ENV_MAX_BUDGET] = str(value)


def estimate_run(config: Any) -> RunEstimate:
    """Upper estimate (the one formula every refusal reads). Nodes: every iteration adds at most about N
    children (UATS: N(c+1) cost units, c per child, so N(1 + 1/c) children), for at most max_iterations
    iterations. Passes: every method spends at most N(c+1) a step (a pass costs 1, a step c), so the run's
    passes are at most max_iterations·N(c+1). Per node: 1, or for UATS K0 plus one step's re-evaluation
    budget, β·(ρ·N(c+1) + c + K0) at most (β: the method's reeval_scale, 1 for H-UATS, A-UATS's controller's
    ceiling for A-UATS), never more than N(c+1)."""
    from .methods import method_class

    per_step = config.budget * (1.0 + 1.0 / max(float(config.cost_ratio), 1.0))
    nodes = 1 + math.ceil(per_step) * int(config.max_iterations)
    rule = config_spending(config)
    passes = math.ceil(rule.step_cap * int(config.max_iterations))
    node_passes = 1
    beta = method_class(config.method).reeval_scale
    if beta is not None:
        reeval = min(rule.step_cap, beta * (float(config.reeval_share) * rule.step_cap + rule.per_child))
        node_passes = int(config.k0) + math.floor(reeval)
    memory = nodes * BYTES_PER_NODE + min(passes, nodes * node_passes) * BYTES_PER_PASS
    return RunEstimate(nodes=nodes, memory_mb=memory / 2**20, passes=passes, node_passes=node_passes)


def check_limits(config: Any, limits: Limits | None = None) -> RunEstimate:
    """Raise ConfigError naming the field to lower when the run would exceed a limit; else the estimate."""
    from .methods import method_class

    limits = limits or current_limits()
    if config.budget > limits.max_budget:
        raise ConfigError(
            "budget",
            f"{config.budget} is above the maximum budget {limits.max_budget}; lower it, or "
            f"raise the cap with --max-budget (or ${ENV_MAX_BUDGET})",
        )
    if config.k0 > limits.max_node_passes:
        raise ConfigError(
            "k0",
            f"{config.k0:,} is above the maximum of {limits.max_node_passes:,} passes per node; "
            f"lower it (or raise ${ENV_MAX_NODE_PASSES})",
        )
    method_class(config.method).check_affordable(config)  # what its first step costs (UATS: c+K0 a child)
    est = estimate_run(config)
    log.debug("run estimate: at most %d nodes, %d passes, %.0f MB", est.nodes, est.passes, est.memory_mb)
    if est.nodes > limits.max_nodes or est.memory_mb > limits.max_memory_mb:
        raise ConfigError(
            "max_iterations",
            f"budget {config.budget} × max_iterations {config.max_iterations} could grow "
            f"the tree to about {est.nodes:,} nodes ({est.memory_mb:,.0f} MB), above the "
            f"limit of {limits.max_nodes:,} nodes / {limits.max_memory_mb:,.0f} MB; lower "
            f"either (or raise ${ENV_MAX_NODES} / ${ENV_MAX_MEMORY_MB})",
        )
    if est.node_passes > limits.max_node_passes:
        raise ConfigError(
            "reeval_share",
            f"K0 {config.k0:,} plus one step's re-evaluation could give a node "
            f"{est.node_passes:,} passes, above the maximum of {limits.max_node_passes:,}; "
            f"lower reeval_share, budget or k0 (or raise ${ENV_MAX_NODE_PASSES})",
        )
    if est.passes > limits.max_passes:
        raise ConfigError(
            "max_iterations",
            f"budget {config.budget} × max_iterations {config.max_iterations} could "
            f"spend {est.passes:,} PRM passes, above the limit of {limits.max_passes:,}; "
            f"lower either (or raise ${ENV_MAX_PASSES})",
        )
    return est


def check_shadow(k: int, candidates: int, limits: Limits | None = None) -> int:
    """Shadow scoring of `candidates` nodes with `k` passes each, held to the limits of a search's passes:
    ConfigError naming the field, else the passes it will run."""
    limits = limits or current_limits()
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ConfigError("shadow_k", f"must be an integer >= 2 (the sample variance needs 2 passes); got {k!r}")
    if k > limits.max_node_passes:
        raise ConfigError(
            "shadow_k",
            f"{k:,} is above the maximum of {limits.max_node_passes:,} passes per node; "
            f"lower it (or raise ${ENV_MAX_NODE_PASSES})",
        )
    if candidates > limits.max_nodes:
        raise ConfigError(
            "run",
            f"{candidates:,} candidates is above the limit of {limits.max_nodes:,} nodes "
            f"(${ENV_MAX_NODES}); shadow-score a smaller run",
        )
    if k * candidates > limits.max_passes:
        raise ConfigError(
            "shadow_k",
            f"{k:,} passes × {candidates:,} candidates is {k * candidates:,} PRM passes, "
            f"above the limit of {limits.max_passes:,}; lower it (or raise ${ENV_MAX_PASSES})",
        )
    return k * candidates


def context_window(backend: Any) -> int | None:
    """The model's context length in tokens, where the backend reveals one (transformers' config, vLLM's
    model config, or a `max_context` attribute)."""
    for path in ("max_context", "model.config.max_position_embeddings", "llm.llm_engine.model_config.max_model_len"):
        owner = backend
        for attr in path.split("."):
            owner = getattr(owner, attr, None)
        if isinstance(owner, int) and not isinstance(owner, bool) and owner > 0:
            return owner
    return None


def prompt_tokens(backend: Any, question: str) -> int | None:
    """Tokens of the question as this backend feeds it (its prompt format when it has one)."""
    if hasattr(backend, "prompt_ids"):
        return len(backend.prompt_ids(Trace(question)))
    tok = getattr(backend, "tokenizer", None)
    if tok is None:
        return None
    return len(tok(question, add_special_tokens=False)["input_ids"])


def check_prompt_fits(question: str, policy: Any, prm: Any) -> None:
    """ProblemError(field='problem') when the question leaves no room for a step in either model's context."""
    for role, backend in (("policy", policy), ("PRM", prm)):
        window = context_window(backend)
        if window is None:
            continue
        if len(question) > 64 * window:  # no tokenizer makes a token of more than 64 characters: skip the work
            raise ProblemError(
                "problem",
                f"the question is {len(question):,} characters; {role} {getattr(backend, 'name', '')!r} "
                f"reads at most {window} tokens; give a shorter problem or a longer-context model",
            )
        n = prompt_tokens(backend, question)
        if n is not None and n >= window:
            raise ProblemError(
                "problem",
                f"the question takes {n:,} tokens of the {role}'s context of {window} "
                f"({getattr(backend, 'name', '')!r}), leaving no room for a step; give a "
                "shorter problem or a model with a longer context",
            )
