"""One search asked for, and its one validation. The app's Run button, `uats search` and every evaluation cell
build a SearchRequest and hand it to validate_request once; what comes back, a CheckedSearch, is the only thing
uats_core.runner.prepare_search takes, so a search cannot start on a request nobody checked, nor be checked twice.

What validate_request checks, in this order, each failure a ConfigError or ProblemError naming the field, before
any model loads or anything is written: the config's fields (SearchConfig.validate) and what its method asks of
them (uats_core.methods.check_method_settings), the question (uats_core.problems.check_question), the models it may use
(the embedded ones serve only the embedded world's problems), model options that would run a model's own code (unless
trusted: the command line's --trust-remote-code), and the run's limits (uats_core.limits: budget cap, tree size, passes,
affordability), an ensemble's size against K0 (from its file); then it resolves τ = auto[:q] from the PRM's calibration,
so the logged config holds the τ the search uses. That the question fits the loaded models' context is checked once the
models are loaded, by run_search (uats_core.limits.check_prompt_fits), before the run is logged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .calibration import resolve_tau
from .config import SearchConfig, check_code_options, check_model_choice
from .limits import RunEstimate, check_limits
from .methods import check_method_settings
from .paths import WORLD_PRM
from .problems import Problem, check_question


@dataclass(frozen=True)
class SearchRequest:
    """A search as a front end asks for it: the problem, the config and the models (specs as the user named them;
    None: the embedded arithmetic world's), with the options they load with."""

    problem: Problem
    config: SearchConfig
    policy: str | None = None
    prm: str | None = None
    prm_kind: str | None = None  # None: detected from the PRM
    policy_opts: Mapping[str, Any] = field(default_factory=dict)
    prm_opts: Mapping[str, Any] = field(default_factory=dict)
    world_problem: bool = True  # the problem is the embedded world's (its models serve only those)
    trust_remote_code: bool = False  # options may make transformers run a model's own code (the command line's flag)


@dataclass(frozen=True)
class CheckedSearch:
    """A SearchRequest that passed validate_request: `config` is the request's with τ resolved (what the search
    uses and the run log records), `tau_note` where an auto τ came from (None for a number), `estimate` the limits'
    upper estimate of the run. Made by validate_request only; picklable (the app's workers and Ray get it)."""

    request: SearchRequest
    config: SearchConfig
    tau_note: dict[str, Any] | None
    estimate: RunEstimate

    @property
    def problem(self) -> Problem:
        return self.request.problem

    def run_fields(self) -> dict[str, Any]:
        """The run's row as this search fixes it (its method, problem, seed and resolved config), whoever writes the
        row: RunStarted, the CLI's early check, an evaluation cell, the app's queued row."""
        c, p = self.config, self.problem
        return {
            "method": c.method,
            "problem_id": p.id,
            "question": p.question,
            "gold_answer": p.answer,
            "seed": c.seed,
            "config": c.to_dict(),
        }

    def model_options(self) -> dict[str, Any]:
        """How the models are loaded, as the run log records it with the run (runs.model_options)."""
        r = self.request
        return {"policy_opts": dict(r.policy_opts), "prm_opts": dict(r.prm_opts), "prm_kind": r.prm_kind}


def check_config(config: SearchConfig) -> SearchConfig:
    """A config alone (no problem, no models): its fields and what its method asks of them; the config itself."""
    check_method_settings(config.validate())
    return config


def _check_estimator_files(config: SearchConfig, prm: str | None) -> None:
    """An ensemble's size is known from its file beside a local PRM folder: k0 above it is refused here, not
    by a run that fails once the models are loaded (a Hub or server PRM is checked when it loads)."""
    if config.estimator != "ensemble":
        return
    folder = Path(prm) if prm else WORLD_PRM
    if folder.is_dir():
        from .estimators.ensemble import check_ensemble_size  # reads one JSON file; torch stays unloaded

        check_ensemble_size(folder, config.k0)


def validate_request(request: SearchRequest) -> CheckedSearch:
    """The run's one validation (the module's docstring lists what it checks); a CheckedSearch to prepare."""
    config = check_config(request.config)
    check_question(request.problem.question)
    check_model_choice(request.policy, request.prm, request.world_problem)
    check_code_options(request.policy_opts, "policy_opts", request.trust_remote_code)
    check_code_options(request.prm_opts, "prm_opts", request.trust_remote_code)
    estimate = check_limits(config)
    _check_estimator_files(config, request.prm)
    config, tau_note = resolve_tau(config, request.prm)
    return CheckedSearch(request, config, tau_note, estimate)
