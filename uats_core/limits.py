"""Limits a search is checked against before it starts, so a careless value fails in one line instead of
growing memory until the machine kills it (`--budget 1000000000` grew at ~190 MB/s).

- budget at most `max_budget` (UATS_MAX_BUDGET, app.py / CLI --max-budget; default 1024);
- an upper estimate of the tree's nodes and memory within `max_nodes` / `max_memory_mb`;
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

log = logging.getLogger(__name__)

ENV_MAX_BUDGET = "UATS_MAX_BUDGET"
ENV_MAX_NODES = "UATS_MAX_NODES"
ENV_MAX_MEMORY_MB = "UATS_MAX_MEMORY_MB"
DEFAULT_MAX_BUDGET = 1024
DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_MEMORY_MB = 4096.0
BYTES_PER_NODE = 16_384  # tree node, its event records and the log's buffers; measured ~3-23 KB on arith runs


@dataclass(frozen=True)
class Limits:
    max_budget: int = DEFAULT_MAX_BUDGET
    max_nodes: int = DEFAULT_MAX_NODES
    max_memory_mb: float = DEFAULT_MAX_MEMORY_MB


@dataclass(frozen=True)
class RunEstimate:
    nodes: int  # an upper estimate of the tree's size
    memory_mb: float


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
    return Limits(max_budget=_env_number(ENV_MAX_BUDGET, DEFAULT_MAX_BUDGET, int),
                  max_nodes=_env_number(ENV_MAX_NODES, DEFAULT_MAX_NODES, int),
                  max_memory_mb=_env_number(ENV_MAX_MEMORY_MB, DEFAULT_MAX_MEMORY_MB, float))


def set_max_budget(value: int) -> None:
    """Raise or lower the budget cap for this process and the workers it starts."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("max_budget", f"must be an integer >= 1; got {value!r}")
    os.environ[ENV_MAX_BUDGET] = str(value)


def estimate_run(config: Any) -> RunEstimate:
    """Upper estimate: every iteration adds at most about N children (UATS: N(c+1) cost units, c per child,
    so N(1 + 1/c) children), for at most max_iterations iterations."""
    per_step = config.budget * (1.0 + 1.0 / max(float(config.cost_ratio), 1.0))
    nodes = 1 + math.ceil(per_step) * int(config.max_iterations)
    return RunEstimate(nodes=nodes, memory_mb=nodes * BYTES_PER_NODE / 2**20)


def check_limits(config: Any, limits: Limits | None = None) -> RunEstimate:
    """Raise ConfigError naming the field to lower when the run would exceed a limit; else the estimate."""
    limits = limits or current_limits()
    if config.budget > limits.max_budget:
        raise ConfigError("budget", f"{config.budget} is above the maximum budget {limits.max_budget}; lower it, or "
                                    f"raise the cap with --max-budget (or ${ENV_MAX_BUDGET})")
    est = estimate_run(config)
    log.debug("run estimate: at most %d nodes, %.0f MB", est.nodes, est.memory_mb)
    if est.nodes > limits.max_nodes or est.memory_mb > limits.max_memory_mb:
        raise ConfigError("max_iterations", f"budget {config.budget} × max_iterations {config.max_iterations} could grow "
                                            f"the tree to about {est.nodes:,} nodes ({est.memory_mb:,.0f} MB), above the "
                                            f"limit of {limits.max_nodes:,} nodes / {limits.max_memory_mb:,.0f} MB; lower "
                                            f"either (or raise ${ENV_MAX_NODES} / ${ENV_MAX_MEMORY_MB})")
    return est


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
            n = len(question)
            raise ProblemError("problem", f"the question is {n:,} characters; {role} {getattr(backend, 'name', '')!r} "
                                          f"reads at most {window} tokens; give a shorter problem or a longer-context model")
        n = prompt_tokens(backend, question)
        if n is not None and n >= window:
            raise ProblemError("problem", f"the question takes {n:,} tokens of the {role}'s context of {window} "
                                          f"({getattr(backend, 'name', '')!r}), leaving no room for a step; give a "
                                          "shorter problem or a model with a longer context")
